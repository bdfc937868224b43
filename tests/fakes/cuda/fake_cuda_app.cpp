// A CUDA program for machines without a GPU, on the fake runtime and driver: each thread runs
// rounds of three launch sites, alpha, beta and gamma, whose kernels take 1, 2 and 4 times
// --kernel-ns on the fake GPU (a graph launch submits all three at once). At its end it prints
// what it launched as JSON (with the time its launching took), and exits 0 only if every call
// succeeded.
//   fake_cuda_app [--api NAME] [--threads N] [--rounds N] [--kernel-ns NS] [--until-file PATH]
//                 [--pause-us US] [--copies] [--then-api NAME --once-file PATH] [--long-names
//                 BYTES]
//                 [--own-client-file PATH] [--nccl]
// With --then-api, rounds use that API once PATH exists. With --long-names the kernels' names are
// BYTES long, the same but for their last bytes (as CUTLASS's template instances are). With
// --own-client-file the program is a CUPTI client of its own while PATH exists (own_cupti_client.h)
// and says how that went. With --nccl it loads libnccl.so.2 (tests/fakes/cuda/fake_nccl.c), as
// an NCCL rank does.
// NAME: runtime, runtime_ptsz, exc, exc_ptsz, cooperative, cooperative_ptsz, multi_device,
// internal (CUDA 13's __cudaLaunchKernel), internal_ptsz, driver, driver_ptsz, driver_ex,
// driver_cooperative, graph, driver_graph, or all (each in turn).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "own_cupti_client.h"

namespace {

struct Options {
  std::string api = "runtime";
  int threads = 1;
  long rounds = 100;
  uint64_t kernel_ns = 1'000'000;
  std::string until_file;
  long pause_us = 0;
  bool copies = false;
  std::string then_api;
  std::string once_file;
  std::string own_client_file;
  bool nccl = false;
};

const char* const kApis[] = {"runtime",
                             "runtime_ptsz",
                             "exc",
                             "exc_ptsz",
                             "cooperative",
                             "cooperative_ptsz",
                             "multi_device",
                             "internal",
                             "internal_ptsz",
                             "driver",
                             "driver_ptsz",
                             "driver_ex",
                             "driver_cooperative",
                             "graph",
                             "driver_graph"};

std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_failures{0};
std::atomic<uint64_t> g_ns[3];  // alpha, beta, gamma
std::atomic<uint64_t> g_copy_ns{0};

const char* kKernels[] = {"_Z11alphaKernelPf", "_Z10betaKernelPf", "_Z11gammaKernelPf"};

void use_long_names(size_t bytes) {
  static std::string names[3];
  const char* const sites[] = {"alpha", "beta_", "gamma"};
  bytes = std::max<size_t>(bytes, 32);
  for (int site = 0; site < 3; ++site) {
    names[site] = "cutlass_kernel_" + std::string(bytes - 20, 'x') + sites[site];
    kKernels[site] = names[site].c_str();
  }
}

__attribute__((noinline)) int launch_with(const std::string& api, const char* kernel, uint64_t ns) {
  if (api == "runtime") return cudaLaunchKernel(kernel, ns);
  if (api == "runtime_ptsz") return cudaLaunchKernel_ptsz(kernel, ns);
  if (api == "exc") return cudaLaunchKernelExC(kernel, ns);
  if (api == "exc_ptsz") return cudaLaunchKernelExC_ptsz(kernel, ns);
  if (api == "cooperative") return cudaLaunchCooperativeKernel(kernel, ns);
  if (api == "cooperative_ptsz") return cudaLaunchCooperativeKernel_ptsz(kernel, ns);
  if (api == "multi_device") return cudaLaunchCooperativeKernelMultiDevice(kernel, ns);
  if (api == "internal") return __cudaLaunchKernel(kernel, ns);
  if (api == "internal_ptsz") return __cudaLaunchKernel_ptsz(kernel, ns);
  if (api == "driver") return cuLaunchKernel(kernel, ns);
  if (api == "driver_ptsz") return cuLaunchKernel_ptsz(kernel, ns);
  if (api == "driver_ex") return cuLaunchKernelEx(kernel, ns);
  if (api == "driver_cooperative") return cuLaunchCooperativeKernel(kernel, ns);
  return -1;
}

void count(int rc, int site, uint64_t ns) {
  if (rc != 0) {
    ++g_failures;
    return;
  }
  ++g_launches;
  g_ns[site] += ns;
}

__attribute__((noinline)) void launch_site_alpha(const std::string& api, uint64_t ns) {
  count(launch_with(api, kKernels[0], ns), 0, ns);
}
__attribute__((noinline)) void launch_site_beta(const std::string& api, uint64_t ns) {
  count(launch_with(api, kKernels[1], 2 * ns), 1, 2 * ns);
}
__attribute__((noinline)) void launch_site_gamma(const std::string& api, uint64_t ns) {
  count(launch_with(api, kKernels[2], 4 * ns), 2, 4 * ns);
}

__attribute__((noinline)) void launch_site_graph(bool driver, uint64_t ns) {
  const uint64_t durations[] = {ns, 2 * ns, 4 * ns};
  int rc = driver ? cuGraphLaunch(kKernels, durations, 3) : cudaGraphLaunch(kKernels, durations, 3);
  for (int site = 0; site < 3; ++site) count(rc, site, durations[site]);
}

__attribute__((noinline)) void copy_site(uint64_t ns) {
  if (cudaMemcpy(4096, 1, ns) != 0 || cudaMemset(4096, ns) != 0) {
    ++g_failures;
    return;
  }
  g_copy_ns += 2 * ns;
}

bool exists(const std::string& path) { return !path.empty() && access(path.c_str(), F_OK) == 0; }

__attribute__((noinline)) void run_rounds(const Options& options) {
  for (long round = 0;
       options.until_file.empty() ? round < options.rounds : !exists(options.until_file); ++round) {
    std::string api = options.api;
    if (!options.then_api.empty() && exists(options.once_file)) api = options.then_api;
    if (api == "all") api = kApis[round % std::size(kApis)];
    if (api == "graph" || api == "driver_graph") {
      launch_site_graph(api == "driver_graph", options.kernel_ns);
    } else {
      launch_site_alpha(api, options.kernel_ns);
      launch_site_beta(api, options.kernel_ns);
      launch_site_gamma(api, options.kernel_ns);
    }
    if (options.copies) copy_site(options.kernel_ns);
    if (!options.own_client_file.empty()) follow_own_cupti_client(exists(options.own_client_file));
    if (options.pause_us > 0) usleep(static_cast<useconds_t>(options.pause_us));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--api")
      options.api = next();
    else if (arg == "--threads")
      options.threads = std::atoi(next().c_str());
    else if (arg == "--rounds")
      options.rounds = std::atol(next().c_str());
    else if (arg == "--kernel-ns")
      options.kernel_ns = std::strtoull(next().c_str(), nullptr, 10);
    else if (arg == "--until-file")
      options.until_file = next();
    else if (arg == "--pause-us")
      options.pause_us = std::atol(next().c_str());
    else if (arg == "--copies")
      options.copies = true;
    else if (arg == "--then-api")
      options.then_api = next();
    else if (arg == "--once-file")
      options.once_file = next();
    else if (arg == "--long-names")
      use_long_names(std::strtoull(next().c_str(), nullptr, 10));
    else if (arg == "--own-client-file")
      options.own_client_file = next();
    else if (arg == "--nccl")
      options.nccl = true;
    else {
      std::fprintf(stderr, "fake_cuda_app: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  if (options.nccl && dlopen("libnccl.so.2", RTLD_NOW) == nullptr) {
    std::fprintf(stderr, "fake_cuda_app: %s\n", dlerror());
    return 2;
  }
  cuInit(0);
  auto began = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) threads.emplace_back(run_rounds, std::cref(options));
  for (auto& thread : threads) thread.join();
  auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - began);
  OwnCuptiClient own = own_cupti_client();
  std::printf(
      "{\"launches\": %llu, \"failures\": %llu, \"alpha_ns\": %llu, \"beta_ns\": %llu, "
      "\"gamma_ns\": %llu, \"copy_ns\": %llu, \"elapsed_ns\": %lld, \"own_subscribed\": %llu, "
      "\"own_refused\": %llu, \"own_callbacks\": %llu}\n",
      (unsigned long long)g_launches.load(), (unsigned long long)g_failures.load(),
      (unsigned long long)g_ns[0].load(), (unsigned long long)g_ns[1].load(),
      (unsigned long long)g_ns[2].load(), (unsigned long long)g_copy_ns.load(),
      (long long)elapsed.count(), (unsigned long long)own.subscribed,
      (unsigned long long)own.refused, (unsigned long long)own.callbacks);
  return g_failures == 0 ? 0 : 1;
}
