// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a symbol name from a module's symbol table or DWARF, as elf::demangle
// reads it (the Rust legacy reader first, then the C++ ABI's demangler). Nothing may crash,
// hang or read out of bounds. A name the Rust reader takes gives a name at most twice as long
// as its input, a bound on what it allocates: an element costs at least one length digit and
// gains at most the "::" before it; escapes only shrink.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "elf/rust_demangle.hpp"
#include "elf/symbol_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  if (auto rust = ehbt::elf::demangle_rust_legacy(name)) {
    if (rust->size() > 2 * name.size()) std::abort();
  }
  (void)ehbt::elf::demangle(name);
  return 0;
}
