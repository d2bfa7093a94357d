// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The holds (detail/levels/holds.hpp) alone, without a manager, a lock or a
// clock: each row gives the time, the override and control in force and the
// level, and says which holds end and where the rest put the level. Exact
// deadlines are written as `kT - kNs` / `kT` / `kT + kNs`.

#include "degrade/detail/levels/holds.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/detail/levels/hysteresis.hpp"
#include "degrade/detail/levels/level_compiler.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace levels {
namespace DEGRADE_TEST_UNIT {

constexpr absl::Duration kNs = absl::Nanoseconds(1);
const absl::Time kT = absl::FromUnixSeconds(1700000000);
const absl::Time kLater = kT + absl::Hours(1);
constexpr absl::Time kPast = absl::InfinitePast();
constexpr absl::Time kFuture = absl::InfiniteFuture();

OverrideHold Pin(int level, absl::Time until) { return {level, until}; }
ControlHold Floor(std::optional<int> floor, absl::Time until) {
  return {floor, until};
}

struct Row {
  std::string name;
  absl::Time now;
  std::optional<OverrideHold> override_hold;
  std::optional<ControlHold> control;
  int level;
  // Expected: which holds end, whether an override remains, the floor
  // left, and where the level goes ('o' by the override, 'c' by the floor,
  // '-' nowhere).
  bool override_ended;
  bool control_ended;
  bool pinned;
  int floor;
  int to;
  char by;
};

std::ostream& operator<<(std::ostream& os, const Row& r) {
  return os << r.name;
}

class DecideHoldsTest : public ::testing::TestWithParam<Row> {};

TEST_P(DecideHoldsTest, EndsAndHolds) {
  const Row& r = GetParam();
  const HoldDecision d =
      DecideHolds(r.now, r.override_hold, r.control, r.level);
  EXPECT_EQ(d.override_ended, r.override_ended);
  EXPECT_EQ(d.control_ended, r.control_ended);
  EXPECT_EQ(d.pinned, r.pinned);
  EXPECT_EQ(d.floor, r.floor);
  if (r.by == '-') {
    EXPECT_FALSE(d.held.has_value()) << "to " << d.held->level;
  } else {
    ASSERT_TRUE(d.held.has_value());
    EXPECT_EQ(d.held->level, r.to);
    EXPECT_EQ(d.held->by_control, r.by == 'c');
  }
}

// clang-format off
const Row kRows[] = {
  // name                               now          override            control                    lvl oEnd   cEnd   pinned fl to by
  {"NoHold",                            kT,          {},                 {},                        2, false, false, false, 0, 0, '-'},
  {"OverrideRaises",                    kT,          Pin(3, kLater),     {},                        1, false, false, true,  0, 3, 'o'},
  {"OverrideLowers",                    kT,          Pin(0, kLater),     {},                        2, false, false, true,  0, 0, 'o'},
  {"OverrideAtTheLevelMovesNothing",    kT,          Pin(2, kLater),     {},                        2, false, false, true,  0, 0, '-'},
  {"Override1nsBeforeItsDeadline",      kT - kNs,    Pin(3, kT),         {},                        3, false, false, true,  0, 0, '-'},
  {"OverrideEndsAtExactlyItsDeadline",  kT,          Pin(3, kT),         {},                        3, true,  false, false, 0, 0, '-'},
  {"OverrideEnded1nsAfterItsDeadline",  kT + kNs,    Pin(3, kT),         {},                        3, true,  false, false, 0, 0, '-'},
  {"FloorAboveTheLevelRaisesIt",        kT,          {},                 Floor(2, kLater),          1, false, false, false, 2, 2, 'c'},
  {"FloorBelowTheLevelLeavesSignals",   kT,          {},                 Floor(1, kLater),          3, false, false, false, 1, 0, '-'},
  {"FloorAtTheLevelMovesNothing",       kT,          {},                 Floor(2, kLater),          2, false, false, false, 2, 0, '-'},
  {"Control1nsBeforeItsDeadline",       kT - kNs,    {},                 Floor(3, kT),              3, false, false, false, 3, 0, '-'},
  {"ControlEndsAtExactlyItsDeadline",   kT,          {},                 Floor(3, kT),              3, false, true,  false, 0, 0, '-'},
  {"ControlEnded1nsAfterItsDeadline",   kT + kNs,    {},                 Floor(3, kT),              0, false, true,  false, 0, 0, '-'},
  {"FeaturesOnlyControlHasNoFloor",     kT,          {},                 Floor(std::nullopt, kLater), 0, false, false, false, 0, 0, '-'},
  {"FeaturesOnlyControlEnds",           kT,          {},                 Floor(std::nullopt, kT),   0, false, true,  false, 0, 0, '-'},
  {"BothTheFloorHigherWins",            kT,          Pin(1, kLater),     Floor(3, kLater),          0, false, false, true,  3, 3, 'c'},
  {"BothTheOverrideHigherWins",         kT,          Pin(3, kLater),     Floor(2, kLater),          0, false, false, true,  2, 3, 'o'},
  {"BothAtOneLevelItIsTheOverrides",    kT,          Pin(2, kLater),     Floor(2, kLater),          0, false, false, true,  2, 2, 'o'},
  {"BothTheOverrideCannotLowerTheFloor",kT,          Pin(0, kLater),     Floor(2, kLater),          3, false, false, true,  2, 2, 'c'},
  {"BothOverrideEndsFloorStays",        kT,          Pin(3, kT),         Floor(2, kLater),          3, true,  false, false, 2, 0, '-'},
  {"BothOverrideEndsBelowTheFloor",     kT,          Pin(1, kT),         Floor(2, kLater),          1, true,  false, false, 2, 2, 'c'},
  {"BothControlEndsOverrideStays",      kT,          Pin(1, kLater),     Floor(3, kT),              3, false, true,  true,  0, 1, 'o'},
  {"BothEndTogether",                   kT,          Pin(1, kT),         Floor(3, kT),              3, true,  true,  false, 0, 0, '-'},
  // A clock stuck at InfinitePast: ForceLevel's now + ttl is InfinitePast
  // too, so the override ends at once; a later deadline never does.
  {"ClockAtInfinitePastEndsSuchAnOverride", kPast,   Pin(2, kPast),      {},                        0, true,  false, false, 0, 0, '-'},
  {"ClockAtInfinitePastKeepsFiniteHolds", kPast,     Pin(2, kT),         Floor(1, kT),              0, false, false, true,  1, 2, 'o'},
  // At InfiniteFuture every finite deadline has come, but an infinite one
  // never does (DeadlineReached, saturating.hpp).
  {"ClockAtInfiniteFutureEndsFiniteHolds", kFuture,  Pin(2, kT),         Floor(1, kT),              2, true,  true,  false, 0, 0, '-'},
  {"ClockAtInfiniteFutureKeepsInfiniteHolds", kFuture, Pin(2, kFuture),  Floor(1, kFuture),         2, false, false, true,  1, 0, '-'},
  {"InfiniteHoldsAtAFiniteTime",        kT,          Pin(2, kFuture),    Floor(3, kFuture),         0, false, false, true,  3, 3, 'c'},
  // A clock that stepped back ends nothing early: only the order counts.
  {"ClockSteppedBackKeepsTheOverride",  kT - absl::Hours(5), Pin(2, kT), {},                        2, false, false, true,  0, 0, '-'},
  {"ClockSteppedBackKeepsTheControl",   kT - absl::Hours(5), {},         Floor(2, kT),              0, false, false, false, 2, 2, 'c'},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Table, DecideHoldsTest, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& i) {
                           return i.param.name;
                         });

TEST(HeldLevelTest, IgnoresDeadlinesForHoldsTheCallerJustSet) {
  // ForceLevel applies the holds without ending any: expiries are the
  // evaluation's to report.
  const std::optional<Held> h = HeldLevel(Pin(1, kPast), Floor(3, kPast), 0);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->level, 3);
  EXPECT_TRUE(h->by_control);
}

TEST(MakeOverrideTest, ByTable) {
  struct {
    int level;
    absl::Duration ttl;
    absl::Time until;   // when accepted
    std::string error;  // empty: accepted
  } rows[] = {
      {0, absl::Seconds(5), kT + absl::Seconds(5), ""},
      {3, kNs, kT + kNs, ""},
      {2, absl::InfiniteDuration(), kFuture, ""},
      {-1,
       absl::Seconds(5),
       {},
       "m: ForceLevel(-1): the level must be in [0, 3]"},
      {4,
       absl::Seconds(5),
       {},
       "m: ForceLevel(4): the level must be in [0, 3]"},
      {1, absl::ZeroDuration(), {}, "m: ForceLevel(1, 0): the ttl must be > 0"},
      {1, -kNs, {}, "m: ForceLevel(1, -1ns): the ttl must be > 0"},
  };
  for (const auto& r : rows) {
    const absl::StatusOr<OverrideHold> o =
        MakeOverride("m", 3, r.level, r.ttl, kT);
    if (r.error.empty()) {
      ASSERT_TRUE(o.ok()) << o.status();
      EXPECT_EQ(o->level, r.level);
      EXPECT_EQ(o->until, r.until);
    } else {
      EXPECT_EQ(o.status(), absl::InvalidArgumentError(r.error));
    }
  }
}

CompiledConfig Config(int levels, std::vector<std::string> critical) {
  CompiledConfig c;
  c.levels.resize(static_cast<std::size_t>(levels));
  c.critical.insert(critical.begin(), critical.end());
  return c;
}

TEST(ForcedOffTest, ByTable) {
  const CompiledConfig c = Config(3, {"crit"});
  const std::vector<std::string> off = {"cache", "crit"};
  struct {
    const std::vector<std::string>* off;
    std::string feature;
    bool forced_off;
  } rows[] = {
      {&off, "cache", true},      // listed
      {&off, "crit", false},      // critical wins
      {&off, "other", false},     // not listed
      {nullptr, "cache", false},  // no control
  };
  for (const auto& r : rows) {
    EXPECT_EQ(ForcedOff(c, r.off, r.feature), r.forced_off) << r.feature;
  }
}

TEST(CheckControlTest, ByTable) {
  const CompiledConfig c = Config(3, {"crit"});
  struct {
    uint64_t version;
    ControlHold hold;
    std::vector<std::string> off;
    std::string error;  // empty: accepted
  } rows[] = {
      {1, Floor(2, kLater), {"cache"}, ""},
      {1, Floor(std::nullopt, kT + kNs), {}, ""},
      {1, Floor(3, kFuture), {}, ""},
      {0, Floor(2, kLater), {}, "m: control: the version must be >= 1"},
      {7, Floor(0, kLater), {}, "m: control v7: level 0 is outside [1, 3]"},
      {7, Floor(4, kLater), {}, "m: control v7: level 4 is outside [1, 3]"},
      {7, Floor(1, kT), {}, "m: control v7: until "},
      {7, Floor(1, kPast), {}, "is not after now ("},
      {7,
       Floor(1, kLater),
       {"cache", "crit"},
       "m: control v7: feature 'crit' is critical in the config and cannot "
       "be switched off"},
  };
  for (const auto& r : rows) {
    const absl::Status s = CheckControl("m", c, r.version, r.hold, r.off, kT);
    if (r.error.empty()) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << r.error;
      EXPECT_NE(s.message().find(r.error), absl::string_view::npos) << s;
    }
  }
}

// Two levels on signal 0: enter 50 / 80, recover 20 / 40, a one-minute
// hold.
std::vector<CompiledLevel> TwoLevels() {
  std::vector<CompiledLevel> l(2);
  for (std::size_t k = 0; k < 2; ++k) {
    l[k].enter.push_back({0, k == 0 ? 50.0 : 80.0});
    l[k].recover.push_back({0, k == 0 ? 20.0 : 40.0});
    l[k].hold = absl::Minutes(1);
  }
  return l;
}

TEST(StepAboveTest, AStepDownStopsAtTheFloorAndItsHoldWaits) {
  const std::vector<CompiledLevel> levels = TwoLevels();
  std::vector<std::optional<double>> values = {90.0};
  HysteresisState s;
  EXPECT_EQ(StepAbove(2, levels, values, s, kT, absl::ZeroDuration()).to, 2);
  values[0] = 0.0;
  (void)StepAbove(2, levels, values, s, kT + absl::Seconds(1),
                  absl::ZeroDuration());
  // The hold has completed, but the floor keeps level 2; the hold is left
  // as it was, for the caller to restart when the floor ends.
  const Decision d =
      StepAbove(2, levels, values, s, kLater, absl::ZeroDuration());
  EXPECT_FALSE(d.changed());
  EXPECT_EQ(s.level, 2);
  EXPECT_TRUE(s.recover_since.has_value());
  // Without the floor the same state steps down at once, one level; a floor
  // of 1 then stops the next step.
  EXPECT_EQ(StepAbove(0, levels, values, s, kLater, absl::ZeroDuration()).to,
            1);
  EXPECT_FALSE(StepAbove(1, levels, values, s, kLater + absl::Minutes(1),
                         absl::ZeroDuration())
                   .changed());
  EXPECT_EQ(s.level, 1);
}

TEST(StepAboveTest, EscalationIsNotHeld) {
  const std::vector<CompiledLevel> levels = TwoLevels();
  const std::vector<std::optional<double>> values = {90.0};
  HysteresisState s;
  const Decision d = StepAbove(1, levels, values, s, kT, absl::ZeroDuration());
  EXPECT_EQ(d.to, 2);
  EXPECT_EQ(d.reason, LevelChangeReason::kSignal);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace levels
}  // namespace detail
}  // namespace degrade
