// SPDX-License-Identifier: Apache-2.0
// Names of SFrame error codes (for messages, `ehbt sframe dump --json` and tests).
#include "sframe/format.hpp"
#include "sframe/sframe.hpp"
#include "util/hex.hpp"

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

std::string describe(const Error& e, std::span<const std::byte> section) {
  if (e.code == ErrorCode::BadVersion && section.size() > fmt::kOffVersion) {
    const unsigned version = std::to_integer<unsigned>(section[fmt::kOffVersion]);
    return "SFrame version " + std::to_string(version) + " is not supported (only 2 and 3)";
  }
  return std::string(to_string(e.code)) + " at section offset " + util::hex(e.where);
}

}  // namespace ehbt::sframe
