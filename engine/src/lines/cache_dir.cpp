// SPDX-License-Identifier: Apache-2.0
// Finding and opening ehbt's cache directory (see cache_dir.hpp).
#include "lines/cache_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
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

// The usage ledger (see place_cache_file): a scan at least this often, so that what other
// writers and removers did (an older ehbt, `rm`) counts again, and stale temporary files go.
constexpr time_t kRescanSeconds = 600;
// How long a writer waits for the ledger's lock before it goes without writing this file.
constexpr int kLedgerWaitMs = 2000;
constexpr char kLedgerMagic[] = "ehbt-cache-usage 1";

std::string ledger_name(std::string_view suffix) {
  return std::string(suffix) + std::string(kLedgerSuffix);
}

// The ledger of a cache directory, locked: the bytes its files ending in the suffix hold, and
// when a scan last counted them. Unlocked and closed on destruction.
class Ledger {
 public:
  Ledger(int dir, std::string_view suffix) {
    const std::string name = ledger_name(suffix);
    fd_ = ::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    struct stat st;
    bool locked = false;
    for (int waited = 0; !locked && waited <= kLedgerWaitMs; waited += 5) {
      if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
        locked = true;
      } else if (errno == EWOULDBLOCK || errno == EINTR) {
        ::usleep(5000);
      } else {
        break;
      }
    }
    // Only a regular file of this user is believed (the directory is private already).
    if (!locked || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    char buf[96];
    const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
    if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) return;
    // "ehbt-cache-usage 1 <bytes> <unix time of the last scan>\n", nothing else.
    std::string_view text(buf, static_cast<std::size_t>(n));
    const std::string_view magic(kLedgerMagic);
    if (!text.starts_with(magic) || text.size() < magic.size() + 1 || text[magic.size()] != ' ' ||
        !text.ends_with('\n')) {
      return;
    }
    text = text.substr(magic.size() + 1, text.size() - magic.size() - 2);
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos) return;
    uint64_t bytes = 0;
    int64_t scanned = 0;
    const std::string_view b = text.substr(0, space), t = text.substr(space + 1);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), bytes);
    const auto rt = std::from_chars(t.data(), t.data() + t.size(), scanned);
    if (b.empty() || t.empty() || rb.ec != std::errc() || rb.ptr != b.data() + b.size() ||
        rt.ec != std::errc() || rt.ptr != t.data() + t.size()) {
      return;
    }
    bytes_ = bytes;
    scanned_ = static_cast<time_t>(scanned);
  }
  ~Ledger() {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the lock
  }
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  bool locked() const { return fd_ >= 0; }
  // The bytes counted, when the ledger was read whole and its scan is recent.
  std::optional<uint64_t> bytes(time_t now) const {
    if (!bytes_ || now < scanned_ || now - scanned_ >= kRescanSeconds) return std::nullopt;
    return bytes_;
  }
  time_t scanned() const { return scanned_; }
  void write(uint64_t bytes, time_t scanned) {
    char buf[96];
    const int n =
        std::snprintf(buf, sizeof buf, "%s %llu %lld\n", kLedgerMagic,
                      static_cast<unsigned long long>(bytes), static_cast<long long>(scanned));
    if (n <= 0 || ::ftruncate(fd_, 0) != 0) return;
    if (::pwrite(fd_, buf, static_cast<std::size_t>(n), 0) != n) {
      (void)::ftruncate(fd_, 0);  // half a line is no ledger: the next writer scans
    }
  }

 private:
  int fd_ = -1;
  std::optional<uint64_t> bytes_;
  time_t scanned_ = 0;
};

// The size of regular file `name` in `dir`, 0 when there is none.
uint64_t file_size(int dir, const std::string& name) {
  struct stat st;
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    return 0;
  }
  return static_cast<uint64_t>(st.st_size);
}

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

uint64_t make_room(int dir, std::string_view suffix, uint64_t incoming, uint64_t cap) {
  const int list_fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return UINT64_MAX;
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return UINT64_MAX;
  }
  struct Entry {
    std::string name;
    uint64_t size;
    struct timespec mtime;
  };
  std::vector<Entry> kept;
  uint64_t total = 0;
  const time_t now = std::time(nullptr);
  const std::string ledger = ledger_name(suffix);
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
    if (!name.ends_with(suffix) || name == ledger) continue;
    kept.push_back(Entry{std::string(name), static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  if (total + incoming <= cap) return total;
  std::sort(kept.begin(), kept.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Entry& c : kept) {
    if (total + incoming <= cap) break;
    if (::unlinkat(dir, c.name.c_str(), 0) == 0) total -= c.size;
  }
  return total;
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
  // The ledger says how much the directory holds, so that a write does not stat every file
  // in it (a cache of 20,000 answer files made each new answer cost 100 ms). The directory is
  // scanned, and room made, only when the ledger says the file does not fit, cannot be read,
  // or was last counted by a scan kRescanSeconds ago. Without its lock (another writer holds
  // it too long), the file is not written.
  Ledger ledger(dir, suffix);
  if (!ledger.locked()) {
    ::unlinkat(dir, temp.c_str(), 0);
    return false;
  }
  const time_t now = std::time(nullptr);
  const uint64_t replaced = file_size(dir, name);
  const std::optional<uint64_t> held = ledger.bytes(now);
  uint64_t after = 0;
  time_t scanned = ledger.scanned();
  if (held && *held >= replaced && *held - replaced <= dir_cap &&
      written <= dir_cap - (*held - replaced)) {
    after = *held - replaced + written;
  } else {
    const uint64_t total = make_room(dir, suffix, written, dir_cap);
    const uint64_t still = file_size(dir, name);  // unless the scan removed it
    after = total == UINT64_MAX ? UINT64_MAX : total - std::min(total, still) + written;
    scanned = now;
  }
  if (::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) {
    ::unlinkat(dir, temp.c_str(), 0);
    return false;
  }
  if (after != UINT64_MAX) ledger.write(after, scanned);
  return true;
}

}  // namespace ehbt::lines
