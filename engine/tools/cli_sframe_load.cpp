// SPDX-License-Identifier: Apache-2.0
// Opening an ELF file's SFrame section for the `ehbt sframe` subcommands.
#include "cli_sframe_load.hpp"

namespace ehbt::cli {

Expected<LoadedSframe, std::string> load_sframe(const std::string& file, const Limits& limits) {
  auto image = Image::open(file, limits);
  if (!image) return unexpected(image.error());
  LoadedSframe loaded;
  loaded.image = std::move(*image);
  loaded.section = loaded.image->sframe();
  if (loaded.section.empty()) return unexpected(std::string("no .sframe section"));
  auto table = sframe::Table::parse(loaded.section.bytes, loaded.section.addr, limits);
  if (!table)
    return unexpected(".sframe: " + sframe::describe(table.error(), loaded.section.bytes));
  loaded.table.emplace(std::move(*table));
  return loaded;
}

}  // namespace ehbt::cli
