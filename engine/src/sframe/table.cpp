// SPDX-License-Identifier: Apache-2.0
// .sframe reader: the header check (done once, like the kernel does before it trusts a
// section), FDE index entries, and the pc lookup that checks FDE order as it searches.
#include <algorithm>

#include "sframe/format.hpp"
#include "sframe/table_impl.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::sframe {
namespace {

Unexpected<Error> fail(ErrorCode code, uint64_t where) {
  return unexpected(Error{code, where});
}

// Minimum bytes an FRE takes (a 1-byte start and the info byte).
constexpr uint64_t kMinFreSize = 2;

}  // namespace

Table::Table() : impl_(std::make_unique<Impl>()) {}
Table::Table(Table&&) noexcept = default;
Table& Table::operator=(Table&&) noexcept = default;
Table::~Table() = default;

Expected<Table, Error> Table::parse(std::span<const std::byte> section, uint64_t section_addr,
                                    const Limits& limits) {
  if (section.size() < fmt::kHeaderSize) return fail(ErrorCode::Truncated, 0);

  // The magic is the one field whose value tells the byte order.
  const uint16_t magic_le = static_cast<uint16_t>(std::to_integer<unsigned>(section[0]) |
                                                  (std::to_integer<unsigned>(section[1]) << 8));
  bool big_endian = false;
  if (magic_le == fmt::kMagic) {
    big_endian = false;
  } else if (static_cast<uint16_t>((magic_le >> 8) | (magic_le << 8)) == fmt::kMagic) {
    big_endian = true;
  } else {
    return fail(ErrorCode::BadMagic, fmt::kOffMagic);
  }

  util::ByteReader r(section, big_endian);
  Table t;
  Impl& im = *t.impl_;
  im.bytes = section;
  im.section_addr = section_addr;
  im.limits = limits;
  im.big_endian = big_endian;
  Header& h = im.header;

  uint8_t abi = 0, aux_len = 0;
  int8_t fixed_fp = 0, fixed_ra = 0;
  uint32_t fre_len = 0, fdeoff = 0, freoff = 0;
  r.seek(fmt::kOffVersion);
  // The header is known to be whole: these reads cannot fail.
  r.read_u8(h.version);
  r.read_u8(h.flags);
  r.read_u8(abi);
  r.read_s8(fixed_fp);
  r.read_s8(fixed_ra);
  r.read_u8(aux_len);
  r.read_u32(h.num_fdes);
  r.read_u32(h.num_fres);
  r.read_u32(fre_len);
  r.read_u32(fdeoff);
  r.read_u32(freoff);
  h.fixed_fp_offset = fixed_fp;
  h.fixed_ra_offset = fixed_ra;

  if (h.version != fmt::kVersion2 && h.version != fmt::kVersion3) {
    return fail(ErrorCode::BadVersion, fmt::kOffVersion);
  }
  const uint8_t known = h.version == fmt::kVersion2 ? fmt::kKnownFlagsV2 : fmt::kKnownFlagsV3;
  // Unknown flags may change the meaning of fields; unsorted FDEs cannot be searched.
  if ((h.flags & ~known) != 0 || (h.flags & fmt::kFlagFdeSorted) == 0) {
    return fail(ErrorCode::BadHeader, fmt::kOffFlags);
  }
  if (abi < fmt::kAbiAarch64Big || abi > fmt::kAbiS390xBig) {
    return fail(ErrorCode::BadAbi, fmt::kOffAbi);
  }
  h.abi = static_cast<Abi>(abi);
  if (abi_big_endian(h.abi) != big_endian) return fail(ErrorCode::BadAbi, fmt::kOffAbi);
  im.arch = abi_arch(h.abi);
  // AMD64 never records the RA in its default FREs: the header must say where it is.
  if (h.abi == Abi::Amd64Little && h.fixed_ra_offset == 0) {
    return fail(ErrorCode::BadHeader, fmt::kOffFixedRa);
  }

  const uint64_t header_end = uint64_t{fmt::kHeaderSize} + aux_len;
  if (header_end > section.size()) return fail(ErrorCode::Truncated, fmt::kOffAuxLen);
  im.fde_size = h.version == fmt::kVersion2 ? fmt::kV2FdeSize : fmt::kV3FdeIndexSize;
  im.fde_begin = header_end + fdeoff;
  const uint64_t fde_end = im.fde_begin + uint64_t{h.num_fdes} * im.fde_size;
  if (fde_end > section.size()) return fail(ErrorCode::BadHeader, fmt::kOffFdeOff);
  im.fre_begin = header_end + freoff;
  im.fre_end = im.fre_begin + fre_len;
  if (im.fre_end > section.size() || im.fre_begin < fde_end) {
    return fail(ErrorCode::BadHeader, fmt::kOffFreOff);
  }
  // Every FRE takes at least two bytes, and every V3 function its attributes.
  const uint64_t min_fre_bytes =
      uint64_t{h.num_fres} * kMinFreSize +
      (h.version == fmt::kVersion3 ? uint64_t{h.num_fdes} * fmt::kV3FdeAttrSize : 0);
  if (min_fre_bytes > fre_len) return fail(ErrorCode::BadHeader, fmt::kOffNumFres);
  // The FREs the functions claim must all be counted by the header, as a strict reader
  // (libsframe's decoder) demands: a header that undercounts was not written by an assembler.
  // One pass over the FDEs, bounded by the section size checked above.
  uint64_t claimed = 0;
  for (uint32_t i = 0; i < h.num_fdes; ++i) {
    claimed += im.claimed_fres(i);
    if (claimed > h.num_fres) return fail(ErrorCode::BadHeader, fmt::kOffNumFres);
  }
  return t;
}

const Header& Table::header() const {
  return impl_->header;
}
Arch Table::arch() const {
  return impl_->arch;
}
uint32_t Table::num_functions() const {
  return impl_->header.num_fdes;
}

FdeIndex Table::Impl::index(uint32_t i) const {
  FdeIndex out;
  out.offset = fde_begin + uint64_t{i} * fde_size;
  util::ByteReader r(bytes, big_endian);
  r.seek(out.offset);
  int64_t start = 0;
  if (header.version == fmt::kVersion2) {
    int32_t s32 = 0;
    r.read_s32(s32);
    start = s32;
  } else {
    r.read_s64(start);
  }
  r.read_u32(out.size);
  r.read_u32(out.fre_off);
  if (header.version == fmt::kVersion2) {
    r.read_u32(out.num_fres);
    r.read_u8(out.info);
    r.read_u8(out.rep_size);
  }
  const uint64_t base = section_addr + ((header.flags & fmt::kFlagFuncStartPcrel) != 0
                                            ? out.offset  // the start field opens the FDE
                                            : 0);
  out.start = base + static_cast<uint64_t>(start);
  return out;
}

uint32_t Table::Impl::claimed_fres(uint32_t i) const {
  const FdeIndex f = index(i);
  if (header.version == fmt::kVersion2) return f.num_fres;
  // V3 keeps the count in the function's attributes, at the start of its FREs. Attributes
  // outside the FRE sub-section are left to the function's own decode to report.
  const uint64_t at = fre_begin + uint64_t{f.fre_off};
  if (at + 2 > fre_end) return 0;
  util::ByteReader r(bytes, big_endian);
  r.seek(at);
  uint16_t n = 0;
  r.read_u16(n);
  return n;
}

Expected<Function, Error> Table::function(uint32_t index) const {
  if (index >= impl_->header.num_fdes) {
    return fail(ErrorCode::NotCovered, impl_->fde_begin);
  }
  return impl_->decode(index);
}

Expected<dwarf::Row, Error> Table::find_row(uint64_t pc) const {
  const Impl& im = *impl_;
  const uint32_t n = im.header.num_fdes;
  // The last FDE whose start is <= pc. Every probe must fall between the starts already
  // seen below and above it: a section whose order breaks under the search is corrupt.
  uint32_t lo = 0, hi = n;
  bool have_below = false, have_above = false;
  uint64_t below = 0, above = 0;
  uint32_t probes = 0;
  while (lo < hi) {
    if (++probes > im.limits.max_search_probes) return fail(ErrorCode::Limit, im.fde_begin);
    const uint32_t mid = lo + (hi - lo) / 2;
    const FdeIndex f = im.index(mid);
    if ((have_below && f.start < below) || (have_above && f.start > above)) {
      return fail(ErrorCode::Unsorted, f.offset);
    }
    if (f.start <= pc) {
      lo = mid + 1;
      below = f.start;
      have_below = true;
    } else {
      hi = mid;
      above = f.start;
      have_above = true;
    }
  }
  if (lo == 0) return fail(ErrorCode::NotCovered, im.fde_begin);
  const uint32_t found = lo - 1;
  const FdeIndex f = im.index(found);
  if (pc - f.start >= f.size) return fail(ErrorCode::NotCovered, f.offset);

  auto fn = im.decode(found);
  if (!fn) return unexpected(fn.error());
  const uint64_t off = pc - fn->start;
  // PCMASK: the rows repeat every rep_size bytes (one PLT entry each).
  const bool mask = fn->pc_type == PcType::Mask;
  const uint64_t within = mask ? off % fn->rep_size : off;
  const uint64_t block = pc - within;  // where row starts count from
  const uint64_t limit = mask ? fn->rep_size : fn->size;
  const auto next = std::upper_bound(fn->rows.begin(), fn->rows.end(), within,
                                     [](uint64_t v, const FrameRow& row) { return v < row.start; });
  if (next == fn->rows.begin()) return fail(ErrorCode::NotCovered, f.offset);
  const FrameRow& row = *(next - 1);
  uint64_t row_end = block + (next == fn->rows.end() ? limit : next->start);
  row_end = std::min(row_end, fn->start + fn->size);
  return to_dwarf_row(im.header, *fn, row, block + row.start, row_end);
}

}  // namespace ehbt::sframe
