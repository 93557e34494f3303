// SPDX-License-Identifier: Apache-2.0
// Chroot-style path resolution without chroot: one component at a time, with lstat/readlink.
#include "core/sysroot_path.hpp"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

namespace ehbt::core {
namespace {

// Pushes the components of `path` in front of `todo`, keeping their order.
void push_front_components(std::string_view path, std::deque<std::string>& todo) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(at, slash - at);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    at = slash + 1;
  }
  todo.insert(todo.begin(), parts.begin(), parts.end());
}

std::string join(const std::string& root, const std::vector<std::string>& parts) {
  std::string out = root;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  for (const std::string& p : parts) {
    if (out.empty() || out.back() != '/') out.push_back('/');
    out += p;
  }
  return out;
}

}  // namespace

std::optional<std::string> resolve_in_root(const std::string& root, std::string_view path) {
  if (root.empty()) return std::nullopt;
  std::deque<std::string> todo;
  push_front_components(path, todo);
  std::vector<std::string> done;  // resolved components below the root, none a link
  unsigned hops = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == "..") {
      if (!done.empty()) done.pop_back();  // the root is its own parent
      continue;
    }
    done.push_back(std::move(part));
    const std::string here = join(root, done);
    struct stat st {};
    if (lstat(here.c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) continue;
    if (++hops > kMaxSymlinkHops) return std::nullopt;
    char target[PATH_MAX];
    const ssize_t n = readlink(here.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) return std::nullopt;
    done.pop_back();
    const std::string_view link(target, static_cast<std::size_t>(n));
    if (link.front() == '/') done.clear();  // absolute: from the root again
    push_front_components(link, todo);
  }
  return join(root, done);
}

}  // namespace ehbt::core
