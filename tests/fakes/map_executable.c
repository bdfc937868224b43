// Another user's program that maps a file executable, as any local user may, and keeps running
// (busy, so that a sampling profiler sees it and reads its mappings).
//   map_executable UID FILE SECONDS
// It first becomes UID (groups dropped; as root) unless it runs as UID already, then maps FILE
// PROT_READ|PROT_EXEC.
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monotonic_seconds.h"

volatile unsigned long sink;

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: map_executable UID FILE SECONDS\n");
    return 2;
  }
  uid_t uid = (uid_t)atoi(argv[1]);
  if (uid != getuid() && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)) {
    perror("map_executable: becoming the user");
    return 1;
  }
  int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
  struct stat status;
  if (fd < 0 || fstat(fd, &status) != 0) {
    perror(argv[2]);
    return 1;
  }
  void* mapped = mmap(NULL, (size_t)status.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  if (mapped == MAP_FAILED) {
    perror("map_executable: mmap");
    return 1;
  }
  printf("mapped\n");
  fflush(stdout);
  double end = monotonic_seconds() + atof(argv[3]);
  while (monotonic_seconds() < end) {
    for (unsigned long i = 0; i < 1000000; ++i) sink += i;
  }
  return (int)(sink & 1);
}
