// SPDX-License-Identifier: Apache-2.0
#include "elf/rust_demangle.hpp"

#include <cstdint>

namespace ehbt::elf {
namespace {

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// rustc's hash element: 'h' and 16 lowercase hex digits.
bool is_rust_hash(std::string_view element) {
  if (element.size() != 17 || element[0] != 'h') return false;
  for (char c : element.substr(1))
    if (!is_hex_digit(c)) return false;
  return true;
}

// One `$...$` escape at the start of `rest` (after the '$'); the character, or nothing for an
// escape rustc does not write. `rest` moves past the closing '$'.
std::optional<char> read_escape(std::string_view& rest) {
  const auto close = rest.find('$');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view code = rest.substr(0, close);
  rest.remove_prefix(close + 1);
  if (code == "SP") return '@';
  if (code == "BP") return '*';
  if (code == "RF") return '&';
  if (code == "LT") return '<';
  if (code == "GT") return '>';
  if (code == "LP") return '(';
  if (code == "RP") return ')';
  if (code == "C") return ',';
  // `u` and the character's code in hex: rustc writes it for the printable ASCII characters
  // that have no short name (' ', '\'', '[', ']', '{', '}', '~', ...). Anything else is
  // not rustc's, and the name is left to the C++ demangler.
  if (code.size() < 2 || code.size() > 3 || code[0] != 'u') return std::nullopt;
  uint32_t value = 0;
  for (char c : code.substr(1)) {
    if (!is_hex_digit(c)) return std::nullopt;
    value = value * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  // Only what an identifier cannot hold: a letter, digit or '_' escaped is not rustc's.
  const char ch = static_cast<char>(value);
  const bool word =
      (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  if (value < 0x20 || value > 0x7e || word) return std::nullopt;
  return ch;
}

// Appends one element with its escapes read; false when one is not rustc's.
bool append_element(std::string& out, std::string_view element) {
  // An element that starts with an escape gets a '_' in front (an identifier cannot start
  // with '$' everywhere); it is not part of the name.
  if (element.size() > 1 && element[0] == '_' && element[1] == '$') element.remove_prefix(1);
  while (!element.empty()) {
    const char c = element.front();
    element.remove_prefix(1);
    if (c == '$') {
      auto decoded = read_escape(element);
      if (!decoded) return false;
      out.push_back(*decoded);
    } else if (c == '.' && !element.empty() && element.front() == '.') {
      element.remove_prefix(1);
      out += "::";
    } else {
      out.push_back(c);
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> demangle_rust_legacy(std::string_view mangled) {
  std::string_view rest = mangled;
  if (rest.substr(0, 3) != "_ZN") return std::nullopt;
  rest.remove_prefix(3);
  std::string out;
  std::string_view last;
  std::size_t elements = 0;
  while (!rest.empty() && rest.front() != 'E') {
    // <decimal length><element>; the length is bounded by what is left of the name.
    std::size_t len = 0;
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
      len = len * 10 + static_cast<std::size_t>(rest[digits] - '0');
      if (len > rest.size()) return std::nullopt;
      ++digits;
    }
    if (digits == 0 || len == 0 || digits + len > rest.size()) return std::nullopt;
    last = rest.substr(digits, len);
    rest.remove_prefix(digits + len);
    if (elements++ > 0) out += "::";
    if (!append_element(out, last)) return std::nullopt;
  }
  // The nested name ends at 'E'. What may follow is a suffix the compiler or LLVM added to
  // a copy of the item (".llvm.N" for a local promoted by ThinLTO, ".0", ".cold"): not part
  // of its name, left out as c++filt leaves it out.
  if (rest.empty() || elements < 2 || !is_rust_hash(last)) return std::nullopt;
  rest.remove_prefix(1);
  if (!rest.empty() && rest.front() != '.') return std::nullopt;
  return out;
}

}  // namespace ehbt::elf
