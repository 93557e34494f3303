// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the elf_*_test programs: running binutils to get expected values from an
// independent source, temporary directories, and whole-file reads.
#pragma once

#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace elf_test {

// Runs a shell command and returns its standard output ("" if it could not run).
inline std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

inline int run_status(const std::string& cmd) {
  return system(cmd.c_str());
}

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

inline bool write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/ehbt-elf-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (!path_.empty()) run_status("rm -rf '" + path_ + "'");
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct SectionInfo {
  std::string type;
  uint64_t addr = 0, offset = 0, size = 0;
};

inline bool is_hex_token(const std::string& t) {
  if (t.empty() || t.size() > 16) return false;
  for (char c : t) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Sections as `readelf -SW` prints them, by name:
// "  [16] .eh_frame_hdr  PROGBITS  0000000000021018 021018 00045c 00   A  0   0  4"
inline std::map<std::string, SectionInfo> readelf_sections(const std::string& path) {
  std::map<std::string, SectionInfo> out;
  std::istringstream in(run("readelf -SW '" + path + "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    auto open = line.find('[');
    auto close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream ls(line.substr(close + 1));
    std::string name, type, addr, off, size;
    if (!(ls >> name >> type >> addr >> off >> size)) continue;
    if (!is_hex_token(addr) || !is_hex_token(off) || !is_hex_token(size)) continue;
    SectionInfo s;
    s.type = type;
    s.addr = std::stoull(addr, nullptr, 16);
    s.offset = std::stoull(off, nullptr, 16);
    s.size = std::stoull(size, nullptr, 16);
    out.emplace(name, s);
  }
  return out;
}

// The build-id `readelf -n` prints, or "".
inline std::string readelf_build_id(const std::string& path) {
  std::string out = run("readelf -n '" + path + "' 2>/dev/null");
  auto pos = out.find("Build ID:");
  if (pos == std::string::npos) return "";
  std::istringstream ls(out.substr(pos + 9));
  std::string id;
  ls >> id;
  return id;
}

struct NmSymbol {
  std::string name;
  uint64_t start = 0, size = 0;
  char kind = 0;
};

// Defined symbols with sizes as `nm -S --defined-only` prints them (mangled names).
inline std::vector<NmSymbol> nm_symbols(const std::string& path, bool dynamic = false,
                                        const std::string& nm = "nm") {
  std::vector<NmSymbol> out;
  std::istringstream in(
      run(nm + " -S --defined-only " + (dynamic ? "-D " : "") + "'" + path + "' 2>/dev/null"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string a, b, c, d;
    ls >> a >> b >> c;
    NmSymbol s;
    if (!is_hex_token(a)) continue;
    if (ls >> d) {
      if (!is_hex_token(b)) continue;  // address size kind name
      s.start = std::stoull(a, nullptr, 16);
      s.size = std::stoull(b, nullptr, 16);
      s.kind = c.empty() ? 0 : c[0];
      s.name = d;
    } else {  // address kind name (no size)
      if (b.empty() || c.empty()) continue;
      s.start = std::stoull(a, nullptr, 16);
      s.kind = b[0];
      s.name = c;
    }
    out.push_back(s);
  }
  return out;
}

inline std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// Load bias and name of every loaded object, from dl_iterate_phdr.
struct LoadedObject {
  std::string name;
  uint64_t bias = 0;
  uint64_t header = 0;  // where the ELF header is mapped
};

inline std::vector<LoadedObject> loaded_objects() {
  std::vector<LoadedObject> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* v = static_cast<std::vector<LoadedObject>*>(data);
        LoadedObject o;
        o.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        o.bias = info->dlpi_addr;
        // The first PT_LOAD with offset 0 maps the ELF header.
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && ph.p_offset == 0) {
            o.header = info->dlpi_addr + ph.p_vaddr;
            break;
          }
        }
        v->push_back(o);
        return 0;
      },
      &out);
  return out;
}

}  // namespace elf_test
