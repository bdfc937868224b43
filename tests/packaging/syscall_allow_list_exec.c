// Runs COMMAND under a seccomp allow list, as systemd's SystemCallFilter= would: the system calls
// named in ALLOWED_FILE (one per line) run, every other one fails with EPERM (the units'
// SystemCallErrorNumber=), and only the native architecture's calls are accepted.
//   syscall_allow_list_exec ALLOWED_FILE COMMAND [ARG...]
// Unprivileged callers need no_new_privs set first (setpriv --no-new-privs), as the units set it.
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ALLOWED_FILE COMMAND [ARG...]\n", argv[0]);
    return 2;
  }
  FILE* names = fopen(argv[1], "r");
  if (names == NULL) {
    fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
    return 2;
  }
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (filter == NULL) {
    fprintf(stderr, "%s: seccomp_init failed\n", argv[0]);
    return 2;
  }
  char line[128];
  int allowed = 0;
  while (fgets(line, sizeof(line), names) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '\0') continue;
    int number = seccomp_syscall_resolve_name(line);
    if (number == __NR_SCMP_ERROR) continue;  // a call this architecture does not have
    int added = seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0);
    if (added < 0) {
      fprintf(stderr, "%s: allowing %s: %s\n", argv[0], line, strerror(-added));
      return 2;
    }
    ++allowed;
  }
  fclose(names);
  int loaded = seccomp_load(filter);
  if (loaded < 0) {
    fprintf(stderr, "%s: seccomp_load: %s\n", argv[0], strerror(-loaded));
    return 2;
  }
  seccomp_release(filter);
  fprintf(stderr, "%s: %d system calls allowed, the rest fail with EPERM\n", argv[0], allowed);
  execvp(argv[2], argv + 2);
  fprintf(stderr, "%s: %s: %s\n", argv[0], argv[2], strerror(errno));
  return 127;
}
