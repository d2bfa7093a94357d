// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The manager's event fan-out (detail/levels/manager_notifier.hpp) without
// a manager: which of its own lines, the telemetry's listener and the
// observers hear each event, in which order, and where the own lines go.

#include "degrade/detail/levels/manager_notifier.hpp"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/levels/manager_event.hpp"
#include "degrade/level_change.hpp"
#include "degrade/manager_listener.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace levels {
namespace DEGRADE_TEST_UNIT {

class StubView final : public ManagerView {
 public:
  const std::string& name() const override { return name_; }
  ManagerStats stats() const override { return {}; }
  bool has_own_log() const override { return false; }

 private:
  const std::string name_ = "m";
};

// Hands out a listener that records into `heard` and says whether it
// writes lines.
class RecordingTelemetry final : public Telemetry {
 public:
  RecordingTelemetry(std::vector<std::string>* heard, bool writes)
      : heard_(heard), writes_(writes) {}
  std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& manager) override {
    (void)manager;
    return std::make_unique<Listener>(heard_, writes_);
  }

 private:
  class Listener final : public ManagerListener {
   public:
    Listener(std::vector<std::string>* heard, bool writes)
        : heard_(heard), writes_(writes) {}
    bool writes_lines() const override { return writes_; }
    void OnLevelChange(const LevelChange& c) override {
      heard_->push_back(absl::StrCat("telemetry ", c.to));
    }
    void OnReload(const ReloadEvent& e) override {
      heard_->push_back(absl::StrCat("telemetry reload ", e.levels));
    }

   private:
    std::vector<std::string>* heard_;
    bool writes_;
  };
  std::vector<std::string>* heard_;
  bool writes_;
};

const absl::Time kT = absl::FromUnixSeconds(1700000000);

ManagerEvent Change(int to) {
  LevelChange c;
  c.time = kT;
  c.manager = "m";
  c.to = to;
  return ManagerEvent(c);
}

struct Fixture {
  explicit Fixture(Telemetry* metrics, bool with_sink = true) {
    std::function<void(absl::string_view)> sink;
    if (with_sink) {
      sink = [this](absl::string_view line) {
        heard.push_back(absl::StrCat(
            "line ", absl::StrContains(line, "level_change") ? "level_change"
                                                             : "other"));
      };
    }
    notifier.Open(metrics, view, "m", std::move(sink), &clock, 5);
  }
  std::vector<std::string> heard;
  FakeClock clock{kT};
  StubView view;
  ManagerNotifier notifier;
};

TEST(ManagerNotifierTest, OwnLinesThenTelemetryThenObserversInOrder) {
  std::vector<std::string> heard;
  RecordingTelemetry telemetry(&heard, /*writes=*/false);
  Fixture f(&telemetry);
  f.notifier.AddObserver(
      [&](const LevelChange& c) { heard.push_back(absl::StrCat("a ", c.to)); });
  f.notifier.AddObserver(
      [&](const LevelChange& c) { heard.push_back(absl::StrCat("b ", c.to)); });
  f.notifier.Push(Change(2));
  f.notifier.Push(ManagerEvent::Reloaded("m", kT, 3, 2));
  f.notifier.Push(Change(1));
  EXPECT_TRUE(heard.empty());  // nothing before Dispatch()
  EXPECT_TRUE(f.heard.empty());
  f.notifier.Dispatch();
  // The own lines went to the fixture's sink, the rest here; merge by
  // event: each event's line is written before its listeners run.
  EXPECT_EQ(f.heard,
            (std::vector<std::string>{"line level_change", "line other",
                                      "line level_change"}));
  EXPECT_EQ(heard, (std::vector<std::string>{"telemetry 2", "a 2", "b 2",
                                             "telemetry reload 3",
                                             "telemetry 1", "a 1", "b 1"}));
}

TEST(ManagerNotifierTest, AThrowingObserverSilencesNoOther) {
  Fixture f(NoTelemetry());
  std::vector<int> heard;
  f.notifier.AddObserver(
      [](const LevelChange&) { throw std::runtime_error("observer"); });
  f.notifier.AddObserver([&](const LevelChange& c) { heard.push_back(c.to); });
  f.notifier.Push(Change(3));
  f.notifier.Dispatch();
  EXPECT_EQ(heard, (std::vector<int>{3}));
}

TEST(ManagerNotifierTest, AnObserverAddedByAnObserverHearsTheNextChange) {
  Fixture f(NoTelemetry());
  std::vector<std::string> heard;
  bool added = false;
  f.notifier.AddObserver([&](const LevelChange& c) {
    heard.push_back(absl::StrCat("first ", c.to));
    if (added) return;
    added = true;
    f.notifier.AddObserver([&](const LevelChange& c2) {
      heard.push_back(absl::StrCat("late ", c2.to));
    });
  });
  f.notifier.Push(Change(1));
  f.notifier.Dispatch();
  f.notifier.Push(Change(2));
  f.notifier.Dispatch();
  EXPECT_EQ(heard, (std::vector<std::string>{"first 1", "first 2", "late 2"}));
}

TEST(ManagerNotifierTest, NoOwnLinesWhenTheTelemetryWritesThemAndNoSink) {
  // Without a sink the own lines would go to stderr; a telemetry that
  // writes lines takes that job.
  std::vector<std::string> heard;
  RecordingTelemetry telemetry(&heard, /*writes=*/true);
  Fixture f(&telemetry, /*with_sink=*/false);
  f.notifier.Push(Change(1));
  testing::internal::CaptureStderr();
  f.notifier.Dispatch();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(heard, (std::vector<std::string>{"telemetry 1"}));
}

TEST(ManagerNotifierTest, ASinkGetsTheLinesEvenWhenTheTelemetryWritesToo) {
  std::vector<std::string> heard;
  RecordingTelemetry telemetry(&heard, /*writes=*/true);
  Fixture f(&telemetry);
  f.notifier.Push(Change(1));
  f.notifier.Dispatch();
  EXPECT_EQ(f.heard, (std::vector<std::string>{"line level_change"}));
  EXPECT_EQ(heard, (std::vector<std::string>{"telemetry 1"}));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace levels
}  // namespace detail
}  // namespace degrade
