// SPDX-License-Identifier: Apache-2.0
// Writing cache files (lines/cache_dir.hpp): the usage ledger that spares a write the scan of
// the whole directory, what happens when the ledger is stale, damaged, locked or written by
// several processes at once, and the room made when a file does not fit.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "lines/cache_dir.hpp"

// flock(2) as this test binary sees it: the system's, or, while `no_locks` is set, the answer
// of a file system without locks (NFS mounted nolock). Defined here, it is the one the cache
// code linked into this binary calls.
static std::atomic<bool> no_locks{false};
extern "C" int flock(int fd, int operation) {
  if (no_locks.load()) {
    errno = ENOLCK;
    return -1;
  }
  return static_cast<int>(::syscall(SYS_flock, fd, operation));
}

namespace ehbt::lines {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSuffix = ".t";

class CacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("ehbt-cache-dir-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fd_ = open_private_dir(root_.string(), "c");
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    fs::remove_all(root_);
  }
  fs::path dir() const { return root_ / "c"; }
  fs::path ledger() const { return dir() / ".t.usage"; }

  // Places `name` with `size` bytes under a directory cap of `cap`.
  bool place(const std::string& name, std::size_t size, uint64_t cap) {
    return place_cache_file(fd_, name, kSuffix, 1 << 20, cap, [size](int out) -> uint64_t {
      const std::string bytes(size, 'x');
      return ::write(out, bytes.data(), bytes.size()) == static_cast<ssize_t>(size) ? size : 0;
    });
  }
  // The files ending in the suffix, by name, with their sizes.
  std::map<std::string, uintmax_t> files() const {
    std::map<std::string, uintmax_t> out;
    for (const auto& e : fs::directory_iterator(dir())) {
      const std::string n = e.path().filename().string();
      if (n.ends_with(kSuffix)) out[n] = e.file_size();
    }
    return out;
  }
  uintmax_t total() const {
    uintmax_t sum = 0;
    for (const auto& [n, s] : files()) sum += s;
    return sum;
  }
  std::string ledger_text() const {
    std::ifstream in(ledger());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The bytes the ledger holds ("ehbt-cache-usage 1 BYTES TIME CHECK\n"), -1 when it says
  // nothing.
  long long ledger_bytes() const {
    std::istringstream in(ledger_text());
    std::string magic, version;
    long long bytes = -1, when = 0;
    if (!(in >> magic >> version >> bytes >> when) || magic != "ehbt-cache-usage") return -1;
    return bytes;
  }
  void write_ledger(const std::string& text) const { std::ofstream(ledger()) << text; }
  // The record of a ledger of `bytes` last scanned at `when`, as the format says: both in 20
  // digits, then FNV-1a (32 bits) of the two and the space between them in 8 hex digits.
  static std::string record(uint64_t bytes, long long when) {
    char fields[64];
    std::snprintf(fields, sizeof fields, "%020llu %020lld", static_cast<unsigned long long>(bytes),
                  when);
    uint32_t h = 2166136261u;
    for (const char* p = fields; *p != 0; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
    char out[128];
    std::snprintf(out, sizeof out, "ehbt-cache-usage 1 %s %08x\n", fields, h);
    return out;
  }
  // A ledger of `bytes`, last scanned `age` seconds ago.
  void write_ledger(uint64_t bytes, long age) const {
    write_ledger(record(bytes, std::time(nullptr) - age));
  }
  // A file written behind the ledger's back (by an older ehbt, say), `age` seconds old.
  void plant(const std::string& name, std::size_t size, int age) const {
    std::ofstream(dir() / name) << std::string(size, 'y');
    fs::last_write_time(dir() / name, fs::file_time_type::clock::now() - std::chrono::seconds(age));
  }

  fs::path root_;
  int fd_ = -1;
};

TEST_F(CacheDir, TheLedgerCountsEveryWriteAndAReplacedFileOnce) {
  ASSERT_TRUE(place("a.t", 100, 10000));
  EXPECT_EQ(ledger_bytes(), 100);
  ASSERT_TRUE(place("b.t", 250, 10000));
  EXPECT_EQ(ledger_bytes(), 350);
  ASSERT_TRUE(place("a.t", 40, 10000));  // rewritten smaller: its old size no longer counts
  EXPECT_EQ(ledger_bytes(), 290);
  EXPECT_EQ(static_cast<long long>(total()), 290);
  // The ledger is no cache file: never counted, never removed to make room.
  EXPECT_EQ(files().count(".t.usage"), 0u);
  ASSERT_TRUE(place("c.t", 9990, 10000));
  EXPECT_TRUE(fs::exists(ledger()));
  EXPECT_EQ(ledger_bytes(), static_cast<long long>(total()));
  EXPECT_EQ(files().size(), 1u);
}

// A recent ledger is believed: a file planted behind its back is not seen by the next write,
// which therefore did not scan. Once the ledger's scan is old, the next write scans: the
// planted file counts, and the least recently used files go until the new one fits.
TEST_F(CacheDir, ARecentLedgerSparesTheScanAnOldOneDoesNot) {
  ASSERT_TRUE(place("a.t", 300, 1000));
  plant("old.t", 600, 5000);
  ASSERT_TRUE(place("b.t", 300, 1000));
  EXPECT_EQ(ledger_bytes(), 600) << "the planted file was counted: the write scanned";
  EXPECT_EQ(files().size(), 3u);

  write_ledger(600, 700);  // the same bytes, counted by a scan 700 s ago
  ASSERT_TRUE(place("c.t", 300, 1000));
  const auto now = files();
  EXPECT_EQ(now.count("old.t"), 0u) << "the least recently used goes first";
  EXPECT_EQ(now.count("c.t"), 1u);
  EXPECT_LE(total(), 1000u);
  EXPECT_EQ(ledger_bytes(), static_cast<long long>(total()));
}

// A ledger that says the new file does not fit makes the write scan, whatever else it says.
TEST_F(CacheDir, AFullLedgerMakesRoomByTheDirectorysOwnCount) {
  ASSERT_TRUE(place("a.t", 300, 1000));
  plant("old.t", 500, 5000);
  write_ledger(900, 0);  // recent, and with the next file over the cap
  ASSERT_TRUE(place("b.t", 300, 1000));
  EXPECT_EQ(files().count("old.t"), 0u);
  EXPECT_EQ(files().count("a.t"), 1u);
  EXPECT_EQ(ledger_bytes(), 600);
}

// Damage of every kind is no ledger: the write scans, finds the planted file and writes the
// ledger anew, whole, so that the write after it is spared the scan again.
TEST_F(CacheDir, ADamagedLedgerIsCountedAgain) {
  const long long now = std::time(nullptr);
  const std::string good = record(100, now);
  std::string flipped = good, torn = good, other = good;
  flipped[30] = flipped[30] == '1' ? '2' : '1';           // a digit of BYTES: the check fails
  torn.replace(19, 20, record(999, now).substr(19, 20));  // another writer's BYTES, half done
  other[17] = '2';                                        // another version
  for (const std::string& bad :
       {std::string(), good.substr(0, good.size() - 1), good + "more\n", good.substr(1), flipped,
        torn, other, std::string(good.size(), '7'), std::string(200, '7'),
        record(100, now + 100000),  // scanned in the future: the clock went back
        record(100, now - 601)}) {  // counted more than ten minutes ago
    SCOPED_TRACE(bad);
    for (const auto& [n, s] : files()) fs::remove(dir() / n);
    plant("planted.t", 123, 10);
    write_ledger(bad);
    ASSERT_TRUE(place("a.t", 7, 100000));
    EXPECT_EQ(ledger_bytes(), 130) << "the planted file was not counted: no scan";
    EXPECT_EQ(fs::file_size(ledger()), good.size());
    plant("late.t", 1000, 10);
    ASSERT_TRUE(place("b.t", 3, 100000));
    EXPECT_EQ(ledger_bytes(), 133) << "the repaired ledger was not believed";
  }
  // The good record itself is believed: the planted file stays uncounted.
  for (const auto& [n, s] : files()) fs::remove(dir() / n);
  plant("planted.t", 123, 10);
  write_ledger(good);
  ASSERT_TRUE(place("a.t", 7, 100000));
  EXPECT_EQ(ledger_bytes(), 107);
}

// Writers in four processes at once, each of many files: the lock keeps the ledger the sum of
// what is there.
TEST_F(CacheDir, ConcurrentWritersKeepTheLedgerExact) {
  constexpr int kWriters = 4, kFiles = 40;
  pid_t pids[kWriters];
  for (int w = 0; w < kWriters; ++w) {
    pids[w] = ::fork();
    ASSERT_GE(pids[w], 0);
    if (pids[w] == 0) {
      bool ok = true;
      for (int i = 0; i < kFiles; ++i) {
        // Every second file of a writer is also one another writer writes, in another size.
        const std::string name =
            (i % 2 ? "shared" : "w" + std::to_string(w)) + "-" + std::to_string(i) + ".t";
        ok = place(name, static_cast<std::size_t>(10 + w * 7 + i), 1 << 30) && ok;
      }
      ::_exit(ok ? 0 : 1);
    }
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(files().size(), static_cast<std::size_t>(kWriters * kFiles / 2 + kFiles / 2));
  EXPECT_EQ(ledger_bytes(), static_cast<long long>(total()));
}

// A ledger another writer holds locked past the wait: this file is not written (and no
// temporary file is left), the cache being only a faster form of what can be read anyway.
TEST_F(CacheDir, ALedgerLockedTooLongIsGoneWithout) {
  ASSERT_TRUE(place("a.t", 10, 1000));
  const int held = ::open(ledger().c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  EXPECT_FALSE(place("b.t", 10, 1000));
  ::close(held);
  EXPECT_EQ(files().count("b.t"), 0u);
  for (const auto& e : fs::directory_iterator(dir())) {
    EXPECT_FALSE(e.path().filename().string().starts_with(kCacheTempPrefix)) << e.path();
  }
  EXPECT_TRUE(place("b.t", 10, 1000));
  EXPECT_EQ(ledger_bytes(), 20);
}

// Where the file system has no locks, there is no ledger: every write scans, as before there
// was one, and the cap holds.
TEST_F(CacheDir, WithoutLocksEveryWriteScans) {
  no_locks = true;
  plant("old.t", 600, 5000);
  const bool placed = place("a.t", 300, 1000);
  plant("older.t", 600, 6000);
  const bool again = place("b.t", 300, 1000);
  no_locks = false;
  EXPECT_TRUE(placed && again);
  const auto now = files();
  EXPECT_EQ(now.count("older.t"), 0u) << "the write did not scan";
  EXPECT_EQ(now.count("a.t") + now.count("b.t"), 2u);
  EXPECT_LE(total(), 1000u);
  EXPECT_EQ(ledger_text(), "") << "no ledger is written without its lock";
}

}  // namespace
}  // namespace ehbt::lines
