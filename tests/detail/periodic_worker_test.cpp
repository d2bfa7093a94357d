// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail::PeriodicWorker on real threads. Nothing sleeps and nothing asserts
// a duration: the tests wait for ticks on a condition variable, and use a
// period of an hour where they need the worker to stay asleep, so that
// "Stop() woke it" is shown by Stop() returning at all.

#include "degrade/detail/periodic_worker.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/detail/macros.hpp"
#include "gtest/gtest.h"
#include "support/tick_counter.hpp"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Duration kAnHour = absl::Hours(1);
using Ticks = degrade_tests::TickCounter;

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

#if DEGRADE_HAS_EXCEPTIONS
// Issue 13 (resource exhaustion): an exception out of a tick (bad_alloc in
// a refresh, say) escaped the worker thread's function and called
// std::terminate. It is swallowed, and the worker keeps its schedule.
TEST(PeriodicWorkerTest, ATickThatThrowsDoesNotEndTheWorker) {
  Ticks ticks;
  PeriodicWorker worker;
  worker.Restart(absl::Milliseconds(1), [&ticks] {
    ticks.Tick();
    if (ticks.count() <= 2) throw std::bad_alloc();
  });
  ASSERT_TRUE(ticks.WaitFor(3)) << "the worker stopped after a throw";
  worker.Stop();
}
#endif

// Found by review (issue 13): the last tick is destroyed on the worker
// thread after its loop has returned. A capture calling StartIfIdle as it
// was destroyed was "taken in place" by a loop that no longer ran: it
// said OK, and every later StartIfIdle from another thread said "already
// running" while nothing ticked.
TEST(PeriodicWorkerTest, AStartFromADyingTicksCapturesIsNotLost) {
  Ticks ticks;
  PeriodicWorker worker;
  absl::Status from_destructor = absl::UnknownError("not called");
  Ticks destroyed;
  struct StartOnDestroy {
    StartOnDestroy(PeriodicWorker* w, absl::Status* s, Ticks* d)
        : worker(w), status(s), destroyed(d) {}
    StartOnDestroy(const StartOnDestroy&) = delete;
    StartOnDestroy& operator=(const StartOnDestroy&) = delete;
    ~StartOnDestroy() {
      *status = worker->StartIfIdle(kAnHour, [] {});
      destroyed->Tick();
    }
    PeriodicWorker* worker;
    absl::Status* status;
    Ticks* destroyed;
  };
  auto guard = std::make_shared<StartOnDestroy>(&worker, &from_destructor,
                                                &destroyed);
  ASSERT_TRUE(worker
                  .TryRestart(absl::Milliseconds(1),
                              [g = std::move(guard), &worker] { worker.Stop(); })
                  .ok());
  ASSERT_TRUE(destroyed.WaitFor(1));
  EXPECT_FALSE(from_destructor.ok()) << "no loop would run that plan";
  const absl::Status again =
      worker.StartIfIdle(absl::Milliseconds(1), [&ticks] { ticks.Tick(); });
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_TRUE(ticks.WaitFor(2)) << "nothing ticks after an OK start";
  worker.Stop();
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

TEST(PeriodicWorkerTest, StopFromTheTickStopsAfterIt) {
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
  worker.Stop();  // joins it
  EXPECT_EQ(ticks.count(), 1u) << "no tick after the one that stopped it";
}

// Regression (issue 13, defect 3): a worker that stopped itself used to stay
// "running" for StartIfIdle until someone joined it, so an owner's next
// Start() from another thread failed (the manager's said "already running").
TEST(PeriodicWorkerTest, StartIfIdleAfterTheTickStoppedItStartsAFreshWorker) {
  Ticks ticks;
  PeriodicWorker worker;
  worker.Restart(kAnHour, [&] {
    worker.Stop();
    ticks.Tick();
  });
  ASSERT_TRUE(ticks.WaitFor(1));
  Ticks again;
  EXPECT_TRUE(worker.StartIfIdle(kAnHour, [&again] { again.Tick(); }).ok());
  ASSERT_TRUE(again.WaitFor(1));
  worker.Stop();
  EXPECT_EQ(ticks.count(), 1u);
}

// What a tick's call into its own worker does (issue 13, defect 3: Restart
// from the tick joined the worker's own thread, which throws EDEADLK and
// stopped the worker for good, or aborted without exceptions). Each row
// makes its calls from the first tick only; then the test checks which tick,
// if any, keeps running, and that a Start from the test thread works after.
TEST(PeriodicWorkerTest, CallsFromTheTickIntoItsOwnWorker) {
  enum class Then { kNewTick, kOldTick, kStopped };
  struct Case {
    const char* name;
    // The calls; returns what the last one returned (true for void ones).
    std::function<bool(PeriodicWorker&, const std::function<void()>&)> calls;
    bool returns;
    Then then;
  };
  const absl::Duration ms = absl::Milliseconds(1);
  const std::vector<Case> cases = {
      {"Restart changes the tick and period in place",
       [ms](PeriodicWorker& w, const std::function<void()>& next) {
         w.Restart(ms, next);
         return true;
       },
       true, Then::kNewTick},
      {"StartIfIdle while running is refused and changes nothing",
       [ms](PeriodicWorker& w, const std::function<void()>& next) {
         return w.StartIfIdle(ms, next).ok();
       },
       false, Then::kOldTick},
      {"Stop then StartIfIdle resumes with the new tick",
       [ms](PeriodicWorker& w, const std::function<void()>& next) {
         w.Stop();
         return w.StartIfIdle(ms, next).ok();
       },
       true, Then::kNewTick},
      {"Stop then Restart resumes with the new tick",
       [ms](PeriodicWorker& w, const std::function<void()>& next) {
         w.Stop();
         w.Restart(ms, next);
         return true;
       },
       true, Then::kNewTick},
      {"Restart then Stop: the later Stop wins",
       [ms](PeriodicWorker& w, const std::function<void()>& next) {
         w.Restart(ms, next);
         w.Stop();
         return true;
       },
       true, Then::kStopped},
      {"Stop twice stops",
       [](PeriodicWorker& w, const std::function<void()>&) {
         w.Stop();
         w.Stop();
         return true;
       },
       true, Then::kStopped},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Ticks old_tick;
    Ticks new_tick;
    std::atomic<bool> returned{false};
    const std::function<void()> next = [&new_tick] { new_tick.Tick(); };
    PeriodicWorker worker;
    worker.Restart(ms, [&] {
      if (old_tick.count() == 0) returned.store(c.calls(worker, next));
      old_tick.Tick();  // after the calls: WaitFor(1) means they were made
    });
    ASSERT_TRUE(old_tick.WaitFor(1));
    EXPECT_EQ(returned.load(), c.returns);
    switch (c.then) {
      case Then::kNewTick:
        EXPECT_TRUE(new_tick.WaitFor(2));
        break;
      case Then::kOldTick:
        EXPECT_TRUE(old_tick.WaitFor(3));
        break;
      case Then::kStopped:
        break;
    }
    worker.Stop();  // joins whatever runs
    if (c.then != Then::kOldTick) {
      EXPECT_EQ(old_tick.count(), 1u);
    }
    if (c.then != Then::kNewTick) {
      EXPECT_EQ(new_tick.count(), 0u);
    }
    // Whatever the tick did, the next Start from outside works.
    Ticks after;
    EXPECT_TRUE(worker.StartIfIdle(kAnHour, [&after] { after.Tick(); }).ok());
    EXPECT_TRUE(after.WaitFor(1));
  }
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

// Calls Restart / StartIfIdle / Stop in turn from `threads` threads at
// once, `rounds` calls each, then Stop().
void RaceStartsAndStops(PeriodicWorker& worker,
                        const std::function<void()>& tick, int threads,
                        int rounds) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&worker, &tick, t, rounds] {
      for (int i = 0; i < rounds; ++i) {
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
  for (std::thread& t : pool) t.join();
  worker.Stop();
}

// Starts and stops racing from several threads never leave two workers
// ticking at once (label: concurrency, run under TSan).
TEST(PeriodicWorkerTest, RacingStartsAndStopsNeverRunTwoTicksAtOnce) {
  PeriodicWorker worker;
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  const std::function<void()> tick = [&] {
    if (running.fetch_add(1) != 0) overlaps.fetch_add(1);
    running.fetch_sub(1);
  };
  RaceStartsAndStops(worker, tick, 4, 50);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(running.load(), 0);
  EXPECT_FALSE(worker.OnWorkerThread());
}

// Ticks that restart or stop their own worker, racing outside threads that
// do the same: nothing deadlocks, no two ticks overlap, and once stopped
// from outside nothing ticks (label: concurrency, run under TSan).
TEST(PeriodicWorkerTest, TicksCallingTheirWorkerRaceOutsideStartsAndStops) {
  PeriodicWorker worker;
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::atomic<uint64_t> n{0};
  std::function<void()> tick = [&] {
    if (running.fetch_add(1) != 0) overlaps.fetch_add(1);
    switch (n.fetch_add(1) % 4) {
      case 0:
        worker.Restart(absl::Milliseconds(1), tick);
        break;
      case 1:
        worker.Stop();
        break;
      case 2:
        (void)worker.StartIfIdle(absl::Milliseconds(1), tick);
        break;
      default:
        break;
    }
    running.fetch_sub(1);
  };
  RaceStartsAndStops(worker, tick, 3, 40);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(running.load(), 0);
  const uint64_t at_stop = n.load();
  std::this_thread::yield();
  EXPECT_EQ(n.load(), at_stop);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
