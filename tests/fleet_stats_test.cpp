// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of fleet_stats.hpp: the defaults and names, and that a FleetControl
// and both file watchers offer their views to the telemetry they are built
// with through AttachComponent (narrowed with As<S>(), never to another
// stats type), to the process default when none is named, to nothing with
// NoTelemetry(), and detach when destroyed. The etcd watcher's offer is
// tested in tests/etcd/etcd_watcher_test.cpp (it needs cpp-httplib).

#include "degrade/fleet_stats.hpp"

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/config_watcher.hpp"
#include "degrade/control_watcher.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "support/process_defaults.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(FleetStatsTest, DefaultsSayNothingHappened) {
  const FleetControlStats f;
  EXPECT_EQ(f.version, 0u);
  EXPECT_EQ(f.version_in_force, 0u);
  EXPECT_FALSE(f.in_force());
  EXPECT_EQ(f.expires_at, absl::InfinitePast());
  EXPECT_EQ(f.accepted, 0u);
  EXPECT_EQ(f.refused_total(), 0u);

  const FileWatcherStats w;
  EXPECT_EQ(w.polls, 0u);
  EXPECT_TRUE(w.last_poll_ok);
  EXPECT_EQ(w.last_success, absl::InfinitePast());
  EXPECT_EQ(w.since_success, absl::InfiniteDuration());

  const EtcdWatcherStats e;
  EXPECT_EQ(e.state, EtcdWatcherState::kStarting);
  EXPECT_EQ(e.outages, 0u);
  EXPECT_EQ(e.last_revision, 0);
}

TEST(FleetStatsTest, NamesAreTheLabelsTheDocsList) {
  EXPECT_EQ(ControlRefusalName(ControlRefusal::kMalformed), "malformed");
  EXPECT_EQ(ControlRefusalName(ControlRefusal::kStale), "stale");
  EXPECT_EQ(ControlRefusalName(ControlRefusal::kUnknownTarget),
            "unknown_target");
  EXPECT_EQ(ControlRefusalName(ControlRefusal::kInvalid), "invalid");
  EXPECT_EQ(ControlRefusalName(ControlRefusal::kInstallFailed),
            "install_failed");
  EXPECT_EQ(WatchedDocumentName(WatchedDocument::kConfig), "config");
  EXPECT_EQ(WatchedDocumentName(WatchedDocument::kControl), "control");
  EXPECT_EQ(EtcdWatcherStateName(EtcdWatcherState::kOutage), "outage");
  EXPECT_EQ(static_cast<int>(EtcdWatcherState::kOutage), 3);
}

TEST(FleetStatsTest, RefusedReadsEachReasonAndSumsThem) {
  FleetControlStats f;
  f.refused_malformed = 1;
  f.refused_stale = 2;
  f.refused_unknown_target = 3;
  f.refused_invalid = 4;
  f.refused_install_failed = 5;
  EXPECT_EQ(f.refused(ControlRefusal::kUnknownTarget), 3u);
  EXPECT_EQ(f.refused_total(), 15u);
}

// Keeps the last view offered, and forgets it when its attachment dies.
class Spy : public Telemetry {
 public:
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& view) override {
    this->view = &view;
    name = view.name();  // the view is readable inside Attach
    return std::make_unique<Detach>(this);
  }
  const ComponentView* view = nullptr;
  std::string name;
  int detached = 0;

 private:
  struct Detach : TelemetryAttachment {
    explicit Detach(Spy* spy) : spy(spy) {}
    ~Detach() override {
      spy->view = nullptr;
      ++spy->detached;
    }
    Spy* spy;
  };
};

TEST(FleetStatsTest, AFleetControlOffersItsView) {
  FakeClock clock;
  Spy spy;
  {
    FleetControl::Options o;
    o.clock = &clock;
    o.name = "svc";
    o.metrics = &spy;
    o.log_sink = [](absl::string_view) {};
    FleetControl control(std::move(o));
    ASSERT_NE(spy.view, nullptr);
    EXPECT_EQ(spy.name, "svc");
    EXPECT_EQ(spy.view->As<FileWatcherStats>(), nullptr);
    const FleetControlView* v = spy.view->As<FleetControlStats>();
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(control.Apply("{", "test").code() ==
                absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(v->stats().refused_malformed, 1u);
  }
  EXPECT_EQ(spy.view, nullptr);
  EXPECT_EQ(spy.detached, 1);
}

TEST(FleetStatsTest, FileWatchersOfferTheirViewsNamedByPathByDefault) {
  Spy spy;
  DegradationManager manager;
  FleetControl::Options fo;
  fo.metrics = NoTelemetry();
  FleetControl control(std::move(fo));
  {
    ConfigFileWatcherOptions o;
    o.metrics = &spy;
    ConfigFileWatcher w("/nonexistent/degrade.json", &manager, std::move(o));
    ASSERT_NE(spy.view, nullptr);
    EXPECT_EQ(spy.name, "/nonexistent/degrade.json");
    const FileWatcherView* v = spy.view->As<FileWatcherStats>();
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->stats().document, WatchedDocument::kConfig);
  }
  EXPECT_EQ(spy.view, nullptr);
  {
    ControlFileWatcherOptions o;
    o.metrics = &spy;
    o.name = "control";
    ControlFileWatcher w("/nonexistent/control.json", &control, std::move(o));
    ASSERT_NE(spy.view, nullptr);
    EXPECT_EQ(spy.name, "control");
    const FileWatcherView* v = spy.view->As<FileWatcherStats>();
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->stats().document, WatchedDocument::kControl);
  }
  EXPECT_EQ(spy.detached, 2);
}

TEST(FleetStatsTest, NullIsTheDefaultAndNoTelemetryIsNone) {
  Spy spy;
  degrade_tests::DefaultTelemetryGuard guard(&spy);
  FleetControl::Options o;
  o.metrics = NoTelemetry();
  FleetControl quiet(o);
  EXPECT_EQ(spy.view, nullptr);
  o.metrics = nullptr;  // the default
  FleetControl observed(o);
  EXPECT_NE(spy.view, nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
