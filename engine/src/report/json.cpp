// SPDX-License-Identifier: Apache-2.0
// The ehbt-backtrace/1 rendering of a backtrace report (docs/formats.md).
#include "ehbt/report.hpp"
#include "report/document_writer.hpp"
#include "report/json_writer.hpp"
#include "util/hex.hpp"

namespace ehbt::report {
namespace {

std::optional<std::string> or_null(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

// {"file", "line", "column"} (column null when unknown), or null.
void position_value(DocumentWriter& w, const std::optional<SourcePosition>& at) {
  if (!at) {
    w.null();
    return;
  }
  w.begin_object(true).field("file", at->file).field("line", int64_t{at->line});
  w.key("column");
  if (at->column != 0) {
    w.value(int64_t{at->column});
  } else {
    w.null();
  }
  w.end_object();
}

// The events written as JSON text, handed to `sink` in pieces of about kRenderChunk bytes cut
// between frames (the writer keeps its nesting state apart from the text: emptying it is safe).
class JsonEvents final : public DocumentEvents {
 public:
  JsonEvents(const RenderSink& sink, bool compact) : sink_(sink), w_(out_, compact) {
    out_.reserve(kRenderChunk + 4096);
  }
  void begin_object(bool one_line) override { w_.begin_object(one_line); }
  void end_object() override { w_.end_object(); }
  void begin_array(bool one_line) override { w_.begin_array(one_line); }
  void end_array() override { w_.end_array(); }
  void key(std::string_view k) override { w_.key(k); }
  void string(std::string_view s) override { w_.value(s); }
  void integer(int64_t v) override { w_.value(v); }
  void unsigned_integer(uint64_t v) override { w_.value(v); }
  void boolean(bool v) override { w_.value(v); }
  void null() override { w_.null(); }
  void address(uint64_t v) override { w_.address(v); }
  void after_frame() override {
    if (out_.size() < kRenderChunk) return;
    // The last frame's shared text leaves with the piece: kept aside for a repeat.
    if (shared_in_out_) {
      shared_.assign(out_, shared_from_, shared_size_);
      shared_in_out_ = false;
    }
    sink_(out_);
  }
  // The text is the same for the same members: the writer's state where they begin (inside a
  // frame's one-line object, after a member) is the same for every frame, and they leave it
  // as they found it (their containers are closed). It is copied again from where it was
  // written, while that is still in the piece being filled; a frame that is not repeated
  // (most frames, outside a recursion) costs no copy.
  void begin_shared() override { shared_from_ = out_.size(); }
  void end_shared() override {
    shared_size_ = out_.size() - shared_from_;
    shared_in_out_ = true;
  }
  bool repeat_shared() override {
    if (!shared_in_out_) {
      out_ += shared_;
      return true;
    }
    out_.reserve(out_.size() + shared_size_);  // no reallocation under the copy's source
    out_.append(out_.data() + shared_from_, shared_size_);
    return true;
  }
  // The document's last piece, with its final newline.
  void finish() {
    out_ += '\n';
    sink_(out_);
  }

 private:
  const RenderSink& sink_;
  std::string out_;
  JsonWriter w_;
  // The last written frame's members after its cfa: out_[shared_from_, + shared_size_) while
  // shared_in_out_, else the copy in shared_.
  std::size_t shared_from_ = 0, shared_size_ = 0;
  bool shared_in_out_ = false;
  std::string shared_;
};

// Whether everything `a` writes after its cfa is what `b` writes there.
bool same_after_cfa(const FrameLine& a, const FrameLine& b) {
  return a.source == b.source && a.module == b.module && a.module_offset == b.module_offset &&
         a.symbol_offset == b.symbol_offset && a.jit == b.jit && a.symbol == b.symbol &&
         a.location == b.location && a.inlined == b.inlined;
}

// A frame's members after its cfa.
void frame_after_cfa(DocumentWriter& w, const BacktraceReport& r, const FrameLine& f) {
  w.field("source", frame_source_name(f.source)).key("module");
  if (f.module && *f.module < r.modules.size()) {
    w.value(r.modules[*f.module].path);
  } else {
    w.null();
  }
  w.address_field("module_offset", f.module_offset)
      .field("symbol", f.symbol)
      .address_field("symbol_offset", f.symbol_offset);
  w.key("location");
  position_value(w, f.location);
  w.key("inlined").begin_array();
  for (const InlinedCall& call : f.inlined) {
    w.begin_object(true).field("function", call.function).key("location");
    position_value(w, call.location);
    w.end_object();
  }
  w.end_array();
  if (f.jit) w.field("jit", true);  // only on JIT frames: other frames keep their shape
}

}  // namespace

void DocumentEvents::address(uint64_t v) {
  char text[18];
  string(std::string_view(text, document_address(text, v)));
}

std::size_t document_address(char (&out)[18], uint64_t v) {
  return util::write_hex(out, v);
}

std::string render_json(const BacktraceReport& r, const JsonOptions& options) {
  std::string out;
  render_json(
      r,
      [&out](std::string& piece) {
        out += piece;
        piece.clear();
      },
      options);
  return out;
}

void render_json(const BacktraceReport& r, const RenderSink& sink, const JsonOptions& options) {
  JsonEvents events(sink, options.compact);
  render_document(r, events);
  events.finish();
}

void render_document(const BacktraceReport& r, DocumentEvents& events) {
  DocumentWriter w(events);
  w.begin_object();
  w.field("format", "ehbt-backtrace/1");
  if (r.core) w.field("core", *r.core);
  if (r.input_format) w.field("input_format", *r.input_format);
  if (r.pid) w.field("pid", *r.pid);
  // A target named neither way (a debugger's program without a process) still has the key.
  if (!r.core && !r.pid) w.key("core").null();
  if (r.stopped_us) w.field("stopped_us", *r.stopped_us);
  w.field("arch", r.arch);
  w.field("executable", r.executable);
  w.key("signal");
  if (r.signal) {
    w.begin_object(true)
        .field("number", r.signal->number)
        .field("name", r.signal->name)
        .field("code", r.signal->code)
        .address_field("address", r.signal->address);
    // Only for a signal a process sent: other signals keep their shape.
    if (const auto& from = r.signal->sender) {
      w.key("sender")
          .begin_object(true)
          .field("pid", static_cast<int64_t>(from->pid))
          .field("uid", static_cast<int64_t>(from->uid))
          .end_object();
    }
    w.end_object();
  } else {
    w.null();
  }
  w.key("modules").begin_array();
  for (const ModuleLine& m : r.modules) {
    w.begin_object(true)
        .field("path", m.path)
        .field("file", or_null(m.file))
        .address_field("base", m.base)
        .address_field("bias", m.bias)
        .field("build_id", or_null(m.build_id))
        .field("build_id_match", m.build_id_match)
        .end_object();
  }
  w.end_array();
  w.key("warnings").begin_array();
  for (const Warning& x : r.warnings) {
    w.begin_object(true)
        .field("kind", x.kind)
        .field("message", x.message)
        .field("path", or_null(x.path))
        .field("option", or_null(x.option))
        .end_object();
  }
  w.end_array();
  w.key("threads").begin_array();
  for (const ThreadReport& t : r.threads) {
    w.begin_object()
        .field("tid", t.tid)
        .field("crashing", t.crashing)
        .field("stop_reason", stop_reason_name(t.stop))
        .field("stop_detail", t.detail);
    w.key("frames").begin_array();
    const FrameLine* previous = nullptr;
    for (const FrameLine& f : t.frames) {
      w.begin_object(true)
          .field("index", f.index)
          .address_field("pc", f.pc)
          .address_field("cfa", f.cfa);
      // A frame the same as the one before after its cfa (a recursion) is that text again.
      const bool repeated =
          previous != nullptr && same_after_cfa(f, *previous) && events.repeat_shared();
      if (!repeated) {
        events.begin_shared();
        frame_after_cfa(w, r, f);
        events.end_shared();
      }
      previous = &f;
      w.end_object();
      events.after_frame();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace ehbt::report
