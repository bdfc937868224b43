#!/usr/bin/env python3
"""Checks a collapsed profile of known_kernels (or of the fake CUDA app): the GPU frames of the
three launch sites are there, each under its own launch site, in the time ratios 1:2:4 (within
the tolerance), and the header says every launch and every GPU record was joined.

  check_profile.py PROFILE.col [--tolerance 0.05] [--launches N]
Prints what it found; exits 1 when a check fails."""
import json
import sys


def main():
    path = sys.argv[1]
    tolerance = 0.05
    launches = None
    args = sys.argv[2:]
    for flag, value in zip(args[::2], args[1::2]):
        if flag == "--tolerance":
            tolerance = float(value)
        elif flag == "--launches":
            launches = int(value)
    with open(path) as profile:
        header = json.loads(profile.readline()[1:])
        lines = profile.read().splitlines()
    samples = {"alpha": 0, "beta": 0, "gamma": 0}
    misplaced = []
    for line in lines:
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        gpu = frames[-1]
        if not gpu.startswith("[GPU] "):
            continue
        for site in samples:
            if gpu.startswith("[GPU] %sKernel" % site):
                samples[site] += int(count)
                if not any(("launch_site_%s" % site) in frame for frame in frames):
                    misplaced.append(line)
    gpu = header.get("gpu", {})
    print("samples by launch site:", samples)
    print("gpu header:", json.dumps(gpu, sort_keys=True))
    failures = []
    if samples["alpha"] == 0:
        failures.append("no alphaKernel samples")
    else:
        for site, ratio in (("beta", 2.0), ("gamma", 4.0)):
            found = samples[site] / samples["alpha"]
            print("%s/alpha = %.3f (expected %.1f)" % (site, found, ratio))
            if abs(found - ratio) > ratio * tolerance:
                failures.append("%s/alpha is %.3f, not %.1f within %d%%" %
                                (site, found, ratio, tolerance * 100))
    if misplaced:
        failures.append("%d GPU stacks are not under their launch site, e.g. %s" %
                        (len(misplaced), misplaced[0]))
    if gpu.get("gpu_records", 0) == 0 or gpu.get("joined") != gpu.get("gpu_records"):
        failures.append("not every GPU record was joined to its launch")
    if gpu.get("unmatched_launches", 1) != 0:
        failures.append("%s launches were never joined" % gpu.get("unmatched_launches"))
    if launches is not None and gpu.get("launches") != launches:
        failures.append("%s launches seen, %d made" % (gpu.get("launches"), launches))
    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else "failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
