// SPDX-License-Identifier: Apache-2.0
// ModuleListStream: each module's base, size, name and CodeView record. On Linux the record
// holds the ELF build-id: whole in Breakpad's 'BpEL' form (Breakpad, Crashpad, LLDB), or its
// first 16 bytes as the GUID of a PDB70 ('RSDS') record (older Breakpad and Crashpad). Those
// writers copy the build-id's bytes into the GUID as they are: Crashpad reads them as a
// big-endian UUID and swaps the first three fields back, so the bytes in the file are the
// build-id's (only the GUID's text form, data1-data2-data3 printed as little-endian numbers,
// shows them swapped).
#include "core/byte_order.hpp"
#include "core/target_elf.hpp"
#include "minidump/format.hpp"
#include "minidump/minidump_file.hpp"
#include "util/hex.hpp"

namespace ehbt::minidump {
namespace {

constexpr uint64_t kMaxName = 64 * 1024;  // bytes of one UTF-16 module name
constexpr uint64_t kMaxCodeView = 4096;   // a CodeView record: signature + id + a path
constexpr uint64_t kGuidSize = 16;

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// The build-id a CodeView record holds (hex), and whether only a GUID of it is there.
void read_codeview(std::span<const std::byte> cv, ModuleRecord& m) {
  core::ByteView v(cv, false);
  const uint32_t sig = v.u32(0);
  if (!v.ok()) return;
  if (sig == kCvElf && cv.size() > 4) {
    m.build_id = util::bytes_hex(cv.subspan(4));
  } else if (sig == kCvPdb70 && cv.size() >= 4 + kGuidSize + 4) {
    const uint32_t age = v.u32(4 + kGuidSize);
    // A non-zero age: the writer put a 20-byte build-id into the GUID and the age (as LLDB
    // reads such records); zero, the usual case: only the GUID, the first 16 bytes.
    m.build_id = util::bytes_hex(cv.subspan(4, kGuidSize + (age != 0 ? 4 : 0)));
    m.guid_only = age == 0;
  }
}

}  // namespace

std::optional<std::string> read_string(std::span<const std::byte> file, uint64_t rva) {
  uint64_t len = 0;
  if (!core::load_uint(file, rva, 4, false, len)) return std::nullopt;
  len = std::min(len, kMaxName) & ~uint64_t{1};
  auto bytes = file_range(file, rva + 4, len);
  if (bytes.size() < len) return std::nullopt;
  std::string out;
  out.reserve(len / 2);
  core::ByteView v(bytes, false);
  for (uint64_t i = 0; i + 1 < len; i += 2) {
    uint32_t u = v.u16(i);
    if (u >= 0xd800 && u < 0xdc00 && i + 3 < len) {
      const uint32_t lo = v.u16(i + 2);
      if (lo >= 0xdc00 && lo < 0xe000) {
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        i += 2;
      }
    }
    if (u == 0) break;
    append_utf8(out, u);
  }
  return out;
}

std::vector<ModuleRecord> read_module_list(std::span<const std::byte> file,
                                           std::span<const std::byte> stream,
                                           const Limits& limits) {
  std::vector<ModuleRecord> out;
  core::ByteView v(stream, false);
  const uint64_t count = v.u32(0);
  if (!v.ok()) return out;
  const uint64_t first = list_start(stream.size(), count, kModuleSize);
  for (uint64_t i = 0; i < count && i < limits.max_modules; ++i) {
    const uint64_t at = first + i * kModuleSize;
    if (at + kModuleSize > stream.size()) break;
    ModuleRecord m;
    m.base = v.u64(at);
    m.size = v.u32(at + 8);
    m.name = read_string(file, v.u32(at + 20)).value_or("");
    // VS_FIXEDFILEINFO (52 bytes) at 24, then CvRecord {DataSize, Rva}.
    const uint64_t cv_size = std::min<uint64_t>(v.u32(at + 76), kMaxCodeView);
    read_codeview(file_range(file, v.u32(at + 80), cv_size), m);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace ehbt::minidump
