// SPDX-License-Identifier: Apache-2.0
#include "unwind/image_sframe.hpp"

#include <algorithm>
#include <span>

#include "unwind/describe.hpp"

namespace ehbt::unwind {
namespace {

std::size_t row_slot(uint64_t pc, std::size_t bits) {
  return static_cast<std::size_t>((pc * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

std::string describe_error(const sframe::Error& e) {
  return std::string(sframe::to_string(e.code)) + " at " + hex(e.where);
}

}  // namespace

// ------------------------------------------------------------------------------ SFrameRows

SFrameRows::SFrameRows(sframe::Table table, std::vector<std::byte> owned)
    : owned_(std::move(owned)), table_(std::move(table)) {}

Expected<const dwarf::Row*, sframe::Error> SFrameRows::find(uint64_t pc) {
  const std::size_t slot = row_slot(pc, kSlotBits);
  if (const uint16_t i = slot_index_[slot]; i != 0 && rows_[i - 1].pc == pc) {
    return &rows_[i - 1].row;
  }
  auto found = table_.find_row(pc);
  if (!found) return unexpected(found.error());
  if (slot_index_[slot] == 0) {
    rows_.emplace_back();
    slot_index_[slot] = static_cast<uint16_t>(rows_.size());
  }
  Cached& c = rows_[slot_index_[slot] - 1];
  c.pc = pc;
  c.row = *found;
  return &c.row;
}

// ----------------------------------------------------------------------------- ImageSFrame

ImageSFrame::ImageSFrame(const Image& image, dwarf::ImageCfi& cfi, const Limits& limits)
    : image_(image), cfi_(cfi), limits_(limits) {}

ImageSFrame::Slot* ImageSFrame::slot(bool converted, uint8_t version) {
  if (!converted) return &native_;
  if (version != 2 && version != 3) return nullptr;
  return &converted_[version - 2];
}

const ImageSFrame::Slot* ImageSFrame::slot(bool converted, uint8_t version) const {
  return const_cast<ImageSFrame*>(this)->slot(converted, version);
}

ImageSFrame::Slot& ImageSFrame::ready(Slot& s, bool converted, uint8_t version) {
  if (s.state == Slot::State::Unbuilt) {
    if (converted) {
      build_converted(s, version);
    } else {
      build_native(s);
    }
  }
  return s;
}

SFrameLookup ImageSFrame::find_row(uint64_t pc, bool converted, uint8_t version) {
  SFrameLookup out;
  Slot* s = slot(converted, version);
  if (s == nullptr || ready(*s, converted, version).state != Slot::State::Ready) return out;
  auto found = s->rows->find(pc);
  if (found) {
    out.status = SFrameLookup::Status::Found;
    out.row = *found;
    return out;
  }
  if (found.error().code == sframe::ErrorCode::NotCovered) {
    out.status = SFrameLookup::Status::NotCovered;
    return out;
  }
  if (found.error().code == sframe::ErrorCode::Unsupported) {
    // Not corruption: the rest of the table is still good.
    out.status = SFrameLookup::Status::Unsupported;
    out.error = found.error();
    return out;
  }
  // Corrupt (the kernel's rule): drop the whole table for this image, never search it again.
  s->state = Slot::State::Dropped;
  s->error = found.error();
  s->rows.reset();
  out.status = SFrameLookup::Status::Dropped;
  return out;
}

void ImageSFrame::build_native(Slot& s) {
  const SectionRef section = image_.sframe();
  if (section.empty()) {
    s.state = Slot::State::Absent;
    s.absent_why = "the module has no .sframe";
    return;
  }
  auto table = sframe::Table::parse(section.bytes, section.addr, limits_);
  if (!table) {
    s.state = Slot::State::Dropped;
    s.error = table.error();
    return;
  }
  if (table->arch() != image_.arch()) {
    s.state = Slot::State::Dropped;
    s.error = sframe::Error{sframe::ErrorCode::BadAbi, 0};
    return;
  }
  s.rows = std::make_unique<SFrameRows>(std::move(*table), std::vector<std::byte>{});
  s.state = Slot::State::Ready;
}

void ImageSFrame::build_converted(Slot& s, uint8_t version) {
  const SectionRef eh_frame = image_.eh_frame();
  if (eh_frame.empty()) {
    s.state = Slot::State::Absent;
    s.absent_why = "the module has no .eh_frame to convert";
    return;
  }
  if (!sframe::abi_for(image_.arch(), image_.big_endian())) {
    s.state = Slot::State::Absent;
    s.absent_why =
        "SFrame defines no ABI for " + std::string(arch_info(image_.arch()).name) + ": no table";
    return;
  }
  sframe::Conversion conv = sframe::convert_cfi(cfi_, image_.arch(), version, limits_);
  s.inexpressible = std::move(conv.inexpressible);
  std::stable_sort(s.inexpressible.begin(), s.inexpressible.end(),
                   [](const sframe::Inexpressible& a, const sframe::Inexpressible& b) {
                     return a.function < b.function;
                   });
  if (conv.functions.empty()) {
    s.state = Slot::State::Absent;
    s.absent_why =
        "no .eh_frame function of the module converts to SFrame V" + std::to_string(version);
    return;
  }
  // The section is placed where .eh_frame is: any fixed address would do, this one keeps the
  // PC-relative function starts small.
  auto bytes = sframe::encode(conv, eh_frame.addr);
  if (!bytes) {
    s.state = Slot::State::Dropped;
    s.error = bytes.error();
    return;
  }
  // The table points into the vector's buffer, which a move of the vector keeps.
  std::vector<std::byte> owned = std::move(*bytes);
  auto table = sframe::Table::parse(std::span<const std::byte>(owned), eh_frame.addr, limits_);
  if (!table) {
    s.state = Slot::State::Dropped;
    s.error = table.error();
    return;
  }
  s.rows = std::make_unique<SFrameRows>(std::move(*table), std::move(owned));
  s.state = Slot::State::Ready;
}

std::string ImageSFrame::why_no_table(bool converted, uint8_t version) const {
  const Slot* s = slot(converted, version);
  if (s == nullptr) return "SFrame version " + std::to_string(version) + " is not 2 or 3";
  switch (s->state) {
    case Slot::State::Absent:
      return s->absent_why;
    case Slot::State::Dropped:
      // Not corrupt: written for a version this reader does not read.
      if (!converted && s->error.code == sframe::ErrorCode::BadVersion) {
        return "its .sframe is not used: " + sframe::describe(s->error, image_.sframe().bytes);
      }
      return std::string(converted ? "its converted SFrame V" + std::to_string(version) + " table"
                                   : "its .sframe") +
             " was dropped as corrupt: " + describe_error(s->error);
    case Slot::State::Unbuilt:
    case Slot::State::Ready:
      break;
  }
  return "";
}

std::optional<sframe::Error> ImageSFrame::drop_error(bool converted, uint8_t version) const {
  const Slot* s = slot(converted, version);
  if (s == nullptr || s->state != Slot::State::Dropped) return std::nullopt;
  return s->error;
}

const std::vector<sframe::Inexpressible>* ImageSFrame::inexpressible(uint8_t version) {
  Slot* s = slot(true, version);
  if (s == nullptr) return nullptr;
  return &ready(*s, true, version).inexpressible;
}

std::optional<std::string> ImageSFrame::inexpressible_reason(uint64_t pc, uint8_t version) {
  const std::vector<sframe::Inexpressible>* list = inexpressible(version);
  if (list == nullptr || list->empty()) return std::nullopt;
  // The converter names functions by their FDE's start: find the FDE covering the pc.
  auto fde = cfi_.find_fde(dwarf::SectionKind::EhFrame, pc);
  if (!fde) return std::nullopt;
  const uint64_t start = fde->first.pc_begin;
  auto it =
      std::lower_bound(list->begin(), list->end(), start,
                       [](const sframe::Inexpressible& e, uint64_t v) { return e.function < v; });
  if (it == list->end() || it->function != start) return std::nullopt;
  return it->why + " (row at " + hex(it->pc) + ")";
}

}  // namespace ehbt::unwind
