"""Three functions spinning 1:2:3 units through what Python programs do: nested calls, a generator,
a C function (sorted) calling back into Python, and two threads.

    python3 python_ratio.py SECONDS
"""
import sys
import threading
import time

UNIT = 20000


def spin(units):
    total = 0
    for i in range(units * UNIT):
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
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        alpha()
        beta()
        gamma()


def main():
    seconds = float(sys.argv[1])
    helper = threading.Thread(target=work, args=(seconds,))
    helper.start()
    work(seconds)
    helper.join()


if __name__ == "__main__":
    main()
