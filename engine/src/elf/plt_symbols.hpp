// SPDX-License-Identifier: Apache-2.0
// Names for PLT stubs, as GDB shows them (`raise@plt`): no symbol table holds them, but the
// PLT relocations say which function each stub jumps to. A crash or a stop inside a stub
// otherwise has no name at all.
#pragma once

#include <libelf.h>

#include "ehbt/image.hpp"
#include "elf/symbol_table.hpp"

namespace ehbt::elf {

// Adds NAME@plt symbols for the stubs of .plt, .plt.sec and .plt.got (x86-64: each stub's
// indirect jump decoded to its GOT slot, matched to the relocation of that slot; aarch64 and
// s390x: stubs in .rela.plt order after the PLT header). Returns how many it added.
std::size_t add_plt_symbols(Elf* e, const Image& image, SymbolSink& table, const Limits& limits);

}  // namespace ehbt::elf
