// SPDX-License-Identifier: Apache-2.0
#include "support/unwind_fixtures.hpp"

namespace ehbt::test {

std::optional<ChainImage> build_chain(const std::string& prefix, const char* asm_text,
                                      std::string* why) {
  Toolchain tc{prefix};
  if (!tc.available()) {
    if (why) *why = tc.gcc() + " not installed";
    return std::nullopt;
  }
  auto built = build_shared_object(tc, "chain.s", asm_text, "", why);
  if (!built) return std::nullopt;
  auto image = Image::open(built->path);
  if (!image) {
    if (why) *why = "Image::open: " + image.error();
    return std::nullopt;
  }
  return ChainImage{*built, *image};
}

}  // namespace ehbt::test
