// SPDX-License-Identifier: Apache-2.0
// Signal frames on all four architectures, from hand-built kernel frames. The layouts come
// from the C library's own structures: offsetof on the native ucontext_t for x86-64, and for
// aarch64 / s390x / i386 from a program built with the cross compiler and run under qemu-user, so
// the expectations are independent of the constants in engine/src/arch/.
#include <gtest/gtest.h>
#include <ucontext.h>

#include <cstddef>
#include <map>
#include <sstream>

#include "arch/arch_ops.hpp"
#include "ehbt/unwinder.hpp"
#include "support/unwind_toolchain.hpp"

namespace ehbt {
namespace {

using test::run_capture;

constexpr uint64_t kStack = 0x7ffe0000;
constexpr uint64_t kStackSize = 0x4000;
constexpr uint64_t kTramp = 0x7fff1000;  // in no module, like a trampoline on the stack

BufferMemory stack_memory() {
  BufferMemory m;
  m.add(kStack, std::vector<std::byte>(kStackSize));
  return m;
}

void put_bytes(BufferMemory& m, uint64_t addr, std::initializer_list<uint8_t> bytes) {
  std::vector<std::byte> v;
  for (uint8_t b : bytes) v.push_back(std::byte{b});
  m.add(addr, std::move(v));
}

// Runs a C program with the cross toolchain under qemu-user; parses "name value" lines.
std::optional<std::map<std::string, uint64_t>> cross_offsets(const std::string& prefix,
                                                             const std::string& qemu,
                                                             const std::string& program) {
  test::Toolchain tc{prefix};
  if (!tc.available() || std::system(("command -v " + qemu + " >/dev/null 2>&1").c_str()) != 0)
    return std::nullopt;
  const std::string dir = test::make_temp_dir();
  if (dir.empty()) return std::nullopt;
  const std::string src = dir + "/off.c", exe = dir + "/off";
  if (!run_capture("cat > " + src + " <<'EOF'\n" + program + "\nEOF\n")) return std::nullopt;
  if (!run_capture(tc.gcc() + " -static -o " + exe + " " + src + " 2>&1")) return std::nullopt;
  auto out = run_capture(qemu + " " + exe);
  if (!out) return std::nullopt;
  std::map<std::string, uint64_t> result;
  std::istringstream in(*out);
  std::string name;
  uint64_t value;
  while (in >> name >> value) result[name] = value;
  return result;
}

TEST(ArchSignalTest, X86_64SigreturnPattern) {
  const auto& ops = arch::arch_ops(Arch::X86_64);
  BufferMemory m;
  put_bytes(m, kTramp, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  put_bytes(m, kTramp + 0x100, {0x48, 0xc7, 0xc0, 0x0e, 0x00, 0x00, 0x00, 0x0f, 0x05});
  EXPECT_EQ(ops.sigreturn_at(m, kTramp), arch::Sigreturn::Rt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x100), arch::Sigreturn::None);  // rax = 14
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 1), arch::Sigreturn::None);
  EXPECT_EQ(ops.sigreturn_at(m, 0x1000), arch::Sigreturn::None);  // unreadable
}

TEST(ArchSignalTest, AArch64SigreturnPattern) {
  const auto& ops = arch::arch_ops(Arch::AArch64);
  BufferMemory m;
  // mov x8, #139 = 0xd2801168; svc #0 = 0xd4000001, little-endian.
  put_bytes(m, kTramp, {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4});
  put_bytes(m, kTramp + 0x100, {0x68, 0x11, 0x80, 0xd2, 0x1f, 0x20, 0x03, 0xd5});  // + nop
  EXPECT_EQ(ops.sigreturn_at(m, kTramp), arch::Sigreturn::Rt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x100), arch::Sigreturn::None);
}

TEST(ArchSignalTest, S390xSigreturnPatterns) {
  const auto& ops = arch::arch_ops(Arch::S390x);
  BufferMemory m;
  put_bytes(m, kTramp, {0x0a, 0xad});         // svc 173
  put_bytes(m, kTramp + 0x10, {0x0a, 0x77});  // svc 119
  put_bytes(m, kTramp + 0x20, {0x0a, 0x01});  // svc 1 (exit)
  EXPECT_EQ(ops.sigreturn_at(m, kTramp), arch::Sigreturn::Rt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x10), arch::Sigreturn::NonRt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x20), arch::Sigreturn::None);
}

// x86-64: the handler returned into __restore_rt, so rsp points at rt_sigframe.uc.
TEST(ArchSignalTest, X86_64RtSigframe) {
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  const uint64_t uc = kStack + 0x1000;
  auto greg = [&](int idx, uint64_t v) {
    ASSERT_TRUE(m.write_uint(uc + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * idx, v, 8, false));
  };
  greg(REG_RIP, 0x401234);
  greg(REG_RSP, kStack + 0x2008);
  greg(REG_RBP, kStack + 0x2100);
  greg(REG_RBX, 0xb);
  greg(REG_RAX, 0xa);
  greg(REG_R12, 0x12);
  greg(REG_R15, 0x15);
  greg(REG_RDI, 0xd1);

  RegisterSet regs(Arch::X86_64);
  regs.set_pc(kTramp);
  regs.set(7, uc);  // rsp
  Unwinder unwinder;
  ModuleSet none;
  Frame f = unwinder.first_frame(regs, none);
  auto r = unwinder.step(f, m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  const Frame& c = r->caller;
  EXPECT_EQ(c.pc, 0x401234u);
  EXPECT_EQ(c.source, FrameSource::Signal);
  EXPECT_TRUE(c.exact_pc);
  EXPECT_EQ(c.lookup_pc(), 0x401234u);
  EXPECT_EQ(c.regs.get(7), kStack + 0x2008);  // rsp
  EXPECT_EQ(c.regs.get(6), kStack + 0x2100);  // rbp
  EXPECT_EQ(c.regs.get(3), 0xbu);             // rbx
  EXPECT_EQ(c.regs.get(0), 0xau);             // rax
  EXPECT_EQ(c.regs.get(12), 0x12u);
  EXPECT_EQ(c.regs.get(15), 0x15u);
  EXPECT_EQ(c.regs.get(5), 0xd1u);  // rdi
  EXPECT_EQ(r->cfa, kStack + 0x2008);

  // The whole walk marks the trampoline frame.
  Limits two;
  two.max_frames = 2;
  Backtrace bt = Unwinder(two).unwind(regs, m, none);
  ASSERT_EQ(bt.frames.size(), 2u);
  EXPECT_TRUE(bt.frames[0].signal_trampoline);
  EXPECT_FALSE(bt.frames[1].signal_trampoline);
  EXPECT_EQ(bt.frames[1].source, FrameSource::Signal);
  // 0x401234 lies in no module and nothing on the zeroed stack leads further.
  EXPECT_EQ(bt.stop, StopReason::NoModule) << bt.detail;
}

TEST(ArchSignalTest, X86_64SigframeUnreadable) {
  BufferMemory m;
  put_bytes(m, kTramp, {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05});
  RegisterSet regs(Arch::X86_64);
  regs.set_pc(kTramp);
  regs.set(7, kStack + 0x1000);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, StopReason::MemoryFault);
  EXPECT_NE(r.error().detail.find("failed"), std::string::npos) << r.error().detail;
}

TEST(ArchSignalTest, AArch64RtSigframe) {
  auto off = cross_offsets("aarch64-linux-gnu-", "qemu-aarch64", R"(
#include <stdio.h>
#include <stddef.h>
#include <signal.h>
#include <ucontext.h>
struct frame { siginfo_t info; ucontext_t uc; };
int main(void) {
  printf("x0 %zu\n", offsetof(struct frame, uc.uc_mcontext.regs[0]));
  printf("sp %zu\n", offsetof(struct frame, uc.uc_mcontext.sp));
  printf("pc %zu\n", offsetof(struct frame, uc.uc_mcontext.pc));
  return 0;
})");
  if (!off || off->size() != 3) GTEST_FAIL() << "aarch64 cross toolchain or qemu-aarch64 missing";
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4});
  const uint64_t frame = kStack + 0x800;
  for (unsigned i = 0; i < 31; ++i)
    ASSERT_TRUE(m.write_uint(frame + off->at("x0") + 8 * i, 0x1000 + i, 8, false));
  ASSERT_TRUE(m.write_uint(frame + off->at("sp"), kStack + 0x3000, 8, false));
  ASSERT_TRUE(m.write_uint(frame + off->at("pc"), 0x400abc, 8, false));

  RegisterSet regs(Arch::AArch64);
  regs.set_pc(kTramp);
  regs.set(31, frame);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(r->caller.pc, 0x400abcu);
  EXPECT_EQ(r->caller.source, FrameSource::Signal);
  EXPECT_TRUE(r->caller.exact_pc);
  EXPECT_EQ(r->caller.regs.get(31), kStack + 0x3000);
  EXPECT_EQ(r->caller.regs.get(0), 0x1000u);
  EXPECT_EQ(r->caller.regs.get(19), 0x1000u + 19);
  EXPECT_EQ(r->caller.regs.get(29), 0x1000u + 29);
  EXPECT_EQ(r->caller.regs.get(30), 0x1000u + 30);
  EXPECT_EQ(r->cfa, kStack + 0x3000);
}

class S390xSigframe : public ::testing::Test {
 protected:
  void SetUp() override {
    off_ = cross_offsets("s390x-linux-gnu-", "qemu-s390x", R"(
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <ucontext.h>
struct rt_frame { uint8_t callee_used_stack[160]; uint16_t svc_insn; siginfo_t info; ucontext_t uc; };
int main(void) {
  printf("rt_psw_addr %zu\n", offsetof(struct rt_frame, uc.uc_mcontext.psw.addr));
  printf("rt_gpr0 %zu\n", offsetof(struct rt_frame, uc.uc_mcontext.gregs[0]));
  printf("sc_sregs %zu\n", 160 + offsetof(struct sigcontext, sregs));
  printf("sregs_psw_addr %zu\n", offsetof(_sigregs, regs.psw.addr));
  printf("sregs_gpr0 %zu\n", offsetof(_sigregs, regs.gprs[0]));
  return 0;
})");
  }
  std::optional<std::map<std::string, uint64_t>> off_;
};

TEST_F(S390xSigframe, RtSigreturn) {
  if (!off_ || off_->size() != 5) GTEST_FAIL() << "s390x cross toolchain or qemu-s390x missing";
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0x0a, 0xad});
  const uint64_t frame = kStack + 0x800;
  for (unsigned i = 0; i < 16; ++i)
    ASSERT_TRUE(m.write_uint(frame + off_->at("rt_gpr0") + 8 * i, 0x5000 + i, 8, true));
  ASSERT_TRUE(m.write_uint(frame + off_->at("rt_gpr0") + 8 * 15, kStack + 0x2000, 8, true));
  ASSERT_TRUE(m.write_uint(frame + off_->at("rt_psw_addr"), 0x1000a2, 8, true));

  RegisterSet regs(Arch::S390x);
  regs.set_pc(kTramp);
  regs.set(15, frame);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(r->caller.pc, 0x1000a2u);
  EXPECT_EQ(r->caller.source, FrameSource::Signal);
  EXPECT_TRUE(r->caller.exact_pc);
  EXPECT_EQ(r->caller.regs.get(15), kStack + 0x2000);
  EXPECT_EQ(r->caller.regs.get(14), 0x5000u + 14);
  EXPECT_EQ(r->caller.regs.get(6), 0x5000u + 6);
  EXPECT_EQ(r->caller.regs.get(0), 0x5000u);
  EXPECT_EQ(r->cfa, kStack + 0x2000 + 160);  // the interrupted frame's r15 + 160
}

TEST_F(S390xSigframe, NonRtSigreturn) {
  if (!off_ || off_->size() != 5) GTEST_FAIL() << "s390x cross toolchain or qemu-s390x missing";
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0x0a, 0x77});
  const uint64_t frame = kStack + 0x800;
  const uint64_t sregs = kStack + 0x1800;  // wherever the kernel put them
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_sregs"), sregs, 8, true));
  for (unsigned i = 0; i < 16; ++i)
    ASSERT_TRUE(m.write_uint(sregs + off_->at("sregs_gpr0") + 8 * i, 0x7000 + i, 8, true));
  ASSERT_TRUE(m.write_uint(sregs + off_->at("sregs_gpr0") + 8 * 15, kStack + 0x2800, 8, true));
  ASSERT_TRUE(m.write_uint(sregs + off_->at("sregs_psw_addr"), 0x2000b4, 8, true));

  RegisterSet regs(Arch::S390x);
  regs.set_pc(kTramp);
  regs.set(15, frame);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(r->caller.pc, 0x2000b4u);
  EXPECT_EQ(r->caller.regs.get(15), kStack + 0x2800);
  EXPECT_EQ(r->caller.regs.get(11), 0x7000u + 11);
  EXPECT_EQ(r->cfa, kStack + 0x2800 + 160);
}

// i386: the kernel's (arch/x86/include/asm/sigframe.h, 32-bit) and qemu-user's frames, laid
// out here from the C library's own sigcontext / ucontext_t in a program built with the i686
// cross compiler. At the trampoline the handler's `ret` has popped `pretcode`: esp = frame + 4.
class I386Sigframe : public ::testing::Test {
 protected:
  void SetUp() override {
    off_ = cross_offsets("i686-linux-gnu-", "qemu-i386", R"(
#define _GNU_SOURCE
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <ucontext.h>
struct sigframe { uint32_t pretcode; int sig; struct sigcontext sc; };
struct rt_sigframe { uint32_t pretcode; int sig; uint32_t pinfo; uint32_t puc; siginfo_t info; ucontext_t uc; };
int main(void) {
  printf("sc_edi %zu\n", offsetof(struct sigframe, sc.edi));
  printf("sc_esi %zu\n", offsetof(struct sigframe, sc.esi));
  printf("sc_ebp %zu\n", offsetof(struct sigframe, sc.ebp));
  printf("sc_esp %zu\n", offsetof(struct sigframe, sc.esp));
  printf("sc_ebx %zu\n", offsetof(struct sigframe, sc.ebx));
  printf("sc_eax %zu\n", offsetof(struct sigframe, sc.eax));
  printf("sc_eip %zu\n", offsetof(struct sigframe, sc.eip));
  printf("rt_puc %zu\n", offsetof(struct rt_sigframe, puc));
  printf("rt_uc %zu\n", offsetof(struct rt_sigframe, uc));
  printf("uc_eip %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_EIP]));
  printf("uc_esp %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_ESP]));
  printf("uc_ebp %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_EBP]));
  printf("uc_ebx %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_EBX]));
  printf("uc_ecx %zu\n", offsetof(ucontext_t, uc_mcontext.gregs[REG_ECX]));
  return 0;
})");
  }
  static constexpr std::size_t kOffsets = 14;
  std::optional<std::map<std::string, uint64_t>> off_;
};

// DWARF numbers of the i386 psABI.
constexpr uint16_t kEax = 0, kEcx = 1, kEbx = 3, kEsp = 4, kEbp = 5, kEsi = 6, kEdi = 7;

TEST(ArchSignalTest, I386SigreturnPatterns) {
  const auto& ops = arch::arch_ops(Arch::I386);
  BufferMemory m;
  // __kernel_rt_sigreturn / glibc __restore_rt: mov $173,%eax; int $0x80.
  put_bytes(m, kTramp, {0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80});
  // __kernel_sigreturn / glibc __restore: pop %eax; mov $119,%eax; int $0x80.
  put_bytes(m, kTramp + 0x100, {0x58, 0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80});
  put_bytes(m, kTramp + 0x200, {0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80});  // no pop
  put_bytes(m, kTramp + 0x300, {0xb8, 0xad, 0x00, 0x00, 0x00, 0x0f, 0x05});  // syscall, not int
  EXPECT_EQ(ops.sigreturn_at(m, kTramp), arch::Sigreturn::Rt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x100), arch::Sigreturn::NonRt);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x101), arch::Sigreturn::NonRt);  // after the pop
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x200), arch::Sigreturn::None);
  EXPECT_EQ(ops.sigreturn_at(m, kTramp + 0x300), arch::Sigreturn::None);
  EXPECT_EQ(ops.sigreturn_at(m, 0x1000), arch::Sigreturn::None);  // unreadable
  EXPECT_TRUE(ops.plausible_pc(0xffffe000));
  EXPECT_FALSE(ops.plausible_pc(0x100000000ull));
}

TEST_F(I386Sigframe, RtSigreturn) {
  if (!off_ || off_->size() != kOffsets)
    GTEST_FAIL() << "i686 cross toolchain or qemu-i386 missing";
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80});
  const uint64_t frame = kStack + 0x800;
  const uint64_t uc = frame + off_->at("rt_uc");
  ASSERT_TRUE(m.write_uint(frame + off_->at("rt_puc"), uc, 4, false));
  ASSERT_TRUE(m.write_uint(uc + off_->at("uc_eip"), 0x8049abc, 4, false));
  ASSERT_TRUE(m.write_uint(uc + off_->at("uc_esp"), kStack + 0x3000, 4, false));
  ASSERT_TRUE(m.write_uint(uc + off_->at("uc_ebp"), kStack + 0x3010, 4, false));
  ASSERT_TRUE(m.write_uint(uc + off_->at("uc_ebx"), 0xb0b0b0b0, 4, false));
  ASSERT_TRUE(m.write_uint(uc + off_->at("uc_ecx"), 0xc0c0c0c0, 4, false));

  RegisterSet regs(Arch::I386);
  regs.set_pc(kTramp);
  regs.set(kEsp, frame + 4);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(r->caller.pc, 0x8049abcu);
  EXPECT_EQ(r->caller.source, FrameSource::Signal);
  EXPECT_TRUE(r->caller.exact_pc);
  EXPECT_EQ(r->caller.regs.get(kEsp), kStack + 0x3000);
  EXPECT_EQ(r->caller.regs.get(kEbp), kStack + 0x3010);
  EXPECT_EQ(r->caller.regs.get(kEbx), 0xb0b0b0b0u);
  EXPECT_EQ(r->caller.regs.get(kEcx), 0xc0c0c0c0u);
  EXPECT_EQ(r->cfa, kStack + 0x3000);
}

TEST_F(I386Sigframe, NonRtSigreturn) {
  if (!off_ || off_->size() != kOffsets)
    GTEST_FAIL() << "i686 cross toolchain or qemu-i386 missing";
  BufferMemory m = stack_memory();
  put_bytes(m, kTramp, {0x58, 0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80});
  const uint64_t frame = kStack + 0x800;
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_eip"), 0x8048123, 4, false));
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_esp"), kStack + 0x2800, 4, false));
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_ebp"), kStack + 0x2840, 4, false));
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_esi"), 0x51515151, 4, false));
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_edi"), 0xd1d1d1d1, 4, false));
  ASSERT_TRUE(m.write_uint(frame + off_->at("sc_eax"), 0xa0a0a0a0, 4, false));

  RegisterSet regs(Arch::I386);
  regs.set_pc(kTramp);
  regs.set(kEsp, frame + 4);
  Unwinder unwinder;
  ModuleSet none;
  auto r = unwinder.step(unwinder.first_frame(regs, none), m, none);
  ASSERT_TRUE(r.has_value()) << r.error().detail;
  EXPECT_EQ(r->caller.pc, 0x8048123u);
  EXPECT_EQ(r->caller.source, FrameSource::Signal);
  EXPECT_EQ(r->caller.regs.get(kEsp), kStack + 0x2800);
  EXPECT_EQ(r->caller.regs.get(kEbp), kStack + 0x2840);
  EXPECT_EQ(r->caller.regs.get(kEsi), 0x51515151u);
  EXPECT_EQ(r->caller.regs.get(kEdi), 0xd1d1d1d1u);
  EXPECT_EQ(r->caller.regs.get(kEax), 0xa0a0a0a0u);
  EXPECT_EQ(r->cfa, kStack + 0x2800);

  // Stopped after the trampoline's `pop %eax` (e.g. a core written inside it): esp has moved
  // past the signal number to the sigcontext itself.
  RegisterSet inside(Arch::I386);
  inside.set_pc(kTramp + 1);
  inside.set(kEsp, frame + 8);
  auto in = unwinder.step(unwinder.first_frame(inside, none), m, none);
  ASSERT_TRUE(in.has_value()) << in.error().detail;
  EXPECT_EQ(in->caller.pc, 0x8048123u);
  EXPECT_EQ(in->caller.regs.get(kEsp), kStack + 0x2800);
}

// The ebp chain and the entry step with 4-byte words: push %ebp; mov %esp,%ebp leaves
// {saved ebp, return address} at ebp; a call leaves the return address at esp.
TEST(ArchSignalTest, I386FramePointerAndEntrySteps) {
  const auto& ops = arch::arch_ops(Arch::I386);
  BufferMemory m = stack_memory();
  const uint64_t ebp = kStack + 0x100;
  ASSERT_TRUE(m.write_uint(ebp, kStack + 0x180, 4, false));
  ASSERT_TRUE(m.write_uint(ebp + 4, 0x8049000, 4, false));
  RegisterSet regs(Arch::I386);
  regs.set(kEsp, kStack + 0xf0);
  regs.set(kEbp, ebp);
  regs.set(kEbx, 0x1234);
  auto fp = ops.frame_pointer_step(regs, m);
  ASSERT_TRUE(fp.has_value()) << fp.error().why;
  EXPECT_EQ(fp->regs.pc(), 0x8049000u);
  EXPECT_EQ(fp->regs.get(kEbp), kStack + 0x180);
  EXPECT_EQ(fp->regs.get(kEsp), ebp + 8);
  EXPECT_EQ(fp->cfa, ebp + 8);

  ASSERT_TRUE(m.write_uint(kStack + 0xf0, 0x8049555, 4, false));
  auto entry = ops.entry_step(regs, m);
  ASSERT_TRUE(entry.has_value()) << entry.error().why;
  EXPECT_EQ(entry->regs.pc(), 0x8049555u);
  EXPECT_EQ(entry->regs.get(kEsp), kStack + 0xf4);
  EXPECT_EQ(entry->regs.get(kEbx), 0x1234u);  // callee-saved, kept
  EXPECT_EQ(entry->cfa, kStack + 0xf4);

  regs.set(kEbp, ebp + 2);  // misaligned for 4-byte words
  EXPECT_FALSE(ops.frame_pointer_step(regs, m).has_value());
}

}  // namespace
}  // namespace ehbt
