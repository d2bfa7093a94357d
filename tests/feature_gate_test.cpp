// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// FeatureGate, the table of switches gates point into, and the `when`
// combinators built on detail::Guarded: When (keyed on a manager's level,
// degradation_manager.hpp) and WhenEnabled (keyed on a gate). The manager
// tests that need a gate's switch to move use ThreeLevels() on a FakeClock.

#include "degrade/feature_gate.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "degrade/degradation_manager.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::Pair;

class FeatureGateTest : public ManagerTestBase {};
class WhenTest : public ManagerTestBase {};
class WhenEnabledTest : public ManagerTestBase {};

// ---- FeatureGate -----------------------------------------------------------

TEST_F(FeatureGateTest, DefaultGateIsEnabled) {
  const FeatureGate gate;
  EXPECT_TRUE(gate.enabled());
  EXPECT_TRUE(static_cast<bool>(gate));
  EXPECT_TRUE(gate.name().empty());
}

TEST_F(FeatureGateTest, NamesItsFeatureAndSharesItsSwitch) {
  auto m = Make();
  const FeatureGate a = m->Feature("cache_refresh");
  const FeatureGate b = m->Feature("cache_refresh");
  EXPECT_EQ(a.name(), "cache_refresh");
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_FALSE(a.enabled());
  EXPECT_FALSE(b.enabled());
  EXPECT_FALSE(static_cast<bool>(a));
}

// ---- detail::GateTable -----------------------------------------------------

TEST(GateTableTest, ANewSwitchStartsAsAskedAndKeepsItsStateAfterwards) {
  detail::GateTable table;
  const FeatureGate off = table.Get("cache", /*on=*/false);
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.name(), "cache");
  // Asking again returns the same switch; `on` only seeds a new one.
  const FeatureGate again = table.Get("cache", /*on=*/true);
  EXPECT_FALSE(again.enabled());
  EXPECT_TRUE(table.Get("other", /*on=*/true).enabled());
}

TEST(GateTableTest, SetAllFlipsEveryGateAndSnapshotReadsThem) {
  detail::GateTable table;
  const FeatureGate a = table.Get("a", true);
  const FeatureGate b = table.Get("b", true);
  table.SetAll([](const std::string& name) { return name != "a"; });
  EXPECT_FALSE(a.enabled());
  EXPECT_TRUE(b.enabled());
  EXPECT_THAT(table.Snapshot(), ElementsAre(Pair("a", false), Pair("b", true)));
  table.SetAll([](const std::string&) { return true; });
  EXPECT_TRUE(a.enabled());
}

TEST(GateTableTest, GatesStayValidWhileTheTableGrows) {
  detail::GateTable table;
  const FeatureGate first = table.Get("first", false);
  std::vector<FeatureGate> more;
  for (int i = 0; i < 1000; ++i) {
    more.push_back(table.Get(absl::StrCat("feature", i), true));
  }
  EXPECT_FALSE(first.enabled());
  EXPECT_EQ(first.name(), "first");
  table.SetAll([](const std::string& name) { return name == "first"; });
  EXPECT_TRUE(first.enabled());
  EXPECT_FALSE(more.back().enabled());
  EXPECT_EQ(more.back().name(), "feature999");
}

// ---- When ------------------------------------------------------------------

TEST_F(WhenTest, ReturnsTheFallbackValueAtOrAboveItsLevel) {
  auto m = Make();
  int calls = 0;
  auto personalise = When(
      *m, 2,
      [&calls](int user) {
        ++calls;
        return "personal-" + std::to_string(user);
      },
      std::string("generic"));
  EXPECT_EQ(personalise(7), "personal-7");
  ObserveOk(*m, "gpu", 75.0);  // level 1 < 2: still runs
  EXPECT_EQ(personalise(8), "personal-8");
  ObserveOk(*m, "gpu", 85.0);  // level 2: degraded
  EXPECT_EQ(personalise(9), "generic");
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(personalise(9), "generic");
  EXPECT_EQ(calls, 2);
}

TEST_F(WhenTest, ConvertsAValueFallbackToTheResultType) {
  auto m = Make();
  auto greet = When(
      *m, 1, [] { return std::string("hello"); }, "degraded");
  EXPECT_EQ(greet(), "hello");
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_EQ(greet(), "degraded");
}

TEST_F(WhenTest, CallsAFactoryFallbackOnlyWhenDegraded) {
  auto m = Make();
  int f_calls = 0;
  int fallback_calls = 0;
  auto doubled = When(
      *m, 1,
      [&f_calls](int x) {
        ++f_calls;
        return 2 * x;
      },
      [&fallback_calls] {
        ++fallback_calls;
        return -1;
      });
  EXPECT_EQ(doubled(3), 6);
  EXPECT_EQ(doubled(4), 8);
  EXPECT_EQ(fallback_calls, 0);
  ObserveOk(*m, "gpu", 75.0);
  EXPECT_EQ(doubled(3), -1);
  EXPECT_EQ(doubled(4), -1);
  EXPECT_EQ(fallback_calls, 2);
  EXPECT_EQ(f_calls, 2);
}

TEST_F(WhenTest, SkipsVoidFunctionsWhenDegraded) {
  auto m = Make();
  int total = 0;
  auto add = When(*m, 1, [&total](int n) { total += n; });
  add(5);
  EXPECT_EQ(total, 5);
  ObserveOk(*m, "gpu", 75.0);
  add(5);
  EXPECT_EQ(total, 5);
}

TEST_F(WhenTest, ForwardsArguments) {
  auto m = Make();
  auto take = When(
      *m, 3,
      [](std::unique_ptr<int> p, int& out, const std::string& s) {
        out = *p + static_cast<int>(s.size());
        return true;
      },
      false);
  int out = 0;
  EXPECT_TRUE(take(std::make_unique<int>(40), out, std::string("ab")));
  EXPECT_EQ(out, 42);
  ObserveOk(*m, "gpu", 95.0);
  out = 0;
  EXPECT_FALSE(take(std::make_unique<int>(40), out, "ab"));
  EXPECT_EQ(out, 0);
}

// ---- WhenEnabled -----------------------------------------------------------

TEST_F(WhenEnabledTest, FollowsTheGate) {
  auto m = Make();
  int f_calls = 0;
  int fallback_calls = 0;
  auto tag = WhenEnabled(
      m->Feature("ab_tag"),
      [&f_calls](const std::string& id) {
        ++f_calls;
        return id + "#B";
      },
      [&fallback_calls] {
        ++fallback_calls;
        return std::string("untagged");
      });
  EXPECT_EQ(tag("req"), "req#B");
  ObserveOk(*m, "gpu", 75.0);  // level 1 keeps ab_tag
  EXPECT_EQ(tag("req"), "req#B");
  ObserveOk(*m, "gpu", 85.0);  // level 2 switches it off
  EXPECT_EQ(tag("req"), "untagged");
  EXPECT_EQ(f_calls, 2);
  EXPECT_EQ(fallback_calls, 1);

  int logged = 0;
  auto debug = WhenEnabled(m->Feature("debug_log"), [&logged] { ++logged; });
  debug();
  EXPECT_EQ(logged, 0);
  auto always = WhenEnabled(
      FeatureGate(), [](int x) { return x + 1; }, 0);
  EXPECT_EQ(always(1), 2);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
