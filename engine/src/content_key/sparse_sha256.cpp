// SPDX-License-Identifier: Apache-2.0
// sparse-sha256/1 (see sparse_sha256.hpp) with the data extents from SEEK_DATA/SEEK_HOLE,
// read with pread into one reused buffer and hashed with OpenSSL's SHA-256 (SHA-NI where the
// CPU has it: ~2 GB/s, several times Python's per-block loop around the same hash).
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "sparse_sha256.hpp"

namespace ehbt {

namespace {

constexpr uint64_t kBlock = 1u << 16;
constexpr uint64_t kChunk = 16 * kBlock;  // read 1 MiB at a time
constexpr char kPrefix[] = "ehbt-sparse-sha256/1";

struct Extent {
  uint64_t start, end;
};

ContentKeyError error_of(const std::string& path, const char* what, int err) {
  return ContentKeyError{err, path + ": " + what + ": " + strerror(err)};
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The file's data extents in order; the whole file when the filesystem cannot tell, and the
// rest of the file as one extent once `cap` extents are listed.
std::vector<Extent> data_extents(int fd, uint64_t size, uint32_t cap) {
  std::vector<Extent> out;
  uint64_t pos = 0;
  while (pos < size) {
    if (out.size() >= cap) {
      out.push_back({pos, size});
      break;
    }
    off_t start = lseek(fd, static_cast<off_t>(pos), SEEK_DATA);
    if (start < 0) {
      if (errno == ENXIO) break;  // nothing but a hole after pos
      return {{0, size}};
    }
    off_t end = lseek(fd, start, SEEK_HOLE);
    if (end < 0 || end <= start) return {{0, size}};
    out.push_back({static_cast<uint64_t>(start), std::min<uint64_t>(end, size)});
    pos = static_cast<uint64_t>(end);
  }
  return out;
}

// Maximal runs of whole blocks (the last one may be short) touched by some extent.
std::vector<Extent> touched_runs(const std::vector<Extent>& extents, uint64_t size) {
  std::vector<Extent> runs;
  for (const Extent& e : extents) {
    uint64_t lo = e.start - e.start % kBlock;
    uint64_t hi = std::min(size, (e.end + kBlock - 1) / kBlock * kBlock);
    if (!runs.empty() && lo <= runs.back().end) {
      runs.back().end = std::max(runs.back().end, hi);
    } else if (hi > lo) {
      runs.push_back({lo, hi});
    }
  }
  return runs;
}

bool all_zero(const unsigned char* p, std::size_t n) {
  static const std::array<unsigned char, kBlock> zeros{};
  return memcmp(p, zeros.data(), n) == 0;
}

struct DigestDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

Expected<std::string, ContentKeyError> sparse_sha256(const std::string& path,
                                                     const Limits& limits) {
  // O_NONBLOCK: a path swapped for a FIFO since it was examined must not block the caller.
  Fd fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return unexpected(error_of(path, "cannot open", errno));
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return unexpected(error_of(path, "cannot stat", errno));
  if (!S_ISREG(st.st_mode)) return unexpected(error_of(path, "not a regular file", EINVAL));
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  std::unique_ptr<EVP_MD_CTX, DigestDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return unexpected(ContentKeyError{ENOMEM, path + ": cannot start SHA-256"});
  }
  const std::string head = std::string(kPrefix) + " " + std::to_string(size) + "\n";
  EVP_DigestUpdate(ctx.get(), head.data(), head.size());

  const std::vector<Extent> extents = data_extents(fd.get(), size, limits.max_content_key_extents);
  std::vector<unsigned char> buf(kChunk);
  std::size_t first = 0;  // first extent that may still overlap the chunk
  for (const Extent& run : touched_runs(extents, size)) {
    for (uint64_t lo = run.start; lo < run.end; lo += kChunk) {
      const uint64_t hi = std::min(run.end, lo + kChunk);
      uint64_t filled = lo;  // bytes of the chunk before this offset are in buf
      while (first < extents.size() && extents[first].end <= lo) ++first;
      for (std::size_t k = first; k < extents.size() && extents[k].start < hi; ++k) {
        uint64_t a = std::max(extents[k].start, lo);
        const uint64_t b = std::min(extents[k].end, hi);
        if (a > filled) memset(buf.data() + (filled - lo), 0, a - filled);
        while (a < b) {  // a short read is retried; none at all is the end of the file
          ssize_t got = pread(fd.get(), buf.data() + (a - lo), b - a, static_cast<off_t>(a));
          if (got < 0 && errno == EINTR) continue;
          if (got < 0) return unexpected(error_of(path, "cannot read", errno));
          if (got == 0) break;
          a += static_cast<uint64_t>(got);
        }
        filled = std::max(filled, a);
        if (extents[k].end > hi) break;  // continues into the next chunk
      }
      if (hi > filled) memset(buf.data() + (filled - lo), 0, hi - filled);
      for (uint64_t off = 0; off < hi - lo; off += kBlock) {
        const std::size_t n = static_cast<std::size_t>(std::min(kBlock, hi - lo - off));
        const unsigned char* block = buf.data() + off;
        if (all_zero(block, n)) continue;
        unsigned char le[8];
        for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>((lo + off) >> (8 * i));
        EVP_DigestUpdate(ctx.get(), le, sizeof le);
        EVP_DigestUpdate(ctx.get(), block, n);
      }
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) {
    return unexpected(ContentKeyError{EIO, path + ": SHA-256 failed"});
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

}  // namespace ehbt
