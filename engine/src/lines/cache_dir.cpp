// SPDX-License-Identifier: Apache-2.0
// Finding and opening ehbt's cache directory (see cache_dir.hpp).
#include "lines/cache_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace ehbt::lines {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// mkdir -p with mode 0700 for what it makes; whether `path` is a directory afterwards.
bool make_dirs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode);
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return false;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Entries of a cache directory looked at when making room (it holds one file per debug
// file used; past this many the rest are left alone).
constexpr std::size_t kMaxEntries = std::size_t{1} << 16;
// A temporary file this old was left by a writer that died: removed when making room.
constexpr time_t kStaleTempSeconds = 3600;

}  // namespace

std::string ehbt_cache_dir() {
  if (std::string dir = env("EHBT_CACHE_DIR"); !dir.empty()) return dir;
  // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg.front() == '/') {
    return xdg + "/ehbt";
  }
  // Without $HOME there is no cache (the password database is not asked: the CLI is linked
  // statically, where NSS lookups are best avoided).
  const std::string home = env("HOME");
  if (home.empty()) return {};
  return home + "/.cache/ehbt";
}

int open_private_dir(const std::string& root, const char* sub) {
  if (root.empty() || !make_dirs(root)) return -1;
  const int parent = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return -1;
  if (::mkdirat(parent, sub, 0700) != 0 && errno != EEXIST) {
    ::close(parent);
    return -1;
  }
  const int fd = ::openat(parent, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ::close(parent);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void make_room(int dir, std::string_view suffix, uint64_t incoming, uint64_t cap) {
  const int list_fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return;
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return;
  }
  struct Entry {
    std::string name;
    uint64_t size;
    struct timespec mtime;
  };
  std::vector<Entry> kept;
  uint64_t total = 0;
  const time_t now = std::time(nullptr);
  std::size_t seen = 0;
  for (const dirent* e = ::readdir(d); e != nullptr && ++seen <= kMaxEntries; e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    struct stat st;
    if (::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (name.starts_with(kCacheTempPrefix)) {
      if (now - st.st_mtime > kStaleTempSeconds) ::unlinkat(dir, e->d_name, 0);
      continue;
    }
    if (!name.ends_with(suffix)) continue;
    kept.push_back(Entry{std::string(name), static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  if (total + incoming <= cap) return;
  std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Entry& c : kept) {
    if (total + incoming <= cap) break;
    if (::unlinkat(dir, c.name.c_str(), 0) == 0) total -= c.size;
  }
}

bool place_cache_file(int dir, const std::string& name, std::string_view suffix, uint64_t max_bytes,
                      uint64_t dir_cap, const std::function<uint64_t(int fd)>& write) {
  static std::atomic<uint32_t> serial{0};
  const std::string temp = std::string(kCacheTempPrefix) + name + "." + std::to_string(::getpid()) +
                           "." + std::to_string(serial++);
  const int out =
      ::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) return false;
  const uint64_t written = write(out);
  ::close(out);
  if (written == 0 || written > max_bytes) {
    ::unlinkat(dir, temp.c_str(), 0);
    return false;
  }
  make_room(dir, suffix, written, dir_cap);
  if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    ::unlinkat(dir, temp.c_str(), 0);
    return false;
  }
  return true;
}

}  // namespace ehbt::lines
