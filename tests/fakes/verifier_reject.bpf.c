// A BPF program the kernel's verifier must refuse: it reads memory at an address it made up.
// clang-format off
#include <linux/bpf.h>  // first: the libbpf header uses its types
#include <bpf/bpf_helpers.h>
// clang-format on

// The instructions before the bad read make the verifier's log several kB long, its reason last.
SEC("perf_event")
int read_anywhere(void* context) {
  (void)context;
  unsigned long address = 0;
#pragma unroll
  for (int i = 0; i < 32; ++i) address += bpf_get_prandom_u32();
  return *(volatile int*)address;
}

char LICENSE[] SEC("license") = "GPL";
