#include "common/atomic_file.h"

#include <array>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace dormant {
namespace {

Result<void> write_all(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("write(" + what + ")");
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return ok();
}

}  // namespace

Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view content,
                                   mode_t mode) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::string name = ".";  // appended to: g++ 12 warns (-Wrestrict) of "." + string&&
  name += path.filename().string();
  name += ".tmp.XXXXXX";
  std::string temp = (dir / name).string();
  UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (!fd) return Error::from_errno("mkostemp(" + temp + ")");

  auto fail = [&](Error error) -> Result<void> {
    ::unlink(temp.c_str());
    return error;
  };
  if (::fchmod(fd.get(), mode) != 0) return fail(Error::from_errno("fchmod(" + temp + ")"));
  if (auto written = write_all(fd.get(), content, temp); !written) {
    return fail(written.error());
  }
  if (::fsync(fd.get()) != 0) return fail(Error::from_errno("fsync(" + temp + ")"));
  fd.reset();
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return fail(Error::from_errno("rename(" + temp + ", " + path.string() + ")"));
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd || ::fsync(dir_fd.get()) != 0) {
    return Error::from_errno("fsync(" + dir.string() + ")");
  }
  return ok();
}

Result<std::string> read_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno("open(" + path.string() + ")");
  return read_rest(fd.get(), path.string());
}

Result<std::string> read_rest(int fd, const std::string& name, size_t max_bytes) {
  std::string content;
  std::array<char, 16384> buffer;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("read(" + name + ")");
    }
    if (n == 0) return content;
    if (static_cast<size_t>(n) > max_bytes - content.size()) {
      return Error::invalid_argument(name + " is larger than " + std::to_string(max_bytes) +
                                     " bytes");
    }
    content.append(buffer.data(), static_cast<size_t>(n));
  }
}

}  // namespace dormant
