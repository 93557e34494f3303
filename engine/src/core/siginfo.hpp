// SPDX-License-Identifier: Apache-2.0
// NT_SIGINFO: the kernel's siginfo_t of the signal that killed the process, and what it says
// for certain. Its union holds different members for different si_code values: a fault
// address only for faults the kernel raised, the sender's pid and uid for a signal another
// process sent, timer or poll data for others. Reading the wrong member invents a fact (a
// `kill -SEGV` from pid 1 read as a fault at address 0x1), so each is read only where the
// code says it is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ehbt/arch.hpp"
#include "ehbt/core.hpp"

namespace ehbt::core {

// The words of one NT_SIGINFO, every union member that may matter read raw: which one holds
// is for signal_facts() to say.
struct SigInfoNote {
  int signo = 0;
  int code = 0;
  uint64_t addr = 0;  // _sigfault.si_addr (the core's word size)
  int32_t pid = 0;    // _kill.si_pid, at the same offset
  uint32_t uid = 0;   // _kill.si_uid, after it
};

// Decodes a siginfo_t in the core's byte order and word size; nothing when the descriptor is
// too short to hold si_addr.
std::optional<SigInfoNote> decode_siginfo(Arch arch, std::span<const std::byte> desc,
                                          bool big_endian);

// What the note says, as the engine reports it: the fault address only for a fault code, the
// sender only for a code that means a process sent the signal.
SignalInfo signal_facts(const SigInfoNote& note);

// Whether a signal's default action dumps core (signal(7): SIGQUIT, SIGILL, SIGTRAP, SIGABRT,
// SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ, SIGSYS). The kernel writes a core only for these;
// a core that records any other signal (gcore's SIGSTOP) was written by a dumper while the
// process ran on: a snapshot, in which no thread crashed.
bool signal_dumps_core(int signo);

// Applies that rule to a target being opened (an ELF core or a minidump): when `signal` is
// one that dumps no core, it moves to `snapshot`, no thread is crashing and none signalled.
void settle_snapshot(std::optional<SignalInfo>& signal, std::optional<SignalInfo>& snapshot,
                     std::size_t& crashing, std::vector<ThreadState>& threads);

}  // namespace ehbt::core
