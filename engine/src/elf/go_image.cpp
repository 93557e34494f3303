// SPDX-License-Identifier: Apache-2.0
#include "elf/go_image.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "elf/image_impl.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::elf {
namespace {

// The magics of the layouts GoPclntab reads, in the first 4 bytes of a table: 0xfffffff?
// with the low nibble 0, 1, a or b. Tested before a full header parse.
bool magic_at(const std::byte* p, bool big_endian) {
  const std::byte* ff = big_endian ? p : p + 1;
  const uint8_t low = std::to_integer<uint8_t>(big_endian ? p[3] : p[0]);
  if (ff[0] != std::byte{0xff} || ff[1] != std::byte{0xff} || ff[2] != std::byte{0xff}) {
    return false;
  }
  return low == 0xf0 || low == 0xf1 || low == 0xfa || low == 0xfb;
}

std::optional<GoPclntab> search_segments(const Image& image, std::span<const std::byte> file,
                                         uint64_t text_hint, const Limits& limits, uint64_t& addr) {
  const uint64_t step = image.address_size();
  uint64_t budget = limits.max_image_bytes;
  for (const Segment& seg : image.segments()) {
    // Read-only data, or (position-independent builds) the relro part of the data segment.
    if ((seg.flags & PF_X) != 0 || seg.offset >= file.size()) continue;
    const uint64_t size = std::min<uint64_t>(seg.filesz, file.size() - seg.offset);
    const std::span<const std::byte> bytes = file.subspan(seg.offset, size);
    for (uint64_t at = 0; at + 8 <= bytes.size() && budget > 0; at += step, budget -= step) {
      if (!magic_at(bytes.data() + at, image.big_endian())) continue;
      auto table = GoPclntab::parse(bytes.subspan(at), text_hint);
      if (!table) continue;
      auto first = table->func(0);
      if (first && image.is_executable(first->entry)) {
        addr = seg.vaddr + at;
        return table;
      }
    }
  }
  return std::nullopt;
}

// Words of runtime.moduledata before `text` and before `gofunc`: pcHeader, six slices of three
// words, findfunctab, minpc, maxpc; then text .. enoptrbss (10), 1.20+'s covctrs and ecovctrs,
// end, gcdata, gcbss, types, etypes, rodata.
constexpr uint64_t kModuledataText = 22;
constexpr uint64_t kModuledataGofunc118 = 38;
constexpr uint64_t kModuledataGofunc120 = 40;

std::optional<uint64_t> find_gofunc(const Image& image, const GoPclntab& table, uint64_t addr,
                                    std::span<const std::byte> file, const Limits& limits) {
  if (table.version() < GoPclntab::Version::Go118 || addr == 0) return std::nullopt;
  const unsigned w = table.ptr_size();
  const uint64_t gofunc_word =
      table.version() >= GoPclntab::Version::Go120 ? kModuledataGofunc120 : kModuledataGofunc118;
  const uint64_t record = (gofunc_word + 1) * w;
  uint64_t budget = limits.max_image_bytes;
  auto word = [&](std::span<const std::byte> bytes, uint64_t at) {
    util::ByteReader r(bytes, table.big_endian());
    uint64_t v = 0;
    return r.seek(at) && r.read_uint(w, v) ? v : 0;
  };
  // The first word as it is stored, compared in place: the scan visits every word of the
  // data segments (megabytes for a Go binary), and decoding each through a ByteReader was
  // half of `ehbt core` on the Go fixture cores.
  if (w != 4 && w != 8) return std::nullopt;             // GoPclntab reads no other pointer size
  if (w == 4 && (addr >> 32) != 0) return std::nullopt;  // no word can hold it
  std::byte first[8] = {};
  for (unsigned i = 0; i < w; ++i) {
    const unsigned shift = 8 * (table.big_endian() ? w - 1 - i : i);
    first[i] = static_cast<std::byte>((addr >> shift) & 0xff);
  }
  uint64_t first64 = 0;
  uint32_t first32 = 0;
  std::memcpy(&first64, first, 8);
  std::memcpy(&first32, first, 4);
  auto first_at = [&](const std::byte* p) {
    if (w == 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v == first64;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v == first32;
  };
  // runtime.firstmoduledata is a variable (.noptrdata): the writable segments are searched
  // first, the read-only ones (the table itself, hundreds of KB) only when they hold none.
  std::vector<const Segment*> order;
  for (bool writable : {true, false}) {
    for (const Segment& seg : image.segments()) {
      if ((seg.flags & PF_X) == 0 && ((seg.flags & PF_W) != 0) == writable) order.push_back(&seg);
    }
  }
  for (const Segment* seg_ptr : order) {
    const Segment& seg = *seg_ptr;
    if (seg.offset >= file.size()) continue;
    const uint64_t size = std::min<uint64_t>(seg.filesz, file.size() - seg.offset);
    const std::span<const std::byte> bytes = file.subspan(seg.offset, size);
    for (uint64_t at = 0; at + record <= bytes.size() && budget > 0; at += w, budget -= w) {
      if (!first_at(bytes.data() + at)) continue;
      if (word(bytes, at + w) != addr + table.funcname_offset()) continue;
      if (table.text_start() != 0 && word(bytes, at + kModuledataText * w) != table.text_start()) {
        continue;
      }
      const uint64_t gofunc = word(bytes, at + gofunc_word * w);
      std::byte probe[1];
      if (gofunc != 0 && image.read(gofunc, probe) == 1) return gofunc;
    }
  }
  return std::nullopt;
}

}  // namespace

const GoPclntab* go_pclntab(const Image& image) {
  auto& im = ImageLoader::impl(image);
  if (!im.go_known.load(std::memory_order_acquire)) {
    std::call_once(im.go_once, [&image, &im] {
      if (!im.gopclntab_section.empty()) {
        im.go = GoPclntab::parse(im.gopclntab_section.bytes, im.text_addr);
        im.go_addr = im.gopclntab_section.addr;
      } else if (!im.has_section_headers && !im.file.empty()) {
        im.go = search_segments(image, im.file, im.text_addr, im.limits, im.go_addr);
      }
      im.go_known.store(true, std::memory_order_release);
    });
  }
  return im.go ? &*im.go : nullptr;
}

std::optional<uint64_t> go_func_data(const Image& image) {
  const GoPclntab* table = go_pclntab(image);
  if (table == nullptr) return std::nullopt;
  if (!table->funcdata_is_offset()) return 0;  // 1.16-1.17: funcdata are addresses
  auto& im = ImageLoader::impl(image);
  std::call_once(im.gofunc_once, [&image, &im, table] {
    im.gofunc = find_gofunc(image, *table, im.go_addr, im.file, im.limits);
  });
  return im.gofunc;
}

std::size_t add_go_symbols(const Image& image, SymbolSink& sink, const Limits& limits) {
  const GoPclntab* go = go_pclntab(image);
  if (go == nullptr) return 0;
  const uint64_t count = std::min<uint64_t>(go->size(), limits.max_symbols);
  sink.reserve(count);
  std::size_t added = 0;
  // Each function counts once towards the sink's cap, usable or not. One the sink cannot want
  // (a query's addresses lie elsewhere) is refused from its entry and the next one's alone,
  // before its record and its name are read: a query for a few pcs refuses nearly all.
  std::optional<uint64_t> entry = go->entry(0);
  for (uint64_t i = 0; i < count && !sink.full(); ++i) {
    const std::optional<uint64_t> next = go->entry(i + 1);
    const bool refused = entry && next && *next >= *entry && !sink.wants(*entry, *next - *entry);
    entry = next;
    if (refused) {
      sink.skip();
      continue;
    }
    auto f = go->func(i);
    auto name = f ? go->name(*f) : std::nullopt;
    if (!name) {
      sink.skip();
      continue;
    }
    // The name is a view into the image's own bytes, which outlive the sink.
    if (sink.add(f->entry, f->end - f->entry, *name, STB_LOCAL, STT_FUNC)) ++added;
  }
  return added;
}

}  // namespace ehbt::elf
