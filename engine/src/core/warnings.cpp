// SPDX-License-Identifier: Apache-2.0
#include "core/warnings.hpp"

#include <algorithm>

namespace ehbt {

std::string Warning::line() const {
  if (option.empty()) return message;
  // What the option needs after it, so the hint reads as a command-line fragment.
  std::string arg;
  if (option == "--exe") arg = " PATH";
  if (option == "--sysroot") arg = " DIR";
  return message + " (use " + option + arg + ")";
}

namespace core {

void add_warning(std::vector<Warning>& list, Warning w) {
  if (std::find(list.begin(), list.end(), w) != list.end()) return;
  list.push_back(std::move(w));
}

std::string base_name(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return name.empty() ? path : name;
}

}  // namespace core
}  // namespace ehbt
