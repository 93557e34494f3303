// SPDX-License-Identifier: Apache-2.0
// arch::hotspot_prologue and arch::hotspot_sp_moved, byte by byte. Encodings from the Intel SDM:
// MOV r/m32,r32 is 89 /r (ModRM 0x84: mod 2, reg eax, rm SIB; SIB 0x24: base rsp, no index;
// then disp32); PUSH rbp 55, POP rbp 5d; SUB r/m64,imm8 REX.W 83 /5 ib (ModRM 0xec: rsp),
// imm32 REX.W 81 /5 id; ADD the same with /0 (ModRM 0xc4); LEA REX.W 8d /r; MOV REX.W 89 /r and
// 8b /r. The shape is HotSpot's (MacroAssembler::verified_entry, C1's build_frame: stack bang,
// push %rbp, sub).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "arch/jit_prologue.hpp"

namespace ehbt {
namespace {

std::vector<std::byte> bytes(std::initializer_list<uint8_t> b) {
  std::vector<std::byte> out;
  for (uint8_t v : b) out.push_back(std::byte{v});
  return out;
}

std::vector<std::byte> operator+(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// mov %eax,-0x14000(%rsp); push %rbp
const std::vector<std::byte> kBang = bytes({0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55});

TEST(HotSpotPrologue, SubImm8) {
  auto code = kBang + bytes({0x48, 0x83, 0xec, 0x30});  // sub $0x30,%rsp
  auto p = arch::hotspot_prologue(Arch::X86_64, code, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x30u);
  EXPECT_EQ(p->end, 12u);
}

TEST(HotSpotPrologue, SubImm32AtAnOffset) {
  // Two bytes of something else first (the unverified entry's tail): the offset counts.
  auto code = bytes({0x66, 0x90}) + kBang + bytes({0x48, 0x81, 0xec, 0x10, 0x02, 0x00, 0x00});
  auto p = arch::hotspot_prologue(Arch::X86_64, code, 2);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x210u);
  EXPECT_EQ(p->end, 17u);
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, code, 0));
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, code, 1));
}

TEST(HotSpotPrologue, NegativeOrZeroFrameRefused) {
  // sub $-0x10,%rsp (imm8 0xf0, sign-extended) adds; sub $-0x100,%rsp; sub $0,%rsp.
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kBang + bytes({0x48, 0x83, 0xec, 0xf0}), 0));
  EXPECT_FALSE(arch::hotspot_prologue(
      Arch::X86_64, kBang + bytes({0x48, 0x81, 0xec, 0x00, 0xff, 0xff, 0xff}), 0));
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kBang + bytes({0x48, 0x83, 0xec, 0x00}), 0));
}

TEST(HotSpotPrologue, BangAboveSpRefused) {
  // mov %eax,0x14000(%rsp): a positive displacement is no stack bang.
  auto code = bytes({0x89, 0x84, 0x24, 0x00, 0x40, 0x01, 0x00, 0x55, 0x48, 0x83, 0xec, 0x30});
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, code, 0));
}

TEST(HotSpotPrologue, OtherShapesRefused) {
  // -XX:+PreserveFramePointer: mov %rsp,%rbp after the push (48 89 e5).
  EXPECT_FALSE(arch::hotspot_prologue(
      Arch::X86_64, kBang + bytes({0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20}), 0));
  // No push: bang, then sub.
  auto no_push = bytes({0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x48, 0x83, 0xec, 0x30, 0x90});
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, no_push, 0));
  // add instead of sub (ModRM 0xc4), sub of another register (0xed: rbp).
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kBang + bytes({0x48, 0x83, 0xc4, 0x30}), 0));
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kBang + bytes({0x48, 0x83, 0xed, 0x30}), 0));
  // mov %eax,disp8(%rsp) (ModRM 0x44) is no page-sized bang.
  auto disp8 = bytes({0x89, 0x44, 0x24, 0xf0, 0x55, 0x48, 0x83, 0xec, 0x30, 0x90, 0x90, 0x90});
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, disp8, 0));
}

TEST(HotSpotPrologue, TruncatedRefused) {
  auto full8 = kBang + bytes({0x48, 0x83, 0xec, 0x30});
  for (std::size_t n = 0; n < full8.size(); ++n) {
    std::vector<std::byte> cut(full8.begin(), full8.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, cut, 0)) << n;
  }
  auto full32 = kBang + bytes({0x48, 0x81, 0xec, 0x10, 0x02, 0x00, 0x00});
  for (std::size_t n = 0; n < full32.size(); ++n) {
    std::vector<std::byte> cut(full32.begin(), full32.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, cut, 0)) << n;
  }
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, full8, full8.size()));
  EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, full8, full8.size() + 1));
}

TEST(HotSpotPrologue, OtherArchesRefused) {
  auto code = kBang + bytes({0x48, 0x83, 0xec, 0x30});
  for (Arch a : {Arch::I386, Arch::AArch64, Arch::S390x})
    EXPECT_FALSE(arch::hotspot_prologue(a, code, 0)) << static_cast<int>(a);
}

// A method body around a call: 8 nops, call rel32, then what follows at the return address.
std::vector<std::byte> after_call(std::initializer_list<uint8_t> next) {
  return bytes({0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xe8, 0, 0, 0, 0}) + bytes(next);
}
constexpr std::size_t kRa = 13;

TEST(HotSpotSpMoved, BodyCodeAfterACall) {
  // mov %eax,%ebx; nops: rsp is the body's.
  EXPECT_FALSE(
      arch::hotspot_sp_moved(Arch::X86_64, after_call({0x89, 0xc3, 0x90, 0x90}), kRa, 0x30, true));
  // The frame's own epilogue right after the call: add $0x30,%rsp is still in the frame.
  EXPECT_FALSE(arch::hotspot_sp_moved(
      Arch::X86_64, after_call({0x48, 0x83, 0xc4, 0x30, 0x5d, 0xc3, 0x90, 0x90}), kRa, 0x30, true));
  EXPECT_FALSE(arch::hotspot_sp_moved(
      Arch::X86_64, after_call({0x48, 0x81, 0xc4, 0x10, 0x02, 0x00, 0x00, 0x5d, 0xc3, 0x90}), kRa,
      0x210, true));
}

TEST(HotSpotSpMoved, RspPutBackAfterACall) {
  // pop %rax (d2i fixup), pop %r10, add $8,%rsp (a stack aligned for the call), sub,
  // lea 0x8(%rsp),%rsp, mov %r11,%rsp (4c 89 dc), mov %rbx,%rsp as 8b (48 8b e3).
  for (auto next : {bytes({0x58, 0x90, 0x90, 0x90}), bytes({0x41, 0x5a, 0x90, 0x90}),
                    bytes({0x48, 0x83, 0xc4, 0x08}), bytes({0x48, 0x83, 0xec, 0x08}),
                    bytes({0x48, 0x8d, 0x64, 0x24, 0x08}), bytes({0x4c, 0x89, 0xdc, 0x90}),
                    bytes({0x48, 0x8b, 0xe3, 0x90})}) {
    auto code = after_call({}) + next;
    EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, kRa, 0x30, true));
  }
  // add $0x30,%rsp not followed by pop %rbp is no epilogue.
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, after_call({0x48, 0x83, 0xc4, 0x30, 0x90, 0x90}),
                                     kRa, 0x30, true));
  // mov %rsp,%r12 (49 89 e4: rm r12, REX.B) and mov %rsp,%rax (48 8b c4) write no rsp.
  EXPECT_FALSE(
      arch::hotspot_sp_moved(Arch::X86_64, after_call({0x49, 0x89, 0xe4, 0x90}), kRa, 0x30, true));
  EXPECT_FALSE(
      arch::hotspot_sp_moved(Arch::X86_64, after_call({0x48, 0x8b, 0xc4, 0x90}), kRa, 0x30, true));
}

// The epilogue, C2's return poll and ret: add $0x30,%rsp; pop %rbp; cmp 0x108(%r15),%rsp;
// ja rel32; ret.
const std::vector<std::byte> kEpilogue =
    bytes({0x48, 0x83, 0xc4, 0x30, 0x5d, 0x49, 0x3b, 0xa7, 0x08, 0x01, 0x00, 0x00,
           0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3, 0x90, 0x90, 0x90, 0x90});

TEST(HotSpotSpMoved, InsideTheEpilogue) {
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, kEpilogue, 0, 0x30, false));  // at the add
  for (std::size_t pc : {4, 5, 12, 18})  // pop, cmp, ja, ret
    EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, kEpilogue, pc, 0x30, false)) << pc;
  // Another frame size's epilogue bytes do not count.
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, kEpilogue, 12, 0x40, false));
}

TEST(HotSpotSpMoved, EpilogueFarBeforeThePc) {
  // An epilogue ending more than kEpilogueReach bytes before the pc is another return path.
  std::vector<std::byte> code = kEpilogue;
  code.resize(5 + arch::kEpilogueReach + 1 + 4, std::byte{0x90});
  EXPECT_FALSE(
      arch::hotspot_sp_moved(Arch::X86_64, code, 5 + arch::kEpilogueReach + 1, 0x30, false));
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, 5 + arch::kEpilogueReach, 0x30, false));
}

TEST(HotSpotSpMoved, ReturnAddressAfterAnotherReturnPath) {
  // A real C1 method (java_jit_c1's core, JavaJit.main's OSR compile, x/56xb): a return path
  // (add $0x130,%rsp; pop %rbp; return poll; ret), then a call site of the body whose return
  // address (offset 0x30) lies 40 bytes after that epilogue's pop. As a return address it is
  // the body's; as an interrupted pc it is refused (it cannot tell it from the poll's).
  auto code =
      bytes({0x48, 0x81, 0xc4, 0x30, 0x01, 0x00, 0x00, 0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03, 0x00,
             0x00, 0x0f, 0x87, 0x7c, 0x02, 0x00, 0x00, 0xc3, 0x4c, 0x8b, 0x8c, 0x24, 0xf0, 0x00,
             0x00, 0x00, 0x48, 0xc7, 0xc6, 0x00, 0x00, 0x00, 0x00, 0x49, 0x8b, 0xd1, 0x66, 0x66,
             0x90, 0xe8, 0x04, 0xe6, 0xff, 0xff, 0x48, 0x81, 0xc4, 0x30, 0x01, 0x00, 0x00, 0x5d});
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, code, 0x30, 0x130, true));
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, 0x30, 0x130, false));
}

TEST(HotSpotSpMoved, ReturnAddressAfterTheReservedStackCheck) {
  // add $0x30,%rsp; pop %rbp; cmp 0x448(%r15),%rsp; jb +0x10 (0f 82); mov %r15,%rdi;
  // call rel32; jmp rel32: the call into the VM after the frame is gone.
  auto code = bytes({0x48, 0x83, 0xc4, 0x30, 0x5d, 0x49, 0x3b, 0xa7, 0x48, 0x04, 0x00,
                     0x00, 0x0f, 0x82, 0x10, 0x00, 0x00, 0x00, 0x49, 0x8b, 0xff, 0xe8,
                     0x00, 0x00, 0x00, 0x00, 0xe9, 0x00, 0x00, 0x00, 0x00});
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, 26, 0x30, true));
  // jb rel8 (72) alike; ja (77: the return poll) is no such check.
  code[12] = std::byte{0x72};
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, 26, 0x30, true));
  code[12] = std::byte{0x77};
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, code, 26, 0x30, true));
}

TEST(HotSpotSpMoved, UnknownRefused) {
  auto code = after_call({0x89, 0xc3, 0x90, 0x90});
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, code, code.size(), 0x30, false));  // no bytes
  EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, after_call({0x89}), kRa, 0x30, false));  // cut
  for (Arch a : {Arch::I386, Arch::AArch64, Arch::S390x})
    EXPECT_TRUE(arch::hotspot_sp_moved(a, code, kRa, 0x30, false)) << static_cast<int>(a);
}

// The first 54 bytes of a real C2 method (java_jit's core, JavaJit.fx_java_level2 without
// -XX:+PreserveFramePointer, read with GDB's x/54xb at its perf-map entry): the prologue,
// the body's call of fx_java_level3 (return address at 0x1c), the epilogue, the return poll
// (cmp 0x340(%r15),%rsp; ja) and ret.
const std::vector<std::byte> kLevel2 =
    bytes({0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x83, 0xec, 0x10, 0x4c, 0x8b,
           0xd2, 0x48, 0xd1, 0xe2, 0x49, 0x03, 0xd2, 0x66, 0x90, 0xe8, 0xe4, 0x02, 0x00, 0x00,
           0x48, 0x83, 0xc0, 0x02, 0x48, 0x83, 0xc4, 0x10, 0x5d, 0x49, 0x3b, 0xa7, 0x40, 0x03,
           0x00, 0x00, 0x0f, 0x87, 0x0e, 0x00, 0x00, 0x00, 0xc3, 0x48, 0x8b, 0xf0});

TEST(HotSpotPrologue, Unbanged) {
  // sub $0x18,%rsp (imm32 form); mov %rbp,0x10(%rsp): S = 0x10.
  auto code = bytes({0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x10});
  auto p = arch::hotspot_prologue(Arch::X86_64, code, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x10u);
  EXPECT_EQ(p->end, 12u);
  // imm8 form; mov %rbp,(%rsp) (F = 8, S = 0).
  p = arch::hotspot_prologue(Arch::X86_64, bytes({0x48, 0x83, 0xec, 0x08, 0x48, 0x89, 0x2c, 0x24}),
                             0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0u);
  EXPECT_EQ(p->end, 8u);
  // disp32: sub $0x208,%rsp; mov %rbp,0x200(%rsp).
  p = arch::hotspot_prologue(Arch::X86_64,
                             bytes({0x48, 0x81, 0xec, 0x08, 0x02, 0x00, 0x00, 0x48, 0x89, 0xac,
                                    0x24, 0x00, 0x02, 0x00, 0x00}),
                             0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x200u);
  EXPECT_EQ(p->end, 15u);
}

TEST(HotSpotPrologue, WhetherItKeepsAFramePointer) {
  // The banged prologue never does (with -XX:+PreserveFramePointer it is not recognised).
  auto banged = arch::hotspot_prologue(Arch::X86_64, kBang + bytes({0x48, 0x83, 0xec, 0x30}), 0);
  ASSERT_TRUE(banged);
  EXPECT_FALSE(banged->keeps_frame_pointer);
  // The unbanged one does when `mov %rsp,%rbp` follows the store (8b /r: ModRM 0xec; 89 /r:
  // 0xe5), not when anything else (mov %rsp,%rbx: 48 8b dc) or nothing readable does.
  auto unbanged = bytes({0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24, 0x10});
  for (auto [next, keeps] :
       {std::pair{bytes({0x48, 0x8b, 0xec}), true}, std::pair{bytes({0x48, 0x89, 0xe5}), true},
        std::pair{bytes({0x48, 0x8b, 0xdc}), false}, std::pair{bytes({0x48, 0x8b}), false}}) {
    auto p = arch::hotspot_prologue(Arch::X86_64, unbanged + next, 0);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->keeps_frame_pointer, keeps);
  }
}

TEST(HotSpotPrologue, UnbangedMismatchRefused) {
  // rbp stored elsewhere than F-8, another register stored (rbx: ModRM 0x5c), a negative
  // disp8, a frame under 8 bytes, no store at all, the store cut short.
  for (auto code : {bytes({0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24, 0x08}),
                    bytes({0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x5c, 0x24, 0x10}),
                    bytes({0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24, 0xf0}),
                    bytes({0x48, 0x83, 0xec, 0x00, 0x48, 0x89, 0x2c, 0x24}),
                    bytes({0x48, 0x83, 0xec, 0x18, 0x90, 0x90, 0x90, 0x90, 0x90}),
                    bytes({0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0x6c, 0x24})}) {
    EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, code, 0));
  }
}

// A real C2 OSR nmethod's first bytes (a live JVM, Spin.fx_spin3's OSR compile, read with
// GDB's x/32xb): call os::breakpoint at the unused verified entry, padding, then the OSR
// entry at 0x10: sub $0x18,%rsp; mov %rbp,0x10(%rsp). Its leaf compile starts the same way at
// offset 0.
const std::vector<std::byte> kOsr = bytes(
    {0xe8, 0x1b, 0xf0, 0x0d, 0x17, 0x66, 0x66, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00,
     0x00, 0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x10, 0x8b, 0x2e});

TEST(HotSpotPrologue, RealOsrEntry) {
  for (std::size_t off = 0; off < 0x10; ++off)
    EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kOsr, off)) << off;
  auto p = arch::hotspot_prologue(Arch::X86_64, kOsr, 0x10);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x10u);
  EXPECT_EQ(p->end, 0x1cu);
}

TEST(HotSpotPrologue, RealC2Method) {
  auto p = arch::hotspot_prologue(Arch::X86_64, kLevel2, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_bytes, 0x10u);
  EXPECT_EQ(p->end, 12u);
  for (std::size_t off = 1; off < kLevel2.size(); ++off)
    EXPECT_FALSE(arch::hotspot_prologue(Arch::X86_64, kLevel2, off)) << off;
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, kLevel2, 0x1c, 0x10, true));   // return address
  EXPECT_FALSE(arch::hotspot_sp_moved(Arch::X86_64, kLevel2, 0x20, 0x10, false));  // the add
  for (std::size_t pc : {0x24, 0x25, 0x2c, 0x32})  // pop, cmp, ja, ret
    EXPECT_TRUE(arch::hotspot_sp_moved(Arch::X86_64, kLevel2, pc, 0x10, false)) << pc;
}

}  // namespace
}  // namespace ehbt
