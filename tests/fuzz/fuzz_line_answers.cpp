// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: files of persistent line answers (lines/answer_file.hpp) and their records
// (lines/answer_records.hpp), as a damaged or hostile cache directory could hold them. The
// input is a whole file; it is also tried as one record's payload. Nothing may crash or read
// out of bounds, and what is accepted must be canonical: a header or record read back and
// written again gives the same bytes, so that nothing the reader accepts means two things.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "lines/answer_file.hpp"
#include "lines/answer_records.hpp"

namespace {

constexpr uint32_t kMaxInlined = 64;

void check_record(std::string_view payload) {
  uint64_t pc = 0, first = 0;
  std::optional<ehbt::SourceInfo> info;
  if (!ehbt::lines::read_answer(payload, kMaxInlined, pc, info)) return;
  if (!ehbt::lines::answer_pc(payload, first) || first != pc) std::abort();
  std::string again;
  if (!ehbt::lines::append_answer(again, pc, info, kMaxInlined) || again != payload) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehbt::lines;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_record(bytes);
  const AnswerFileView view = parse_answer_file(bytes);
  if (!view.header) return 0;
  const std::string start = answer_file_start(*view.header);
  const std::size_t first = view.records.empty() ? view.good_end : view.records.front().at;
  if (bytes.substr(0, first) != start) std::abort();
  std::size_t at = first;
  for (const RecordSpan& r : view.records) {
    if (r.at != at || r.size < kRecordFrameBytes || r.size > size - r.at) std::abort();
    at += r.size;
    if (auto payload = record_payload(bytes, r)) {
      check_record(*payload);
      if (framed_record(*payload) != bytes.substr(r.at, r.size)) std::abort();
    }
  }
  if (at != view.good_end || (view.good_end < size) != view.damaged) std::abort();
  return 0;
}
