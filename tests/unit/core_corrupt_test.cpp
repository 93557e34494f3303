// SPDX-License-Identifier: Apache-2.0
// Damaged cores: real cores (native, and a big-endian s390x one from qemu) truncated at many
// sizes and with bytes flipped in their notes and program headers. open_core must return a
// one-line error or a usable target -- never crash, hang or throw -- and whatever target it
// returns must survive being read from.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using namespace core_test;

const bool g_child = (run_child_if_requested(), true);

// Reads everything a front end would: threads, registers, the memory around them, modules.
void exercise(ehbt::Target& t) {
  std::vector<std::byte> buf(256);
  for (const auto& th : t.threads()) {
    t.memory().read(th.regs.sp(), buf);
    t.memory().read(th.regs.pc(), buf);
    t.modules().find(th.regs.pc());
  }
  for (const auto& m : t.modules().modules()) {
    t.memory().read(m.start, buf);
    t.memory().read(m.end - 1, buf);
    if (m.image) {
      m.image->read(m.to_link(m.start), buf);
    }
  }
  EXPECT_LE(t.crashing_thread(), t.threads().empty() ? 0 : t.threads().size() - 1);
  if (t.signal()) ehbt::signal_name(t.signal()->number);
}

// Opens `path`: an error must be one non-empty line; a target must be readable.
void open_and_check(const std::string& path, ehbt::ImageStore& store, const std::string& what) {
  ehbt::TargetOptions opts;
  opts.store = &store;
  auto t = ehbt::open_core(path, opts);
  if (!t) {
    EXPECT_FALSE(t.error().empty()) << what;
    EXPECT_EQ(t.error().find('\n'), std::string::npos) << what << ": " << t.error();
    return;
  }
  EXPECT_FALSE(t.value()->threads().empty()) << what;
  exercise(*t.value());
}

struct CoreLayout {
  uint64_t size = 0, phoff = 0, phnum = 0, note_off = 0, note_size = 0;
};

// Where the program headers and the first PT_NOTE lie, read by hand.
CoreLayout layout_of(const std::string& bytes) {
  CoreLayout l;
  l.size = bytes.size();
  bool be = bytes.size() > 5 && bytes[5] == 2;
  auto get = [&](uint64_t off, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      v = (v << 8) | static_cast<unsigned char>(bytes.at(off + (be ? i : n - 1 - i)));
    }
    return v;
  };
  l.phoff = get(32, 8);
  l.phnum = get(56, 2);
  for (uint64_t i = 0; i < l.phnum; ++i) {
    uint64_t p = l.phoff + i * 56;
    if (get(p, 4) == 4) {
      l.note_off = get(p + 8, 8);
      l.note_size = get(p + 32, 8);
      break;
    }
  }
  return l;
}

void write_prefix(const std::string& from, const std::string& to, uint64_t n) {
  std::string cmd = "head -c " + std::to_string(n) + " '" + from + "' > '" + to + "'";
  ASSERT_EQ(run(cmd).status, 0);
}

class CorruptCoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "native") {
      NativeCore nc = make_native_core(dir_);
      ASSERT_TRUE(nc.error.empty()) << nc.error;
      core_ = nc.core;
    } else {
      ASSERT_TRUE(have_program("s390x-linux-gnu-gcc") && have_program("qemu-s390x"));
      QemuCore qc =
          make_qemu_core(dir_, "s390x-linux-gnu-gcc", "-static", "qemu-s390x", "", "s390x_corrupt");
      ASSERT_TRUE(qc.error.empty()) << qc.error;
      core_ = qc.core;
    }
    // The head of the core (headers and notes) in memory, for hand-made damage.
    std::string head_cmd = "head -c 1048576 '" + core_ + "'";
    head_ = run(head_cmd).output;
    layout_ = layout_of(head_);
    struct stat st {};
    ASSERT_EQ(stat(core_.c_str(), &st), 0);
    layout_.size = static_cast<uint64_t>(st.st_size);
    ASSERT_GT(layout_.note_size, 0u);
    ASSERT_LE(layout_.note_off + layout_.note_size, head_.size());
    // The undamaged core opens.
    auto t = ehbt::open_core(core_);
    ASSERT_TRUE(t.has_value()) << t.error();
  }

  TempDir dir_;
  std::string core_;
  std::string head_;
  CoreLayout layout_;
  ehbt::ImageStore store_;
};

TEST_P(CorruptCoreTest, Truncated) {
  const CoreLayout& l = layout_;
  std::vector<uint64_t> sizes = {0, 1, 4, 5, 6, 16, 18, 20, 63, 64, 65};
  for (uint64_t i = 0; i <= l.phnum && i < 8; ++i) {
    sizes.push_back(l.phoff + i * 56 - 1);
    sizes.push_back(l.phoff + i * 56 + 30);
  }
  for (uint64_t d : {0ull, 4ull, 11ull, 12ull, 20ull, 100ull, 200ull, 500ull}) {
    sizes.push_back(l.note_off + d);
  }
  for (uint64_t k = 1; k < 8; ++k) sizes.push_back(l.note_off + l.note_size * k / 8);
  sizes.push_back(l.note_off + l.note_size - 1);
  sizes.push_back(l.note_off + l.note_size);
  sizes.push_back(l.note_off + l.note_size + 4096);
  sizes.push_back(l.size / 2);
  sizes.push_back(l.size - 1);
  std::string cut = dir_.file("cut.core");
  for (uint64_t n : sizes) {
    if (n > l.size) continue;
    write_prefix(core_, cut, n);
    open_and_check(cut, store_, "truncated to " + std::to_string(n));
  }
  // Cut inside the header: a clear error, not a target.
  write_prefix(core_, cut, 40);
  auto t = ehbt::open_core(cut);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().find("truncated"), std::string::npos) << t.error();
}

TEST_P(CorruptCoreTest, FlippedBytes) {
  // A full copy (sparse: cores are mostly holes) that is damaged and repaired in place.
  std::string copy = dir_.file("flip.core");
  ASSERT_EQ(run("cp --sparse=always '" + core_ + "' '" + copy + "'").status, 0);
  int fd = open(copy.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  std::mt19937_64 rng(GetParam() == "native" ? 1234 : 5678);
  const CoreLayout& l = layout_;
  auto damage = [&](uint64_t lo, uint64_t hi, int iterations, const char* where) {
    for (int it = 0; it < iterations; ++it) {
      std::vector<std::pair<uint64_t, char>> saved;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        uint64_t off = lo + rng() % (hi - lo);
        char old = head_.at(off);
        // Mostly random bytes, sometimes the extremes that make sizes and counts huge.
        char v = (rng() % 3 == 0) ? static_cast<char>(0xff) : static_cast<char>(rng());
        saved.emplace_back(off, old);
        ASSERT_EQ(pwrite(fd, &v, 1, static_cast<off_t>(off)), 1);
      }
      open_and_check(copy, store_, std::string(where) + " iteration " + std::to_string(it));
      for (auto it2 = saved.rbegin(); it2 != saved.rend(); ++it2) {
        ASSERT_EQ(pwrite(fd, &it2->second, 1, static_cast<off_t>(it2->first)), 1);
      }
    }
  };
  damage(l.note_off, l.note_off + l.note_size, 300, "notes");
  damage(l.phoff, l.phoff + l.phnum * 56, 100, "program headers");
  damage(0, 64, 50, "ELF header");
  // Every 8-byte word of the first notes set to all ones (sizes, counts, addresses).
  for (uint64_t off = l.note_off; off + 8 <= l.note_off + std::min<uint64_t>(l.note_size, 2048);
       off += 8) {
    const std::string ones(8, static_cast<char>(0xff));
    ASSERT_EQ(pwrite(fd, ones.data(), 8, static_cast<off_t>(off)), 8);
    open_and_check(copy, store_, "ones at " + std::to_string(off));
    ASSERT_EQ(pwrite(fd, head_.data() + off, 8, static_cast<off_t>(off)), 8);
  }
  close(fd);
}

INSTANTIATE_TEST_SUITE_P(Cores, CorruptCoreTest, ::testing::Values("native", "s390x"));

}  // namespace
