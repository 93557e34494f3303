// SPDX-License-Identifier: Apache-2.0
// Finding, checking and writing the files of persistent line answers (see answer_cache.hpp).
#include "lines/answer_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <span>
#include <string_view>

#include "elf/image_impl.hpp"  // ImageLoader::impl(): no_debug_info
#include "lines/answer_records.hpp"
#include "lines/cache_dir.hpp"
#include "util/fnv.hpp"
#include "util/hex.hpp"
#include "util/own_build_id.hpp"
#include "util/unique_fd.hpp"

namespace ehbt::lines {
namespace {

// Part of every file's key: a file of another layout is never read as this one.
constexpr uint64_t kFormat = 1;
constexpr std::string_view kSuffix = ".lines";
// A file used is touched (its mtime orders eviction) when older than this, not on every run.
constexpr time_t kTouchAfterSeconds = 600;

}  // namespace

std::unique_ptr<AnswerCache> AnswerCache::open(const Image& image, const Limits& limits) {
  if (limits.max_debug_cache_bytes == 0 || limits.max_line_answers_bytes == 0) return nullptr;
  const std::string& engine = util::own_build_id();
  if (engine.empty()) return nullptr;
  // The file open_image_dwarf() reads first: the image's own DWARF, else its debug file's.
  const Image* source = nullptr;
  std::shared_ptr<const Image> debug;
  if (!ImageLoader::impl(image).no_debug_info) {
    source = &image;
  } else {
    debug = image.debug_file();
    if (debug && !ImageLoader::impl(*debug).no_debug_info) source = debug.get();
  }
  if (source == nullptr || !source->from_file() || source->build_id().empty() ||
      source->build_id().size() > 128) {
    return nullptr;
  }
  std::optional<FileIdentity> id = FileIdentity::of(source->name());
  const std::string root = ehbt_cache_dir();
  if (!id || root.empty()) return nullptr;
  auto cache = std::unique_ptr<AnswerCache>(new AnswerCache());
  cache->dir_root_ = root;
  cache->cap_ = limits.max_line_answers_bytes;
  cache->max_inlined_ = limits.max_inline_depth;
  cache->want_ = AnswerFileHeader{
      engine,
      *id,
      {limits.max_debug_bytes, limits.max_line_dies, limits.max_inline_depth, limits.max_aranges},
      std::nullopt};
  // The name hashes the header without its dwz file, which only the DWARF can name.
  uint64_t key = util::kFnvBasis;
  util::fnv1a_u64(key, kFormat);
  const std::string fields = answer_file_start(cache->want_);
  util::fnv1a(key, fields.data(), fields.size());
  cache->name_ = source->build_id() + "." + util::bytes_hex(std::as_bytes(std::span(&key, 1))) +
                 std::string(kSuffix);
  util::UniqueFd dir(open_private_dir(root, "lines"));
  if (dir.get() < 0) return nullptr;
  cache->load(dir.get());
  return cache;
}

void AnswerCache::load(int dir) {
  util::UniqueFd fd(::openat(dir, name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return;
  struct stat st;
  // Appends stop at cap_; concurrent writers may pass it by a few records.
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      static_cast<uint64_t>(st.st_size) / 2 > cap_) {
    return;
  }
  bytes_.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < bytes_.size()) {
    const ssize_t n = ::read(fd.get(), bytes_.data() + got, bytes_.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  bytes_.resize(got);
  view_ = parse_answer_file(bytes_);
  if (!view_.header) return;
  const AnswerFileHeader& h = *view_.header;
  AnswerFileHeader expected = want_;
  expected.alt = h.alt;  // checked against the file system instead
  if (!(h == expected)) return;
  // The dwz file the answers were read with must be there as it was.
  if (h.alt && FileIdentity::of(h.alt->path) != h.alt) return;
  valid_ = true;
  loaded_alt_ = h.alt;
  damaged_ = view_.damaged;
  for (const RecordSpan& r : view_.records) {
    uint64_t pc = 0;
    // Checksums are checked when a pc is asked for (find()): reading one costs a pass over it.
    if (!answer_pc(
            std::string_view(bytes_).substr(r.at + kRecordFrameBytes, r.size - kRecordFrameBytes),
            pc)) {
      damaged_ = true;
      continue;
    }
    index_.emplace(pc, r);  // the first record of a pc decides
  }
  if (std::time(nullptr) - st.st_mtime > kTouchAfterSeconds) ::futimens(fd.get(), nullptr);
}

std::optional<std::optional<SourceInfo>> AnswerCache::find(uint64_t pc) {
  auto it = index_.find(pc);
  if (it == index_.end()) return std::nullopt;
  const std::optional<std::string_view> payload = record_payload(bytes_, it->second);
  uint64_t got_pc = 0;
  std::optional<SourceInfo> info;
  if (!payload || !read_answer(*payload, max_inlined_, got_pc, info) || got_pc != pc) {
    // Damaged: asked of the DWARF again, and the file rewritten without it at the next add().
    damaged_ = true;
    index_.erase(it);
    return std::nullopt;
  }
  ++hits_;
  return info;
}

void AnswerCache::bind(const DwarfFile& file) {
  bound_ = false;
  if (file.path() != want_.source.path) return;
  want_.alt.reset();
  if (file.names_alt()) {
    const std::string alt = file.alt_path();
    if (alt.empty()) return;  // answers without the dwz file lack what it holds
    want_.alt = FileIdentity::of(alt);
    if (!want_.alt) return;
  }
  header_ = answer_file_start(want_);
  bound_ = true;
}

void AnswerCache::add(uint64_t pc, const std::optional<SourceInfo>& info) {
  if (!bound_ || full_) return;
  std::string payload;
  if (!append_answer(payload, pc, info, max_inlined_)) return;
  const std::string record = framed_record(payload);
  util::UniqueFd dir(open_private_dir(dir_root_, "lines"));
  if (dir.get() < 0) return;
  const bool same_alt = valid_ && loaded_alt_ == want_.alt;
  if (same_alt && !damaged_) {
    util::UniqueFd fd(::openat(dir.get(), name_.c_str(),
                               O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    // Appended to only while it starts with this header: another process may have replaced
    // it since it was read (with another dwz file, say).
    std::string found(header_.size(), '\0');
    if (fd.get() >= 0 && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == ::geteuid() &&
        ::pread(fd.get(), found.data(), found.size(), 0) == static_cast<ssize_t>(found.size()) &&
        found == header_) {
      if (static_cast<uint64_t>(st.st_size) + record.size() > cap_) {
        full_ = true;
      } else if (::write(fd.get(), record.data(), record.size()) !=
                 static_cast<ssize_t>(record.size())) {
        full_ = true;  // a short write (disk full) leaves a torn record: readers stop there
      }
      return;
    }
    // Gone (evicted) or another file now: made again below.
  }
  // A new file: the records read before that still check out, when they were read with the
  // same dwz file, and this one.
  std::string records;
  if (same_alt) {
    for (const RecordSpan& r : view_.records) {
      if (record_payload(bytes_, r)) records.append(bytes_, r.at, r.size);
    }
  }
  records += record;
  if (replace(dir.get(), records)) {
    valid_ = true;
    loaded_alt_ = want_.alt;
    damaged_ = false;
    view_.records.clear();  // copied into the new file: not again
  } else {
    full_ = true;
  }
}

bool AnswerCache::replace(int dir, const std::string& records) {
  const std::string content = header_ + records;
  const uint64_t dir_cap =
      cap_ > UINT64_MAX / kAnswerFilesPerCap ? UINT64_MAX : cap_ * kAnswerFilesPerCap;
  return place_cache_file(dir, name_, kSuffix, cap_, dir_cap, [&](int out) -> uint64_t {
    const ssize_t n = ::write(out, content.data(), content.size());
    return n == static_cast<ssize_t>(content.size()) ? content.size() : 0;
  });
}

}  // namespace ehbt::lines
