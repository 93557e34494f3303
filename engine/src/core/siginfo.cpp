// SPDX-License-Identifier: Apache-2.0
// NT_SIGINFO decoding and the facts it carries (see siginfo.hpp).
#include "core/siginfo.hpp"

#include "core/byte_order.hpp"

namespace ehbt::core {
namespace {

// siginfo_t (<asm-generic/siginfo.h>; x86-64, aarch64 and s390x share it): si_signo 0,
// si_errno 4, si_code 8, then the union, 8-aligned at 16 on 64-bit ABIs. i386 has no padding
// before the union: it starts at 12. In the union, _kill {si_pid, si_uid} and _rt {si_pid,
// si_uid, si_value} begin where _sigfault.si_addr does.
constexpr std::size_t kSiSigno = 0;
constexpr std::size_t kSiCode = 8;
constexpr std::size_t kSiUnion = 16;
constexpr std::size_t kSiUnion32 = 12;

// si_code values (<asm-generic/siginfo.h>, the same on every Linux architecture here).
constexpr int kSiKernel = 0x80;
constexpr int kSiTimer = -2;  // _timer {si_tid, si_overrun, si_sigval}: no sender
constexpr int kSiSigio = -5;  // _sigpoll {si_band, si_fd}: no sender

// Signal numbers, identical on x86-64, aarch64, s390x and i386.
constexpr int kSigquit = 3, kSigill = 4, kSigtrap = 5, kSigabrt = 6, kSigbus = 7, kSigfpe = 8,
              kSigsegv = 11, kSigxcpu = 24, kSigxfsz = 25, kSigsys = 31;

// The signals whose kernel-raised siginfo is _sigfault.
}  // namespace

std::optional<SigInfoNote> decode_siginfo(Arch arch, std::span<const std::byte> desc,
                                          bool big_endian) {
  const unsigned w = arch_info(arch).address_size;
  const std::size_t at = w == 4 ? kSiUnion32 : kSiUnion;
  if (desc.size() < at + w || desc.size() < at + 8) return std::nullopt;
  ByteView d(desc, big_endian);
  SigInfoNote si;
  si.signo = d.s32(kSiSigno);
  si.code = d.s32(kSiCode);
  si.addr = d.u(at, w);
  si.pid = d.s32(at);
  si.uid = d.u32(at + 4);
  if (!d.ok()) return std::nullopt;
  return si;
}

SignalInfo signal_facts(const SigInfoNote& note) {
  SignalInfo si;
  si.number = note.signo;
  si.code = note.code;
  if (signal_carries_address(note.signo, note.code, note.addr)) si.address = note.addr;
  if (signal_carries_sender(note.code)) si.sender = SignalSender{note.pid, note.uid};
  return si;
}

bool signal_dumps_core(int signo) {
  switch (signo) {
    case kSigquit:
    case kSigill:
    case kSigtrap:
    case kSigabrt:
    case kSigbus:
    case kSigfpe:
    case kSigsegv:
    case kSigxcpu:
    case kSigxfsz:
    case kSigsys:
      return true;
    default:
      return false;
  }
}

void settle_snapshot(std::optional<SignalInfo>& signal, std::optional<SignalInfo>& snapshot,
                     std::size_t& crashing, std::vector<ThreadState>& threads) {
  if (!signal || signal_dumps_core(signal->number)) return;
  snapshot = std::move(signal);
  signal.reset();
  crashing = 0;
  for (ThreadState& ts : threads) ts.signal = 0;
}

}  // namespace ehbt::core

namespace ehbt {

bool signal_carries_address(int number, std::optional<int> code, uint64_t address) {
  if (!code || !signal_has_fault_address(number)) return false;
  // Raised by the kernel for the fault itself (SEGV_MAPERR, TRAP_BRKPT, ...): _sigfault.
  if (*code > 0 && *code != core::kSiKernel) return true;
  // force_sig() (x86's general-protection fault and int3, a bad sigreturn frame, ...) sends
  // SI_KERNEL with si_pid = si_uid = 0: a zero word there is no address. A kernel path that
  // does put one there (force_sig_fault with SI_KERNEL) leaves it non-zero.
  return *code == core::kSiKernel && address != 0;
}

bool signal_carries_sender(std::optional<int> code) {
  // POSIX has a process send every code <= 0 and name itself in si_pid and si_uid; Linux's
  // timer and SIGIO codes hold other members there.
  return code && *code <= 0 && *code != core::kSiTimer && *code != core::kSiSigio;
}

}  // namespace ehbt
