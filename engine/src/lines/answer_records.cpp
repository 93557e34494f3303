// SPDX-License-Identifier: Apache-2.0
// Line answers to bytes and back (see answer_records.hpp).
#include "lines/answer_records.hpp"

#include <span>

namespace ehbt::lines {
namespace {

bool put_checked(std::string& out, const std::string& s) {
  if (s.size() > kMaxRecordString) return false;
  put_string(out, s);
  return true;
}

bool put_position(std::string& out, const std::optional<SourcePosition>& p) {
  put_le(out, p ? 1 : 0, 1);
  if (!p) return true;
  if (!put_checked(out, p->file)) return false;
  put_le(out, p->line, 4);
  put_le(out, p->column, 4);
  return true;
}

bool get_position(util::ByteReader& in, std::optional<SourcePosition>& p) {
  uint64_t present = 0;
  if (!in.read_uint(1, present) || present > 1) return false;
  p.reset();
  if (present == 0) return true;
  SourcePosition got;
  uint64_t line = 0, column = 0;
  if (!get_string(in, got.file) || !in.read_uint(4, line) || !in.read_uint(4, column)) {
    return false;
  }
  got.line = static_cast<uint32_t>(line);
  got.column = static_cast<uint32_t>(column);
  p = std::move(got);
  return true;
}

}  // namespace

void put_le(std::string& out, uint64_t v, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_string(std::string& out, std::string_view s) {
  put_le(out, s.size(), 4);
  out += s;
}

bool get_string(util::ByteReader& in, std::string& s) {
  uint64_t n = 0;
  if (!in.read_uint(4, n) || n > kMaxRecordString || n > in.remaining()) return false;
  const auto* p = reinterpret_cast<const char*>(in.bytes().data() + in.offset());
  s.assign(p, static_cast<std::size_t>(n));
  return in.skip(n);
}

bool append_answer(std::string& out, uint64_t pc, const std::optional<SourceInfo>& info,
                   uint32_t max_inlined) {
  const std::size_t before = out.size();
  auto fail = [&] {
    out.resize(before);
    return false;
  };
  put_le(out, pc, 8);
  put_le(out, info ? 1 : 0, 1);
  if (!info) return true;
  if (info->inlined.size() > max_inlined || !put_position(out, info->location)) return fail();
  put_le(out, info->inlined.size(), 4);
  for (const InlinedCall& call : info->inlined) {
    if (!put_checked(out, call.function) || !put_position(out, call.location)) return fail();
  }
  return true;
}

bool answer_pc(std::string_view record, uint64_t& pc) {
  util::ByteReader in(std::as_bytes(std::span(record.data(), record.size())), false);
  return in.read_uint(8, pc);
}

bool read_answer(std::string_view record, uint32_t max_inlined, uint64_t& pc,
                 std::optional<SourceInfo>& info) {
  util::ByteReader in(std::as_bytes(std::span(record.data(), record.size())), false);
  uint64_t kind = 0;
  if (!in.read_uint(8, pc) || !in.read_uint(1, kind) || kind > 1) return false;
  info.reset();
  if (kind == 1) {
    SourceInfo got;
    uint64_t count = 0;
    if (!get_position(in, got.location) || !in.read_uint(4, count) || count > max_inlined) {
      return false;
    }
    // Each call takes at least 5 bytes (an empty name, no position): a count the bytes left
    // cannot hold is refused before anything is reserved for it.
    if (count > in.remaining() / 5) return false;
    got.inlined.resize(static_cast<std::size_t>(count));
    for (InlinedCall& call : got.inlined) {
      if (!get_string(in, call.function) || !get_position(in, call.location)) return false;
    }
    info = std::move(got);
  }
  return in.at_end();
}

}  // namespace ehbt::lines
