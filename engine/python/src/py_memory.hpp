// SPDX-License-Identifier: Apache-2.0
// Target memory supplied from Python: a callable `read(addr, size) -> bytes`, or a Target.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "bindings.hpp"
#include "ehbt/memory.hpp"

namespace ehbt::py {

// Adapts a Python callable to the engine's Memory. The engine never sees a Python exception:
// a raised exception, None, or a result shorter than asked is a fault (a short read). An
// interrupt (KeyboardInterrupt, SystemExit) ends every further read and is re-raised by
// rethrow_interrupt() once the engine has returned.
//
// With `cache_pages`, reads are served from whole 4 KiB pages fetched once per walk: a stack
// walk reads many small words from a few pages, and each Python call costs microseconds.
// A page the callable cannot deliver whole falls back to reading just the bytes asked for.
// Must be used with the GIL held.
class PyMemory final : public Memory {
 public:
  explicit PyMemory(pybind11::object fn, bool cache_pages = true);
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;
  // The target's mappings as the debugger knows them (a callable says nothing of them): what
  // bounds a stack scan and a fallback's frame to the stack mapping (Memory::region_of).
  void set_regions(std::vector<MemoryRegion> sorted) { regions_ = std::move(sorted); }
  std::optional<MemoryRegion> region_of(uint64_t addr) override {
    return find_region(regions_, addr);
  }
  void rethrow_interrupt();
  uint64_t calls() const { return calls_; }

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr std::size_t kMaxPages = 4096;  // 16 MiB; the cache restarts beyond that

  struct Page {
    std::vector<std::byte> bytes;  // the prefix the callable delivered (may be short)
  };

  std::size_t call(uint64_t addr, std::span<std::byte> out);
  const Page& page(uint64_t page_addr);

  pybind11::object fn_;
  bool cache_pages_;
  std::unordered_map<uint64_t, Page> pages_;
  std::vector<MemoryRegion> regions_;  // sorted, non-overlapping; empty: no bound known
  std::optional<pybind11::error_already_set> interrupt_;
  uint64_t calls_ = 0;
};

// The file contents of the modules' images at their target addresses: code and read-only
// data that a core leaves out, for a memory that cannot supply them (a debugger that did not
// relocate a file). Used as the lower layer under the memory the caller gave.
class ModuleFileMemory final : public Memory {
 public:
  explicit ModuleFileMemory(const ModuleSet& modules) : modules_(modules) {}
  std::size_t read(uint64_t addr, std::span<std::byte> out) override;

 private:
  const ModuleSet& modules_;
};

// The `regions` argument of the bindings: None, or an iterable of (start, end) pairs, one per
// mapping. Sorted; an empty or reversed pair, or one overlapping an earlier one, is dropped (a
// region answers for one mapping only).
std::vector<MemoryRegion> regions_from_py(const pybind11::handle& obj);

// A memory argument as the bindings accept it: a callable (read through PyMemory, bounded by
// `regions` when given), or a Target (its own memory and mappings, read without Python and
// under the target's lock; `regions` is not used).
class MemoryArg {
 public:
  MemoryArg(const pybind11::handle& obj, bool cache_pages,
            const pybind11::handle& regions = pybind11::none());
  Memory& get();
  // True when reads call back into Python, so the GIL must stay held.
  bool needs_gil() const { return py_.has_value(); }
  void rethrow_interrupt() {
    if (py_) py_->rethrow_interrupt();
  }
  // Locks the target (if any) for the duration of the engine call.
  std::unique_lock<std::mutex> lock();

 private:
  std::optional<PyMemory> py_;
  std::shared_ptr<PyTarget> target_;
};

}  // namespace ehbt::py
