// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The level decision (detail/levels/hysteresis.hpp) alone, without a manager, a
// lock or a clock: each case is a table of steps, and each step records
// some samples, calls Step at a given time and says which level must follow
// and why ('S' escalation by a signal, 'R' one step down, '-' nothing).
// Exact boundaries are written as `hold - kNs` / `hold`. A second table
// drives noisy signals around one threshold for an hour and counts the
// changes each way.

#include "degrade/detail/levels/hysteresis.hpp"

#include <cmath>
#include <cstddef>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/detail/levels/level_compiler.hpp"
#include "degrade/level_change.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace levels {
namespace DEGRADE_TEST_UNIT {

constexpr absl::Duration kNs = absl::Nanoseconds(1);
constexpr absl::Duration kHold = absl::Seconds(60);

absl::Duration S(int64_t seconds) { return absl::Seconds(seconds); }

// Just below `x`: the largest double smaller than it.
double Below(double x) { return std::nextafter(x, -1.0); }

// The signal indices of the tables.
constexpr std::size_t kGpu = 0;
constexpr std::size_t kQueue = 1;
constexpr std::size_t kNumSignals = 2;

struct On {
  std::size_t signal;
  double enter;
  double recover;
};

CompiledLevel Level(std::vector<On> on, absl::Duration hold = kHold,
                    absl::Duration enter_after = absl::ZeroDuration()) {
  CompiledLevel l;
  for (const On& o : on) {
    l.enter.push_back({o.signal, o.enter});
    l.recover.push_back({o.signal, o.recover});
  }
  l.hold = hold;
  l.enter_after = enter_after;
  return l;
}

// gpu 70 / 80 / 90 (recover 35 / 40 / 45); level 2 also on queue 200
// (recover 100). The thresholds of the manager tests' ThreeLevels().
std::vector<CompiledLevel> ThreeLevels(
    absl::Duration hold = kHold,
    absl::Duration enter_after = absl::ZeroDuration()) {
  return {Level({{kGpu, 70, 35}}, hold, enter_after),
          Level({{kGpu, 80, 40}, {kQueue, 200, 100}}, hold, enter_after),
          Level({{kGpu, 90, 45}}, hold, enter_after)};
}

struct Row {
  absl::Duration at;  // since the start of the case
  // Samples recorded just before this step.
  std::vector<std::pair<std::size_t, double>> set;
  int level;     // the level after the step
  char change;   // '-' nothing, 'S' escalation (kSignal), 'R' kRecovered
  int why = -1;  // for 'S': the signal index it must name (-1: any)
};

struct Case {
  std::string name;
  std::vector<CompiledLevel> levels;
  std::vector<Row> rows;
  absl::Duration cooldown = absl::ZeroDuration();
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

std::vector<Case> StepCases() {
  return {
      {"EscalatesStraightToTheHighestWantedLevel",
       ThreeLevels(),
       {{S(0), {{kGpu, 95}}, 3, 'S', kGpu}, {S(1), {}, 3, '-'}}},
      {"EntersAtExactlyTheThreshold",
       ThreeLevels(),
       {{S(0), {{kGpu, Below(70)}}, 0, '-'},
        {S(1), {{kGpu, 70}}, 1, 'S', kGpu},
        {S(2), {{kGpu, Below(80)}}, 1, '-'},
        {S(3), {{kGpu, 80}}, 2, 'S', kGpu}}},
      {"AnySignalOfALevelTriggersItNamingTheFurthestAbove",
       ThreeLevels(),
       // queue 300 is 1.5x its threshold, gpu 85 only 1.06x.
       {{S(0), {{kGpu, 85}, {kQueue, 300}}, 2, 'S', kQueue}}},
      {"NeverObservedSignalsDoNotTrigger",
       ThreeLevels(),
       {{S(0), {}, 0, '-'}, {S(100), {{kQueue, 50}}, 0, '-'}}},
      {"EnterAfterFiltersASpikeAndRestartsAfterADip",
       ThreeLevels(kHold, S(5)),
       {{S(0), {{kGpu, 95}}, 0, '-'},
        {S(2), {{kGpu, 60}}, 0, '-'},  // the trigger breaks
        {S(3), {{kGpu, 95}}, 0, '-'},  // and starts again
        {S(8) - kNs, {}, 0, '-'},
        {S(8), {}, 3, 'S', kGpu}}},
      {"EnterAfterIsPerLevel",
       {Level({{kGpu, 70, 35}}), Level({{kGpu, 80, 40}}, kHold, S(5)),
        Level({{kGpu, 90, 45}}, kHold, S(10))},
       {{S(0), {{kGpu, 95}}, 1, 'S'},
        {S(5) - kNs, {}, 1, '-'},
        {S(5), {}, 2, 'S'},
        {S(10) - kNs, {}, 2, '-'},
        {S(10), {}, 3, 'S'}}},
      {"RecoversOneLevelPerHoldWithExactBoundaries",
       ThreeLevels(),
       {{S(0), {{kGpu, 95}}, 3, 'S'},
        {S(1), {{kGpu, 0}}, 3, '-'},  // the hold starts
        {S(61) - kNs, {}, 3, '-'},
        {S(61), {}, 2, 'R'},
        // Level 2's signals are already below: its hold started at 61.
        {S(121) - kNs, {}, 2, '-'},
        {S(121), {}, 1, 'R'},
        {S(181) - kNs, {}, 1, '-'},
        {S(181), {}, 0, 'R'},
        {S(1000), {}, 0, '-'}}},
      {"ASampleAtTheRecoverThresholdRestartsTheHold",
       ThreeLevels(),
       {{S(0), {{kGpu, 75}}, 1, 'S'},
        {S(1), {{kGpu, 34}}, 1, '-'},
        {S(30), {{kGpu, 35}}, 1, '-'},  // at the threshold: not below
        {S(31), {{kGpu, 34}}, 1, '-'},  // a new hold from here
        {S(61), {}, 1, '-'},            // the first one would be done
        {S(91) - kNs, {}, 1, '-'},
        {S(91), {}, 0, 'R'}}},
      {"EverySignalOfTheLevelMustBeBelowItsRecoverThreshold",
       ThreeLevels(),
       {{S(0), {{kGpu, 85}, {kQueue, 150}}, 2, 'S', kGpu},
        {S(1), {{kGpu, 0}}, 2, '-'},  // queue 150 is above its 100
        {S(100), {}, 2, '-'},
        {S(101), {{kQueue, 99}}, 2, '-'},
        {S(161) - kNs, {}, 2, '-'},
        {S(161), {}, 1, 'R'}}},
      {"NeverObservedSignalsCountAsBelow",
       ThreeLevels(),
       // queue, a level-2 signal, is never observed.
       {{S(0), {{kGpu, 85}}, 2, 'S'},
        {S(1), {{kGpu, 0}}, 2, '-'},
        {S(61), {}, 1, 'R'}}},
      {"TheNextHoldWaitsForTheNextLevelsSignals",
       {Level({{kQueue, 100, 50}}), Level({{kGpu, 80, 40}})},
       {{S(0), {{kGpu, 85}, {kQueue, 120}}, 2, 'S', kGpu},
        {S(1), {{kGpu, 0}}, 2, '-'},
        {S(61), {}, 1, 'R'},  // queue 120 keeps level 1 loaded
        {S(200), {}, 1, '-'},
        {S(201), {{kQueue, 10}}, 1, '-'},  // level 1's hold starts
        {S(261) - kNs, {}, 1, '-'},
        {S(261), {}, 0, 'R'}}},
      {"EscalationCancelsARunningHold",
       ThreeLevels(),
       {{S(0), {{kGpu, 75}}, 1, 'S'},
        {S(1), {{kGpu, 0}}, 1, '-'},
        {S(30), {{kGpu, 85}}, 2, 'S'},
        {S(31), {{kGpu, 0}}, 2, '-'},
        {S(61), {}, 2, '-'},  // the cancelled hold would end here
        {S(91) - kNs, {}, 2, '-'},
        {S(91), {}, 1, 'R'}}},
      {"EachLevelHasItsOwnHold",
       {Level({{kGpu, 70, 35}}, S(10)), Level({{kGpu, 80, 40}}, S(30))},
       {{S(0), {{kGpu, 85}}, 2, 'S'},
        {S(1), {{kGpu, 0}}, 2, '-'},
        {S(31) - kNs, {}, 2, '-'},
        {S(31), {}, 1, 'R'},
        {S(41) - kNs, {}, 1, '-'},
        {S(41), {}, 0, 'R'}}},
      {"AZeroHoldStillStepsDownOneLevelPerStep",
       ThreeLevels(absl::ZeroDuration()),
       {{S(0), {{kGpu, 95}}, 3, 'S'},
        {S(1), {{kGpu, 0}}, 2, 'R'},
        {S(1), {}, 1, 'R'},
        {S(1), {}, 0, 'R'},
        {S(1), {}, 0, '-'}}},
      {"CooldownDelaysAStepDownButNeverEscalation",
       ThreeLevels(),
       {{S(0), {{kGpu, 75}}, 1, 'S'},
        {S(1), {{kGpu, 0}}, 1, '-'},
        {S(61), {}, 1, '-'},  // the hold is done; the cooldown is not
        {S(100) - kNs, {}, 1, '-'},
        {S(100), {}, 0, 'R'},
        {S(101), {{kGpu, 95}}, 3, 'S'}},  // 1 s after the last change
       S(100)},
      {"CooldownCountsFromTheLastStepDownToo",
       ThreeLevels(),
       {{S(0), {{kGpu, 95}}, 3, 'S'},
        {S(1), {{kGpu, 0}}, 3, '-'},
        {S(100), {}, 2, 'R'},
        {S(160), {}, 2, '-'},  // level 2's hold is done, 60 s of cooldown
        {S(200) - kNs, {}, 2, '-'},
        {S(200), {}, 1, 'R'}},
       S(100)},
      {"NoLevelsNoChange", {}, {{S(0), {}, 0, '-'}, {S(100), {}, 0, '-'}}},
  };
}

class HysteresisStepTest : public ::testing::TestWithParam<Case> {};

TEST_P(HysteresisStepTest, FollowsTheTable) {
  const Case& c = GetParam();
  HysteresisState state;
  std::vector<std::optional<double>> values(kNumSignals);
  absl::Time last_change = absl::InfinitePast();
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const Row& row = c.rows[i];
    SCOPED_TRACE(absl::StrCat("row ", i, " at ", absl::FormatDuration(row.at)));
    for (const auto& [signal, value] : row.set) values[signal] = value;
    const int from = state.level;
    const absl::Time now = kStart + row.at;
    const Decision d = Step(c.levels, values, state, now, c.cooldown);

    EXPECT_EQ(d.from, from);
    EXPECT_EQ(d.to, row.level);
    EXPECT_EQ(state.level, row.level);
    EXPECT_EQ(d.changed(), row.change != '-');
    if (d.changed()) last_change = now;
    EXPECT_EQ(state.last_change, last_change);
    if (row.change == 'S') {
      EXPECT_EQ(d.reason, LevelChangeReason::kSignal);
      EXPECT_GT(d.to, d.from);
      if (row.why >= 0) {
        EXPECT_EQ(d.signal, static_cast<std::size_t>(row.why));
      }
      // The named signal, its value and its enter threshold at the new level.
      ASSERT_TRUE(values[d.signal].has_value());
      EXPECT_EQ(d.value, *values[d.signal]);
      bool found = false;
      for (const Threshold& t :
           c.levels[static_cast<std::size_t>(d.to) - 1].enter) {
        if (t.signal == d.signal) {
          found = true;
          EXPECT_EQ(d.threshold, t.value);
          EXPECT_GE(d.value, t.value);
        }
      }
      EXPECT_TRUE(found) << "signal " << d.signal << " is not of level "
                         << d.to;
    } else if (row.change == 'R') {
      EXPECT_EQ(d.reason, LevelChangeReason::kRecovered);
      EXPECT_EQ(d.to, d.from - 1);
      EXPECT_EQ(d.hold, c.levels[static_cast<std::size_t>(d.from) - 1].hold);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, HysteresisStepTest,
                         ::testing::ValuesIn(StepCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// ---- Pieces the manager calls on their own ---------------------------------

// While a forced level holds the level, the manager calls only
// TrackTriggers: enter_after keeps measuring, so the first Step after the
// override applies a trigger that has persisted long enough.
TEST(HysteresisTest, TrackTriggersAloneKeepsEnterAfterRunning) {
  const std::vector<CompiledLevel> levels = ThreeLevels(kHold, S(5));
  HysteresisState state;
  std::vector<std::optional<double>> values(kNumSignals);
  values[kGpu] = 95;
  Wanted w = TrackTriggers(levels, values, state, kStart);
  EXPECT_EQ(w.level, 0);
  EXPECT_EQ(w.why, nullptr);
  EXPECT_EQ(state.level, 0);  // never moves the level
  w = TrackTriggers(levels, values, state, kStart + S(5));
  EXPECT_EQ(w.level, 3);
  ASSERT_NE(w.why, nullptr);
  EXPECT_EQ(w.why->signal, kGpu);
  EXPECT_EQ(state.level, 0);
  const Decision d = Step(levels, values, state, kStart + S(10), kHold);
  EXPECT_EQ(d.to, 3);
  EXPECT_EQ(d.reason, LevelChangeReason::kSignal);
}

TEST(HysteresisTest, RestartTimersKeepsTheLevelAndTheLastChange) {
  const std::vector<CompiledLevel> levels = ThreeLevels(kHold, S(5));
  HysteresisState state;
  state.level = 2;
  state.last_change = kStart;
  std::vector<std::optional<double>> values(kNumSignals);
  values[kGpu] = 0;
  (void)Step(levels, values, state, kStart + S(1), absl::ZeroDuration());
  ASSERT_TRUE(state.recover_since.has_value());
  RestartTimers(state, levels.size());
  EXPECT_EQ(state.level, 2);
  EXPECT_EQ(state.last_change, kStart);
  EXPECT_FALSE(state.recover_since.has_value());
  EXPECT_EQ(state.enter_since.size(), levels.size());
  // The hold runs again from the next step, not from before the restart.
  (void)Step(levels, values, state, kStart + S(30), absl::ZeroDuration());
  EXPECT_EQ(
      Step(levels, values, state, kStart + S(90) - kNs, absl::ZeroDuration())
          .to,
      2);
  EXPECT_EQ(
      Step(levels, values, state, kStart + S(90), absl::ZeroDuration()).to, 1);
}

TEST(HysteresisTest, BelowRecoverNeedsEverySignalBelowAndIgnoresUnobserved) {
  const std::vector<CompiledLevel> levels = ThreeLevels();
  std::vector<std::optional<double>> values(kNumSignals);
  EXPECT_TRUE(BelowRecover(levels, values, 2));  // nothing observed
  values[kGpu] = Below(40);
  EXPECT_TRUE(BelowRecover(levels, values, 2));
  values[kQueue] = 100;  // at its threshold
  EXPECT_FALSE(BelowRecover(levels, values, 2));
  values[kQueue] = Below(100);
  EXPECT_TRUE(BelowRecover(levels, values, 2));
  values[kGpu] = 40;
  EXPECT_FALSE(BelowRecover(levels, values, 2));
  EXPECT_TRUE(BelowRecover(levels, values, 3));  // 40 < 45
}

// ---- A noisy signal moves the level at most once each way ------------------

struct NoiseCase {
  std::string name;
  double first;      // the first sample, which sets the starting level
  double low, high;  // then uniform in [low, high) for an hour, one a second
  bool alternate;    // instead: low and high alternately
  absl::Duration hold;
  int up, down;  // the changes each way, the first sample's included
  int end_level;
};

std::ostream& operator<<(std::ostream& os, const NoiseCase& c) {
  return os << c.name;
}

std::vector<NoiseCase> NoiseCases() {
  return {
      // Around level 1's enter threshold (70), far above its recover (35).
      {"AroundTheEnterThresholdEntersOnce", 0, 65, 75, false, S(5), 1, 0, 1},
      {"AlternatingAroundTheEnterThresholdEntersOnce", 0, Below(70), 70, true,
       kHold, 1, 0, 1},
      // Around level 1's recover threshold (35), far below its enter (70).
      {"AroundTheRecoverThresholdLeavesOnce", 75, 30, 40, false, S(5), 1, 1, 0},
      {"AlternatingAroundTheRecoverThresholdNeverLeaves", 75, Below(35), 35,
       true, kHold, 1, 0, 1},
      // Around level 3's recover threshold (45), above level 2's (40).
      {"AroundAnUpperRecoverThresholdLeavesThatLevelOnce", 95, 40.5, 49.5,
       false, S(5), 1, 1, 2},
  };
}

class HysteresisNoiseTest : public ::testing::TestWithParam<NoiseCase> {};

TEST_P(HysteresisNoiseTest, ChangesTheLevelAtMostOnceEachWay) {
  const NoiseCase& c = GetParam();
  const std::vector<CompiledLevel> levels = ThreeLevels(c.hold);
  HysteresisState state;
  std::vector<std::optional<double>> values(kNumSignals);
  std::mt19937 rng(20260101);
  std::uniform_real_distribution<double> noise(c.low, c.high);
  int up = 0;
  int down = 0;
  for (int second = 0; second <= 3600; ++second) {
    values[kGpu] = second == 0         ? c.first
                   : !c.alternate      ? noise(rng)
                   : (second % 2 == 0) ? c.low
                                       : c.high;
    const Decision d =
        Step(levels, values, state, kStart + S(second), absl::ZeroDuration());
    if (d.changed()) (d.to > d.from ? up : down)++;
  }
  EXPECT_LE(up, 1);
  EXPECT_LE(down, 1);
  EXPECT_EQ(up, c.up);
  EXPECT_EQ(down, c.down);
  EXPECT_EQ(state.level, c.end_level);
}

INSTANTIATE_TEST_SUITE_P(Table, HysteresisNoiseTest,
                         ::testing::ValuesIn(NoiseCases()),
                         [](const ::testing::TestParamInfo<NoiseCase>& info) {
                           return info.param.name;
                         });

}  // namespace DEGRADE_TEST_UNIT
}  // namespace levels
}  // namespace detail
}  // namespace degrade
