// SPDX-License-Identifier: Apache-2.0
// ehbt::sparse_sha256 against the definition computed the obvious way in this test: the whole
// file read into memory, cut into blocks (64 KiB in /1, 4 KiB in /2), non-zero blocks hashed
// with their offsets (by OpenSSL's one-shot SHA256, not the streaming code under test). Sparse
// and fully written files must agree; a changed byte or size must not. Every case runs for
// both versions.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "sparse_sha256.hpp"

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ehbt-content-key-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string path;
};

// Writes `bytes` to `path`; with `sparse`, all-zero 4 KiB pages are seeked over (holes).
void write_file(const std::string& path, const std::vector<unsigned char>& bytes, bool sparse) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  for (std::size_t off = 0; off < bytes.size(); off += 4096) {
    std::size_t n = std::min<std::size_t>(4096, bytes.size() - off);
    bool zero = true;
    for (std::size_t i = 0; i < n && zero; ++i) zero = bytes[off + i] == 0;
    if (sparse && zero) continue;
    ASSERT_EQ(pwrite(fd, bytes.data() + off, n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
  }
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
  close(fd);
}

using ehbt::ContentKeyVersion;

}  // namespace

namespace ehbt {
// Names the parameter in test names ("v1", "v2"), not its bytes.
void PrintTo(ContentKeyVersion v, std::ostream* os) {
  *os << "v" << static_cast<int>(v);
}
}  // namespace ehbt

namespace {

std::string expected_key(const std::vector<unsigned char>& bytes, ContentKeyVersion version) {
  const bool v1 = version == ContentKeyVersion::kSparseSha256v1;
  std::string text = std::string(v1 ? "ehbt-sparse-sha256/1 " : "ehbt-sparse-sha256/2 ") +
                     std::to_string(bytes.size()) + "\n";
  std::vector<unsigned char> all(text.begin(), text.end());
  const std::size_t block = v1 ? 1u << 16 : 1u << 12;
  for (std::size_t off = 0; off < bytes.size(); off += block) {
    std::size_t n = std::min(block, bytes.size() - off);
    bool zero = true;
    for (std::size_t i = 0; i < n && zero; ++i) zero = bytes[off + i] == 0;
    if (zero) continue;
    for (int i = 0; i < 8; ++i) all.push_back(static_cast<unsigned char>(uint64_t(off) >> (8 * i)));
    all.insert(all.end(), bytes.begin() + off, bytes.begin() + off + n);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(all.data(), all.size(), digest);
  char hex[2 * SHA256_DIGEST_LENGTH + 1];
  for (int i = 0; i < SHA256_DIGEST_LENGTH; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  return hex;
}

// Data at chunk (1 MiB) and block (64 KiB) edges, a page of data inside a block of zeros, long
// holes, and a short last block.
std::vector<unsigned char> sample(std::size_t size) {
  std::vector<unsigned char> b(size, 0);
  auto fill = [&](std::size_t from, std::size_t n, unsigned char v) {
    for (std::size_t i = from; i < from + n && i < size; ++i)
      b[i] = static_cast<unsigned char>(v + i);
  };
  fill(0, 100, 1);
  fill((1u << 16) - 10, 20, 2);           // across a block edge
  fill((1u << 20) - 4096, 8192, 3);       // across a chunk edge
  fill(3u << 20, 4096, 4);                // one page in a block of zeros
  fill((5u << 20) + 12345, 3u << 20, 5);  // several chunks of data
  fill(size - 7, 7, 6);                   // the short last block
  return b;
}

class ContentKey : public ::testing::TestWithParam<ContentKeyVersion> {
 protected:
  std::string reference(const std::vector<unsigned char>& bytes) const {
    return expected_key(bytes, GetParam());
  }
  ehbt::Expected<std::string, ehbt::ContentKeyError> key(const std::string& path,
                                                         const ehbt::Limits& limits = {}) const {
    return ehbt::sparse_sha256(path, limits, GetParam());
  }
};

TEST_P(ContentKey, SparseAndFullFilesMatchTheDefinition) {
  TempDir dir;
  const auto bytes = sample((20u << 20) + 1000);
  const std::string sparse = dir.path + "/sparse", full = dir.path + "/full";
  write_file(sparse, bytes, true);
  write_file(full, bytes, false);
  const std::string want = reference(bytes);
  auto a = key(sparse);
  auto b = key(full);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(*a, want);
  EXPECT_EQ(*b, want);
}

TEST_P(ContentKey, AByteOrTheSizeChangesTheKey) {
  TempDir dir;
  auto bytes = sample(3u << 20);
  write_file(dir.path + "/a", bytes, true);
  bytes[(2u << 20) + 5] = 9;  // in a hole of the original
  write_file(dir.path + "/b", bytes, true);
  bytes.push_back(0);  // a trailing zero: only the size differs
  write_file(dir.path + "/c", bytes, true);
  auto a = key(dir.path + "/a");
  auto b = key(dir.path + "/b");
  auto c = key(dir.path + "/c");
  ASSERT_TRUE(a && b && c);
  EXPECT_NE(*a, *b);
  EXPECT_NE(*b, *c);
  EXPECT_EQ(*c, reference(bytes));
}

TEST_P(ContentKey, ExtentCapStillGivesTheSameKey) {
  TempDir dir;
  const auto bytes = sample(12u << 20);
  write_file(dir.path + "/f", bytes, true);
  ehbt::Limits limits;
  limits.max_content_key_extents = 1;  // the rest is read as data, holes and all
  auto capped = key(dir.path + "/f", limits);
  ASSERT_TRUE(capped);
  EXPECT_EQ(*capped, reference(bytes));
}

// Several data pages in one block with holes between (hashed piece by piece), a block whose
// only data is written zeros (skipped like a hole), and a file hashed right after one with data
// where this one has holes: the reused read buffer must not leak the earlier file's bytes.
TEST_P(ContentKey, HolesInsideABlockAndAReusedBuffer) {
  TempDir dir;
  std::vector<unsigned char> full(4u << 20);
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<unsigned char>(i * 7 + 1);
  write_file(dir.path + "/full", full, false);
  std::vector<unsigned char> holes(4u << 20, 0);
  for (std::size_t page : {1u, 3u, 4u, 9u, 15u}) holes[page * 4096 + 17] = 0x5a;
  holes[(2u << 20) + 4096 * 5 + 1] = 0x33;
  write_file(dir.path + "/holes", holes, true);
  // Written zeros: data extents, but an all-zero block all the same.
  int fd = open((dir.path + "/holes").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::vector<unsigned char> zeros(8192, 0);
  ASSERT_EQ(pwrite(fd, zeros.data(), zeros.size(), 3u << 20), 8192);
  close(fd);
  auto a = key(dir.path + "/full");
  auto b = key(dir.path + "/holes");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, reference(full));
  EXPECT_EQ(*b, reference(holes));
}

TEST_P(ContentKey, EmptyMissingAndSpecialFiles) {
  TempDir dir;
  write_file(dir.path + "/empty", {}, false);
  auto empty = key(dir.path + "/empty");
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, reference({}));
  auto missing = key(dir.path + "/nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().error_number, ENOENT);
  EXPECT_NE(missing.error().message.find("/nope"), std::string::npos);
  ASSERT_EQ(mkfifo((dir.path + "/fifo").c_str(), 0600), 0);
  auto fifo = key(dir.path + "/fifo");  // must not block
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().error_number, EINVAL);
}

INSTANTIATE_TEST_SUITE_P(Versions, ContentKey,
                         ::testing::Values(ContentKeyVersion::kSparseSha256v1,
                                           ContentKeyVersion::kSparseSha256v2),
                         [](const auto& info) {
                           return info.param == ContentKeyVersion::kSparseSha256v1 ? "v1" : "v2";
                         });

// The two forms of one content never share a key (a store of /1 keys would not know its cores
// by /2 keys), and /2 is the default.
TEST(ContentKeyVersions, DifferAndTheDefaultIsTwo) {
  TempDir dir;
  const auto bytes = sample(2u << 20);
  write_file(dir.path + "/f", bytes, true);
  auto v1 = ehbt::sparse_sha256(dir.path + "/f", {}, ContentKeyVersion::kSparseSha256v1);
  auto v2 = ehbt::sparse_sha256(dir.path + "/f", {}, ContentKeyVersion::kSparseSha256v2);
  auto dflt = ehbt::sparse_sha256(dir.path + "/f");
  ASSERT_TRUE(v1 && v2 && dflt);
  EXPECT_NE(*v1, *v2);
  EXPECT_EQ(*dflt, *v2);
}

}  // namespace
