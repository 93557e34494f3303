// SPDX-License-Identifier: Apache-2.0
// PyMemory: the bridge from engine reads to a Python callable, fault-tolerant by design.
#include "py_memory.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace ehbt::py {

namespace pyb = pybind11;

PyMemory::PyMemory(pyb::object fn, bool cache_pages)
    : fn_(std::move(fn)), cache_pages_(cache_pages) {}

std::size_t PyMemory::call(uint64_t addr, std::span<std::byte> out) {
  if (interrupt_ || out.empty()) return 0;
  ++calls_;
  try {
    pyb::object result = fn_(addr, out.size());
    if (result.is_none()) return 0;
    // Any object with the buffer protocol (bytes, bytearray, memoryview) is accepted.
    Py_buffer view;
    if (PyObject_GetBuffer(result.ptr(), &view, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      return 0;
    }
    std::size_t n = std::min<std::size_t>(out.size(), static_cast<std::size_t>(view.len));
    std::memcpy(out.data(), view.buf, n);
    PyBuffer_Release(&view);
    return n;
  } catch (pyb::error_already_set& e) {
    // An interrupt is the user's request to stop, not a fault: remember it and fail fast.
    if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
      interrupt_.emplace(std::move(e));
    }
    return 0;
  } catch (...) {
    // pybind11 cast errors and the like: still only a fault to the engine.
    return 0;
  }
}

const PyMemory::Page& PyMemory::page(uint64_t page_addr) {
  auto it = pages_.find(page_addr);
  if (it != pages_.end()) return it->second;
  if (pages_.size() >= kMaxPages) pages_.clear();
  Page p;
  p.bytes.resize(kPage);
  p.bytes.resize(call(page_addr, p.bytes));
  return pages_.emplace(page_addr, std::move(p)).first->second;
}

std::size_t PyMemory::read(uint64_t addr, std::span<std::byte> out) {
  if (!cache_pages_) return call(addr, out);
  std::size_t done = 0;
  // A range wrapping past the top of the address space is read directly (and fails there).
  while (done < out.size()) {
    uint64_t at = addr + done;
    if (at < addr) break;
    uint64_t page_addr = at & ~(kPage - 1);
    const Page& p = page(page_addr);
    uint64_t in_page = at - page_addr;
    std::size_t want = std::min<std::size_t>(out.size() - done, kPage - in_page);
    if (in_page + want > p.bytes.size()) {
      // The page came back short: ask for exactly the rest, as an uncached read would.
      return done + call(at, out.subspan(done));
    }
    std::memcpy(out.data() + done, p.bytes.data() + in_page, want);
    done += want;
  }
  if (done < out.size()) done += call(addr + done, out.subspan(done));
  return done;
}

void PyMemory::rethrow_interrupt() {
  if (!interrupt_) return;
  pyb::error_already_set e = std::move(*interrupt_);
  interrupt_.reset();
  throw e;
}

std::size_t ModuleFileMemory::read(uint64_t addr, std::span<std::byte> out) {
  const Module* m = modules_.find(addr);
  if (m == nullptr || !m->image || out.empty()) return 0;
  // Only up to the module's end: the next bytes may belong to another module.
  std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(out.size(), m->end - addr));
  return m->image->read(m->to_link(addr), out.first(n));
}

std::vector<MemoryRegion> regions_from_py(const pyb::handle& obj) {
  std::vector<MemoryRegion> out;
  if (obj.is_none()) return out;
  for (pyb::handle item : pyb::iter(obj)) {
    auto pair = item.cast<std::pair<uint64_t, uint64_t>>();
    if (pair.first < pair.second) out.push_back({pair.first, pair.second});
  }
  std::sort(out.begin(), out.end(),
            [](const MemoryRegion& a, const MemoryRegion& b) { return a.start < b.start; });
  std::vector<MemoryRegion> kept;
  for (const MemoryRegion& r : out)
    if (kept.empty() || r.start >= kept.back().end) kept.push_back(r);
  return kept;
}

MemoryArg::MemoryArg(const pyb::handle& obj, bool cache_pages, const pyb::handle& regions) {
  if (pyb::isinstance<PyTarget>(obj)) {
    target_ = obj.cast<std::shared_ptr<PyTarget>>();
    return;
  }
  if (!PyCallable_Check(obj.ptr())) {
    throw pyb::type_error("memory must be a callable read(addr, size) -> bytes, or a Target");
  }
  py_.emplace(pyb::reinterpret_borrow<pyb::object>(obj), cache_pages);
  py_->set_regions(regions_from_py(regions));
}

Memory& MemoryArg::get() {
  if (py_) return *py_;
  return target_->target->memory();
}

std::unique_lock<std::mutex> MemoryArg::lock() {
  if (target_) return std::unique_lock<std::mutex>(target_->mu);
  return {};
}

}  // namespace ehbt::py
