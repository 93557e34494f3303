// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as a DWARF expression (a CFA or register rule's
// DW_CFA_def_cfa_expression / DW_CFA_expression block). A fixed register set points into a
// small BufferMemory "stack" so deref and breg paths reach real memory as well as faults.
// The first byte picks byte order, address size, an initial push and a known CFA.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dwarf/cfi.hpp"

namespace {

constexpr uint64_t kStackBase = 0x7ffd0000;
constexpr size_t kStackBytes = 512;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt;
  using namespace ehbt::dwarf;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::span<const std::byte> expr(reinterpret_cast<const std::byte*>(data + 1), size - 1);

  // The stack holds words that are themselves stack addresses (so deref chains go on) and
  // a few that are not.
  static BufferMemory* stack = [] {
    auto* mem = new BufferMemory;
    std::vector<std::byte> bytes(kStackBytes);
    for (size_t i = 0; i < kStackBytes; i += 8) {
      const uint64_t word = (i % 24 == 0) ? 0xdeadbeef : kStackBase + ((i * 7) % kStackBytes);
      for (size_t b = 0; b < 8; ++b) bytes[i + b] = static_cast<std::byte>(word >> (8 * b));
    }
    mem->add(kStackBase, std::move(bytes));
    return mem;
  }();

  RegisterSet regs(Arch::X86_64);
  for (uint16_t r = 0; r < 17; ++r) regs.set(r, kStackBase + 8 * r);
  regs.set(7, kStackBase + 0x100);  // rsp
  regs.set_pc(0x401234);

  Limits limits;
  limits.max_expr_steps = 1000;
  ExprContext ctx;
  ctx.regs = &regs;
  ctx.mem = stack;
  ctx.fmt.big_endian = (flags & 1) != 0;
  ctx.fmt.address_size = (flags & 2) != 0 ? 4 : 8;
  ctx.limits = &limits;
  if ((flags & 4) != 0) ctx.cfa = kStackBase + 0x180;
  std::optional<uint64_t> push;
  if ((flags & 8) != 0) push = kStackBase + 0x40;
  (void)evaluate_expression(expr, ctx, push);
  return 0;
}
