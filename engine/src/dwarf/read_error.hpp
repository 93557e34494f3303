// SPDX-License-Identifier: Apache-2.0
// Turns a byte-cursor error into a CFI error, translating offsets within a sub-span back to
// section offsets.
#pragma once

#include "dwarf/cfi.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::dwarf {

inline Error from_read_error(const util::ReadError& e, uint64_t span_offset = 0) {
  switch (e.code) {
    case util::ReadErrorCode::Truncated:
      return {ErrorCode::Truncated, span_offset + e.where};
    case util::ReadErrorCode::BadLeb128:
      return {ErrorCode::BadLeb128, span_offset + e.where};
    case util::ReadErrorCode::BadEncoding:
      return {ErrorCode::BadEncoding, span_offset + e.where};
    case util::ReadErrorCode::MemoryFault:
      break;
  }
  return {ErrorCode::MemoryFault, e.where};  // an address, not an offset
}

}  // namespace ehbt::dwarf
