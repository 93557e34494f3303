// SPDX-License-Identifier: Apache-2.0
// The walk follows what Go's runtime does to print a traceback (runtime/traceback.go, the
// inline tree in runtime/symtab.go; 1.20+ runtime/symtabinl.go): at a pc, PCDATA_InlTreeIndex
// says which inline tree entry the instruction belongs to (-1: the function's own code); the
// pc's file and line (pcfile, pcln) are that innermost call's; the entry names the inlined
// function and gives parentPc, an instruction of its caller whose position is the call site.
// Repeating at entry + parentPc until the index is -1 yields the chain, and the last position
// is the one in the physical function.
#include "elf/go_lines.hpp"

#include <array>

#include "elf/go_image.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::elf {
namespace {

// cmd/internal/objabi/funcdata.go (the same since Go 1.16).
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;

// One inline tree entry (runtime.inlinedCall), at the function's FUNCDATA_InlTree (plus
// moduledata.gofunc from Go 1.18). Go 1.16-1.19, 20 bytes: parent int16, funcID,
// a pad byte, file, line, func_ (name offset), parentPc (int32 each). Go 1.20+, 16 bytes:
// funcID, 3 pad bytes, nameOff, parentPc, startLine.
struct InlineEntry {
  int64_t name_offset = 0;
  int64_t parent_pc = 0;
};

std::optional<InlineEntry> read_entry(const GoPclntab& table, const GoInlineTrees& trees,
                                      uint64_t tree, int64_t index) {
  const bool go120 = table.version() >= GoPclntab::Version::Go120;
  const uint64_t size = go120 ? 16 : 20;
  std::array<std::byte, 20> raw{};
  const std::span<std::byte> bytes(raw.data(), size);
  const uint64_t at = trees.gofunc + tree + static_cast<uint64_t>(index) * size;
  if (trees.read(at, bytes) != size) return std::nullopt;
  util::ByteReader r(bytes, table.big_endian());
  int64_t name = 0, parent_pc = 0;
  if (!r.seek(go120 ? 4 : 12) || !r.read_sint(4, name) || !r.read_sint(4, parent_pc)) {
    return std::nullopt;
  }
  return InlineEntry{name, parent_pc};
}

// The pc's own position: its function's file and line tables at pc.
std::optional<SourcePosition> position_at(const GoPclntab& table, const GoPclntab::Func& f,
                                          const GoPclntab::LineTables& lines, uint64_t pc,
                                          const Limits& limits) {
  auto file_index = table.pc_value(f, lines.pcfile, pc, limits.max_go_pcvalue_steps);
  auto line = table.pc_value(f, lines.pcln, pc, limits.max_go_pcvalue_steps);
  if (!file_index || !line || *line <= 0 || *line > INT32_MAX) return std::nullopt;
  auto file = table.file_name(lines.cu_offset, *file_index);
  if (!file) return std::nullopt;
  return SourcePosition{std::string(*file), static_cast<uint32_t>(*line), 0};
}

}  // namespace

std::optional<SourceInfo> go_source_info(const GoPclntab& table,
                                         const std::optional<GoInlineTrees>& trees,
                                         uint64_t link_pc, const Limits& limits) {
  auto f = table.find(link_pc, limits.max_search_probes);
  if (!f) return std::nullopt;
  auto lines = table.line_tables(*f);
  if (!lines) return std::nullopt;
  // 0: no index table, the function has nothing inlined.
  const std::optional<uint32_t> index_table = table.pcdata_table(*f, kPcdataInlTreeIndex);
  if (!index_table) return std::nullopt;
  const std::optional<uint64_t> tree = table.funcdata(*f, kFuncdataInlTree);

  SourceInfo info;
  uint64_t pc = link_pc;
  for (uint32_t depth = 0; depth <= limits.max_go_inline_depth; ++depth) {
    auto at = position_at(table, *f, *lines, pc, limits);
    if (!at) return std::nullopt;
    std::optional<int64_t> index = -1;
    if (*index_table != 0) {
      // A table that does not cover a pc its line tables cover is malformed.
      index = table.pc_value(*f, *index_table, pc, limits.max_go_pcvalue_steps);
      if (!index) return std::nullopt;
    }
    if (*index < 0) {
      info.location = std::move(at);
      return info;
    }
    // Inlined code whose tree cannot be read: the position is an inlined function's, not the
    // physical function's, and who called whom is unknown. Say nothing rather than mislead.
    if (!trees || !trees->read || !tree) return std::nullopt;
    auto entry = read_entry(table, *trees, *tree, *index);
    if (!entry || entry->parent_pc < 0) return std::nullopt;
    auto name = table.name_at(entry->name_offset);
    if (!name) return std::nullopt;
    info.inlined.push_back(InlinedCall{std::string(*name), std::move(at)});
    pc = f->entry + static_cast<uint64_t>(entry->parent_pc);
    if (pc >= f->end) return std::nullopt;
  }
  return std::nullopt;  // deeper than the cap: a loop, or a tree this reader does not trust
}

std::optional<SourceInfo> go_source_info(const Image& image, uint64_t link_pc,
                                         const Limits& limits) {
  const GoPclntab* table = go_pclntab(image);
  if (table == nullptr) return std::nullopt;
  std::optional<GoInlineTrees> trees;
  if (auto gofunc = go_func_data(image)) {
    trees = GoInlineTrees{*gofunc, [&image](uint64_t addr, std::span<std::byte> out) {
                            return image.read(addr, out);
                          }};
  }
  return go_source_info(*table, trees, link_pc, limits);
}

}  // namespace ehbt::elf
