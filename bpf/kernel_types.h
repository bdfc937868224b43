// The few kernel types the BPF programs read, declared with CO-RE relocation: libbpf matches each
// field by name against the running kernel's BTF when it loads the program, so the build needs
// neither a vmlinux.h nor a build host whose kernel has BTF. Add fields here as programs need them.
#ifndef DORMANT_BPF_KERNEL_TYPES_H
#define DORMANT_BPF_KERNEL_TYPES_H

struct task_struct {
  struct task_struct* group_leader;
  char comm[16];
} __attribute__((preserve_access_index));

#endif
