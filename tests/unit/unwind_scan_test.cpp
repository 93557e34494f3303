// SPDX-License-Identifier: Apache-2.0
// Code no table covers: the call-site decoder, leaf inference, the stack scan and its bounds,
// the frame-pointer stop detail, and JIT code (anonymous executable memory named by a perf
// map). Code bytes come from assembled functions without CFI (tests/support toolchain) or are
// laid byte by byte; stacks are laid word by word in a BufferMemory.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "arch/call_site.hpp"
#include "ehbt/perf_map.hpp"
#include "ehbt/unwinder.hpp"
#include "support/unwind_fixtures.hpp"
#include "unwind/scan_step.hpp"
#include "util/hex.hpp"

namespace ehbt {
namespace {

// outer (CFI: outermost) -> mid (no CFI, no frame pointer, 24 bytes of locals; it called
// `other` before it called leaf, so that call's return address is a stale candidate) ->
// leaf (no CFI, frame 0). jitcall is a frame-pointer function without CFI that calls JIT code.
constexpr const char* kScanAsm = R"(
	.text
	.globl outer, ret_outer, mid, ret_mid, ret_mid_other, leaf, leaf_body, other
	.type outer,@function
outer:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call mid
ret_outer:
	hlt
	.cfi_endproc
	.size outer, .-outer

	.type mid,@function
mid:
	subq $24, %rsp
	call other
ret_mid_other:
	call leaf
ret_mid:
	addq $24, %rsp
	ret
	.size mid, .-mid

	.type leaf,@function
leaf:
	nop
leaf_body:
	nop
	ret
	.size leaf, .-leaf

	.type other,@function
other:
	ret
	.size other, .-other
)";

constexpr uint64_t kBias = 0x555555554000;
constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kS = kStack + 0x800;  // leaf's sp
constexpr uint64_t kJit = 0x20000000;    // anonymous executable memory

class Scan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chain_ = test::build_chain("", kScanAsm, &why_); }
  void SetUp() override {
    if (!chain_) GTEST_FAIL() << why_;
    modules_.add(test::place_image(chain_->image, kBias, "/synthetic/scan"));
    mem_.add(kStack, std::vector<std::byte>(0x1000));
    mem_.add(kJit, std::vector<std::byte>(0x100, std::byte{0x90}));
  }
  uint64_t at(const char* sym) const { return kBias + chain_->built.sym(sym); }
  void put(uint64_t addr, uint64_t v) { ASSERT_TRUE(mem_.write_uint(addr, v, 8, false)); }
  RegisterSet regs_at(uint64_t pc, uint64_t sp, uint64_t rbp = 0) const {
    RegisterSet regs(Arch::X86_64);
    regs.set_pc(pc);
    regs.set(7, sp);
    regs.set(6, rbp);
    return regs;
  }
  // leaf's return address at sp (leaf pushed nothing); in mid's frame a stale return
  // address from its call to `other`, then mid's return address into outer.
  void lay_scan_stack() {
    put(kS, at("ret_mid"));
    put(kS + 8, at("ret_mid_other"));
    put(kS + 16, 0x1234);
    put(kS + 32, at("ret_outer"));
  }

  // Frame 0 runs JIT code at kJit+0x80 with rbp at an older frame's record {0, ret_outer}
  // (kS+0x40); at sp a pushed copy of that rbp, above it `word`. The registers of frame 0.
  RegisterSet lay_jit_frame_under_record(uint64_t word) {
    modules_.add_anonymous_code(kJit, kJit + 0x100);
    put(kS, kS + 0x40);
    put(kS + 0x8, word);
    put(kS + 0x40, 0);
    put(kS + 0x48, at("ret_outer"));
    return regs_at(kJit + 0x80, kS, kS + 0x40);
  }

  static std::optional<test::ChainImage> chain_;
  static std::string why_;
  ModuleSet modules_;
  BufferMemory mem_;
};
std::optional<test::ChainImage> Scan::chain_;
std::string Scan::why_;

TEST_F(Scan, LeafInferenceThenScanPastAStaleReturnAddress) {
  lay_scan_stack();
  Backtrace bt = Unwinder().unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_mid"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::Scan);
  EXPECT_EQ(bt.frames[0].cfa, kS + 8);
  // ret_mid_other follows a call to `other`, not to mid: skipped.
  EXPECT_EQ(bt.frames[2].pc, at("ret_outer"));
  EXPECT_EQ(bt.frames[2].source, FrameSource::Scan);
  EXPECT_EQ(bt.frames[1].cfa, kS + 40);
}

TEST_F(Scan, WordsScannedAreBounded) {
  lay_scan_stack();
  Limits few;
  few.max_scan_words = 3;  // mid's return address is the 4th word above its sp
  Backtrace bt = Unwinder(few).unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  // mid's caller lies beyond the window. The stale ret_mid_other inside it follows a call to
  // `other`, which neither is mid nor jumps to it: not a frame. The walk stops, not outermost.
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_mid"));
  EXPECT_NE(bt.stop, StopReason::Outermost);
  EXPECT_NE(bt.detail.find("the call at " + util::hex(at("ret_mid_other") - 5) + " goes to " +
                           util::hex(at("other")) + ", which does not lead to the function at " +
                           util::hex(at("mid"))),
            std::string::npos)
      << bt.detail;
}

TEST_F(Scan, FramesScannedAreBounded) {
  lay_scan_stack();
  Limits one;
  one.max_scan_frames = 1;
  Backtrace bt = Unwinder(one).unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_EQ(bt.frames.size(), 2u);
  EXPECT_NE(bt.detail.find("stack scanning"), std::string::npos) << bt.detail;
}

TEST_F(Scan, NoScanWithoutFallbacks) {
  lay_scan_stack();
  UnwindOptions tables_only;
  tables_only.frame_pointer_fallback = false;
  Backtrace bt = Unwinder().unwind(regs_at(at("leaf_body"), kS), mem_, modules_, tables_only);
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
}

TEST_F(Scan, ReturnAddressNotAfterACallIsNoCandidate) {
  put(kS, at("leaf_body"));  // code, but no call before it
  put(kS + 8, at("outer"));
  Limits few;
  few.max_scan_words = 8;
  Backtrace bt = Unwinder(few).unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("scan: no return address in 8 stack words"), std::string::npos)
      << bt.detail;
}

TEST_F(Scan, StopsAtAWordItCannotCheck) {
  // A module whose file is missing (no image, no code in the core): a word pointing into it
  // may be the real return address. Scanning past it to the checkable ret_mid would drop
  // that frame silently and make ret_mid leaf's caller.
  constexpr uint64_t kGone = 0x600000000000;
  Module gone;
  gone.path = "/usr/lib/libgone.so";
  gone.start = kGone;
  gone.end = kGone + 0x10000;
  gone.missing = "libgone.so not found (named by the core)";
  modules_.add(std::move(gone));
  put(kS, kGone + 0x1234);
  put(kS + 8, at("ret_mid"));
  Backtrace bt = Unwinder().unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  EXPECT_EQ(bt.frames.size(), 1u) << bt.detail;
  EXPECT_NE(bt.detail.find("scan: cannot check 0x600000001234 on the stack: libgone.so not "
                           "found (named by the core)"),
            std::string::npos)
      << bt.detail;
}

TEST_F(Scan, FramePointerStopDetailSaysWhatFailed) {
  // mid at its return site, rbp -> a frame record whose return address is 0.
  put(kS + 0x100, 0);
  put(kS + 0x108, 0);
  Limits none;
  none.max_scan_words = 0;
  RegisterSet regs = regs_at(at("ret_mid"), kS + 8, kS + 0x100);
  Backtrace bt = Unwinder(none).unwind(regs, mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("frame pointer: the return address in the frame record is 0"),
            std::string::npos)
      << bt.detail;
  EXPECT_EQ(bt.detail.find("frame pointer: ;"), std::string::npos) << bt.detail;
}

TEST_F(Scan, FramePointerResultMustFollowACall) {
  // A frame record whose "return address" is code right after no call: rejected, and the
  // scan finds mid's caller instead.
  put(kS + 0x100, 0);
  put(kS + 0x108, at("leaf_body"));
  put(kS + 32, at("ret_outer"));
  RegisterSet regs = regs_at(at("ret_mid"), kS + 8, kS + 0x100);
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_GE(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_outer"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::Scan);
}

TEST_F(Scan, ScanStopsAtTheEndOfTheStackMapping) {
  // mid's stack ends at kS + 0x20 (another mapping follows, contiguous in memory): outer's
  // return address at kS + 32 lies in that other mapping and is no caller of mid.
  put(kS, at("ret_mid"));
  put(kS + 32, at("ret_outer"));
  mem_.add_region(kStack, kS + 0x20);
  mem_.add_region(kS + 0x20, kStack + 0x1000);
  Backtrace bt = Unwinder().unwind(regs_at(at("leaf_body"), kS), mem_, modules_);
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_mid"));
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_NE(bt.detail.find("scan: no return address between sp " + util::hex(kS + 8) +
                           " and the end of its stack mapping at " + util::hex(kS + 0x20)),
            std::string::npos)
      << bt.detail;
}

TEST_F(Scan, FramePointerCallerOnAnotherMappingIsNoFrame) {
  // mid's rbp points at a frame record {0, ret_outer} in the mapping after mid's stack: a
  // return address that follows a call to mid, but the record is not on mid's stack. The
  // scan finds outer's real return address inside the stack instead.
  put(kS + 0x100, 0);
  put(kS + 0x108, at("ret_outer"));
  put(kS + 32, at("ret_outer"));
  mem_.add_region(kStack, kS + 0x80);
  mem_.add_region(kS + 0x80, kStack + 0x1000);
  RegisterSet regs = regs_at(at("ret_mid"), kS + 8, kS + 0x100);
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_EQ(bt.frames.size(), 2u) << bt.detail;
  EXPECT_EQ(bt.frames[1].pc, at("ret_outer"));
  EXPECT_EQ(bt.frames[1].source, FrameSource::Scan);
  EXPECT_EQ(bt.frames[0].cfa, kS + 40);
}

TEST_F(Scan, JitFrameZeroStepsByFramePointerAndIsNamed) {
  modules_.add_anonymous_code(kJit, kJit + 0x100);
  auto map = std::make_shared<PerfMap>(
      PerfMap::parse("20000000 80 JS:~fx_jit_outer\n20000000 40 JS:~fx_jit_inner x.js:1\n"));
  modules_.set_perf_map(map);
  // JIT frame: rbp -> {0, ret_outer}; outer's CFI then ends the walk.
  put(kS + 0x10, 0);
  put(kS + 0x18, at("ret_outer"));
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x10, kS, kS + 0x10), mem_, modules_);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 2u);
  EXPECT_TRUE(bt.frames[0].jit);
  EXPECT_EQ(bt.frames[0].module, nullptr);
  ASSERT_NE(bt.frames[0].jit_entry, nullptr);
  EXPECT_EQ(bt.frames[0].jit_entry->name, "JS:~fx_jit_inner x.js:1");  // the later line
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_FALSE(bt.frames[1].jit);
}

TEST_F(Scan, JitCallerIsCodeOnlyWhereMemoryIsAnonymousCode) {
  // leaf (frame 0, no CFI) <- JIT code <- outer, linked by frame records. The JIT code
  // called leaf through a register (`call *%rax`, ff d0) right before its return address.
  ASSERT_TRUE(mem_.write_uint(kJit + 0x1e, 0xd0ff, 2, false));
  put(kS, 0);  // no return address at sp: leaf inference does not apply
  put(kS + 0x10, kS + 0x40);
  put(kS + 0x18, kJit + 0x20);
  put(kS + 0x40, 0);
  put(kS + 0x48, at("ret_outer"));
  Limits no_scan;
  no_scan.max_scan_words = 0;
  const RegisterSet regs = regs_at(at("leaf_body"), kS, kS + 0x10);
  Backtrace before = Unwinder(no_scan).unwind(regs, mem_, modules_);
  EXPECT_EQ(before.frames.size(), 1u);
  EXPECT_NE(before.detail.find("is in no module"), std::string::npos) << before.detail;

  modules_.add_anonymous_code(kJit, kJit + 0x100);
  Backtrace bt = Unwinder(no_scan).unwind(regs, mem_, modules_);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u);
  EXPECT_TRUE(bt.frames[1].jit);
  EXPECT_EQ(bt.frames[1].jit_entry, nullptr);  // no perf map
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.frames[2].pc, at("ret_outer"));
}

TEST_F(Scan, JitReturnAddressNeedsNoCallBeforeIt) {
  // leaf <- JIT code <- outer by frame records, as above, but no call precedes the JIT return
  // address: HotSpot's interpreter pushes its return entry itself and jumps to the callee.
  // Into JIT code the frame record is proven by the stack alone.
  put(kS, 0);
  put(kS + 0x10, kS + 0x40);
  put(kS + 0x18, kJit + 0x20);
  put(kS + 0x40, 0);
  put(kS + 0x48, at("ret_outer"));
  Limits no_scan;
  no_scan.max_scan_words = 0;
  modules_.add_anonymous_code(kJit, kJit + 0x100);
  Backtrace bt = Unwinder(no_scan).unwind(regs_at(at("leaf_body"), kS, kS + 0x10), mem_, modules_);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u);
  EXPECT_EQ(bt.frames[1].pc, kJit + 0x20);
  EXPECT_TRUE(bt.frames[1].jit);
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
}

TEST_F(Scan, JitFrameWithoutFramePointerStopsInsteadOfSkippingItsCaller) {
  // Frame 0 runs JIT code at kJit+0x80 (its function starts at kJit+0x70) that pushed the
  // caller's rbp but never set its own (HotSpot C2 without -XX:+PreserveFramePointer): rbp
  // still holds an older frame's record {0, ret_outer}. The JIT caller's return address sits
  // right above the pushed rbp, after a direct call to kJit+0x70 (e8 rel32 at kJit+0x10).
  const uint8_t call[] = {0xe8, 0x5b, 0x00, 0x00, 0x00};  // call kJit+0x70
  for (unsigned i = 0; i < sizeof call; ++i)
    ASSERT_TRUE(mem_.write_uint(kJit + 0x10 + i, call[i], 1, false));
  const RegisterSet regs = lay_jit_frame_under_record(kJit + 0x15);
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("keeps no frame pointer: return address 0x20000015"), std::string::npos)
      << bt.detail;

  // The same word after a call through a register proves nothing (a stale return address of
  // some call of the frame's own) where no pushed copy of rbp lies under it: the record is
  // followed.
  const uint8_t indirect[] = {0x90, 0x90, 0x90, 0xff, 0xd0};  // nop; nop; nop; call *%rax
  for (unsigned i = 0; i < sizeof indirect; ++i)
    ASSERT_TRUE(mem_.write_uint(kJit + 0x10 + i, indirect[i], 1, false));
  put(kS, 0x1234);
  Backtrace followed = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_EQ(followed.stop, StopReason::Outermost) << followed.detail;
  ASSERT_EQ(followed.frames.size(), 2u);
  EXPECT_EQ(followed.frames[1].pc, at("ret_outer"));
}

TEST_F(Scan, JitWordAbovePushedFramePointerStopsTheWalk) {
  // As above, but the word above the pushed rbp follows no call at all: HotSpot's interpreter
  // pushes its own return entry, then jumps to the compiled method, whose prologue pushes rbp
  // (still the interpreted frame's record) under it. Following rbp would skip the interpreted
  // frame: the pair alone stops the walk.
  const RegisterSet regs = lay_jit_frame_under_record(kJit + 0x15);  // nops before it: no call
  Backtrace bt = Unwinder().unwind(regs, mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("return address 0x20000015 at 0x7ffe0808 (in JIT code, right above "
                           "a pushed copy of the frame record's address)"),
            std::string::npos)
      << bt.detail;

  // A word in a file's code is no interpreter entry: without a call before it the pair proves
  // nothing (the scan's rules apply to it) and the record is followed.
  put(kS + 0x8, at("leaf_body"));
  Backtrace file_code = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_EQ(file_code.stop, StopReason::Outermost) << file_code.detail;
  ASSERT_EQ(file_code.frames.size(), 2u);

  // Nor does a word into the frame's own code (its perf-map entry): a call the frame made.
  modules_.set_perf_map(std::make_shared<PerfMap>(PerfMap::parse("20000070 20 Java:own\n")));
  put(kS + 0x8, kJit + 0x75);
  Backtrace own = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_EQ(own.stop, StopReason::Outermost) << own.detail;
  ASSERT_EQ(own.frames.size(), 2u);
  EXPECT_EQ(own.frames[1].pc, at("ret_outer"));

  // Where the pushed copy is not rbp's record (another value under the word), nothing stops.
  put(kS + 0x8, kJit + 0x15);
  put(kS, kS + 0x48);
  Backtrace other = Unwinder().unwind(regs, mem_, modules_);
  ASSERT_EQ(other.stop, StopReason::Outermost) << other.detail;
}

// HotSpot compiled code without a frame pointer: the callee (perf-map entry at kJit) starts
// with C2's prologue, stack bang, push %rbp, sub $0x10,%rsp; its caller (entry at kJit+0x80)
// called it with `call rel32` at kJit+0x90. In the callee's frame the caller's return address
// is 0x18 above sp, the caller's rbp (its record {0, ret_outer}) below it; rbp itself holds
// garbage (C2 uses it as any other register).
class HotSpotFrame : public Scan {
 protected:
  void lay(uint64_t rbp_saved) {
    modules_.add_anonymous_code(kJit, kJit + 0x100);
    modules_.set_perf_map(std::make_shared<PerfMap>(
        PerfMap::parse("20000000 80 Java:callee\n20000080 80 Java:caller\n")));
    write(kJit, {0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x83, 0xec, 0x10});
    write(kJit + 0x90, {0xe8, 0x6b, 0xff, 0xff, 0xff});  // call kJit
    put(kS + 0x10, rbp_saved);
    put(kS + 0x18, kJit + 0x95);
    put(kS + 0x40, 0);
    put(kS + 0x48, at("ret_outer"));
  }
  void write(uint64_t addr, std::vector<uint8_t> code) {
    for (uint8_t b : code) ASSERT_TRUE(mem_.write_uint(addr++, b, 1, false));
  }
};

TEST_F(HotSpotFrame, SizedByItsPrologue) {
  lay(kS + 0x40);
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x20, kS, 0x13), mem_, modules_);
  ASSERT_EQ(bt.stop, StopReason::Outermost) << bt.detail;
  ASSERT_EQ(bt.frames.size(), 3u);
  EXPECT_EQ(bt.frames[1].pc, kJit + 0x95);
  EXPECT_EQ(bt.frames[1].source, FrameSource::FramePointer);
  EXPECT_EQ(bt.frames[1].cfa, kS + 0x50);  // the caller's record at kS+0x40
  EXPECT_EQ(bt.frames[0].cfa, kS + 0x20);
  EXPECT_EQ(bt.frames[2].pc, at("ret_outer"));
}

TEST_F(HotSpotFrame, InTheEpilogueTheWalkStops) {
  // The pc at the `ret` after `add $0x10,%rsp; pop %rbp`: the frame is gone, its size no
  // longer holds, and rbp is no record of the method's (its prologue sets none): a typed stop,
  // neither the frame-pointer chain nor a scan.
  lay(kS + 0x40);
  write(kJit + 0x30, {0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3});
  // Where the size would put the return address (0x18 above the sp after the pop): a word
  // after a call, so that only the epilogue refuses it.
  put(kS + 0x30, kJit + 0x95);
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x35, kS + 0x18, 0x13), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(
      bt.detail.find("the JIT frame at 0x20000035 keeps no frame pointer (HotSpot's "
                     "prologue ending at 0x2000000c makes a frame of 32 bytes), and the code at "
                     "its pc may run with another sp"),
      std::string::npos)
      << bt.detail;
}

TEST_F(HotSpotFrame, WithoutThePerfMapTheWalkStops) {
  lay(kS + 0x40);
  modules_.set_perf_map(nullptr);
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x20, kS, 0x13), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("(no perf-map entry names its code)"), std::string::npos) << bt.detail;
}

TEST_F(HotSpotFrame, AnInterruptedPcNeedsACallBeforeTheReturnAddress) {
  // The word where the return address would be follows no call: refused (an exact pc may be
  // where the code does not show the frame's size).
  lay(kS + 0x40);
  write(kJit + 0x90, {0x90, 0x90, 0x90, 0x90, 0x90});
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x20, kS, 0x13), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("no call precedes the word where that frame keeps its return"),
            std::string::npos)
      << bt.detail;
}

TEST_F(HotSpotFrame, RbpIsNotFollowedWhereTheSizeIsRefused) {
  // rbp holds a good-looking record ({0, ret_outer} at kS+0x40), but the method keeps no frame
  // pointer and its pc is in its prologue (after the push, before the sub): following rbp
  // would skip the JIT caller. The walk stops.
  lay(kS + 0x40);
  Backtrace bt = Unwinder().unwind(regs_at(kJit + 0x8, kS + 0x10, kS + 0x40), mem_, modules_);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo) << bt.detail;
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_NE(bt.detail.find("its pc is in that prologue"), std::string::npos) << bt.detail;
}

TEST(PerfMapParse, LinesMalformedAndOverlapping) {
  PerfMap map = PerfMap::parse(
      "1000 10 first\n"
      "zz 10 bad\n"
      "2000 0 empty\n"
      "0x1008 4 later overlapping\n"
      "3000 20 name with  spaces\r\n"
      "4000\n");
  EXPECT_EQ(map.size(), 3u);
  ASSERT_NE(map.find(0x1000), nullptr);
  EXPECT_EQ(map.find(0x1000)->name, "first");
  EXPECT_EQ(map.find(0x1009)->name, "later overlapping");
  EXPECT_EQ(map.find(0x100c)->name, "first");
  EXPECT_EQ(map.find(0x3010)->name, "name with  spaces");
  EXPECT_EQ(map.find(0x1010), nullptr);
  EXPECT_EQ(map.find(0x2000), nullptr);
  Limits two;
  two.max_perf_map_entries = 2;
  EXPECT_EQ(PerfMap::parse("1 1 a\n2 1 b\n3 1 c\n", two).size(), 2u);
}

// Call instructions laid byte by byte, ending at 0x1010 (the return address).
std::optional<arch::CallSite> call_in(Arch arch, std::vector<uint8_t> code) {
  BufferMemory mem;
  std::vector<std::byte> bytes(0x10 - code.size(), std::byte{0});
  for (uint8_t b : code) bytes.push_back(std::byte{b});
  mem.add(0x1000, std::move(bytes));
  return arch::call_before(arch, mem, 0x1010);
}

TEST(CallSite, X86_64) {
  auto rel = call_in(Arch::X86_64, {0xe8, 0xf0, 0xff, 0xff, 0xff});  // call .-11
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->at, 0x100bu);
  EXPECT_EQ(rel->target, 0x1000u);
  auto reg = call_in(Arch::X86_64, {0xff, 0xd0});  // call *%rax
  ASSERT_TRUE(reg);
  EXPECT_FALSE(reg->target);
  EXPECT_TRUE(call_in(Arch::X86_64, {0x41, 0xff, 0xd3}));                    // call *%r11
  EXPECT_TRUE(call_in(Arch::X86_64, {0xff, 0x15, 0x10, 0x20, 0x00, 0x00}));  // call *x(%rip)
  EXPECT_TRUE(call_in(Arch::X86_64, {0xff, 0x50, 0x08}));                    // call *8(%rax)
  EXPECT_TRUE(call_in(Arch::X86_64, {0xff, 0x54, 0x24, 0x08}));              // call *8(%rsp)
  EXPECT_FALSE(call_in(Arch::X86_64, {0xff, 0xe0}));                         // jmp *%rax
  EXPECT_FALSE(call_in(Arch::X86_64, {0x90, 0x90, 0x90}));
  EXPECT_FALSE(call_in(Arch::X86_64, {0xe9, 0, 0, 0, 0}));  // jmp rel32
}

TEST(CallSite, GotSlotOfARipRelativeCall) {
  // ff 15 disp32 ending at 0x1010: the slot is 0x1010 + disp (rip: the next instruction).
  BufferMemory mem;
  std::vector<std::byte> bytes(0x10, std::byte{0});
  const uint8_t got[] = {0xff, 0x15, 0x10, 0x20, 0x00, 0x00};  // call *0x2010(%rip)
  for (unsigned i = 0; i < sizeof got; ++i) bytes[0x0a + i] = std::byte{got[i]};
  mem.add(0x1000, std::move(bytes));
  auto call = arch::call_before(Arch::X86_64, mem, 0x1010);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->at, 0x100au);
  EXPECT_FALSE(call->target);
  EXPECT_EQ(arch::call_slot(Arch::X86_64, mem, *call), 0x3020u);
  // Backwards too (a negative displacement), and nothing for i386 (an absolute disp32 there)
  // nor for a call through a register.
  ASSERT_TRUE(mem.write_uint(0x100c, 0xfffffff0, 4, false));
  EXPECT_EQ(arch::call_slot(Arch::X86_64, mem, *call), 0x1000u);
  EXPECT_EQ(arch::call_slot(Arch::I386, mem, *call), std::nullopt);
  ASSERT_TRUE(mem.write_uint(0x100e, 0xd0ff, 2, false));
  EXPECT_EQ(arch::call_slot(Arch::X86_64, mem, arch::CallSite{0x100e, std::nullopt}), std::nullopt);
}

// 32-bit code: the same opcodes without REX; a direct call's target wraps at 4 GiB
// (Intel SDM vol. 2, CALL: the instruction pointer is 32 bits wide in 32-bit mode).
TEST(CallSite, I386) {
  auto rel = call_in(Arch::I386, {0xe8, 0xf0, 0xff, 0xff, 0xff});  // call .-11
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->at, 0x100bu);
  EXPECT_EQ(rel->target, 0x1000u);
  auto wrap = call_in(Arch::I386, {0xe8, 0x00, 0xe0, 0xff, 0xff});  // call 0x1010 - 0x2000
  ASSERT_TRUE(wrap);
  EXPECT_EQ(wrap->target, 0xfffff010u);
  EXPECT_TRUE(call_in(Arch::I386, {0xff, 0xd0}));                          // call *%eax
  EXPECT_TRUE(call_in(Arch::I386, {0xff, 0x55, 0x08}));                    // call *8(%ebp)
  EXPECT_TRUE(call_in(Arch::I386, {0xff, 0x15, 0x10, 0xa0, 0x04, 0x08}));  // call *0x804a010
  EXPECT_TRUE(call_in(Arch::I386, {0xff, 0x93, 0x0c, 0x00, 0x00, 0x00}));  // call *0xc(%ebx)
  EXPECT_FALSE(call_in(Arch::I386, {0xff, 0xe0}));                         // jmp *%eax
  EXPECT_FALSE(call_in(Arch::I386, {0xe9, 0, 0, 0, 0}));                   // jmp rel32
}

TEST(CallSite, AArch64AndS390x) {
  auto bl = call_in(Arch::AArch64, {0xfc, 0xff, 0xff, 0x97});  // bl .-16
  ASSERT_TRUE(bl);
  EXPECT_EQ(bl->target, 0x100cu - 16);
  auto blr = call_in(Arch::AArch64, {0x20, 0x02, 0x3f, 0xd6});  // blr x17
  ASSERT_TRUE(blr);
  EXPECT_FALSE(blr->target);
  EXPECT_FALSE(call_in(Arch::AArch64, {0x20, 0x02, 0x1f, 0xd6}));  // br x17
  EXPECT_FALSE(call_in(Arch::AArch64, {0xfc, 0xff, 0xff, 0x17}));  // b .-16

  auto brasl = call_in(Arch::S390x, {0xc0, 0xe5, 0xff, 0xff, 0xff, 0xf8});  // brasl %r14,.-16
  ASSERT_TRUE(brasl);
  EXPECT_EQ(brasl->at, 0x100au);
  EXPECT_EQ(brasl->target, 0x100au - 16);
  EXPECT_TRUE(call_in(Arch::S390x, {0x0d, 0xe1}));   // basr %r14,%r1
  EXPECT_FALSE(call_in(Arch::S390x, {0x07, 0xfe}));  // br %r14
}

}  // namespace
}  // namespace ehbt
