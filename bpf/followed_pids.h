// The marks of target_pids' entries, shared by the BPF programs and user space.
#ifndef DORMANT_BPF_FOLLOWED_PIDS_H
#define DORMANT_BPF_FOLLOWED_PIDS_H

#define DORMANT_NAMED_PID 1     // named by the user (--pids, the program `gpu --` started)
#define DORMANT_FOLLOWED_PID 2  // started by a profiled process, while it was profiled
// Room kept in target_pids for followed processes, beside the named ones.
#define DORMANT_MAX_FOLLOWED_PIDS 4096

#endif
