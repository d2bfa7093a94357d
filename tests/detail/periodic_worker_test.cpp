// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail::PeriodicWorker on real threads. Nothing sleeps and nothing asserts
// a duration: the tests wait for ticks on a condition variable, and use a
// period of an hour where they need the worker to stay asleep, so that
// "Stop() woke it" is shown by Stop() returning at all.

#include "degrade/detail/periodic_worker.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace {

const absl::Duration kAnHour = absl::Hours(1);
const absl::Duration kPatience = absl::Seconds(60);  // a safety net only

// Counts ticks and lets the test wait for the n-th.
class Ticks {
 public:
  void Tick() {
    MutexLock lock(&mu_);
    ++count_;
    cv_.SignalAll();
  }
  // True once `n` ticks have happened (false after kPatience).
  bool WaitFor(uint64_t n) {
    MutexLock lock(&mu_);
    return cv_.WaitFor(
        &mu_, kPatience,
        [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ >= n; });
  }
  uint64_t count() {
    MutexLock lock(&mu_);
    return count_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(PeriodicWorkerTest, TicksEveryPeriodUntilStopped) {
  Ticks ticks;
  PeriodicWorker worker;
  worker.Restart(absl::Milliseconds(1), [&ticks] { ticks.Tick(); });
  ASSERT_TRUE(ticks.WaitFor(3));
  worker.Stop();
  const uint64_t at_stop = ticks.count();
  // Stop() joined the thread: no tick can follow it.
  std::this_thread::yield();
  EXPECT_EQ(ticks.count(), at_stop);
  worker.Stop();  // a second Stop is a no-op
}

TEST(PeriodicWorkerTest, TicksAtOnceAndStopWakesTheSleepingWorker) {
  Ticks ticks;
  PeriodicWorker worker;
  worker.Restart(kAnHour, [&ticks] { ticks.Tick(); });
  ASSERT_TRUE(ticks.WaitFor(1));  // the first tick does not wait a period
  worker.Stop();                  // returns although the hour has not passed
  EXPECT_EQ(ticks.count(), 1u);
}

TEST(PeriodicWorkerTest, AnyPeriodIsUsable) {
  // Zero and negative periods are clamped to 1 ms (not spun), an infinite
  // one to a year.
  for (const absl::Duration period :
       {absl::ZeroDuration(), -absl::Seconds(1), absl::InfiniteDuration()}) {
    Ticks ticks;
    PeriodicWorker worker;
    worker.Restart(period, [&ticks] { ticks.Tick(); });
    ASSERT_TRUE(ticks.WaitFor(1)) << absl::FormatDuration(period);
    worker.Stop();
  }
}

TEST(PeriodicWorkerTest, StartIfIdleStartsOneThreadOnly) {
  Ticks first;
  Ticks second;
  PeriodicWorker worker;
  EXPECT_TRUE(worker.StartIfIdle(kAnHour, [&first] { first.Tick(); }).ok());
  EXPECT_FALSE(worker.StartIfIdle(kAnHour, [&second] { second.Tick(); }).ok());
  ASSERT_TRUE(first.WaitFor(1));
  worker.Stop();
  EXPECT_EQ(second.count(), 0u);
  EXPECT_TRUE(worker.StartIfIdle(kAnHour, [&second] { second.Tick(); }).ok());
  ASSERT_TRUE(second.WaitFor(1));
  worker.Stop();
  EXPECT_EQ(first.count(), 1u);
}

TEST(PeriodicWorkerTest, RestartReplacesTheTick) {
  Ticks old_tick;
  Ticks new_tick;
  PeriodicWorker worker;
  worker.Restart(absl::Milliseconds(1), [&old_tick] { old_tick.Tick(); });
  ASSERT_TRUE(old_tick.WaitFor(1));
  worker.Restart(absl::Milliseconds(1), [&new_tick] { new_tick.Tick(); });
  const uint64_t old_at_restart = old_tick.count();
  ASSERT_TRUE(new_tick.WaitFor(3));
  EXPECT_EQ(old_tick.count(), old_at_restart) << "the old thread was joined";
  worker.Stop();
}

TEST(PeriodicWorkerTest, StopFromTheTickStopsAfterItAndIsJoinedLater) {
  Ticks ticks;
  PeriodicWorker worker;
  std::atomic<bool> on_worker{false};
  worker.Restart(absl::Milliseconds(1), [&] {
    on_worker.store(worker.OnWorkerThread());
    worker.Stop();  // cannot join itself: only asks
    ticks.Tick();
  });
  ASSERT_TRUE(ticks.WaitFor(1));
  EXPECT_TRUE(on_worker.load());
  EXPECT_FALSE(worker.OnWorkerThread());
  // Stopped from itself and not joined yet: not idle.
  EXPECT_FALSE(worker.StartIfIdle(kAnHour, [] {}).ok());
  worker.Stop();  // joins it
  EXPECT_EQ(ticks.count(), 1u) << "no tick after the one that stopped it";
  Ticks again;
  EXPECT_TRUE(worker.StartIfIdle(kAnHour, [&again] { again.Tick(); }).ok());
  ASSERT_TRUE(again.WaitFor(1));
}

TEST(PeriodicWorkerTest, TheDestructorStopsAndJoins) {
  Ticks ticks;
  {
    PeriodicWorker worker;
    worker.Restart(absl::Milliseconds(1), [&ticks] { ticks.Tick(); });
    ASSERT_TRUE(ticks.WaitFor(2));
  }
  const uint64_t after = ticks.count();
  std::this_thread::yield();
  EXPECT_EQ(ticks.count(), after);
}

// Starts and stops racing from several threads never leave two workers
// ticking at once (label: concurrency, run under TSan).
TEST(PeriodicWorkerTest, RacingStartsAndStopsNeverRunTwoTicksAtOnce) {
  PeriodicWorker worker;
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  const auto tick = [&] {
    if (running.fetch_add(1) != 0) overlaps.fetch_add(1);
    running.fetch_sub(1);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&worker, &tick, t] {
      for (int i = 0; i < 50; ++i) {
        switch ((t + i) % 3) {
          case 0:
            worker.Restart(absl::Milliseconds(1), tick);
            break;
          case 1:
            (void)worker.StartIfIdle(absl::Milliseconds(1), tick);
            break;
          default:
            worker.Stop();
            break;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  worker.Stop();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(running.load(), 0);
  EXPECT_FALSE(worker.OnWorkerThread());
}

}  // namespace
}  // namespace detail
}  // namespace degrade
