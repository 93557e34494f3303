// SPDX-License-Identifier: Apache-2.0
// Loads an image's function symbols on first use: its own .symtab, else the .symtab of its
// separate debug file (the one the module resolver attached -- see core/debug_files.hpp --
// or, for an image opened on its own, one found by build-id as
// <dir>/<first two hex digits>/<remaining digits>.debug under each directory of the
// EHBT_DEBUG_DIR environment variable (':'-separated) and then /usr/lib/debug/.build-id),
// else MiniDebugInfo's .symtab together with .dynsym (MiniDebugInfo holds only what .dynsym
// lacks), and then Go's function table (.gopclntab) for what those leave unnamed. NAME@plt
// stubs are added in every case, as GDB shows them.
#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstdlib>
#include <string_view>

#include "elf/go_image.hpp"
#include "elf/image_impl.hpp"
#include "elf/minidebuginfo.hpp"
#include "elf/plt_symbols.hpp"

namespace ehbt {
namespace {

constexpr std::string_view kSystemDebugDir = "/usr/lib/debug/.build-id";

// Adds the function symbols of the first section of `type` in `e`. True when it added any.
bool add_symbols(Elf* e, uint32_t type, const Image& image, elf::SymbolTable& table,
                 const Limits& limits) {
  if (e == nullptr) return false;
  // Raw entries examined per table: symbol tables hold many non-function entries.
  const uint64_t max_entries = uint64_t{limits.max_symbols} * 4 + 16;
  Elf_Scn* scn = nullptr;
  for (uint32_t n = 0; n < elf::kMaxSections && (scn = elf_nextscn(e, scn)) != nullptr; ++n) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    const std::size_t entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
    if (data == nullptr || entsize == 0) return false;
    const uint64_t count = data->d_size / entsize;
    // Most entries of a real table are functions; the string table bounds the names.
    GElf_Shdr strtab;
    Elf_Scn* str_scn = elf_getscn(e, sh.sh_link);
    const uint64_t name_bytes =
        str_scn != nullptr && gelf_getshdr(str_scn, &strtab) != nullptr ? strtab.sh_size : 0;
    table.reserve(std::min<uint64_t>(count, max_entries), name_bytes);
    std::size_t added = 0;
    // Entry 0 is the reserved null symbol.
    for (uint64_t i = 1; i < count && i < max_entries && !table.full(); ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
      const unsigned st_type = GELF_ST_TYPE(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const bool func = st_type == STT_FUNC || st_type == STT_GNU_IFUNC;
      const bool code_label =
          st_type == STT_NOTYPE && sym.st_size > 0 && image.is_executable(sym.st_value);
      if (!func && !code_label) continue;
      const char* name = elf_strptr(e, sh.sh_link, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      if (table.add(sym.st_value, sym.st_size, name, GELF_ST_BIND(sym.st_info),
                    static_cast<uint8_t>(st_type)))
        ++added;
    }
    return added > 0;
  }
  return false;
}

bool is_hex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Opens the separate debug file for `build_id`, or returns null.
std::shared_ptr<Image> open_debug_file(const std::string& build_id, const Limits& limits) {
  if (build_id.size() < 4 || !is_hex(build_id)) return nullptr;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EHBT_DEBUG_DIR"); env != nullptr) {
    std::string_view rest(env);
    // Bounded by the variable's length: each step consumes at least one character.
    while (!rest.empty()) {
      std::size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  dirs.emplace_back(kSystemDebugDir);
  const std::string tail = build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  for (const std::string& dir : dirs) {
    auto img = Image::open(dir + "/" + tail, limits);
    if (!img) continue;
    // A debug file for another build would attach wrong names.
    if ((*img)->build_id() != build_id) continue;
    ImageLoader::impl(**img).allow_debug_file = false;
    return *img;
  }
  return nullptr;
}

}  // namespace

void ImageLoader::load_symbols(const Image& image) {
  Image::Impl& im = *image.impl_;
  elf::SymbolTable table(im.limits.max_symbols);
  bool found = add_symbols(im.elf.elf, SHT_SYMTAB, image, table, im.limits);
  if (!found && im.allow_debug_file) {
    std::shared_ptr<const Image> dbg = image.debug_file();
    if (!dbg && !image.build_id().empty()) dbg = open_debug_file(image.build_id(), im.limits);
    if (dbg) found = add_symbols(dbg->impl_->elf.elf, SHT_SYMTAB, image, table, im.limits);
  }
  if (!found) {
    if (auto mini = elf::open_minidebuginfo(im.gnu_debugdata, im.limits)) {
      add_symbols(mini->impl_->elf.elf, SHT_SYMTAB, image, table, im.limits);
    }
    add_symbols(im.elf.elf, SHT_DYNSYM, image, table, im.limits);
    elf::add_go_symbols(image, table, im.limits);
  }
  elf::add_plt_symbols(im.elf.elf, image, table, im.limits);
  table.finish();
  im.symbols = std::move(table);
}

}  // namespace ehbt
