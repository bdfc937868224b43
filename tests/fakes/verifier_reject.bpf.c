// A BPF program the kernel's verifier must refuse: it reads memory at an address it made up.
// clang-format off
#include <linux/bpf.h>  // first: the libbpf header uses its types
#include <bpf/bpf_helpers.h>
// clang-format on

SEC("perf_event")
int read_anywhere(void* context) {
  (void)context;
  unsigned long address = bpf_get_prandom_u32();
  return *(volatile int*)address;
}

char LICENSE[] SEC("license") = "GPL";
