// SPDX-License-Identifier: Apache-2.0
// Names of SFrame error codes (for messages, `ehbt sframe dump --json` and tests).
#include "sframe/sframe.hpp"

namespace ehbt::sframe {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::Truncated:
      return "truncated";
    case ErrorCode::BadMagic:
      return "bad_magic";
    case ErrorCode::BadVersion:
      return "bad_version";
    case ErrorCode::BadAbi:
      return "bad_abi";
    case ErrorCode::BadHeader:
      return "bad_header";
    case ErrorCode::Unsorted:
      return "unsorted";
    case ErrorCode::BadFde:
      return "bad_fde";
    case ErrorCode::BadFre:
      return "bad_fre";
    case ErrorCode::NotCovered:
      return "not_covered";
    case ErrorCode::Unsupported:
      return "unsupported";
    case ErrorCode::Limit:
      return "limit";
  }
  return "unknown";
}

}  // namespace ehbt::sframe
