// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// ControlFileWatcher: a missing file is "no incident" (OK, nothing forced);
// a document appears and is applied; the same content is not re-applied;
// a bad or older document is reported once and what was in force stays; the
// file removed lifts only the document it put in force; and the background
// thread follows a file written by rename (a ConfigMap's swap).

#include "degrade/control_watcher.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/fleet_control.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

class ControlWatcherTest : public ManagerTestBase {
 protected:
  void SetUp() override {
    manager_ = Make();
    FleetControl::Options o;
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view l) {
      control_lines_.emplace_back(l);
    };
    control_ = std::make_unique<FleetControl>(std::move(o));
    ASSERT_TRUE(control_->AddManager(manager_.get()).ok());
    path_ = dir_.Path("control.json");
  }

  std::string Doc(uint64_t version, int level) {
    return absl::StrCat(
        R"({"degrade_control": {"version": )", version, R"(, "expires_at": ")",
        absl::FormatTime(absl::RFC3339_full, clock_.Now() + absl::Minutes(30),
                         absl::UTCTimeZone()),
        R"(", "reason": "INC-7", "managers": {"inference": {"level": )", level,
        "}}}}");
  }

  degrade_tests::TempDir dir_{"degrade_control"};
  std::string path_;
  std::unique_ptr<DegradationManager> manager_;
  std::unique_ptr<FleetControl> control_;
  std::vector<std::string> control_lines_;
};

TEST_F(ControlWatcherTest, FollowsTheFileFromAbsentToAppliedToRemoved) {
  ControlFileWatcher w(path_, control_.get());
  EXPECT_TRUE(w.PollOnce().ok());  // no file: no incident
  EXPECT_EQ(manager_->level(), 0);

  degrade_tests::WriteByRename(path_, Doc(3, 2));
  ASSERT_TRUE(w.PollOnce().ok());
  EXPECT_EQ(manager_->level(), 2);
  EXPECT_EQ(w.applied(), 1u);
  ASSERT_TRUE(w.PollOnce().ok());  // unchanged: not applied again
  EXPECT_EQ(w.applied(), 1u);
  EXPECT_EQ(control_->applied(), 1u);

  // A bad document: refused once, and the one in force keeps serving.
  degrade_tests::WriteByRename(path_,
                               R"({"degrade_control": {"version": "4"}})");
  absl::Status s = w.PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path_));
  EXPECT_EQ(w.PollOnce(), s);  // the same outcome, not a new error
  EXPECT_EQ(w.errors(), 1u);
  EXPECT_EQ(control_->refused(), 1u);
  EXPECT_EQ(manager_->level(), 2);

  // An older one: refused too.
  degrade_tests::WriteByRename(path_, Doc(2, 3));
  EXPECT_EQ(w.PollOnce().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(manager_->level(), 2);

  // Removed: the document it carried is lifted; the floor stays.
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  EXPECT_TRUE(w.PollOnce().ok());
  EXPECT_FALSE(control_->in_force().has_value());
  EXPECT_EQ(control_->version(), 3u);
  EXPECT_TRUE(w.last_status().ok());
}

TEST_F(ControlWatcherTest, RemovingTheFileLeavesADocumentFromElsewhere) {
  ControlFileWatcher w(path_, control_.get());
  degrade_tests::WriteByRename(path_, Doc(1, 1));
  ASSERT_TRUE(w.PollOnce().ok());
  // A newer document arrives from another source (an etcd watch).
  ASSERT_TRUE(control_->Apply(Doc(2, 3), "etcd: /svc/control").ok());
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  EXPECT_TRUE(w.PollOnce().ok());
  ASSERT_TRUE(control_->in_force().has_value());
  EXPECT_EQ(control_->in_force()->version, 2u);
  EXPECT_EQ(manager_->level(), 3);
}

// A document from another source landing between the file's Apply() and
// the watcher's bookkeeping (here from the log sink of the file's apply,
// which runs on the watcher's thread after the apply) is not the file's to
// lift.
TEST_F(ControlWatcherTest, TheFileLiftsOnlyTheVersionItApplied) {
  FleetControl* fc = nullptr;
  bool pushed = false;
  FleetControl::Options o;
  o.clock = &clock_;
  o.log_sink = [&](absl::string_view line) {
    if (!pushed && absl::StrContains(line, R"("version":1)")) {
      pushed = true;
      EXPECT_TRUE(fc->Apply(Doc(2, 3), "etcd: /svc/control").ok());
    }
  };
  FleetControl control(std::move(o));
  fc = &control;
  DegradationManager other(Options("inference"));
  ASSERT_TRUE(other.Reload(ThreeLevels()).ok());
  ASSERT_TRUE(control.AddManager(&other).ok());
  ControlFileWatcher w(path_, &control);
  degrade_tests::WriteByRename(path_, Doc(1, 1));
  ASSERT_TRUE(w.PollOnce().ok());
  ASSERT_TRUE(pushed);
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  EXPECT_TRUE(w.PollOnce().ok());
  ASSERT_TRUE(control.in_force().has_value());
  EXPECT_EQ(control.in_force()->version, 2u);
}

TEST_F(ControlWatcherTest, AnUnreadablePathIsReportedOnce) {
  ControlFileWatcher w(dir_.Path(""), control_.get());  // a directory
  const absl::Status s = w.PollOnce();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("control file"));
  EXPECT_EQ(w.PollOnce().code(), s.code());
  EXPECT_EQ(w.errors(), 1u);
}

TEST_F(ControlWatcherTest, TheBackgroundThreadAppliesARenamedFile) {
  absl::Notification raised;
  manager_->AddObserver([&](const LevelChange& c) {
    if (c.to == 2 && !raised.HasBeenNotified()) raised.Notify();
  });
  ControlFileWatcher w(path_, control_.get());
  EXPECT_EQ(w.Start(absl::ZeroDuration()).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(w.Start(absl::Milliseconds(5)).ok());
  degrade_tests::WriteByRename(path_, Doc(1, 2));
  EXPECT_TRUE(raised.WaitForNotificationWithTimeout(absl::Seconds(30)));
  w.Stop();
  EXPECT_EQ(manager_->level(), 2);
}

// Issue 29: a missing control file is a success (no incident), a refused
// document an error the FleetControl counts under its reason, and the last
// success is timed on the watcher's clock.
TEST_F(ControlWatcherTest, StatsCountReloadsErrorsAndAMissingFileAsSuccess) {
  ControlFileWatcherOptions o;
  o.clock = &clock_;
  o.name = "incident";
  o.metrics = NoTelemetry();
  ControlFileWatcher w(path_, control_.get(), o);
  EXPECT_EQ(w.name(), "incident");
  ASSERT_TRUE(w.PollOnce().ok());  // no file: no incident, a success
  FileWatcherStats s = w.stats();
  EXPECT_EQ(s.document, WatchedDocument::kControl);
  EXPECT_EQ(s.polls, 1u);
  EXPECT_EQ(s.errors, 0u);
  EXPECT_TRUE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, clock_.Now());

  clock_.Advance(absl::Seconds(3));
  degrade_tests::WriteByRename(path_, Doc(3, 2));
  ASSERT_TRUE(w.PollOnce().ok());
  const absl::Time applied = clock_.Now();
  degrade_tests::WriteByRename(path_, Doc(2, 1));  // older: refused, stale
  EXPECT_FALSE(w.PollOnce().ok());
  clock_.Advance(absl::Seconds(4));
  s = w.stats();
  EXPECT_EQ(s.reloads, 1u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_FALSE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, applied);
  EXPECT_EQ(s.since_success, absl::Seconds(4));
  EXPECT_EQ(control_->stats().refused_stale, 1u);
  EXPECT_EQ(control_->stats().version_in_force, 3u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
