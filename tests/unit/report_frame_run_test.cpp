// SPDX-License-Identifier: Apache-2.0
// Runs of consecutive frames that ask the same question (report/frame_run.hpp): a run grows
// only by the next frame of the same thread, and each run is one record.
#include <gtest/gtest.h>

#include <vector>

#include "report/frame_run.hpp"

namespace ehbt::report {
namespace {

bool same(const FrameRun& a, const FrameRun& b) {
  return a.thread == b.thread && a.first == b.first && a.last == b.last;
}

TEST(ReportFrameRun, GrowsByTheNextFrameOfTheSameThreadOnly) {
  std::vector<FrameRun> runs;
  // Frames 3, 4, 5 of thread 0 ask the same: one run 3..5.
  EXPECT_TRUE(extend_run(runs, 0, 3, 0, 4));
  EXPECT_TRUE(extend_run(runs, 0, 4, 0, 5));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(same(runs[0], FrameRun{0, 3, 5}));
  // Not the next frame (a frame without a module between them), another thread: no run.
  EXPECT_FALSE(extend_run(runs, 0, 5, 0, 7));
  EXPECT_FALSE(extend_run(runs, 0, 5, 1, 6));
  ASSERT_EQ(runs.size(), 1u);
  // Frame 7 and 8 then start a run of their own; thread 1's frames 0 and 1 another.
  EXPECT_TRUE(extend_run(runs, 0, 7, 0, 8));
  EXPECT_TRUE(extend_run(runs, 1, 0, 1, 1));
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_TRUE(same(runs[1], FrameRun{0, 7, 8}));
  EXPECT_TRUE(same(runs[2], FrameRun{1, 0, 1}));
  // A run of 900 frames is one record.
  std::vector<FrameRun> deep;
  for (std::size_t f = 1; f < 900; ++f) EXPECT_TRUE(extend_run(deep, 2, f - 1, 2, f));
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_TRUE(same(deep[0], FrameRun{2, 0, 899}));
}

// The first entry of each run stays, in order; the runs say which frames take its answer.
TEST(ReportFrameRun, CollapseKeepsTheFirstOfEachRun) {
  struct Entry {
    std::size_t thread, frame;
    int question;
  };
  std::vector<Entry> pending{{0, 0, 7}, {0, 1, 5}, {0, 2, 5}, {0, 3, 5}, {0, 5, 5},
                             {1, 0, 5}, {1, 1, 5}, {1, 2, 9}, {1, 3, 5}};
  const std::vector<FrameRun> runs = collapse_runs(
      pending, [](const Entry& a, const Entry& b) { return a.question == b.question; });
  // Frame 5 of thread 0 follows frame 3 (frame 4 asked nothing) and thread 1 is another
  // thread: both are asked themselves.
  ASSERT_EQ(pending.size(), 6u);
  const std::size_t kept[][2] = {{0, 0}, {0, 1}, {0, 5}, {1, 0}, {1, 2}, {1, 3}};
  for (std::size_t i = 0; i < pending.size(); ++i) {
    EXPECT_EQ(pending[i].thread, kept[i][0]) << i;
    EXPECT_EQ(pending[i].frame, kept[i][1]) << i;
  }
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(same(runs[0], FrameRun{0, 1, 3}));
  EXPECT_TRUE(same(runs[1], FrameRun{1, 0, 1}));
}

}  // namespace
}  // namespace ehbt::report
