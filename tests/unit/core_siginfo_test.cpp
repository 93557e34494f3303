// SPDX-License-Identifier: Apache-2.0
// NT_SIGINFO decoding on the four architectures, from hand-built siginfo_t bytes laid out as
// the kernel's <asm-generic/siginfo.h> says (64-bit: union at 16; i386: union at 12; s390x
// big-endian), and what each si_code lets the engine report: a fault address only for a fault,
// the sender's pid and uid only for a signal a process sent.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/siginfo.hpp"
#include "ehbt/core.hpp"

namespace {

using ehbt::Arch;
using ehbt::core::decode_siginfo;
using ehbt::core::signal_facts;

// A 128-byte siginfo_t: si_signo at 0, si_errno at 4, si_code at 8, then `union_words` (each
// `widths[i]` bytes) from the union's offset, in the given byte order.
std::vector<std::byte> siginfo(bool be, int signo, int code, std::size_t union_at,
                               std::initializer_list<std::pair<uint64_t, int>> union_words) {
  std::vector<std::byte> out(128, std::byte{0});
  auto put = [&](std::size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      const int shift = be ? 8 * (n - 1 - i) : 8 * i;
      out[at + i] = static_cast<std::byte>(v >> shift);
    }
  };
  put(0, static_cast<uint32_t>(signo), 4);
  put(8, static_cast<uint32_t>(code), 4);
  std::size_t at = union_at;
  for (auto [v, n] : union_words) {
    put(at, v, n);
    at += n;
  }
  return out;
}

struct ArchCase {
  Arch arch;
  bool be;
  std::size_t union_at;
};

// x86-64 and aarch64 little-endian, s390x big-endian: union at 16; i386: at 12.
const ArchCase kArches[] = {{Arch::X86_64, false, 16},
                            {Arch::AArch64, false, 16},
                            {Arch::S390x, true, 16},
                            {Arch::I386, false, 12}};

TEST(CoreSiginfo, KillFromAProcessHasASenderAndNoAddress) {
  for (const ArchCase& a : kArches) {
    // kill(2): SI_USER (0), _kill {si_pid = 4242, si_uid = 1000}.
    auto bytes = siginfo(a.be, 11, 0, a.union_at, {{4242, 4}, {1000, 4}});
    auto note = decode_siginfo(a.arch, bytes, a.be);
    ASSERT_TRUE(note.has_value()) << static_cast<int>(a.arch);
    ehbt::SignalInfo si = signal_facts(*note);
    EXPECT_EQ(si.number, 11);
    EXPECT_EQ(si.code, 0);
    EXPECT_FALSE(si.address.has_value()) << static_cast<int>(a.arch);
    ASSERT_TRUE(si.sender.has_value());
    EXPECT_EQ(si.sender->pid, 4242);
    EXPECT_EQ(si.sender->uid, 1000u);
  }
}

TEST(CoreSiginfo, KillFromPidOneIsNotANullPointer) {
  for (const ArchCase& a : kArches) {
    // The init of a container (pid 1, uid 0) sends SIGSEGV: the word that would be si_addr
    // reads 1 on a little-endian 64-bit machine, 1 << 32 on s390x.
    auto bytes = siginfo(a.be, 11, 0, a.union_at, {{1, 4}, {0, 4}});
    ehbt::SignalInfo si = signal_facts(*decode_siginfo(a.arch, bytes, a.be));
    EXPECT_FALSE(si.address.has_value());
    ASSERT_TRUE(si.sender.has_value());
    EXPECT_EQ(si.sender->pid, 1);
    EXPECT_EQ(si.sender->uid, 0u);
  }
}

TEST(CoreSiginfo, TkillAndSigqueueHaveSenders) {
  for (const ArchCase& a : kArches) {
    // SI_TKILL (-6), _kill; SI_QUEUE (-1), _rt {pid, uid, sigval}.
    auto tkill = signal_facts(
        *decode_siginfo(a.arch, siginfo(a.be, 6, -6, a.union_at, {{77, 4}, {5, 4}}), a.be));
    ASSERT_TRUE(tkill.sender.has_value());
    EXPECT_EQ(tkill.sender->pid, 77);
    EXPECT_EQ(tkill.sender->uid, 5u);
    EXPECT_FALSE(tkill.address.has_value());
    auto queue = signal_facts(*decode_siginfo(
        a.arch, siginfo(a.be, 11, -1, a.union_at, {{78, 4}, {6, 4}, {0xdead, 4}}), a.be));
    ASSERT_TRUE(queue.sender.has_value());
    EXPECT_EQ(queue.sender->pid, 78);
    EXPECT_EQ(queue.sender->uid, 6u);
    EXPECT_FALSE(queue.address.has_value());
  }
}

TEST(CoreSiginfo, FaultsHaveAnAddressAndNoSender) {
  for (const ArchCase& a : kArches) {
    const int w = a.arch == Arch::I386 ? 4 : 8;
    const uint64_t addr = w == 4 ? 0xffffff9cu : 0x00007ffd12345678u;
    // SEGV_MAPERR (1), _sigfault.si_addr.
    auto si =
        signal_facts(*decode_siginfo(a.arch, siginfo(a.be, 11, 1, a.union_at, {{addr, w}}), a.be));
    ASSERT_TRUE(si.address.has_value()) << static_cast<int>(a.arch);
    EXPECT_EQ(*si.address, addr);
    EXPECT_FALSE(si.sender.has_value());
    // A null-pointer fault keeps its address 0.
    auto null =
        signal_facts(*decode_siginfo(a.arch, siginfo(a.be, 11, 1, a.union_at, {{0, w}}), a.be));
    ASSERT_TRUE(null.address.has_value());
    EXPECT_EQ(*null.address, 0u);
    // BUS_ADRERR (2), ILL_ILLOPC (1), FPE_INTDIV (1), TRAP_BRKPT (1): all _sigfault.
    for (int signo : {7, 4, 8, 5}) {
      auto f = signal_facts(
          *decode_siginfo(a.arch, siginfo(a.be, signo, 1, a.union_at, {{0x1234, w}}), a.be));
      ASSERT_TRUE(f.address.has_value()) << signo;
      EXPECT_EQ(*f.address, 0x1234u);
    }
  }
}

TEST(CoreSiginfo, SiKernelHasAnAddressOnlyWhenTheKernelPutOne) {
  for (const ArchCase& a : kArches) {
    const int w = a.arch == Arch::I386 ? 4 : 8;
    // force_sig(SIGSEGV) (x86's general-protection fault): SI_KERNEL, si_pid = si_uid = 0.
    auto gp = signal_facts(
        *decode_siginfo(a.arch, siginfo(a.be, 11, 0x80, a.union_at, {{0, 4}, {0, 4}}), a.be));
    EXPECT_EQ(gp.code, 0x80);
    EXPECT_FALSE(gp.address.has_value());
    EXPECT_FALSE(gp.sender.has_value());
    // force_sig_fault(..., SI_KERNEL, addr): the address is there.
    auto with = signal_facts(
        *decode_siginfo(a.arch, siginfo(a.be, 11, 0x80, a.union_at, {{0x4000, w}}), a.be));
    ASSERT_TRUE(with.address.has_value());
    EXPECT_EQ(*with.address, 0x4000u);
  }
}

TEST(CoreSiginfo, TimerAndSigioCodesHaveNeitherSenderNorAddress) {
  for (const ArchCase& a : kArches) {
    for (int code : {-2, -5}) {  // SI_TIMER (_timer), SI_SIGIO (_sigpoll)
      auto si = signal_facts(
          *decode_siginfo(a.arch, siginfo(a.be, 11, code, a.union_at, {{3, 4}, {9, 4}}), a.be));
      EXPECT_FALSE(si.address.has_value()) << code;
      EXPECT_FALSE(si.sender.has_value()) << code;
    }
    // SIGCHLD's CLD_EXITED (1) is no fault: its union is _sigchld.
    auto chld = signal_facts(
        *decode_siginfo(a.arch, siginfo(a.be, 17, 1, a.union_at, {{3, 4}, {9, 4}}), a.be));
    EXPECT_FALSE(chld.address.has_value());
    EXPECT_FALSE(chld.sender.has_value());
  }
}

TEST(CoreSiginfo, TooShortForTheUnionIsNothing) {
  EXPECT_FALSE(decode_siginfo(Arch::X86_64, std::vector<std::byte>(20), false).has_value());
  EXPECT_FALSE(decode_siginfo(Arch::I386, std::vector<std::byte>(16), false).has_value());
  EXPECT_TRUE(decode_siginfo(Arch::I386, std::vector<std::byte>(20), false).has_value());
}

TEST(CoreSiginfo, OnlyCoreDumpingSignalsCrash) {
  using ehbt::core::signal_dumps_core;
  for (int s : {3, 4, 5, 6, 7, 8, 11, 24, 25, 31}) EXPECT_TRUE(signal_dumps_core(s)) << s;
  // SIGKILL, SIGTERM, SIGSTOP (gcore's), SIGTSTP, SIGCHLD, SIGINT: never a kernel core.
  for (int s : {0, 2, 9, 15, 17, 19, 20}) EXPECT_FALSE(signal_dumps_core(s)) << s;
}

TEST(CoreSiginfo, PublicRulesAgree) {
  EXPECT_FALSE(ehbt::signal_carries_address(11, std::nullopt, 0x10));  // unknown code
  EXPECT_FALSE(ehbt::signal_carries_address(11, 0, 0x10));             // SI_USER
  EXPECT_TRUE(ehbt::signal_carries_address(11, 1, 0));                 // SEGV_MAPERR at 0
  EXPECT_FALSE(ehbt::signal_carries_address(6, 1, 0x10));              // SIGABRT: no fault
  EXPECT_TRUE(ehbt::signal_carries_sender(-6));
  EXPECT_FALSE(ehbt::signal_carries_sender(std::nullopt));
  EXPECT_FALSE(ehbt::signal_carries_sender(0x80));
}

}  // namespace
