#!/usr/bin/env python3
"""Uploads COUNT synthetic profiles of a busy host to a dormant-server, over one kept-alive TLS
connection, as gProfiler agents upload them (gzip'd JSON, POST /api/v2/profiles).

Each profile is a minute of a half-busy 4-CPU host at 99 Hz: about 12,000 samples (of 23,760
possible: the server refuses more than a session could take) over STACKS distinct stacks drawn
(Zipf-like) from a pool of POOL stacks 10 to 40 frames deep, so that consecutive profiles share
most stacks as a real service's do.
Usage: upload_profiles.py PORT CA TOKEN SERVICE COUNT [STACKS] [POOL]"""
import gzip
import http.client
import json
import random
import ssl
import sys
from datetime import datetime, timedelta, timezone


def stack_pool(size, rng):
    functions = [f"app::module{m}::Handler{c}::method{f}(std::string const&, int)"
                 for m in range(12) for c in range(10) for f in range(5)]
    kernel = ["entry_SYSCALL_64_[k]", "do_syscall_64_[k]", "ksys_read_[k]", "vfs_read_[k]",
              "tcp_recvmsg_[k]", "copy_user_enhanced_fast_string_[k]"]
    pool = []
    for _ in range(size):
        depth = rng.randint(10, 40)
        frames = ["_start", "__libc_start_main", "main"] + rng.sample(functions, depth - 3)
        if rng.random() < 0.3:
            frames += kernel[: rng.randint(2, len(kernel))]
        comm = rng.choice(["api-server", "worker", "scheduler"])
        pool.append(f"0;;{comm};" + ";".join(frames))
    return pool


def profile_text(host, pool, stacks, rng):
    header = {"containers": [], "metrics": {"cpu_avg": 50.0, "mem_avg": 40.0}, "metadata": {
        "python_version": "", "run_mode": "standalone_executable", "deployment_type": "instances",
        "kernel_release": "6.1.0", "kernel_version": "#1 SMP", "system_name": "Linux",
        "processors": 4, "cpu_model_name": "bench", "memory_capacity_mb": 1024, "hostname": host,
        "os_name": "Debian GNU/Linux", "os_release": "12", "libc_type": "glibc",
        "libc_version": "2.36", "hardware_type": "x86_64", "pid": 42,
        "mac_address": "02:00:00:00:00:01", "private_ip": "10.0.0.1", "spawn_uptime_ms": 1000,
        "cloud_provider": "Unknown", "agent_version": "bench", "spawn_time": "2026-07-25T17:20:00",
        "run_arguments": {"service_name": "busy", "frequency": 99},
        "current_time": "2026-11-20T10:00:00", "profiling_mode": "cpu"}}
    chosen = {}
    while len(chosen) < stacks:
        index = min(int(rng.paretovariate(1.2)) - 1, len(pool) - 1)
        index = (index * 7919 + rng.randint(0, len(pool) - 1) * (rng.random() < 0.5)) % len(pool)
        chosen[index] = chosen.get(index, 0) + 1
    samples = 12000
    weights = sum(chosen.values())
    lines = [f"{pool[i]} {max(1, count * samples // weights)}" for i, count in chosen.items()]
    return "# " + json.dumps(header) + "\n" + "\n".join(lines) + "\n"


def main():
    port, ca, token, service, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    stacks = int(sys.argv[6]) if len(sys.argv) > 6 else 3000
    pool_size = int(sys.argv[7]) if len(sys.argv) > 7 else 20000
    rng = random.Random(20)
    pool = stack_pool(pool_size, rng)
    context = ssl.create_default_context(cafile=ca)
    connection = http.client.HTTPSConnection("localhost", int(port), context=context)
    start = datetime(2026, 11, 20, tzinfo=timezone.utc)
    raw_bytes = 0
    for n in range(count):
        begin = start + timedelta(minutes=n)
        text = profile_text("busy-01", pool, stacks, rng)
        raw_bytes += len(text)
        body = {"start_time": begin.strftime("%Y-%m-%dT%H:%M:%S"),
                "end_time": (begin + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S"),
                "hostname": "busy-01", "profile": text, "cpu_avg": 50.0, "mem_avg": 40.0,
                "spawn_time": "2026-07-25T17:20:00", "gpid": ""}
        connection.request("POST", "/api/v2/profiles", gzip.compress(json.dumps(body).encode()),
                           {"GPROFILER-API-KEY": token, "GPROFILER-SERVICE-NAME": service,
                            "Content-Encoding": "gzip", "Content-Type": "application/json"})
        answer = connection.getresponse()
        reply = answer.read()
        if answer.status != 200:
            sys.exit(f"upload {n}: {answer.status} {reply[:200]!r}")
    print(f"uploaded {count} profiles of {stacks} stacks each, {raw_bytes / count / 1024:.0f} KiB "
          f"of collapsed text each ({raw_bytes / 2**20:.0f} MiB in all)")


if __name__ == "__main__":
    main()
