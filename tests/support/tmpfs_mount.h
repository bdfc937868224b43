// A small tmpfs mounted for a test (root only), which the test fills or makes read-only while a
// program under test writes to it; unmounted when the test ends, and checked to leave no mount.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace dormant::testing {

class TmpfsMount {
 public:
  // A tmpfs of `size` ("2m") on `at`; null, with `why` set, when it cannot be mounted.
  static std::unique_ptr<TmpfsMount> make(const std::filesystem::path& at, const std::string& size,
                                          std::string& why) {
    if (::geteuid() != 0) {
      why = "mounting a tmpfs needs root";
      return nullptr;
    }
    std::filesystem::create_directories(at);
    std::string options = "size=" + size + ",mode=0700";
    if (::mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      why = "cannot mount a tmpfs on " + at.string() + ": " + std::strerror(errno);
      return nullptr;
    }
    return std::unique_ptr<TmpfsMount>(new TmpfsMount(at));
  }

  // The programs using it must have let go of its files: a busy mount is detached, and fails.
  ~TmpfsMount() {
    // The tmpfs, and the read-only view over it when a test left one.
    for (int i = 0; i < 4 && is_mount_point(at_); ++i) {
      if (::umount2(at_.c_str(), 0) != 0) {
        ADD_FAILURE() << "umount " << at_ << ": " << std::strerror(errno) << "; detaching it";
        ::umount2(at_.c_str(), MNT_DETACH);
      }
    }
    EXPECT_FALSE(is_mount_point(at_)) << "a mount on " << at_ << " is left behind";
  }

  static bool is_mount_point(const std::filesystem::path& dir) {
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mounts, line)) {
      // "36 35 0:39 / <mount point> rw,... - tmpfs tmpfs rw,size=2048k"
      std::istringstream fields(line);
      std::string id, parent, device, source, mount_point;
      fields >> id >> parent >> device >> source >> mount_point;
      if (mount_point == dir.string()) return true;
    }
    return false;
  }

  uint64_t free_bytes() const {
    struct statvfs fs {};
    EXPECT_EQ(::statvfs(at_.c_str(), &fs), 0) << std::strerror(errno);
    return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  }

  // Writes filler() until the file system is full, then gives `leave` bytes of it back. Call it
  // under ASSERT_NO_FATAL_FAILURE.
  void fill(uint64_t leave = 0) {
    UniqueFd fd(::open(filler().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd) << "open " << filler() << ": " << std::strerror(errno);
    std::string block(64 << 10, 'f');
    off_t size = 0;
    for (;;) {
      ssize_t written = ::write(fd.get(), block.data(), block.size());
      if (written > 0) {
        size += written;
      } else if (errno != EINTR) {
        ASSERT_EQ(errno, ENOSPC) << std::strerror(errno);
        break;
      }
    }
    ASSERT_EQ(free_bytes(), 0u) << "the file system is full";
    if (leave > 0) {
      ASSERT_EQ(::ftruncate(fd.get(), size - static_cast<off_t>(leave)), 0) << std::strerror(errno);
      ASSERT_EQ(free_bytes(), leave);
    }
  }
  std::filesystem::path filler() const { return at_ / "filler"; }

  // A read-only view over the mount: every path opened from now on is on a read-only mount.
  // (`mount -o remount,ro` of the tmpfs itself is refused with EBUSY as long as a process holds
  // one of its files open for writing, as a server holds its database.) Under
  // ASSERT_NO_FATAL_FAILURE.
  void make_read_only() {
    ASSERT_EQ(::mount(at_.c_str(), at_.c_str(), nullptr, MS_BIND, nullptr), 0)
        << std::strerror(errno);
    ASSERT_EQ(::mount(nullptr, at_.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
        << std::strerror(errno);
  }
  // `mount -o remount,rw` of that view.
  void make_writable() {
    ASSERT_EQ(::mount(nullptr, at_.c_str(), nullptr, MS_REMOUNT | MS_BIND, nullptr), 0)
        << std::strerror(errno);
  }

 private:
  explicit TmpfsMount(std::filesystem::path at) : at_(std::move(at)) {}
  std::filesystem::path at_;
};

}  // namespace dormant::testing
