// SPDX-License-Identifier: Apache-2.0
// The one address format of the engine's texts and the CLI's documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ehbt::util {

// "0x" followed by lowercase hex digits, no padding: "0x1f2e", "0x0".
std::string hex(uint64_t v);
// The same, appended to `out` (no temporary string: the renderers write thousands of these).
void append_hex(std::string& out, uint64_t v);
// The same text written at `out`; returns its length (3 to 18).
std::size_t write_hex(char (&out)[18], uint64_t v);
// "0x" and exactly 16 lowercase hex digits, zero-padded (GDB's frame addresses).
void append_hex16(std::string& out, uint64_t v);
// Two lowercase hex digits per byte, no prefix: how build-ids are spelled (notes, minidump
// CodeView records, debug-file and cache names).
std::string bytes_hex(std::span<const std::byte> bytes);

}  // namespace ehbt::util
