#include "common/host_info.h"

#include <fstream>
#include <sstream>

#include <arpa/inet.h>
#include <gnu/libc-version.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/atomic_file.h"

namespace dormant {
namespace {

// Value of `key` in a "KEY=value" file such as /etc/os-release, quotes removed.
std::string os_release_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(key + "=")) continue;
    std::string value = line.substr(key.size() + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return {};
}

// Value after "key<spaces>:" in /proc/cpuinfo or /proc/meminfo style text.
std::string colon_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with(key)) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? std::string() : line.substr(begin);
  }
  return {};
}

// Name of the interface that holds the IPv4 default route, from /proc/net/route.
std::string default_route_interface() {
  std::ifstream route("/proc/net/route");
  std::string line;
  std::getline(route, line);  // column titles
  while (std::getline(route, line)) {
    std::istringstream fields(line);
    std::string interface, destination;
    fields >> interface >> destination;
    if (destination == "00000000") return interface;
  }
  return {};
}

void read_cpu_times(uint64_t& busy, uint64_t& total) {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  busy = user + nice + system + irq + softirq + steal;
  total = busy + idle + iowait;
}

}  // namespace

std::string default_route_ip() {
  std::string interface = default_route_interface();
  ifaddrs* addresses = nullptr;
  if (interface.empty() || ::getifaddrs(&addresses) != 0) return "127.0.0.1";
  std::string ip = "127.0.0.1";
  for (ifaddrs* a = addresses; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (interface != a->ifa_name) continue;
    char text[INET_ADDRSTRLEN];
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) ip = text;
    break;
  }
  ::freeifaddrs(addresses);
  return ip;
}

HostInfo read_host_info() {
  HostInfo info;
  char hostname[256] = {};
  ::gethostname(hostname, sizeof(hostname) - 1);
  info.hostname = hostname;
  utsname names{};
  if (::uname(&names) == 0) {
    info.system_name = names.sysname;
    info.kernel_release = names.release;
    info.kernel_version = names.version;
    info.hardware_type = names.machine;
  }
  std::string os_release = read_file("/etc/os-release").value_or("");
  info.os_name = os_release_value(os_release, "NAME");
  info.os_release = os_release_value(os_release, "VERSION_ID");
  info.os_codename = os_release_value(os_release, "VERSION_CODENAME");
  std::string cpuinfo = read_file("/proc/cpuinfo").value_or("");
  info.cpu_model_name = colon_value(cpuinfo, "model name");
  info.cpu_flags = colon_value(cpuinfo, "flags");                                 // x86
  if (info.cpu_flags.empty()) info.cpu_flags = colon_value(cpuinfo, "Features");  // arm64
  info.processors = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::string mem_total = colon_value(read_file("/proc/meminfo").value_or(""), "MemTotal");
  info.memory_capacity_mb = std::strtoull(mem_total.c_str(), nullptr, 10) / 1024;
  info.libc_type = "glibc";
  info.libc_version = ::gnu_get_libc_version();
  info.private_ip = default_route_ip();
  std::string interface = default_route_interface();
  if (!interface.empty()) {
    std::string mac = read_file("/sys/class/net/" + interface + "/address").value_or("");
    while (!mac.empty() && (mac.back() == '\n' || mac.back() == ' ')) mac.pop_back();
    info.mac_address = mac;
  }
  return info;
}

HostUsageMeter::HostUsageMeter() { read_cpu_times(busy_, total_); }

double HostUsageMeter::cpu_percent() {
  uint64_t busy = 0, total = 0;
  read_cpu_times(busy, total);
  double percent = total > total_ ? 100.0 * static_cast<double>(busy - busy_) /
                                        static_cast<double>(total - total_)
                                  : 0.0;
  busy_ = busy;
  total_ = total;
  return percent;
}

double HostUsageMeter::memory_percent() {
  std::string meminfo = read_file("/proc/meminfo").value_or("");
  double total = std::strtod(colon_value(meminfo, "MemTotal").c_str(), nullptr);
  double available = std::strtod(colon_value(meminfo, "MemAvailable").c_str(), nullptr);
  return total > 0 ? 100.0 * (total - available) / total : 0.0;
}

}  // namespace dormant
