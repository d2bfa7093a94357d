// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// overload_stats.hpp: drop reasons have the names the metrics and logs use,
// and the sojourn buckets are increasing (a histogram renderer relies on it).

#include "degrade/overload_stats.hpp"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(OverloadStatsTest, DropReasonsHaveDistinctWireNames) {
  EXPECT_EQ(DropReasonName(DropReason::kCapacity), "capacity");
  EXPECT_EQ(DropReasonName(DropReason::kCodel), "codel");
  EXPECT_EQ(DropReasonName(DropReason::kDeadline), "deadline");
  EXPECT_EQ(DropReasonName(DropReason::kShed), "shed");
  EXPECT_EQ(DropReasonName(static_cast<DropReason>(kNumDropReasons)),
            "unknown");
}

TEST(OverloadStatsTest, SojournBucketsIncreaseAndStatsStartEmpty) {
  for (std::size_t i = 1; i < kSojournBucketsMs.size(); ++i) {
    EXPECT_LT(kSojournBucketsMs[i - 1], kSojournBucketsMs[i]);
  }
  const QueueStats q;
  EXPECT_EQ(q.sojourn_buckets.size(), kSojournBucketsMs.size() + 1);
  for (const uint64_t n : q.sojourn_buckets) EXPECT_EQ(n, 0u);
  EXPECT_EQ(AdmissionStats().threshold, kAdmitAllRank);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
