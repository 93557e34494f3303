// SPDX-License-Identifier: Apache-2.0
// Is there a call instruction just before a return address? The question a stack scan asks
// of every candidate word (and the proof of every frame found without a table), decoded from the
// target's code bytes: x86-64 and i386 `call rel32` and `call r/m` (ModRM /2), aarch64 `bl`/`blr`
// (and the pointer-authenticating `blraa`/`blrab` family), s390x `brasl` and `basr` (also
// `bras`, `bas`). A direct call also gives its target, to check against the function the
// scan came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "ehbt/arch.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::arch {

struct CallSite {
  uint64_t at = 0;                 // address of the call instruction
  std::optional<uint64_t> target;  // a direct call's destination
};

// The call instruction that ends right at `return_address`, or nothing (unreadable bytes,
// no call there). Reads at most 16 bytes below the address.
std::optional<CallSite> call_before(Arch arch, Memory& mem, uint64_t return_address);

// The memory slot a call read its destination from, where the instruction alone says where it
// is: x86-64 `call *disp32(%rip)` (ff 15), how -fno-plt code and Rust's PIE code call through
// the GOT. Nothing for any other call (`code` holds the call's bytes).
std::optional<uint64_t> call_slot(Arch arch, Memory& code, const CallSite& call);

// The destination of an unconditional direct jump (a tail call) starting at `code[off]`, the
// instruction's address being `addr`: x86 `jmp rel32`/`jmp rel8`, aarch64 `b`, s390x
// `brcl 15`/`j`. Instruction alignment: jump_alignment(arch) bytes.
std::optional<uint64_t> direct_jump(Arch arch, std::span<const std::byte> code, std::size_t off,
                                    uint64_t addr);
unsigned jump_alignment(Arch arch);
// Whether `code[off]` starts a jump through a register (x86 `jmp *%reg`, aarch64 `br xN`,
// s390x `br %rN` other than the return `br %r14`): a tail jump whose destination the code
// does not say.
bool register_jump(Arch arch, std::span<const std::byte> code, std::size_t off);
// Whether `code[off]` starts a jump whose destination is read at run time: through a register,
// or (x86) through memory (`jmp *0x40(%rbx)`, ff /4 with any ModRM mode: how HotSpot's vtable
// stubs dispatch).
bool indirect_jump(Arch arch, std::span<const std::byte> code, std::size_t off);

// Where a stack scan that found a return address in `slot` puts the caller: its stack
// pointer and the CFA of the frame scanned from.
struct ScanLayout {
  uint64_t caller_sp = 0;
  uint64_t cfa = 0;
};
ScanLayout scan_layout(Arch arch, uint64_t slot);

}  // namespace ehbt::arch
