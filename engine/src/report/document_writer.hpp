// SPDX-License-Identifier: Apache-2.0
// What the document's renderer writes with: DocumentEvents (ehbt/report.hpp) behind the
// chained calls of JsonWriter, so the one renderer reads as it did when it wrote JSON text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ehbt/report.hpp"

namespace ehbt::report {

class DocumentWriter {
 public:
  explicit DocumentWriter(DocumentEvents& events) : events_(events) {}

  DocumentWriter& begin_object(bool one_line = false) {
    events_.begin_object(one_line);
    return *this;
  }
  DocumentWriter& end_object() {
    events_.end_object();
    return *this;
  }
  DocumentWriter& begin_array(bool one_line = false) {
    events_.begin_array(one_line);
    return *this;
  }
  DocumentWriter& end_array() {
    events_.end_array();
    return *this;
  }
  DocumentWriter& key(std::string_view k) {
    events_.key(k);
    return *this;
  }
  DocumentWriter& value(std::string_view s) {
    events_.string(s);
    return *this;
  }
  DocumentWriter& value(const char* s) { return value(std::string_view(s)); }
  DocumentWriter& value(const std::string& s) { return value(std::string_view(s)); }
  DocumentWriter& value(int64_t v) {
    events_.integer(v);
    return *this;
  }
  DocumentWriter& value(uint64_t v) {
    events_.unsigned_integer(v);
    return *this;
  }
  DocumentWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  DocumentWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  DocumentWriter& value(bool v) {
    events_.boolean(v);
    return *this;
  }
  DocumentWriter& null() {
    events_.null();
    return *this;
  }
  // An address: "0x" and lowercase hex digits (DocumentEvents::address).
  DocumentWriter& address(uint64_t v) {
    events_.address(v);
    return *this;
  }
  DocumentWriter& address(std::optional<uint64_t> v) { return v ? address(*v) : null(); }
  DocumentWriter& value(const std::optional<std::string>& s) { return s ? value(*s) : null(); }
  DocumentWriter& value(std::optional<bool> v) { return v ? value(*v) : null(); }
  DocumentWriter& value(std::optional<int> v) { return v ? value(*v) : null(); }

  template <class T>
  DocumentWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  DocumentWriter& address_field(std::string_view k, std::optional<uint64_t> v) {
    key(k);
    return address(v);
  }

 private:
  DocumentEvents& events_;
};

}  // namespace ehbt::report
