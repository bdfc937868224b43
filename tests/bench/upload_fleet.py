#!/usr/bin/env python3
"""Uploads PROFILES synthetic one-minute profiles of a service from HOSTS hosts, spread evenly over
the HOURS before END, to a dormant-server, as gProfiler agents upload them (gzip'd JSON,
POST /api/v2/profiles), over CONNECTIONS kept-alive TLS connections at once. Each profile holds
STACKS distinct stacks drawn from one pool of POOL stacks (upload_profiles.py), as a service's
hosts share most of their stacks. Prints the profiles per second the server took."""
import argparse
import gzip
import http.client
import json
import random
import ssl
import sys
import threading
import time
from datetime import datetime, timezone

from upload_profiles import profile_text, stack_pool


def main():
    parser = argparse.ArgumentParser()
    for name in ("port", "ca", "token", "service"):
        parser.add_argument(f"--{name}", required=True)
    for name, default in (("profiles", 25000), ("hosts", 200), ("stacks", 100), ("pool", 3000),
                          ("hours", 24), ("connections", 2), ("seed", 1)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--end", type=int, required=True, help="seconds since the epoch")
    args = parser.parse_args()
    pool = stack_pool(args.pool, random.Random(20))
    context = ssl.create_default_context(cafile=args.ca)
    span = args.hours * 3600
    failures = []
    sent_bytes = [0] * args.connections

    def upload(worker):
        rng = random.Random(args.seed * 1000 + worker)
        connection = http.client.HTTPSConnection("localhost", int(args.port), context=context)
        for n in range(worker, args.profiles, args.connections):
            host = f"{args.service}-{n % args.hosts:03d}"
            begin = args.end - span + (n + rng.random()) * span / args.profiles
            text = profile_text(host, pool, args.stacks, rng)
            sent_bytes[worker] += len(text)
            stamp = datetime.fromtimestamp(int(begin), timezone.utc)
            body = {"start_time": stamp.strftime("%Y-%m-%dT%H:%M:%S"),
                    "end_time": datetime.fromtimestamp(int(begin) + 60, timezone.utc)
                    .strftime("%Y-%m-%dT%H:%M:%S"),
                    "hostname": host, "profile": text, "cpu_avg": 50.0, "mem_avg": 40.0,
                    "spawn_time": "2026-07-25T17:20:00", "gpid": ""}
            connection.request("POST", "/api/v2/profiles",
                               gzip.compress(json.dumps(body).encode(), 1),
                               {"GPROFILER-API-KEY": args.token,
                                "GPROFILER-SERVICE-NAME": args.service,
                                "Content-Encoding": "gzip", "Content-Type": "application/json"})
            answer = connection.getresponse()
            reply = answer.read()
            if answer.status != 200:
                failures.append(f"upload {n}: {answer.status} {reply[:200]!r}")
                return

    begun = time.monotonic()
    workers = [threading.Thread(target=upload, args=(w,)) for w in range(args.connections)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    took = time.monotonic() - begun
    if failures:
        sys.exit(failures[0])
    print(f"uploaded {args.profiles} profiles of {args.stacks} stacks from {args.hosts} hosts "
          f"({sum(sent_bytes) / args.profiles / 1024:.0f} KiB of text each) in {took:.1f} s: "
          f"{args.profiles / took:.0f} profiles/s")


if __name__ == "__main__":
    main()
