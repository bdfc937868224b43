"""Three functions spinning 1:2:3 units through what Python programs do: nested calls, a generator,
a C function (sorted) calling back into Python, and two threads. Each call's length varies at
random around its mean, so that no rhythm of the program beats with a sampler's period.

    python3 python_ratio.py SECONDS [SPENT_FILE]

With SPENT_FILE, it writes there the CPU seconds its threads spent in each function ("alpha
0.52"), measured by the threads' own clocks, then sleeps until it is killed, so that a profiler
can compare what it sampled with what the program did and still read the names of its frames.
"""
import collections
import random
import sys
import threading
import time

UNIT = 20000

spent = collections.Counter()
spent_lock = threading.Lock()


def spin(units):
    total = 0
    for i in range(units * random.randint(UNIT // 2, UNIT * 3 // 2)):
        total += i
    return total


def alpha():
    return spin(1)


def beta_steps():
    yield spin(2)


def beta():
    return next(beta_steps())


def gamma_key(value):
    return spin(3) + value


def gamma():
    return sorted([1], key=gamma_key)


def work(seconds):
    mine = collections.Counter()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for function in (alpha, beta, gamma):
            started = time.thread_time()
            function()
            mine[function.__name__] += time.thread_time() - started
    with spent_lock:
        spent.update(mine)


def main():
    seconds = float(sys.argv[1])
    helper = threading.Thread(target=work, args=(seconds,))
    helper.start()
    work(seconds)
    helper.join()
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as out:
            for name, seconds_spent in sorted(spent.items()):
                out.write(f"{name} {seconds_spent:.6f}\n")
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
