// Processes a profiled process starts are profiled too: a launcher's workers (`sh -c`, torchrun,
// mpirun, accelerate launch) are what does the work. At its fork, a child process (not a thread)
// of a process in target_pids joins it, marked followed; at its exit, a followed one leaves it, so
// that its pid, given to another process later, is not profiled. Include after target_pids is
// declared (a hash of tgid to one of the marks below); load the programs only when filtering.
#ifndef DORMANT_BPF_FOLLOWED_CHILDREN_H
#define DORMANT_BPF_FOLLOWED_CHILDREN_H

#include "followed_pids.h"

SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_child, struct task_struct* parent, struct task_struct* child) {
  __u32 parent_tgid = BPF_CORE_READ(parent, tgid);
  __u32 child_pid = BPF_CORE_READ(child, pid);
  if (child_pid != (__u32)BPF_CORE_READ(child, tgid)) return 0;  // a thread
  if (!bpf_map_lookup_elem(&target_pids, &parent_tgid)) return 0;
  __u8 followed = DORMANT_FOLLOWED_PID;
  // When the map is full the child is not followed; user space sees it missing.
  bpf_map_update_elem(&target_pids, &child_pid, &followed, BPF_NOEXIST);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(forget_child, struct task_struct* task) {
  __u32 pid = BPF_CORE_READ(task, pid);
  if (pid != (__u32)BPF_CORE_READ(task, tgid)) return 0;  // a thread of a process that goes on
  __u8* mark = bpf_map_lookup_elem(&target_pids, &pid);
  if (mark && *mark == DORMANT_FOLLOWED_PID) bpf_map_delete_elem(&target_pids, &pid);
  return 0;
}

#endif
