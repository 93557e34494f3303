// SPDX-License-Identifier: Apache-2.0
// The one proof every frame found without an unwind table must pass (the frame-pointer chain,
// leaf inference, the stack scan, the function-entry rule of a PLT stub or a bad call): a
// heuristic's caller is a frame only when
//   1. its pc is a return address: the instruction before it decodes as a call (code bytes
//      from target memory, else the module's file; bytes nobody can read prove nothing);
//   2. a direct call there leads to the callee: to its function's start (when known), to a
//      PLT stub, or to a function that reaches it by a chain of direct tail jumps of at most
//      Limits::max_tail_jumps links (a function on the way that jumps through a register may
//      reach anything: it proves nothing wrong). Where nothing says where the callee's
//      function starts (no symbol, no table: musl's code in a stripped static binary), the
//      call's target is that start: it lies in the callee's module, at or below the callee's
//      pc, less than Limits::max_function_bytes below it, and no function this walk knows to
//      start somewhere (known_starts.hpp: the targets of the direct calls that proved its
//      earlier frames) lies above the target and at or below the callee's pc (a stale return
//      address of an earlier call, to some other function, fails that). A call through a
//      GOT slot (x86-64 `call *disp(%rip)`, arch::call_slot) counts as a direct call to the
//      slot's value in target memory, where that value proves it (it never disproves: the slot
//      may have changed since). Any other call through a register or memory proves nothing
//      there (ProofFailure::IndirectCall): nothing ties it to the callee, and such a word is as
//      likely a stale return address of a call into a callee's callee (fwrite's call through
//      its FILE's jump table, left under abort's frame); the strategies then ask the frame
//      above it (step_context.cpp: proven_by_the_next_frame), except the frame-pointer chain,
//      whose frame record ties the word to the frame (disprove's from_record). Only where the
//      callee is in no module (JIT code, whose callers call it through a register) is it taken;
//   3. its CFA is not below the callee's stack pointer, lies in the same stack mapping
//      (Memory::region_of of the callee's sp, where the memory knows its mappings), and the
//      word below it is memory the walk can read (a caller's frame is never below its
//      callee's nor on another stack; the walk's own check that CFAs increase then applies as
//      for every frame).
// Table frames never come here: the validator costs nothing on a walk the tables cover.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "unwind/scan_step.hpp"

namespace ehbt::unwind {

// Which check a candidate failed.
enum class ProofFailure : uint8_t {
  CodeUnreadable,  // the bytes before the caller pc are in no memory and no file
  NoCallBefore,    // no call instruction ends at the caller pc
  WrongTarget,     // a direct call to a function that does not lead to the callee
  IndirectCall,    // a call through a register, to a callee whose start nothing says
  StackOrder,      // the caller's CFA is below the callee's sp, in another mapping, or not
                   // readable stack
};

struct Disproof {
  ProofFailure failure;
  std::string detail;  // names the addresses and the check, for the stop detail
};

// The callee: the frame stepped from, its stack pointer, the pc its function is looked up at
// and, when known, its function's first instruction.
struct Callee {
  uint64_t sp = 0;
  uint64_t lookup_pc = 0;
  std::optional<uint64_t> function_start;
};

// Whether `ra` is the first instruction of a function that a runtime plants as a return
// address, so that a callee "returns" into it though nothing called it: V8's deoptimizer sets
// the return address of the interpreter frames it materialises to
// Builtins_InterpreterEnterAtNextBytecode / ...AtBytecode (older V8:
// InterpreterEnterBytecodeAdvance / ...Dispatch), and glibc's makecontext plants
// __start_context. Only these named functions, at their exact start: a function's address on
// the stack is otherwise a pointer, not a frame.
bool is_planted_return(const ScanContext& ctx, uint64_t ra);

// Whether a call instruction ends at `ra` (code from target memory, else the module's file);
// nothing when those bytes cannot be read.
std::optional<bool> follows_a_call(const ScanContext& ctx, uint64_t ra);

// Check 3 alone, for a caller pc that no call pushed but something planted where a return
// address goes (a sigreturn trampoline the kernel planted, the faulting pc Go's signal handler
// pushes for runtime.sigpanic, runtime.goexit planted by Go's scheduler): nothing when the
// caller's CFA lies on the callee's stack, else why not.
std::optional<Disproof> disprove_stack(const ScanContext& ctx, const Callee& callee, uint64_t cfa);

// Nothing when the candidate (caller pc `ra`, caller CFA `cfa`) is proven; else which check
// failed and why. `proving_target`, when given, is set to the target of the direct call that
// proved it (0 for a call through a register): a function starts there (known_starts.hpp).
std::optional<Disproof> disprove_caller(const ScanContext& ctx, const Callee& callee, uint64_t ra,
                                        uint64_t cfa, uint64_t* proving_target = nullptr);

}  // namespace ehbt::unwind
