// SPDX-License-Identifier: Apache-2.0
// All CFI of one image: finds the FDE for a pc (through .eh_frame_hdr, or an index built by
// one scan of the section), evaluates it to a row, and caches CIEs, the index and rows. A
// section whose structure turns out corrupt is marked bad once and never parsed again.
#include <algorithm>
#include <array>
#include <unordered_map>
#include <vector>

#include "dwarf/cfi.hpp"
#include "dwarf/record_framing.hpp"

namespace ehbt::dwarf {
namespace {

// Direct-mapped row cache. A row is valid for its whole [start, end) range, so a hit only
// needs the slot's row to contain the pc.
constexpr std::size_t kRowCacheBits = 8;
constexpr std::size_t kRowCacheSlots = std::size_t{1} << kRowCacheBits;
// Parsed CIEs kept per section; real sections have a few dozen at most.
constexpr std::size_t kMaxCachedCies = 4096;

struct IndexEntry {
  uint64_t pc_begin;
  uint64_t pc_end;
  uint64_t offset;
};

struct CachedRow {
  Row row;  // start == end: empty slot
  SectionKind from = SectionKind::EhFrame;
};

// Errors that say a section's structure (not one FDE's program) cannot be trusted.
bool is_structural(ErrorCode code) {
  switch (code) {
    case ErrorCode::BadLength:
    case ErrorCode::BadCie:
    case ErrorCode::Unsorted:
    case ErrorCode::LimitSearchProbes:
    case ErrorCode::LimitIndexEntries:
    case ErrorCode::LimitRecordBytes:
      return true;
    default:
      return false;
  }
}

inline std::size_t row_slot(uint64_t pc) {
  return static_cast<std::size_t>((pc * 0x9e3779b97f4a7c15ull) >> (64 - kRowCacheBits));
}

}  // namespace

struct ImageCfi::Impl {
  struct Section {
    explicit Section(SectionKind k) : kind(k) {}
    SectionKind kind;
    SectionView view;
    bool bad = false;
    Error bad_error;
    std::unordered_map<uint64_t, Cie> cies;
    // The CIE cie_at() gave last (an element of `cies`, which moves none while it is not
    // cleared): the FDEs of a section nearly all share one, and the index scan asks for it
    // once per FDE.
    const Cie* last_cie = nullptr;
    uint64_t last_cie_offset = 0;
    bool indexed = false;
    std::vector<IndexEntry> index;  // sorted by pc_begin
  };

  Format fmt;
  Bases bases;
  Limits limits;
  IndirectReader indirect;
  SectionView hdr_view;
  bool hdr_parsed = false;
  std::optional<EhFrameHdr> hdr;
  Section eh{SectionKind::EhFrame};
  Section debug{SectionKind::DebugFrame};
  // Slot -> 1 + index into `rows` (0: empty). Rows are ~2 KB each, so they are stored only as
  // slots fill up: a core that touches a library for a few frames pays for a few rows, not for
  // the whole table's worth of pages.
  std::array<uint16_t, kRowCacheSlots> slot_index{};
  std::vector<CachedRow> rows;

  std::function<SectionView()> debug_source;  // asked once, on .debug_frame's first use

  Section& section(SectionKind kind) {
    if (kind == SectionKind::EhFrame) return eh;
    if (debug_source) {
      auto source = std::move(debug_source);
      debug_source = nullptr;
      if (debug.view.bytes.empty()) debug.view = source();
    }
    return debug;
  }

  Unexpected<Error> mark_bad(Section& s, Error e) {
    s.bad = true;
    s.bad_error = e;
    return unexpected(e);
  }

  Expected<const Cie*, Error> cie_at(Section& s, uint64_t offset) {
    if (s.last_cie != nullptr && s.last_cie_offset == offset) return s.last_cie;
    if (auto it = s.cies.find(offset); it != s.cies.end()) {
      s.last_cie = &it->second;
      s.last_cie_offset = offset;
      return &it->second;
    }
    auto cie = parse_cie(s.kind, s.view, offset, fmt, limits, bases, indirect);
    if (!cie) return unexpected(cie.error());
    if (s.cies.size() >= kMaxCachedCies) s.cies.clear();
    s.last_cie = &s.cies.emplace(offset, *cie).first->second;
    s.last_cie_offset = offset;
    return s.last_cie;
  }

  // The FDE at `offset` and its CIE.
  Expected<std::pair<Fde, Cie>, Error> record_at(Section& s, uint64_t offset) {
    auto h = parse_record_header(s.kind, s.view, offset, fmt, limits);
    if (!h) return unexpected(h.error());
    if (h->kind != RecordKind::Fde) return unexpected(Error{ErrorCode::BadCie, offset});
    auto cie = cie_at(s, h->cie_offset);
    if (!cie) return unexpected(cie.error());
    auto fde = parse_fde(s.kind, s.view, offset, **cie, fmt, limits, bases, indirect);
    if (!fde) return unexpected(fde.error());
    return std::pair<Fde, Cie>(*fde, **cie);
  }

  const EhFrameHdr* table() {
    if (!hdr_parsed) {
      hdr_parsed = true;
      // A header we cannot read is only a missing accelerator: the section is scanned.
      if (!hdr_view.bytes.empty()) {
        auto h = EhFrameHdr::parse(hdr_view, fmt, limits, indirect);
        if (h && h->has_table()) hdr = *h;
      }
    }
    return hdr ? &*hdr : nullptr;
  }

  Expected<std::pair<Fde, Cie>, Error> find_via_table(const EhFrameHdr& t, uint64_t pc) {
    auto e = t.lookup_entry(pc);
    if (!e) {
      if (e.error().code == ErrorCode::NoEntry) return unexpected(e.error());
      return mark_bad(eh, e.error());  // a table we cannot search is not retried
    }
    const uint64_t size = eh.view.bytes.size();
    if (e->fde_addr < eh.view.addr || e->fde_addr - eh.view.addr >= size) {
      return mark_bad(eh, Error{ErrorCode::BadLength, e->fde_addr});
    }
    auto rec = record_at(eh, e->fde_addr - eh.view.addr);
    if (!rec) {
      if (is_structural(rec.error().code)) return mark_bad(eh, rec.error());
      return unexpected(rec.error());
    }
    // The table gives the FDE with the greatest start <= pc; if that one ends before pc, no
    // FDE covers it.
    if (pc < rec->first.pc_begin || pc >= rec->first.pc_end) {
      return unexpected(Error{ErrorCode::NoEntry, pc});
    }
    return rec;
  }

  // The range of the FDE framed by `h`, when the FDE parses. One without augmentation data
  // (every FDE of .debug_frame) parses when its range does, which is then all that is read;
  // others are parsed whole, as a lookup will.
  Expected<FdeRange, Error> index_range(const Section& s, const RecordHeader& h, const Cie& cie) {
    if (!cie.has_z) return parse_fde_range(s.kind, s.view, h, cie, fmt, bases, indirect);
    auto fde = parse_fde(s.kind, s.view, h.offset, cie, fmt, limits, bases, indirect);
    if (!fde) return unexpected(fde.error());
    return FdeRange{fde->pc_begin, fde->pc_end};
  }

  // One linear scan: every FDE that parses goes into the index; records that do not are
  // skipped where their length allows.
  Expected<void, Error> build_index(Section& s) {
    s.indexed = true;
    const uint64_t size = s.view.bytes.size();
    // An FDE takes at least 16 bytes (length, CIE pointer, and a start and a range of 4 each).
    s.index.reserve(std::min<uint64_t>(size / 16, limits.max_index_entries));
    uint64_t offset = 0;
    const auto add = [&](const FdeRange& fde, uint64_t at) -> Expected<void, Error> {
      if (s.index.size() >= limits.max_index_entries) {
        s.index.clear();
        s.index.shrink_to_fit();
        return mark_bad(s, Error{ErrorCode::LimitIndexEntries, at});
      }
      s.index.push_back({fde.pc_begin, fde.pc_end, at});
      return {};
    };
    while (offset < size) {
      // An FDE of the CIE the one before had, read in place (.debug_frame: nearly every FDE).
      if (s.kind == SectionKind::DebugFrame && s.last_cie != nullptr) {
        if (auto c = common_debug_fde(s.view, offset, *s.last_cie, fmt, limits)) {
          if (c->range.pc_begin < c->range.pc_end) {
            if (auto ok = add(c->range, offset); !ok) return ok;
          }
          offset = c->end;
          continue;
        }
      }
      auto f = parse_record_framing(s.kind, s.view, offset, fmt, limits);
      if (!f || f->header.kind == RecordKind::Terminator) break;
      const RecordHeader& h = f->header;
      if (h.kind == RecordKind::Fde && f->cie_ok) {
        auto cie = cie_at(s, h.cie_offset);
        if (cie) {
          auto fde = index_range(s, h, **cie);
          if (fde && fde->pc_begin < fde->pc_end) {
            if (auto ok = add(*fde, offset); !ok) return ok;
          }
        }
      }
      offset = h.end;
    }
    // Ordered by start, then by place in the section, so that which of two FDEs with the same
    // start a lookup finds never depends on the sort. Linkers write .debug_frame in address
    // order (Go's: one FDE per function, as the functions lie), and the check is a tenth of
    // the sort it spares.
    const auto before = [](const IndexEntry& a, const IndexEntry& b) {
      return a.pc_begin != b.pc_begin ? a.pc_begin < b.pc_begin : a.offset < b.offset;
    };
    if (!std::is_sorted(s.index.begin(), s.index.end(), before))
      std::sort(s.index.begin(), s.index.end(), before);
    return {};
  }

  Expected<std::pair<Fde, Cie>, Error> find_via_index(Section& s, uint64_t pc) {
    if (!s.indexed) {
      auto ok = build_index(s);
      if (!ok) return unexpected(ok.error());
    }
    auto it = std::upper_bound(s.index.begin(), s.index.end(), pc,
                               [](uint64_t v, const IndexEntry& e) { return v < e.pc_begin; });
    if (it == s.index.begin()) return unexpected(Error{ErrorCode::NoEntry, pc});
    --it;
    if (pc >= it->pc_end) return unexpected(Error{ErrorCode::NoEntry, pc});
    return record_at(s, it->offset);
  }

  Expected<std::pair<Fde, Cie>, Error> find_fde(SectionKind kind, uint64_t pc) {
    Section& s = section(kind);
    if (s.bad) return unexpected(s.bad_error);
    if (s.view.bytes.empty()) return unexpected(Error{ErrorCode::NoEntry, pc});
    if (kind == SectionKind::EhFrame) {
      if (const EhFrameHdr* t = table()) return find_via_table(*t, pc);
    }
    return find_via_index(s, pc);
  }
};

ImageCfi::ImageCfi(SectionView eh_frame_hdr, SectionView eh_frame, SectionView debug_frame,
                   Format fmt, Bases bases, const Limits& limits, IndirectReader indirect)
    : impl_(std::make_unique<Impl>()) {
  impl_->fmt = fmt;
  impl_->bases = bases;
  impl_->limits = limits;
  impl_->indirect = std::move(indirect);
  impl_->hdr_view = eh_frame_hdr;
  impl_->eh.view = eh_frame;
  impl_->debug.view = debug_frame;
}

ImageCfi::~ImageCfi() = default;

void ImageCfi::set_debug_frame_source(std::function<SectionView()> source) {
  impl_->debug_source = std::move(source);
}

Expected<const Row*, Error> ImageCfi::find_row_ref(uint64_t pc, SectionKind* from,
                                                   bool use_debug_frame) {
  Impl& m = *impl_;
  const std::size_t slot = row_slot(pc);
  if (uint16_t i = m.slot_index[slot]; i != 0) {
    const CachedRow& c = m.rows[i - 1];
    if (pc >= c.row.start && pc < c.row.end) {
      if (from != nullptr) *from = c.from;
      return &c.row;
    }
  }
  SectionKind kind = SectionKind::EhFrame;
  auto rec = m.find_fde(SectionKind::EhFrame, pc);
  if (!rec && use_debug_frame && !m.section(SectionKind::DebugFrame).view.bytes.empty()) {
    auto dbg = m.find_fde(SectionKind::DebugFrame, pc);
    // .debug_frame answers when it can; otherwise the more telling of the two errors.
    if (dbg || rec.error().code == ErrorCode::NoEntry) {
      rec = std::move(dbg);
      kind = SectionKind::DebugFrame;
    }
  }
  if (!rec) return unexpected(rec.error());
  auto row = evaluate_row(rec->second, rec->first, pc, m.fmt, m.limits);
  if (!row) return unexpected(row.error());
  // Growing `rows` may move them: fine, a returned pointer lives only until the next lookup.
  if (m.slot_index[slot] == 0) {
    m.rows.emplace_back();
    m.slot_index[slot] = static_cast<uint16_t>(m.rows.size());
  }
  CachedRow& c = m.rows[m.slot_index[slot] - 1];
  c.row = *row;
  c.from = kind;
  if (from != nullptr) *from = kind;
  return &c.row;
}

Expected<Row, Error> ImageCfi::find_row(uint64_t pc, SectionKind* from, bool use_debug_frame) {
  auto r = find_row_ref(pc, from, use_debug_frame);
  if (!r) return unexpected(r.error());
  return **r;
}

Expected<std::pair<Fde, Cie>, Error> ImageCfi::find_fde(SectionKind kind, uint64_t pc) {
  return impl_->find_fde(kind, pc);
}

void ImageCfi::for_each_fde(SectionKind kind, const std::function<void(const Fde&, const Cie&)>& fn,
                            const std::function<void(const Error&)>& on_error) {
  Impl& m = *impl_;
  Impl::Section& s = m.section(kind);
  auto report = [&](const Error& e) {
    if (on_error) on_error(e);
  };
  const uint64_t size = s.view.bytes.size();
  uint64_t offset = 0;
  // Each record is at least 4 bytes, so the walk ends within size / 4 steps.
  while (offset < size) {
    auto f = parse_record_framing(kind, s.view, offset, m.fmt, m.limits);
    if (!f) {
      report(f.error());  // the length itself is broken: nothing after it can be trusted
      return;
    }
    const RecordHeader& h = f->header;
    if (h.kind == RecordKind::Terminator) return;
    if (h.kind == RecordKind::Fde) {
      if (!f->cie_ok) {
        report(Error{ErrorCode::BadCie, offset});
      } else if (auto cie = m.cie_at(s, h.cie_offset); !cie) {
        report(cie.error());
      } else if (auto fde =
                     parse_fde(kind, s.view, offset, **cie, m.fmt, m.limits, m.bases, m.indirect);
                 !fde) {
        report(fde.error());
      } else if (fn) {
        fn(*fde, **cie);
      }
    }
    offset = h.end;
  }
}

bool ImageCfi::eh_frame_bad() const {
  return impl_->eh.bad;
}
bool ImageCfi::debug_frame_bad() const {
  return impl_->debug.bad;
}
Format ImageCfi::format() const {
  return impl_->fmt;
}

}  // namespace ehbt::dwarf
