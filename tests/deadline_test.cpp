// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Hard timeouts run on real threads, so these tests use the real clock for
// the one thing they must: that the caller comes back within its budget.
// The bound asserted is generous (1 s of slack on a loaded 2-core CI
// machine); nothing waits on a sleep — hung tasks block on a latch that the
// test releases.

#include "degrade/deadline.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

// A latch a hung task waits on; shared so the task may outlive the test's
// stack frame without touching freed memory.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return open; });
  }
};

absl::Duration Since(std::chrono::steady_clock::time_point start) {
  return absl::FromChrono(std::chrono::steady_clock::now() - start);
}

TEST(DeadlineTest, RemainingCountsDownOnTheGivenClock) {
  FakeClock clock;
  const Deadline d = Deadline::In(absl::Milliseconds(100), &clock);
  EXPECT_EQ(d.remaining(), absl::Milliseconds(100));
  EXPECT_FALSE(d.expired());
  clock.Advance(absl::Milliseconds(60));
  EXPECT_EQ(d.remaining(), absl::Milliseconds(40));
  clock.Advance(absl::Milliseconds(40));
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.remaining(), absl::ZeroDuration());
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(d.remaining(), absl::ZeroDuration());  // never negative
  EXPECT_EQ(Deadline::At(clock.Now(), &clock).when(), clock.Now());
}

TEST(CallWithDeadlineTest, TheCallableReceivesItsDeadline) {
  FakeClock clock;
  absl::StatusOr<int> r = CallWithDeadline(
      absl::Milliseconds(100),
      [&clock](const Deadline& d) -> absl::StatusOr<int> {
        EXPECT_EQ(d.remaining(), absl::Milliseconds(100));
        clock.Advance(absl::Milliseconds(30));  // the RPC takes 30 ms
        EXPECT_EQ(d.remaining(), absl::Milliseconds(70));
        return 7;
      },
      &clock);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 7);
}

TEST(CallWithDeadlineTest, ALateAnswerIsDiscarded) {
  FakeClock clock;
  absl::StatusOr<int> r = CallWithDeadline(
      absl::Milliseconds(100),
      [&clock](const Deadline&) {
        clock.Advance(absl::Milliseconds(100));  // exactly at the deadline
        return 7;
      },
      &clock);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  // A callable's own error is passed through even when late.
  absl::Status s = CallWithDeadline(
      absl::Milliseconds(100),
      [&clock](const Deadline&) {
        clock.Advance(absl::Seconds(1));
        return absl::UnavailableError("down");
      },
      &clock);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
}

TEST(CallWithDeadlineTest, ComposesWithABreaker) {
  FakeClock clock;
  BreakerSettings bs;
  bs.clock = &clock;
  bs.ready_to_trip = trip::ConsecutiveFailures(2);
  CircuitBreaker<int> breaker(bs);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<int> r = breaker.Execute([&clock] {
      return CallWithDeadline(
          absl::Milliseconds(100),
          [&clock](const Deadline&) {
            clock.Advance(absl::Milliseconds(250));  // a slow backend
            return 1;
          },
          &clock);
    });
    EXPECT_TRUE(absl::IsDeadlineExceeded(r.status()));
  }
  EXPECT_EQ(breaker.state(), State::kOpen);
}

TEST(CallWithTimeoutTest, ReturnsTheResultWhenInTime) {
  ThreadPool pool(2);
  absl::StatusOr<int> r =
      CallWithTimeout(pool, absl::Seconds(30), [] { return 42; });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 42);
  absl::StatusOr<std::string> s = CallWithTimeout(
      pool, absl::Seconds(30), []() -> absl::StatusOr<std::string> {
        return absl::NotFoundError("no");
      });
  EXPECT_TRUE(absl::IsNotFound(s.status()));
}

TEST(CallWithTimeoutTest, VoidAndStatusCallables) {
  ThreadPool pool(1);
  std::atomic<int> ran{0};
  absl::Status a =
      CallWithTimeout(pool, absl::Seconds(30), [&ran] { ran.fetch_add(1); });
  EXPECT_TRUE(a.ok());
  absl::Status b = CallWithTimeout(
      pool, absl::Seconds(30), [] { return absl::UnavailableError("down"); });
  EXPECT_TRUE(absl::IsUnavailable(b));
  EXPECT_EQ(ran.load(), 1);
}

TEST(CallWithTimeoutTest, AHungCallableTimesOutWithinTheBudget) {
  ThreadPool pool(1);
  auto latch = std::make_shared<Latch>();
  const absl::Duration budget = absl::Milliseconds(50);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<int> r = CallWithTimeout(pool, budget, [latch] {
    latch->Wait();
    return 1;
  });
  const absl::Duration waited = Since(start);
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("50ms"));
  EXPECT_GE(waited, budget - absl::Milliseconds(1));
  EXPECT_LT(waited, budget + absl::Seconds(1));
  // The late result arrives after the caller gave up and is discarded; the
  // pool's destructor waits for the task, and ASan checks nothing leaks or
  // is touched after free.
  latch->Open();
}

TEST(CallWithTimeoutTest, AnInfiniteBudgetWaitsForTheAnswer) {
  // Regression: the budget was handed to condition_variable::wait_for, where
  // InfiniteDuration (or any budget of centuries) overflowed steady_clock
  // and timed out at once. The callable answers only after the caller has
  // started waiting, so an immediate timeout would show.
  ThreadPool pool(1);
  for (const absl::Duration budget :
       {absl::InfiniteDuration(), absl::Hours(24 * 365 * 300)}) {
    auto started = std::make_shared<Latch>();
    auto release = std::make_shared<Latch>();
    std::thread opener([started, release] {
      started->Wait();
      release->Open();
    });
    absl::StatusOr<int> r = CallWithTimeout(pool, budget, [started, release] {
      started->Open();
      release->Wait();
      return 42;
    });
    opener.join();
    ASSERT_TRUE(r.ok()) << absl::FormatDuration(budget) << ": " << r.status();
    EXPECT_EQ(*r, 42);
  }
}

TEST(CallWithTimeoutTest, AZeroOrNegativeBudgetTimesOutAtOnce) {
  ThreadPool pool(1);
  auto latch = std::make_shared<Latch>();
  for (const absl::Duration budget :
       {absl::ZeroDuration(), -absl::Seconds(1), -absl::InfiniteDuration()}) {
    absl::StatusOr<int> r = CallWithTimeout(pool, budget, [latch] {
      latch->Wait();
      return 1;
    });
    EXPECT_TRUE(absl::IsDeadlineExceeded(r.status()))
        << absl::FormatDuration(budget) << ": " << r.status();
  }
  latch->Open();
}

TEST(CallWithTimeoutTest, AThrowingCallableBecomesAStatus) {
  ThreadPool pool(1);
  absl::StatusOr<int> r = CallWithTimeout(pool, absl::Seconds(30), []() -> int {
    throw std::runtime_error("socket closed");
  });
  EXPECT_TRUE(IsCallableException(r.status()));
  EXPECT_THAT(r.status().message(), HasSubstr("socket closed"));
}

TEST(CallWithTimeoutTest, AFullExecutorRefusesAtOnce) {
  ThreadPool pool(1, /*max_queue=*/1);
  auto latch = std::make_shared<Latch>();
  auto running = std::make_shared<Latch>();
  // Every exit path opens the latch, so the pool's destructor can't wait on
  // a task that never finishes.
  struct OpenOnExit {
    std::shared_ptr<Latch> l;
    ~OpenOnExit() { l->Open(); }
  } open_on_exit{latch};
  ASSERT_TRUE(pool.Submit([latch, running] {
    running->Open();
    latch->Wait();  // occupies the only thread
  }));
  running->Wait();                  // the worker has taken it off the queue
  ASSERT_TRUE(pool.Submit([] {}));  // fills the queue
  absl::StatusOr<int> r =
      CallWithTimeout(pool, absl::Seconds(30), [] { return 1; });
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
}

// An executor whose Submit() throws (issue 32, item 8).
class ThrowingExecutor final : public Executor {
 public:
  bool Submit(std::function<void()>) override {
    throw std::runtime_error("queue is broken");
  }
};

TEST(CallWithTimeoutTest, AThrowingSubmitIsAStatusNamingThePlaceAndCause) {
  ThrowingExecutor executor;
  bool ran = false;
  absl::StatusOr<int> r = absl::UnknownError("not run");
  EXPECT_NO_THROW(r = CallWithTimeout(executor, absl::Seconds(30), [&ran] {
                    ran = true;
                    return 1;
                  }));
  EXPECT_FALSE(ran);  // never inline: the budget could not be enforced
  EXPECT_TRUE(absl::IsResourceExhausted(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("CallWithTimeout"));
  EXPECT_THAT(r.status().message(), HasSubstr("Submit() threw"));
  EXPECT_THAT(r.status().message(), HasSubstr("queue is broken"));
}

// Many callers share one pool; some calls hang on a latch until every
// caller has returned, the others answer at once. Each hung caller must get
// DEADLINE_EXCEEDED, each other caller its own answer, and the late results,
// delivered after their callers left, must be discarded without touching
// freed memory (ASan) or racing (TSan). Statuses are asserted, never
// timings: the answering calls have a budget they cannot miss, the hung
// ones a latch that opens only after their budget has run out.
TEST(CallWithTimeoutConcurrencyTest, HungAndAnsweringCallersOnASharedPool) {
  constexpr int kCallers = 32;
  constexpr int kRounds = 3;
  const auto is_hung = [](int i) { return i % 4 == 0; };  // 8 per round
  auto late = std::make_shared<std::atomic<int>>(0);
  {
    // More threads than hung calls, so answering calls always find one.
    ThreadPool pool(12);
    for (int round = 0; round < kRounds; ++round) {
      auto latch = std::make_shared<Latch>();
      std::vector<absl::StatusOr<int>> results(
          kCallers, absl::UnknownError("not called"));
      std::vector<std::thread> callers;
      callers.reserve(kCallers);
      for (int i = 0; i < kCallers; ++i) {
        callers.emplace_back([&pool, &results, &is_hung, latch, late, i] {
          if (is_hung(i)) {
            results[i] =
                CallWithTimeout(pool, absl::Milliseconds(20), [latch, late, i] {
                  latch->Wait();
                  late->fetch_add(1);
                  return i;
                });
          } else if (i % 5 == 0) {
            results[i] = CallWithTimeout(
                pool, absl::Seconds(60), [i]() -> absl::StatusOr<int> {
                  return absl::NotFoundError(absl::StrCat("no item ", i));
                });
          } else {
            results[i] = CallWithTimeout(pool, absl::Seconds(60),
                                         [i] { return 1000 * i; });
          }
        });
      }
      for (std::thread& t : callers) t.join();
      latch->Open();  // every caller has left: the late results come now
      for (int i = 0; i < kCallers; ++i) {
        const absl::StatusOr<int>& r = results[i];
        if (is_hung(i)) {
          EXPECT_TRUE(absl::IsDeadlineExceeded(r.status()))
              << "caller " << i << ": " << r.status();
        } else if (i % 5 == 0) {
          EXPECT_TRUE(absl::IsNotFound(r.status())) << "caller " << i;
          EXPECT_EQ(r.status().message(), absl::StrCat("no item ", i));
        } else {
          ASSERT_TRUE(r.ok()) << "caller " << i << ": " << r.status();
          EXPECT_EQ(*r, 1000 * i) << "caller " << i;
        }
      }
    }
  }  // the pool runs what is left and joins its threads
  EXPECT_EQ(late->load(), kRounds * (kCallers / 4))
      << "every hung call ran to its end after its caller gave up";
}

TEST(ThreadPoolTest, TheDestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(pool.Submit([&ran] { ran.fetch_add(1); }));
    }
  }
  EXPECT_EQ(ran.load(), 20);
}

TEST(ExecuteWithTimeoutTest, TimeoutsAreFailuresSoAHangingBackendTrips) {
  FakeClock clock;
  BreakerSettings s;
  s.name = "rank";
  s.clock = &clock;
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  CircuitBreaker<int> breaker(s);
  // Before the pool: a late task still counts itself while the pool joins.
  std::atomic<int> started{0};
  ThreadPool pool(3);
  auto latch = std::make_shared<Latch>();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<int> r = ExecuteWithTimeout(
        breaker, pool, absl::Milliseconds(20), [latch, &started] {
          started.fetch_add(1);
          latch->Wait();
          return 1;
        });
    EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  }
  EXPECT_EQ(breaker.state(), State::kOpen);
  EXPECT_EQ(breaker.counts().total_failures, 0u);  // cleared by the trip
  EXPECT_EQ(breaker.totals().failures, 3u);
  // Open: rejected at once, nothing submitted.
  absl::StatusOr<int> rejected = ExecuteWithTimeout(
      breaker, pool, absl::Milliseconds(20), [] { return 1; });
  EXPECT_TRUE(IsBreakerOpen(rejected.status()));
  latch->Open();
  EXPECT_LE(started.load(), 3);
}

// Issue 13, defect 1, through the breaker: with an infinite budget eight
// healthy calls timed out at once and opened the breaker. Each call answers
// only after the caller has started waiting.
TEST(ExecuteWithTimeoutTest, AnInfiniteBudgetNeverTripsAHealthyBackend) {
  FakeClock clock;
  BreakerSettings s;
  s.name = "rank";
  s.clock = &clock;
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  CircuitBreaker<int> breaker(s);
  ThreadPool pool(1);
  for (int i = 0; i < 8; ++i) {
    auto started = std::make_shared<Latch>();
    auto release = std::make_shared<Latch>();
    std::thread opener([started, release] {
      started->Wait();
      release->Open();
    });
    absl::StatusOr<int> r = ExecuteWithTimeout(
        breaker, pool, absl::InfiniteDuration(), [started, release, i] {
          started->Open();
          release->Wait();
          return i;
        });
    opener.join();
    ASSERT_TRUE(r.ok()) << "call " << i << ": " << r.status();
    EXPECT_EQ(*r, i);
  }
  EXPECT_EQ(breaker.state(), State::kClosed);
  EXPECT_EQ(breaker.totals().successes, 8u);
  EXPECT_EQ(breaker.totals().failures, 0u);
}

TEST(ExecuteWithTimeoutTest, SuccessInTimeIsASuccess) {
  FakeClock clock;
  BreakerSettings s;
  s.clock = &clock;
  CircuitBreaker<int> breaker(s);
  ThreadPool pool(1);
  absl::StatusOr<int> r =
      ExecuteWithTimeout(breaker, pool, absl::Seconds(30), [] { return 5; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(breaker.counts().total_successes, 1u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
