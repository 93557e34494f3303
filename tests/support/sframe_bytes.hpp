// SPDX-License-Identifier: Apache-2.0
// Byte-level .sframe sections for tests, written field by field from the SFrame
// specification (V2: binutils 2.41/2.45 docs, V3: 2.46). Nothing here knows what a field
// means beyond its width and place: tests spell out every info byte and data word.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace ehbt::test {

// Appends fixed-width integers (two's complement, truncated to the width) in one byte order.
class SframeSink {
 public:
  explicit SframeSink(bool big_endian = false) : big_endian_(big_endian) {}
  SframeSink& put(unsigned width, uint64_t v);
  SframeSink& u8(uint64_t v) { return put(1, v); }
  SframeSink& u16(uint64_t v) { return put(2, v); }
  SframeSink& u32(uint64_t v) { return put(4, v); }
  SframeSink& u64(uint64_t v) { return put(8, v); }
  // Single bytes as written (info bytes, 1-byte words).
  SframeSink& bytes(std::initializer_list<int> list);
  std::size_t size() const { return out_.size(); }
  bool big_endian() const { return big_endian_; }
  const std::vector<std::byte>& data() const { return out_; }

 private:
  bool big_endian_;
  std::vector<std::byte> out_;
};

// The 28-byte sframe_header, field by field.
struct SframeHeader {
  uint16_t magic = 0xdee2;
  uint8_t version = 2;
  uint8_t flags = 0x5;  // FDE_SORTED | FDE_FUNC_START_PCREL
  uint8_t abi = 3;      // AMD64 little-endian
  int8_t fixed_fp = 0;
  int8_t fixed_ra = -8;
  uint8_t aux_len = 0;
  uint32_t num_fdes = 0;
  uint32_t num_fres = 0;
  uint32_t fre_len = 0;
  uint32_t fdeoff = 0;
  uint32_t freoff = 0;
};
void put_header(SframeSink& s, const SframeHeader& h);

// V2 FDE: start s32, size u32, first FRE offset u32, num FREs u32, info u8, rep size u8, pad u16.
void put_v2_fde(SframeSink& s, int64_t start, uint32_t size, uint32_t fre_off, uint32_t num_fres,
                uint8_t info, uint8_t rep_size = 0);
// V3 FDE index entry: start s64, size u32, attributes offset u32.
void put_v3_index(SframeSink& s, int64_t start, uint32_t size, uint32_t attr_off);
// V3 FDE attributes: num FREs u16, info u8, info2 u8, rep size u8.
void put_v3_attr(SframeSink& s, uint16_t num_fres, uint8_t info, uint8_t info2,
                 uint8_t rep_size = 0);

// Where the tests place their sections (link-time address), and the header's size.
inline constexpr uint64_t kSframeAddr = 0x1000;
inline constexpr uint64_t kSframeHeaderSize = 28;

// The start word of FDE `index` under FDE_FUNC_START_PCREL: `func` counted from that FDE's
// own start field, the FDEs right after the header (and `aux` auxiliary bytes) of a section
// at `section`. V2 FDEs are 20 bytes long, V3 index entries 16.
int64_t v2_pcrel_start(uint64_t func, unsigned index = 0, uint64_t section = kSframeAddr,
                       std::size_t aux = 0);
int64_t v3_pcrel_start(uint64_t func, unsigned index = 0, uint64_t section = kSframeAddr,
                       std::size_t aux = 0);

// Header + FDE bytes + FRE bytes. Unless `keep_layout`, sets fdeoff = 0 (FDEs right after the
// header), freoff = FDE bytes, fre_len = FRE bytes. `aux` bytes follow the header.
std::vector<std::byte> assemble(SframeHeader h, const SframeSink& fdes, const SframeSink& fres,
                                bool keep_layout = false, std::size_t aux = 0);

}  // namespace ehbt::test
