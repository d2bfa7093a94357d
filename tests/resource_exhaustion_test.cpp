// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Resource exhaustion: every component that starts threads, made to fail
// at each of its thread starts through the seam of detail/thread_start.hpp
// (tests/support/thread_start_failure.hpp), as the system fails them when
// the process is out of threads or address space (`ulimit -v`). None may
// end the process; each reports RESOURCE_EXHAUSTED naming itself, keeps
// what it was serving, and works when started again.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/config_watcher.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/escalation.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/metrics_registry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics_test_util.hpp"
#include "support/thread_start_failure.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::FailThreadStarts;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Counts what a background thread did; the test waits for a count (with a
// generous safety net, never a sleep).
class Ticks {
 public:
  void Tick() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++n_;
    }
    cv_.notify_all();
  }
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60),
                        [&] { return n_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return n_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

void ExpectCannotStart(const absl::Status& s, absl::string_view owner) {
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr(owner),
                                 HasSubstr("cannot start a thread"),
                                 HasSubstr("thread start failed by the test")))
      << s;
}

TEST(ResourceExhaustionTest, ThreadPoolThatCannotStartAThreadJoinsTheOthers) {
  // Before the fix: the third start threw with two threads joinable, and
  // their destruction during the unwinding called std::terminate.
  for (int k = 1; k <= 5; ++k) {
    SCOPED_TRACE(k);
    FailThreadStarts fail(k);
    ThreadPool pool(5);
    EXPECT_EQ(fail.attempts(), k);  // nothing started after the failure
    EXPECT_EQ(pool.threads(), 0u);
    EXPECT_EQ(pool.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(pool.status().message(),
                AllOf(HasSubstr(absl::StrCat("ThreadPool: thread ", k, " of 5")),
                      HasSubstr("cannot start a thread"),
                      HasSubstr("thread start failed by the test")));
    EXPECT_FALSE(pool.Submit([] {}));
    absl::StatusOr<int> r =
        CallWithTimeout(pool, absl::InfiniteDuration(), [] { return 1; });
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  }
}

TEST(ResourceExhaustionTest, ThreadPoolCreateReturnsTheFailureAndThenWorks) {
  {
    FailThreadStarts fail(2);
    absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(3);
    ASSERT_FALSE(pool.ok());
    EXPECT_EQ(pool.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(pool.status().message(), HasSubstr("thread 2 of 3"));
  }
  // The system has threads again: the same call succeeds.
  absl::StatusOr<std::unique_ptr<ThreadPool>> pool = ThreadPool::Create(3);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_TRUE((*pool)->status().ok());
  EXPECT_EQ((*pool)->threads(), 3u);
  absl::StatusOr<int> r =
      CallWithTimeout(**pool, absl::InfiniteDuration(), [] { return 7; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 7);
}

TEST(ResourceExhaustionTest, HotListStartReportsAFailedThreadAndCanBeRetried) {
  Ticks refreshes;
  HotListOptions<std::string> o;
  o.name = "hot";
  o.source = [&refreshes]() -> absl::StatusOr<std::vector<std::string>> {
    refreshes.Tick();
    return std::vector<std::string>{"fresh"};
  };
  HotList<std::string> hot(std::move(o));
  ASSERT_TRUE(hot.Publish({"baseline"}).ok());
  {
    // Before the fix the std::system_error escaped Start(), which promises
    // not to throw.
    FailThreadStarts fail(1);
    ExpectCannotStart(hot.Start(absl::Hours(1)), "hot: refresher");
  }
  EXPECT_EQ(refreshes.count(), 0);
  ASSERT_NE(hot.snapshot(), nullptr);
  EXPECT_EQ(*hot.snapshot(), std::vector<std::string>{"baseline"});
  hot.Stop();  // nothing to stop: a no-op
  ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(refreshes.WaitFor(1));
  {
    // A restart that fails stops the old refresher and reports it; the
    // snapshot keeps serving.
    FailThreadStarts fail(1);
    ExpectCannotStart(hot.Start(absl::Hours(2)), "hot: refresher");
  }
  EXPECT_EQ(*hot.snapshot(), std::vector<std::string>{"fresh"});
  ASSERT_TRUE(hot.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(refreshes.WaitFor(2));
}

TEST(ResourceExhaustionTest, ConfigFileWatcherStartReportsAFailedThread) {
  Ticks rejected;
  ManagerOptions mo;
  mo.log_sink = [&rejected](absl::string_view line) {
    if (absl::StrContains(line, "config_rejected")) rejected.Tick();
  };
  DegradationManager manager(mo);
  ConfigFileWatcher watcher("/nonexistent/degrade.json", &manager);
  {
    FailThreadStarts fail(1);
    ExpectCannotStart(watcher.Start(absl::Hours(1)),
                      "config file watcher '/nonexistent/degrade.json'");
  }
  EXPECT_EQ(rejected.count(), 0);  // nothing polled
  ASSERT_TRUE(watcher.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(rejected.WaitFor(1));
  watcher.Stop();
  EXPECT_EQ(watcher.last_status().code(), absl::StatusCode::kNotFound);
}

TEST(ResourceExhaustionTest, ManagerMonitorStartReportsAFailedThread) {
  Ticks polls;
  ManagerOptions mo;
  mo.name = "m";
  mo.log_sink = [](absl::string_view) {};  // no config: polls log errors
  DegradationManager manager(mo);
  manager.AddSource("queue_length", [&polls] {
    polls.Tick();
    return 1.0;
  });
  {
    FailThreadStarts fail(1);
    ExpectCannotStart(manager.Start(absl::Seconds(1)),
                      "degradation manager 'm': monitor");
  }
  EXPECT_EQ(polls.count(), 0);
  // Not left "already running": the next Start works.
  ASSERT_TRUE(manager.Start(absl::Seconds(1)).ok());
  ASSERT_TRUE(polls.WaitFor(1));
  manager.Stop();
}

TEST(ResourceExhaustionTest, EscalationWatchSurvivesAFailedThreadStart) {
  FakeClock clock;
  Fixture f(&clock);
  CircuitBreaker<int> breaker(ExportedBreaker("recall", &clock, f.registry.get()));
  Ticks pages;
  EscalationOptions o;
  o.clock = &clock;
  o.on_escalate = [&pages](const DegradationEpisode&, absl::Duration) {
    pages.Tick();
  };
  EscalationWatch watch(*f.registry, o);
  breaker.ForceOpen();
  clock.Advance(absl::Minutes(31));
  {
    FailThreadStarts fail(1);
    ExpectCannotStart(watch.Start(absl::Hours(1)), "escalation watch");
    EXPECT_EQ(fail.attempts(), 1);
  }
  EXPECT_EQ(pages.count(), 0);
  // Works once threads can be started.
  ASSERT_TRUE(watch.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(pages.WaitFor(1));
  watch.Stop();
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
