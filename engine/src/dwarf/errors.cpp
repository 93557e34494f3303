// SPDX-License-Identifier: Apache-2.0
// Names of CFI error codes and the stop reason each one ends a walk with.
#include "dwarf/cfi.hpp"

namespace ehbt::dwarf {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::Truncated:
      return "truncated";
    case ErrorCode::BadLength:
      return "bad_length";
    case ErrorCode::BadLeb128:
      return "bad_leb128";
    case ErrorCode::BadEncoding:
      return "bad_encoding";
    case ErrorCode::BadCie:
      return "bad_cie";
    case ErrorCode::BadVersion:
      return "bad_version";
    case ErrorCode::BadAugmentation:
      return "bad_augmentation";
    case ErrorCode::BadOpcode:
      return "bad_opcode";
    case ErrorCode::BadRegister:
      return "bad_register";
    case ErrorCode::BadState:
      return "bad_state";
    case ErrorCode::Unsorted:
      return "unsorted";
    case ErrorCode::NotCovered:
      return "not_covered";
    case ErrorCode::NoEntry:
      return "no_entry";
    case ErrorCode::Unsupported:
      return "unsupported";
    case ErrorCode::MemoryFault:
      return "memory_fault";
    case ErrorCode::DivideByZero:
      return "divide_by_zero";
    case ErrorCode::StackUnderflow:
      return "stack_underflow";
    case ErrorCode::LimitCfiInstructions:
      return "limit_cfi_instructions";
    case ErrorCode::LimitRememberDepth:
      return "limit_remember_depth";
    case ErrorCode::LimitRules:
      return "limit_rules";
    case ErrorCode::LimitExprSteps:
      return "limit_expr_steps";
    case ErrorCode::LimitExprStack:
      return "limit_expr_stack";
    case ErrorCode::LimitExprBytes:
      return "limit_expr_bytes";
    case ErrorCode::LimitRecordBytes:
      return "limit_record_bytes";
    case ErrorCode::LimitIndexEntries:
      return "limit_index_entries";
    case ErrorCode::LimitSearchProbes:
      return "limit_search_probes";
  }
  return "unknown";
}

StopReason to_stop_reason(ErrorCode code) {
  switch (code) {
    case ErrorCode::MemoryFault:
      return StopReason::MemoryFault;
    case ErrorCode::Unsupported:
      return StopReason::Unsupported;
    case ErrorCode::NoEntry:
    case ErrorCode::NotCovered:
      return StopReason::NoUnwindInfo;
    default:
      return StopReason::BadUnwindInfo;
  }
}

}  // namespace ehbt::dwarf
