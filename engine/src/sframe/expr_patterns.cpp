// SPDX-License-Identifier: Apache-2.0
// Recognisers for the DWARF expressions SFrame can express (see expr_patterns.hpp).
#include "sframe/expr_patterns.hpp"

#include "dwarf/dwarf_constants.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::sframe {
namespace {

namespace op = dwarf::op;

// One breg/bregx operation at the reader's position.
std::optional<RegPlusOffset> read_breg(util::ByteReader& r) {
  uint8_t code = 0;
  if (!r.read_u8(code)) return std::nullopt;
  RegPlusOffset out;
  if (code >= op::breg0 && code <= op::breg31) {
    out.reg = static_cast<uint16_t>(code - op::breg0);
  } else if (code == op::bregx) {
    auto reg = r.read_uleb128();
    if (!reg || *reg > 0xffff) return std::nullopt;
    out.reg = static_cast<uint16_t>(*reg);
  } else {
    return std::nullopt;
  }
  auto off = r.read_sleb128();
  if (!off) return std::nullopt;
  out.offset = *off;
  return out;
}

bool expect(util::ByteReader& r, uint8_t want) {
  uint8_t b = 0;
  return r.read_u8(b) && b == want;
}

}  // namespace

std::optional<RegPlusOffset> match_breg(std::span<const std::byte> expr) {
  util::ByteReader r(expr, false);
  auto b = read_breg(r);
  if (!b || !r.at_end()) return std::nullopt;
  return b;
}

std::optional<RegPlusOffset> match_breg_deref(std::span<const std::byte> expr) {
  util::ByteReader r(expr, false);
  auto b = read_breg(r);
  if (!b || !expect(r, op::deref) || !r.at_end()) return std::nullopt;
  return b;
}

std::optional<PltCfa> match_plt_cfa(std::span<const std::byte> expr) {
  constexpr uint16_t kRsp = 7, kRip = 16;
  util::ByteReader r(expr, false);
  auto sp = read_breg(r);
  if (!sp || sp->reg != kRsp) return std::nullopt;
  auto ip = read_breg(r);
  if (!ip || ip->reg != kRip || ip->offset != 0) return std::nullopt;
  if (!expect(r, op::lit0 + 15) || !expect(r, op::and_)) return std::nullopt;
  uint8_t lit = 0;
  if (!r.read_u8(lit) || lit < op::lit0 || lit > op::lit0 + 15) return std::nullopt;
  if (!expect(r, op::ge) || !expect(r, op::lit0 + 3) || !expect(r, op::shl) ||
      !expect(r, op::plus) || !r.at_end()) {
    return std::nullopt;
  }
  return PltCfa{sp->offset, static_cast<uint8_t>(lit - op::lit0)};
}

}  // namespace ehbt::sframe
