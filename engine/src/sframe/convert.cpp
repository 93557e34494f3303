// SPDX-License-Identifier: Apache-2.0
// .eh_frame -> SFrame functions. Each FDE's rows are classified one by one; an FDE with any
// row SFrame cannot say is left out whole and reported (the unwinder then uses .eh_frame for
// it). The x86-64 PLT CFA expression becomes a PCMASK function of its own.
#include <algorithm>

#include "arch/arch_ops.hpp"
#include "sframe/format.hpp"
#include "sframe/row_classify.hpp"
#include "util/hex.hpp"

namespace ehbt::sframe {
namespace {

bool same_row(const FrameRow& a, const FrameRow& b) {
  auto same = [](const Recovery& x, const Recovery& y) {
    return x.kind == y.kind && x.reg == y.reg && x.offset == y.offset;
  };
  return a.cfa.reg == b.cfa.reg && a.cfa.offset == b.cfa.offset && a.cfa.deref == b.cfa.deref &&
         same(a.fp, b.fp) && same(a.ra, b.ra) && a.ra_mangled == b.ra_mangled;
}

using util::hex;

// The functions one FDE turns into (normally one; a PLT FDE splits at its expression row).
class FdeConverter {
 public:
  FdeConverter(const dwarf::Fde& fde, const dwarf::Cie& cie, Arch arch, uint8_t version)
      : arch_(arch), version_(version), signal_(cie.signal_frame), b_key_(cie.b_key) {
    start_new(fde.pc_begin, fde.pc_end);
    end_ = fde.pc_end;
  }

  void add(const dwarf::Row& row) {
    if (!why_.empty()) return;
    if (row.end <= row.start) return;  // an empty row covers no pc
    RowVerdict v = classify_row(row, arch_, version_);
    switch (v.form) {
      case RowVerdict::Form::Inexpressible:
        why_ = std::move(v.why);
        why_pc_ = row.start;
        return;
      case RowVerdict::Form::Plt:
        add_plt(row, v);
        return;
      case RowVerdict::Form::Flex:
        cur().type = FdeType::Flex;
        [[fallthrough]];
      case RowVerdict::Form::Default:
        append(row.start, v.row);
        return;
    }
  }

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  uint64_t why_pc() const { return why_pc_; }

  // The finished functions (empty ones dropped); checks what only the whole function shows.
  std::vector<Function> finish(uint64_t fde_start) {
    std::vector<Function> out;
    for (Function& fn : fns_) {
      if (fn.rows.empty()) continue;
      if (version_ == fmt::kVersion3 && fn.rows.size() > 0xffff) {
        why_ = "more than 65535 rows";
        why_pc_ = fde_start;
        return {};
      }
      out.push_back(std::move(fn));
    }
    return out;
  }

 private:
  Function& cur() { return fns_.back(); }

  void start_new(uint64_t start, uint64_t end) {
    Function fn;
    fn.start = start;
    fn.size = static_cast<uint32_t>(end - start);
    fn.signal_frame = signal_;
    fn.pauth_b_key = arch::arch_ops(arch_).sframe().pauth && b_key_;
    if (!fns_.empty()) {
      Function& prev = cur();
      prev.size = static_cast<uint32_t>(start - prev.start);
    }
    fns_.push_back(std::move(fn));
  }

  void append(uint64_t pc, FrameRow row) {
    Function& fn = cur();
    row.start = static_cast<uint32_t>(pc - fn.start);
    if (!fn.rows.empty() && same_row(fn.rows.back(), row)) return;
    fn.rows.push_back(row);
  }

  // The PLT rows as one PCMASK function over [row.start, row.end): within each 16-byte
  // entry the CFA is sp+off, then sp+off+8 from the threshold on.
  void add_plt(const dwarf::Row& row, const RowVerdict& v) {
    if (row.start % kPltEntrySize != 0 || v.plt.threshold == 0 ||
        v.plt.threshold >= kPltEntrySize) {
      why_ = "PLT CFA expression over entries not aligned to 16 bytes";
      why_pc_ = row.start;
      return;
    }
    start_new(row.start, row.end);
    Function& fn = cur();
    fn.pc_type = PcType::Mask;
    fn.rep_size = kPltEntrySize;
    FrameRow first = v.row;
    first.cfa.reg = arch_info(arch_).sp_reg;
    first.cfa.offset = v.plt.sp_offset;
    first.cfa.deref = false;
    FrameRow second = first;
    second.start = v.plt.threshold;
    second.cfa.offset = v.plt.sp_offset + 8;
    fn.rows = {first, second};
    // Rows after this one (none in practice) start a new function.
    start_new(row.end, end_);
  }

  Arch arch_;
  uint8_t version_;
  bool signal_;
  bool b_key_;
  uint64_t end_ = 0;
  std::vector<Function> fns_;
  std::string why_;
  uint64_t why_pc_ = 0;
};

}  // namespace

Conversion convert_cfi(dwarf::ImageCfi& cfi, Arch arch, uint8_t version, const Limits& limits) {
  Conversion out;
  const dwarf::Format format = cfi.format();
  Header& h = out.header;
  h.version = version;
  h.flags = fmt::kFlagFdeSorted | fmt::kFlagFuncStartPcrel;
  const std::optional<Abi> abi = abi_for(arch, format.big_endian);
  if (!abi) return out;  // no SFrame ABI for this architecture: nothing converts
  h.abi = *abi;
  h.fixed_fp_offset = 0;
  h.fixed_ra_offset = arch::arch_ops(arch).sframe().fixed_ra_offset;

  std::vector<Function> fns;
  cfi.for_each_fde(
      dwarf::SectionKind::EhFrame,
      [&](const dwarf::Fde& fde, const dwarf::Cie& cie) {
        if (fde.pc_end <= fde.pc_begin) return;  // covers nothing
        if (fde.pc_end - fde.pc_begin > 0xffffffffu) {
          out.inexpressible.push_back({fde.pc_begin, fde.pc_begin, "function larger than 4 GiB"});
          return;
        }
        if (version < fmt::kVersion3 && cie.signal_frame) {
          out.inexpressible.push_back(
              {fde.pc_begin, fde.pc_begin, "signal frame (CIE 'S'): needs V3"});
          return;
        }
        FdeConverter conv(fde, cie, arch, version);
        auto walked = dwarf::for_each_row(cie, fde, format, limits,
                                          [&](const dwarf::Row& row) { conv.add(row); });
        if (!walked) {
          out.inexpressible.push_back({fde.pc_begin, walked.error().where,
                                       std::string("eh_frame rows unreadable: ") +
                                           std::string(dwarf::to_string(walked.error().code))});
          return;
        }
        std::vector<Function> made =
            conv.ok() ? conv.finish(fde.pc_begin) : std::vector<Function>{};
        if (!conv.ok()) {
          out.inexpressible.push_back({fde.pc_begin, conv.why_pc(), conv.why()});
          return;
        }
        for (Function& fn : made) fns.push_back(std::move(fn));
      },
      [&](const dwarf::Error& e) {
        out.inexpressible.push_back(
            {0, e.where,
             std::string("eh_frame record unreadable: ") + std::string(dwarf::to_string(e.code))});
      });

  // Sorted by start; a function overlapping the one before it is left out (SFrame lookups
  // find one function per pc).
  std::stable_sort(fns.begin(), fns.end(),
                   [](const Function& a, const Function& b) { return a.start < b.start; });
  for (Function& fn : fns) {
    if (!out.functions.empty()) {
      const Function& prev = out.functions.back();
      if (fn.start < prev.start + prev.size) {
        out.inexpressible.push_back(
            {fn.start, fn.start, "overlaps the function at " + hex(prev.start)});
        continue;
      }
    }
    out.functions.push_back(std::move(fn));
  }
  h.num_fdes = static_cast<uint32_t>(out.functions.size());
  uint64_t fres = 0;
  for (const Function& fn : out.functions) fres += fn.rows.size();
  h.num_fres = static_cast<uint32_t>(fres);
  return out;
}

}  // namespace ehbt::sframe
