// SPDX-License-Identifier: Apache-2.0
// Builds an image's ImageCfi from its sections: .eh_frame_hdr is the data base of its own
// encodings, there is no text base, and indirect pointers are read from the file's segments.
// The SFrame tables come later, on first use.
#include "unwind/image_cfi_cache.hpp"

#include <array>
#include <typeinfo>

namespace ehbt::unwind {
namespace {

dwarf::SectionView view(const SectionRef& s) {
  return {s.addr, s.bytes};
}

dwarf::IndirectReader indirect_reader(const Image& image) {
  return [&image](uint64_t link_addr) -> std::optional<uint64_t> {
    const unsigned size = image.address_size();
    std::array<std::byte, 8> buf{};
    if (size == 0 || size > buf.size()) return std::nullopt;
    if (image.read(link_addr, std::span(buf.data(), size)) != size) return std::nullopt;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; ++i) {
      unsigned idx = image.big_endian() ? i : size - 1 - i;
      v = (v << 8) | std::to_integer<uint64_t>(buf[idx]);
    }
    return v;
  };
}

}  // namespace

CfiImageCache::CfiImageCache(const Image& image, const Limits& limits)
    : image_(image),
      limits_(limits),
      cfi_(view(image.eh_frame_hdr()), view(image.eh_frame()), dwarf::SectionView{},
           dwarf::Format{image.big_endian(), image.address_size()},
           dwarf::Bases{0, image.eh_frame_hdr().addr}, limits, indirect_reader(image)) {
  // .debug_frame on first need: the image's own, else its separate debug file's, which is
  // looked up (maybe fetched) only then -- not for a module whose .eh_frame answers.
  cfi_.set_debug_frame_source([&image] { return view(image.debug_frame()); });
}

ImageSFrame& CfiImageCache::sframe() {
  if (!sframe_) sframe_ = std::make_unique<ImageSFrame>(image_, cfi_, limits_);
  return *sframe_;
}

CfiImageCache& image_cache(const Image& image, const Limits& limits) {
  // The class is final: comparing the dynamic type is the whole check dynamic_cast would
  // make, without its walk of the hierarchy (this runs each time a walk changes module).
  ImageCache* held = image.cache();
  if (held != nullptr && typeid(*held) == typeid(CfiImageCache)) {
    return *static_cast<CfiImageCache*>(held);
  }
  auto fresh = std::make_unique<CfiImageCache>(image, limits);
  CfiImageCache& cache = *fresh;
  image.set_cache(std::move(fresh));
  return cache;
}

dwarf::ImageCfi& image_cfi(const Image& image, const Limits& limits) {
  return image_cache(image, limits).cfi();
}

}  // namespace ehbt::unwind
