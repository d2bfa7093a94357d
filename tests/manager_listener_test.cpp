// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of manager_listener.hpp: the events' and stats' defaults, a
// listener's defaults, and a manager's view read as the StatsView it is
// (name, live stats) plus its own-log flag, with a reload applied and one
// refused arriving at the listener.

#include "degrade/manager_listener.hpp"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(ManagerListenerTest, Defaults) {
  const ManagerStats st;
  EXPECT_EQ(st.level, 0);
  EXPECT_EQ(st.control_version, 0u);
  EXPECT_EQ(st.control_until, absl::InfinitePast());
  EXPECT_TRUE(st.transitions.empty());
  const ReloadEvent reload;
  EXPECT_FALSE(reload.applied);
  EXPECT_TRUE(reload.error.ok());
  const OverrideExpiredEvent expired;
  EXPECT_TRUE(expired.note.empty());
  ManagerListener listener;
  EXPECT_FALSE(listener.writes_lines());
  listener.OnReload(reload);  // no-ops, callable
  listener.OnPollError(PollErrorEvent{});
}

struct Recorder : Telemetry {
  struct Listener : ManagerListener {
    explicit Listener(Recorder* r) : r(r) {}
    void OnReload(const ReloadEvent& e) override {
      r->reloads.push_back(e.applied);
      r->errors.push_back(e.error);
    }
    Recorder* r;
  };
  std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& view) override {
    this->view = &view;
    own_log = view.has_own_log();
    return std::make_unique<Listener>(this);
  }
  const ManagerView* view = nullptr;
  bool own_log = false;
  std::vector<bool> reloads;
  std::vector<absl::Status> errors;
};

TEST(ManagerListenerTest, TheViewIsAStatsViewOfTheLiveManager) {
  FakeClock clock;
  Recorder recorder;
  ManagerOptions o;
  o.name = "inference";
  o.clock = &clock;
  o.metrics = &recorder;
  o.log_sink = [](absl::string_view) {};
  DegradationManager m(o);
  ASSERT_NE(recorder.view, nullptr);
  EXPECT_TRUE(recorder.own_log);  // it has a log_sink

  const StatsView<ManagerStats>& stats_view = *recorder.view;
  EXPECT_EQ(stats_view.name(), "inference");
  EXPECT_EQ(stats_view.stats().num_levels, 0);

  ASSERT_TRUE(m.Reload(ThreeLevels()).ok());
  EXPECT_FALSE(m.Reload(DegradationConfig{}).ok());  // no levels: refused
  ASSERT_TRUE(m.Observe("gpu", 75).ok());
  const ManagerStats st = stats_view.stats();
  EXPECT_EQ(st.num_levels, 3);
  EXPECT_EQ(st.level, 1);
  EXPECT_EQ(st.reloads, 1u);
  EXPECT_EQ(st.rejected_reloads, 1u);
  ASSERT_EQ(recorder.reloads, (std::vector<bool>{true, false}));
  EXPECT_EQ(recorder.errors[1].code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManagerListenerTest, WithoutASinkTheViewSaysSo) {
  Recorder recorder;
  const ScopedDefaultTelemetry scope(&recorder);
  ManagerOptions o;
  o.name = "quiet";
  DegradationManager m(o);  // the default telemetry
  ASSERT_NE(recorder.view, nullptr);
  EXPECT_FALSE(recorder.own_log);
  EXPECT_EQ(recorder.view->name(), "quiet");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
