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
// The magic, a space, 20 digits, a space, 20 digits, a space, 8 hex digits, a newline.
constexpr std::size_t kRecordSize = sizeof kLedgerMagic - 1 + 1 + 20 + 1 + 20 + 1 + 8 + 1;

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

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
        // A file system without locks (NFS mounted nolock, some FUSE ones): no ledger there,
        // the writer scans as it did before there was one.
        unsupported_ = true;
        break;
      }
    }
    // Only a regular file of this user is believed (the directory is private already).
    if (!locked || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    whole_ = st.st_size == static_cast<off_t>(kRecordSize);
    char buf[kRecordSize + 1];
    if (::pread(fd_, buf, sizeof buf, 0) != static_cast<ssize_t>(kRecordSize)) return;
    // "ehbt-cache-usage 1 BYTES TIME CHECK\n": BYTES (what the files hold) and TIME (of the
    // last scan, in seconds since the epoch) in 20 decimal digits, CHECK the FNV-1a hash of
    // "BYTES TIME" in 8 hex digits, so that a record another writer left half written (the
    // record is rewritten in place) is no record.
    const std::string_view text(buf, kRecordSize);
    const std::string_view magic(kLedgerMagic);
    const std::size_t at = magic.size() + 1;
    if (!text.starts_with(magic) || text[magic.size()] != ' ' || text[at + 20] != ' ' ||
        text[at + 41] != ' ' || text.back() != '\n') {
      return;
    }
    const std::string_view fields = text.substr(at, 41);
    uint64_t bytes = 0, scanned = 0;
    uint32_t check = 0;
    const std::string_view b = fields.substr(0, 20), t = fields.substr(21, 20);
    const std::string_view c = text.substr(at + 42, 8);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), bytes);
    const auto rt = std::from_chars(t.data(), t.data() + t.size(), scanned);
    const auto rc = std::from_chars(c.data(), c.data() + c.size(), check, 16);
    if (rb.ptr != b.data() + b.size() || rt.ptr != t.data() + t.size() ||
        rc.ptr != c.data() + c.size() || check != fnv1a(fields) ||
        scanned > static_cast<uint64_t>(INT64_MAX)) {
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
  // The lock failed for want of locks on this file system, not because another writer held it.
  bool unsupported() const { return unsupported_; }
  // The bytes counted, when the ledger was read whole and its scan is recent.
  std::optional<uint64_t> bytes(time_t now) const {
    if (!bytes_ || now < scanned_ || now - scanned_ >= kRescanSeconds) return std::nullopt;
    return bytes_;
  }
  time_t scanned() const { return scanned_; }
  // Rewritten in place, the same size every time: truncating and appending made ext4 flush
  // the file on close (its guard for files replaced that way), a third of a millisecond.
  void write(uint64_t bytes, time_t scanned) {
    char fields[42];
    std::snprintf(fields, sizeof fields, "%020llu %020llu", static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(std::max<time_t>(scanned, 0)));
    char record[kRecordSize + 1];
    std::snprintf(record, sizeof record, "%s %s %08x\n", kLedgerMagic, fields,
                  fnv1a(std::string_view(fields, 41)));
    if (::pwrite(fd_, record, kRecordSize, 0) == static_cast<ssize_t>(kRecordSize) && !whole_) {
      (void)::ftruncate(fd_, kRecordSize);  // new, or damaged: once
    }
  }

 private:
  int fd_ = -1;
  bool unsupported_ = false;
  bool whole_ = false;  // the file is one record long
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
  // or was last counted by a scan kRescanSeconds ago. What the ledger does not see (answers
  // appended to a file in place, files others added) counts at that scan: the cap holds to
  // within what kRescanSeconds adds. Without its lock (another writer holds it too long), the
  // file is not written; where the file system has no locks, every write scans.
  Ledger ledger(dir, suffix);
  if (!ledger.locked() && !ledger.unsupported()) {
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
  if (after != UINT64_MAX && ledger.locked()) ledger.write(after, scanned);
  return true;
}

}  // namespace ehbt::lines
