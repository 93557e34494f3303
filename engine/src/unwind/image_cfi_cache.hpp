// SPDX-License-Identifier: Apache-2.0
// The parsed unwind tables of an image live in the image's cache slot (Image::cache), so every
// walk through the same image - across threads and cores of one build - parses them once:
// the DWARF CFI (.eh_frame, .debug_frame) and the SFrame tables (native, converted).
#pragma once

#include <memory>

#include "arch/arch_ops.hpp"
#include "dwarf/cfi.hpp"
#include "ehbt/image.hpp"
#include "ehbt/limits.hpp"
#include "unwind/image_sframe.hpp"
#include "unwind/known_starts.hpp"

namespace ehbt::unwind {

// The unwinder's per-image state. The unwinder owns Image::cache: a cache of another type
// found there is replaced.
class CfiImageCache final : public ImageCache {
 public:
  CfiImageCache(const Image& image, const Limits& limits);
  dwarf::ImageCfi& cfi() { return cfi_; }
  // The image's SFrame tables, created on first use (a walk that never asks for SFrame pays
  // nothing for them).
  ImageSFrame& sframe();

 private:
  const Image& image_;  // owns this cache
  Limits limits_;
  dwarf::ImageCfi cfi_;
  std::unique_ptr<ImageSFrame> sframe_;
};

// The image's cache, created on first use with `limits`. Not thread-safe: two threads must not
// unwind through the same Image at once.
CfiImageCache& image_cache(const Image& image, const Limits& limits);

// The image's CFI, created on first use with `limits`. Not thread-safe either.
dwarf::ImageCfi& image_cfi(const Image& image, const Limits& limits);

// Remembers the last image looked up, so that a walk staying in one image skips the cache's
// type check.
struct CfiMemo {
  const Image* image = nullptr;
  CfiImageCache* cache = nullptr;
  // The arch's operations: one walk has one arch, and arch_ops() costs a switch and a
  // static-initialisation check on every step.
  const arch::ArchOps* ops = nullptr;
  Arch ops_arch = Arch::X86_64;
  // What the walk has learnt of where functions start, from the frames it proved (a memo lives
  // for one walk): the proof of a callee whose start nothing else says uses it.
  KnownStarts known_starts;
  // A memo for the one step made to prove another step's candidate (the step of the frame above
  // it, or of a scanned word, by its table: step_context.cpp, strategies/scan.cpp). Its own
  // proofs ask for no such step in turn, so the check is one step deep, never a walk.
  bool nested = false;

  const arch::ArchOps& get_ops(Arch arch) {
    if (ops == nullptr || ops_arch != arch) {
      ops = &arch::arch_ops(arch);
      ops_arch = arch;
    }
    return *ops;
  }

  CfiImageCache& get_cache(const Image& img, const Limits& limits) {
    if (image != &img) {
      cache = &image_cache(img, limits);
      image = &img;
    }
    return *cache;
  }
  dwarf::ImageCfi& get(const Image& img, const Limits& limits) {
    return get_cache(img, limits).cfi();
  }
};

}  // namespace ehbt::unwind
