// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Helpers shared by the tests that drive a DegradationManager on a FakeClock
// (degradation_manager_test, feature_gate_test, signals_test): the
// three-level config they all use, and a fixture base that makes a manager
// with it, capturing its log lines and level changes.

#ifndef DEGRADE_TESTS_MANAGER_TEST_UTIL_HPP_
#define DEGRADE_TESTS_MANAGER_TEST_UTIL_HPP_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gtest/gtest.h"

namespace degrade {

// Three levels on `gpu` (70 / 80 / 90), level 2 also on `queue` (200).
// recover_ratio 0.5 gives exact recover thresholds: 35 / 40 (queue 100) / 45.
// Level 1 disables cache_refresh, level 2 debug_log and ab_tag, level 3
// everything but the critical auth and ranking.
inline DegradationConfig ThreeLevels() {
  DegradationConfig c;
  c.name = "inference";
  c.recover_ratio = 0.5;
  c.hold = absl::Seconds(60);
  LevelSpec l1;
  l1.name = "level1";
  l1.enter = {{"gpu", 70.0}};
  l1.disable = {"cache_refresh"};
  LevelSpec l2;
  l2.name = "level2";
  l2.enter = {{"gpu", 80.0}, {"queue", 200.0}};
  l2.disable = {"debug_log", "ab_tag"};
  LevelSpec l3;
  l3.name = "level3";
  l3.enter = {{"gpu", 90.0}};
  l3.disable = {std::string(kAllNonCritical)};
  c.levels = {l1, l2, l3};
  c.critical = {"auth", "ranking"};
  return c;
}

// A fixture base: managers on `clock_`, their log lines in `lines_` and the
// level changes Make() observes in `changes_`.
class ManagerTestBase : public ::testing::Test {
 protected:
  ManagerOptions Options(std::string name = "inference") {
    ManagerOptions o;
    o.name = std::move(name);
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view line) { lines_.emplace_back(line); };
    return o;
  }

  // A manager with `config` installed and an observer recording changes_.
  std::unique_ptr<DegradationManager> Make(
      DegradationConfig config = ThreeLevels(),
      std::string name = "inference") {
    auto m = std::make_unique<DegradationManager>(Options(std::move(name)));
    const absl::Status s = m->Reload(std::move(config));
    EXPECT_TRUE(s.ok()) << s;
    m->AddObserver([this](const LevelChange& c) { changes_.push_back(c); });
    return m;
  }

  void ObserveOk(DegradationManager& m, absl::string_view signal,
                 double value) {
    const absl::Status s = m.Observe(signal, value);
    ASSERT_TRUE(s.ok()) << s;
  }

  FakeClock clock_;
  std::vector<std::string> lines_;
  std::vector<LevelChange> changes_;
};

}  // namespace degrade

#endif  // DEGRADE_TESTS_MANAGER_TEST_UTIL_HPP_
