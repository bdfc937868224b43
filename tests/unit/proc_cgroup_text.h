// /proc/PID/cgroup of a process in one cgroup, as a v2 host, a v1 host and a hybrid host list it
// (on a hybrid host only the v1 hierarchies follow a container; the unified one stays at the
// root).
#pragma once

#include <string>

namespace dormant::testing {

inline std::string on_v2(const std::string& path) { return "0::" + path + "\n"; }
inline std::string on_v1(const std::string& path) {
  return "12:perf_event:" + path + "\n11:memory:" + path + "\n4:cpu,cpuacct:" + path +
         "\n1:name=systemd:" + path + "\n";
}
inline std::string on_hybrid(const std::string& path) {
  return "12:perf_event:" + path + "\n11:memory:" + path + "\n1:name=systemd:" + path + "\n0::/\n";
}

}  // namespace dormant::testing
