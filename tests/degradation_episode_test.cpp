// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of degradation_episode.hpp: the names of the episode kinds (the
// `kind` of escalation lines), the comparison with the old strings, and
// printing.

#include "degrade/degradation_episode.hpp"

#include <sstream>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(EpisodeKindTest, NamesComparisonsAndPrinting) {
  EXPECT_EQ(EpisodeKindName(EpisodeKind::kBreaker), "breaker");
  EXPECT_EQ(EpisodeKindName(EpisodeKind::kLevel), "level");
  EXPECT_EQ(EpisodeKindName(EpisodeKind::kStage), "stage");
  EXPECT_EQ(EpisodeKindName(static_cast<EpisodeKind>(7)), "unknown");
  DegradationEpisode e;
  e.kind = EpisodeKind::kStage;
  EXPECT_TRUE(e.kind == "stage");
  EXPECT_TRUE(e.kind != "breaker");
  std::ostringstream os;
  os << e.kind;
  EXPECT_EQ(os.str(), "stage");
  EXPECT_EQ(DegradationEpisode{}.level, 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
