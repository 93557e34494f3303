// SPDX-License-Identifier: Apache-2.0
#include "cli_heap.hpp"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ehbt::cli {
namespace {

constexpr uintptr_t kHugePage = 2u << 20;
// The heap grows in steps of this much: one step holds a whole huge page, whatever the
// alignment of where the heap starts.
constexpr std::size_t kTopPad = 2 * kHugePage;
// Buffers below this come from the heap (glibc's default, 128 KiB, maps each larger one
// apart: fresh pages, faulted in one by one, unmapped at free).
constexpr int kMmapThreshold = 64 << 20;

// The allocations that hold the heap's low addresses: reachable, so no leak checker
// reports them.
void* g_held[2];

bool disabled() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;  // the sanitizers' allocators do not use the brk heap
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
  return true;
#endif
#endif
  const char* v = std::getenv("EHBT_NO_HUGE_HEAP");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

void prepare_heap() {
  if (disabled()) return;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TOP_PAD, static_cast<int>(kTopPad));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(2 * kTopPad));
  // Static constructors have made the heap already. From where its free top starts, a filler
  // reaching up to the next huge-page boundary grows it by kTopPad past the filler; the
  // filler is never written (its pages stay unbacked) and never freed, so the allocations
  // that follow start at the boundary, inside the huge page.
  void* first = std::malloc(1);  // the free top's start; kept, as the filler is
  if (first == nullptr) return;
  g_held[0] = first;
  const auto at = reinterpret_cast<uintptr_t>(first);
  const uintptr_t boundary = (at + kHugePage - 1) & ~(kHugePage - 1);
  constexpr uintptr_t kChunkOverhead = 64;
  if (boundary - at > kChunkOverhead) {
    g_held[1] = std::malloc(boundary - at - kChunkOverhead);
    if (g_held[1] == nullptr) return;
  }
  const uintptr_t top = reinterpret_cast<uintptr_t>(sbrk(0));
  if (top < boundary + kHugePage) return;  // not a brk heap: leave it
  void* huge = reinterpret_cast<void*>(boundary);
  if (madvise(huge, (top - boundary) & ~(kHugePage - 1), MADV_HUGEPAGE) != 0) return;
  // Backed now, by a write fault: a first touch that reads (a copy out of memory the program
  // has not written yet) would map the zero page, and the write after it 4 KiB pages.
  madvise(huge, kHugePage, MADV_POPULATE_WRITE);
}

}  // namespace ehbt::cli
