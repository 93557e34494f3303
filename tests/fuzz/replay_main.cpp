// SPDX-License-Identifier: Apache-2.0
// A main() for the fuzz targets without libFuzzer: feeds every file named on the command line
// (or found in a named directory) to LLVMFuzzerTestOneInput once. The ordinary gcc build runs
// each target this way over its seed corpus and kept regression inputs as a ctest test, so a
// fixed find stays fixed in every build, sanitized or not, not only in the clang fuzz build.
//
// Outside sanitizer builds the address space is capped (EHBT_REPLAY_AS_MIB, default 512):
// an input that makes the engine allocate what it does not have ends the run with
// std::bad_alloc escaping the target, which fails the test.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

void cap_address_space() {
  if (kSanitized) return;  // ASan reserves terabytes of shadow memory up front
  unsigned long mib = 512;
  if (const char* env = std::getenv("EHBT_REPLAY_AS_MIB")) mib = std::strtoul(env, nullptr, 10);
  rlimit lim{mib << 20, mib << 20};
  setrlimit(RLIMIT_AS, &lim);
}

bool run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  cap_address_space();
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(arg);
    }
  }
  std::sort(files.begin(), files.end());
  bool ok = true;
  for (const auto& f : files) ok = run_file(f) && ok;
  std::printf("%zu inputs replayed\n", files.size());
  return ok && !files.empty() ? 0 : 1;
}
