// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A windowed breaker with a rate rule under eight threads, for
// ThreadSanitizer (the tsan preset runs the `concurrency` label). The fast
// success of a windowed breaker writes only the calling thread's shard
// (detail/breaker/count_window.hpp, time_window.hpp); these tests hold it
// to its contract:
//   * totals are exact once the threads are joined: every success and
//     failure is counted once, and the window holds exactly its size;
//   * a window filled by eight threads trips, single-threaded afterwards,
//     at exactly the failure a single-threaded reference trips at;
//   * threads tripping it together trip it within the documented bound: the
//     rule may see one call short per thread completing a call at that
//     instant, so the decision comes at most one call per thread later than
//     the reference's (here: within minimum + 2 x threads calls).
// The FakeClock does not move while threads run; no timing is asserted.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/trip.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kThreads = 8;
constexpr uint64_t kMinimum = 20;
using Breaker = CircuitBreaker<void>;

BreakerSettings WindowedSettings(const FakeClock* clock, bool time_window) {
  BreakerSettings s;
  s.name = time_window ? "time_window" : "count_window";
  s.clock = clock;
  s.timeout = absl::Seconds(60);
  s.window = time_window ? SlidingWindow::Time(absl::Seconds(10), 10)
                         : SlidingWindow::Count(100);
  s.ready_to_trip = trip::FailureRate(0.5, kMinimum);
  return s;
}

absl::Status RunOnce(Breaker& b, bool fail) {
  return b.Execute([fail] {
    return fail ? absl::UnavailableError("down") : absl::OkStatus();
  });
}

// Runs `body(thread index)` on kThreads threads released together.
template <typename Body>
void OnThreads(Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t);
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& th : threads) th.join();
}

class WindowConcurrencyTest : public ::testing::TestWithParam<bool> {};

TEST_P(WindowConcurrencyTest, TotalsAreExactOnceTheThreadsAreDone) {
  FakeClock clock;
  Breaker b(WindowedSettings(&clock, GetParam()));
  constexpr int kCalls = 5000;
  // One failure in ten: 10% never reaches the 50% rule.
  OnThreads([&](int t) {
    for (int i = 0; i < kCalls; ++i) {
      ASSERT_NE(RunOnce(b, (i + t) % 10 == 0).code(),
                absl::StatusCode::kInternal);
    }
  });
  ASSERT_EQ(b.state(), State::kClosed);
  const Counts c = b.counts();
  const uint64_t all = uint64_t{kThreads} * kCalls;
  EXPECT_EQ(c.total_successes + c.total_failures, all);
  EXPECT_EQ(c.total_failures, all / 10);
  if (GetParam()) {
    EXPECT_EQ(c.window_calls, all) << "every call is in the 10 s window";
    EXPECT_EQ(c.window_failures, all / 10);
    EXPECT_EQ(c.requests, all);
  } else {
    EXPECT_EQ(c.window_calls, 100u);
  }
  const BreakerTotals t = b.totals();
  EXPECT_EQ(t.successes + t.failures, all);
  EXPECT_EQ(t.admitted, all);
}

TEST_P(WindowConcurrencyTest, AWindowFilledByThreadsTripsAtTheReferenceCall) {
  FakeClock clock;
  Breaker b(WindowedSettings(&clock, GetParam()));
  OnThreads([&](int) {
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(RunOnce(b, false).ok());
  });
  // The single-threaded reference: a count window of 100 successes reaches
  // 50% at the 50th failure; the time window holds 1,600 successes, so
  // 1,600 failures.
  const int trips_at = GetParam() ? 1600 : 50;
  for (int f = 1; f <= trips_at; ++f) {
    ASSERT_EQ(b.state(), State::kClosed) << "tripped early, at failure " << f;
    ASSERT_FALSE(RunOnce(b, true).ok());
  }
  EXPECT_EQ(b.state(), State::kOpen);
  const TripReason why = b.last_trip();
  EXPECT_DOUBLE_EQ(why.counts.failure_rate(), 0.5);
}

TEST_P(WindowConcurrencyTest, ThreadsTrippingTogetherTripWithinTheBound) {
  for (int round = 0; round < 20; ++round) {
    FakeClock clock;
    Breaker b(WindowedSettings(&clock, GetParam()));
    // Every thread alternates failure, success, ...: each thread's prefix
    // is at least half failures, so every prefix of the merged history is
    // too, and a single-threaded breaker trips at the minimum, call 20.
    std::atomic<int> refused{0};
    OnThreads([&](int) {
      for (int i = 0; i < 50; ++i) {
        if (IsBreakerOpen(RunOnce(b, i % 2 == 0))) refused.fetch_add(1);
      }
    });
    ASSERT_EQ(b.state(), State::kOpen) << "round " << round;
    const TripReason why = b.last_trip();
    EXPECT_GE(why.counts.window_calls, kMinimum);
    EXPECT_LE(why.counts.window_calls, kMinimum + 2 * kThreads)
        << "round " << round;
    EXPECT_GE(why.counts.failure_rate(), 0.5);
    EXPECT_GT(refused.load(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Windows, WindowConcurrencyTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Time" : "Count");
                         });

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
