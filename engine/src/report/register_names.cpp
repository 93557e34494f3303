// SPDX-License-Identifier: Apache-2.0
// Register names as the reports and the debugger front ends use them. The names themselves
// are per-architecture knowledge and live once, in engine/src/arch/ (ArchOps::register_name
// and friends); this file only gives them the report's spelling of a nameless number.
#include "arch/arch_ops.hpp"
#include "ehbt/report.hpp"

namespace ehbt::report {

std::string register_name(Arch arch, uint16_t reg) {
  std::string name = arch::arch_ops(arch).register_name(reg);
  return name.empty() ? "reg" + std::to_string(reg) : name;
}

GeneralRegisters general_registers(Arch arch) {
  const arch::ArchOps::DebuggerRegisters d = arch::arch_ops(arch).debugger_registers();
  return {d.count, d.pc, d.sp};
}

std::span<const std::string_view> register_aliases(Arch arch, std::string_view name) {
  return arch::arch_ops(arch).register_aliases(name);
}

}  // namespace ehbt::report
