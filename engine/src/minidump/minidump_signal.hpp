// SPDX-License-Identifier: Apache-2.0
// What a minidump's exception record says of the signal, and what it does not.
#pragma once

#include <cstdint>
#include <optional>

#include "ehbt/core.hpp"
#include "minidump/minidump_file.hpp"

namespace ehbt::minidump {

struct SignalReading {
  std::optional<SignalInfo> signal;
  bool number_only = false;  // the writer recorded the number alone (no code, no address)
};

// `pc` is the crashing thread's pc; `word` the target's address size.
SignalReading signal_of(const ExceptionRecord& e, uint64_t pc, unsigned word);

}  // namespace ehbt::minidump
