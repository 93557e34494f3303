// SPDX-License-Identifier: Apache-2.0
// Rust's legacy symbol mangling, rustc's default: an Itanium-shaped nested name (`_ZN`, then
// length-prefixed elements, then `E`) whose last element is `h` and 16 hex digits (a hash of
// the crate and the item), with the characters an Itanium identifier cannot hold escaped
// (`$LT$` for '<', `$u7b$` for '{', `..` for "::"). The C++ demangler joins the elements but
// leaves the escapes as they are and gives up on LLVM's `.llvm.N` suffix, so a Rust stack
// read `impls::_$LT$impl$u20$...` or stayed mangled. This reads them as binutils' c++filt
// does: the escapes decoded, the hash element kept, a suffix after the name left out (the
// triage signature drops the hash too).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ehbt::elf {

// The demangled name ("std::rt::lang_start::{{closure}}::h2bf7da97b53bdb8d"), or nothing when
// `mangled` is not a well-formed legacy Rust symbol (then it is C++'s or nobody's).
std::optional<std::string> demangle_rust_legacy(std::string_view mangled);

}  // namespace ehbt::elf
