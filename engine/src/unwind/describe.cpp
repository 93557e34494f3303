// SPDX-License-Identifier: Apache-2.0
#include "unwind/describe.hpp"

#include <string_view>

#include "arch/arch_ops.hpp"

namespace ehbt::unwind {

std::string describe_pc(uint64_t pc, const Module* module) {
  std::string out = hex(pc);
  if (module == nullptr) return out;
  std::string_view name = module->path;
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name.empty()) name = "?";
  out += " (";
  out += name;
  out += "+";
  out += hex(module->to_link(pc));
  out += ")";
  return out;
}

std::string reg_name(Arch arch, uint16_t reg) {
  return arch::arch_ops(arch).reg_name(reg);
}

std::string read_failed(uint64_t addr, unsigned size) {
  return "read of " + std::to_string(size) + " bytes at " + hex(addr) + " failed";
}

}  // namespace ehbt::unwind
