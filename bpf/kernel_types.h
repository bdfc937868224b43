// The few kernel types the BPF programs read, declared with CO-RE relocation: libbpf matches each
// field by name against the running kernel's BTF when it loads the program, so the build needs
// neither a vmlinux.h nor a build host whose kernel has BTF. Add fields here as programs need them.
#ifndef DORMANT_BPF_KERNEL_TYPES_H
#define DORMANT_BPF_KERNEL_TYPES_H

// task_struct.flags. Workers the kernel starts inside a process (io_uring's; vhost's from 6.4)
// run kernel code only: their saved user registers are not theirs. Before 5.12 io_uring's
// workers were kernel threads.
#define DORMANT_PF_KTHREAD 0x00200000
#define DORMANT_PF_IO_WORKER 0x00000010    // 5.12 and later
#define DORMANT_PF_USER_WORKER 0x00004000  // 6.4 and later

#if defined(__TARGET_ARCH_x86)
struct thread_struct {
  unsigned long fsbase;  // the thread pointer: pthread_self() in glibc
} __attribute__((preserve_access_index));
#endif

struct task_struct {
  unsigned int flags;
  int pid;                          // the thread's
  int tgid;                         // the process's
  unsigned long long start_time;    // ns since boot; a pid used again starts later
  unsigned long long self_exec_id;  // grows at every exec
  struct task_struct* group_leader;
  char comm[16];
#if defined(__TARGET_ARCH_x86)
  struct thread_struct thread;
#endif
} __attribute__((preserve_access_index));

// The user registers saved on entry to the kernel (bpf_task_pt_regs). The "___kernel" flavour
// keeps it apart from the UAPI struct pt_regs of <asm/ptrace.h>; libbpf matches it to the
// kernel's struct pt_regs.
#if defined(__TARGET_ARCH_x86)
struct pt_regs___kernel {
  unsigned long bp;
  unsigned long ip;
  unsigned long cs;  // a u16 in a union from 6.9 (FRED): only its low 16 bits are read
  unsigned long sp;
} __attribute__((preserve_access_index));
#define DORMANT_USER_IP(regs) BPF_CORE_READ(regs, ip)
#define DORMANT_USER_SP(regs) BPF_CORE_READ(regs, sp)
#define DORMANT_USER_FP(regs) BPF_CORE_READ(regs, bp)
#define DORMANT_USER_MODE_OF(regs) BPF_CORE_READ(regs, cs)
#define DORMANT_IN_USER_MODE(ctx) (((ctx)->regs.cs & 3) == 3)
#define DORMANT_SAMPLE_MODE(ctx) ((ctx)->regs.cs)
#define DORMANT_IS_COMPAT(mode) (((mode)&0xffff) == 0x23)  // __USER32_CS: a 32-bit task
#define DORMANT_CODE_ADDRESS(address) (address)
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs___kernel {
  unsigned long long regs[31];
  unsigned long long sp;
  unsigned long long pc;
  unsigned long long pstate;
} __attribute__((preserve_access_index));
#define DORMANT_USER_IP(regs) BPF_CORE_READ(regs, pc)
#define DORMANT_USER_SP(regs) BPF_CORE_READ(regs, sp)
#define DORMANT_USER_FP(regs) BPF_CORE_READ(regs, regs[29])
#define DORMANT_USER_MODE_OF(regs) BPF_CORE_READ(regs, pstate)
#define DORMANT_IN_USER_MODE(ctx) (((ctx)->regs.pstate & 0xf) == 0)  // EL0t
#define DORMANT_SAMPLE_MODE(ctx) ((ctx)->regs.pstate)
#define DORMANT_IS_COMPAT(mode) (((mode)&0x10) != 0)  // PSR_MODE32_BIT: an AArch32 task
// Saved return addresses may carry a pointer-authentication code above the 48 address bits.
#define DORMANT_CODE_ADDRESS(address) ((address)&0x0000ffffffffffffULL)
#else
#error "the user stack walk knows x86_64 and arm64 registers only"
#endif

#endif
