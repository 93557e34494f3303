// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an .sframe section. The header check, every
// function's decode and lookups at pcs taken from the decoded functions and from the input
// itself must never crash, hang or read out of bounds. And what decodes must survive the
// writer: re-encoding the decoded functions and reading them back gives the same functions.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "sframe/sframe.hpp"

namespace {

bool same_function(const ehbt::sframe::Function& a, const ehbt::sframe::Function& b) {
  using ehbt::sframe::Recovery;
  auto eq = [](const Recovery& x, const Recovery& y) {
    return x.kind == y.kind && x.reg == y.reg && x.offset == y.offset;
  };
  if (a.start != b.start || a.size != b.size || a.pc_type != b.pc_type ||
      a.rep_size != b.rep_size || a.type != b.type || a.pauth_b_key != b.pauth_b_key ||
      a.signal_frame != b.signal_frame || a.rows.size() != b.rows.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const auto& x = a.rows[i];
    const auto& y = b.rows[i];
    if (x.start != y.start || x.cfa.reg != y.cfa.reg || x.cfa.offset != y.cfa.offset ||
        x.cfa.deref != y.cfa.deref || !eq(x.fp, y.fp) || !eq(x.ra, y.ra) ||
        x.ra_mangled != y.ra_mangled) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  using namespace ehbt::sframe;
  constexpr uint64_t kSectionAddr = 0x10000;
  constexpr uint32_t kMaxFunctions = 512;  // keeps each input fast; same code paths
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  Limits limits;
  limits.max_sframe_fres = 4096;

  auto table = Table::parse(bytes, kSectionAddr, limits);
  if (!table) return 0;

  Conversion again;
  again.header = table->header();
  bool all_decoded = true;
  const uint32_t n = std::min(table->num_functions(), kMaxFunctions);
  for (uint32_t i = 0; i < n; ++i) {
    auto fn = table->function(i);
    if (!fn) {
      all_decoded = false;
      continue;
    }
    (void)table->find_row(fn->start);
    (void)table->find_row(fn->start + fn->size / 2);
    if (fn->size > 0) (void)table->find_row(fn->start + fn->size - 1);
    again.functions.push_back(std::move(*fn));
  }
  // A few pcs straight from the input bytes.
  for (std::size_t off = 0; off + 8 <= size && off < 64; off += 8) {
    uint64_t pc = 0;
    std::memcpy(&pc, data + off, 8);
    (void)table->find_row(pc);
    (void)table->find_row(kSectionAddr + (pc & 0xffff));
  }

  // Round trip through the writer (when it accepts the functions: they must be sorted and
  // their starts must fit the version's field).
  if (!all_decoded || n != table->num_functions()) return 0;
  auto encoded = encode(again, kSectionAddr);
  if (!encoded) return 0;
  auto back = Table::parse(*encoded, kSectionAddr, limits);
  if (!back || back->num_functions() != again.functions.size()) __builtin_trap();
  for (uint32_t i = 0; i < back->num_functions(); ++i) {
    auto fn = back->function(i);
    if (!fn || !same_function(*fn, again.functions[i])) __builtin_trap();
  }
  return 0;
}
