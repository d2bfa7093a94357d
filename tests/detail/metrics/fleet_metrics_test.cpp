// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/metrics/fleet_metrics.hpp through
// MetricsRegistry::AttachComponent: a real FleetControl and both file
// watchers register themselves under the exact series names and labels
// docs/metrics.md lists, and their series disappear when they are
// destroyed; the etcd watcher's series, from a fake view (this test needs
// no cpp-httplib, as the writer does not).

#include "degrade/detail/metrics/fleet_metrics.hpp"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/config_watcher.hpp"
#include "degrade/control_watcher.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/event_log.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/metrics_registry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

EventLogOptions Quiet() {
  EventLogOptions o;
  o.sink = [](absl::string_view) {};
  return o;
}

std::string Doc(uint64_t version, absl::Time expires_at,
                absl::string_view extra = "") {
  return absl::StrCat(
      R"({"degrade_control": {"version": )", version, R"(, "expires_at": ")",
      absl::FormatTime(absl::RFC3339_full, expires_at, absl::UTCTimeZone()),
      R"(", "reason": "INC-9")", extra, "}}");
}

TEST(FleetMetricsTest, AFleetControlExportsVersionExpiryAndRefusalsByReason) {
  MetricsRegistry registry(Quiet());
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto control = std::make_unique<FleetControl>([&] {
    FleetControl::Options o;
    o.clock = &clock;
    o.name = "svc";
    o.metrics = &registry;
    o.log_sink = [](absl::string_view) {};
    return o;
  }());
  const absl::Time end = clock.Now() + absl::Minutes(30);
  ASSERT_TRUE(control->Apply(Doc(5, end), "t").ok());
  EXPECT_FALSE(control->Apply(Doc(4, end), "t").ok());  // stale
  EXPECT_FALSE(control->Apply("{", "t").ok());          // malformed
  EXPECT_FALSE(
      control
          ->Apply(Doc(6, end, R"(, "managers": {"nope": {"level": 1}})"), "t")
          .ok());  // unknown_target

  const std::string text = registry.RenderPrometheus();
  const std::string l = R"({fleet_control="svc")";
  EXPECT_THAT(
      text,
      AllOf(
          HasSubstr("# TYPE degrade_fleet_version gauge"),
          HasSubstr("degrade_fleet_version" + l + "} 5\n"),
          HasSubstr("degrade_fleet_version_floor" + l + "} 5\n"),
          HasSubstr("degrade_fleet_in_force" + l + "} 1\n"),
          HasSubstr("degrade_fleet_expires_at_seconds" + l + "} 1700001800\n"),
          HasSubstr("# TYPE degrade_fleet_documents_accepted_total counter"),
          HasSubstr("degrade_fleet_documents_accepted_total" + l + "} 1\n"),
          HasSubstr("degrade_fleet_documents_repeated_total" + l + "} 0\n"),
          HasSubstr("degrade_fleet_lifts_total" + l + "} 0\n")));
  const std::string r = "degrade_fleet_documents_refused_total" + l;
  EXPECT_THAT(text, AllOf(HasSubstr(r + R"(,reason="malformed"} 1)"),
                          HasSubstr(r + R"(,reason="stale"} 1)"),
                          HasSubstr(r + R"(,reason="unknown_target"} 1)"),
                          HasSubstr(r + R"(,reason="invalid"} 0)"),
                          HasSubstr(r + R"(,reason="install_failed"} 0)")));

  // Expired: nothing in force, the floor stays.
  clock.Advance(absl::Minutes(31));
  EXPECT_THAT(
      registry.RenderPrometheus(),
      AllOf(HasSubstr("degrade_fleet_version" + l + "} 0\n"),
            HasSubstr("degrade_fleet_version_floor" + l + "} 5\n"),
            HasSubstr("degrade_fleet_in_force" + l + "} 0\n"),
            HasSubstr("degrade_fleet_expires_at_seconds" + l + "} 0\n")));

  control.reset();
  EXPECT_THAT(registry.RenderPrometheus(), Not(HasSubstr("degrade_fleet_")));
}

TEST(FleetMetricsTest, BothFileWatchersShareOneFamilyByDocument) {
  MetricsRegistry registry(Quiet());
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  degrade_tests::TempDir dir("degrade_fleet_metrics");
  DegradationManager::Options mo;
  mo.metrics = NoTelemetry();
  mo.log_sink = [](absl::string_view) {};
  DegradationManager manager(mo);
  FleetControl::Options fo;
  fo.metrics = NoTelemetry();
  FleetControl control(fo);

  ConfigFileWatcherOptions co;
  co.name = "cfg";
  co.clock = &clock;
  co.metrics = &registry;
  auto config = std::make_unique<ConfigFileWatcher>(dir.Path("missing.json"),
                                                    &manager, co);
  ControlFileWatcherOptions xo;
  xo.name = "ctl";
  xo.clock = &clock;
  xo.metrics = &registry;
  auto ctl = std::make_unique<ControlFileWatcher>(dir.Path("control.json"),
                                                  &control, xo);
  const std::string cfg = R"({watcher="cfg",document="config"})";
  const std::string c = R"({watcher="ctl",document="control"})";
  // Before any poll: never succeeded.
  EXPECT_THAT(
      registry.RenderPrometheus(),
      AllOf(HasSubstr("degrade_file_watcher_last_success_age_seconds" + cfg +
                      " +Inf\n"),
            HasSubstr("degrade_file_watcher_last_success_timestamp_seconds" +
                      cfg + " 0\n")));

  EXPECT_FALSE(config->PollOnce().ok());  // missing config: an error
  EXPECT_TRUE(ctl->PollOnce().ok());      // missing control: no incident
  clock.Advance(absl::Seconds(7));
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(
      text,
      AllOf(HasSubstr("# TYPE degrade_file_watcher_polls_total counter"),
            HasSubstr("degrade_file_watcher_polls_total" + cfg + " 1\n"),
            HasSubstr("degrade_file_watcher_reloads_total" + cfg + " 0\n"),
            HasSubstr("degrade_file_watcher_errors_total" + cfg + " 1\n"),
            HasSubstr("degrade_file_watcher_last_poll_ok" + cfg + " 0\n"),
            HasSubstr("degrade_file_watcher_last_success_age_seconds" + cfg +
                      " +Inf\n")));
  EXPECT_THAT(
      text,
      AllOf(HasSubstr("degrade_file_watcher_polls_total" + c + " 1\n"),
            HasSubstr("degrade_file_watcher_errors_total" + c + " 0\n"),
            HasSubstr("degrade_file_watcher_last_poll_ok" + c + " 1\n"),
            HasSubstr("degrade_file_watcher_last_success_timestamp_seconds" +
                      c + " 1700000000\n"),
            HasSubstr("degrade_file_watcher_last_success_age_seconds" + c +
                      " 7\n")));

  config.reset();
  ctl.reset();
  EXPECT_THAT(registry.RenderPrometheus(),
              Not(HasSubstr("degrade_file_watcher_")));
}

class FakeEtcdWatcher final : public EtcdWatcherView {
 public:
  const std::string& name() const override { return name_; }
  EtcdWatcherStats stats() const override { return st; }
  EtcdWatcherStats st;

 private:
  std::string name_ = "/svc/";
};

TEST(FleetMetricsTest, AnEtcdWatcherExportsItsStateOutagesAndRevision) {
  MetricsRegistry registry(Quiet());
  auto view = std::make_unique<FakeEtcdWatcher>();
  view->st.state = EtcdWatcherState::kOutage;
  view->st.resyncs = 4;
  view->st.outages = 2;
  view->st.reconnects = 3;
  view->st.cluster_changes = 1;
  view->st.last_revision = 812;
  auto attachment = registry.AttachComponent(*view);
  ASSERT_NE(attachment, nullptr);
  const std::string l = R"({watcher="/svc/"})";
  EXPECT_THAT(
      registry.RenderPrometheus(),
      AllOf(
          HasSubstr("# TYPE degrade_etcd_watcher_state gauge"),
          HasSubstr("degrade_etcd_watcher_state" + l + " 3\n"),
          HasSubstr("degrade_etcd_watcher_resyncs_total" + l + " 4\n"),
          HasSubstr("degrade_etcd_watcher_outages_total" + l + " 2\n"),
          HasSubstr("degrade_etcd_watcher_reconnects_total" + l + " 3\n"),
          HasSubstr("degrade_etcd_watcher_compactions_total" + l + " 0\n"),
          HasSubstr("degrade_etcd_watcher_cluster_changes_total" + l + " 1\n"),
          HasSubstr("degrade_etcd_watcher_events_total" + l + " 0\n"),
          HasSubstr("degrade_etcd_watcher_values_refused_total" + l + " 0\n"),
          HasSubstr("degrade_etcd_watcher_callback_errors_total" + l + " 0\n"),
          HasSubstr("degrade_etcd_watcher_last_revision" + l + " 812\n")));
  attachment.reset();
  EXPECT_THAT(registry.RenderPrometheus(),
              Not(HasSubstr("degrade_etcd_watcher_")));
}

TEST(FleetMetricsTest, AnUnknownStatsTypeIsNotExported) {
  struct OtherStats {
    int n = 0;
  };
  class Other final : public StatsView<OtherStats> {
   public:
    const std::string& name() const override { return name_; }
    OtherStats stats() const override { return {}; }

   private:
    std::string name_ = "x";
  };
  MetricsRegistry registry(Quiet());
  Other other;
  EXPECT_EQ(registry.AttachComponent(other), nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
