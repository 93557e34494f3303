// SPDX-License-Identifier: Apache-2.0
// SFrame section writer: header, FDEs (V2) or FDE index + attributes (V3), FREs with the
// smallest start size per function and the smallest data-word size per FRE, in the byte
// order of the ABI. Errors name the function index in `where`.
#include <algorithm>
#include <limits>

#include "arch/arch_ops.hpp"
#include "sframe/format.hpp"
#include "sframe/sframe.hpp"

namespace ehbt::sframe {
namespace {

Unexpected<Error> fail(ErrorCode code, uint64_t where) {
  return unexpected(Error{code, where});
}

class Bytes {
 public:
  explicit Bytes(bool big_endian) : be_(big_endian) {}
  void put(unsigned size, uint64_t v) {
    for (unsigned i = 0; i < size; ++i) {
      const unsigned shift = be_ ? 8 * (size - 1 - i) : 8 * i;
      out_.push_back(static_cast<std::byte>((v >> shift) & 0xff));
    }
  }
  void append(const Bytes& other) { out_.insert(out_.end(), other.out_.begin(), other.out_.end()); }
  std::size_t size() const { return out_.size(); }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  bool be_;
  std::vector<std::byte> out_;
};

struct Word {
  int64_t value = 0;
  bool control = false;  // unsigned (flexible control word)
};

unsigned word_bytes(const Word& w) {
  if (w.control) {
    const uint64_t u = static_cast<uint64_t>(w.value);
    return u <= 0xff ? 1 : u <= 0xffff ? 2 : 4;
  }
  if (w.value >= std::numeric_limits<int8_t>::min() &&
      w.value <= std::numeric_limits<int8_t>::max()) {
    return 1;
  }
  if (w.value >= std::numeric_limits<int16_t>::min() &&
      w.value <= std::numeric_limits<int16_t>::max()) {
    return 2;
  }
  return 4;
}

bool fits_word(const Word& w) {
  if (w.control) return w.value >= 0 && static_cast<uint64_t>(w.value) <= 0xffffffffu;
  return w.value >= std::numeric_limits<int32_t>::min() &&
         w.value <= std::numeric_limits<int32_t>::max();
}

struct Ctx {
  const ArchInfo* ai;
  const arch::SFrameRules* rules;
  uint8_t version;
};

bool cfa_word(const Ctx& c, int64_t offset, Word& w) {
  if (c.rules->scaled_cfa) {
    if ((offset + fmt::kS390xCfaAdjustment) % fmt::kS390xCfaAlignment != 0) return false;
    w.value = (offset + fmt::kS390xCfaAdjustment) / fmt::kS390xCfaAlignment;
  } else {
    w.value = offset;
  }
  return true;
}

// A default-FDE RA/FP word (CFA offset, or V2 s390x register number).
bool default_word(const Ctx& c, const Recovery& r, Word& w) {
  if (r.kind == Recovery::Kind::AtCfa) {
    w.value = r.offset;
    return true;
  }
  if (r.kind == Recovery::Kind::Register && r.offset == 0 && c.rules->v2_register_words &&
      c.version == fmt::kVersion2) {
    w.value = fmt::s390x_v2_encode_regnum(r.reg);
    return true;
  }
  return false;
}

bool default_words(const Ctx& c, const FrameRow& row, uint8_t& base, std::vector<Word>& words) {
  if (row.cfa.deref) return false;
  if (row.cfa.reg == c.ai->sp_reg) {
    base = fmt::kBaseSp;
  } else if (row.cfa.reg == c.ai->fp_reg) {
    base = fmt::kBaseFp;
  } else {
    return false;
  }
  Word cfa;
  if (!cfa_word(c, row.cfa.offset, cfa)) return false;
  words.push_back(cfa);
  const bool fp = row.fp.kind != Recovery::Kind::Untracked;
  const bool ra = row.ra.kind != Recovery::Kind::Untracked;
  Word w;
  const arch::SFrameRules& rules = *c.rules;
  if (!rules.defined()) return false;  // no SFrame ABI names the architecture (i386)
  if (rules.fixed_ra_offset != 0) {
    if (ra) return false;  // only the header's fixed slot
  } else if (!rules.ra_padding) {
    if (fp && !ra) return false;  // no padding word (aarch64)
    if (ra) {
      if (!default_word(c, row.ra, w)) return false;
      words.push_back(w);
    }
  } else {
    if (ra) {
      if (!default_word(c, row.ra, w) || w.value == fmt::kRaOffsetInvalid) return false;
      words.push_back(w);
    } else if (fp) {
      words.push_back(Word{fmt::kRaOffsetInvalid, false});  // padding
    }
  }
  if (fp) {
    if (!default_word(c, row.fp, w)) return false;
    words.push_back(w);
  }
  return true;
}

bool flex_pair(const Recovery& r, std::vector<Word>& words) {
  switch (r.kind) {
    case Recovery::Kind::AtCfa:
      words.push_back(Word{static_cast<int64_t>(fmt::make_ctrl(0, true, false)), true});
      break;
    case Recovery::Kind::Register:
    case Recovery::Kind::AtRegister:
      words.push_back(Word{
          static_cast<int64_t>(fmt::make_ctrl(r.reg, r.kind == Recovery::Kind::AtRegister, true)),
          true});
      break;
    case Recovery::Kind::Untracked:
    case Recovery::Kind::Undefined:
      return false;
  }
  words.push_back(Word{r.offset, false});
  return true;
}

bool flex_words(const Ctx& c, const FrameRow& row, std::vector<Word>& words) {
  words.push_back(
      Word{static_cast<int64_t>(fmt::make_ctrl(row.cfa.reg, row.cfa.deref, true)), true});
  Word cfa;
  if (!cfa_word(c, row.cfa.offset, cfa)) return false;
  words.push_back(cfa);
  const bool fp = row.fp.kind != Recovery::Kind::Untracked;
  if (row.ra.kind != Recovery::Kind::Untracked) {
    if (!flex_pair(row.ra, words)) return false;
  } else if (fp) {
    words.push_back(Word{0, true});  // padding: RA keeps its default
  }
  if (fp && !flex_pair(row.fp, words)) return false;
  return true;
}

}  // namespace

Expected<std::vector<std::byte>, Error> encode(const Conversion& conversion,
                                               uint64_t section_addr) {
  const Header& h = conversion.header;
  const auto& fns = conversion.functions;
  if (h.version != fmt::kVersion2 && h.version != fmt::kVersion3) {
    return fail(ErrorCode::BadVersion, 0);
  }
  const bool v3 = h.version == fmt::kVersion3;
  const bool be = abi_big_endian(h.abi);
  const Arch arch = abi_arch(h.abi);
  const Ctx ctx{&arch_info(arch), &arch::arch_ops(arch).sframe(), h.version};
  const uint8_t flags = static_cast<uint8_t>(h.flags | fmt::kFlagFdeSorted);
  if ((flags & ~(v3 ? fmt::kKnownFlagsV3 : fmt::kKnownFlagsV2)) != 0) {
    return fail(ErrorCode::BadHeader, 0);
  }
  if (fns.size() > std::numeric_limits<uint32_t>::max()) return fail(ErrorCode::Limit, 0);
  const uint32_t fde_size = v3 ? fmt::kV3FdeIndexSize : fmt::kV2FdeSize;

  Bytes fres(be);
  std::vector<uint32_t> fre_offsets;
  std::vector<uint8_t> infos;
  uint64_t num_fres = 0;
  for (std::size_t i = 0; i < fns.size(); ++i) {
    const Function& fn = fns[i];
    if (i > 0 && fn.start < fns[i - 1].start) return fail(ErrorCode::Unsorted, i);
    if (fn.pc_type == PcType::Mask && fn.rep_size == 0) return fail(ErrorCode::BadFde, i);
    if (fn.type == FdeType::Flex && !v3) return fail(ErrorCode::BadFde, i);
    if (v3 && fn.rows.size() > 0xffff) return fail(ErrorCode::Limit, i);
    if (fres.size() > std::numeric_limits<uint32_t>::max()) return fail(ErrorCode::Limit, i);
    fre_offsets.push_back(static_cast<uint32_t>(fres.size()));
    num_fres += fn.rows.size();

    uint32_t max_start = 0;
    for (std::size_t k = 0; k < fn.rows.size(); ++k) {
      const uint32_t s = fn.rows[k].start;
      if (k > 0 && s <= fn.rows[k - 1].start) return fail(ErrorCode::BadFre, i);
      if (s != 0 && s >= fn.size) return fail(ErrorCode::BadFre, i);
      if (fn.pc_type == PcType::Mask && s >= fn.rep_size) return fail(ErrorCode::BadFre, i);
      max_start = std::max(max_start, s);
    }
    const uint8_t fre_type = max_start <= 0xff     ? fmt::kFreTypeAddr1
                             : max_start <= 0xffff ? fmt::kFreTypeAddr2
                                                   : fmt::kFreTypeAddr4;
    const uint8_t info = fmt::make_func_info(
        fre_type, fn.pc_type == PcType::Mask ? fmt::kPcTypeMask : fmt::kPcTypeInc, fn.pauth_b_key,
        v3 && fn.signal_frame);
    infos.push_back(info);
    if (v3) {
      fres.put(2, fn.rows.size());
      fres.put(1, info);
      fres.put(1, fn.type == FdeType::Flex ? fmt::kFdeTypeFlex : fmt::kFdeTypeDefault);
      fres.put(1, fn.rep_size);
    }

    for (const FrameRow& row : fn.rows) {
      uint8_t base = 0;
      std::vector<Word> words;
      if (row.ra.kind != Recovery::Kind::Undefined) {
        const bool ok = fn.type == FdeType::Flex ? flex_words(ctx, row, words)
                                                 : default_words(ctx, row, base, words);
        if (!ok || row.fp.kind == Recovery::Kind::Undefined) return fail(ErrorCode::BadFre, i);
      }
      unsigned size = 1;
      for (const Word& w : words) {
        if (!fits_word(w)) return fail(ErrorCode::BadFre, i);
        size = std::max(size, word_bytes(w));
      }
      const uint8_t size_code = size == 1   ? fmt::kWordSize1
                                : size == 2 ? fmt::kWordSize2
                                            : fmt::kWordSize4;
      // The outermost FRE is all zero but its start: no words, no base, no size.
      const bool outer = words.empty();
      fres.put(fmt::start_size(fre_type), row.start);
      fres.put(1, outer ? 0
                        : fmt::make_fre_info(base, static_cast<uint8_t>(words.size()), size_code,
                                             ctx.rules->pauth && row.ra_mangled));
      for (const Word& w : words) fres.put(size, static_cast<uint64_t>(w.value));
    }
  }
  if (num_fres > std::numeric_limits<uint32_t>::max() ||
      fres.size() > std::numeric_limits<uint32_t>::max()) {
    return fail(ErrorCode::Limit, 0);
  }

  Bytes out(be);
  const uint64_t fde_bytes = uint64_t{fde_size} * fns.size();
  if (fde_bytes > std::numeric_limits<uint32_t>::max()) return fail(ErrorCode::Limit, 0);
  out.put(2, fmt::kMagic);
  out.put(1, h.version);
  out.put(1, flags);
  out.put(1, static_cast<uint8_t>(h.abi));
  out.put(1, static_cast<uint8_t>(h.fixed_fp_offset));
  out.put(1, static_cast<uint8_t>(h.fixed_ra_offset));
  out.put(1, 0);  // no auxiliary header
  out.put(4, fns.size());
  out.put(4, num_fres);
  out.put(4, fres.size());
  out.put(4, 0);  // FDEs right after the header
  out.put(4, fde_bytes);
  const bool pcrel = (flags & fmt::kFlagFuncStartPcrel) != 0;
  for (std::size_t i = 0; i < fns.size(); ++i) {
    const Function& fn = fns[i];
    const uint64_t fde_at = fmt::kHeaderSize + uint64_t{fde_size} * i;
    const int64_t start = static_cast<int64_t>(fn.start - section_addr - (pcrel ? fde_at : 0));
    if (v3) {
      out.put(8, static_cast<uint64_t>(start));
    } else {
      if (start < std::numeric_limits<int32_t>::min() ||
          start > std::numeric_limits<int32_t>::max()) {
        return fail(ErrorCode::Limit, i);
      }
      out.put(4, static_cast<uint64_t>(start));
    }
    out.put(4, fn.size);
    out.put(4, fre_offsets[i]);
    if (!v3) {
      out.put(4, fn.rows.size());
      out.put(1, infos[i]);
      out.put(1, fn.rep_size);
      out.put(2, 0);
    }
  }
  out.append(fres);
  return out.take();
}

}  // namespace ehbt::sframe
