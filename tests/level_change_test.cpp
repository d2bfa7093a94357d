// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of level_change.hpp: the wire names of the reasons, the comparison
// with the names that code written against the string form still uses, and
// printing.

#include "degrade/level_change.hpp"

#include <sstream>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(LevelChangeReasonTest, NamesAreTheLogLinesSpellings) {
  EXPECT_EQ(LevelChangeReasonName(LevelChangeReason::kSignal), "signal");
  EXPECT_EQ(LevelChangeReasonName(LevelChangeReason::kRecovered), "recovered");
  EXPECT_EQ(LevelChangeReasonName(LevelChangeReason::kOverride), "override");
  EXPECT_EQ(LevelChangeReasonName(LevelChangeReason::kReload), "reload");
  EXPECT_EQ(LevelChangeReasonName(static_cast<LevelChangeReason>(9)),
            "unknown");
}

TEST(LevelChangeReasonTest, ComparesWithTheOldStringsAndPrints) {
  LevelChange c;
  c.reason = LevelChangeReason::kRecovered;
  EXPECT_TRUE(c.reason == "recovered");
  EXPECT_FALSE(c.reason == "signal");
  EXPECT_TRUE(c.reason != "reload");
  std::ostringstream os;
  os << c.reason;
  EXPECT_EQ(os.str(), "recovered");
}

TEST(LevelChangeTest, DefaultsSayNothingHappened) {
  const LevelChange c;
  EXPECT_EQ(c.from, 0);
  EXPECT_EQ(c.to, 0);
  EXPECT_TRUE(c.signal.empty());
  EXPECT_EQ(c.hold, absl::ZeroDuration());
  EXPECT_EQ(c.until, absl::InfiniteFuture());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
