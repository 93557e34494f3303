// SPDX-License-Identifier: Apache-2.0
// Stage (c) of a step: a CFI row + the current frame's registers + target memory -> the CFA
// and the caller's registers. Reads only what the row saves.
#pragma once

#include <cstdint>

#include "arch/arch_ops.hpp"
#include "dwarf/cfi.hpp"
#include "ehbt/expected.hpp"
#include "ehbt/limits.hpp"
#include "ehbt/memory.hpp"
#include "ehbt/registers.hpp"
#include "ehbt/unwinder.hpp"

namespace ehbt::unwind {

// On success returns the CFA and fills `caller`: callee-saved registers without a rule keep
// their value, other registers without a rule are unknown, SP = CFA - cfa_sp_offset unless a
// rule sets it, pc = the return address (pointer authentication removed). A saved register
// that cannot be read is left unknown; only the CFA and the return address are fatal.
// Stops: Outermost (return address undefined), MemoryFault (return address unreadable),
// BadUnwindInfo (no CFA, CFA register unknown, CFA zero or misaligned), and what an
// expression error maps to.
Expected<uint64_t, StopInfo> apply_row(const arch::ArchOps& ops, const dwarf::Row& row,
                                       const RegisterSet& regs, Memory& mem, const Limits& limits,
                                       RegisterSet& caller);

}  // namespace ehbt::unwind
