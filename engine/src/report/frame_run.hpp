// SPDX-License-Identifier: Apache-2.0
// Runs of consecutive frames of one thread that ask the same question (a recursion repeats
// one pc in hundreds of frames): the report's naming and its source lines answer a run's
// first frame and give the others its answer. One record per run, not per frame: a deep
// recursion's 900 frames cost no list of their own.
#pragma once

#include <cstddef>
#include <vector>

namespace ehbt::report {

// Frames [first, last] of thread `thread` (indices into BacktraceReport::threads and its
// frames); `first` is the one asked.
struct FrameRun {
  std::size_t thread, first, last;
};

// Adds frame (thread, frame) to the run that ends at (last_thread, last_frame), the frame
// before it that asks the same: true when it is that run's next frame (the same thread, the
// next frame); false, and nothing changed, when it is not (it is then asked itself).
inline bool extend_run(std::vector<FrameRun>& runs, std::size_t last_thread, std::size_t last_frame,
                       std::size_t thread, std::size_t frame) {
  if (thread != last_thread || frame != last_frame + 1) return false;
  if (!runs.empty() && runs.back().thread == thread && runs.back().last == last_frame) {
    runs.back().last = frame;
  } else {
    runs.push_back(FrameRun{thread, last_frame, frame});
  }
  return true;
}

// Keeps in `pending` (entries with `thread` and `frame`, in frame order) the first entry of
// each run of consecutive frames that asks the same as the one before it (`same(a, b)`), in
// order, and returns the runs: their other frames take the first one's answer.
template <typename Pending, typename Same>
std::vector<FrameRun> collapse_runs(std::vector<Pending>& pending, Same&& same) {
  std::vector<FrameRun> runs;
  std::size_t kept = 0;
  for (std::size_t k = 0; k < pending.size(); ++k) {
    const Pending p = pending[k];  // a copy: its slot may be written below
    // pending[k - 1] is still the entry it was: only slots below `kept` <= k were written,
    // and slot k - 1 only with its own entry.
    if (k > 0 && same(p, pending[k - 1]) &&
        extend_run(runs, pending[k - 1].thread, pending[k - 1].frame, p.thread, p.frame))
      continue;
    pending[kept++] = p;
  }
  pending.resize(kept);
  return runs;
}

}  // namespace ehbt::report
