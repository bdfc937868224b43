// A library named as NCCL's is (libnccl.so.2): a process that maps it is an NCCL rank to the GPU
// profiler, which then reads its rank from the launcher's environment.
int ncclGetVersion(int* version) {
  *version = 22000;
  return 0;
}
