// SPDX-License-Identifier: Apache-2.0
// Sparse temporary output: buffered, flushed block by block, zero blocks skipped with a seek.
#include "core/sparse_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ehbt::core {
namespace {

// Holes are made in units of this; filesystems allocate at least 4 KiB blocks.
constexpr std::size_t kBlock = 4096;
// Bytes gathered before a flush: large enough for few system calls, small enough for RSS.
constexpr std::size_t kBuffer = 4u << 20;
// Free space left to everyone else when the disk, not a cap, is the limit.
constexpr uint64_t kDiskReserve = 64u << 20;

bool all_zero(const std::byte* p, std::size_t n) {
  // Compare word by word; the tail (never more than a block) byte by byte.
  std::size_t i = 0;
  for (; i + sizeof(uint64_t) <= n; i += sizeof(uint64_t)) {
    uint64_t w;
    std::memcpy(&w, p + i, sizeof w);
    if (w != 0) return false;
  }
  for (; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

std::string temp_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

// An open file without a name in `dir`: O_TMPFILE where the filesystem has it, else mkstemp
// and an immediate unlink.
int open_anonymous(const std::string& dir, std::string& err) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string templ = dir + "/ehbt-core-XXXXXX";
  fd = mkostemp(templ.data(), O_CLOEXEC);
  if (fd < 0) {
    err = "cannot create a temporary file in " + dir + ": " + std::strerror(errno);
    return -1;
  }
  ::unlink(templ.c_str());
  return fd;
}

}  // namespace

Expected<SparseSink, std::string> SparseSink::create(const std::string& dir, SparseSinkCaps caps) {
  SparseSink s;
  s.dir_ = temp_dir(dir);
  std::string err;
  s.fd_ = open_anonymous(s.dir_, err);
  if (s.fd_ < 0) return unexpected(err);
  struct statvfs vfs {};
  if (fstatvfs(s.fd_, &vfs) == 0) {
    const uint64_t free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
    const uint64_t usable = free_bytes > kDiskReserve ? free_bytes - kDiskReserve : 0;
    if (caps.max_disk_bytes == 0 || caps.max_disk_bytes > usable) caps.max_disk_bytes = usable;
  }
  s.caps_ = caps;
  s.buf_.reserve(kBuffer);
  return s;
}

SparseSink& SparseSink::operator=(SparseSink&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    dir_ = std::move(other.dir_);
    caps_ = other.caps_;
    size_ = other.size_;
    flushed_ = other.flushed_;
    data_bytes_ = other.data_bytes_;
    buf_ = std::move(other.buf_);
  }
  return *this;
}

SparseSink::~SparseSink() {
  if (fd_ >= 0) ::close(fd_);
}

int SparseSink::release() {
  return std::exchange(fd_, -1);
}

Expected<void, std::string> SparseSink::write(std::span<const std::byte> bytes) {
  if (bytes.size() > caps_.max_bytes - std::min(size_, caps_.max_bytes)) {
    return unexpected("decompressed core exceeds " + std::to_string(caps_.max_bytes) +
                      " bytes (Limits::max_decompressed_bytes)");
  }
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kBuffer - buf_.size());
    buf_.insert(buf_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    bytes = bytes.subspan(n);
    size_ += n;
    if (buf_.size() == kBuffer) {
      if (auto r = flush(); !r) return r;
    }
  }
  return {};
}

Expected<void, std::string> SparseSink::flush() {
  // Whole blocks of zeros are skipped; runs of data blocks go out in one pwrite each.
  std::size_t i = 0;
  while (i < buf_.size()) {
    const std::size_t len = std::min(kBlock, buf_.size() - i);
    if (all_zero(buf_.data() + i, len)) {
      i += len;
      continue;
    }
    std::size_t end = i + len;
    while (end < buf_.size()) {
      const std::size_t l = std::min(kBlock, buf_.size() - end);
      if (all_zero(buf_.data() + end, l)) break;
      end += l;
    }
    if (end - i > caps_.max_disk_bytes - std::min(data_bytes_, caps_.max_disk_bytes)) {
      return unexpected("not enough free disk space in " + dir_ + " for the decompressed core (" +
                        std::to_string(data_bytes_) +
                        " bytes of data written; set TMPDIR to a larger filesystem)");
    }
    std::size_t done = i;
    while (done < end) {
      ssize_t w =
          ::pwrite(fd_, buf_.data() + done, end - done, static_cast<off_t>(flushed_ + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        return unexpected("writing the decompressed core to " + dir_ + ": " +
                          std::strerror(w < 0 ? errno : ENOSPC));
      }
      done += static_cast<std::size_t>(w);
    }
    data_bytes_ += end - i;
    i = end;
  }
  flushed_ += buf_.size();
  buf_.clear();
  return {};
}

Expected<void, std::string> SparseSink::finish() {
  if (auto r = flush(); !r) return r;
  // A trailing run of zeros was never written: the size makes it a hole.
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    return unexpected("sizing the decompressed core: " + std::string(std::strerror(errno)));
  }
  return {};
}

}  // namespace ehbt::core
