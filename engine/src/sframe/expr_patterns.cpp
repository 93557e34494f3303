// Recognisers for the DWARF expressions SFrame can express (see expr_patterns.hpp).
#include "sframe/expr_patterns.hpp"

#include "util/byte_reader.hpp"

namespace ehbt::sframe {
namespace {

constexpr uint8_t kOpDeref = 0x06;
constexpr uint8_t kOpAnd = 0x1a;
constexpr uint8_t kOpPlus = 0x22;
constexpr uint8_t kOpShl = 0x24;
constexpr uint8_t kOpGe = 0x2a;
constexpr uint8_t kOpLit0 = 0x30;
constexpr uint8_t kOpBreg0 = 0x70;
constexpr uint8_t kOpBregx = 0x92;

// One breg/bregx operation at the reader's position.
std::optional<RegPlusOffset> read_breg(util::ByteReader& r) {
  uint8_t op = 0;
  if (!r.read_u8(op)) return std::nullopt;
  RegPlusOffset out;
  if (op >= kOpBreg0 && op < kOpBreg0 + 32) {
    out.reg = static_cast<uint16_t>(op - kOpBreg0);
  } else if (op == kOpBregx) {
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

bool expect(util::ByteReader& r, uint8_t op) {
  uint8_t b = 0;
  return r.read_u8(b) && b == op;
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
  if (!b || !expect(r, kOpDeref) || !r.at_end()) return std::nullopt;
  return b;
}

std::optional<PltCfa> match_plt_cfa(std::span<const std::byte> expr) {
  constexpr uint16_t kRsp = 7, kRip = 16;
  util::ByteReader r(expr, false);
  auto sp = read_breg(r);
  if (!sp || sp->reg != kRsp) return std::nullopt;
  auto ip = read_breg(r);
  if (!ip || ip->reg != kRip || ip->offset != 0) return std::nullopt;
  if (!expect(r, kOpLit0 + 15) || !expect(r, kOpAnd)) return std::nullopt;
  uint8_t lit = 0;
  if (!r.read_u8(lit) || lit < kOpLit0 || lit > kOpLit0 + 15) return std::nullopt;
  if (!expect(r, kOpGe) || !expect(r, kOpLit0 + 3) || !expect(r, kOpShl) || !expect(r, kOpPlus) ||
      !r.at_end()) {
    return std::nullopt;
  }
  return PltCfa{sp->offset, static_cast<uint8_t>(lit - kOpLit0)};
}

}  // namespace ehbt::sframe
