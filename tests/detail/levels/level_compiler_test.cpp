// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/levels/level_compiler.hpp: what a DegradationConfig compiles to
// (signal indices, recover thresholds, defaults applied, cumulative disable
// lists), the "is feature X off at level k" rule as a table, the sample check
// and the carry-over of values across a reload.

#include "degrade/detail/levels/level_compiler.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace levels {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// Level 1 on gpu 70 (recover 35 by the ratio), level 2 on gpu 80 and queue
// 200 with an explicit recover for queue, level 3 on gpu 90 switching off
// everything that is not critical; level 2 has its own hold and enter_after.
DegradationConfig Config() {
  DegradationConfig c;
  c.name = "compile";
  c.recover_ratio = 0.5;
  c.hold = absl::Seconds(60);
  c.enter_after = absl::Seconds(2);
  LevelSpec l1;
  l1.enter = {{"gpu", 70.0}};
  l1.disable = {"cache_refresh"};
  LevelSpec l2;
  l2.enter = {{"gpu", 80.0}, {"queue", 200.0}};
  l2.recover = {{"queue", 150.0}};
  l2.disable = {"debug_log", "auth"};
  l2.hold = absl::Seconds(10);
  l2.enter_after = absl::ZeroDuration();
  LevelSpec l3;
  l3.enter = {{"gpu", 90.0}};
  l3.disable = {std::string(kAllNonCritical)};
  c.levels = {l1, l2, l3};
  c.critical = {"auth", "ranking"};
  return c;
}

TEST(LevelCompilerTest, SignalsGetDenseIndicesInOrderOfFirstUse) {
  const CompiledConfig c = Compile(Config());
  EXPECT_THAT(c.signal_names, ElementsAre("gpu", "queue"));
  EXPECT_THAT(c.signal_index, ElementsAre(Pair("gpu", 0u), Pair("queue", 1u)));
  ASSERT_EQ(c.levels.size(), 3u);
  for (const CompiledLevel& l : c.levels) {
    ASSERT_EQ(l.enter.size(), l.recover.size());
    for (std::size_t i = 0; i < l.enter.size(); ++i) {
      EXPECT_EQ(l.enter[i].signal, l.recover[i].signal);
    }
  }
}

TEST(LevelCompilerTest, RecoverThresholdsAreExplicitOrByTheRatio) {
  const CompiledConfig c = Compile(Config());
  // {signal, enter, recover} per level, in the config's (sorted) order.
  struct Expected {
    std::size_t level;
    std::size_t signal;
    double enter;
    double recover;
  };
  const std::vector<Expected> rows = {
      {0, 0, 70.0, 35.0},    // 70 * 0.5
      {1, 0, 80.0, 40.0},    // 80 * 0.5
      {1, 1, 200.0, 150.0},  // explicit
      {2, 0, 90.0, 45.0},
  };
  for (const Expected& e : rows) {
    bool found = false;
    const CompiledLevel& l = c.levels[e.level];
    for (std::size_t i = 0; i < l.enter.size(); ++i) {
      if (l.enter[i].signal != e.signal) continue;
      found = true;
      EXPECT_EQ(l.enter[i].value, e.enter) << "level " << e.level + 1;
      EXPECT_EQ(l.recover[i].value, e.recover) << "level " << e.level + 1;
    }
    EXPECT_TRUE(found) << "level " << e.level + 1 << " signal " << e.signal;
  }
}

TEST(LevelCompilerTest, HoldAndEnterAfterDefaultToTheConfigsValues) {
  const CompiledConfig c = Compile(Config());
  EXPECT_EQ(c.levels[0].hold, absl::Seconds(60));
  EXPECT_EQ(c.levels[0].enter_after, absl::Seconds(2));
  EXPECT_EQ(c.levels[1].hold, absl::Seconds(10));
  EXPECT_EQ(c.levels[1].enter_after, absl::ZeroDuration());
  EXPECT_EQ(c.levels[2].hold, absl::Seconds(60));
  EXPECT_EQ(c.levels[2].enter_after, absl::Seconds(2));
}

TEST(LevelCompilerTest, DisableListsAndAllNonCriticalAreCumulative) {
  const CompiledConfig c = Compile(Config());
  using Set = std::set<std::string>;
  EXPECT_EQ(c.levels[0].disabled, Set({"cache_refresh"}));
  EXPECT_EQ(c.levels[1].disabled, Set({"cache_refresh", "debug_log", "auth"}));
  EXPECT_EQ(c.levels[2].disabled, Set({"cache_refresh", "debug_log", "auth"}));
  EXPECT_FALSE(c.levels[0].all_non_critical);
  EXPECT_FALSE(c.levels[1].all_non_critical);
  EXPECT_TRUE(c.levels[2].all_non_critical);
  EXPECT_EQ(c.critical, Set({"auth", "ranking"}));
}

TEST(LevelCompilerTest, DisabledAtFollowsTheTable) {
  const CompiledConfig c = Compile(Config());
  struct Row {
    const char* feature;
    bool off[4];  // at levels 0, 1, 2, 3
  };
  const std::vector<Row> rows = {
      {"cache_refresh", {false, true, true, true}},
      {"debug_log", {false, false, true, true}},
      // Critical, but listed explicitly at level 2: the entry wins.
      {"auth", {false, false, true, true}},
      // Critical and never listed: kAllNonCritical leaves it on.
      {"ranking", {false, false, false, false}},
      // Never mentioned: only kAllNonCritical switches it off.
      {"anything", {false, false, false, true}},
  };
  for (const Row& r : rows) {
    for (int level = 0; level <= 3; ++level) {
      EXPECT_EQ(DisabledAt(c, r.feature, level), r.off[level])
          << r.feature << " at level " << level;
    }
  }
  EXPECT_FALSE(DisabledAt(CompiledConfig(), "anything", 0));  // no config
}

TEST(LevelCompilerTest, CheckSampleNamesTheSignalAndTheRule) {
  const CompiledConfig c = Compile(Config());
  EXPECT_TRUE(CheckSample(c, "m", "gpu", 0.5).ok());
  const absl::Status unknown =
      CheckSample(c, "degradation manager 'm'", "disk", 1.0);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(),
              HasSubstr("degradation manager 'm': unknown signal 'disk'"));
  EXPECT_THAT(unknown.message(), HasSubstr("known: gpu, queue"));
  const absl::Status nan = CheckSample(c, "m", "queue", std::nan(""));
  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nan.message(), HasSubstr("signal 'queue'"));
  EXPECT_THAT(nan.message(), HasSubstr("values must be finite"));
}

TEST(LevelCompilerTest, RecordSamplesAllOrNothingOrEachValidOne) {
  const CompiledConfig c = Compile(Config());
  ASSERT_THAT(c.signal_names, ElementsAre("gpu", "queue"));
  const std::vector<std::pair<std::string, double>> mixed = {
      {"gpu", 75.0}, {"disk", 1.0}, {"queue", std::nan("")}, {"queue", 9.0}};
  std::vector<std::optional<double>> values(2);
  const absl::Status all = RecordSamples(c, "m", mixed, true, values);
  EXPECT_THAT(all.message(), HasSubstr("unknown signal 'disk'"));
  EXPECT_THAT(values, ElementsAre(std::nullopt, std::nullopt));
  const absl::Status each = RecordSamples(c, "m", mixed, false, values);
  EXPECT_THAT(each.message(), HasSubstr("unknown signal 'disk'"));  // first
  EXPECT_THAT(values, ElementsAre(75.0, 9.0));
  EXPECT_TRUE(RecordSamples(c, "m", {{"gpu", 1.0}}, true, values).ok());
  EXPECT_THAT(values, ElementsAre(1.0, 9.0));
}

TEST(LevelCompilerTest, CarryOverKeepsValuesBySignalName) {
  const CompiledConfig before = Compile(Config());
  DegradationConfig next = Config();
  // Drop gpu from every level: queue remains, disk is new.
  LevelSpec only;
  only.enter = {{"disk", 10.0}, {"queue", 300.0}};
  next.levels = {only};
  const CompiledConfig after = Compile(next);
  ASSERT_THAT(after.signal_names, ElementsAre("disk", "queue"));
  const std::vector<std::optional<double>> values = {75.0, 120.0};
  const std::vector<std::optional<double>> carried =
      CarryOver(before, values, after);
  EXPECT_THAT(carried, ElementsAre(std::nullopt, 120.0));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace levels
}  // namespace detail
}  // namespace degrade
