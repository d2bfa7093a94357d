// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// quota_stats.hpp: the mode names the metrics export, and a snapshot's
// starting values (the quota itself: tests/redis/redis_quota_test.cpp).

#include "degrade/quota_stats.hpp"

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(QuotaStatsTest, ModeNamesAreTheMetricLabels) {
  EXPECT_EQ(QuotaModeName(QuotaMode::kLeasing), "leasing");
  EXPECT_EQ(QuotaModeName(QuotaMode::kGrace), "grace");
  EXPECT_EQ(QuotaModeName(QuotaMode::kFairShare), "fair_share");
  EXPECT_EQ(QuotaModeName(static_cast<QuotaMode>(7)), "unknown");
}

TEST(QuotaStatsTest, ASnapshotStartsInFairShareWithNothingCounted) {
  const ClusterQuotaStats s;
  EXPECT_EQ(s.mode, QuotaMode::kFairShare);
  EXPECT_EQ(s.admitted + s.refused + s.leased + s.round_trips + s.errors, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
