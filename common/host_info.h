// Facts about this host that go into every profile's metadata, read once.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace dormant {

struct HostInfo {
  std::string hostname;
  std::string system_name;     // uname sysname: "Linux"
  std::string kernel_release;  // uname release
  std::string kernel_version;  // uname version
  std::string hardware_type;   // uname machine: "x86_64"
  std::string os_name;         // /etc/os-release NAME
  std::string os_release;      // VERSION_ID
  std::string os_codename;     // VERSION_CODENAME
  std::string cpu_model_name;
  std::string cpu_flags;  // /proc/cpuinfo "flags", space-separated
  int processors = 0;
  uint64_t memory_capacity_mb = 0;
  std::string libc_type;  // "glibc"
  std::string libc_version;
  std::string private_ip;   // of the interface with the default route; 127.0.0.1 if none
  std::string mac_address;  // of that interface
};

HostInfo read_host_info();

// The IPv4 address of the interface that holds the default route (no packet is sent).
std::string default_route_ip();

// Host-wide CPU use between two readings of /proc/stat, and memory in use now, in percent.
class HostUsageMeter {
 public:
  HostUsageMeter();  // takes the first CPU reading
  // CPU percent since construction or the previous call.
  double cpu_percent();
  static double memory_percent();

 private:
  uint64_t busy_ = 0;
  uint64_t total_ = 0;
};

}  // namespace dormant
