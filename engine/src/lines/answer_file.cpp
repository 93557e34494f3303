// SPDX-License-Identifier: Apache-2.0
// Files of line answers as bytes (see answer_file.hpp).
#include "lines/answer_file.hpp"

#include <sys/stat.h>

#include <span>

#include "lines/answer_records.hpp"
#include "util/byte_reader.hpp"
#include "util/fnv.hpp"

namespace ehbt::lines {
namespace {

constexpr std::string_view kMagic{"EHBTLNA\x01", 8};
constexpr std::size_t kFrame = kRecordFrameBytes;  // u32 length, u64 checksum

uint64_t checksum(std::string_view payload) {
  uint64_t h = util::kFnvBasis;
  util::fnv1a(h, payload.data(), payload.size());
  return h;
}

util::ByteReader reader(std::string_view bytes) {
  return util::ByteReader(std::as_bytes(std::span(bytes.data(), bytes.size())), false);
}

// The frame at `at` of `bytes` (its payload's size and checksum): false when it runs past
// the end.
bool frame_at(std::string_view bytes, std::size_t at, std::size_t& size, uint64_t& sum) {
  if (at > bytes.size()) return false;
  util::ByteReader in = reader(bytes.substr(at));
  uint64_t n = 0;
  if (!in.read_uint(4, n) || !in.read_uint(8, sum) || n > in.remaining()) return false;
  size = static_cast<std::size_t>(n);
  return true;
}

void put_identity(std::string& out, const FileIdentity& id) {
  put_string(out, id.path);
  for (uint64_t v : {id.dev, id.ino, id.size, id.mtime_sec, id.mtime_nsec}) put_le(out, v, 8);
}

bool get_identity(util::ByteReader& in, FileIdentity& id) {
  return get_string(in, id.path) && in.read_uint(8, id.dev) && in.read_uint(8, id.ino) &&
         in.read_uint(8, id.size) && in.read_uint(8, id.mtime_sec) &&
         in.read_uint(8, id.mtime_nsec);
}

std::optional<AnswerFileHeader> read_header(std::string_view payload) {
  util::ByteReader in = reader(payload);
  AnswerFileHeader h;
  uint64_t has_alt = 0;
  bool ok = get_string(in, h.engine) && get_identity(in, h.source);
  for (uint64_t& v : h.limits) ok = ok && in.read_uint(8, v);
  ok = ok && in.read_uint(1, has_alt) && has_alt <= 1;
  if (ok && has_alt == 1) {
    h.alt.emplace();
    ok = get_identity(in, *h.alt);
  }
  if (!ok || !in.at_end()) return std::nullopt;
  return h;
}

}  // namespace

std::optional<FileIdentity> FileIdentity::of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileIdentity{path,
                      static_cast<uint64_t>(st.st_dev),
                      static_cast<uint64_t>(st.st_ino),
                      static_cast<uint64_t>(st.st_size),
                      static_cast<uint64_t>(st.st_mtim.tv_sec),
                      static_cast<uint64_t>(st.st_mtim.tv_nsec)};
}

std::string framed_record(std::string_view payload) {
  std::string out;
  out.reserve(kFrame + payload.size());
  put_le(out, payload.size(), 4);
  put_le(out, checksum(payload), 8);
  out += payload;
  return out;
}

std::string answer_file_start(const AnswerFileHeader& header) {
  std::string payload;
  put_string(payload, header.engine);
  put_identity(payload, header.source);
  for (uint64_t v : header.limits) put_le(payload, v, 8);
  put_le(payload, header.alt ? 1 : 0, 1);
  if (header.alt) put_identity(payload, *header.alt);
  return std::string(kMagic) + framed_record(payload);
}

AnswerFileView parse_answer_file(std::string_view bytes) {
  AnswerFileView view;
  std::size_t size = 0;
  uint64_t sum = 0;
  if (!bytes.starts_with(kMagic) || !frame_at(bytes, kMagic.size(), size, sum)) return view;
  const std::string_view payload = bytes.substr(kMagic.size() + kFrame, size);
  if (checksum(payload) != sum) return view;
  view.header = read_header(payload);
  if (!view.header) return view;
  std::size_t at = kMagic.size() + kFrame + size;
  view.good_end = at;
  while (at < bytes.size()) {
    if (!frame_at(bytes, at, size, sum)) {
      view.damaged = true;
      break;
    }
    view.records.push_back(RecordSpan{at, kFrame + size});
    at += kFrame + size;
    view.good_end = at;
  }
  return view;
}

std::optional<std::string_view> record_payload(std::string_view bytes, RecordSpan span) {
  std::size_t size = 0;
  uint64_t sum = 0;
  if (span.at > bytes.size() || span.size > bytes.size() - span.at) return std::nullopt;
  const std::string_view frame = bytes.substr(span.at, span.size);
  if (!frame_at(frame, 0, size, sum) || kFrame + size != span.size) return std::nullopt;
  const std::string_view payload = frame.substr(kFrame);
  if (checksum(payload) != sum) return std::nullopt;
  return payload;
}

}  // namespace ehbt::lines
