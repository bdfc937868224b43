// dormant-pprof: a collapsed profile (the gProfiler format dormant-agent writes) as a gzip'd pprof
// profile. The agent runs it for --output-format pprof, so that protobuf's runtime, which cannot
// be unloaded, is never mapped into the agent; people can run it on any collapsed file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <CLI/CLI.hpp>

#include "common/atomic_file.h"
#include "profile/collapsed.h"
#include "profile/pprof/pprof.h"
#include "profile/profile_header.h"

namespace {

// The largest collapsed file read: the server's bound on a profile.
constexpr std::uintmax_t kLargestInput = 256 << 20;

int fail(const std::string& message) {
  std::fprintf(stderr, "dormant-pprof: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Writes a collapsed profile as a gzip'd pprof profile (go tool pprof reads it)",
               "dormant-pprof");
  std::string input;
  std::string output;
  dormant::profile::PprofOptions options;
  app.add_option("input", input, "The collapsed profile ('# {header}' then stacks)")->required();
  app.add_option("output", output, "Where the .pb.gz goes (replaced atomically)")->required();
  app.add_option("--time-nanos", options.time_nanos,
                 "When the profile began, nanoseconds since the Unix epoch");
  app.add_option("--duration-nanos", options.duration_nanos, "How long it ran, in nanoseconds");
  CLI11_PARSE(app, argc, argv);

  std::error_code error;
  auto size = std::filesystem::file_size(input, error);
  if (error) return fail(input + ": " + error.message());
  if (size > kLargestInput) return fail(input + ": larger than 256 MiB");
  std::ifstream in(input, std::ios::binary);
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (!in && !in.eof()) return fail(input + ": could not be read");
  auto profile = dormant::profile::read_collapsed(text);
  if (!profile) return fail(input + ": " + profile.error().message());
  text = std::string();
  options.frequency_hz = dormant::profile::header_frequency(profile->header);
  auto bytes = dormant::profile::write_pprof(profile->stacks, options);
  if (!bytes) return fail(bytes.error().message());
  // A profile shows the code and data of the processes in it: for its owner only.
  if (auto written = dormant::write_file_atomically(output, *bytes, 0600); !written) {
    return fail(written.error().message());
  }
  return 0;
}
