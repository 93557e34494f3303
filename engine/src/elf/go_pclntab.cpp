// SPDX-License-Identifier: Apache-2.0
// The layouts follow Go's runtime/symtab.go (pcHeader, functab, _func) and its pc-value
// encoding (runtime.step): pairs of a zig-zag varint value delta and a varint pc delta in
// units of the pc quantum, starting from value -1 at the function's entry, ended by a zero
// value-delta byte after the first pair.
#include "elf/go_pclntab.hpp"

#include <atomic>
#include <cstring>

#include "util/byte_reader.hpp"

namespace ehbt::elf {
namespace {

constexpr uint32_t kMagic12 = 0xfffffffb;
constexpr uint32_t kMagic116 = 0xfffffffa;
constexpr uint32_t kMagic118 = 0xfffffff0;
constexpr uint32_t kMagic120 = 0xfffffff1;

// Offsets inside a _func record after its entry field: nameOff (int32), then args,
// deferreturn (or frame before 1.10), and pcsp (uint32). The same in every layout read here.
constexpr uint64_t kNameField = 0;
constexpr uint64_t kPcspField = 12;
// Go 1.16+ (runtime/runtime2.go _func): pcfile, pcln, npcdata and cuOffset follow pcsp; then
// (1.20+ only) startLine; then funcID, flag, a pad byte and nfuncdata, which ends the fixed
// part. The pcdata offsets (uint32 each) follow it, then (1.18+) the funcdata offsets.
constexpr uint64_t kPcfileField = 16;
constexpr uint64_t kPclnField = 20;
constexpr uint64_t kNpcdataField = 24;
constexpr uint64_t kCuOffsetField = 28;
// A pcdata or funcdata slot holding this has no table.
constexpr uint32_t kNoFuncdata = 0xffffffff;

// Go's varints are at most 32 bits wide: 5 bytes.
constexpr unsigned kMaxVarintBytes = 5;

std::optional<GoPclntab::Version> version_of(uint32_t magic) {
  switch (magic) {
    case kMagic12:
      return GoPclntab::Version::Go12;
    case kMagic116:
      return GoPclntab::Version::Go116;
    case kMagic118:
      return GoPclntab::Version::Go118;
    case kMagic120:
      return GoPclntab::Version::Go120;
    default:
      return std::nullopt;
  }
}

bool read_varint(util::ByteReader& r, uint32_t& out) {
  uint32_t v = 0;
  for (unsigned i = 0; i < kMaxVarintBytes; ++i) {
    uint8_t b = 0;
    if (!r.read_u8(b)) return false;
    v |= uint32_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80) == 0) {
      out = v;
      return true;
    }
  }
  return false;
}

// Tables told apart by find()'s memory of its last answers: an id from parse(), never reused
// (an address could be, once a table is gone).
std::atomic<uint64_t> next_table_id{1};

// find()'s recent answers on this thread, one slot per hash of the pc: a report asks about the
// same pc several times (the walk's step, the stack switches it may be, its caller's proof, then
// its source line once every thread is walked), each a binary search of a dozen probes. Only
// what a search found is kept, with the probes it took, so a call with fewer allowed still
// searches. Per thread: tables are shared between the threads of a worker.
struct FoundFunc {
  uint64_t table = 0;  // 0: empty
  uint64_t pc = 0;
  uint32_t probes = 0;
  GoPclntab::Func func;
};
constexpr std::size_t kFoundFuncBits = 6;
thread_local FoundFunc found_funcs[std::size_t{1} << kFoundFuncBits];

FoundFunc& found_slot(uint64_t pc) {
  return found_funcs[(pc * 0x9e3779b97f4a7c15ull) >> (64 - kFoundFuncBits)];
}

}  // namespace

bool GoPclntab::read_uint(uint64_t off, unsigned size, uint64_t& out) const {
  util::ByteReader r(bytes_, big_endian_);
  return r.seek(off) && r.read_uint(size, out);
}

bool GoPclntab::looks_like(std::span<const std::byte> bytes) {
  return parse(bytes).has_value();
}

std::optional<GoPclntab> GoPclntab::parse(std::span<const std::byte> bytes, uint64_t text_hint) {
  GoPclntab t;
  t.bytes_ = bytes;
  t.id_ = next_table_id.fetch_add(1, std::memory_order_relaxed);
  util::ByteReader r(bytes, false);
  uint32_t magic = 0;
  if (!r.read_u32(magic)) return std::nullopt;
  auto version = version_of(magic);
  if (!version) {
    util::ByteReader be(bytes, true);
    if (!be.read_u32(magic) || !(version = version_of(magic))) return std::nullopt;
    t.big_endian_ = true;
  }
  t.version_ = *version;
  r = util::ByteReader(bytes, t.big_endian_);
  uint8_t pad1 = 0, pad2 = 0;
  if (!r.skip(4) || !r.read_u8(pad1) || !r.read_u8(pad2) || !r.read_u8(t.quantum_) ||
      !r.read_u8(t.ptr_size_)) {
    return std::nullopt;
  }
  if (pad1 != 0 || pad2 != 0) return std::nullopt;
  if (t.quantum_ != 1 && t.quantum_ != 2 && t.quantum_ != 4) return std::nullopt;
  if (t.ptr_size_ != 4 && t.ptr_size_ != 8) return std::nullopt;
  const unsigned w = t.ptr_size_;
  if (!r.read_uint(w, t.nfunc_)) return std::nullopt;
  if (t.version_ == Version::Go12) {
    // Names, pc-value tables and _func records are all offsets from the table's start.
    t.functab_off_ = 8 + w;
  } else {
    uint64_t nfiles = 0;
    if (!r.read_uint(w, nfiles)) return std::nullopt;
    if (t.version_ >= Version::Go118 && !r.read_uint(w, t.text_start_)) return std::nullopt;
    if (!r.read_uint(w, t.funcname_off_) || !r.read_uint(w, t.cutab_off_) ||
        !r.read_uint(w, t.filetab_off_) || !r.read_uint(w, t.pctab_off_) ||
        !r.read_uint(w, t.functab_off_)) {
      return std::nullopt;
    }
    t.func_base_ = t.functab_off_;
    if (t.text_start_ == 0) t.text_start_ = text_hint;
    if (t.funcname_off_ >= bytes.size() || t.pctab_off_ >= bytes.size()) return std::nullopt;
  }
  // The function table, with its end entry, must lie inside the bytes.
  const uint64_t entry_size = 2 * (t.version_ >= Version::Go118 ? 4 : w);
  if (t.functab_off_ > bytes.size() || t.nfunc_ == 0 ||
      t.nfunc_ >= (bytes.size() - t.functab_off_) / entry_size) {
    return std::nullopt;
  }
  // First entry before the end: a table of one function at least, in order at its ends.
  auto first = t.func(0);
  uint64_t end = 0, unused = 0;
  if (!first || !t.entry_at(t.nfunc_, end, unused) || end < first->entry) return std::nullopt;
  return t;
}

bool GoPclntab::entry_pc(uint64_t index, uint64_t& entry) const {
  const unsigned w = functab_word();
  if (!read_uint(functab_off_ + index * 2 * w, w, entry)) return false;
  if (version_ >= Version::Go118) entry += text_start_;
  return true;
}

bool GoPclntab::entry_at(uint64_t index, uint64_t& entry, uint64_t& record) const {
  const unsigned w = functab_word();
  uint64_t rec = 0;
  if (!entry_pc(index, entry)) return false;
  // The end entry (index nfunc) has only its pc.
  if (index < nfunc_ && !read_uint(functab_off_ + index * 2 * w + w, w, rec)) return false;
  record = func_base_ + rec;
  return true;
}

std::optional<GoPclntab::Func> GoPclntab::func(uint64_t index) const {
  if (index >= nfunc_) return std::nullopt;
  Func f;
  uint64_t unused = 0;
  if (!entry_at(index, f.entry, f.record) || !entry_at(index + 1, f.end, unused)) {
    return std::nullopt;
  }
  if (f.end < f.entry || f.record >= bytes_.size()) return std::nullopt;
  return f;
}

std::optional<GoPclntab::Func> GoPclntab::find(uint64_t pc, uint32_t max_probes) const {
  // The last function whose entry is at or below pc, by a search that reads one entry per
  // probe; then that function's record, whose end must lie above pc. Every entry read must
  // lie within the bracket of the entries read before it: where it does not, the table is
  // not sorted, and nothing it says is trusted.
  if (nfunc_ == 0) return std::nullopt;
  if (const FoundFunc& found = found_slot(pc);
      found.table == id_ && found.pc == pc && found.probes <= max_probes) {
    return found.func;
  }
  uint64_t lo = 0, hi = nfunc_;  // the answer is lo, once hi - lo == 1
  uint64_t lo_entry = 0, hi_entry = UINT64_MAX;
  if (!entry_pc(0, lo_entry) || pc < lo_entry) return std::nullopt;
  uint32_t probe = 0;
  for (; hi - lo > 1 && probe < max_probes; ++probe) {
    const uint64_t mid = lo + (hi - lo) / 2;
    uint64_t entry = 0;
    if (!entry_pc(mid, entry)) return std::nullopt;
    if (entry < lo_entry || entry > hi_entry) return std::nullopt;
    if (pc < entry) {
      hi = mid;
      hi_entry = entry;
    } else {
      lo = mid;
      lo_entry = entry;
    }
  }
  if (hi - lo > 1) return std::nullopt;  // out of probes
  auto f = func(lo);
  if (!f || f->entry != lo_entry || f->end > hi_entry || pc >= f->end) return std::nullopt;
  found_slot(pc) = FoundFunc{id_, pc, probe, *f};
  return f;
}

std::optional<std::string_view> GoPclntab::name(const Func& f) const {
  uint64_t raw = 0;
  if (!read_uint(f.record + after_entry() + kNameField, 4, raw)) return std::nullopt;
  return name_at(static_cast<int32_t>(static_cast<uint32_t>(raw)));
}

std::optional<int64_t> GoPclntab::sp_delta(const Func& f, uint64_t pc, uint32_t max_steps) const {
  uint64_t table = 0;
  if (!read_uint(f.record + after_entry() + kPcspField, 4, table)) return std::nullopt;
  return pc_value(f, static_cast<uint32_t>(table), pc, max_steps);
}

std::optional<int64_t> GoPclntab::pc_value(const Func& f, uint32_t table, uint64_t pc,
                                           uint32_t max_steps) const {
  if (pc < f.entry || pc >= f.end || table == 0) return std::nullopt;
  util::ByteReader r(bytes_, big_endian_);
  if (!r.seek(pctab_off_ + table)) return std::nullopt;
  int64_t value = -1;
  uint64_t cur = f.entry;
  for (uint32_t step = 0; step < max_steps; ++step) {
    uint8_t lead = 0;
    if (!r.read_u8(lead)) return std::nullopt;
    if (lead == 0 && step > 0) return std::nullopt;  // end of table: pc not covered
    uint32_t uv = 0, pc_delta = 0;
    if (!r.seek(r.offset() - 1) || !read_varint(r, uv) || !read_varint(r, pc_delta)) {
      return std::nullopt;
    }
    // Zig-zag: the low bit is the sign.
    value += (uv & 1) != 0 ? -int64_t{uv >> 1} - 1 : int64_t{uv >> 1};
    cur += uint64_t{pc_delta} * quantum_;
    if (pc < cur) return value;
  }
  return std::nullopt;
}

std::optional<GoPclntab::LineTables> GoPclntab::line_tables(const Func& f) const {
  if (version_ < Version::Go116) return std::nullopt;
  const uint64_t at = f.record + after_entry();
  uint64_t pcfile = 0, pcln = 0, cu = 0;
  if (!read_uint(at + kPcfileField, 4, pcfile) || !read_uint(at + kPclnField, 4, pcln) ||
      !read_uint(at + kCuOffsetField, 4, cu)) {
    return std::nullopt;
  }
  return LineTables{static_cast<uint32_t>(pcfile), static_cast<uint32_t>(pcln),
                    static_cast<uint32_t>(cu)};
}

std::optional<uint32_t> GoPclntab::pcdata_table(const Func& f, uint32_t index) const {
  if (version_ < Version::Go116) return std::nullopt;
  const uint64_t at = f.record + after_entry();
  uint64_t npcdata = 0, table = 0;
  if (!read_uint(at + kNpcdataField, 4, npcdata)) return std::nullopt;
  if (index >= npcdata) return 0u;  // the function has no such table
  // The fixed part ends 4 bytes after cuOffset (8 with 1.20's startLine).
  const uint64_t pcdata = at + kCuOffsetField + (version_ >= Version::Go120 ? 12 : 8);
  if (!read_uint(pcdata + 4 * uint64_t{index}, 4, table)) return std::nullopt;
  return static_cast<uint32_t>(table);
}

std::optional<uint64_t> GoPclntab::funcdata(const Func& f, uint32_t index) const {
  if (version_ < Version::Go116) return std::nullopt;
  const uint64_t at = f.record + after_entry();
  const uint64_t fixed_end = at + kCuOffsetField + (version_ >= Version::Go120 ? 12 : 8);
  uint64_t npcdata = 0, nfuncdata = 0, value = 0;
  if (!read_uint(at + kNpcdataField, 4, npcdata) || !read_uint(fixed_end - 1, 1, nfuncdata)) {
    return std::nullopt;
  }
  if (index >= nfuncdata) return std::nullopt;
  uint64_t slots = fixed_end + 4 * npcdata;
  if (version_ >= Version::Go118) {
    // uint32 offsets from moduledata.gofunc; ^0 for none.
    if (!read_uint(slots + 4 * uint64_t{index}, 4, value) || value == kNoFuncdata) {
      return std::nullopt;
    }
    return value;
  }
  // 1.16-1.17: pointers, aligned to their size (the records are, and the table starts
  // aligned), 0 for none.
  if (ptr_size_ == 8 && (slots & 4) != 0) slots += 4;
  if (!read_uint(slots + uint64_t{ptr_size_} * index, ptr_size_, value) || value == 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string_view> GoPclntab::file_name(uint32_t cu_offset, int64_t file_index) const {
  if (version_ < Version::Go116 || file_index < 0) return std::nullopt;
  uint64_t off = 0;
  const uint64_t slot = uint64_t{cu_offset} + static_cast<uint64_t>(file_index);
  if (slot > bytes_.size() / 4) return std::nullopt;
  if (!read_uint(cutab_off_ + 4 * slot, 4, off) || off == kNoFuncdata) return std::nullopt;
  return string_at(filetab_off_ + off);
}

std::optional<std::string_view> GoPclntab::name_at(int64_t name_offset) const {
  if (name_offset < 0) return std::nullopt;
  return string_at(funcname_off_ + static_cast<uint64_t>(name_offset));
}

std::optional<std::string_view> GoPclntab::string_at(uint64_t at) const {
  if (at >= bytes_.size()) return std::nullopt;
  const char* start = reinterpret_cast<const char*>(bytes_.data() + at);
  const void* nul = std::memchr(start, 0, bytes_.size() - at);
  if (nul == nullptr) return std::nullopt;
  const std::string_view s(start, static_cast<const char*>(nul) - start);
  if (s.empty()) return std::nullopt;
  return s;
}

}  // namespace ehbt::elf
