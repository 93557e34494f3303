// SPDX-License-Identifier: Apache-2.0
// The ehbt-backtrace/1 vocabulary: stop reasons and frame sources. The engine owns these names
// (docs/formats.md lists them); the report only forwards them, and lists them for front ends.
#include <array>

#include "ehbt/report.hpp"

namespace ehbt::report {

std::string_view stop_reason_name(StopReason reason) {
  return to_string(reason);
}

std::string_view frame_source_name(FrameSource source) {
  return to_string(source);
}

std::span<const StopReason> all_stop_reasons() {
  static constexpr std::array kAll{
      StopReason::Outermost,    StopReason::MaxFrames,   StopReason::NoModule,
      StopReason::NoUnwindInfo, StopReason::MemoryFault, StopReason::BadUnwindInfo,
      StopReason::Unsupported,  StopReason::NoProgress,  StopReason::BadPc};
  return kAll;
}

std::span<const FrameSource> all_frame_sources() {
  static constexpr std::array kAll{FrameSource::Context,    FrameSource::EhFrame,
                                   FrameSource::DebugFrame, FrameSource::SFrame,
                                   FrameSource::Signal,     FrameSource::FramePointer,
                                   FrameSource::Scan,       FrameSource::GoPclntab};
  return kAll;
}

}  // namespace ehbt::report
