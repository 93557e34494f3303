// SPDX-License-Identifier: Apache-2.0
// Short texts for stop details. Only called when a walk stops, never per step.
#pragma once

#include <cstdint>
#include <string>

#include "ehbt/arch.hpp"
#include "ehbt/image.hpp"
#include "util/hex.hpp"

namespace ehbt::unwind {

using util::hex;
// "0x55d4a0001234 (libfoo.so+0x1234)", or just the address without a module.
std::string describe_pc(uint64_t pc, const Module* module);
// "rbx", "x29", "r15"; "reg 99" for numbers without a name.
std::string reg_name(Arch arch, uint16_t reg);
// "read of 8 bytes at 0x7ffd... failed".
std::string read_failed(uint64_t addr, unsigned size);

}  // namespace ehbt::unwind
