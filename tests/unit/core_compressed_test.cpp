// SPDX-License-Identifier: Apache-2.0
// Compressed cores: a real core (this test binary, crashed) compressed with the real zstd,
// xz, lz4 and gzip tools must open exactly like the plain one; the decompressed bytes must be
// the original's, holes must stay holes, and cut, corrupt or oversized streams must fail with
// a message saying what happened and how much was recovered.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <memory>
#include <ostream>

#include "core/compression.hpp"
#include "core/core_source.hpp"
#include "core/sparse_sink.hpp"
#include "core_test_support.hpp"
#include "ehbt/core.hpp"

namespace {

using namespace core_test;

const bool g_child = (run_child_if_requested(), true);

struct Format {
  const char* name;      // as compression_name() says it
  const char* compress;  // shell command: stdin -> stdout
};
// Printed by name: gtest would otherwise print the pointers' bytes, which change with every
// run (ASLR) and end up in the names ctest lists.
void PrintTo(const Format& f, std::ostream* os) {
  *os << f.name;
}
const Format kFormats[] = {
    {"zstd", "zstd -q -c"},
    {"xz", "xz -c -T1"},
    {"lz4", "lz4 -q -c"},
    {"gzip", "gzip -c"},
};

class CompressedCoreTest : public SharedNativeCoreTest<::testing::TestWithParam<Format>> {
 protected:
  // `input` compressed with this test's tool into dir_/<out>.
  std::string compress(const std::string& input, const std::string& out) {
    const std::string path = dir_->file(out);
    auto r = run(std::string(GetParam().compress) + " < '" + input + "' > '" + path + "'");
    EXPECT_EQ(r.status, 0) << r.output;
    return path;
  }
  static std::string bytes_of(const ehbt::core::MappedFile& f) {
    return {reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size()};
  }
};

TEST_P(CompressedCoreTest, DecompressedBytesAreTheCore) {
  const std::string packed = compress(core_->core, "whole");
  auto f = ehbt::core::open_core_source(packed, {});
  ASSERT_TRUE(f.has_value()) << f.error();
  const std::string plain = read_file(core_->core);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(read_file(packed).size() < plain.size(), true) << "the tool did not compress";
  EXPECT_TRUE(bytes_of(*f) == plain) << "decompressed bytes differ from the core";
}

TEST_P(CompressedCoreTest, OpensLikeThePlainCore) {
  const std::string packed = compress(core_->core, "open");
  auto plain = ehbt::open_core(core_->core);
  auto packed_t = ehbt::open_core(packed);
  ASSERT_TRUE(plain.has_value()) << plain.error();
  ASSERT_TRUE(packed_t.has_value()) << packed_t.error();
  const ehbt::Target& a = **plain;
  const ehbt::Target& b = **packed_t;
  EXPECT_EQ(a.arch(), b.arch());
  ASSERT_EQ(a.threads().size(), b.threads().size());
  for (std::size_t i = 0; i < a.threads().size(); ++i) {
    EXPECT_EQ(a.threads()[i].tid, b.threads()[i].tid);
    EXPECT_EQ(a.threads()[i].regs.pc(), b.threads()[i].regs.pc());
  }
  ASSERT_TRUE(b.signal().has_value());
  EXPECT_EQ(b.signal()->number, SIGSEGV);
  EXPECT_EQ(b.signal()->address, std::optional<uint64_t>(kFaultAddress));
  EXPECT_EQ(a.modules().modules().size(), b.modules().modules().size());
}

TEST_P(CompressedCoreTest, ConcatenatedStreamsAreOneCore) {
  const std::string plain = read_file(core_->core);
  const std::size_t half = plain.size() / 2 + 123;  // not on a block boundary
  const std::string a = dir_->file("half_a"), b = dir_->file("half_b");
  ASSERT_EQ(run("head -c " + std::to_string(half) + " '" + core_->core + "' > " + a).status, 0);
  ASSERT_EQ(run("tail -c +" + std::to_string(half + 1) + " '" + core_->core + "' > " + b).status,
            0);
  const std::string pa = compress(a, "part_a"), pb = compress(b, "part_b");
  const std::string cat = dir_->file("concat");
  ASSERT_EQ(run("cat " + pa + " " + pb + " > " + cat).status, 0);
  auto f = ehbt::core::open_core_source(cat, {});
  ASSERT_TRUE(f.has_value()) << f.error();
  EXPECT_TRUE(bytes_of(*f) == plain);
}

TEST_P(CompressedCoreTest, TruncatedStreamSaysHowMuchWasRecovered) {
  const std::string packed = compress(core_->core, "cut_src");
  const std::string cut = dir_->file("cut");
  const std::size_t keep = read_file(packed).size() * 2 / 3;
  ASSERT_EQ(run("head -c " + std::to_string(keep) + " " + packed + " > " + cut).status, 0);
  auto t = ehbt::open_core(cut);
  ASSERT_FALSE(t.has_value());
  const std::string want = std::string("truncated ") + GetParam().name + " stream (";
  EXPECT_NE(t.error().find(want), std::string::npos) << t.error();
  EXPECT_NE(t.error().find("bytes recovered"), std::string::npos) << t.error();
  EXPECT_EQ(t.error().find('\n'), std::string::npos) << "one line";
}

TEST_P(CompressedCoreTest, GarbageAfterTheMagicIsCorrupt) {
  // The first bytes of a real stream of this format, then noise.
  const std::string packed = compress(core_->core, "garbage_src");
  const std::string bad = dir_->file("garbage");
  // Keep the whole magic (xz's is six bytes) so that detection still names the format.
  const std::string magic = std::string(GetParam().name) == "xz" ? "6" : "4";
  ASSERT_EQ(run("head -c " + magic + " " + packed + " > " + bad +
                " && printf 'this-is-not-a-compressed-stream-%.0s' $(seq 40) >> " + bad)
                .status,
            0);
  auto t = ehbt::open_core(bad);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().find(GetParam().name), std::string::npos) << t.error();
  EXPECT_TRUE(t.error().find("corrupt") != std::string::npos ||
              t.error().find("truncated") != std::string::npos)
      << t.error();
}

TEST_P(CompressedCoreTest, TrailingGarbageAfterACompleteStreamIsRefused) {
  const std::string packed = compress(core_->core, "trail_src");
  const std::string bad = dir_->file("trail");
  ASSERT_EQ(
      run("cp " + packed + " " + bad + " && printf 'garbage-garbage-garbage' >> " + bad).status, 0);
  auto t = ehbt::open_core(bad);
  ASSERT_FALSE(t.has_value()) << "trailing bytes were silently ignored";
  EXPECT_NE(t.error().find(GetParam().name), std::string::npos) << t.error();
}

TEST_P(CompressedCoreTest, BombBeyondTheCapIsRefused) {
  // 256 MiB of zeros compresses to almost nothing; the cap stops it at 16 MiB.
  const std::string bomb = dir_->file("bomb");
  auto r = run("head -c 268435456 /dev/zero | " + std::string(GetParam().compress) + " > " + bomb);
  ASSERT_EQ(r.status, 0) << r.output;
  ehbt::TargetOptions opts;
  opts.limits.max_decompressed_bytes = 16u << 20;
  auto t = ehbt::open_core(bomb, opts);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().find("max_decompressed_bytes"), std::string::npos) << t.error();
}

TEST_P(CompressedCoreTest, DiskCapStopsDataNotHoles) {
  // 8 MiB of random data cannot fit a 1 MiB disk cap; 64 MiB of zeros needs no disk at all.
  const std::string noise = dir_->file("noise"), zeros = dir_->file("zeros");
  ASSERT_EQ(run("head -c 8388608 /dev/urandom > " + noise).status, 0);
  ASSERT_EQ(run("head -c 67108864 /dev/zero > " + zeros).status, 0);
  ehbt::Limits limits;
  limits.max_decompressed_disk_bytes = 1u << 20;
  auto f = ehbt::core::open_core_source(compress(noise, "noise_c"), limits);
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().find("disk space"), std::string::npos) << f.error();
  auto z = ehbt::core::open_core_source(compress(zeros, "zeros_c"), limits);
  ASSERT_TRUE(z.has_value()) << z.error();
  EXPECT_EQ(z->bytes().size(), 67108864u);
  run("rm -f " + zeros + " " + noise);
}

INSTANTIATE_TEST_SUITE_P(Formats, CompressedCoreTest, ::testing::ValuesIn(kFormats),
                         [](const auto& info) { return std::string(info.param.name); });

// Holes stay holes: a stream of mostly zeros becomes a file with few allocated blocks.
TEST(SparseSink, ZeroBlocksAreNotWritten) {
  auto sink = ehbt::core::SparseSink::create("", {uint64_t{1} << 40, 0});
  ASSERT_TRUE(sink.has_value()) << sink.error();
  std::vector<std::byte> zeros(1u << 20), data(4096, std::byte{0x5a});
  for (int i = 0; i < 64; ++i) {  // 64 MiB of zeros with one data block per MiB
    ASSERT_TRUE(sink->write(zeros).has_value());
    ASSERT_TRUE(sink->write(data).has_value());
  }
  ASSERT_TRUE(sink->write(zeros).has_value());  // a trailing hole
  ASSERT_TRUE(sink->finish().has_value());
  struct stat st {};
  ASSERT_EQ(fstat(sink->fd(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 65u * (1u << 20) + 64u * 4096u);
  // Every data block starts on a block boundary (1 MiB + k * (1 MiB + 4 KiB)): exactly 64
  // blocks are written; allow the filesystem some slack for its own allocation.
  EXPECT_EQ(sink->data_bytes(), 64u * 4096u);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 64u * 4096u + (1u << 20));
  // Reading it back gives the bytes written.
  std::vector<std::byte> back(4096);
  ASSERT_EQ(pread(sink->fd(), back.data(), back.size(), 1u << 20), 4096);
  EXPECT_EQ(back, data);
}

TEST(Compression, DetectedByContentNotName) {
  auto detect = [](std::initializer_list<uint8_t> b) {
    std::vector<std::byte> v;
    for (uint8_t x : b) v.push_back(std::byte{x});
    return ehbt::core::detect_compression(v);
  };
  using ehbt::core::Compression;
  EXPECT_EQ(detect({0x28, 0xb5, 0x2f, 0xfd, 0}), Compression::Zstd);
  EXPECT_EQ(detect({0xfd, '7', 'z', 'X', 'Z', 0}), Compression::Xz);
  EXPECT_EQ(detect({0x04, 0x22, 0x4d, 0x18}), Compression::Lz4);
  EXPECT_EQ(detect({0x1f, 0x8b, 0x08}), Compression::Gzip);
  EXPECT_EQ(detect({0x7f, 'E', 'L', 'F'}), Compression::None);
  EXPECT_EQ(detect({0x28, 0xb5}), Compression::None);  // too short to tell
}

}  // namespace
