// SPDX-License-Identifier: Apache-2.0
// One persisted line answer (answer_cache.hpp) as bytes: a link-time pc and what the DWARF
// said for it, nothing or a SourceInfo. Little-endian whatever the host, lengths before what
// they count; reading checks every length against the bytes there and the caps given, so a
// damaged file yields "malformed", never a large allocation.
//
//   record   := u64 pc, u8 kind (0: no answer, 1: SourceInfo), [info]
//   info     := position?, u32 count, count × (string function, position?)
//   position? := u8 present (0/1), [string file, u32 line, u32 column]
//   string   := u32 length, bytes
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ehbt/source_location.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::lines {

// The pieces records are made of, which the cache file's header (answer_cache.cpp) uses too:
// a little-endian integer of `bytes` bytes; a string (u32 length, bytes; the caller keeps it
// within kMaxRecordString); reading one back, false when it runs past the end or the cap.
void put_le(std::string& out, uint64_t v, unsigned bytes);
void put_string(std::string& out, std::string_view s);
bool get_string(util::ByteReader& in, std::string& s);

// Longest name or path a record holds: a longer one is not persisted (its answer is looked up
// again by the next process, as without a cache).
inline constexpr uint32_t kMaxRecordString = 1u << 16;

// Appends the record of `pc` to `out`; false (and `out` as it was) when the answer does not
// fit the caps (a string over kMaxRecordString, more than `max_inlined` inlined calls).
bool append_answer(std::string& out, uint64_t pc, const std::optional<SourceInfo>& info,
                   uint32_t max_inlined);

// The pc of a record (its first 8 bytes); false when it is shorter than that.
bool answer_pc(std::string_view record, uint64_t& pc);

// Decodes a whole record (no byte left over); false when malformed.
bool read_answer(std::string_view record, uint32_t max_inlined, uint64_t& pc,
                 std::optional<SourceInfo>& info);

}  // namespace ehbt::lines
