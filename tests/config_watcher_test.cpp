// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// config_watcher.hpp: ReloadJson keeps the last good config serving, and the
// file watcher under in-place writes, rename-over, ConfigMap symlink swaps
// and deletion. No test sleeps: the watcher is driven with PollOnce(), and
// the threaded tests (a background poller racing readers; request threads
// reading gates while good and bad files replace each other) assert
// invariants only.

#include "degrade/config_watcher.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/config_samples.hpp"
#include "support/temp_files.hpp"
#include "support/tick_counter.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::kArticleJson;
using ::degrade_tests::kLevel1;
using ::degrade_tests::Level1Gpu;
using ::degrade_tests::Levels;
using ::degrade_tests::OneLevelJson;
using ::degrade_tests::WriteByRename;
using ::degrade_tests::WriteInPlace;
using ::testing::HasSubstr;

// A fresh directory for this file's tests.
class TempDir : public ::degrade_tests::TempDir {
 public:
  TempDir() : ::degrade_tests::TempDir("degrade_config_watcher_test") {}
};

// ---- ReloadJson: the last good config keeps serving ------------------------

class ReloadJsonTest : public ::testing::Test {
 protected:
  DegradationManager::Options Options() {
    DegradationManager::Options o;
    o.name = "inference";
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view line) { log_.emplace_back(line); };
    return o;
  }

  FakeClock clock_;
  std::vector<std::string> log_;
};

TEST_F(ReloadJsonTest, GoodConfigApplies) {
  DegradationManager manager(Options());
  ASSERT_TRUE(ReloadJson(manager, kArticleJson, "svc.json").ok());
  EXPECT_EQ(manager.num_levels(), 3);
  EXPECT_EQ(manager.reloads(), 1u);
  EXPECT_EQ(manager.rejected_reloads(), 0u);
  ASSERT_NE(manager.config(), nullptr);
  EXPECT_EQ(manager.config()->levels[1].enter.at("gpu_util"), 0.95);
}

TEST_F(ReloadJsonTest, BadConfigKeepsTheOldOneServing) {
  DegradationManager manager(Options());
  ASSERT_TRUE(ReloadJson(manager, kArticleJson, "svc.json").ok());
  ASSERT_TRUE(manager.Observe("gpu_util", 0.9).ok());  // level 1
  const int level = manager.level();
  ASSERT_EQ(level, 1);
  ASSERT_FALSE(manager.Enabled("debug_log"));
  ASSERT_TRUE(manager.Enabled("personalization"));
  const std::shared_ptr<const DegradationConfig> before = manager.config();
  const std::size_t log_lines = log_.size();

  absl::Status s = ReloadJson(
      manager, Levels(R"("level1": {"trigger": {"gpu_util": "high"}})"),
      "svc.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("svc.json: degradation.level1.trigger.gpu_util"));

  EXPECT_EQ(manager.rejected_reloads(), 1u);
  EXPECT_EQ(manager.reloads(), 1u);
  EXPECT_EQ(manager.config(), before);
  EXPECT_EQ(manager.level(), level);
  EXPECT_EQ(manager.num_levels(), 3);
  EXPECT_FALSE(manager.Enabled("debug_log"));
  EXPECT_TRUE(manager.Enabled("personalization"));
  EXPECT_GT(log_.size(), log_lines) << "a rejected reload is logged";

  // Semantically invalid (valid JSON, bad thresholds) is refused the same way.
  s = ReloadJson(manager,
                 Levels(absl::StrCat(
                     kLevel1, R"(, "level2": {"trigger": {"gpu_util": 0.5}})")),
                 "svc.json");
  EXPECT_THAT(std::string(s.message()), HasSubstr("must rise with the level"));
  EXPECT_EQ(manager.rejected_reloads(), 2u);
  EXPECT_EQ(manager.config(), before);

  // And a good one still applies afterwards.
  EXPECT_TRUE(ReloadJson(manager, OneLevelJson(0.7)).ok());
  EXPECT_EQ(manager.num_levels(), 1);
  EXPECT_EQ(manager.reloads(), 2u);
}

// ---- ConfigFileWatcher
// -------------------------------------------------------

class ConfigFileWatcherTest : public ::testing::Test {
 protected:
  ConfigFileWatcherTest() : manager_(Options()) {}

  DegradationManager::Options Options() {
    DegradationManager::Options o;
    o.name = "watched";
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    return o;
  }

  // How many log lines mention `fragment` (e.g. an event name).
  int LogLinesWith(absl::string_view fragment) {
    std::lock_guard<std::mutex> lock(log_mu_);
    int n = 0;
    for (const std::string& line : log_) {
      if (absl::StrContains(line, fragment)) ++n;
    }
    return n;
  }

  FakeClock clock_;
  std::mutex log_mu_;  // the watcher thread logs too
  std::vector<std::string> log_;
  DegradationManager manager_;
  TempDir dir_;
};

TEST_F(ConfigFileWatcherTest, AppliesTheFileOnTheFirstPoll) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, kArticleJson);
  ConfigFileWatcher watcher(path, &manager_);
  EXPECT_TRUE(watcher.last_status().ok());  // before any poll
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(manager_.num_levels(), 3);
  EXPECT_EQ(watcher.reloads(), 1u);
  EXPECT_EQ(watcher.errors(), 0u);
  EXPECT_EQ(watcher.path(), path);
}

// Issue 29: what an operator sees of a watcher. Reloads and errors move on
// real events (a missing file, a refused content), and the last success
// time never moves back, nor its age below zero, when the clock steps back.
TEST_F(ConfigFileWatcherTest, StatsFollowReloadsErrorsAndTheLastSuccess) {
  const std::string path = dir_.Path("degrade.json");
  ConfigFileWatcherOptions o;
  o.clock = &clock_;
  o.metrics = NoTelemetry();
  ConfigFileWatcher watcher(path, &manager_, o);
  EXPECT_EQ(watcher.name(), path);  // the default name

  EXPECT_FALSE(watcher.PollOnce().ok());  // missing: an error
  FileWatcherStats s = watcher.stats();
  EXPECT_EQ(s.document, WatchedDocument::kConfig);
  EXPECT_EQ(s.polls, 1u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_FALSE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, absl::InfinitePast());
  EXPECT_EQ(s.since_success, absl::InfiniteDuration());

  WriteByRename(path, OneLevelJson(0.8));
  clock_.Advance(absl::Seconds(10));
  const absl::Time first = clock_.Now();
  ASSERT_TRUE(watcher.PollOnce().ok());
  clock_.Advance(absl::Seconds(5));
  s = watcher.stats();
  EXPECT_EQ(s.reloads, 1u);
  EXPECT_TRUE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, first);
  EXPECT_EQ(s.since_success, absl::Seconds(5));

  // A refused content: an error; the last success stays where it was.
  WriteByRename(path, "{ not json");
  EXPECT_FALSE(watcher.PollOnce().ok());
  s = watcher.stats();
  EXPECT_EQ(s.errors, 2u);
  EXPECT_FALSE(s.last_poll_ok);
  EXPECT_EQ(s.last_success, first);

  // The clock set back an hour: a success then does not move the time
  // back, and the age reads 0, never negative.
  clock_.Set(first - absl::Hours(1));
  WriteByRename(path, OneLevelJson(0.7));
  ASSERT_TRUE(watcher.PollOnce().ok());
  s = watcher.stats();
  EXPECT_EQ(s.reloads, 2u);
  EXPECT_EQ(s.polls, 4u);
  EXPECT_EQ(s.last_success, first);
  EXPECT_EQ(s.since_success, absl::ZeroDuration());

  // Once the clock is past it again, successes move it forward.
  clock_.Set(first + absl::Minutes(1));
  ASSERT_TRUE(watcher.PollOnce().ok());  // unchanged content: a success
  EXPECT_EQ(watcher.stats().last_success, first + absl::Minutes(1));
}

TEST_F(ConfigFileWatcherTest, UnchangedContentDoesNotReload) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(watcher.PollOnce().ok());
  // Rewriting the same bytes (a touch, a no-op deploy) changes nothing either.
  WriteInPlace(path, OneLevelJson(0.8));
  WriteByRename(path, OneLevelJson(0.8));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 1u);
  EXPECT_EQ(manager_.reloads(), 1u);
  EXPECT_EQ(manager_.config(), applied);
}

TEST_F(ConfigFileWatcherTest, InPlaceWriteReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  WriteInPlace(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.6);
  EXPECT_EQ(watcher.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, RenameOverReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteByRename(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  WriteByRename(path, OneLevelJson(0.9));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.9);
  WriteByRename(path, kArticleJson);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(manager_.num_levels(), 3);
  EXPECT_EQ(watcher.reloads(), 3u);
}

// Kubernetes mounts a ConfigMap as
//   dir/config.json -> ..data/config.json
//   dir/..data      -> ..2026_01_01_00_00_00.1      (swapped atomically)
//   dir/..2026_01_01_00_00_00.1/config.json
// and updates it by writing a new timestamped directory, pointing a temporary
// symlink at it, renaming that over ..data and deleting the old directory.
TEST_F(ConfigFileWatcherTest, ConfigMapSymlinkSwapReloads) {
  const auto make_version = [&](absl::string_view stamp,
                                const std::string& content) {
    const std::string version = dir_.Path(stamp);
    ASSERT_EQ(::mkdir(version.c_str(), 0700), 0);
    WriteInPlace(version + "/config.json", content);
  };
  const auto point_data_at = [&](absl::string_view stamp) {
    const std::string tmp = dir_.Path("..data_tmp");
    ASSERT_EQ(::symlink(std::string(stamp).c_str(), tmp.c_str()), 0);
    ASSERT_EQ(std::rename(tmp.c_str(), dir_.Path("..data").c_str()), 0);
  };
  make_version("..2026_01_01_00_00_00.1", OneLevelJson(0.8));
  point_data_at("..2026_01_01_00_00_00.1");
  const std::string path = dir_.Path("config.json");
  ASSERT_EQ(::symlink("..data/config.json", path.c_str()), 0);

  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  make_version("..2026_01_01_00_05_00.2", OneLevelJson(0.7));
  point_data_at("..2026_01_01_00_05_00.2");
  std::filesystem::remove_all(dir_.Path("..2026_01_01_00_00_00.1"));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.7);
  EXPECT_EQ(watcher.reloads(), 2u);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, DeletedFileIsReportedOnceAndTheOldConfigKept) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();

  ASSERT_EQ(std::remove(path.c_str()), 0);
  for (int i = 0; i < 3; ++i) {
    absl::Status s = watcher.PollOnce();
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(path));
    EXPECT_EQ(watcher.last_status(), s);
  }
  EXPECT_EQ(watcher.errors(), 1u) << "reported once, not every poll";
  EXPECT_EQ(manager_.rejected_reloads(), 1u);
  EXPECT_EQ(LogLinesWith("config_rejected"), 1);
  EXPECT_EQ(manager_.config(), applied);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  // A different error (the path is now a directory) is news: reported.
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  EXPECT_EQ(watcher.PollOnce().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(watcher.errors(), 2u);
  EXPECT_EQ(manager_.rejected_reloads(), 2u);
  ASSERT_EQ(::rmdir(path.c_str()), 0);
}

TEST_F(ConfigFileWatcherTest, RestoredFileReloads) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  ASSERT_FALSE(watcher.PollOnce().ok());

  // Back with new content: applied.
  WriteByRename(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_TRUE(watcher.last_status().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.6);
  EXPECT_EQ(watcher.reloads(), 2u);

  // Gone again: reported again, since the previous poll succeeded.
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_EQ(watcher.PollOnce().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(watcher.errors(), 2u);

  // Back with the content already applied: OK, nothing to reload.
  WriteByRename(path, OneLevelJson(0.6));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(watcher.reloads(), 2u);
  EXPECT_EQ(manager_.reloads(), 2u);
}

TEST_F(ConfigFileWatcherTest, InvalidContentIsRejectedOnceAndTheOldConfigKept) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());

  WriteByRename(
      path,
      Levels(R"("level1": {"trigger": {"gpu_util": 0.9}, "hold": "60"})"));
  for (int i = 0; i < 3; ++i) {
    absl::Status s = watcher.PollOnce();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat(path, ": degradation.level1.hold")));
  }
  EXPECT_EQ(watcher.errors(), 1u);
  EXPECT_EQ(manager_.rejected_reloads(), 1u);
  EXPECT_EQ(LogLinesWith("config_rejected"), 1);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);

  WriteByRename(path, OneLevelJson(0.85));
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.85);
  EXPECT_EQ(watcher.reloads(), 2u);
}

// A config centre agent that truncates and rewrites the file in place can be
// caught with the file empty, or half written: each such read is refused and
// the applied config keeps serving; the whole file is applied once written.
TEST_F(ConfigFileWatcherTest, EmptiedOrHalfWrittenFileKeepsTheOldConfig) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  ASSERT_TRUE(watcher.PollOnce().ok());
  const std::shared_ptr<const DegradationConfig> applied = manager_.config();

  WriteInPlace(path, "");
  absl::Status s = watcher.PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path + ": config file is empty"));
  EXPECT_EQ(manager_.config(), applied);

  const std::string next = OneLevelJson(0.9);
  WriteInPlace(path, next.substr(0, next.size() / 2));
  s = watcher.PollOnce();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("malformed JSON at byte"));
  EXPECT_EQ(manager_.config(), applied);
  EXPECT_EQ(Level1Gpu(manager_), 0.8);
  EXPECT_EQ(manager_.rejected_reloads(), 2u);

  WriteInPlace(path, next);
  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.9);
  EXPECT_EQ(watcher.reloads(), 2u);
}

// What the manager's callbacks (here its log sink) do when they call back
// into the watcher whose poll is running them, on the watcher's thread or
// in a PollOnce() on the test thread (issue 13, re-entrancy). Regressions:
// PollOnce() there waited for the poll lock its own poll held (a deadlock);
// Start() on the watcher's thread joined that thread and polling stopped for
// good; and from a PollOnce() on another thread, Start() then Stop() could
// wait for a watcher thread that was waiting for the poll lock. After each
// row, the file changes again and must be applied by the watcher's thread
// (restarted by the test when the row stopped it).
TEST_F(ConfigFileWatcherTest, CallsFromManagerCallbacksIntoTheWatcher) {
  enum class From { kWatcherThread, kPollOnce };
  struct Case {
    const char* name;
    From from;
    std::function<absl::Status(ConfigFileWatcher&)> calls;
    absl::StatusCode code;
    bool keeps_polling;  // every ms, without the test restarting it
  };
  const absl::Duration ms = absl::Milliseconds(1);
  const auto poll = [](ConfigFileWatcher& w) { return w.PollOnce(); };
  const auto start = [ms](ConfigFileWatcher& w) {
    EXPECT_TRUE(w.Start(ms).ok());
    return absl::OkStatus();
  };
  const auto stop = [](ConfigFileWatcher& w) {
    w.Stop();
    return absl::OkStatus();
  };
  const auto stop_start = [ms](ConfigFileWatcher& w) {
    w.Stop();
    EXPECT_TRUE(w.Start(ms).ok());
    return absl::OkStatus();
  };
  const auto start_stop = [ms](ConfigFileWatcher& w) {
    EXPECT_TRUE(w.Start(ms).ok());
    w.Stop();
    return absl::OkStatus();
  };
  using absl::StatusCode;
  const std::vector<Case> cases = {
      {"thread: PollOnce", From::kWatcherThread, poll,
       StatusCode::kFailedPrecondition, true},
      {"thread: Start", From::kWatcherThread, start, StatusCode::kOk, true},
      {"thread: Stop, Start", From::kWatcherThread, stop_start, StatusCode::kOk,
       true},
      {"thread: Stop", From::kWatcherThread, stop, StatusCode::kOk, false},
      {"PollOnce: PollOnce", From::kPollOnce, poll,
       StatusCode::kFailedPrecondition, false},
      {"PollOnce: Start", From::kPollOnce, start, StatusCode::kOk, true},
      {"PollOnce: Start, Stop", From::kPollOnce, start_stop, StatusCode::kOk,
       false},
      {"PollOnce: Stop", From::kPollOnce, stop, StatusCode::kOk, false},
  };
  const std::thread::id test_thread = std::this_thread::get_id();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir_.Path("reentrant.json");
    WriteByRename(path, OneLevelJson(0.8));
    degrade_tests::TickCounter lines;
    degrade_tests::TickCounter called;
    std::atomic<bool> armed{false};
    absl::Status result;  // written before called.Tick(), read after
    ConfigFileWatcher* self = nullptr;
    DegradationManager::Options o = Options();
    o.log_sink = [&](absl::string_view) {
      lines.Tick();  // first: once `called` ticks, this line is counted
      const bool here = (std::this_thread::get_id() == test_thread) ==
                        (c.from == From::kPollOnce);
      if (here && armed.exchange(false)) {
        result = c.calls(*self);
        called.Tick();
      }
    };
    DegradationManager manager(o);
    ConfigFileWatcher watcher(path, &manager);
    self = &watcher;
    if (c.from == From::kWatcherThread) {
      armed = true;
      EXPECT_TRUE(watcher.Start(ms).ok());
    } else {
      // Applies 0.8, then sleeps.
      EXPECT_TRUE(watcher.Start(absl::Hours(1)).ok());
      ASSERT_TRUE(lines.WaitFor(1));
      WriteByRename(path, OneLevelJson(0.85));
      armed = true;
      const absl::Status polled = watcher.PollOnce();
      EXPECT_TRUE(polled.ok()) << polled;
    }
    ASSERT_TRUE(called.WaitFor(1));
    EXPECT_EQ(result.code(), c.code) << result;
    if (!c.keeps_polling) {
      EXPECT_TRUE(watcher.Start(ms).ok());
    }
    const uint64_t before = lines.count();
    WriteByRename(path, OneLevelJson(0.9));
    EXPECT_TRUE(lines.WaitFor(before + 1)) << "the watcher stopped polling";
    watcher.Stop();
    EXPECT_EQ(Level1Gpu(manager), 0.9);
  }
}

TEST_F(ConfigFileWatcherTest, StopIsPromptAndIdempotent) {
  const std::string path = dir_.Path("degrade.json");
  WriteInPlace(path, OneLevelJson(0.8));
  ConfigFileWatcher watcher(path, &manager_);
  watcher.Stop();                 // not running: no-op
  ASSERT_TRUE(watcher.Start(absl::Hours(1)).ok());  // polls at once...
  ASSERT_TRUE(watcher.Start(absl::Hours(2)).ok());  // restart, new period
  watcher.Stop();                 // ...unless stopped: this must not hang
  watcher.Stop();
  ASSERT_TRUE(watcher.Start(absl::Hours(1)).ok());  // the destructor stops it
}

// The background thread polls every millisecond while this thread replaces
// the file and others read the manager. Asserts invariants only; the final
// content is checked after a last, synchronous PollOnce().
TEST_F(ConfigFileWatcherTest, BackgroundPollingUnderConcurrentUpdates) {
  const std::string path = dir_.Path("degrade.json");
  WriteByRename(path, OneLevelJson(0.5));
  ConfigFileWatcher watcher(path, &manager_);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!done.load()) {
        const double gpu = Level1Gpu(manager_);
        // Never a half-applied config: either none yet or one that was written.
        EXPECT_TRUE(gpu == -1 || (gpu >= 0.5 && gpu <= 0.56)) << gpu;
        const int level = manager_.level();
        EXPECT_GE(level, 0);
        EXPECT_LE(level, 1);
        (void)manager_.Enabled("debug_log");
        (void)watcher.last_status();
        (void)watcher.reloads();
        std::this_thread::yield();
      }
    });
  }
  // A second poller racing the background thread: polls are serialised.
  threads.emplace_back([&] {
    while (!done.load()) {
      (void)watcher.PollOnce();
      std::this_thread::yield();
    }
  });
  ASSERT_TRUE(watcher.Start(absl::Milliseconds(1)).ok());
  for (int i = 1; i <= 6; ++i) {
    WriteByRename(path, OneLevelJson(0.5 + 0.01 * i));
    (void)manager_.Observe("gpu_util", 0.1 * i);  // no ASSERT: threads run
  }
  done.store(true);
  for (std::thread& t : threads) t.join();
  watcher.Stop();

  EXPECT_TRUE(watcher.PollOnce().ok());
  EXPECT_EQ(Level1Gpu(manager_), 0.56);
  EXPECT_EQ(watcher.errors(), 0u) << watcher.last_status();
  EXPECT_EQ(manager_.rejected_reloads(), 0u);
  EXPECT_GE(watcher.reloads(), 1u);
  EXPECT_LE(watcher.reloads(), 7u);
  EXPECT_EQ(manager_.reloads(), watcher.reloads());
}

// ---- Request threads while good and bad files replace each other ----------

// The features the request threads read, and four good configs that gate
// them differently at the load the test observes (0.5): G1 serves level 1,
// G2 level 2 (with critical features and all_non_critical at level 3), G3
// one level switching off all_non_critical, G4 level 2 again. Holds are an
// hour on a clock that never moves, so the level only rises, or is clamped
// by a config with fewer levels.
const std::vector<std::string>& GatedFeatures() {
  static const std::vector<std::string> kFeatures = {"f1", "f2", "f3",
                                                     "critical1"};
  return kFeatures;
}

const std::vector<std::string>& GoodConfigs() {
  static const std::vector<std::string> kGood = {
      R"({"degradation": {"hold": "1h",
           "level1": {"trigger": {"load": 0.4}, "disable": ["f1"]},
           "level2": {"trigger": {"load": 0.6}, "disable": ["f2"]}}})",
      R"({"degradation": {"hold": "1h", "critical": ["critical1"],
           "level1": {"trigger": {"load": 0.3}, "disable": ["f2"]},
           "level2": {"trigger": {"load": 0.45}, "disable": ["f3"]},
           "level3": {"trigger": {"load": 0.9},
                      "disable": ["all_non_critical"]}}})",
      R"({"degradation": {"hold": "1h", "critical": ["critical1", "f3"],
           "level1": {"trigger": {"load": 0.2},
                      "disable": ["all_non_critical"]}}})",
      R"({"degradation": {"hold": "1h",
           "level1": {"trigger": {"load": 0.45}, "disable": ["f3"]},
           "level2": {"trigger": {"load": 0.5}, "disable": ["f1"]},
           "level3": {"trigger": {"load": 0.55}, "disable": ["f2"]}}})",
  };
  return kGood;
}

// Files the watcher must refuse. Each would gate differently if it were
// applied (the semantically invalid one would drop the level to 0 and turn
// everything back on).
const std::vector<std::string>& BadConfigs() {
  static const std::vector<std::string> kBad = {
      "",
      R"({"degradation": {"hold": "1h", "level1": {"trigger": )",
      std::string(
          R"({"degradation": {"level1": {"trigger": {"load": 0.1}}}})") +
          std::string(1, '\0'),
      R"({"degradation": {"hold": "1h",
           "level1": {"trigger": {"load": 0.9}, "disable": ["critical1"]},
           "level2": {"trigger": {"load": 0.8}, "disable": ["f1"]}}})",
      R"({"degradation": {"level1": {"trigger": {"load": "0.1"}}}})",
      R"({"degradation": {"levle1": {"trigger": {"load": 0.1}}}})",
  };
  return kBad;
}

// Whether `feature` is enabled at `level` of `config`, computed from the
// config alone: levels are cumulative, and all_non_critical spares the
// critical features.
bool EnabledAt(const DegradationConfig& config, int level,
               const std::string& feature) {
  bool all_non_critical = false;
  for (int i = 0; i < level; ++i) {
    for (const std::string& f :
         config.levels[static_cast<std::size_t>(i)].disable) {
      if (f == feature) return false;
      if (f == kAllNonCritical) all_non_critical = true;
    }
  }
  if (!all_non_critical) return true;
  for (const std::string& c : config.critical) {
    if (c == feature) return true;
  }
  return false;
}

// Empty when (config, level, gates) is a state the manager may serve: the
// config is one of the good ones, the level within it, and every gate what
// that config says at that level. Otherwise what is wrong.
std::string ServingProblem(const std::vector<DegradationConfig>& good,
                           const DegradationConfig* config, int level,
                           const std::vector<bool>& gates) {
  if (config == nullptr) return "no config is installed";
  bool known = false;
  for (const DegradationConfig& g : good) known = known || g == *config;
  if (!known) return "the config serving is none of the good files";
  if (level < 0 || level > static_cast<int>(config->levels.size())) {
    return absl::StrCat("level ", level, " is outside the config");
  }
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const std::string& f = GatedFeatures()[i];
    if (gates[i] != EnabledAt(*config, level, f)) {
      return absl::StrCat("gate ", f, " is ", gates[i] ? "on" : "off",
                          " at level ", level);
    }
  }
  return "";
}

// Request threads read gates, level() and config() while the test replaces
// the watched file (by rename) with good and bad configs in a fixed
// pseudo-random order and polls after each. Every consistent read (no
// reload completed during it: manager.reloads() unchanged around it) must
// see a good config, a level within it and gates agreeing with both; a bad
// file must never change what serves. After each step the test waits until
// every reader has made a consistent read of the new state, so each state
// is checked concurrently, whatever the scheduling; no sleeps.
TEST(ConfigFileWatcherConcurrencyTest, GatesAlwaysAgreeWithAGoodConfig) {
  constexpr int kReaders = 3;
  constexpr int kSteps = 48;
  std::vector<DegradationConfig> good;
  for (const std::string& text : GoodConfigs()) {
    absl::StatusOr<DegradationConfig> c = ParseDegradationConfig(text);
    ASSERT_TRUE(c.ok()) << c.status();
    good.push_back(*std::move(c));
  }
  for (const std::string& text : BadConfigs()) {
    ASSERT_FALSE(ParseDegradationConfig(text).ok()) << text;
  }

  FakeClock clock;
  DegradationManager::Options options;
  options.name = "gates";
  options.clock = &clock;
  options.log_sink = [](absl::string_view) {};
  DegradationManager manager(options);
  std::vector<FeatureGate> gates;
  for (const std::string& f : GatedFeatures()) {
    gates.push_back(manager.Feature(f));
  }
  TempDir dir;
  const std::string path = dir.Path("degrade.json");
  WriteByRename(path, GoodConfigs()[0]);
  ConfigFileWatcher watcher(path, &manager);
  ASSERT_TRUE(watcher.PollOnce().ok());
  ASSERT_TRUE(manager.Observe("load", 0.5).ok());
  ASSERT_EQ(manager.level(), 1);

  std::atomic<int> step{0};
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  std::atomic<int64_t> consistent_reads{0};
  std::vector<std::atomic<int>> seen(kReaders);
  for (std::atomic<int>& s : seen) s.store(-1);
  std::mutex problem_mu;
  std::string first_problem;
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::vector<bool> read(gates.size());
      while (!done.load(std::memory_order_acquire)) {
        const int at_step = step.load(std::memory_order_acquire);
        const uint64_t before = manager.reloads();
        const std::shared_ptr<const DegradationConfig> config =
            manager.config();
        const int level = manager.level();
        for (std::size_t i = 0; i < gates.size(); ++i) {
          read[i] = gates[i].enabled();
        }
        if (manager.reloads() != before) continue;  // a reload overlapped
        consistent_reads.fetch_add(1, std::memory_order_relaxed);
        const std::string problem =
            ServingProblem(good, config.get(), level, read);
        if (!problem.empty()) {
          violations.fetch_add(1);
          std::lock_guard<std::mutex> lock(problem_mu);
          if (first_problem.empty()) first_problem = problem;
        }
        seen[static_cast<std::size_t>(r)].store(at_step,
                                                std::memory_order_release);
        std::this_thread::yield();
      }
    });
  }

  std::mt19937 rng(20261201);  // a fixed schedule
  std::string last_content = GoodConfigs()[0];
  uint64_t want_reloads = 1;
  uint64_t want_errors = 0;
  for (int k = 1; k <= kSteps; ++k) {
    const bool bad = rng() % 3 == 0;
    const std::vector<std::string>& pool = bad ? BadConfigs() : GoodConfigs();
    const std::string& content = pool[rng() % pool.size()];
    SCOPED_TRACE(absl::StrCat("step ", k, bad ? " (bad)" : " (good)"));
    const std::shared_ptr<const DegradationConfig> serving = manager.config();
    const int level = manager.level();
    std::vector<bool> before;
    for (const FeatureGate& g : gates) before.push_back(g.enabled());

    WriteByRename(path, content);
    const absl::Status polled = watcher.PollOnce();
    if (content != last_content) (bad ? want_errors : want_reloads) += 1;
    last_content = content;
    if (bad) {
      EXPECT_FALSE(polled.ok());
      EXPECT_EQ(manager.config(), serving) << "a bad file replaced the config";
      EXPECT_EQ(manager.level(), level);
      for (std::size_t i = 0; i < gates.size(); ++i) {
        EXPECT_EQ(gates[i].enabled(), before[i]) << GatedFeatures()[i];
      }
    } else {
      EXPECT_TRUE(polled.ok()) << polled;
      absl::StatusOr<DegradationConfig> want = ParseDegradationConfig(content);
      ASSERT_TRUE(want.ok());
      ASSERT_NE(manager.config(), nullptr);
      EXPECT_TRUE(*manager.config() == *want);
    }
    step.store(k, std::memory_order_release);
    // Every reader checks the state this step left, concurrently.
    for (std::atomic<int>& s : seen) {
      while (s.load(std::memory_order_acquire) < k) std::this_thread::yield();
    }
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();

  EXPECT_EQ(violations.load(), 0) << first_problem;
  EXPECT_GE(consistent_reads.load(), int64_t{kReaders} * kSteps);
  EXPECT_EQ(watcher.reloads(), want_reloads);
  EXPECT_EQ(watcher.errors(), want_errors);
  EXPECT_GT(want_errors, 0u);
  EXPECT_EQ(manager.rejected_reloads(), want_errors);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
