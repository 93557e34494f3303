// SPDX-License-Identifier: Apache-2.0
// One SFrame function: its FDE (and V3 attributes) and every FRE, each checked the way the
// kernel checks them before use: inside the FRE sub-section, starts strictly increasing and
// inside the function, a data-word count the ABI and FDE type allow.
#include <vector>

#include "arch/arch_ops.hpp"
#include "sframe/format.hpp"
#include "sframe/table_impl.hpp"
#include "util/byte_reader.hpp"

namespace ehbt::sframe {
namespace {

Unexpected<Error> fail(ErrorCode code, uint64_t where) {
  return unexpected(Error{code, where});
}

// Data words as read: unsigned (control words) and sign-extended (offsets).
struct Words {
  uint64_t raw[15] = {};
  unsigned size = 1;
  unsigned count = 0;
  int64_t sgn(unsigned i) const {
    const uint64_t sign = uint64_t{1} << (size * 8 - 1);
    return size == 8 ? static_cast<int64_t>(raw[i]) : static_cast<int64_t>((raw[i] ^ sign) - sign);
  }
};

struct Context {
  Abi abi;
  uint8_t version;
  const ArchInfo* ai;
  const arch::SFrameRules* rules;
};

int64_t cfa_offset(const Context& c, int64_t word) {
  return c.rules->scaled_cfa ? fmt::s390x_cfa_decode(word) : word;
}

// An RA/FP word of a default FDE: a CFA offset, or (V2 s390x, odd) a register.
bool default_saved(const Context& c, int64_t word, Recovery& r) {
  if (c.rules->v2_register_words && c.version == fmt::kVersion2 && fmt::s390x_v2_is_regnum(word)) {
    const int64_t reg = fmt::s390x_v2_regnum(word);
    if (reg < 0 || reg > 0xffff) return false;
    r.kind = Recovery::Kind::Register;
    r.reg = static_cast<uint16_t>(reg);
    return true;
  }
  r.kind = Recovery::Kind::AtCfa;
  r.offset = word;
  return true;
}

// Default FDE words: CFA offset, then the ABI's fixed order of RA/FP offsets.
bool decode_default(const Context& c, uint8_t info, const Words& w, FrameRow& row) {
  const arch::SFrameRules& rules = *c.rules;
  const bool ra_word = rules.fixed_ra_offset == 0;  // else the header's fixed RA offset
  const unsigned max = ra_word ? 3 : 2;
  if (w.count > max) return false;
  row.cfa.reg = fmt::fre_base(info) == fmt::kBaseSp ? c.ai->sp_reg : c.ai->fp_reg;
  row.cfa.offset = cfa_offset(c, w.sgn(0));
  if (!rules.defined()) return false;  // no SFrame ABI names the architecture (i386)
  if (!ra_word) return w.count < 2 || default_saved(c, w.sgn(1), row.fp);
  if (w.count >= 2) {
    if (rules.ra_padding && w.sgn(1) == fmt::kRaOffsetInvalid) {
      if (w.count != 3) return false;  // padding only stands in front of an FP word
    } else if (!default_saved(c, w.sgn(1), row.ra)) {
      return false;
    }
  }
  return w.count < 3 || default_saved(c, w.sgn(2), row.fp);
}

// A flexible rule for RA or FP from its control word and offset.
bool flex_rule(uint64_t ctrl, int64_t offset, Recovery& out) {
  if (fmt::ctrl_reserved(ctrl)) return false;
  const uint64_t reg = fmt::ctrl_regnum(ctrl);
  if (fmt::ctrl_reg_p(ctrl)) {
    if (reg > 0xffff) return false;
    out.kind = fmt::ctrl_deref_p(ctrl) ? Recovery::Kind::AtRegister : Recovery::Kind::Register;
    out.reg = static_cast<uint16_t>(reg);
    out.offset = offset;
    return true;
  }
  // CFA-based: only "saved at CFA + offset" exists (a zero control word is padding).
  if (reg != 0 || !fmt::ctrl_deref_p(ctrl)) return false;
  out.kind = Recovery::Kind::AtCfa;
  out.offset = offset;
  return true;
}

// Flexible FDE words: CFA (control, offset), then RA (control, offset, or one zero padding
// word when FP follows), then FP (control, offset).
bool decode_flex(const Context& c, const Words& w, FrameRow& row) {
  if (w.count < 2) return false;
  const uint64_t cfa_ctrl = w.raw[0];
  if (!fmt::ctrl_reg_p(cfa_ctrl) || fmt::ctrl_reserved(cfa_ctrl)) return false;
  if (fmt::ctrl_regnum(cfa_ctrl) > 0xffff) return false;
  row.cfa.reg = static_cast<uint16_t>(fmt::ctrl_regnum(cfa_ctrl));
  row.cfa.deref = fmt::ctrl_deref_p(cfa_ctrl);
  row.cfa.offset = cfa_offset(c, w.sgn(1));
  unsigned i = 2;
  if (i < w.count) {
    if (w.raw[i] == 0) {
      ++i;
      if (i >= w.count) return false;  // padding only stands in front of FP words
    } else {
      if (i + 1 >= w.count || !flex_rule(w.raw[i], w.sgn(i + 1), row.ra)) return false;
      i += 2;
    }
  }
  if (i < w.count) {
    if (w.raw[i] == 0) return false;
    if (i + 1 >= w.count || !flex_rule(w.raw[i], w.sgn(i + 1), row.fp)) return false;
    i += 2;
  }
  return i == w.count;
}

}  // namespace

Expected<Function, Error> Table::Impl::decode(uint32_t i) const {
  const FdeIndex f = index(i);
  Function fn;
  fn.start = f.start;
  fn.size = f.size;

  util::ByteReader r(bytes, big_endian);
  uint64_t pos = fre_begin + f.fre_off;
  uint32_t num_fres = f.num_fres;
  uint8_t info = f.info;
  uint8_t info2 = 0;
  uint8_t rep_size = f.rep_size;
  if (pos > fre_end) return fail(ErrorCode::BadFde, f.offset);
  if (header.version == fmt::kVersion3) {
    if (pos + fmt::kV3FdeAttrSize > fre_end) return fail(ErrorCode::BadFde, f.offset);
    uint16_t n16 = 0;
    r.seek(pos);
    r.read_u16(n16);
    r.read_u8(info);
    r.read_u8(info2);
    r.read_u8(rep_size);
    num_fres = n16;
    pos += fmt::kV3FdeAttrSize;
  }
  if (num_fres > limits.max_sframe_fres) return fail(ErrorCode::Limit, f.offset);

  const uint8_t fre_type = fmt::info_fre_type(info);
  if (fre_type > fmt::kFreTypeAddr4) return fail(ErrorCode::BadFde, f.offset);
  fn.pc_type = fmt::info_pc_type(info) == fmt::kPcTypeMask ? PcType::Mask : PcType::Increment;
  fn.rep_size = rep_size;
  if (fn.pc_type == PcType::Mask && rep_size == 0) return fail(ErrorCode::BadFde, f.offset);
  const Context ctx{header.abi, header.version, &arch_info(arch), &arch::arch_ops(arch).sframe()};
  fn.pauth_b_key = ctx.rules->pauth && fmt::info_pauth_b(info);
  if (header.version == fmt::kVersion3) {
    const uint8_t type = fmt::info2_fde_type(info2);
    if (type == fmt::kFdeTypeFlex) {
      fn.type = FdeType::Flex;
    } else if (type != fmt::kFdeTypeDefault) {
      return fail(ErrorCode::BadFde, f.offset);
    }
    fn.signal_frame = fmt::info_signal(info);
  }

  const unsigned start_bytes = fmt::start_size(fre_type);
  // Reserve no more rows than the FRE bytes left could hold (each takes start_bytes + 1).
  fn.rows.reserve(
      std::min<uint64_t>(num_fres, pos <= fre_end ? (fre_end - pos) / (start_bytes + 1) : 0));
  for (uint32_t k = 0; k < num_fres; ++k) {
    const uint64_t fre_at = pos;
    if (pos + start_bytes + 1 > fre_end) return fail(ErrorCode::BadFde, fre_at);
    r.seek(pos);
    uint64_t start = 0;
    uint8_t fre_info = 0;
    r.read_uint(start_bytes, start);
    r.read_u8(fre_info);
    pos += start_bytes + 1;
    const uint8_t size_code = fmt::fre_word_size_code(fre_info);
    if (size_code > fmt::kWordSize4) return fail(ErrorCode::BadFre, fre_at);
    Words w;
    w.size = fmt::word_size(size_code);
    w.count = fmt::fre_word_count(fre_info);
    if (pos + uint64_t{w.count} * w.size > fre_end) return fail(ErrorCode::BadFde, fre_at);
    for (unsigned j = 0; j < w.count; ++j) r.read_uint(w.size, w.raw[j]);
    pos += uint64_t{w.count} * w.size;

    // Starts strictly increase and stay inside the function (and, for PCMASK, inside the
    // repeated block). A zero-size function may still carry its row at offset 0.
    if (!fn.rows.empty() && start <= fn.rows.back().start) return fail(ErrorCode::BadFre, fre_at);
    if (start != 0 && start >= fn.size) return fail(ErrorCode::BadFre, fre_at);
    if (fn.pc_type == PcType::Mask && start >= rep_size) return fail(ErrorCode::BadFre, fre_at);

    FrameRow row;
    row.start = static_cast<uint32_t>(start);
    if (w.count == 0) {
      // No data words: the return address is undefined, this is the outermost frame.
      row.ra.kind = Recovery::Kind::Undefined;
      row.cfa.reg = ctx.ai->sp_reg;
      row.cfa.offset = ctx.ai->cfa_sp_offset;
    } else {
      const bool ok = fn.type == FdeType::Flex ? decode_flex(ctx, w, row)
                                               : decode_default(ctx, fre_info, w, row);
      if (!ok) return fail(ErrorCode::BadFre, fre_at);
      row.ra_mangled = ctx.rules->pauth && fmt::fre_mangled_ra(fre_info);
    }
    fn.rows.push_back(row);
  }
  return fn;
}

}  // namespace ehbt::sframe
