// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of redis/scored_member.hpp: equality looks at member and score, and
// members are binary-safe.

#include "degrade/redis/scored_member.hpp"

#include <string>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(ScoredMemberTest, EqualityComparesMemberAndScore) {
  const redis::ScoredMember a{"item-1", 2.5};
  EXPECT_EQ(a, (redis::ScoredMember{"item-1", 2.5}));
  EXPECT_NE(a, (redis::ScoredMember{"item-1", 2.0}));
  EXPECT_NE(a, (redis::ScoredMember{"item-2", 2.5}));
  const redis::ScoredMember binary{std::string("a\0b", 3), 1};
  EXPECT_NE(binary, (redis::ScoredMember{"a", 1}));
  EXPECT_EQ(binary.member.size(), 3u);
  EXPECT_EQ(redis::ScoredMember{}.score, 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
