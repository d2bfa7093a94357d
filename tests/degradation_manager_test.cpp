// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// DegradationManager's rules, one by one, on a FakeClock: escalation,
// `enter_after`, staged recovery with hysteresis, cooldown, feature gates,
// overrides, reloads, log lines, counters and sources. No test sleeps; the
// monitor tests use real short periods but assert nothing about timing.
// FeatureGate and the `when` combinators are in feature_gate_test.cpp,
// LatencyTracker and InFlightGauge in signals_test.cpp, and the level
// decision alone, table by table, in detail/levels/hysteresis_test.cpp.

#include "degrade/degradation_manager.hpp"
#include "degrade/status.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"
#include "support/tick_counter.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

constexpr absl::Duration kNs = absl::Nanoseconds(1);
constexpr absl::Duration kHold = absl::Seconds(60);

// Just below `x`: the largest double smaller than it.
double Below(double x) { return std::nextafter(x, -1.0); }

// The first two levels of ThreeLevels().
DegradationConfig TwoLevels() {
  DegradationConfig c = ThreeLevels();
  c.levels.pop_back();
  return c;
}

// ThreeLevels() (manager_test_util.hpp) holds for kHold: keep them equal.
static_assert(kHold == absl::Seconds(60));

class DegradationManagerTest : public ManagerTestBase {
 protected:
  // Every captured line, parsed; fails the test on a line that isn't a JSON
  // object.
  std::vector<nlohmann::json> Parsed() const {
    std::vector<nlohmann::json> out;
    for (const std::string& line : lines_) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
      EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
      out.push_back(std::move(j));
    }
    return out;
  }

  // The parsed lines whose "event" is `event`.
  std::vector<nlohmann::json> Events(absl::string_view event) const {
    std::vector<nlohmann::json> out;
    for (nlohmann::json& j : Parsed()) {
      if (j.is_object() && j.value("event", "") == event) {
        out.push_back(std::move(j));
      }
    }
    return out;
  }
};

// ---- Escalation ------------------------------------------------------------

TEST_F(DegradationManagerTest, StartsAtLevelZeroWithNoConfig) {
  DegradationManager m(Options());
  EXPECT_EQ(m.level(), 0);
  EXPECT_EQ(m.num_levels(), 0);
  EXPECT_EQ(m.config(), nullptr);
  EXPECT_EQ(m.transitions(), 0u);
  EXPECT_TRUE(m.Enabled("anything"));
  EXPECT_TRUE(m.Feature("anything").enabled());
  EXPECT_EQ(m.name(), "inference");
}

TEST_F(DegradationManagerTest, EscalatesFromZeroToThreeInOneStep) {
  auto m = Make();
  lines_.clear();
  ObserveOk(*m, "gpu", 95.0);

  EXPECT_EQ(m->level(), 3);
  EXPECT_EQ(m->transitions(), 1u);
  ASSERT_EQ(changes_.size(), 1u);
  const LevelChange& c = changes_[0];
  EXPECT_EQ(c.from, 0);
  EXPECT_EQ(c.to, 3);
  EXPECT_EQ(c.reason, "signal");
  EXPECT_EQ(c.signal, "gpu");
  EXPECT_EQ(c.value, 95.0);
  EXPECT_EQ(c.threshold, 90.0);
  EXPECT_EQ(c.manager, "inference");
  EXPECT_EQ(c.time, clock_.Now());

  const std::vector<nlohmann::json> logged = Events("level_change");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0]["from"], 0);
  EXPECT_EQ(logged[0]["to"], 3);
  EXPECT_EQ(logged[0]["reason"], "signal");
  EXPECT_EQ(logged[0]["signal"], "gpu");
  EXPECT_EQ(logged[0]["value"], 95.0);
  EXPECT_EQ(logged[0]["threshold"], 90.0);
}

TEST_F(DegradationManagerTest, EntersAtExactlyTheThreshold) {
  auto m = Make();
  ObserveOk(*m, "gpu", Below(70.0));
  EXPECT_EQ(m->level(), 0);
  ObserveOk(*m, "gpu", 70.0);
  EXPECT_EQ(m->level(), 1);
  ObserveOk(*m, "gpu", Below(80.0));
  EXPECT_EQ(m->level(), 1);
  ObserveOk(*m, "gpu", 80.0);
  EXPECT_EQ(m->level(), 2);
  ObserveOk(*m, "gpu", Below(90.0));
  EXPECT_EQ(m->level(), 2);
  ObserveOk(*m, "gpu", 90.0);
  EXPECT_EQ(m->level(), 3);
  ASSERT_EQ(changes_.size(), 3u);
  EXPECT_EQ(changes_[0].threshold, 70.0);
  EXPECT_EQ(changes_[1].threshold, 80.0);
  EXPECT_EQ(changes_[2].threshold, 90.0);
}

TEST_F(DegradationManagerTest, AnySignalOfALevelTriggersIt) {
  auto m = Make();
  ObserveOk(*m, "queue", 200.0);  // only level 2 uses queue
  EXPECT_EQ(m->level(), 2);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].from, 0);
  EXPECT_EQ(changes_[0].signal, "queue");
  EXPECT_EQ(changes_[0].value, 200.0);
  EXPECT_EQ(changes_[0].threshold, 200.0);
}

TEST_F(DegradationManagerTest, EscalationReportsTheSignalOfTheNewLevel) {
  auto m = Make();
  // gpu wants level 1, queue wants level 2: the change names queue.
  const absl::Status s = m->ObserveBatch({{"gpu", 75.0}, {"queue", 250.0}});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->level(), 2);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].signal, "queue");
  EXPECT_EQ(changes_[0].threshold, 200.0);
}

TEST_F(DegradationManagerTest, EnterAfterFiltersAOneSampleSpike) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(5);
  auto m = Make(config);

  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 0);
  clock_.Advance(absl::Seconds(1));
  ObserveOk(*m, "gpu", 10.0);
  clock_.Advance(absl::Seconds(10));
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
  EXPECT_EQ(m->transitions(), 0u);
  EXPECT_TRUE(changes_.empty());
  EXPECT_TRUE(Events("level_change").empty());
}

TEST_F(DegradationManagerTest,
       EnterAfterEscalatesWhenHeldForExactlyEnterAfter) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(5);
  auto m = Make(config);

  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Seconds(2));
  ObserveOk(*m, "gpu", 96.0);  // still over: the timer keeps running
  clock_.Advance(absl::Seconds(3) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].from, 0);
  EXPECT_EQ(changes_[0].to, 3);
  EXPECT_EQ(changes_[0].reason, "signal");
  EXPECT_EQ(changes_[0].value, 96.0);
}

TEST_F(DegradationManagerTest, EnterAfterRestartsAfterADip) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(5);
  auto m = Make(config);

  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Seconds(4));
  ObserveOk(*m, "gpu", 50.0);  // the trigger lapses
  clock_.Advance(absl::Seconds(1));
  ObserveOk(*m, "gpu", 95.0);  // a new timer starts here
  clock_.Advance(absl::Seconds(5) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
}

TEST_F(DegradationManagerTest, PerLevelEnterAfterOverridesTheConfigValue) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::ZeroDuration();
  config.levels[2].enter_after = absl::Seconds(10);
  auto m = Make(config);

  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 2);  // levels 1 and 2 enter at once
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].to, 2);
  EXPECT_EQ(changes_[0].threshold, 80.0);
  clock_.Advance(absl::Seconds(10) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].from, 2);
  EXPECT_EQ(changes_[1].to, 3);
  EXPECT_EQ(changes_[1].threshold, 90.0);
}

TEST_F(DegradationManagerTest, PerLevelEnterAfterOfZeroBeatsAConfigWideDelay) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(30);
  config.levels[0].enter_after = absl::ZeroDuration();
  auto m = Make(config);

  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Seconds(30) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
}

// ---- Staged recovery -------------------------------------------------------

TEST_F(DegradationManagerTest, RecoversOneLevelPerHoldWithExactBoundaries) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ASSERT_EQ(m->level(), 3);
  ObserveOk(*m, "gpu", 0.0);  // below every recover threshold from now

  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);

  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);

  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);

  ASSERT_EQ(changes_.size(), 4u);
  for (int i = 1; i <= 3; ++i) {
    const LevelChange& c = changes_[static_cast<std::size_t>(i)];
    EXPECT_EQ(c.from, 4 - i);
    EXPECT_EQ(c.to, 3 - i);
    EXPECT_EQ(c.reason, "recovered");
    EXPECT_EQ(c.hold, kHold);
  }
  const std::vector<nlohmann::json> logged = Events("level_change");
  ASSERT_EQ(logged.size(), 4u);
  EXPECT_EQ(logged[1]["reason"], "recovered");
  EXPECT_EQ(logged[1]["hold_seconds"], 60.0);
}

TEST_F(DegradationManagerTest, EachStepDownNeedsAFreshHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  // Far longer than three holds, but one evaluation: one step only.
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  m->Evaluate();  // same instant: the fresh hold has not run
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, ASampleAtTheRecoverThresholdRestartsTheHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(30));
  ObserveOk(*m, "gpu", 45.0);  // exactly level 3's recover threshold
  clock_.Advance(absl::Seconds(1));
  ObserveOk(*m, "gpu", 0.0);  // the hold starts again here
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest,
       ASampleJustBelowTheRecoverThresholdKeepsTheHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(30));
  ObserveOk(*m, "gpu", Below(45.0));
  clock_.Advance(absl::Seconds(30));
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, RecoverThresholdIsDerivedFromRecoverRatio) {
  DegradationConfig config = ThreeLevels();
  config.recover_ratio = 0.83;  // the article's 90% in, below ~75% out
  auto m = Make(config);
  const double recover3 = 90.0 * 0.83;
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", recover3);  // not below: no hold
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  ObserveOk(*m, "gpu", Below(recover3));
  clock_.Advance(kHold);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, RecoverThresholdComesFromRecoverWhenGiven) {
  DegradationConfig config = ThreeLevels();
  config.levels[2].recover = {{"gpu", 85.0}};  // ratio would give 45
  auto m = Make(config);
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 85.0);
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  ObserveOk(*m, "gpu", Below(85.0));  // well above 45, but below 85
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  // Level 2 has no `recover`: 84.99 is above its derived 40, so it stays.
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, RecoveryStopsWhereALowerLevelIsStillLoaded) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 38.0);  // below 45 and 40, not below level 1's 35
  clock_.Advance(kHold);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kHold);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, EverySignalOfTheLevelMustBeBelowToRecover) {
  auto m = Make();
  const absl::Status s = m->ObserveBatch({{"gpu", 85.0}, {"queue", 150.0}});
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(m->level(), 2);
  ObserveOk(*m, "gpu", 0.0);  // queue 150 is still at/above 100
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  ObserveOk(*m, "queue", 100.0);  // exactly the recover threshold: not below
  clock_.Advance(absl::Hours(1));
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  ObserveOk(*m, "queue", 99.0);
  clock_.Advance(kHold);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, PerLevelHoldOverridesTheConfigHold) {
  DegradationConfig config = ThreeLevels();
  config.levels[2].hold = absl::Seconds(10);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(10) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].hold, absl::Seconds(10));
  // Level 2 uses the config-wide hold.
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  EXPECT_EQ(changes_.back().hold, kHold);
}

TEST_F(DegradationManagerTest, CooldownDelaysAStepDown) {
  DegradationConfig config = ThreeLevels();
  config.hold = absl::Seconds(10);
  config.cooldown = absl::Seconds(30);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 75.0);  // level 1, the last change is now
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(10));  // hold done, cooldown not
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Seconds(20) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
}

TEST_F(DegradationManagerTest, CooldownCountsFromTheLastStepDownToo) {
  DegradationConfig config = ThreeLevels();
  config.hold = absl::Seconds(10);
  config.cooldown = absl::Seconds(30);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(30));
  m->Evaluate();
  ASSERT_EQ(m->level(), 2);
  clock_.Advance(absl::Seconds(30) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, CooldownNeverDelaysEscalation) {
  DegradationConfig config = ThreeLevels();
  config.cooldown = absl::Hours(1);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(kNs);
  ObserveOk(*m, "gpu", 85.0);
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 3);
  EXPECT_EQ(m->transitions(), 3u);
}

TEST_F(DegradationManagerTest, EscalationCancelsARunningHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 75.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(50));
  ObserveOk(*m, "gpu", 85.0);  // level 2
  ObserveOk(*m, "gpu", 0.0);   // level 2's hold starts now
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

// ---- A noisy signal does not flap -----------------------------------------

struct Flips {
  int up = 0;
  int down = 0;
};

Flips CountFlips(const std::vector<LevelChange>& changes) {
  Flips f;
  for (const LevelChange& c : changes) (c.to > c.from ? f.up : f.down)++;
  return f;
}

TEST_F(DegradationManagerTest, NoisySignalAroundTheEnterThresholdEntersOnce) {
  DegradationConfig config = ThreeLevels();
  config.hold = absl::Seconds(5);
  auto m = Make(config);
  std::mt19937 rng(20260101);
  std::uniform_real_distribution<double> noise(65.0, 75.0);  // around 70
  for (int second = 0; second < 3600; ++second) {
    ObserveOk(*m, "gpu", noise(rng));
    clock_.Advance(absl::Seconds(1));
  }
  const Flips f = CountFlips(changes_);
  EXPECT_EQ(f.up, 1);
  EXPECT_EQ(f.down, 0);
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, AlternatingAroundTheEnterThresholdEntersOnce) {
  auto m = Make();
  for (int second = 0; second < 3600; ++second) {
    ObserveOk(*m, "gpu", second % 2 == 0 ? Below(70.0) : 70.0);
    clock_.Advance(absl::Seconds(1));
  }
  const Flips f = CountFlips(changes_);
  EXPECT_EQ(f.up, 1);
  EXPECT_EQ(f.down, 0);
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, NoisySignalAroundTheRecoverThresholdLeavesOnce) {
  DegradationConfig config = ThreeLevels();
  config.hold = absl::Seconds(5);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 75.0);
  ASSERT_EQ(m->level(), 1);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(30.0, 40.0);  // around 35
  for (int second = 0; second < 3600; ++second) {
    ObserveOk(*m, "gpu", noise(rng));
    clock_.Advance(absl::Seconds(1));
  }
  const Flips f = CountFlips(changes_);
  EXPECT_EQ(f.up, 1);    // the initial entry only
  EXPECT_EQ(f.down, 1);  // a 5 s run below 35 happens once; never re-enters
  EXPECT_EQ(m->level(), 0);
}

TEST_F(DegradationManagerTest,
       AlternatingAroundTheRecoverThresholdNeverLeaves) {
  auto m = Make();
  ObserveOk(*m, "gpu", 75.0);
  for (int second = 0; second < 3600; ++second) {
    ObserveOk(*m, "gpu", second % 2 == 0 ? Below(35.0) : 35.0);
    clock_.Advance(absl::Seconds(1));
  }
  const Flips f = CountFlips(changes_);
  EXPECT_EQ(f.up, 1);
  EXPECT_EQ(f.down, 0);
  EXPECT_EQ(m->level(), 1);
}

// ---- Feature gates ---------------------------------------------------------

TEST_F(DegradationManagerTest, DisableListsAreCumulative) {
  auto m = Make();
  const FeatureGate cache = m->Feature("cache_refresh");
  const FeatureGate debug = m->Feature("debug_log");
  const FeatureGate ab = m->Feature("ab_tag");
  const FeatureGate personal = m->Feature("personalisation");
  EXPECT_TRUE(cache.enabled() && debug.enabled() && ab.enabled() &&
              personal.enabled());

  ObserveOk(*m, "gpu", 75.0);  // level 1
  EXPECT_FALSE(cache.enabled());
  EXPECT_TRUE(debug.enabled());
  EXPECT_TRUE(ab.enabled());
  EXPECT_TRUE(personal.enabled());

  ObserveOk(*m, "gpu", 85.0);  // level 2: its own list and level 1's
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(debug.enabled());
  EXPECT_FALSE(ab.enabled());
  EXPECT_TRUE(personal.enabled());
  for (const char* f : {"cache_refresh", "debug_log", "ab_tag"}) {
    EXPECT_FALSE(m->Enabled(f)) << f;
  }
  EXPECT_TRUE(m->Enabled("personalisation"));
}

TEST_F(DegradationManagerTest, AllNonCriticalSwitchesOffEverythingButCritical) {
  auto m = Make();
  const FeatureGate before = m->Feature("never_mentioned_before");
  const FeatureGate auth = m->Feature("auth");
  ObserveOk(*m, "gpu", 95.0);  // level 3: all_non_critical
  const FeatureGate after = m->Feature("never_mentioned_after");
  const FeatureGate ranking = m->Feature("ranking");

  EXPECT_FALSE(before.enabled());
  EXPECT_FALSE(after.enabled());
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(ranking.enabled());
  EXPECT_FALSE(m->Enabled("cache_refresh"));
  EXPECT_FALSE(m->Enabled("anything_at_all"));
  EXPECT_TRUE(m->Enabled("auth"));
  EXPECT_TRUE(m->Enabled("ranking"));
}

TEST_F(DegradationManagerTest, ExplicitDisableOfACriticalFeatureStillWins) {
  DegradationConfig config = ThreeLevels();
  config.levels[1].disable.push_back("auth");  // level 2
  auto m = Make(config);
  const FeatureGate auth = m->Feature("auth");
  const FeatureGate ranking = m->Feature("ranking");
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_TRUE(auth.enabled());
  ObserveOk(*m, "gpu", 85.0);
  EXPECT_FALSE(auth.enabled());
  EXPECT_FALSE(m->Enabled("auth"));
  ObserveOk(*m, "gpu", 95.0);  // all_non_critical doesn't bring it back
  EXPECT_FALSE(auth.enabled());
  EXPECT_FALSE(m->Enabled("auth"));
  EXPECT_TRUE(ranking.enabled());
}

TEST_F(DegradationManagerTest, GatesRegisteredBeforeAndAfterAChangeAgree) {
  DegradationManager m(Options());
  const FeatureGate before_config = m.Feature("debug_log");
  ASSERT_TRUE(m.Reload(ThreeLevels()).ok());
  const FeatureGate before = m.Feature("ab_tag");
  ObserveOk(m, "gpu", 85.0);
  const FeatureGate after = m.Feature("cache_refresh");
  const FeatureGate on = m.Feature("personalisation");
  for (const FeatureGate* g : {&before_config, &before, &after, &on}) {
    EXPECT_EQ(g->enabled(), m.Enabled(g->name())) << g->name();
  }
  EXPECT_FALSE(before_config.enabled());
  EXPECT_FALSE(before.enabled());
  EXPECT_FALSE(after.enabled());
  EXPECT_TRUE(on.enabled());

  ObserveOk(m, "gpu", 0.0);
  clock_.Advance(kHold);
  m.Evaluate();
  ASSERT_EQ(m.level(), 1);
  EXPECT_TRUE(before_config.enabled());
  EXPECT_TRUE(before.enabled());
  EXPECT_FALSE(after.enabled());
  clock_.Advance(kHold);
  m.Evaluate();
  ASSERT_EQ(m.level(), 0);
  for (const FeatureGate* g : {&before_config, &before, &after, &on}) {
    EXPECT_TRUE(g->enabled()) << g->name();
    EXPECT_TRUE(m.Enabled(g->name())) << g->name();
  }
}

// ---- Manual override -------------------------------------------------------

TEST_F(DegradationManagerTest, ForceLevelMovesTheLevelAtOnce) {
  auto m = Make();
  lines_.clear();
  const absl::Status s = m->ForceLevel(2, absl::Minutes(10));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->forced_level(), 2);
  EXPECT_FALSE(m->Enabled("debug_log"));
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].from, 0);
  EXPECT_EQ(changes_[0].to, 2);
  EXPECT_EQ(changes_[0].reason, "override");
  const std::vector<nlohmann::json> logged = Events("level_change");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0]["reason"], "override");
  EXPECT_EQ(logged[0]["until"], "2023-11-14T22:23:20.000Z");

  ASSERT_TRUE(m->ForceLevel(3, absl::InfiniteDuration()).ok());
  const std::vector<nlohmann::json> forever = Events("level_change");
  ASSERT_EQ(forever.size(), 2u);
  EXPECT_EQ(forever[1]["until"], "never");
}

TEST_F(DegradationManagerTest, ForcingTheCurrentLevelIsNotATransition) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(0, absl::Minutes(1)).ok());
  EXPECT_EQ(m->forced_level(), 0);
  EXPECT_EQ(m->transitions(), 0u);
  EXPECT_TRUE(changes_.empty());
}

TEST_F(DegradationManagerTest, SignalsAreRecordedButIgnoredWhileForced) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(1, absl::Minutes(10)).ok());
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 1);
  EXPECT_EQ(m->signal_value("gpu"), 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Minutes(5));
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);  // no recovery while forced either
  EXPECT_EQ(m->signal_value("gpu"), 0.0);
  EXPECT_EQ(m->forced_level(), 1);
  EXPECT_EQ(m->transitions(), 1u);
}

TEST_F(DegradationManagerTest, OverrideExpiresAtExactlyTheTtl) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(1, absl::Seconds(10)).ok());
  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Seconds(10) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  EXPECT_EQ(m->forced_level(), 1);
  EXPECT_TRUE(Events("override_expired").empty());

  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);  // the higher wanted level applies at once
  EXPECT_EQ(m->forced_level(), std::nullopt);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].from, 1);
  EXPECT_EQ(changes_[1].to, 3);
  EXPECT_EQ(changes_[1].reason, "signal");
  const std::vector<nlohmann::json> expired = Events("override_expired");
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0]["level"], 1);
}

TEST_F(DegradationManagerTest, EnterAfterKeepsCountingWhileForced) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(5);
  auto m = Make(config);
  ASSERT_TRUE(m->ForceLevel(0, absl::Seconds(10)).ok());
  ObserveOk(*m, "gpu", 95.0);  // the trigger has held 10 s at expiry
  clock_.Advance(absl::Seconds(10));
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].reason, "signal");
}

TEST_F(DegradationManagerTest, ForcedLevelAppliesADueExpiry) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(2, absl::Seconds(10)).ok());
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(m->forced_level(), std::nullopt);
}

// The sibling of a control that never expires without a config: the one
// override such a manager accepts (level 0) ends at its ttl too.
TEST_F(DegradationManagerTest, AnOverrideExpiresOnAManagerWithoutAConfig) {
  DegradationManager m(Options());
  ASSERT_TRUE(m.ForceLevel(0, absl::Seconds(10)).ok());
  clock_.Advance(absl::Seconds(10) - kNs);
  EXPECT_EQ(m.ForcedLevel(), 0);
  clock_.Advance(kNs);
  EXPECT_EQ(m.ForcedLevel(), std::nullopt);
  EXPECT_EQ(Events("override_expired").size(), 1u);
}

TEST_F(DegradationManagerTest, AfterExpiryTheForcedLevelRecoversInStages) {
  auto m = Make();
  ObserveOk(*m, "gpu", 0.0);
  ASSERT_TRUE(m->ForceLevel(3, absl::Seconds(10)).ok());
  clock_.Advance(absl::Seconds(10));
  m->Evaluate();
  EXPECT_EQ(m->forced_level(), std::nullopt);
  EXPECT_EQ(m->level(), 3);  // not straight to 0
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].reason, "recovered");
}

TEST_F(DegradationManagerTest, ForcingBelowTheSignalsHoldsThemOffUntilCleared) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(0, absl::InfiniteDuration()).ok());
  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Hours(24));
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
  EXPECT_EQ(m->forced_level(), 0);
  m->ClearOverride();
  EXPECT_EQ(m->forced_level(), std::nullopt);
  EXPECT_EQ(m->level(), 3);
  ASSERT_EQ(changes_.size(), 1u);
  EXPECT_EQ(changes_[0].reason, "signal");
  m->ClearOverride();  // no override: a no-op
  EXPECT_EQ(m->level(), 3);
  EXPECT_EQ(m->transitions(), 1u);
}

TEST_F(DegradationManagerTest, ClearOverrideStartsStagedRecovery) {
  auto m = Make();
  ObserveOk(*m, "gpu", 0.0);
  ASSERT_TRUE(m->ForceLevel(2, absl::InfiniteDuration()).ok());
  clock_.Advance(absl::Hours(1));
  m->ClearOverride();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(DegradationManagerTest, ForceLevelRejectsABadLevelOrTtl) {
  auto m = Make();
  for (const auto& [level, ttl] : std::vector<std::pair<int, absl::Duration>>{
           {-1, absl::Seconds(1)},
           {4, absl::Seconds(1)},
           {1, absl::ZeroDuration()},
           {1, absl::Seconds(-1)},
           {1, -absl::InfiniteDuration()}}) {
    const absl::Status s = m->ForceLevel(level, ttl);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument)
        << level << " " << ttl << ": " << s;
  }
  EXPECT_EQ(m->level(), 0);
  EXPECT_EQ(m->forced_level(), std::nullopt);
  EXPECT_EQ(m->transitions(), 0u);
  ObserveOk(*m, "gpu", 95.0);  // no override was installed
  EXPECT_EQ(m->level(), 3);
}

TEST_F(DegradationManagerTest, ForceLevelBeforeAnyConfigOnlyAcceptsZero) {
  DegradationManager m(Options());
  EXPECT_EQ(m.ForceLevel(1, absl::Seconds(1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.level(), 0);
}

// ---- Observe ---------------------------------------------------------------

TEST_F(DegradationManagerTest, ObserveBeforeAnyConfigIsFailedPrecondition) {
  DegradationManager m(Options());
  EXPECT_EQ(m.Observe("gpu", 95.0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m.ObserveBatch({{"gpu", 95.0}}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(m.level(), 0);
  EXPECT_EQ(m.signal_value("gpu"), std::nullopt);
}

TEST_F(DegradationManagerTest, ObserveRejectsNonFiniteValues) {
  auto m = Make();
  ObserveOk(*m, "gpu", 75.0);
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()}) {
    const absl::Status s = m->Observe("gpu", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("'gpu'"));
    EXPECT_THAT(s.message(), HasSubstr("finite"));
  }
  EXPECT_EQ(m->signal_value("gpu"), 75.0);
  EXPECT_EQ(m->level(), 1);
  EXPECT_EQ(m->transitions(), 1u);
}

TEST_F(DegradationManagerTest, ObserveRejectsUnknownSignals) {
  auto m = Make();
  const absl::Status s = m->Observe("gpu_utilisation", 95.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'gpu_utilisation'"));
  EXPECT_EQ(m->signal_value("gpu_utilisation"), std::nullopt);
  EXPECT_EQ(m->level(), 0);
}

TEST_F(DegradationManagerTest, ARejectedSampleChangesNothingNotEvenADueHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(kHold);  // a hold is due
  EXPECT_FALSE(m->Observe("gpu", std::nan("")).ok());
  EXPECT_FALSE(m->Observe("nope", 1.0).ok());
  EXPECT_EQ(m->level(), 3);
  EXPECT_EQ(m->transitions(), 1u);
}

TEST_F(DegradationManagerTest, ObserveBatchIsAllOrNothing) {
  auto m = Make();
  absl::Status s = m->ObserveBatch({{"gpu", 95.0}, {"queue", std::nan("")}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'queue'"));
  s = m->ObserveBatch({{"gpu", 95.0}, {"bogus", 1.0}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'bogus'"));
  EXPECT_EQ(m->signal_value("gpu"), std::nullopt);
  EXPECT_EQ(m->signal_value("queue"), std::nullopt);
  EXPECT_EQ(m->level(), 0);

  s = m->ObserveBatch({{"gpu", 75.0}, {"queue", 250.0}});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->signal_value("gpu"), 75.0);
  EXPECT_EQ(m->signal_value("queue"), 250.0);
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->transitions(), 1u);  // one evaluation for the batch
}

// ---- Reload ----------------------------------------------------------------

TEST_F(DegradationManagerTest, CreateValidatesTheConfig) {
  DegradationConfig bad = ThreeLevels();
  bad.levels.clear();
  const auto failed = DegradationManager::Create(bad, Options());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  const auto ok = DegradationManager::Create(ThreeLevels(), Options());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->num_levels(), 3);
  EXPECT_EQ((*ok)->reloads(), 1u);
}

TEST_F(DegradationManagerTest, ValidReloadSwapsTheConfigAndKeepsTheLevel) {
  auto m = Make();
  ObserveOk(*m, "gpu", 85.0);
  ASSERT_EQ(m->level(), 2);
  lines_.clear();
  DegradationConfig next = ThreeLevels();
  next.levels[0].enter = {{"gpu", 60.0}};
  next.levels[1].disable = {"personalisation"};
  next.levels[2].enter = {{"gpu", 95.0}};
  const absl::Status s = m->Reload(next);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->transitions(), 1u);
  EXPECT_EQ(m->reloads(), 2u);
  EXPECT_EQ(m->rejected_reloads(), 0u);
  ASSERT_NE(m->config(), nullptr);
  EXPECT_EQ(m->config()->levels[2].enter.at("gpu"), 95.0);
  EXPECT_EQ(m->signal_value("gpu"), 85.0);  // the last sample is kept
  // The new disable lists apply at the kept level.
  EXPECT_FALSE(m->Enabled("personalisation"));
  EXPECT_TRUE(m->Enabled("debug_log"));
  const std::vector<nlohmann::json> reloaded = Events("config_reloaded");
  ASSERT_EQ(reloaded.size(), 1u);
  EXPECT_EQ(reloaded[0]["level"], 2);
  EXPECT_EQ(reloaded[0]["levels"], 3);
  EXPECT_TRUE(Events("level_change").empty());
}

TEST_F(DegradationManagerTest, ReloadWithFewerLevelsClampsTheLevel) {
  auto m = Make();
  const FeatureGate personal = m->Feature("personalisation");
  ObserveOk(*m, "gpu", 95.0);
  ASSERT_EQ(m->level(), 3);
  ASSERT_FALSE(personal.enabled());
  lines_.clear();
  const absl::Status s = m->Reload(TwoLevels());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->num_levels(), 2);
  EXPECT_TRUE(personal.enabled());  // level 2 of the new config keeps it
  ASSERT_EQ(changes_.size(), 2u);
  EXPECT_EQ(changes_[1].from, 3);
  EXPECT_EQ(changes_[1].to, 2);
  EXPECT_EQ(changes_[1].reason, "reload");
  const std::vector<nlohmann::json> logged = Events("level_change");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0]["reason"], "reload");
  EXPECT_EQ(logged[0]["from"], 3);
  EXPECT_EQ(logged[0]["to"], 2);
}

TEST_F(DegradationManagerTest, ReloadClampsAForcedLevelToo) {
  auto m = Make();
  ASSERT_TRUE(m->ForceLevel(3, absl::InfiniteDuration()).ok());
  ASSERT_TRUE(m->Reload(TwoLevels()).ok());
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->forced_level(), 2);
  EXPECT_EQ(changes_.back().reason, "reload");
}

TEST_F(DegradationManagerTest, InvalidReloadKeepsTheOldConfigAndLevel) {
  auto m = Make();
  ObserveOk(*m, "gpu", 85.0);
  ASSERT_EQ(m->level(), 2);
  const auto old_config = m->config();
  lines_.clear();
  DegradationConfig bad = ThreeLevels();
  bad.recover_ratio = 1.5;
  const absl::Status s = m->Reload(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("recover_ratio"));
  EXPECT_EQ(m->config(), old_config);
  EXPECT_EQ(m->level(), 2);
  EXPECT_EQ(m->transitions(), 1u);
  EXPECT_EQ(m->reloads(), 1u);
  EXPECT_EQ(m->rejected_reloads(), 1u);
  EXPECT_FALSE(m->Enabled("debug_log"));
  const std::vector<nlohmann::json> rejected = Events("config_rejected");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_THAT(rejected[0].value("error", ""), HasSubstr("recover_ratio"));
  EXPECT_EQ(rejected[0]["manager"], "inference");
  EXPECT_TRUE(Events("config_reloaded").empty());
  // The old config keeps serving.
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 3);
}

TEST_F(DegradationManagerTest, ReloadRestartsARunningHold) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(30));
  DegradationConfig next = ThreeLevels();
  next.levels[0].disable.push_back("prefetch");  // a different config
  ASSERT_TRUE(m->Reload(next).ok());             // the hold restarts here
  clock_.Advance(kHold - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, ReloadRestartsEnterAfterTimers) {
  DegradationConfig config = ThreeLevels();
  config.enter_after = absl::Seconds(5);
  auto m = Make(config);
  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Seconds(3));
  config.cooldown = absl::Seconds(1);   // a different config
  ASSERT_TRUE(m->Reload(config).ok());  // the timer restarts here
  clock_.Advance(absl::Seconds(5) - kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
  clock_.Advance(kNs);
  m->Evaluate();
  EXPECT_EQ(m->level(), 3);
}

TEST_F(DegradationManagerTest, ReloadingAnEqualConfigChangesNothing) {
  auto m = Make();
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  const auto installed = m->config();
  lines_.clear();
  clock_.Advance(absl::Seconds(30));
  const absl::Status s = m->Reload(ThreeLevels());  // re-pushed, unchanged
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->config(), installed);
  EXPECT_EQ(m->reloads(), 1u);
  EXPECT_TRUE(lines_.empty());
  clock_.Advance(absl::Seconds(30));  // the hold was not restarted
  m->Evaluate();
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, ReloadDropsValuesOfSignalsNoLongerUsed) {
  auto m = Make();
  ObserveOk(*m, "queue", 50.0);
  ObserveOk(*m, "gpu", 50.0);
  DegradationConfig next = ThreeLevels();
  next.levels[1].enter = {{"gpu", 80.0}};
  ASSERT_TRUE(m->Reload(next).ok());
  EXPECT_EQ(m->signal_value("queue"), std::nullopt);
  EXPECT_EQ(m->signal_value("gpu"), 50.0);
  EXPECT_EQ(m->Observe("queue", 1.0).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Log lines -------------------------------------------------------------

TEST_F(DegradationManagerTest, LogLinesAreJsonObjectsWithEscapedManagerName) {
  const std::string name = R"(we"ird\name)";
  auto m = Make(ThreeLevels(), name);
  clock_.Advance(absl::Milliseconds(1500));
  ObserveOk(*m, "gpu", 95.0);
  ASSERT_TRUE(m->ForceLevel(1, absl::Seconds(1)).ok());
  clock_.Advance(absl::Seconds(1));
  ObserveOk(*m, "gpu", 0.0);  // expiry
  clock_.Advance(kHold);
  m->Evaluate();                         // recovered
  (void)m->Reload(DegradationConfig{});  // rejected
  DegradationConfig next = ThreeLevels();
  next.cooldown = absl::Seconds(1);
  ASSERT_TRUE(m->Reload(next).ok());

  const std::vector<nlohmann::json> all = Parsed();
  ASSERT_EQ(all.size(), lines_.size());
  for (const nlohmann::json& j : all) {
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["manager"], name) << j;
    EXPECT_TRUE(j.contains("time") && j["time"].is_string()) << j;
    EXPECT_TRUE(j.contains("event") && j["event"].is_string()) << j;
  }
  const std::vector<nlohmann::json> changes = Events("level_change");
  ASSERT_EQ(changes.size(), 3u);
  for (const nlohmann::json& j : changes) {
    for (const char* key :
         {"time", "manager", "event", "from", "to", "reason"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << j;
    }
    EXPECT_TRUE(j["from"].is_number_integer()) << j;
    EXPECT_TRUE(j["to"].is_number_integer()) << j;
  }
  EXPECT_EQ(changes[0]["time"], "2023-11-14T22:13:21.500Z");
  EXPECT_EQ(changes[0]["reason"], "signal");
  EXPECT_EQ(changes[1]["reason"], "override");
  EXPECT_EQ(changes[2]["reason"], "recovered");
  EXPECT_EQ(changes[2]["from"], 1);
  EXPECT_EQ(changes[2]["to"], 0);
  EXPECT_EQ(Events("override_expired").size(), 1u);
  EXPECT_EQ(Events("config_rejected").size(), 1u);
  EXPECT_EQ(Events("config_reloaded").size(), 2u);
}

TEST_F(DegradationManagerTest, ControlCharactersInNamesAreEscaped) {
  const std::string name =
      "line\nbreak\ttab\x01"
      "end";
  DegradationConfig config = ThreeLevels();
  config.name = "cfg \"quoted\"";
  config.levels[0].enter = {{"sig\"nal\\", 70.0}};
  auto m = Make(config, name);
  ObserveOk(*m, "sig\"nal\\", 75.0);
  DegradationConfig bad = config;
  bad.recover_ratio = -1.0;  // the error names the quoted config
  EXPECT_FALSE(m->Reload(bad).ok());
  for (const std::string& line : lines_) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  const std::vector<nlohmann::json> changes = Events("level_change");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0]["manager"], name);
  EXPECT_EQ(changes[0]["signal"], "sig\"nal\\");
  const std::vector<nlohmann::json> rejected = Events("config_rejected");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_THAT(rejected[0].value("error", ""), HasSubstr("cfg \"quoted\""));
}

TEST_F(DegradationManagerTest, InvalidUtf8InNamesStillGivesValidJson) {
  const std::string name = "caf\xc3\xa9 bad\xff trunc\xe2\x82";
  auto m = Make(ThreeLevels(), name);
  ObserveOk(*m, "gpu", 95.0);
  const std::vector<nlohmann::json> changes = Events("level_change");
  ASSERT_EQ(changes.size(), 1u);
  const std::string logged = changes[0]["manager"];
  EXPECT_EQ(logged.rfind("caf\xc3\xa9 bad", 0), 0u) << logged;  // é kept
  EXPECT_NE(logged.find("\xef\xbf\xbd"), std::string::npos) << logged;
}

// ---- Counters --------------------------------------------------------------

TEST_F(DegradationManagerTest, TransitionsCountEveryLevelChange) {
  auto m = Make();
  ObserveOk(*m, "gpu", 75.0);                            // 0 -> 1
  ObserveOk(*m, "gpu", 95.0);                            // 1 -> 3
  ASSERT_TRUE(m->ForceLevel(0, absl::Seconds(1)).ok());  // 3 -> 0
  clock_.Advance(absl::Seconds(1));
  m->Evaluate();                             // expiry: 0 -> 3
  ASSERT_TRUE(m->Reload(TwoLevels()).ok());  // 3 -> 2
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(kHold);
  m->Evaluate();  // 2 -> 1
  EXPECT_EQ(m->transitions(), 6u);
  EXPECT_EQ(changes_.size(), 6u);
  EXPECT_EQ(Events("level_change").size(), 6u);
}

TEST_F(DegradationManagerTest, TimeAtLevelFollowsTheClock) {
  const absl::Time start = clock_.Now();
  auto m = Make();
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(m->time_at_level(0), absl::Seconds(10));  // the current stay
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 0.0);
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(m->time_at_level(0), absl::Seconds(10));
  EXPECT_EQ(m->time_at_level(3), absl::Seconds(5));
  clock_.Advance(kHold - absl::Seconds(5));
  m->Evaluate();
  ASSERT_EQ(m->level(), 2);
  EXPECT_EQ(m->time_at_level(3), kHold);
  EXPECT_EQ(m->time_at_level(2), absl::ZeroDuration());
  clock_.Advance(absl::Seconds(7));
  EXPECT_EQ(m->time_at_level(2), absl::Seconds(7));
  EXPECT_EQ(m->time_at_level(1), absl::ZeroDuration());
  EXPECT_EQ(m->time_at_level(-1), absl::ZeroDuration());
  EXPECT_EQ(m->time_at_level(kMaxLevels + 1), absl::ZeroDuration());
  absl::Duration total;
  for (int k = 0; k <= kMaxLevels; ++k) total += m->time_at_level(k);
  EXPECT_EQ(total, clock_.Now() - start);
}

// ---- Sources and PollOnce --------------------------------------------------

TEST_F(DegradationManagerTest, PollOnceRecordsSourceValues) {
  auto m = Make();
  double gpu = 95.0;
  m->AddSource("gpu", [&gpu] { return gpu; });
  m->AddSource("queue", [] { return 10.0; });
  const absl::Status s = m->PollOnce();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(m->signal_value("gpu"), 95.0);
  EXPECT_EQ(m->signal_value("queue"), 10.0);
  EXPECT_EQ(m->level(), 3);
  gpu = 0.0;
  ASSERT_TRUE(m->PollOnce().ok());
  clock_.Advance(kHold);
  ASSERT_TRUE(m->PollOnce().ok());  // a poll also completes a hold
  EXPECT_EQ(m->level(), 2);
}

TEST_F(DegradationManagerTest, AThrowingSourceIsAnErrorAndOthersStillCount) {
  auto m = Make();
  m->AddSource("queue", []() -> double { throw std::runtime_error("boom"); });
  m->AddSource("gpu", [] { return 95.0; });
  m->AddSource("queue", []() -> double { throw 42; });
  const absl::Status s = m->PollOnce();
  // The one status shape of every throwing callable (detail/invoke.hpp).
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE(IsCallableException(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("boom"));  // the first error
  EXPECT_THAT(s.message(), HasSubstr("'queue'"));
  EXPECT_EQ(m->signal_value("gpu"), 95.0);
  EXPECT_EQ(m->signal_value("queue"), std::nullopt);
  EXPECT_EQ(m->level(), 3);
}

TEST_F(DegradationManagerTest, PollOnceSkipsRejectedSourceValues) {
  auto m = Make();
  m->AddSource("gpu", [] { return std::numeric_limits<double>::infinity(); });
  m->AddSource("unknown", [] { return 1.0; });
  m->AddSource("queue", [] { return 250.0; });
  const absl::Status s = m->PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'gpu'"));
  EXPECT_EQ(m->signal_value("gpu"), std::nullopt);
  EXPECT_EQ(m->signal_value("queue"), 250.0);
  EXPECT_EQ(m->level(), 2);
}

// ---- Callbacks into the manager -------------------------------------------

TEST_F(DegradationManagerTest, AnObserverCanCallBackIntoTheManager) {
  auto m = Make();
  int depth = 0;
  int max_depth = 0;
  std::vector<std::pair<int, int>> seen;
  std::vector<bool> cache_enabled;
  m->AddObserver([&](const LevelChange& c) {
    max_depth = std::max(max_depth, ++depth);
    seen.emplace_back(c.from, c.to);
    cache_enabled.push_back(m->Enabled("cache_refresh"));
    EXPECT_GE(m->level(), 1);
    EXPECT_EQ(m->num_levels(), 3);
    if (c.to == 1) {
      const absl::Status s = m->Observe("gpu", 95.0);  // escalates again
      EXPECT_TRUE(s.ok()) << s;
    }
    --depth;
  });
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_EQ(m->level(), 3);
  EXPECT_EQ(max_depth, 1);  // delivered after, not nested
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{0, 1}, {1, 3}}));
  EXPECT_EQ(cache_enabled, (std::vector<bool>{false, false}));
  EXPECT_EQ(changes_.size(), 2u);
  EXPECT_EQ(m->transitions(), 2u);
}

// Issue 13, defect 7: eight ForceLevel changes 100 ms apart wrote five
// lines; the rest only showed as "suppressed":N on a later line. Level
// changes and override expiries are the audit trail: one line each.
TEST_F(DegradationManagerTest, EveryLevelChangeAndExpiryWritesItsOwnLine) {
  auto m = Make();
  lines_.clear();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(m->ForceLevel(1 + i % 3, absl::Seconds(10)).ok());
    clock_.Advance(absl::Milliseconds(100));
  }
  clock_.Advance(absl::Seconds(10));  // the last override expires
  m->Evaluate();
  std::vector<std::string> changes;
  int expiries = 0;
  for (const std::string& line : lines_) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("suppressed"))) << line;
    if (absl::StrContains(line, R"("event":"level_change")")) {
      changes.push_back(line);
    }
    if (absl::StrContains(line, R"("event":"override_expired")")) ++expiries;
  }
  // Eight forced changes; after the expiry, staged recovery holds level 2.
  EXPECT_EQ(changes_.size(), 8u);
  EXPECT_EQ(changes.size(), changes_.size());
  EXPECT_EQ(expiries, 1);

  // Reload rejections, which a bad file repeats, stay rate-limited (5/s).
  lines_.clear();
  for (int i = 0; i < 10; ++i) {
    (void)m->RejectReload(absl::InvalidArgumentError("bad file"));
  }
  EXPECT_EQ(lines_.size(), 5u);
}

TEST_F(DegradationManagerTest, ASilencedLogDropsEvenLevelChanges) {
  ManagerOptions o = Options();
  o.max_log_lines_per_second = 0;
  DegradationManager m(std::move(o));
  ASSERT_TRUE(m.Reload(ThreeLevels()).ok());
  ASSERT_TRUE(m.ForceLevel(2, absl::Seconds(1)).ok());
  EXPECT_EQ(m.level(), 2);
  EXPECT_THAT(lines_, ::testing::IsEmpty());
}

TEST_F(DegradationManagerTest, ALogSinkCanCallBackIntoTheManager) {
  DegradationManager* self = nullptr;
  int lines = 0;
  std::vector<int> levels;
  ManagerOptions o = Options();
  o.log_sink = [&](absl::string_view line) {
    ++lines;
    ASSERT_NE(self, nullptr);
    levels.push_back(self->level());
    (void)self->Enabled("cache_refresh");
    (void)self->config();
    (void)self->signal_value("gpu");
    (void)self->time_at_level(0);
    if (absl::StrContains(line, "level_change")) {
      const absl::Status s = self->Observe("queue", 1.0);  // no change
      EXPECT_TRUE(s.ok()) << s;
    }
  };
  DegradationManager m(std::move(o));
  self = &m;
  ASSERT_TRUE(m.Reload(ThreeLevels()).ok());
  ObserveOk(m, "gpu", 95.0);
  EXPECT_EQ(m.level(), 3);
  EXPECT_EQ(lines, 2);  // config_reloaded, level_change
  EXPECT_EQ(levels, (std::vector<int>{0, 3}));
  EXPECT_EQ(m.signal_value("queue"), 1.0);
}

TEST_F(DegradationManagerTest, AThrowingLogSinkDoesNotSilenceObservers) {
  ManagerOptions o = Options();
  o.log_sink = [](absl::string_view) { throw std::runtime_error("disk full"); };
  DegradationManager m(std::move(o));
  ASSERT_TRUE(m.Reload(ThreeLevels()).ok());
  int calls = 0;
  m.AddObserver([&calls](const LevelChange&) { ++calls; });
  ObserveOk(m, "gpu", 95.0);
  EXPECT_EQ(m.level(), 3);
  EXPECT_EQ(m.transitions(), 1u);
  EXPECT_EQ(calls, 1);  // every level change is a call to each observer
}

TEST_F(DegradationManagerTest, AThrowingObserverDoesNotSilenceLaterObservers) {
  auto m = Make();  // changes_ is recorded by the first observer
  m->AddObserver([](const LevelChange&) { throw std::runtime_error("bug"); });
  int calls = 0;
  m->AddObserver([&calls](const LevelChange&) { ++calls; });
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(changes_.size(), 1u);
  EXPECT_EQ(calls, 1);
}

// ---- The monitor -----------------------------------------------------------

TEST_F(DegradationManagerTest, StartTwiceIsFailedPrecondition) {
  auto m = Make();
  std::promise<void> polled;
  std::atomic<bool> first{true};
  m->AddSource("gpu", [&] {
    if (first.exchange(false)) polled.set_value();
    return 95.0;
  });
  ASSERT_TRUE(m->Start(absl::Milliseconds(1)).ok());
  EXPECT_EQ(m->Start(absl::Milliseconds(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  polled.get_future().wait();  // the monitor polls, whenever it gets to it
  m->Stop();
  EXPECT_EQ(m->level(), 3);
  m->Stop();  // a second Stop is a no-op
  const absl::Status restarted = m->Start(absl::Milliseconds(1));
  EXPECT_TRUE(restarted.ok()) << restarted;
  m->Stop();
}

TEST_F(DegradationManagerTest, StartRejectsABadPeriod) {
  auto m = Make();
  for (const absl::Duration bad :
       {absl::ZeroDuration(), absl::Milliseconds(-1), absl::InfiniteDuration(),
        -absl::InfiniteDuration(), absl::Hours(24 * 365 * 300),
        // Issue 13: accepted, then silently polled every 1 ms.
        absl::Nanoseconds(1), absl::Microseconds(50),
        absl::Microseconds(999)}) {
    const absl::Status s = m->Start(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("[1ms, 24h]")) << bad;
  }
  // None of them left a monitor behind.
  const absl::Status s = m->Start(absl::Milliseconds(1));
  EXPECT_TRUE(s.ok()) << s;
}

// What a call from the monitor thread back into its own manager does, from
// a source and from an observer. Regressions (issue 13, re-entrancy): after
// a Stop() made there, the next Start() from another thread said "already
// running" until someone joined the monitor; Stop() then Start() there was
// refused, so a callback could not change the period; PollOnce() from a
// source called that source again without end. Stop() from the monitor
// thread once joined itself and terminated.
TEST_F(DegradationManagerTest, CallsFromTheMonitorThreadIntoItsOwnManager) {
  enum class Where { kSource, kObserver };
  enum class Then { kPolling, kStopped };
  struct Case {
    const char* name;
    Where where;
    std::function<absl::Status(DegradationManager&)> calls;
    absl::StatusCode code;
    Then then;
  };
  const absl::Duration ms = absl::Milliseconds(1);
  const auto stop = [](DegradationManager& m) {
    m.Stop();
    return absl::OkStatus();
  };
  const auto stop_start = [ms](DegradationManager& m) {
    m.Stop();
    return m.Start(ms);
  };
  const auto start = [ms](DegradationManager& m) { return m.Start(ms); };
  const auto poll = [](DegradationManager& m) { return m.PollOnce(); };
  const auto reload = [](DegradationManager& m) {
    return m.Reload(TwoLevels());
  };
  const auto force = [](DegradationManager& m) {
    return m.ForceLevel(1, absl::Hours(1));
  };
  using absl::StatusCode;
  const std::vector<Case> cases = {
      {"source: Stop", Where::kSource, stop, StatusCode::kOk, Then::kStopped},
      {"source: Stop, Start", Where::kSource, stop_start, StatusCode::kOk,
       Then::kPolling},
      {"source: Start while running", Where::kSource, start,
       StatusCode::kFailedPrecondition, Then::kPolling},
      {"source: PollOnce", Where::kSource, poll,
       StatusCode::kFailedPrecondition, Then::kPolling},
      {"source: Reload", Where::kSource, reload, StatusCode::kOk,
       Then::kPolling},
      {"observer: Stop", Where::kObserver, stop, StatusCode::kOk,
       Then::kStopped},
      {"observer: Stop, Start", Where::kObserver, stop_start, StatusCode::kOk,
       Then::kPolling},
      {"observer: PollOnce", Where::kObserver, poll, StatusCode::kOk,
       Then::kPolling},
      {"observer: Reload", Where::kObserver, reload, StatusCode::kOk,
       Then::kPolling},
      {"observer: ForceLevel", Where::kObserver, force, StatusCode::kOk,
       Then::kPolling},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = Make();
    DegradationManager* raw = m.get();
    degrade_tests::TickCounter polls;
    degrade_tests::TickCounter called;
    std::atomic<bool> first{true};
    absl::Status result;  // written before called.Tick(), read after
    const auto call_once = [&] {
      if (!first.exchange(false)) return;
      result = c.calls(*raw);
      called.Tick();
    };
    // 95 moves the level to 3 on the first poll: one observer call.
    m->AddSource("gpu", [&] {
      if (c.where == Where::kSource) call_once();
      polls.Tick();
      return 95.0;
    });
    m->AddObserver([&](const LevelChange&) {
      if (c.where == Where::kObserver) call_once();
    });
    ASSERT_TRUE(m->Start(ms).ok());
    ASSERT_TRUE(called.WaitFor(1));
    EXPECT_EQ(result.code(), c.code) << result;
    if (c.then == Then::kPolling) {
      EXPECT_TRUE(polls.WaitFor(polls.count() + 2)) << "the monitor stopped";
    }
    // Whatever the callback did, the next Start() from here works, without
    // a Stop() first when the callback stopped the monitor.
    if (c.then == Then::kPolling) m->Stop();
    const absl::Status again = m->Start(ms);
    EXPECT_TRUE(again.ok()) << again;
    EXPECT_TRUE(polls.WaitFor(polls.count() + 2));
    m->Stop();
  }
}

TEST_F(DegradationManagerTest, StopRacingStartNeverLeavesTwoMonitors) {
  // Regression: a Start() between Stop()'s flag and its join used to clear
  // the flag for the old thread too, leaving two monitors polling.
  auto m = Make();
  std::atomic<int> polling{0};
  std::atomic<bool> overlapped{false};
  m->AddSource("gpu", [&] {
    if (polling.fetch_add(1) != 0) overlapped = true;
    std::this_thread::yield();
    polling.fetch_sub(1);
    return 1.0;
  });
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(m->Start(absl::Milliseconds(1)).ok());
    std::thread stopper([&m] { m->Stop(); });
    const absl::Status s = m->Start(absl::Milliseconds(1));
    // Either the Stop came first (Start succeeds) or it did not (a monitor
    // is still running); never two.
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kFailedPrecondition)
        << s;
    stopper.join();
    m->Stop();
  }
  EXPECT_FALSE(overlapped.load()) << "two monitors polled at once";
}

TEST_F(DegradationManagerTest, PollWithoutAConfigSaysSo) {
  DegradationManager m(ManagerOptions{});
  m.AddSource("gpu", [] { return 1.0; });
  EXPECT_EQ(m.PollOnce().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DegradationManagerTest, DestructorStopsARunningMonitor) {
  std::atomic<int> polls{0};
  std::promise<void> polled;
  {
    auto m = Make();
    m->AddSource("gpu", [&] {
      if (polls.fetch_add(1) == 0) polled.set_value();
      return 1.0;
    });
    ASSERT_TRUE(m->Start(absl::Milliseconds(1)).ok());
    polled.get_future().wait();
  }  // joins the monitor (a joinable std::thread member would terminate)
  EXPECT_GE(polls.load(), 1);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
