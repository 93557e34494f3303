// SPDX-License-Identifier: Apache-2.0
#include "support/unwind_toolchain.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ehbt::test {

namespace {

// Removes the directories handed out by make_temp_dir at exit (images built into them stay
// mapped until then).
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string make_temp_dir() {
  char dir_template[] = "/tmp/ehbt-unwind-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return "";
  temp_dirs().dirs.push_back(dir);
  return dir;
}

std::optional<std::string> run_capture(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int rc = pclose(p);
  if (rc != 0) return std::nullopt;
  return out;
}

bool Toolchain::available() const {
  return std::system(
             ("command -v " + gcc() + " >/dev/null 2>&1 && command -v " + nm() + " >/dev/null 2>&1")
                 .c_str()) == 0;
}

uint64_t BuiltObject::sym(const std::string& name) const {
  auto it = symbols.find(name);
  return it == symbols.end() ? 0 : it->second;
}

std::optional<BuiltObject> build_shared_object(const Toolchain& tc, const std::string& name,
                                               const std::string& source, const std::string& flags,
                                               std::string* error) {
  const std::string dir = make_temp_dir();
  if (dir.empty()) {
    if (error) *error = "mkdtemp failed";
    return std::nullopt;
  }
  const std::string src = dir + "/" + name;
  const std::string out = dir + "/lib.so";
  {
    std::ofstream f(src);
    f << source;
  }
  const std::string cmd = tc.gcc() + " -shared -nostdlib -Wl,--eh-frame-hdr -Wl,-Bsymbolic " +
                          flags + " -o " + out + " " + src + " 2>&1";
  auto log = run_capture(cmd);
  if (!log) {
    if (error) *error = "compile failed: " + cmd;
    return std::nullopt;
  }
  auto syms = run_capture(tc.nm() + " " + out);
  if (!syms) {
    if (error) *error = "nm failed on " + out;
    return std::nullopt;
  }
  BuiltObject obj;
  obj.path = out;
  std::istringstream lines(*syms);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string addr, type, sym;
    if (fields >> addr >> type >> sym) obj.symbols[sym] = std::stoull(addr, nullptr, 16);
  }
  return obj;
}

Module place_image(std::shared_ptr<const Image> image, uint64_t bias, const std::string& path) {
  Module m;
  m.path = path;
  m.file = path;
  m.bias = bias;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Segment& s : image->segments()) {
    lo = std::min(lo, s.vaddr);
    hi = std::max(hi, s.vaddr + s.memsz);
  }
  if (lo > hi) lo = hi = 0;
  m.start = lo + bias;
  m.end = hi + bias;
  m.image = std::move(image);
  return m;
}

}  // namespace ehbt::test
