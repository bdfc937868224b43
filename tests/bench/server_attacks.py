#!/usr/bin/env python3
"""What three attacks of issue 22 cost a dormant-server: its peak RSS (VmHWM) over a fresh start.

  server_attacks.py SERVER_BINARY [EXTRA_SERVER_FLAGS...]

1. 200 clients without a token each send a 4 MiB heartbeat body.
2. At --max-connections 8, eight idle keep-alive connections, then a ninth client.
3. One authenticated upload of a gzip bomb: 60 MiB of collapsed profile in about 200 kB, and one
   of 15 MiB (within the default --max-profile-mb).
"""
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "attack-token"


def start(binary, data, extra):
    out = open(os.path.join(data, "server.out"), "w+")
    server = subprocess.Popen(
        [binary, "--listen", "127.0.0.1", "--port", "0", "--insecure-http", "--data-dir",
         os.path.join(data, "db"), "--tokens-file", os.path.join(data, "tokens"),
         "--log-level", "error"] + extra, stdout=out, stderr=subprocess.DEVNULL)
    for _ in range(100):
        out.seek(0)
        line = out.read()
        if "listening" in line:
            return server, int(line.strip().rsplit(":", 1)[1])
        time.sleep(0.1)
    raise SystemExit("dormant-server did not start")


def peak_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def request(port, head, body, timeout=30):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        try:
            connection.sendall(head.encode() + body)
        except OSError:
            pass
        try:
            return connection.recv(64).split(b"\r\n")[0].decode()
        except OSError as error:
            return f"no answer ({error.__class__.__name__})"


def unauthenticated_bodies(port):
    body = b"x" * (4 << 20)
    head = (f"POST /api/metrics/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
            "Content-Type: application/json\r\n\r\n")
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(request(port, head, body)))
               for _ in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return f"{len(answers)} answered, e.g. {sorted(set(answers))[:2]}"


def idle_lockout(port):
    idle = []
    for _ in range(8):
        connection = socket.create_connection(("127.0.0.1", port))
        connection.sendall(b"GET /api/v1/health_check HTTP/1.1\r\nHost: x\r\n\r\n")
        connection.recv(4096)
        idle.append(connection)
    started = time.monotonic()
    answer = request(port, "GET /api/v1/health_check HTTP/1.1\r\nHost: x\r\n\r\n", b"", timeout=5)
    return f"ninth client: {answer} after {time.monotonic() - started:.2f} s"


def gzip_bomb(port, megabytes):
    line = "a;" * 40 + "b 1\n"
    header = "# " + json.dumps({"hostname": "web-01", "profiling_mode": "cpu"}) + "\n"
    profile = header + line * ((megabytes << 20) // len(line))
    body = gzip.compress(json.dumps({"start_time": "2026-11-26T10:00:00",
                                     "end_time": "2026-11-26T10:01:00", "hostname": "web-01",
                                     "profile": profile}).encode(), 9)
    head = (f"POST /api/v2/profiles HTTP/1.1\r\nHost: x\r\nGPROFILER-API-KEY: {TOKEN}\r\n"
            f"GPROFILER-SERVICE-NAME: web\r\nContent-Encoding: gzip\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return f"{megabytes} MiB in {len(body) // 1024} kB of gzip: {request(port, head, body)}"


def main():
    binary, extra = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as data:
        with open(os.path.join(data, "tokens"), "w") as tokens:
            tokens.write(TOKEN + "\n")
        os.chmod(os.path.join(data, "tokens"), 0o600)
        for name, attack, flags in [("200 x 4 MiB without a token", unauthenticated_bodies, []),
                                    ("8 idle at --max-connections 8", idle_lockout,
                                     ["--max-connections", "8"]),
                                    ("gzip bomb upload", lambda port: gzip_bomb(port, 60), []),
                                    ("gzip bomb upload", lambda port: gzip_bomb(port, 15), [])]:
            server, port = start(binary, data, extra + flags)
            time.sleep(0.3)
            before = peak_mb(server.pid)
            outcome = attack(port)
            time.sleep(0.5)
            print(f"{name}: {outcome}; server peak RSS {before:.0f} -> {peak_mb(server.pid):.0f} MB")
            server.terminate()
            server.wait()


main()
