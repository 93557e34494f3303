// SPDX-License-Identifier: Apache-2.0
// A small JSON writer for the report's and the CLI's documents: no external library, strict
// escaping (control characters, quotes, backslashes; bytes that are not valid UTF-8 become
// \u00XX so that paths and symbol names from arbitrary binaries always yield valid JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/hex.hpp"

namespace ehbt::report {

// `s` as a quoted JSON string literal.
std::string json_quote(std::string_view s);
// The same, appended to `out`.
void append_json_quoted(std::string& out, std::string_view s);

// Addresses in every document: "0x" and lowercase hex digits, no padding.
using util::hex;

// Writes one JSON value into a string, indenting nested containers by two spaces. Commas and
// separators are inserted automatically; callers only say what comes next. A compact writer
// puts everything on one line without spaces (Python's json.dumps(separators=(",", ":"))).
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, bool compact = false) : out_(out), compact_(compact) {}

  // `one_line`: the container and everything in it on one line (a frame, a module), so that
  // long lists stay readable.
  JsonWriter& begin_object(bool one_line = false);
  JsonWriter& end_object();
  JsonWriter& begin_array(bool one_line = false);
  JsonWriter& end_array();
  // Inside an object: the key of the next value.
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  // An address as a hex string (see hex()).
  JsonWriter& address(uint64_t v);
  JsonWriter& address(std::optional<uint64_t> v) { return v ? address(*v) : null(); }
  JsonWriter& value(const std::optional<std::string>& s) { return s ? value(*s) : null(); }
  JsonWriter& value(std::optional<bool> v) { return v ? value(*v) : null(); }
  JsonWriter& value(std::optional<int> v) { return v ? value(*v) : null(); }

  // Shorthands for `key(k).value(v)`.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  JsonWriter& address_field(std::string_view k, std::optional<uint64_t> v) {
    key(k);
    return address(v);
  }

 private:
  // Before any value: a comma after a previous sibling, then a newline and indentation.
  void before_value();
  void newline();
  void close(char bracket);

  struct Level {
    bool empty = true;
    bool one_line = false;
  };
  void open(char bracket, bool one_line);
  // The separator before a value where the value stays on the line: nothing after a key or at
  // the top, ", " (compact: ",") after a sibling in a one-line container, written in front of
  // `piece`, which has kSeparatorRoom bytes free before it. False, and nothing changed, when
  // the value starts a line of its own (before_value() writes the comma and the newline).
  static constexpr std::size_t kSeparatorRoom = 2;
  bool separate_inline(char*& piece);
  // The separator before a value and then [piece, end) in one append.
  void emit(char* piece, char* end);
  template <class Integer>
  void emit_decimal(Integer v);
  // `s` quoted (and followed by the colon of a key when `as_key`), when `s` needs no escaping
  // and all fits in kPieceRoom; false (nothing written) otherwise.
  static constexpr std::size_t kPieceRoom = 128;
  bool emit_plain(std::string_view s, bool as_key);
  std::string& out_;
  std::vector<Level> levels_;
  bool compact_ = false;
  bool after_key_ = false;
};

// A whole document: one top-level object, whose members `members(JsonWriter&)` writes,
// and a final newline.
template <class Members>
std::string json_document(Members&& members) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  members(w);
  w.end_object();
  out += "\n";
  return out;
}

}  // namespace ehbt::report
