// SPDX-License-Identifier: Apache-2.0
// Image members that do not depend on where the image came from: reading link-time
// addresses, the executable test, and the lazily loaded symbols.
#include <elf.h>

#include <algorithm>
#include <cstring>

#include "elf/byte_view.hpp"
#include "elf/image_impl.hpp"

namespace ehbt {

Image::~Image() = default;

std::shared_ptr<Image> ImageLoader::make(const Limits& limits) {
  std::shared_ptr<Image> img(new Image());
  img->impl_ = std::make_unique<Image::Impl>();
  img->impl_->limits = limits;
  img->impl_->symbols = elf::SymbolTable(limits.max_symbols);
  return img;
}

// Inside an executable segment; or, for an image that marks no segment executable, inside
// any. One pass over the segments: this runs for every return address of a walk.
bool Image::is_executable(uint64_t link_addr) const {
  bool any_x = false, inside = false;
  for (const Segment& s : segments_) {
    const bool x = (s.flags & PF_X) != 0;
    const bool in = link_addr >= s.vaddr && link_addr - s.vaddr < s.memsz;
    if (x && in) return true;
    any_x = any_x || x;
    inside = inside || in;
  }
  return !any_x && inside;
}

std::size_t Image::read(uint64_t link_addr, std::span<std::byte> out) const {
  std::size_t done = 0;
  if (impl_ == nullptr) return 0;
  const Impl& im = *impl_;

  if (!im.pieces.empty()) {
    // An image from target memory: only the pieces it copied are known.
    for (std::size_t guard = 0; guard <= im.pieces.size() && done < out.size(); ++guard) {
      uint64_t a = link_addr + done;
      if (a < link_addr) break;
      auto it = std::find_if(im.pieces.begin(), im.pieces.end(), [a](const auto& p) {
        return a >= p.first && a - p.first < p.second.size();
      });
      if (it == im.pieces.end()) break;
      std::size_t off = static_cast<std::size_t>(a - it->first);
      std::size_t n = std::min(out.size() - done, it->second.size() - off);
      std::memcpy(out.data() + done, it->second.data() + off, n);
      done += n;
    }
    return done;
  }

  // Each step finishes either a file-backed or a zero-filled part of a segment, so two steps
  // per segment are enough unless the range leaves the segments.
  for (std::size_t guard = 0; guard <= 2 * segments_.size() + 1 && done < out.size(); ++guard) {
    uint64_t a = link_addr + done;
    if (a < link_addr) break;
    const Segment* seg = nullptr;
    for (const Segment& s : segments_) {
      if (a >= s.vaddr && a - s.vaddr < s.memsz) {
        seg = &s;
        break;
      }
    }
    if (seg == nullptr) break;
    uint64_t in_seg = a - seg->vaddr;
    uint64_t want = std::min<uint64_t>(out.size() - done, seg->memsz - in_seg);
    if (in_seg < seg->filesz) {
      uint64_t n = std::min(want, seg->filesz - in_seg);
      auto start = elf::checked_add(seg->offset, in_seg);
      if (!start || *start >= im.file.size()) break;
      n = std::min<uint64_t>(n, im.file.size() - *start);  // a truncated file ends the read
      std::memcpy(out.data() + done, im.file.data() + *start, static_cast<std::size_t>(n));
      done += static_cast<std::size_t>(n);
      if (n < std::min(want, seg->filesz - in_seg)) break;
    } else {
      std::memset(out.data() + done, 0, static_cast<std::size_t>(want));
      done += static_cast<std::size_t>(want);
    }
  }
  return done;
}

SectionRef Image::debug_frame() const {
  if (!debug_frame_.empty() || impl_ == nullptr) return debug_frame_;
  // A debug file has no debug file of its own: this never recurses further.
  const std::shared_ptr<const Image> debug = debug_file();
  return debug ? debug->debug_frame_ : SectionRef{};
}

bool Image::attach_debug_file(std::shared_ptr<const Image> debug) const {
  if (impl_ == nullptr || !debug || debug.get() == this) return false;
  std::lock_guard<std::mutex> lock(impl_->debug_mu);
  if (impl_->debug_file) return false;
  impl_->debug_file = std::move(debug);
  impl_->debug_finder.reset();
  return true;
}

void Image::defer_debug_file(std::weak_ptr<DebugFileFinder> finder) const {
  if (impl_ == nullptr) return;
  std::lock_guard<std::mutex> lock(impl_->debug_mu);
  if (!impl_->debug_file) impl_->debug_finder = std::move(finder);
}

std::shared_ptr<const Image> Image::attached_debug_file() const {
  if (impl_ == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(impl_->debug_mu);
  return impl_->debug_file;
}

std::span<const std::byte> Image::file_bytes() const {
  return impl_ == nullptr ? std::span<const std::byte>{} : impl_->file;
}

bool Image::from_file() const {
  return impl_ != nullptr && !impl_->mapping.bytes().empty();
}

ImageCache* Image::lines_cache(const std::function<std::unique_ptr<ImageCache>()>& make) const {
  if (impl_ == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(impl_->lines_mu);
  if (!impl_->lines_made) {
    impl_->lines = make();
    impl_->lines_made = true;
  }
  return impl_->lines.get();
}

std::shared_ptr<const Image> Image::debug_file() const {
  if (impl_ == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(impl_->debug_mu);
  if (impl_->debug_file) return impl_->debug_file;
  // The lookup runs once (the finder is dropped whatever it finds), under the lock: another
  // thread asking meanwhile waits for its answer rather than looking again. The finder reads
  // only this image's immutable fields, so it cannot come back to the lock.
  std::shared_ptr<DebugFileFinder> finder = impl_->debug_finder.lock();
  impl_->debug_finder.reset();
  if (finder) {
    std::shared_ptr<const Image> found = finder->find(*this);
    if (found && found.get() != this) impl_->debug_file = std::move(found);
  }
  return impl_->debug_file;
}

std::optional<Symbol> Image::symbolize(uint64_t link_addr) const {
  if (impl_ == nullptr) return std::nullopt;
  if (!impl_->symbols_ready.load(std::memory_order_acquire)) {
    if (auto found = ImageLoader::symbol_without_table(*this, link_addr)) return *found;
  }
  std::call_once(impl_->symbols_once, [this] { ImageLoader::load_symbols(*this); });
  return impl_->symbols.lookup(link_addr);
}

std::vector<std::optional<Symbol>> Image::symbolize_all(
    std::span<const uint64_t> link_addrs) const {
  if (impl_ == nullptr) return std::vector<std::optional<Symbol>>(link_addrs.size());
  if (!impl_->symbols_ready.load(std::memory_order_acquire)) {
    return ImageLoader::query_symbols(*this, link_addrs);
  }
  std::vector<std::optional<Symbol>> out;
  out.reserve(link_addrs.size());
  for (uint64_t a : link_addrs) out.push_back(impl_->symbols.lookup(a));
  return out;
}

}  // namespace ehbt
