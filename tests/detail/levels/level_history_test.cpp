// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/levels/level_history.hpp: time at each level, transition counts and
// the at-or-above-since times, after a scripted run of level changes.

#include "degrade/detail/levels/level_history.hpp"

#include <utility>

#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace levels {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::Pair;

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

absl::Time At(int seconds) { return kStart + absl::Seconds(seconds); }

TEST(LevelHistoryTest, StartsAtLevelZeroWithNothingRecorded) {
  const LevelHistory h(kStart);
  EXPECT_EQ(h.TimeAt(0, 0, At(10)), absl::Seconds(10));
  EXPECT_EQ(h.TimeAt(1, 0, At(10)), absl::ZeroDuration());
  for (int k = 1; k <= kMaxLevels; ++k) {
    EXPECT_EQ(h.AtOrAboveSince(k), absl::InfiniteFuture()) << k;
  }
  EXPECT_TRUE(h.transitions().empty());
}

TEST(LevelHistoryTest, RecordsTimeTransitionsAndEpisodeStarts) {
  LevelHistory h(kStart);
  h.Record(0, 3, At(10));  // straight up
  h.Record(3, 2, At(15));
  h.Record(2, 3, At(17));
  h.Record(3, 0, At(20));  // a reload or an override can skip levels
  h.Record(0, 1, At(30));

  // The current stay counts only for the current level.
  EXPECT_EQ(h.TimeAt(0, /*current=*/1, At(40)), absl::Seconds(20));
  EXPECT_EQ(h.TimeAt(1, 1, At(40)), absl::Seconds(10));
  EXPECT_EQ(h.TimeAt(2, 1, At(40)), absl::Seconds(2));
  EXPECT_EQ(h.TimeAt(3, 1, At(40)), absl::Seconds(8));
  EXPECT_EQ(h.TimeAt(-1, 1, At(40)), absl::ZeroDuration());
  EXPECT_EQ(h.TimeAt(kMaxLevels + 1, 1, At(40)), absl::ZeroDuration());

  EXPECT_THAT(h.transitions(), ElementsAre(Pair(std::make_pair(0, 1), 1u),
                                           Pair(std::make_pair(0, 3), 1u),
                                           Pair(std::make_pair(2, 3), 1u),
                                           Pair(std::make_pair(3, 0), 1u),
                                           Pair(std::make_pair(3, 2), 1u)));
  EXPECT_EQ(h.AtOrAboveSince(1), At(30));
  EXPECT_EQ(h.AtOrAboveSince(2), absl::InfiniteFuture());
  EXPECT_EQ(h.AtOrAboveSince(3), absl::InfiniteFuture());
}

TEST(LevelHistoryTest, AStepDownKeepsTheLowerEpisodesStart) {
  LevelHistory h(kStart);
  h.Record(0, 2, At(10));
  h.Record(2, 1, At(20));
  EXPECT_EQ(h.AtOrAboveSince(1), At(10));  // >= 1 since 10, not since 20
  EXPECT_EQ(h.AtOrAboveSince(2), absl::InfiniteFuture());
  h.Record(1, 2, At(25));
  EXPECT_EQ(h.AtOrAboveSince(1), At(10));
  EXPECT_EQ(h.AtOrAboveSince(2), At(25));
}

// Found by the settings fuzzer (corpus/settings/crash-manager-negative-time-
// at-level): a clock stepped back 1 ns gave level 0 a time of -1ns, through
// both the current stay and a recorded change.
TEST(LevelHistoryTest, AClockSteppedBackNeverGivesNegativeTime) {
  const absl::Time start = absl::FromUnixSeconds(1000);
  LevelHistory h(start);
  EXPECT_EQ(h.TimeAt(0, 0, start - absl::Nanoseconds(1)), absl::ZeroDuration());
  h.Record(0, 1, start - absl::Nanoseconds(1));
  EXPECT_EQ(h.TimeAt(0, 1, start), absl::ZeroDuration());
  h.Record(1, 0, start + absl::Seconds(5));
  EXPECT_EQ(h.TimeAt(1, 0, start), absl::Seconds(5) + absl::Nanoseconds(1));
  // From the far future back to the far past: still nothing negative.
  h.Record(0, 2, absl::InfiniteFuture());
  h.Record(2, 0, absl::InfinitePast());
  EXPECT_EQ(h.TimeAt(2, 0, absl::InfinitePast()), absl::ZeroDuration());
  EXPECT_EQ(h.TimeAt(0, 0, absl::InfinitePast()), absl::InfiniteDuration());
  for (int level = 0; level <= kMaxLevels; ++level) {
    EXPECT_GE(h.TimeAt(level, 0, absl::InfinitePast()), absl::ZeroDuration())
        << level;
  }
}

TEST(LevelHistoryTest, ReportFillsTheStatsUpToTheHigherOfLevelAndLevels) {
  LevelHistory h(At(0));
  h.Record(0, 3, At(10));
  ManagerStats st;
  st.level = 3;
  st.num_levels = 2;  // a reload shrank the config; the level not yet
  h.Report(At(15), st);
  EXPECT_EQ(st.transitions.size(), 1u);
  ASSERT_EQ(st.time_at_level.size(), 4u);
  EXPECT_EQ(st.time_at_level[0], absl::Seconds(10));
  EXPECT_EQ(st.time_at_level[3], absl::Seconds(5));
  ASSERT_EQ(st.at_or_above_since.size(), 3u);
  EXPECT_EQ(st.at_or_above_since[2], At(10));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace levels
}  // namespace detail
}  // namespace degrade
