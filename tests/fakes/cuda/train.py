"""A training loop on the fake CUDA stack (tests/fakes/cuda): Python functions launch kernels
through ctypes, which lets go of the GIL around each call, as PyTorch does around its CUDA calls.
Each step's forward pass launches alphaKernel (KERNEL_NS on the fake GPU, default 1 ms), its
backward pass betaKernel (twice that). At its end it prints what it launched, and how long its
loop took, as JSON.

    python3 train.py FAKE_CUDA_DIR STEPS [KERNEL_NS]
"""
import ctypes
import json
import os
import sys
import time


class Model:
    def __init__(self, runtime, kernel_ns):
        self.runtime = runtime
        self.kernel_ns = kernel_ns

    def forward(self):
        self.launch(b"_Z11alphaKernelPf", self.kernel_ns)

    def backward(self):
        self.launch(b"_Z10betaKernelPf", 2 * self.kernel_ns)

    def launch(self, kernel, duration_ns):
        if self.runtime.cudaLaunchKernel(kernel, duration_ns) != 0:
            raise RuntimeError(f"cudaLaunchKernel({kernel}) failed")


def train_step(model):
    model.forward()
    model.backward()


def main():
    runtime = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
    runtime.cudaLaunchKernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
    runtime.cudaLaunchKernel.restype = ctypes.c_int
    model = Model(runtime, int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000)
    steps = int(sys.argv[2])
    started = time.monotonic_ns()
    for _ in range(steps):
        train_step(model)
    elapsed_ns = time.monotonic_ns() - started
    print(json.dumps({"launches": 2 * steps, "elapsed_ns": elapsed_ns}), flush=True)
    time.sleep(0.3)  # among its launches, as programs do: the agent reads its mappings meanwhile


if __name__ == "__main__":
    main()
