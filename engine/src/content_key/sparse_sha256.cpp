// SPDX-License-Identifier: Apache-2.0
// sparse-sha256/1 and /2 (see sparse_sha256.hpp) with the data extents from SEEK_DATA/SEEK_HOLE,
// read with pread into a reused buffer and hashed with OpenSSL's SHA-256 (SHA-NI where the CPU
// has it: ~1.7 GB/s, several times Python's per-block loop around the same hash). The hash is
// most of the cost, and it covers whole blocks: a 16-thread CPython core with 3.9 MB of data
// hashes 6.6 MB in /1's 64 KiB blocks (5.3 ms), 3.9 MB in /2's 4 KiB pages (3.4 ms). Not mmap: on
// this project's VMs every page fault of a fresh mapping cost more than pread's copy (a mapped key
// took twice as long, perf: faults in memcmp).
//
// OpenSSL's direct SHA-256 functions, not EVP: EVP's first use in a process loads OpenSSL's
// default provider, about 1 ms that every fresh ehbt-triage worker paid before its first key,
// and the direct functions run the same code (64 MB: 42.4 ms either way). They are deprecated,
// not removed, in OpenSSL 3 (Debian 12's); a release that removes them needs EVP again.
#include <errno.h>
#include <fcntl.h>
// The direct SHA256_* functions are deprecated (not removed) in OpenSSL 3.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "sparse_sha256.hpp"
#include "util/regular_file.hpp"
#include "util/unique_fd.hpp"

namespace ehbt {

namespace {

constexpr uint64_t kMaxBlock = 1u << 16;  // /1's block; /2's is a page, 4 KiB
constexpr uint64_t kChunk = 1u << 20;     // read 1 MiB at a time: whole blocks of either

uint64_t block_size(ContentKeyVersion v) {
  return v == ContentKeyVersion::kSparseSha256v1 ? kMaxBlock : 4096;
}

struct Extent {
  uint64_t start, end;
};

ContentKeyError error_of(const std::string& path, const char* what, int err) {
  return ContentKeyError{err, path + ": " + what + ": " + strerror(err)};
}

using Fd = util::UniqueFd;

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
std::vector<Extent> touched_runs(const std::vector<Extent>& extents, uint64_t size,
                                 uint64_t block) {
  std::vector<Extent> runs;
  for (const Extent& e : extents) {
    uint64_t lo = e.start - e.start % block;
    uint64_t hi = std::min(size, (e.end + block - 1) / block * block);
    if (!runs.empty() && lo <= runs.back().end) {
      runs.back().end = std::max(runs.back().end, hi);
    } else if (hi > lo) {
      runs.push_back({lo, hi});
    }
  }
  return runs;
}

const unsigned char* zero_bytes() {
  static const std::array<unsigned char, kMaxBlock> zeros{};
  return zeros.data();
}

bool all_zero(const unsigned char* p, std::size_t n) {
  return memcmp(p, zero_bytes(), n) == 0;
}

// A 1 MiB read buffer, mapped with its pages populated in one call: faulted in page by page
// (what a fresh malloc'ed buffer gets), its 256 pages cost a forked triage worker's first key
// ~3 ms on this project's VMs; MAP_POPULATE takes ~0.3 ms.
struct Unmap {
  void operator()(unsigned char* p) const { munmap(p, kChunk); }
};
using Buffer = std::unique_ptr<unsigned char, Unmap>;

Buffer map_buffer() {
  void* p = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return Buffer(p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p));
}

// Read buffers kept for the next call, so that each is mapped once per process. A worker
// hashes on at most two threads at once, so the pool stays tiny.
class SpareBuffers {
 public:
  Buffer take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!spare_.empty()) {
        Buffer b = std::move(spare_.back());
        spare_.pop_back();
        return b;
      }
    }
    return map_buffer();
  }
  void give(Buffer b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (b && spare_.size() < kKeep) spare_.push_back(std::move(b));
  }

 private:
  static constexpr std::size_t kKeep = 4;
  std::mutex mu_;
  std::vector<Buffer> spare_;
};

SpareBuffers& spare_buffers() {
  static SpareBuffers* pool = new SpareBuffers;  // never destroyed: usable at exit
  return *pool;
}

// Returns the buffer to the pool however the key ends.
struct BufferLease {
  Buffer buf = spare_buffers().take();
  ~BufferLease() { spare_buffers().give(std::move(buf)); }
};

// SHA-256 by OpenSSL's direct functions (see the top).
class Sha256 {
 public:
  bool start() { return SHA256_Init(&ctx_) == 1; }
  void update(const void* p, std::size_t n) { SHA256_Update(&ctx_, p, n); }
  bool finish(unsigned char (&out)[SHA256_DIGEST_LENGTH]) { return SHA256_Final(out, &ctx_) == 1; }

 private:
  SHA256_CTX ctx_{};
};

// Hashes the blocks of [lo, hi) whose data segments `segs` (sorted, in buf at offset - lo) are
// not all zeros; the holes between them are zeros by definition and are hashed from a zero
// buffer, never written into buf (no memset of the 2.6 MB of holes a CPython core's blocks hold).
void hash_chunk(Sha256& sha, const unsigned char* buf, uint64_t lo, uint64_t hi, uint64_t block,
                const std::vector<Extent>& segs) {
  std::size_t s = 0;
  for (uint64_t blo = lo; blo < hi; blo += block) {
    const uint64_t bhi = std::min(hi, blo + block);
    while (s < segs.size() && segs[s].end <= blo) ++s;
    bool zero = true;
    for (std::size_t k = s; zero && k < segs.size() && segs[k].start < bhi; ++k) {
      const uint64_t a = std::max(segs[k].start, blo), b = std::min(segs[k].end, bhi);
      zero = all_zero(buf + (a - lo), b - a);
    }
    if (zero) continue;
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(blo >> (8 * i));
    sha.update(le, sizeof le);
    uint64_t pos = blo;
    for (std::size_t k = s; k < segs.size() && segs[k].start < bhi; ++k) {
      const uint64_t a = std::max(segs[k].start, blo), b = std::min(segs[k].end, bhi);
      if (a > pos) sha.update(zero_bytes(), a - pos);
      sha.update(buf + (a - lo), b - a);
      pos = b;
    }
    if (bhi > pos) sha.update(zero_bytes(), bhi - pos);
  }
}

}  // namespace

Expected<std::string, ContentKeyError> sparse_sha256(const std::string& path, const Limits& limits,
                                                     ContentKeyVersion version) {
  const uint64_t block = block_size(version);
  // A FIFO or device is never opened: a FIFO would block the caller.
  auto opened = util::open_regular_file(path);
  if (!opened) {
    if (opened.error().error == 0) return unexpected(error_of(path, "not a regular file", EINVAL));
    return unexpected(error_of(path, "cannot open", opened.error().error));
  }
  Fd fd(*opened);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return unexpected(error_of(path, "cannot stat", errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  Sha256 sha;
  if (!sha.start()) return unexpected(ContentKeyError{ENOMEM, path + ": cannot start SHA-256"});
  const std::string head = "ehbt-sparse-sha256/" + std::to_string(static_cast<int>(version)) + " " +
                           std::to_string(size) + "\n";
  sha.update(head.data(), head.size());

  const std::vector<Extent> extents = data_extents(fd.get(), size, limits.max_content_key_extents);
  BufferLease lease;
  if (!lease.buf) return unexpected(ContentKeyError{ENOMEM, path + ": no memory to read it"});
  unsigned char* buf = lease.buf.get();
  std::vector<Extent> segs;  // the chunk's data, in buf at (offset - chunk start)
  std::size_t first = 0;     // first extent that may still overlap the chunk
  for (const Extent& run : touched_runs(extents, size, block)) {
    for (uint64_t lo = run.start; lo < run.end; lo += kChunk) {
      const uint64_t hi = std::min(run.end, lo + kChunk);
      while (first < extents.size() && extents[first].end <= lo) ++first;
      segs.clear();
      for (std::size_t k = first; k < extents.size() && extents[k].start < hi; ++k) {
        const uint64_t a = std::max(extents[k].start, lo);
        const uint64_t b = std::min(extents[k].end, hi);
        uint64_t at = a;
        while (at < b) {  // a short read is retried; none at all is the end of the file
          ssize_t got = pread(fd.get(), buf + (at - lo), b - at, static_cast<off_t>(at));
          if (got < 0 && errno == EINTR) continue;
          if (got < 0) return unexpected(error_of(path, "cannot read", errno));
          if (got == 0) break;
          at += static_cast<uint64_t>(got);
        }
        if (at < b) memset(buf + (at - lo), 0, b - at);  // the file shrank: zeros, as holes
        segs.push_back({a, b});
      }
      hash_chunk(sha, buf, lo, hi, block, segs);
    }
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  if (!sha.finish(digest)) return unexpected(ContentKeyError{EIO, path + ": SHA-256 failed"});
  const unsigned int len = SHA256_DIGEST_LENGTH;
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
