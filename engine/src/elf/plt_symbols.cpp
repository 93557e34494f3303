// SPDX-License-Identifier: Apache-2.0
// PLT stub symbols from .rela.plt / .rela.dyn (i386: .rel.plt / .rel.dyn) and the stub
// sections.
#include "elf/plt_symbols.hpp"

#include <elf.h>
#include <gelf.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/image_impl.hpp"

namespace ehbt::elf {
namespace {

struct Section {
  uint64_t addr = 0;
  std::span<const std::byte> bytes;
  bool present = false;
};

// Where relocations' symbol names come from: the symbol table a relocation section links to.
// Names are looked up only for the stubs that get a symbol, not for every relocation.
struct NameSource {
  Elf* e = nullptr;
  Elf_Data* syms = nullptr;
  std::size_t strndx = 0;
  std::string_view name(uint64_t symidx) const {
    GElf_Sym sym;
    if (syms == nullptr || symidx == 0 || symidx > INT32_MAX ||
        gelf_getsym(syms, static_cast<int>(symidx), &sym) == nullptr)
      return {};
    const char* n = elf_strptr(e, strndx, sym.st_name);
    return n != nullptr ? std::string_view(n) : std::string_view();
  }
};

struct Reloc {
  uint64_t offset;  // GOT slot (link-time)
  uint64_t symidx;  // 0: no symbol (IRELATIVE)
};

struct Relocs {
  NameSource names;
  std::vector<Reloc> entries;  // in table order
};

// The relocations of a SHT_RELA (or, on i386, SHT_REL) section, in table order.
Relocs read_relocs(Elf* e, Elf_Scn* scn, uint64_t max) {
  Relocs out;
  GElf_Shdr sh;
  if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL))
    return out;
  const bool rela = sh.sh_type == SHT_RELA;
  Elf_Data* data = elf_getdata(scn, nullptr);
  Elf_Scn* symscn = elf_getscn(e, sh.sh_link);
  GElf_Shdr symsh;
  if (data == nullptr || symscn == nullptr || gelf_getshdr(symscn, &symsh) == nullptr) return out;
  Elf_Data* syms = elf_getdata(symscn, nullptr);
  const std::size_t entsize = gelf_fsize(e, rela ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);
  if (syms == nullptr || entsize == 0) return out;
  out.names = NameSource{e, syms, symsh.sh_link};
  const uint64_t count = std::min<uint64_t>(data->d_size / entsize, max);
  out.entries.reserve(static_cast<std::size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t offset = 0, info = 0;
    if (rela) {
      GElf_Rela r;
      if (gelf_getrela(data, static_cast<int>(i), &r) == nullptr) break;
      offset = r.r_offset;
      info = r.r_info;
    } else {
      GElf_Rel r;
      if (gelf_getrel(data, static_cast<int>(i), &r) == nullptr) break;
      offset = r.r_offset;
      info = r.r_info;
    }
    // Stubs without a symbol (IRELATIVE) keep their place in the order, nameless.
    out.entries.push_back(Reloc{offset, GELF_R_SYM(info)});
  }
  return out;
}

void add_stub(SymbolSink& table, uint64_t addr, uint64_t size, const NameSource& names,
              uint64_t symidx) {
  if (symidx == 0) return;
  if (!table.wants(addr, size)) {
    table.skip();  // counted, but no name made for a query that cannot use it
    return;
  }
  const std::string_view name = names.name(symidx);
  if (name.empty()) return;
  std::string stub(name);
  stub += "@plt";
  table.add(addr, size, table.own(std::move(stub)), STB_LOCAL, STT_FUNC);
}

// A GOT slot and the relocation that names it.
struct Slot {
  uint64_t offset;
  uint64_t symidx;
  const NameSource* names;
};

// x86-64: every stub (lazy .plt entry, .plt.sec or .plt.got) holds `jmp *disp32(%rip)`
// (ff 25), possibly after endbr64 and a bnd prefix; the slot it reads names the function.
// i386 (`i386` true; `got_base` the address PIC code keeps in %ebx): `jmp *abs32` (ff 25) in
// position-dependent code, `jmp *disp32(%ebx)` (ff a3) in PIC.
std::size_t x86_stubs(const Section& s, const std::vector<Slot>& by_slot, SymbolSink& table,
                      uint64_t entry, bool i386, uint64_t got_base) {
  std::size_t added = 0;
  for (std::size_t off = 0; off + entry <= s.bytes.size() && !table.full(); off += entry) {
    for (std::size_t i = off; i + 6 <= off + entry; ++i) {
      if (s.bytes[i] != std::byte{0xff}) continue;
      const bool abs_or_rip = s.bytes[i + 1] == std::byte{0x25};
      const bool ebx_rel = i386 && s.bytes[i + 1] == std::byte{0xa3};
      if (!abs_or_rip && !ebx_rel) continue;
      int32_t disp = 0;
      for (int b = 0; b < 4; ++b) {
        disp |= static_cast<int32_t>(static_cast<uint32_t>(s.bytes[i + 2 + b]) << (8 * b));
      }
      uint64_t slot = s.addr + i + 6 + static_cast<int64_t>(disp);
      if (i386) {
        slot = (abs_or_rip ? static_cast<uint64_t>(static_cast<uint32_t>(disp))
                           : got_base + static_cast<int64_t>(disp)) &
               UINT32_MAX;
      }
      auto it = std::lower_bound(by_slot.begin(), by_slot.end(), slot,
                                 [](const Slot& a, uint64_t b) { return a.offset < b; });
      if (it != by_slot.end() && it->offset == slot) {
        add_stub(table, s.addr + off, entry, *it->names, it->symidx);
        ++added;
      }
      break;
    }
  }
  return added;
}

// aarch64 and s390x: a fixed-size header, then one stub per .rela.plt entry, in order.
std::size_t ordered_stubs(const Section& s, uint64_t header, const Relocs& all, SymbolSink& table) {
  const std::vector<Reloc>& relocs = all.entries;
  if (relocs.empty() || s.bytes.size() <= header) return 0;
  const uint64_t body = s.bytes.size() - header;
  // The stub size follows from the layout; a PLT that does not divide evenly is not one we
  // understand, and naming its stubs would be a guess.
  if (body % relocs.size() != 0) return 0;
  const uint64_t entry = body / relocs.size();
  if (entry < 8 || entry > 64) return 0;
  std::size_t added = 0;
  for (std::size_t i = 0; i < relocs.size() && !table.full(); ++i) {
    add_stub(table, s.addr + header + i * entry, entry, all.names, relocs[i].symidx);
    ++added;
  }
  return added;
}

}  // namespace

std::size_t add_plt_symbols(Elf* e, const Image& image, SymbolSink& table, const Limits& limits) {
  if (e == nullptr) return 0;
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) return 0;
  Section plt, plt_sec, plt_got;
  // i386 PIC stubs address their slots from _GLOBAL_OFFSET_TABLE_: the start of .got.plt, or
  // of .got when -z now merged the two.
  std::optional<uint64_t> got_plt, got;
  Relocs jump_slots, glob_dat;
  Elf_Scn* jump_slots_scn = nullptr;
  Elf_Scn* glob_dat_scn = nullptr;
  Elf_Scn* scn = nullptr;
  for (uint32_t n = 0; n < kMaxSections && (scn = elf_nextscn(e, scn)) != nullptr; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* cname = elf_strptr(e, shstrndx, sh.sh_name);
    if (cname == nullptr) continue;
    const std::string_view name(cname);
    Section* target = name == ".plt"       ? &plt
                      : name == ".plt.sec" ? &plt_sec
                      : name == ".plt.got" ? &plt_got
                                           : nullptr;
    if (target != nullptr && sh.sh_type == SHT_PROGBITS) {
      Elf_Data* d = elf_getdata(scn, nullptr);
      if (d != nullptr && d->d_buf != nullptr) {
        target->addr = sh.sh_addr;
        target->bytes = {static_cast<const std::byte*>(d->d_buf), d->d_size};
        target->present = true;
      }
    } else if (name == ".rela.plt" || name == ".rel.plt") {
      jump_slots_scn = scn;
    } else if ((name == ".rela.dyn" && image.arch() == Arch::X86_64) ||
               (name == ".rel.dyn" && image.arch() == Arch::I386)) {
      glob_dat_scn = scn;
    } else if (name == ".got.plt") {
      got_plt = sh.sh_addr;
    } else if (name == ".got") {
      got = sh.sh_addr;
    }
  }
  // PLT stubs are the last symbol source, so a sink that wants no address of any PLT
  // section (a one-address query elsewhere) loses nothing when the relocations, most of the
  // cost here, are not read and the stubs not even counted.
  const auto wanted = [&table](const Section& sec) {
    return sec.present && table.wants(sec.addr, sec.bytes.size());
  };
  if (!wanted(plt) && !wanted(plt_sec) && !wanted(plt_got)) return 0;
  if (jump_slots_scn != nullptr) jump_slots = read_relocs(e, jump_slots_scn, limits.max_symbols);
  if (glob_dat_scn != nullptr) glob_dat = read_relocs(e, glob_dat_scn, limits.max_symbols);
  switch (image.arch()) {
    case Arch::X86_64:
    case Arch::I386: {
      const bool i386 = image.arch() == Arch::I386;
      const uint64_t got_base = got_plt.value_or(got.value_or(0));
      // Slot -> naming relocation; for a slot both name, .rela.plt's (listed last) wins.
      std::vector<Slot> by_slot;
      for (const Relocs* list : {&glob_dat, &jump_slots}) {
        for (const Reloc& r : list->entries) {
          if (r.symidx != 0) by_slot.push_back(Slot{r.offset, r.symidx, &list->names});
        }
      }
      std::stable_sort(by_slot.begin(), by_slot.end(),
                       [](const Slot& a, const Slot& b) { return a.offset < b.offset; });
      // Keep the last of each run of equal slots.
      std::vector<Slot> unique;
      unique.reserve(by_slot.size());
      for (std::size_t i = 0; i < by_slot.size(); ++i) {
        if (i + 1 < by_slot.size() && by_slot[i + 1].offset == by_slot[i].offset) continue;
        unique.push_back(by_slot[i]);
      }
      by_slot = std::move(unique);
      std::size_t added = 0;
      // The lazy .plt holds the jumps unless .plt.sec (IBT) took them over; PLT0's jump
      // reads a GOT slot no relocation names, so it stays nameless.
      if (plt_sec.present) {
        added += x86_stubs(plt_sec, by_slot, table, 16, i386, got_base);
      } else if (plt.present) {
        added += x86_stubs(plt, by_slot, table, 16, i386, got_base);
      }
      if (plt_got.present) {
        // 8-byte stubs, 16 with IBT (endbr64 / endbr32 first).
        const bool ibt = plt_got.bytes.size() >= 4 && plt_got.bytes[0] == std::byte{0xf3} &&
                         plt_got.bytes[1] == std::byte{0x0f} && plt_got.bytes[2] == std::byte{0x1e};
        added += x86_stubs(plt_got, by_slot, table, ibt ? 16 : 8, i386, got_base);
      }
      return added;
    }
    case Arch::AArch64:
      return plt.present ? ordered_stubs(plt, 32, jump_slots, table) : 0;
    case Arch::S390x:
      return plt.present ? ordered_stubs(plt, 32, jump_slots, table) : 0;
    default:
      return 0;
  }
}

}  // namespace ehbt::elf
