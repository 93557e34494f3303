// SPDX-License-Identifier: Apache-2.0
// The bounded DWARF expression VM: every operation it implements, the ones it refuses, and
// every cap. Expected values follow DWARF 5 section 2.5 (generic type = address size; div,
// shra and the comparisons are signed; mod is unsigned).
#include <gtest/gtest.h>

#include <vector>

#include "dwarf/cfi.hpp"
#include "support/cfi_builder.hpp"

namespace ehbt::dwarf {
namespace {

using test::bytes_of;
using test::ExprOps;

class Expr : public ::testing::Test {
 protected:
  void SetUp() override {
    regs.set(7, 0x7fff0000);
    regs.set(6, 0x7fff0100);
    regs.set(16, 0x401234);
    regs.set(33, 0x1000);
    std::vector<std::byte> cells = bytes_of({0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11});
    mem.add(0x5000, cells);
    ctx.regs = &regs;
    ctx.mem = &mem;
    ctx.limits = &limits;
  }

  Expected<uint64_t, Error> run(const std::vector<std::byte>& e,
                                std::optional<uint64_t> push = {}) {
    return evaluate_expression(e, ctx, push);
  }
  uint64_t value(const std::vector<std::byte>& e, std::optional<uint64_t> push = {}) {
    auto v = run(e, push);
    EXPECT_TRUE(v) << (v ? "" : to_string(v.error().code));
    return v ? *v : 0xbad;
  }
  ErrorCode error(const std::vector<std::byte>& e, uint64_t* where = nullptr) {
    auto v = run(e);
    EXPECT_FALSE(v);
    if (v) return ErrorCode::Truncated;
    if (where != nullptr) *where = v.error().where;
    return v.error().code;
  }

  RegisterSet regs;
  BufferMemory mem;
  Limits limits;
  ExprContext ctx;
};

// Opcode numbers from DWARF 5 table 7.9.
enum : uint8_t {
  kDeref = 0x06,
  kDup = 0x12,
  kDrop = 0x13,
  kOver = 0x14,
  kSwap = 0x16,
  kRot = 0x17,
  kXderef = 0x18,
  kAbs = 0x19,
  kAnd = 0x1a,
  kDiv = 0x1b,
  kMinus = 0x1c,
  kMod = 0x1d,
  kMul = 0x1e,
  kNeg = 0x1f,
  kNot = 0x20,
  kOr = 0x21,
  kPlus = 0x22,
  kShl = 0x24,
  kShr = 0x25,
  kShra = 0x26,
  kXor = 0x27,
  kEq = 0x29,
  kGe = 0x2a,
  kGt = 0x2b,
  kLe = 0x2c,
  kLt = 0x2d,
  kNe = 0x2e,
  kNop = 0x96,
  kCallFrameCfa = 0x9c,
};

TEST_F(Expr, Constants) {
  EXPECT_EQ(value(ExprOps().lit(0)), 0u);
  EXPECT_EQ(value(ExprOps().lit(31)), 31u);
  EXPECT_EQ(value(ExprOps().addr(8, 0x1122334455667788)), 0x1122334455667788u);
  EXPECT_EQ(value(ExprOps().const_u(1, 0xff)), 0xffu);
  EXPECT_EQ(value(ExprOps().const_s(1, -1)), UINT64_MAX);
  EXPECT_EQ(value(ExprOps().const_u(2, 0xfffe)), 0xfffeu);
  EXPECT_EQ(value(ExprOps().const_s(2, -2)), static_cast<uint64_t>(-2));
  EXPECT_EQ(value(ExprOps().const_u(4, 0xfffffffe)), 0xfffffffeu);
  EXPECT_EQ(value(ExprOps().const_s(4, -2)), static_cast<uint64_t>(-2));
  EXPECT_EQ(value(ExprOps().const_u(8, 0x8000000000000001)), 0x8000000000000001u);
  EXPECT_EQ(value(ExprOps().const_s(8, -3)), static_cast<uint64_t>(-3));
  EXPECT_EQ(value(ExprOps().constu(624485)), 624485u);
  EXPECT_EQ(value(ExprOps().consts(-129)), static_cast<uint64_t>(-129));
  // Hand-encoded: DW_OP_const2u 0x1234 little-endian.
  EXPECT_EQ(value(bytes_of({0x0a, 0x34, 0x12})), 0x1234u);
}

TEST_F(Expr, StackOperations) {
  EXPECT_EQ(value(ExprOps().lit(4).op(kDup).op(kPlus)), 8u);
  EXPECT_EQ(value(ExprOps().lit(4).lit(5).op(kDrop)), 4u);
  EXPECT_EQ(value(ExprOps().lit(4).lit(5).op(kOver)), 4u);
  EXPECT_EQ(value(ExprOps().lit(4).lit(5).op(kOver).op(kDrop)), 5u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3).pick(2)), 1u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3).pick(0)), 3u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).op(kSwap)), 1u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).op(kSwap).op(kDrop)), 2u);
  // rot: [1 2 3] -> [3 1 2].
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3).op(kRot)), 2u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3).op(kRot).op(kDrop)), 1u);
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3).op(kRot).op(kDrop).op(kDrop)), 3u);
  EXPECT_EQ(value(ExprOps().lit(9).op(kNop)), 9u);
}

TEST_F(Expr, Arithmetic) {
  EXPECT_EQ(value(ExprOps().consts(-5).op(kAbs)), 5u);
  EXPECT_EQ(value(ExprOps().lit(5).op(kAbs)), 5u);
  EXPECT_EQ(value(ExprOps().const_u(1, 0xcc).const_u(1, 0xaa).op(kAnd)), 0x88u);
  EXPECT_EQ(value(ExprOps().const_u(1, 0xcc).const_u(1, 0xaa).op(kOr)), 0xeeu);
  EXPECT_EQ(value(ExprOps().const_u(1, 0xcc).const_u(1, 0xaa).op(kXor)), 0x66u);
  EXPECT_EQ(value(ExprOps().consts(-7).lit(2).op(kDiv)), static_cast<uint64_t>(-3));
  EXPECT_EQ(value(ExprOps().lit(10).lit(3).op(kMinus)), 7u);
  EXPECT_EQ(value(ExprOps().lit(3).lit(10).op(kMinus)), static_cast<uint64_t>(-7));
  EXPECT_EQ(value(ExprOps().lit(7).lit(3).op(kMod)), 1u);
  // Unsigned: (2^64 - 1) mod 10 = 5.
  EXPECT_EQ(value(ExprOps().consts(-1).lit(10).op(kMod)), 5u);
  EXPECT_EQ(value(ExprOps().lit(6).lit(7).op(kMul)), 42u);
  EXPECT_EQ(value(ExprOps().lit(6).op(kNeg)), static_cast<uint64_t>(-6));
  EXPECT_EQ(value(ExprOps().lit(0).op(kNot)), UINT64_MAX);
  EXPECT_EQ(value(ExprOps().lit(6).lit(7).op(kPlus)), 13u);
  EXPECT_EQ(value(ExprOps().lit(6).plus_uconst(300)), 306u);
  EXPECT_EQ(value(ExprOps().lit(3).lit(4).op(kShl)), 48u);
  EXPECT_EQ(value(ExprOps().consts(-1).const_u(1, 60).op(kShr)), 0xfu);
  EXPECT_EQ(value(ExprOps().consts(-16).lit(2).op(kShra)), static_cast<uint64_t>(-4));
  EXPECT_EQ(value(ExprOps().lit(16).lit(2).op(kShra)), 4u);
  // Shifts by the word size or more.
  EXPECT_EQ(value(ExprOps().lit(1).const_u(1, 64).op(kShl)), 0u);
  EXPECT_EQ(value(ExprOps().consts(-1).const_u(1, 200).op(kShr)), 0u);
  EXPECT_EQ(value(ExprOps().consts(-8).const_u(1, 64).op(kShra)), UINT64_MAX);
  // INT64_MIN / -1 wraps to INT64_MIN.
  EXPECT_EQ(value(ExprOps().const_u(8, 0x8000000000000000).const_s(1, -1).op(kDiv)),
            0x8000000000000000u);
}

TEST_F(Expr, SignedComparisons) {
  // 1 vs -1: signed, so 1 > -1.
  auto cmp = [&](uint8_t op) { return value(ExprOps().lit(1).consts(-1).op(op)); };
  EXPECT_EQ(cmp(kGt), 1u);
  EXPECT_EQ(cmp(kGe), 1u);
  EXPECT_EQ(cmp(kLt), 0u);
  EXPECT_EQ(cmp(kLe), 0u);
  EXPECT_EQ(cmp(kEq), 0u);
  EXPECT_EQ(cmp(kNe), 1u);
  EXPECT_EQ(value(ExprOps().lit(5).lit(5).op(kEq)), 1u);
  EXPECT_EQ(value(ExprOps().lit(5).lit(5).op(kLe)), 1u);
  EXPECT_EQ(value(ExprOps().lit(5).lit(5).op(kGe)), 1u);
  EXPECT_EQ(value(ExprOps().lit(5).lit(5).op(kLt)), 0u);
}

TEST_F(Expr, BranchesAndSkips) {
  // lit9; lit1/lit0; bra +1 (over lit5); lit7; plus.
  EXPECT_EQ(value(ExprOps().lit(9).lit(1).bra(1).lit(5).lit(7).op(kPlus)), 16u);  // taken
  EXPECT_EQ(value(ExprOps().lit(9).lit(0).bra(1).lit(5).lit(7).op(kPlus)), 12u);  // not taken
  EXPECT_EQ(value(ExprOps().lit(1).skip(1).lit(2).lit(3).op(kPlus)), 4u);
  // Backwards: count 3 down to 0, adding 10 each time.
  //  0: lit0          acc
  //  1: lit3          n
  //  2: swap          [n acc]
  //  3: plus_uconst 10
  //  5: swap          [acc n]
  //  6: lit1, 7: minus  n-1
  //  8: dup, 9: bra -10 -> back to 2 while n != 0 (target 12 - 10 = 2)
  // 12: drop        -> acc
  EXPECT_EQ(value(ExprOps()
                      .lit(0)
                      .lit(3)
                      .op(kSwap)
                      .plus_uconst(10)
                      .op(kSwap)
                      .lit(1)
                      .op(kMinus)
                      .op(kDup)
                      .bra(-10)
                      .op(kDrop)),
            30u);
  // A branch to exactly the end finishes the expression.
  EXPECT_EQ(value(ExprOps().lit(3).lit(1).bra(0)), 3u);
  EXPECT_EQ(value(ExprOps().lit(3).skip(0)), 3u);
}

TEST_F(Expr, BranchOutsideTheExpression) {
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).bra(100), &where), ErrorCode::BadOpcode);
  EXPECT_EQ(where, 1u);
  EXPECT_EQ(error(ExprOps().lit(1).skip(-10), &where), ErrorCode::BadOpcode);
  EXPECT_EQ(error(ExprOps().lit(1).lit(1).bra(2)), ErrorCode::BadOpcode);  // one past the end
  EXPECT_EQ(error(bytes_of({0x31, 0x28, 0x01})), ErrorCode::Truncated);    // operand cut short
}

TEST_F(Expr, BraLoopEndsAtTheStepLimit) {
  // lit1; bra -4 -> back to lit1, forever.
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).bra(-4), &where), ErrorCode::LimitExprSteps);
  EXPECT_LE(where, 1u);
}

TEST_F(Expr, Registers) {
  EXPECT_EQ(value(ExprOps().reg(7)), 0x7fff0000u);
  EXPECT_EQ(value(ExprOps().breg(7, 8)), 0x7fff0008u);
  EXPECT_EQ(value(ExprOps().breg(6, -16)), 0x7fff00f0u);
  EXPECT_EQ(value(ExprOps().regx(16)), 0x401234u);
  EXPECT_EQ(value(ExprOps().bregx(33, -8)), 0xff8u);
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().breg(3, 0), &where), ErrorCode::BadRegister);
  EXPECT_EQ(where, 3u);
  EXPECT_EQ(error(ExprOps().bregx(500, 0), &where), ErrorCode::BadRegister);
  EXPECT_EQ(where, 500u);
  EXPECT_EQ(error(ExprOps().reg(31), &where), ErrorCode::BadRegister);
  EXPECT_EQ(where, 31u);
  ctx.regs = nullptr;
  EXPECT_EQ(error(ExprOps().breg(7, 0)), ErrorCode::BadRegister);
}

TEST_F(Expr, Dereferences) {
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5000).op(kDeref)), 0x1122334455667788u);
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5000).deref_size(1)), 0x88u);
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5000).deref_size(2)), 0x7788u);
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5004).deref_size(4)), 0x11223344u);
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5000).deref_size(8)), 0x1122334455667788u);
  ctx.fmt.big_endian = true;
  EXPECT_EQ(value(ExprOps(true).const_u(2, 0x5000).deref_size(2)), 0x8877u);
  ctx.fmt.big_endian = false;

  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().const_u(2, 0x5001).op(kDeref), &where), ErrorCode::MemoryFault);
  EXPECT_EQ(where, 0x5001u);  // the 8 bytes run one past the buffer
  EXPECT_EQ(error(ExprOps().const_u(2, 0x6000).deref_size(1), &where), ErrorCode::MemoryFault);
  EXPECT_EQ(where, 0x6000u);
  EXPECT_EQ(error(ExprOps().const_u(2, 0x5000).deref_size(0)), ErrorCode::BadOpcode);
  EXPECT_EQ(error(ExprOps().const_u(2, 0x5000).deref_size(9)), ErrorCode::BadOpcode);
  EXPECT_EQ(error(ExprOps().op(kDeref)), ErrorCode::StackUnderflow);
  ctx.mem = nullptr;
  EXPECT_EQ(error(ExprOps().const_u(2, 0x5000).op(kDeref)), ErrorCode::MemoryFault);
}

TEST_F(Expr, InitialPushAndCallFrameCfa) {
  // DW_CFA_expression rules: the CFA is pushed first.
  EXPECT_EQ(value(ExprOps().lit(16).op(kPlus), 0x7fff1000), 0x7fff1010u);
  EXPECT_EQ(value(ExprOps(), 0x1234), 0x1234u);
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).op(kCallFrameCfa), &where), ErrorCode::Unsupported);
  EXPECT_EQ(where, 1u);
  ctx.cfa = 0x7fff2000;
  EXPECT_EQ(value(ExprOps().op(kCallFrameCfa).lit(8).op(kMinus)), 0x7fff1ff8u);
}

TEST_F(Expr, UnsupportedOperations) {
  // xderef, xderef_size, fbreg, piece, bit_piece, stack_value, implicit_value,
  // push_object_address, call2, call4, call_ref, form_tls_address, implicit_pointer, addrx,
  // constx, entry_value, const_type, regval_type, deref_type, xderef_type, convert,
  // reinterpret, GNU_push_tls_address, GNU_entry_value, GNU_parameter_ref.
  for (int op : {0x18, 0x95, 0x91, 0x93, 0x9d, 0x9f, 0x9e, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0xa0,
                 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xe0, 0xf3, 0xfa}) {
    uint64_t where = 0;
    EXPECT_EQ(error(ExprOps().lit(1).lit(2).raw({op, 0, 0, 0}), &where), ErrorCode::Unsupported)
        << op;
    EXPECT_EQ(where, 2u) << op;
  }
  EXPECT_EQ(error(ExprOps().lit(1).op(kXderef)), ErrorCode::Unsupported);
}

TEST_F(Expr, UnknownOpcodes) {
  for (int op : {0x00, 0x01, 0x02, 0x04, 0x05, 0x07, 0xaa, 0xdf, 0xe1, 0xff}) {
    uint64_t where = 0;
    EXPECT_EQ(error(ExprOps().lit(1).raw({op}), &where), ErrorCode::BadOpcode) << op;
    EXPECT_EQ(where, 1u) << op;
  }
}

TEST_F(Expr, Underflows) {
  EXPECT_EQ(error(ExprOps()), ErrorCode::StackUnderflow);  // nothing to return
  EXPECT_EQ(error(ExprOps().lit(1).op(kPlus)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().op(kDrop)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().op(kDup)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().lit(1).op(kOver)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().lit(1).op(kSwap)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().lit(1).lit(2).op(kRot)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().lit(1).pick(1)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().op(kNeg)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().plus_uconst(1)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().bra(0)), ErrorCode::StackUnderflow);
  EXPECT_EQ(error(ExprOps().lit(1).lit(2).op(kDrop).op(kDrop).lit(3).op(kMul)),
            ErrorCode::StackUnderflow);
}

TEST_F(Expr, DivisionByZero) {
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).lit(0).op(kDiv), &where), ErrorCode::DivideByZero);
  EXPECT_EQ(where, 2u);
  EXPECT_EQ(error(ExprOps().lit(1).lit(0).op(kMod)), ErrorCode::DivideByZero);
}

TEST_F(Expr, TruncatedOperands) {
  EXPECT_EQ(error(bytes_of({0x0c, 0x01, 0x02})), ErrorCode::Truncated);  // const4u, 2 bytes
  EXPECT_EQ(error(bytes_of({0x03, 0x01})), ErrorCode::Truncated);        // addr
  EXPECT_EQ(error(bytes_of({0x10, 0x80})), ErrorCode::Truncated);        // constu
  EXPECT_EQ(error(bytes_of({0x15})), ErrorCode::Truncated);              // pick
  EXPECT_EQ(error(bytes_of({0x31, 0x94})), ErrorCode::Truncated);        // deref_size
  EXPECT_EQ(
      error(bytes_of({0x11, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})),
      ErrorCode::BadLeb128);  // consts, 11 bytes
}

TEST_F(Expr, ThirtyTwoBitGenericType) {
  ctx.fmt.address_size = 4;
  // Arithmetic wraps at 32 bits; signed operations see bit 31 as the sign.
  EXPECT_EQ(value(ExprOps().const_u(4, 0xffffffff).lit(1).op(kPlus)), 0u);
  EXPECT_EQ(value(ExprOps().const_u(4, 0x80000000).lit(1).op(kShra)), 0xc0000000u);
  EXPECT_EQ(value(ExprOps().const_u(4, 0xffffffff).lit(0).op(kLt)), 1u);
  EXPECT_EQ(value(ExprOps().lit(0).op(kNot)), 0xffffffffu);
  EXPECT_EQ(value(ExprOps().addr(4, 0x12345678)), 0x12345678u);
  EXPECT_EQ(value(ExprOps().const_u(2, 0x5000).op(kDeref)), 0x55667788u);
  EXPECT_EQ(error(ExprOps().const_u(2, 0x5000).deref_size(8)), ErrorCode::BadOpcode);
}

// ---- caps -------------------------------------------------------------------------------

TEST_F(Expr, LimitExprSteps) {
  limits.max_expr_steps = 4;
  EXPECT_EQ(value(ExprOps().lit(1).op(kNop).op(kNop).op(kNop)), 1u);
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).op(kNop).op(kNop).op(kNop).op(kNop), &where),
            ErrorCode::LimitExprSteps);
  EXPECT_EQ(where, 4u);
}

TEST_F(Expr, LimitExprStack) {
  limits.max_expr_stack = 3;
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).lit(3)), 3u);
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).lit(2).lit(3).lit(4), &where), ErrorCode::LimitExprStack);
  EXPECT_EQ(where, 3u);
  // The initial push counts.
  auto v = run(ExprOps().lit(1).lit(2).lit(3), 0x1000);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, ErrorCode::LimitExprStack);
  // Default limit: 64 entries.
  limits = Limits{};
  ExprOps many;
  for (int i = 0; i < 64; ++i) many.lit(1);
  EXPECT_EQ(value(many), 1u);
  many.lit(1);
  EXPECT_EQ(error(many), ErrorCode::LimitExprStack);
}

TEST_F(Expr, LimitExprBytes) {
  limits.max_expr_bytes = 3;
  EXPECT_EQ(value(ExprOps().lit(1).lit(2).op(kPlus)), 3u);
  uint64_t where = 0;
  EXPECT_EQ(error(ExprOps().lit(1).lit(2).op(kPlus).op(kNop), &where), ErrorCode::LimitExprBytes);
  EXPECT_EQ(where, 4u);
}

TEST_F(Expr, NullLimitsUseDefaults) {
  ctx.limits = nullptr;
  EXPECT_EQ(error(ExprOps().lit(1).bra(-4)), ErrorCode::LimitExprSteps);
}

}  // namespace
}  // namespace ehbt::dwarf
