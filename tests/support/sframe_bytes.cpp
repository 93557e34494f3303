// SPDX-License-Identifier: Apache-2.0
// Field writers for hand-made .sframe sections (see sframe_bytes.hpp).
#include "support/sframe_bytes.hpp"

namespace ehbt::test {

SframeSink& SframeSink::put(unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned shift = big_endian_ ? 8 * (width - 1 - i) : 8 * i;
    out_.push_back(static_cast<std::byte>((v >> shift) & 0xff));
  }
  return *this;
}

SframeSink& SframeSink::bytes(std::initializer_list<int> list) {
  for (int b : list) out_.push_back(static_cast<std::byte>(b & 0xff));
  return *this;
}

void put_header(SframeSink& s, const SframeHeader& h) {
  s.u16(h.magic).u8(h.version).u8(h.flags).u8(h.abi);
  s.u8(static_cast<uint8_t>(h.fixed_fp)).u8(static_cast<uint8_t>(h.fixed_ra)).u8(h.aux_len);
  s.u32(h.num_fdes).u32(h.num_fres).u32(h.fre_len).u32(h.fdeoff).u32(h.freoff);
}

void put_v2_fde(SframeSink& s, int64_t start, uint32_t size, uint32_t fre_off, uint32_t num_fres,
                uint8_t info, uint8_t rep_size) {
  s.u32(static_cast<uint64_t>(start)).u32(size).u32(fre_off).u32(num_fres);
  s.u8(info).u8(rep_size).u16(0);
}

void put_v3_index(SframeSink& s, int64_t start, uint32_t size, uint32_t attr_off) {
  s.u64(static_cast<uint64_t>(start)).u32(size).u32(attr_off);
}

void put_v3_attr(SframeSink& s, uint16_t num_fres, uint8_t info, uint8_t info2, uint8_t rep_size) {
  s.u16(num_fres).u8(info).u8(info2).u8(rep_size);
}

std::vector<std::byte> assemble(SframeHeader h, const SframeSink& fdes, const SframeSink& fres,
                                bool keep_layout, std::size_t aux) {
  if (!keep_layout) {
    h.aux_len = static_cast<uint8_t>(aux);
    h.fdeoff = 0;
    h.freoff = static_cast<uint32_t>(fdes.size());
    h.fre_len = static_cast<uint32_t>(fres.size());
  }
  SframeSink out(fdes.big_endian());
  put_header(out, h);
  std::vector<std::byte> bytes = out.data();
  bytes.resize(bytes.size() + aux, std::byte{0});
  bytes.insert(bytes.end(), fdes.data().begin(), fdes.data().end());
  bytes.insert(bytes.end(), fres.data().begin(), fres.data().end());
  return bytes;
}

namespace {
int64_t pcrel_start(uint64_t func, uint64_t field, uint64_t section, std::size_t aux) {
  return static_cast<int64_t>(func) -
         static_cast<int64_t>(section + kSframeHeaderSize + aux + field);
}
}  // namespace

int64_t v2_pcrel_start(uint64_t func, unsigned index, uint64_t section, std::size_t aux) {
  return pcrel_start(func, 20 * uint64_t{index}, section, aux);
}

int64_t v3_pcrel_start(uint64_t func, unsigned index, uint64_t section, std::size_t aux) {
  return pcrel_start(func, 16 * uint64_t{index}, section, aux);
}

}  // namespace ehbt::test
