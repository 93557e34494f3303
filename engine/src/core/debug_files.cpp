// SPDX-License-Identifier: Apache-2.0
// Lookup of separate debug files (see debug_files.hpp).
#include "core/debug_files.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "core/sysroot_path.hpp"
#include "core/warnings.hpp"
#include "util/regular_file.hpp"

namespace ehbt::core {
namespace {

constexpr const char* kSystemDebugDir = "/usr/lib/debug";

bool is_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `inside` (an absolute path as a target names it) in every debug location: each
// --debug-dir as given, usr/lib/debug within each sysroot (chroot rules), then the host's.
void add_debug_dirs(const std::string& inside, const TargetOptions& options,
                    std::vector<std::string>& out) {
  for (const std::string& dir : options.debug_dirs) {
    if (!dir.empty()) out.push_back(dir + inside);
  }
  for (const std::string& root : options.sysroots) {
    if (auto p = resolve_in_root(root, kSystemDebugDir + inside)) out.push_back(std::move(*p));
  }
  out.push_back(kSystemDebugDir + inside);
}

}  // namespace

std::optional<uint32_t> file_crc32(const std::string& path) {
  auto opened = util::open_regular_file(path);
  if (!opened) return std::nullopt;
  const int fd = *opened;
  struct stat st {};
  std::optional<uint32_t> out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    uLong crc = crc32(0L, Z_NULL, 0);
    const auto size = static_cast<std::size_t>(st.st_size);
    void* p = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    if (size == 0 || p != MAP_FAILED) {
      // zlib's length argument is 32 bits: feed large files in slices.
      const auto* bytes = static_cast<const Bytef*>(p);
      for (std::size_t done = 0; done < size;) {
        const std::size_t n = std::min<std::size_t>(size - done, UINT_MAX);
        crc = crc32(crc, bytes + done, static_cast<uInt>(n));
        done += n;
      }
      if (size > 0) munmap(p, size);
      out = static_cast<uint32_t>(crc);
    }
  }
  ::close(fd);
  return out;
}

std::vector<std::string> debug_file_candidates(const Image& image, const std::string& core_path,
                                               const std::string& file_path,
                                               const TargetOptions& options) {
  std::vector<std::string> out;
  const std::string& id = image.build_id();
  if (id.size() >= 4 && is_hex(id)) {
    add_debug_dirs("/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug", options, out);
  }
  const std::string& link = image.debuglink();
  // A debuglink is a file name; one with a directory part could lead anywhere.
  if (!link.empty() && link.find('/') == std::string::npos && link != "." && link != "..") {
    if (!file_path.empty()) {
      const std::string dir = dir_of(file_path);
      out.push_back(dir + "/" + link);
      out.push_back(dir + "/.debug/" + link);
    }
    if (!core_path.empty() && core_path.front() == '/') {
      const std::string dir = dir_of(core_path);
      add_debug_dirs((dir == "/" ? "" : dir) + "/" + link, options, out);
    }
  }
  return out;
}

std::shared_ptr<const Image> find_debug_file(const Image& image, const std::string& core_path,
                                             const std::string& file_path,
                                             const TargetOptions& options, std::string& found,
                                             DebuginfodSession* debuginfod,
                                             std::vector<Warning>* warnings) {
  found.clear();
  const std::string& id = image.build_id();
  std::optional<uint32_t> link_crc;
  for (const std::string& c : debug_file_candidates(image, core_path, file_path, options)) {
    // Not a debuglink naming the file itself, nor a FIFO or a device.
    if (c == file_path || !util::is_regular_file(c)) continue;
    const bool by_link =
        c.size() >= image.debuglink().size() && !image.debuglink().empty() &&
        c.compare(c.size() - image.debuglink().size(), std::string::npos, image.debuglink()) == 0 &&
        c.find("/.build-id/") == std::string::npos;
    if (by_link) {
      link_crc = file_crc32(c);
      if (!link_crc || *link_crc != image.debuglink_crc()) continue;
    }
    auto img = Image::open(c, options.limits);
    if (!img) continue;
    const std::string& dbg_id = (*img)->build_id();
    // Build-id candidates must carry the same id; debuglink ones passed the CRC and may
    // only lack an id, never carry another.
    if (by_link ? (!id.empty() && !dbg_id.empty() && dbg_id != id) : dbg_id != id) continue;
    if ((*img)->arch() != image.arch()) continue;
    found = c;
    return std::shared_ptr<const Image>(std::move(img.value()));
  }
  if (debuginfod == nullptr || !debuginfod->enabled() || id.empty()) return nullptr;
  DebuginfodResult got = debuginfod->fetch(id, DebuginfodKind::Debuginfo);
  if (!got.path.empty()) {
    auto img = Image::open(got.path, options.limits);
    if (img && (*img)->build_id() == id && (*img)->arch() == image.arch()) {
      found = got.path;
      return std::shared_ptr<const Image>(std::move(img.value()));
    }
  }
  // Most modules (the C library without its -dbgsym) have no debuginfo anywhere: only a
  // server that failed is worth a warning, not one that answered "not found".
  // A server found down by an earlier fetch of this target was said then.
  if (warnings != nullptr && !got.error.empty() && !got.not_found && !got.stopped_before) {
    add_warning(*warnings, Warning{kWarningDebuginfodFailed,
                                   "debuginfod: fetching the debuginfo of " + core_path +
                                       " (build-id " + id + ") failed: " + got.error,
                                   "", ""});
  }
  return nullptr;
}

void TargetDebugFiles::defer(const Image& image, const std::string& core_path,
                             const std::string& file_path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    names_[&image] = Names{core_path, file_path};
  }
  image.defer_debug_file(weak_from_this());
}

std::shared_ptr<const Image> TargetDebugFiles::find(const Image& image) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(&image);
  if (it == names_.end()) return nullptr;
  const Names names = it->second;
  std::string found;
  return find_debug_file(image, names.core_path, names.file_path, options_, found, &debuginfod_,
                         warnings_);
}

}  // namespace ehbt::core
