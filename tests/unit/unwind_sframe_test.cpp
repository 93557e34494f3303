// SPDX-License-Identifier: Apache-2.0
// The unwinder's use of SFrame: synthetic stacks (laid out by hand the way the prologues
// would leave them) walked through
//   - a native .sframe section, hand-encoded below byte by byte from the SFrame V2
//     specification (docs-2.45: PC-relative function starts, the zero-data-word FRE of the
//     outermost frame) and assembled into the object, and corrupt variants of it;
//   - tables converted in memory from the objects' .eh_frame (--sframe-from-eh-frame), V2
//     and V3, on all three architectures, including GCC's DRAP pattern (V3 only).
// Expected pcs come from `nm`; CFAs and registers follow from the prologues alone.
#include <gtest/gtest.h>
#include <ucontext.h>

#include <cstddef>
#include <string>

#include "ehbt/unwinder.hpp"
#include "support/unwind_fixtures.hpp"
#include "unwind/image_cfi_cache.hpp"

namespace ehbt {
namespace {

using test::kBias;
using test::kStack;
using Stack = test::SyntheticStack;

std::string sources(const Backtrace& bt) {
  std::string out;
  for (const Frame& f : bt.frames) out += std::string(to_string(f.source)) + " ";
  return out + "| " + std::string(to_string(bt.stop)) + ": " + bt.detail;
}

UnwindOptions sframe_only(bool converted = false, uint8_t version = 3) {
  UnwindOptions o;
  o.source = SourcePreference::SFrame;
  o.sframe_from_eh_frame = converted;
  o.sframe_version = version;
  return o;
}

UnwindOptions auto_mode(bool converted = false, uint8_t version = 3) {
  UnwindOptions o = sframe_only(converted, version);
  o.source = SourcePreference::Auto;
  return o;
}

// ---------------------------------------------------------------------- the x86-64 object

// The x86-64 chain of tests/support/unwind_fixtures.hpp (entry -> middle -> inner, and nocfi,
// no FDE, -> inner), followed by drap_entry (outermost) -> drap (GCC's DRAP realignment:
// CFA = [rbp - 8]) -> inner, and a sigreturn trampoline. The chain's functions are made
// hidden so that the hand-written .sframe's PC-relative words resolve at link time.
std::string x86_code() {
  return std::string(test::kX86_64ChainAsm) + R"(
	.text
	.hidden entry, middle, inner, nocfi
	.globl drap_entry, ret_drap_entry, drap, ret_drap
	.hidden drap_entry, drap

	.type drap_entry,@function
drap_entry:
	.cfi_startproc
	.cfi_undefined rip
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call drap
ret_drap_entry:
	hlt
	.cfi_endproc
	.size drap_entry, .-drap_entry

	.type drap,@function
drap:
	.cfi_startproc
	leaq 8(%rsp), %r10
	.cfi_def_cfa r10, 0
	andq $-16, %rsp
	pushq -8(%r10)
	pushq %rbp
	movq %rsp, %rbp
	.cfi_escape 0x10,0x06,0x02,0x76,0x00
	pushq %r10
	.cfi_escape 0x0f,0x03,0x76,0x78,0x06
	call inner
ret_drap:
	movq -8(%rbp), %r10
	.cfi_def_cfa r10, 0
	leave
	leaq -8(%r10), %rsp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size drap, .-drap

	# A sigreturn trampoline (mov $15, %rax; syscall) whose FDE says "signal frame" ('S')
	# with plain rules SFrame V3 can express (glibc's __restore_rt uses expressions).
	.globl tramp
	.type tramp,@function
	nop
tramp:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa rsp, 8
	movq $15, %rax
	syscall
	.cfi_endproc
	.size tramp, .-tramp
)";
}

// Wrong: a well-formed table whose last FRE for inner's body says CFA = rsp + 8, as if the
// frame had been torn down (the kind of row GNU ld writes for .plt.got): it disagrees with
// .eh_frame, which is right.
enum class Sframe { None, Good, BadVersion, BadFre, Wrong };

// A hand-encoded SFrame V2 section (AMD64, little-endian) with two functions: entry (one
// FRE with no data words: the outermost frame) and inner (four FREs); middle, drap
// and nocfi are deliberately not covered. Assembled as .sframe_hand and renamed .sframe
// after the link: the Debian 12 linker only knows SFrame V1 and would refuse to merge it.
std::string sframe_section(Sframe variant) {
  if (variant == Sframe::None) return "";
  const int version = variant == Sframe::BadVersion ? 9 : 2;
  // BadFre: inner's FRE starts 0, 4, 1, 10 (not strictly increasing).
  const int second = variant == Sframe::BadFre ? 4 : 1;
  const int third = variant == Sframe::BadFre ? 1 : 4;
  const int second_info = variant == Sframe::BadFre ? 0x04 : 0x05;
  const int third_info = variant == Sframe::BadFre ? 0x05 : 0x04;
  // Wrong: SP-based, one data word (8) instead of FP-based with two.
  const std::string third_words =
      variant == Sframe::Wrong ? "0x03, 8" : std::to_string(third_info) + ", 16, -16";
  return R"(
	.section .sframe_hand,"a",@progbits
	.p2align 3
.Lsf:
	.short 0xdee2
	.byte )" +
         std::to_string(version) +
         R"(
	.byte 0x05            # flags: FDE_SORTED | FDE_FUNC_START_PCREL
	.byte 3               # ABI: AMD64, little-endian
	.byte 0               # fixed FP offset: none
	.byte -8              # fixed RA offset: CFA - 8
	.byte 0               # auxiliary header length
	.long 2               # FDEs
	.long 5               # FREs
	.long .Lsf_fres_end - .Lsf_fres
	.long 0               # FDE sub-section offset (from the end of the header)
	.long .Lsf_fres - .Lsf_fdes
.Lsf_fdes:
	.long entry - .    # function start, relative to this field
	.long .Lentry_end - entry
	.long .Lsf_fre_entry - .Lsf_fres
	.long 1
	.byte 0x00            # FRE starts: 1 byte; PC increment
	.byte 0
	.short 0
	.long inner - .
	.long .Linner_end - inner
	.long .Lsf_fre_inner - .Lsf_fres
	.long 4
	.byte 0x00
	.byte 0
	.short 0
.Lsf_fres:
.Lsf_fre_entry:
	.byte 0, 0x01         # start 0; SP-based, no data words: the outermost frame
.Lsf_fre_inner:
	.byte 0, 0x03, 8      # start 0: CFA = rsp + 8
	.byte )" +
         std::to_string(second) + ", " + std::to_string(second_info) +
         R"(, 16, -16   # push %rbp: CFA = rsp + 16, rbp at CFA - 16
	.byte )" +
         std::to_string(third) + ", " + third_words +
         R"(   # mov %rsp,%rbp: CFA = rbp + 16, rbp at CFA - 16 (not for Wrong)
	.byte 10, 0x03, 8     # after pop %rbp: CFA = rsp + 8
.Lsf_fres_end:
)";
}

struct X86Object {
  test::BuiltObject built;
  std::shared_ptr<const Image> image;
};

std::optional<X86Object> build_x86(Sframe variant, std::string* why) {
  test::Toolchain tc{""};
  if (!tc.available()) {
    *why = "gcc not installed";
    return std::nullopt;
  }
  auto built = test::build_shared_object(tc, "sframe_chain.s", x86_code() + sframe_section(variant),
                                         "", why);
  if (!built) return std::nullopt;
  std::string path = built->path;
  if (variant != Sframe::None) {
    path += ".sframe.so";
    if (!test::run_capture("objcopy --rename-section .sframe_hand=.sframe " + built->path + " " +
                           path)) {
      *why = "objcopy --rename-section failed";
      return std::nullopt;
    }
  }
  auto image = Image::open(path);
  if (!image) {
    *why = "Image::open: " + image.error();
    return std::nullopt;
  }
  if (variant != Sframe::None && (*image)->sframe().empty()) {
    *why = "the renamed section is not found as .sframe";
    return std::nullopt;
  }
  return X86Object{*built, *image};
}

class X86SFrame : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (Sframe v :
         {Sframe::None, Sframe::Good, Sframe::BadVersion, Sframe::BadFre, Sframe::Wrong}) {
      objects_[static_cast<int>(v)] = build_x86(v, &why_);
      if (!objects_[static_cast<int>(v)]) return;
    }
  }
  void SetUp() override {
    for (const auto& o : objects_) {
      if (!o) GTEST_FAIL() << why_;
    }
  }

  // A fresh module set (and a fresh image cache: a dropped table must not leak between
  // tests) for one variant.
  ModuleSet modules(Sframe v) {
    const X86Object& o = *objects_[static_cast<int>(v)];
    o.image->set_cache(nullptr);
    ModuleSet set;
    set.add(test::place_image(o.image, kBias, "/synthetic/libsframe.so"));
    return set;
  }
  const Image& image(Sframe v) const { return *objects_[static_cast<int>(v)]->image; }
  uint64_t at(const char* sym) const { return kBias + objects_[1]->built.sym(sym); }

  // entry -> middle -> inner, stopped in inner's body; `a` is where inner's return address
  // lies.
  static constexpr uint64_t a = kStack + 0x800;
  void lay_out_chain(Stack& s) const {
    s.put(a - 16, 0x1313);           // inner's saved r13
    s.put(a - 8, 0x6666);            // inner's saved rbp
    s.put(a, at("ret_middle"));      // inner's return address
    s.put(a + 32, 0x1212);           // middle's saved r12 (CFA - 24)
    s.put(a + 40, 0x3333);           // middle's saved rbx (CFA - 16)
    s.put(a + 48, at("ret_entry"));  // middle's return address (CFA - 8)
  }
  RegisterSet chain_regs() const {
    RegisterSet regs(Arch::X86_64);
    regs.set_pc(at("inner_body"));
    regs.set(7, a - 16);  // rsp
    regs.set(6, a - 8);   // rbp
    regs.set(3, 0xb0b0);
    regs.set(12, 0xc0c0);
    regs.set(13, 0xdead);
    return regs;
  }
  // The frames every table must agree on: pcs, CFAs, rsp and rbp. When SFrame stepped the
  // outermost frame (an FRE without data words) its CFA is unknown: 0.
  void expect_chain(const Backtrace& bt, bool sframe_outermost) const {
    EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
    ASSERT_EQ(bt.frames.size(), 3u) << sources(bt);
    EXPECT_EQ(bt.frames[0].cfa, a + 8);
    EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
    EXPECT_EQ(bt.frames[1].cfa, a + 56);
    EXPECT_EQ(bt.frames[1].regs.get(7), a + 8);
    EXPECT_EQ(bt.frames[1].regs.get(6), 0x6666u);
    EXPECT_EQ(bt.frames[2].pc, at("ret_entry"));
    EXPECT_EQ(bt.frames[2].regs.get(7), a + 56);
    EXPECT_EQ(bt.frames[2].regs.get(6), 0x6666u);
    EXPECT_EQ(bt.frames[2].cfa, sframe_outermost ? 0 : a + 72);
  }

  // drap_entry -> drap -> inner. `r` is the drap frame's CFA - 8 (its return address slot),
  // 8 mod 16 so that `and $-16, %rsp` drops 8 bytes.
  static constexpr uint64_t r = kStack + 0x808;
  void lay_out_drap(Stack& s) const {
    s.put(r, at("ret_drap_entry"));       // drap's return address (CFA - 8)
    s.put(r - 16, at("ret_drap_entry"));  // pushq -8(%r10): the copy below the realignment
    s.put(r - 24, 0x7777);                // drap's caller's rbp; drap's rbp = r - 24
    s.put(r - 32, r + 8);                 // pushq %r10: the DRAP register (= the CFA)
    s.put(r - 40, at("ret_drap"));        // inner's return address
    s.put(r - 48, r - 24);                // inner's saved rbp
    s.put(r - 56, 0x1313);                // inner's saved r13
  }
  RegisterSet drap_regs() const {
    RegisterSet regs(Arch::X86_64);
    regs.set_pc(at("inner_body"));
    regs.set(7, r - 56);
    regs.set(6, r - 48);
    return regs;
  }
  void expect_drap(const Backtrace& bt, bool sframe_outermost) const {
    EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
    ASSERT_EQ(bt.frames.size(), 3u) << sources(bt);
    EXPECT_EQ(bt.frames[0].cfa, r - 32);
    EXPECT_EQ(bt.frames[1].pc, at("ret_drap"));
    EXPECT_EQ(bt.frames[1].regs.get(7), r - 32);
    EXPECT_EQ(bt.frames[1].regs.get(6), r - 24);
    EXPECT_EQ(bt.frames[1].cfa, r + 8);  // [rbp - 8], the saved DRAP register
    EXPECT_EQ(bt.frames[2].pc, at("ret_drap_entry"));
    EXPECT_EQ(bt.frames[2].regs.get(7), r + 8);
    EXPECT_EQ(bt.frames[2].regs.get(6), 0x7777u);  // [rbp], by the FP rule
    EXPECT_EQ(bt.frames[2].cfa, sframe_outermost ? 0 : r + 24);
  }

  static inline std::optional<X86Object> objects_[5];
  static inline std::string why_;
};

TEST_F(X86SFrame, HandEncodedTableMatchesTheCode) {
  // The FRE starts above are byte offsets of inner's instructions: push %rbp (1 byte),
  // mov %rsp,%rbp (3), push %r13 (2), then the body.
  EXPECT_EQ(at("inner_body") - at("inner"), 6u);
}

TEST_F(X86SFrame, AutoPrefersCfiWhereBothCover) {
  // entry and inner are in both tables: .eh_frame (the more precise) steps every frame.
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::Good);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, auto_mode());
  expect_chain(bt, false);
  ASSERT_EQ(bt.frames.size(), 3u);
  for (std::size_t i = 1; i < bt.frames.size(); ++i) {
    EXPECT_EQ(bt.frames[i].source, FrameSource::EhFrame) << sources(bt);
  }
  // .eh_frame restored middle's callee-saved registers.
  EXPECT_EQ(bt.frames[2].regs.get(3), 0x3333u);
  EXPECT_EQ(bt.frames[2].regs.get(12), 0x1212u);
  // The SFrame table itself is good: alone it takes the same first step.
  Backtrace only = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  ASSERT_GE(only.frames.size(), 2u) << sources(only);
  EXPECT_EQ(only.frames[1].source, FrameSource::SFrame);
  EXPECT_EQ(only.frames[1].pc, at("ret_middle"));
}

TEST_F(X86SFrame, AutoIgnoresAWrongSFrameRowWhereCfiCovers) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::Wrong);
  // Alone, the wrong row takes inner's saved r13 for the return address.
  Backtrace only = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  ASSERT_GE(only.frames.size(), 1u);
  EXPECT_TRUE(only.frames.size() == 1 || only.frames[1].pc != at("ret_middle")) << sources(only);
  // Auto: .eh_frame first, so the chain is right.
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, auto_mode());
  expect_chain(bt, false);
  ASSERT_EQ(bt.frames.size(), 3u);
  EXPECT_EQ(bt.frames[1].source, FrameSource::EhFrame) << sources(bt);
}

TEST_F(X86SFrame, EhFrameSourceIgnoresSFrame) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::Good);
  UnwindOptions eh;
  eh.source = SourcePreference::EhFrame;
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, eh);
  expect_chain(bt, false);
  for (std::size_t i = 1; i < bt.frames.size(); ++i) {
    EXPECT_EQ(bt.frames[i].source, FrameSource::EhFrame) << i;
  }
}

TEST_F(X86SFrame, SFrameOnlyStopsWhereTheTableEnds) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::Good);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  ASSERT_EQ(bt.frames.size(), 2u) << sources(bt);
  EXPECT_EQ(bt.frames[1].source, FrameSource::SFrame);
  EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
  EXPECT_EQ(bt.frames[1].regs.get(6), 0x6666u);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("no SFrame row for"), std::string::npos) << bt.detail;
  EXPECT_NE(bt.detail.find("middle"), std::string::npos) << bt.detail;
  EXPECT_NE(bt.detail.find("libsframe.so+0x"), std::string::npos) << bt.detail;
  EXPECT_NE(bt.detail.find("no function of its .sframe covers the pc"), std::string::npos)
      << bt.detail;
}

TEST_F(X86SFrame, OutermostFreEndsTheWalk) {
  // Frame 0 in entry itself: its only FRE has no data words.
  Stack s(false);
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("ret_entry"));
  regs.set(7, a);
  ModuleSet set = modules(Sframe::Good);
  Backtrace bt = Unwinder().unwind(regs, s.mem, set, sframe_only());
  EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
  EXPECT_EQ(bt.frames.size(), 1u);
}

TEST_F(X86SFrame, ModuleWithoutSFrame) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::None);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("inner"), std::string::npos) << bt.detail;
  EXPECT_NE(bt.detail.find("the module has no .sframe"), std::string::npos) << bt.detail;
  // Auto: nothing to prefer, .eh_frame as before.
  Backtrace au = Unwinder().unwind(chain_regs(), s.mem, set, auto_mode());
  expect_chain(au, false);
  EXPECT_EQ(au.frames[1].source, FrameSource::EhFrame);
}

TEST_F(X86SFrame, CorruptHeaderIsDroppedAndEhFrameUsed) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::BadVersion);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, auto_mode());
  expect_chain(bt, false);
  for (std::size_t i = 1; i < bt.frames.size(); ++i) {
    EXPECT_EQ(bt.frames[i].source, FrameSource::EhFrame) << i;
  }
  Backtrace only = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  EXPECT_EQ(only.frames.size(), 1u);
  EXPECT_EQ(only.stop, StopReason::BadUnwindInfo);
  // The section's version byte is 9 (sframe_section): named, not a bare error code.
  EXPECT_NE(only.detail.find("its .sframe is not used: SFrame version 9 is not supported (only 2 "
                             "and 3)"),
            std::string::npos)
      << only.detail;
}

TEST_F(X86SFrame, CorruptFreIsDroppedOnLookupAndNeverSearchedAgain) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::BadFre);
  // The header is sound: the table parses, and the corrupt FREs show when inner is looked
  // up (SFrame only: Auto takes .eh_frame first and never needs the table here).
  Backtrace only = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  EXPECT_EQ(only.frames.size(), 1u);
  EXPECT_EQ(only.stop, StopReason::BadUnwindInfo);
  EXPECT_NE(only.detail.find("bad_fre"), std::string::npos) << only.detail;
  unwind::ImageSFrame& sf = unwind::image_cache(image(Sframe::BadFre), Limits{}).sframe();
  auto dropped = sf.drop_error(false, 0);
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->code, sframe::ErrorCode::BadFre);
  // Later lookups (entry's pc is covered by a sound FDE) find no table at all.
  EXPECT_EQ(sf.find_row(at("ret_entry") - kBias, false, 0).status,
            unwind::SFrameLookup::Status::NoTable);
  // Auto walks the chain with .eh_frame.
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, auto_mode());
  expect_chain(bt, false);
  for (std::size_t i = 1; i < bt.frames.size(); ++i) {
    EXPECT_EQ(bt.frames[i].source, FrameSource::EhFrame) << i;
  }
}

TEST_F(X86SFrame, CorruptFreStopsAnSFrameOnlyWalkOnFirstUse) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::BadFre);
  Backtrace only = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only());
  EXPECT_EQ(only.frames.size(), 1u);
  EXPECT_EQ(only.stop, StopReason::BadUnwindInfo);
  EXPECT_NE(only.detail.find("dropped"), std::string::npos) << only.detail;
  EXPECT_NE(only.detail.find("bad_fre"), std::string::npos) << only.detail;
}

// ------------------------------------------------------- x86-64, converted from .eh_frame

TEST_F(X86SFrame, ConvertedTablesWalkTheChain) {
  Stack s(false);
  lay_out_chain(s);
  for (uint8_t version : {2, 3}) {
    SCOPED_TRACE("V" + std::to_string(version));
    ModuleSet set = modules(Sframe::None);
    Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only(true, version));
    expect_chain(bt, true);
    for (std::size_t i = 1; i < bt.frames.size(); ++i) {
      EXPECT_EQ(bt.frames[i].source, FrameSource::SFrame) << i;
    }
  }
}

TEST_F(X86SFrame, ConvertedTableReplacesTheNativeOne) {
  // The native table covers inner but not middle; the converted one covers both.
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::Good);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only(true));
  expect_chain(bt, true);
  EXPECT_EQ(bt.frames[2].source, FrameSource::SFrame);
}

TEST_F(X86SFrame, DrapNeedsV3) {
  Stack s(false);
  lay_out_drap(s);
  {
    ModuleSet set = modules(Sframe::None);
    Backtrace v3 = Unwinder().unwind(drap_regs(), s.mem, set, sframe_only(true, 3));
    expect_drap(v3, true);
    for (std::size_t i = 1; i < v3.frames.size(); ++i) {
      EXPECT_EQ(v3.frames[i].source, FrameSource::SFrame) << i;
    }
  }
  {
    // V2 cannot say "CFA = [rbp - 8]": the converter leaves drap out and says why.
    ModuleSet set = modules(Sframe::None);
    Backtrace v2 = Unwinder().unwind(drap_regs(), s.mem, set, sframe_only(true, 2));
    ASSERT_EQ(v2.frames.size(), 2u) << sources(v2);
    EXPECT_EQ(v2.frames[1].pc, at("ret_drap"));
    EXPECT_EQ(v2.stop, StopReason::NoUnwindInfo);
    EXPECT_NE(v2.detail.find("drap"), std::string::npos) << v2.detail;
    EXPECT_NE(v2.detail.find("not expressible in SFrame V2"), std::string::npos) << v2.detail;
    const auto* left_out =
        unwind::image_cache(image(Sframe::None), Limits{}).sframe().inexpressible(2);
    ASSERT_NE(left_out, nullptr);
    bool drap_listed = false;
    for (const auto& e : *left_out) {
      drap_listed = drap_listed || e.function + kBias == at("drap");
    }
    EXPECT_TRUE(drap_listed);
  }
  {
    // Auto with V2: SFrame for inner, .eh_frame for the DRAP function.
    ModuleSet set = modules(Sframe::None);
    Backtrace au = Unwinder().unwind(drap_regs(), s.mem, set, auto_mode(true, 2));
    expect_drap(au, true);  // drap_entry converts: the outermost FRE
    ASSERT_EQ(au.frames.size(), 3u);
    EXPECT_EQ(au.frames[1].source, FrameSource::SFrame);
    EXPECT_EQ(au.frames[2].source, FrameSource::EhFrame);
  }
}

TEST_F(X86SFrame, SignalFunctionRowChecksForTheTrampoline) {
  // Frame 0 sits on tramp's first byte, rsp at the kernel's ucontext; the interrupted
  // frame is inner's body, on the chain's stack.
  Stack s(false);
  lay_out_chain(s);
  const uint64_t uc = kStack + 0x100;
  auto greg = [&](int idx, uint64_t v) {
    s.put(uc + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * idx, v);
  };
  greg(REG_RIP, at("inner_body"));
  greg(REG_RSP, a - 16);
  greg(REG_RBP, a - 8);
  s.put(uc, 0x5151);  // what a plain "CFA = rsp + 8" row would take as the return address
  // The trampoline's code, where the unwinder reads it (target memory).
  const std::vector<uint8_t> code = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  std::vector<std::byte> bytes;
  for (uint8_t b : code) bytes.push_back(std::byte{b});
  s.mem.add(at("tramp"), bytes);
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("tramp"));
  regs.set(7, uc);

  for (uint8_t version : {2, 3}) {
    // V3 keeps the function with its signal flag: the row's flag makes the unwinder check the
    // bytes. V2 cannot flag it and leaves it out: the bytes alone are recognised.
    SCOPED_TRACE("V" + std::to_string(version));
    ModuleSet set = modules(Sframe::None);
    Backtrace bt = Unwinder().unwind(regs, s.mem, set, sframe_only(true, version));
    EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
    ASSERT_EQ(bt.frames.size(), 4u) << sources(bt);
    EXPECT_TRUE(bt.frames[0].signal_trampoline);
    EXPECT_EQ(bt.frames[1].source, FrameSource::Signal);
    EXPECT_EQ(bt.frames[1].pc, at("inner_body"));
    EXPECT_TRUE(bt.frames[1].exact_pc);
    EXPECT_EQ(bt.frames[2].pc, at("ret_middle"));
    EXPECT_EQ(bt.frames[2].source, FrameSource::SFrame);
    EXPECT_EQ(bt.frames[3].pc, at("ret_entry"));
  }

  // Without readable trampoline bytes, V3's row applies as a signal frame's row: its caller
  // keeps an exact pc (tagged sframe), here the value at CFA - 8.
  Stack plain(false);
  plain.put(uc, at("inner_body"));
  ModuleSet set = modules(Sframe::None);
  Limits two;
  two.max_frames = 2;
  Backtrace bt = Unwinder(two).unwind(regs, plain.mem, set, sframe_only(true, 3));
  ASSERT_EQ(bt.frames.size(), 2u) << sources(bt);
  EXPECT_EQ(bt.frames[1].source, FrameSource::SFrame);
  EXPECT_EQ(bt.frames[1].pc, at("inner_body"));
  EXPECT_TRUE(bt.frames[1].exact_pc);
}

TEST_F(X86SFrame, FunctionWithoutFdeHasNothingToConvert) {
  // inner called from nocfi (no FDE): pushes rbp, so inner's CFA = a + 8 again.
  Stack s(false);
  s.put(a - 8, a + 8);
  s.put(a, at("ret_nocfi"));
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(at("inner_body"));
  regs.set(7, a - 16);
  regs.set(6, a - 8);
  ModuleSet set = modules(Sframe::None);
  Backtrace bt = Unwinder().unwind(regs, s.mem, set, sframe_only(true));
  ASSERT_EQ(bt.frames.size(), 2u) << sources(bt);
  EXPECT_EQ(bt.frames[1].pc, at("ret_nocfi"));
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("nocfi"), std::string::npos) << bt.detail;
  EXPECT_NE(bt.detail.find("no .eh_frame FDE to convert"), std::string::npos) << bt.detail;
}

TEST_F(X86SFrame, PcInNoModule) {
  Stack s(false);
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(0x1000);
  regs.set(7, a);
  ModuleSet set = modules(Sframe::Good);
  Backtrace bt = Unwinder().unwind(regs, s.mem, set, sframe_only(true));
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.stop, StopReason::NoModule) << bt.detail;
  EXPECT_NE(bt.detail.find("no SFrame row for 0x1000"), std::string::npos) << bt.detail;
}

TEST_F(X86SFrame, BadVersionOptionIsNoTable) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::None);
  Backtrace bt = Unwinder().unwind(chain_regs(), s.mem, set, sframe_only(true, 4));
  EXPECT_EQ(bt.frames.size(), 1u);
  EXPECT_EQ(bt.stop, StopReason::NoUnwindInfo);
  EXPECT_NE(bt.detail.find("not 2 or 3"), std::string::npos) << bt.detail;
}

TEST_F(X86SFrame, StepByStepUsesTheSameTables) {
  Stack s(false);
  lay_out_chain(s);
  ModuleSet set = modules(Sframe::None);
  Unwinder u;
  const UnwindOptions o = sframe_only(true, 2);
  Frame f = u.first_frame(chain_regs(), set);
  auto one = u.step(f, s.mem, set, o);
  ASSERT_TRUE(one.has_value()) << one.error().detail;
  EXPECT_EQ(one->cfa, a + 8);
  EXPECT_EQ(one->caller.source, FrameSource::SFrame);
  EXPECT_EQ(one->caller.pc, at("ret_middle"));
  auto two = u.step(one->caller, s.mem, set, o);
  ASSERT_TRUE(two.has_value()) << two.error().detail;
  EXPECT_EQ(two->cfa, a + 56);
  EXPECT_EQ(two->caller.pc, at("ret_entry"));
  auto three = u.step(two->caller, s.mem, set, o);
  ASSERT_FALSE(three.has_value());
  EXPECT_EQ(three.error().reason, StopReason::Outermost);
}

// ---------------------------------------------- aarch64 and s390x, converted from .eh_frame

using AArch64Converted = test::ChainTest<test::kAArch64Prefix, &test::kAArch64ChainAsm>;

TEST_F(AArch64Converted, SignedReturnAddressAndLeaf) {
  // inner is a leaf (return address still in x30); middle signs its return address.
  const uint64_t s0 = kStack + 0x800;
  const uint64_t m = s0 + 16;
  const uint64_t pac = 0x5a3c000000000000ull;
  Stack s(false);
  s.put(s0 + 8, 0xa20);
  s.put(m, 0x29a);                      // middle's saved x29 (CFA - 32)
  s.put(m + 8, pac | at("ret_entry"));  // middle's signed x30 (CFA - 24)
  s.put(m + 16, 0x19a);
  RegisterSet regs(Arch::AArch64);
  regs.set_pc(at("inner_body"));
  regs.set(31, s0);
  regs.set(30, at("ret_middle"));
  regs.set(29, 0x2929);

  for (uint8_t version : {2, 3}) {
    SCOPED_TRACE("V" + std::to_string(version));
    Backtrace bt = Unwinder().unwind(regs, s.mem, modules_, sframe_only(true, version));
    EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
    ASSERT_EQ(bt.frames.size(), 3u) << sources(bt);
    EXPECT_EQ(bt.frames[0].cfa, m);
    EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
    EXPECT_EQ(bt.frames[1].source, FrameSource::SFrame);
    EXPECT_EQ(bt.frames[1].regs.get(31), m);
    EXPECT_EQ(bt.frames[1].regs.get(29), 0x2929u);
    EXPECT_EQ(bt.frames[1].cfa, m + 32);
    EXPECT_EQ(bt.frames[2].pc, at("ret_entry"));  // PAC bits gone
    EXPECT_EQ(bt.frames[2].source, FrameSource::SFrame);
    EXPECT_EQ(bt.frames[2].regs.get(31), m + 32);
    EXPECT_EQ(bt.frames[2].regs.get(29), 0x29au);
    EXPECT_EQ(bt.frames[2].cfa, 0u);  // stepped by the outermost FRE: no CFA
  }
}

using S390xConverted = test::ChainTest<test::kS390xPrefix, &test::kS390xChainAsm>;

TEST_F(S390xConverted, CfaIsCallerSpPlus160) {
  // middle saves r6-r15 in its caller's save area (r14 at CFA - 48, r11 at CFA - 72, r15 at
  // CFA - 40) and allocates 160 bytes; inner is a leaf.
  const uint64_t sp = kStack + 0x400;
  const uint64_t entry_sp = sp + 160;
  Stack s(true);
  s.put(entry_sp + 48, 0x606);
  s.put(entry_sp + 88, 0xb0b);
  s.put(entry_sp + 112, at("ret_entry"));
  s.put(entry_sp + 120, entry_sp);
  RegisterSet regs(Arch::S390x);
  regs.set_pc(at("inner"));
  regs.set(15, sp);
  regs.set(14, at("ret_middle"));
  regs.set(11, 0xbb);

  for (uint8_t version : {2, 3}) {
    SCOPED_TRACE("V" + std::to_string(version));
    Backtrace bt = Unwinder().unwind(regs, s.mem, modules_, sframe_only(true, version));
    EXPECT_EQ(bt.stop, StopReason::Outermost) << sources(bt);
    ASSERT_EQ(bt.frames.size(), 3u) << sources(bt);
    EXPECT_EQ(bt.frames[0].cfa, sp + 160);
    EXPECT_EQ(bt.frames[1].pc, at("ret_middle"));
    EXPECT_EQ(bt.frames[1].source, FrameSource::SFrame);
    EXPECT_EQ(bt.frames[1].regs.get(15), sp);
    EXPECT_EQ(bt.frames[1].regs.get(11), 0xbbu);
    EXPECT_EQ(bt.frames[1].cfa, entry_sp + 160);
    EXPECT_EQ(bt.frames[2].pc, at("ret_entry"));
    EXPECT_EQ(bt.frames[2].source, FrameSource::SFrame);
    EXPECT_EQ(bt.frames[2].regs.get(15), entry_sp);
    EXPECT_EQ(bt.frames[2].regs.get(11), 0xb0bu);  // r11 is s390x's frame pointer
    EXPECT_EQ(bt.frames[2].cfa, 0u);               // stepped by the outermost FRE: no CFA
  }
}

}  // namespace
}  // namespace ehbt
