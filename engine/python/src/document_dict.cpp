// SPDX-License-Identifier: Apache-2.0
// Report.to_dict (see document_dict.hpp): one Python object per document event.
#include "document_dict.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ehbt::py {
namespace {

namespace pyb = pybind11;

// Builds the objects as the events arrive: the open containers on a stack, the last key of
// the innermost object waiting for its value. Errors (no memory) are Python's own, raised.
class DictBuilder final : public report::DocumentEvents {
 public:
  void begin_object(bool) override { open(pyb::dict()); }
  void end_object() override { close(); }
  void begin_array(bool) override { open(pyb::list()); }
  void end_array() override { close(); }
  void key(std::string_view k) override { key_ = keys_.get(k); }
  void string(std::string_view s) override { add(values_.get(s)); }
  void integer(int64_t v) override { add(pyb::int_(v)); }
  void unsigned_integer(uint64_t v) override { add(pyb::int_(v)); }
  void boolean(bool v) override { add(pyb::bool_(v)); }
  void null() override { add(pyb::none()); }
  // ASCII by construction: written straight into a new str, with no std::string between.
  void address(uint64_t v) override {
    char buf[18];
    const std::size_t n = report::document_address(buf, v);
    PyObject* o = PyUnicode_New(static_cast<Py_ssize_t>(n), 127);
    if (o == nullptr) throw pyb::error_already_set();
    std::memcpy(PyUnicode_1BYTE_DATA(o), buf, n);
    add(pyb::reinterpret_steal<pyb::object>(o));
  }

  pyb::object result() { return std::move(root_); }

 private:
  // What json.loads gives for the JSON string of `s` (report::document_string's rule): the
  // bytes themselves when they are UTF-8 (nearly every name and path), else the bytes that
  // are not as U+0080-U+00FF.
  static pyb::object text(std::string_view s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
    if (o == nullptr) {
      PyErr_Clear();
      const std::string visible = report::document_string(s);
      o = PyUnicode_DecodeUTF8(visible.data(), static_cast<Py_ssize_t>(visible.size()), "strict");
      if (o == nullptr) throw pyb::error_already_set();
    }
    return pyb::reinterpret_steal<pyb::object>(o);
  }

  // The str last made for a text, found by where the text lies: the renderer hands over its
  // keys from the same literals and a frame's module path, symbol and file from the same
  // strings again and again (a recursion's 900 frames name one function in one file). One
  // slot per (address, size) hash; a slot is reused only when its bytes are the text's, so
  // a buffer that now holds other bytes at the same address makes a new str. No division
  // and no allocation on a hit, and one shared str instead of one per frame.
  class RecentTexts {
   public:
    pyb::object get(std::string_view s) {
      const auto at = reinterpret_cast<std::uintptr_t>(s.data());
      Slot& slot = slots_[((at >> 3) ^ (at >> 11) ^ s.size()) % kSlots];
      if (slot.str && slot.bytes == s) return slot.str;
      slot.str = text(s);
      slot.bytes.assign(s);
      return slot.str;
    }

   private:
    static constexpr std::size_t kSlots = 256;
    struct Slot {
      std::string bytes;
      pyb::object str;
    };
    std::array<Slot, kSlots> slots_;
  };

  void add(pyb::object value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return;
    }
    pyb::handle top = open_.back();
    if (PyList_Check(top.ptr())) {
      if (PyList_Append(top.ptr(), value.ptr()) != 0) throw pyb::error_already_set();
    } else if (PyDict_SetItem(top.ptr(), key_.ptr(), value.ptr()) != 0) {
      throw pyb::error_already_set();
    }
  }
  void open(pyb::object container) {
    add(container);
    open_.push_back(std::move(container));
  }
  void close() {
    if (!open_.empty()) open_.pop_back();
  }

  std::vector<pyb::object> open_;
  pyb::object key_;
  pyb::object root_;
  RecentTexts keys_;
  RecentTexts values_;
};

}  // namespace

pybind11::object document_dict(const report::BacktraceReport& report) {
  DictBuilder builder;
  report::render_document(report, builder);
  return builder.result();
}

}  // namespace ehbt::py
