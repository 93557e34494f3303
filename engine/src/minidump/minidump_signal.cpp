// SPDX-License-Identifier: Apache-2.0
// The signal of a minidump's exception record, under the same rules as a core's NT_SIGINFO
// (core/siginfo.hpp): Breakpad and Crashpad record si_signo, si_code and the first word of
// siginfo's union (si_addr; for a signal a process sent, si_pid and si_uid share it).
#include "minidump/minidump_signal.hpp"

#include "core/siginfo.hpp"

namespace ehbt::minidump {

SignalReading signal_of(const ExceptionRecord& e, uint64_t pc, unsigned word) {
  SignalReading out;
  if (e.code == 0 || e.code > 64) return out;  // no signal (a Windows exception code is larger)
  // LLDB (16) writes the stop's signal number, flags 0 and the thread's pc as the address:
  // no siginfo at all. A real SI_USER record holds the sender's pid and uid there, which do
  // not make up the pc of the thread.
  if (e.flags == 0 && e.address == pc) {
    SignalInfo si;
    si.number = static_cast<int>(e.code);
    out.signal = si;
    out.number_only = true;
    return out;
  }
  core::SigInfoNote note;
  note.signo = static_cast<int>(e.code);
  note.code = static_cast<int32_t>(e.flags);
  note.addr = e.address;
  note.pid = static_cast<int32_t>(e.address & 0xffffffff);
  note.uid = static_cast<uint32_t>(e.address >> 32);
  SignalInfo si = core::signal_facts(note);
  // A 32-bit writer's address word holds si_pid only: the uid was not recorded.
  if (word == 4) si.sender.reset();
  out.signal = si;
  return out;
}

}  // namespace ehbt::minidump
