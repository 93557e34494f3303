// The parsed CFI of an image lives in the image's cache slot (Image::cache), so every walk
// through the same image - across threads and cores of one build - parses it once.
#pragma once

#include "dwarf/cfi.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"

namespace ehbt::unwind {

// The unwinder's per-image state. The unwinder owns Image::cache: a cache of another type
// found there is replaced.
class CfiImageCache final : public ImageCache {
 public:
  CfiImageCache(const Image& image, const Limits& limits);
  dwarf::ImageCfi& cfi() { return cfi_; }

 private:
  dwarf::ImageCfi cfi_;
};

// The image's CFI, created on first use with `limits`. Not thread-safe: two threads must not
// unwind through the same Image at once.
dwarf::ImageCfi& image_cfi(const Image& image, const Limits& limits);

// Remembers the last image looked up, so that a walk staying in one image skips the cache's
// type check.
struct CfiMemo {
  const Image* image = nullptr;
  dwarf::ImageCfi* cfi = nullptr;

  dwarf::ImageCfi& get(const Image& img, const Limits& limits) {
    if (image != &img) {
      cfi = &image_cfi(img, limits);
      image = &img;
    }
    return *cfi;
  }
};

}  // namespace ehbt::unwind
