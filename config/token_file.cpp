#include "config/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "config/secret_file.h"

namespace dormant::config {
namespace {

constexpr size_t kMaxTokenFileBytes = 64 << 10;

}  // namespace

Result<std::string> read_token_file(const std::string& path) {
  const std::string what = "--token-file " + path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return Error::from_errno(what);
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) return Error::from_errno(what);
  if (!S_ISREG(status.st_mode)) return Error::invalid_argument(what + ": not a regular file");
  if (auto private_file = check_secret_file(status, what); !private_file)
    return private_file.error();
  std::string text(kMaxTokenFileBytes, '\0');
  ssize_t got = ::read(fd.get(), text.data(), text.size());
  if (got < 0) return Error::from_errno(what);
  text.resize(static_cast<size_t>(got));
  text = text.substr(0, text.find('\n'));
  const char* blanks = " \t\r";
  size_t first = text.find_first_not_of(blanks);
  if (first == std::string::npos) return Error::invalid_argument(what + ": holds no token");
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

}  // namespace dormant::config
