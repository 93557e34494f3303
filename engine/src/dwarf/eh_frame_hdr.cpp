// SPDX-License-Identifier: Apache-2.0
// .eh_frame_hdr (LSB "Exception Frames"): version, the encoded address of .eh_frame, an FDE
// count and a table of (initial location, FDE address) pairs sorted by location. The table
// is binary-searched; every probe is checked against the ones before it, so an unsorted
// table is detected instead of silently returning a wrong FDE (the Linux kernel does the same).
#include "dwarf/cfi.hpp"
#include "dwarf/read_error.hpp"
#include "util/byte_reader.hpp"
#include "util/eh_pe.hpp"

namespace ehbt::dwarf {
namespace {

namespace eh_pe = util::eh_pe;

// The table is searchable only when entries have a fixed size and no application needs
// context the header cannot give (text/function bases, indirection, alignment).
bool searchable_table_encoding(uint8_t enc, uint8_t address_size) {
  if (enc == eh_pe::omit) return false;
  if (!util::valid_pointer_encoding(enc)) return false;
  const uint8_t app = enc & 0xf0;
  if (app != eh_pe::absptr && app != eh_pe::pcrel && app != eh_pe::datarel) return false;
  return util::encoded_value_size(enc, address_size) != 0;
}

}  // namespace

Expected<EhFrameHdr, Error> EhFrameHdr::parse(SectionView hdr, Format fmt, const Limits& limits,
                                              const IndirectReader& indirect) {
  util::ByteReader r(hdr.bytes, fmt.big_endian, hdr.addr);
  uint8_t version = 0, ptr_enc = 0, count_enc = 0, table_enc = 0;
  if (!r.read_u8(version) || !r.read_u8(ptr_enc) || !r.read_u8(count_enc) ||
      !r.read_u8(table_enc)) {
    return unexpected(Error{ErrorCode::Truncated, r.offset()});
  }
  if (version != 1) return unexpected(Error{ErrorCode::BadVersion, 0});
  if (ptr_enc == eh_pe::omit) return unexpected(Error{ErrorCode::BadEncoding, 1});

  // datarel in the header is relative to the header's own start.
  util::PointerContext ctx{fmt.address_size, 0, hdr.addr, std::nullopt, &indirect};
  auto eh_frame = util::read_encoded_pointer(r, ptr_enc, ctx);
  if (!eh_frame) return unexpected(from_read_error(eh_frame.error()));

  EhFrameHdr h;
  h.hdr_ = hdr;
  h.fmt_ = fmt;
  h.limits_ = limits;
  h.eh_frame_addr_ = *eh_frame;
  h.table_enc_ = table_enc;
  if (count_enc == eh_pe::omit || !searchable_table_encoding(table_enc, fmt.address_size)) {
    return h;  // no usable table: callers scan .eh_frame instead
  }
  ctx.indirect = nullptr;  // the count is a plain number
  auto count = util::read_encoded_pointer(r, count_enc, ctx);
  if (!count) return unexpected(from_read_error(count.error()));
  const uint32_t entry_size = 2 * util::encoded_value_size(table_enc, fmt.address_size);
  if (*count > r.remaining() / entry_size) {
    return unexpected(Error{ErrorCode::BadLength, r.offset()});
  }
  h.count_ = *count;
  h.entry_size_ = entry_size;
  h.table_offset_ = r.offset();
  return h;
}

Expected<EhFrameHdr::Entry, Error> EhFrameHdr::entry(uint64_t index) const {
  if (index >= count_) return unexpected(Error{ErrorCode::NoEntry, index});
  util::ByteReader r(hdr_.bytes, fmt_.big_endian, hdr_.addr);
  r.seek(table_offset_ + index * entry_size_);  // parse() checked the table fits
  if (table_enc_ == (eh_pe::datarel | eh_pe::sdata4) && hdr_.addr != 0) {
    // The table every linker writes: two signed 32-bit offsets from the header's own start.
    // Read directly, as read_encoded_pointer would decode them (a lookup probes ~20 of them).
    uint32_t loc = 0, fde = 0;
    if (!r.read_u32(loc) || !r.read_u32(fde)) {
      return unexpected(Error{ErrorCode::Truncated, r.offset()});
    }
    auto at = [&](uint32_t v) {
      return util::truncate_to(
          hdr_.addr + static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))),
          fmt_.address_size);
    };
    return Entry{at(loc), at(fde)};
  }
  const util::PointerContext ctx{fmt_.address_size, 0, hdr_.addr, std::nullopt, nullptr};
  auto loc = util::read_encoded_pointer(r, table_enc_, ctx);
  if (!loc) return unexpected(from_read_error(loc.error()));
  auto fde = util::read_encoded_pointer(r, table_enc_, ctx);
  if (!fde) return unexpected(from_read_error(fde.error()));
  return Entry{*loc, *fde};
}

Expected<EhFrameHdr::Entry, Error> EhFrameHdr::lookup_entry(uint64_t pc) const {
  if (count_ == 0) return unexpected(Error{ErrorCode::NoEntry, pc});
  // Invariant: entries below `lo` start at or before pc, entries from `hi` on start after it.
  // Every probe must lie between the nearest probes on either side of it.
  uint64_t lo = 0, hi = count_;
  std::optional<uint64_t> lo_val, hi_val;
  std::optional<Entry> best;
  uint32_t probes = 0;
  while (lo < hi) {
    if (++probes > limits_.max_search_probes) {
      return unexpected(Error{ErrorCode::LimitSearchProbes, pc});
    }
    const uint64_t mid = lo + (hi - lo) / 2;
    auto e = entry(mid);
    if (!e) return unexpected(e.error());
    const uint64_t v = e->initial_loc;
    if ((lo_val && v < *lo_val) || (hi_val && v > *hi_val)) {
      return unexpected(Error{ErrorCode::Unsorted, table_offset_ + mid * entry_size_});
    }
    if (v <= pc) {
      lo = mid + 1;
      lo_val = v;
      best = *e;
    } else {
      hi = mid;
      hi_val = v;
    }
  }
  if (!best) return unexpected(Error{ErrorCode::NoEntry, pc});
  return *best;
}

Expected<uint64_t, Error> EhFrameHdr::lookup(uint64_t pc) const {
  auto e = lookup_entry(pc);
  if (!e) return unexpected(e.error());
  return e->fde_addr;
}

}  // namespace ehbt::dwarf
