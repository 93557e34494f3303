// SPDX-License-Identifier: Apache-2.0
// JSON string escaping and the indenting writer.
#include "report/json_writer.hpp"

#include <array>
#include <charconv>
#include <cstring>

#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the byte does not start one.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return len;
}

void append_u00(std::string& out, unsigned char c) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const char buf[6] = {'\\', 'u', '0', '0', kDigits[c >> 4], kDigits[c & 0xf]};
  out.append(buf, sizeof buf);
}

// Printable ASCII other than '"' and '\\': copied as it is. A table, as the test runs once
// per byte of every name and path in a document.
constexpr auto kPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();
bool plain(unsigned char c) {
  return kPlain[c];
}

// Whether all eight bytes of `w` are plain(): none has its top bit set, is below 0x20, or is
// '"' or '\\'. A byte b of x has b == 0 exactly where (x - 0x01..) & ~x & 0x80.. has its top
// bit, and b < 0x20 where (x - 0x20..) & ~x & 0x80.. has (for bytes below 0x80); a borrow
// only runs into a byte above one that is flagged already, so the word's answer is exact.
bool plain_word(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kTops = 0x8080808080808080ull;
  auto zero_byte = [](uint64_t x) { return (x - kOnes) & ~x & kTops; };
  const uint64_t bad = (w & kTops) | ((w - 0x20 * kOnes) & ~w & kTops) |
                       zero_byte(w ^ ('"' * kOnes)) | zero_byte(w ^ ('\\' * kOnes));
  return bad == 0;
}

}  // namespace

void append_json_quoted(std::string& out, std::string_view s) {
  // The common case, a string with nothing to escape: one append with its quotes.
  std::size_t first = 0;
  while (first < s.size() && plain(static_cast<unsigned char>(s[first]))) ++first;
  if (first == s.size()) {
    const std::size_t at = out.size();
    out.resize(at + s.size() + 2);
    char* p = out.data() + at;
    *p++ = '"';
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p[s.size()] = '"';
    return;
  }
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    // Runs of plain characters (nearly every name and path) are appended in one piece.
    std::size_t run = i;
    while (run < s.size() && plain(static_cast<unsigned char>(s[run]))) ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      if (i == s.size()) break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          append_u00(out, c);  // the remaining control characters
      }
      ++i;
      continue;
    }
    std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      // Not UTF-8: keep the byte visible as the code point of the same value.
      append_u00(out, c);
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  out += '"';
}

std::string document_string(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {  // the common case: valid UTF-8 throughout, returned as it is
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : utf8_sequence_length(s, i);
    if (len == 0) break;
    i += len;
  }
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : utf8_sequence_length(s, i);
    if (len == 0) {  // as append_json_quoted's \u00XX: U+0080-U+00FF in UTF-8
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out;
  append_json_quoted(out, s);
  return out;
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * levels_.size(), ' ');
}

bool JsonWriter::separate_inline(char*& piece) {
  if (after_key_) {
    after_key_ = false;
    return true;
  }
  if (levels_.empty()) return true;
  Level& level = levels_.back();
  if (!level.one_line) return false;
  if (!level.empty) {
    if (!compact_) *--piece = ' ';
    *--piece = ',';
  }
  level.empty = false;
  return true;
}

void JsonWriter::before_value() {
  char room[kSeparatorRoom];
  char* separator = room + kSeparatorRoom;
  if (separate_inline(separator)) {
    out_.append(separator, static_cast<std::size_t>(room + kSeparatorRoom - separator));
    return;
  }
  // A value on a line of its own in an indented container.
  Level& level = levels_.back();
  if (!level.empty) out_ += ',';
  newline();
  level.empty = false;
}

void JsonWriter::open(char bracket, bool one_line) {
  before_value();
  out_ += bracket;
  bool inherited = !levels_.empty() && levels_.back().one_line;
  levels_.push_back({true, one_line || inherited || compact_});
}

void JsonWriter::close(char bracket) {
  if (levels_.empty()) return;  // unbalanced call: ignore rather than corrupt the output
  Level level = levels_.back();
  levels_.pop_back();
  if (!level.empty && !level.one_line) newline();
  out_ += bracket;
}

JsonWriter& JsonWriter::begin_object(bool one_line) {
  open('{', one_line);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array(bool one_line) {
  open('[', one_line);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

// A piece is written with the separator that goes before it in one append: a frame's line
// holds a dozen short values, and appending the separator, the quotes and the text one by one
// cost more than finding out what to write. `piece` has kSeparatorRoom bytes free before it.
void JsonWriter::emit(char* piece, char* end) {
  if (!separate_inline(piece)) before_value();  // a newline and indentation first
  out_.append(piece, static_cast<std::size_t>(end - piece));
}

bool JsonWriter::emit_plain(std::string_view s, bool as_key) {
  char buf[kPieceRoom];
  if (s.size() + 4 + kSeparatorRoom > sizeof buf) return false;
  char* const piece = buf + kSeparatorRoom;
  char* p = piece;
  *p++ = '"';
  // Copied while it is checked: nearly every name and path has nothing to escape. Eight
  // bytes at a time, the last eight overlapping the ones before when the size is not a
  // multiple of eight; byte by byte when shorter (most keys).
  const std::size_t n = s.size();
  if (n >= 8) {
    for (std::size_t i = 0;; i += 8) {
      const std::size_t at = i + 8 <= n ? i : n - 8;
      uint64_t word;
      std::memcpy(&word, s.data() + at, 8);
      if (!plain_word(word)) return false;
      std::memcpy(p + at, &word, 8);
      if (at + 8 == n) break;
    }
    p += n;
  } else {
    for (char c : s) {
      if (!plain(static_cast<unsigned char>(c))) return false;
      *p++ = c;
    }
  }
  *p++ = '"';
  if (as_key) {
    *p++ = ':';
    if (!compact_) *p++ = ' ';
  }
  emit(piece, p);
  return true;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (!emit_plain(k, true)) {
    before_value();
    append_json_quoted(out_, k);
    out_.append(compact_ ? ":" : ": ");
  }
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  if (!emit_plain(s, false)) {
    before_value();
    append_json_quoted(out_, s);
  }
  return *this;
}

template <class Integer>
void JsonWriter::emit_decimal(Integer v) {
  char buf[kSeparatorRoom + 24];
  char* const piece = buf + kSeparatorRoom;
  emit(piece, std::to_chars(piece, buf + sizeof buf, v).ptr);
}

JsonWriter& JsonWriter::value(int64_t v) {
  emit_decimal(v);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  emit_decimal(v);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  char buf[kSeparatorRoom + 4] = {0, 0, 'n', 'u', 'l', 'l'};
  emit(buf + kSeparatorRoom, buf + sizeof buf);
  return *this;
}

JsonWriter& JsonWriter::address(uint64_t v) {
  char buf[kSeparatorRoom + 20];
  char* const piece = buf + kSeparatorRoom;
  char text[18];
  const std::size_t n = util::write_hex(text, v);
  piece[0] = '"';
  std::memcpy(piece + 1, text, n);
  piece[n + 1] = '"';
  emit(piece, piece + n + 2);
  return *this;
}

}  // namespace ehbt::report
