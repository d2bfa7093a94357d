// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// retry_stats.hpp: every stop reason has its own label, and the stats
// structs start empty.

#include "degrade/retry_stats.hpp"

#include <cstddef>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(RetryStatsTest, EveryStopHasADistinctName) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kNumRetryStops; ++i) {
    const std::string name(RetryStopName(static_cast<RetryStop>(i)));
    EXPECT_NE(name, "unknown") << i;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kNumRetryStops);
  EXPECT_EQ(RetryStopName(static_cast<RetryStop>(200)), "unknown");
}

TEST(RetryStatsTest, StatsStartEmpty) {
  EXPECT_EQ(RetrierStats{}.calls, 0u);
  EXPECT_EQ(RetryBudgetStats{}.balance, 0.0);
  EXPECT_EQ(ThrottleStats{}.rejection_probability, 0.0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
