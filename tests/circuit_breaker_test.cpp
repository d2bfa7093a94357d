// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// gobreaker's semantics, rule by rule, on a FakeClock.

#include "degrade/circuit_breaker.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<int> Fail() { return absl::InternalError("backend down"); }
absl::StatusOr<int> Succeed() { return 7; }

struct Transition {
  std::string name;
  State from;
  State to;
  bool operator==(const Transition& o) const {
    return name == o.name && from == o.from && to == o.to;
  }
};

std::ostream& operator<<(std::ostream& os, const Transition& t) {
  return os << t.name << ":" << StateName(t.from) << "->" << StateName(t.to);
}

class CircuitBreakerTest : public ::testing::Test {
 protected:
  BreakerSettings Settings() {
    BreakerSettings s;
    s.name = "feature-service";
    s.clock = &clock_;
    s.on_state_change = [this](const std::string& name, State from, State to) {
      transitions_.push_back({name, from, to});
    };
    return s;
  }

  template <typename T>
  void FailTimes(CircuitBreaker<T>& cb, int n) {
    for (int i = 0; i < n; ++i) {
      if constexpr (std::is_void_v<T>) {
        (void)cb.Execute([] { return absl::InternalError("backend down"); });
      } else {
        (void)cb.Execute(Fail);
      }
    }
  }

  // Trips a default-settings breaker (6 consecutive failures).
  template <typename T>
  void Trip(CircuitBreaker<T>& cb) {
    FailTimes(cb, 6);
    ASSERT_EQ(cb.state(), State::kOpen);
  }

  FakeClock clock_;
  std::vector<Transition> transitions_;
};

TEST_F(CircuitBreakerTest, StartsClosedWithEmptyCounts) {
  CircuitBreaker<int> cb(Settings());
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_EQ(cb.name(), "feature-service");
  const Counts c = cb.counts();
  EXPECT_EQ(c.requests, 0u);
  EXPECT_EQ(c.total_successes, 0u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(c.consecutive_successes, 0u);
  EXPECT_EQ(c.consecutive_failures, 0u);
}

TEST_F(CircuitBreakerTest, CountsTrackEveryOutcome) {
  CircuitBreaker<int> cb(Settings());
  EXPECT_EQ(*cb.Execute(Succeed), 7);
  (void)cb.Execute(Succeed);
  (void)cb.Execute(Fail);
  Counts c = cb.counts();
  EXPECT_EQ(c.requests, 3u);
  EXPECT_EQ(c.total_successes, 2u);
  EXPECT_EQ(c.total_failures, 1u);
  EXPECT_EQ(c.consecutive_successes, 0u);
  EXPECT_EQ(c.consecutive_failures, 1u);
  (void)cb.Execute(Succeed);
  c = cb.counts();
  EXPECT_EQ(c.consecutive_successes, 1u);
  EXPECT_EQ(c.consecutive_failures, 0u);
  EXPECT_EQ(c.window_calls, 4u);
  EXPECT_EQ(c.window_failures, 1u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.25);
}

TEST_F(CircuitBreakerTest, DefaultTripsOnTheSixthConsecutiveFailure) {
  CircuitBreaker<int> cb(Settings());
  FailTimes(cb, 5);
  EXPECT_EQ(cb.state(), State::kClosed);
  (void)cb.Execute(Succeed);  // breaks the streak
  FailTimes(cb, 5);
  EXPECT_EQ(cb.state(), State::kClosed);
  FailTimes(cb, 1);
  EXPECT_EQ(cb.state(), State::kOpen);
  EXPECT_THAT(
      transitions_,
      ElementsAre(Transition{"feature-service", State::kClosed, State::kOpen}));
}

TEST_F(CircuitBreakerTest, ReadyToTripSeesCountsIncludingTheFailure) {
  BreakerSettings s = Settings();
  std::vector<Counts> seen;
  s.ready_to_trip = [&seen](const Counts& c) {
    seen.push_back(c);
    return c.requests >= 3 && c.total_failures * 10 >= c.requests * 6;
  };
  CircuitBreaker<int> cb(s);
  (void)cb.Execute(Succeed);  // successes never consult ready_to_trip
  EXPECT_TRUE(seen.empty());
  (void)cb.Execute(Fail);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].requests, 2u);
  EXPECT_EQ(seen[0].total_failures, 1u);
  EXPECT_EQ(seen[0].consecutive_failures, 1u);
  EXPECT_EQ(cb.state(), State::kClosed);
  (void)cb.Execute(Fail);  // 2 of 3 failed: 66% >= 60%
  EXPECT_EQ(cb.state(), State::kOpen);
}

TEST_F(CircuitBreakerTest, TripRuleAtExactlyTheThreshold) {
  BreakerSettings s = Settings();
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  CircuitBreaker<int> cb(s);
  FailTimes(cb, 2);
  EXPECT_EQ(cb.state(), State::kClosed);
  FailTimes(cb, 1);
  EXPECT_EQ(cb.state(), State::kOpen);
}

TEST_F(CircuitBreakerTest, OpenRejectsWithoutRunningTheCallable) {
  CircuitBreaker<int> cb(Settings());
  Trip(cb);
  int runs = 0;
  absl::StatusOr<int> r = cb.Execute([&runs]() -> absl::StatusOr<int> {
    ++runs;
    return 1;
  });
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(IsBreakerOpen(r.status()));
  EXPECT_FALSE(IsTooManyRequests(r.status()));
  EXPECT_FALSE(IsCallableException(r.status()));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("feature-service"));
  EXPECT_EQ(cb.totals().rejected_open, 1u);
}

TEST_F(CircuitBreakerTest, CallableUnavailableIsNotMistakenForARejection) {
  CircuitBreaker<int> cb(Settings());
  absl::StatusOr<int> r = cb.Execute([]() -> absl::StatusOr<int> {
    return absl::UnavailableError("circuit breaker 'feature-service' is open");
  });
  EXPECT_FALSE(IsBreakerOpen(r.status()));
  EXPECT_FALSE(IsRejected(r.status()));
  EXPECT_EQ(cb.counts().total_failures, 1u);
}

TEST_F(CircuitBreakerTest, StaysOpenAtExactlyTimeoutAndHalfOpensJustAfter) {
  BreakerSettings s = Settings();
  s.timeout = absl::Seconds(10);
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(cb.state(), State::kOpen);
  EXPECT_TRUE(IsBreakerOpen(cb.Execute(Succeed).status()));
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
}

TEST_F(CircuitBreakerTest, ZeroTimeoutMeansSixtySeconds) {
  CircuitBreaker<int> cb(Settings());
  Trip(cb);
  clock_.Advance(absl::Seconds(60));
  EXPECT_EQ(cb.state(), State::kOpen);
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
}

TEST_F(CircuitBreakerTest, TheNextCallAlsoObservesTheTimeout) {
  BreakerSettings s = Settings();
  s.timeout = absl::Seconds(1);
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(2));
  // No state() query: the call itself moves the breaker to half-open, runs
  // as the trial, and its success closes it (max_requests 0 means 1).
  EXPECT_EQ(*cb.Execute(Succeed), 7);
  EXPECT_THAT(
      transitions_,
      ElementsAre(
          Transition{"feature-service", State::kClosed, State::kOpen},
          Transition{"feature-service", State::kOpen, State::kHalfOpen},
          Transition{"feature-service", State::kHalfOpen, State::kClosed}));
}

TEST_F(CircuitBreakerTest, ZeroMaxRequestsMeansOneTrial) {
  CircuitBreaker<int> cb(Settings());
  Trip(cb);
  clock_.Advance(absl::Seconds(61));
  absl::StatusOr<Permit> first = cb.Allow();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->admitted_state(), State::kHalfOpen);
  absl::StatusOr<Permit> second = cb.Allow();
  EXPECT_TRUE(IsTooManyRequests(second.status()));
  EXPECT_THAT(second.status().message(), HasSubstr("feature-service"));
  first->Done(absl::OkStatus());
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, HalfOpenAdmitsAtMostMaxRequests) {
  BreakerSettings s = Settings();
  s.max_requests = 3;
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(61));
  std::vector<Permit> permits;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Permit> p = cb.Allow();
    ASSERT_TRUE(p.ok()) << i;
    permits.push_back(std::move(*p));
  }
  EXPECT_TRUE(IsTooManyRequests(cb.Allow().status()));
  EXPECT_TRUE(IsTooManyRequests(cb.Execute(Succeed).status()));
  EXPECT_EQ(cb.totals().rejected_too_many, 2u);
  EXPECT_EQ(cb.counts().requests, 3u);
}

TEST_F(CircuitBreakerTest, HalfOpenClosesAfterMaxRequestsConsecutiveSuccesses) {
  BreakerSettings s = Settings();
  s.max_requests = 3;
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(61));
  (void)cb.Execute(Succeed);
  (void)cb.Execute(Succeed);
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  EXPECT_EQ(cb.counts().consecutive_successes, 2u);
  (void)cb.Execute(Succeed);
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_EQ(cb.counts().requests, 0u);  // cleared by the transition
}

TEST_F(CircuitBreakerTest, AnyFailureInHalfOpenReopens) {
  BreakerSettings s = Settings();
  s.max_requests = 3;
  s.timeout = absl::Seconds(5);
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(6));
  (void)cb.Execute(Succeed);
  (void)cb.Execute(Fail);
  EXPECT_EQ(cb.state(), State::kOpen);
  // A fresh full timeout from the reopening.
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(cb.state(), State::kOpen);
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
}

TEST_F(CircuitBreakerTest, EveryTransitionStartsANewGenerationWithClearCounts) {
  CircuitBreaker<int> cb(Settings());
  const uint64_t g0 = cb.generation();
  (void)cb.Execute(Succeed);
  EXPECT_EQ(cb.generation(), g0);
  Trip(cb);
  const uint64_t g1 = cb.generation();
  EXPECT_GT(g1, g0);
  EXPECT_EQ(cb.counts().requests, 0u);
  EXPECT_EQ(cb.counts().total_failures, 0u);
  clock_.Advance(absl::Seconds(61));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  const uint64_t g2 = cb.generation();
  EXPECT_GT(g2, g1);
  (void)cb.Execute(Succeed);
  EXPECT_GT(cb.generation(), g2);
}

TEST_F(CircuitBreakerTest, ZeroIntervalNeverClearsClosedCounts) {
  CircuitBreaker<int> cb(Settings());
  FailTimes(cb, 3);
  clock_.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_EQ(cb.counts().consecutive_failures, 3u);
  FailTimes(cb, 3);
  EXPECT_EQ(cb.state(), State::kOpen);
}

TEST_F(CircuitBreakerTest, IntervalClearsCountsJustAfterItEnds) {
  BreakerSettings s = Settings();
  s.interval = absl::Seconds(10);
  CircuitBreaker<int> cb(s);
  FailTimes(cb, 3);
  const uint64_t g = cb.generation();
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_EQ(cb.counts().total_failures, 3u);
  EXPECT_EQ(cb.generation(), g);
  clock_.Advance(absl::Nanoseconds(1));
  FailTimes(cb, 1);  // the call observes the interval, then fails
  EXPECT_EQ(cb.generation(), g + 1);
  EXPECT_EQ(cb.counts().total_failures, 1u);
  EXPECT_EQ(cb.counts().consecutive_failures, 1u);
  // Five failures spread over two intervals never trip.
  FailTimes(cb, 4);
  clock_.Advance(absl::Seconds(11));
  FailTimes(cb, 5);
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_TRUE(transitions_.empty());
}

TEST_F(CircuitBreakerTest, ResultFromAnEarlierGenerationIsIgnored) {
  CircuitBreaker<int> cb(Settings());
  absl::StatusOr<Permit> old = cb.Allow();
  ASSERT_TRUE(old.ok());
  Trip(cb);
  clock_.Advance(absl::Seconds(61));
  ASSERT_EQ(cb.state(), State::kHalfOpen);
  // A late failure from the closed generation must not reopen the breaker...
  old->Done(absl::InternalError("late"));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  EXPECT_EQ(cb.counts().total_failures, 0u);
  EXPECT_EQ(cb.totals().stale, 1u);
  // ...nor can a late success close it.
  absl::StatusOr<Permit> trial = cb.Allow();
  ASSERT_TRUE(trial.ok());
  EXPECT_EQ(cb.counts().total_successes, 0u);
  trial->Done(absl::OkStatus());
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, ResultStraddlingAnIntervalIsIgnored) {
  BreakerSettings s = Settings();
  s.interval = absl::Seconds(1);
  CircuitBreaker<int> cb(s);
  absl::StatusOr<Permit> p = cb.Allow();
  ASSERT_TRUE(p.ok());
  clock_.Advance(absl::Seconds(2));
  (void)cb.Execute(Succeed);  // starts the next interval's generation
  p->Done(absl::InternalError("late"));
  EXPECT_EQ(cb.counts().total_failures, 0u);
  EXPECT_EQ(cb.counts().total_successes, 1u);
}

TEST_F(CircuitBreakerTest, OnStateChangeMayQueryAndCallTheBreaker) {
  BreakerSettings s = Settings();
  CircuitBreaker<int>* self = nullptr;
  std::vector<State> observed;
  s.on_state_change = [&](const std::string&, State, State to) {
    observed.push_back(to);
    EXPECT_EQ(self->state(), to);
    (void)self->counts();
    (void)self->Execute(Succeed);  // rejected while open; no deadlock
  };
  CircuitBreaker<int> cb(s);
  self = &cb;
  Trip(cb);
  EXPECT_THAT(observed, ElementsAre(State::kOpen));
}

TEST_F(CircuitBreakerTest, IsSuccessfulDecidesWhatCountsAsFailure) {
  BreakerSettings s = Settings();
  s.is_successful = [](const absl::Status& st) {
    return st.ok() || absl::IsNotFound(st);
  };
  CircuitBreaker<int> cb(s);
  for (int i = 0; i < 10; ++i) {
    (void)cb.Execute([]() -> absl::StatusOr<int> {
      return absl::NotFoundError("no such user");
    });
  }
  EXPECT_EQ(cb.state(), State::kClosed);
  EXPECT_EQ(cb.counts().total_successes, 10u);
}

TEST_F(CircuitBreakerTest, ExcludedOutcomesAreCountedApart) {
  BreakerSettings s = Settings();
  s.is_excluded = [](const absl::Status& st) {
    return absl::IsInvalidArgument(st);
  };
  CircuitBreaker<int> cb(s);
  for (int i = 0; i < 10; ++i) {
    (void)cb.Execute([]() -> absl::StatusOr<int> {
      return absl::InvalidArgumentError("bad request");
    });
  }
  const Counts c = cb.counts();
  EXPECT_EQ(c.total_exclusions, 10u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(c.total_successes, 0u);
  EXPECT_EQ(c.requests, 10u);
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, ThrowingCallableCountsAsFailureAndNothingEscapes) {
  CircuitBreaker<int> cb(Settings());
  absl::StatusOr<int> r =
      cb.Execute([]() -> int { throw std::runtime_error("connection reset"); });
  EXPECT_TRUE(IsCallableException(r.status()));
  EXPECT_FALSE(IsBreakerOpen(r.status()));
  EXPECT_THAT(r.status().message(), HasSubstr("connection reset"));
  EXPECT_THAT(r.status().message(), HasSubstr("feature-service"));
  EXPECT_EQ(cb.counts().total_failures, 1u);
  for (int i = 0; i < 5; ++i) {
    (void)cb.Execute([]() -> int { throw 42; });
  }
  EXPECT_EQ(cb.state(), State::kOpen);
  EXPECT_EQ(cb.totals().admitted, cb.totals().failures + cb.totals().successes);
}

TEST_F(CircuitBreakerTest, ExecuteAcceptsPlainValuesAndMoveOnlyTypes) {
  CircuitBreaker<std::unique_ptr<int>> cb(Settings());
  absl::StatusOr<std::unique_ptr<int>> r =
      cb.Execute([] { return std::make_unique<int>(5); });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(**r, 5);
}

TEST_F(CircuitBreakerTest, VoidBreakerTakesStatusOrVoidCallables) {
  CircuitBreaker<void> cb(Settings());
  int runs = 0;
  EXPECT_TRUE(cb.Execute([&runs] { ++runs; }).ok());
  absl::Status st =
      cb.Execute([] { return absl::DeadlineExceededError("slow"); });
  EXPECT_TRUE(absl::IsDeadlineExceeded(st));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(cb.counts().total_successes, 1u);
  EXPECT_EQ(cb.counts().total_failures, 1u);
  Trip(cb);
  EXPECT_TRUE(IsBreakerOpen(cb.Execute([] {})));
}

TEST_F(CircuitBreakerTest, PermitReportsOnceAndIsMoveOnly) {
  static_assert(!std::is_copy_constructible_v<Permit>);
  static_assert(!std::is_copy_assignable_v<Permit>);
  static_assert(std::is_nothrow_move_constructible_v<Permit>);
  CircuitBreaker<int> cb(Settings());
  absl::StatusOr<Permit> p = cb.Allow();
  ASSERT_TRUE(p.ok());
  Permit moved = std::move(*p);
  EXPECT_FALSE(p->pending());
  EXPECT_TRUE(moved.pending());
  moved.Done(absl::InternalError("x"));
  moved.Done(absl::InternalError("x"));
  p->Done(absl::InternalError("x"));
  EXPECT_EQ(cb.counts().total_failures, 1u);
  EXPECT_EQ(cb.totals().abandoned, 0u);
}

TEST_F(CircuitBreakerTest, AbandonedPermitGivesItsHalfOpenSlotBack) {
  CircuitBreaker<int> cb(Settings());
  Trip(cb);
  clock_.Advance(absl::Seconds(61));
  {
    absl::StatusOr<Permit> p = cb.Allow();
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(IsTooManyRequests(cb.Allow().status()));
  }  // destroyed without Done()
  EXPECT_EQ(cb.totals().abandoned, 1u);
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  EXPECT_EQ(cb.counts().requests, 0u);
  absl::StatusOr<Permit> again = cb.Allow();
  ASSERT_TRUE(again.ok());
  again->Done(absl::OkStatus());
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, MoveAssigningOverAPendingPermitAbandonsIt) {
  CircuitBreaker<int> cb(Settings());
  absl::StatusOr<Permit> a = cb.Allow();
  absl::StatusOr<Permit> b = cb.Allow();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  *a = std::move(*b);
  EXPECT_EQ(cb.totals().abandoned, 1u);
  a->Done(absl::OkStatus());
  EXPECT_EQ(cb.counts().total_successes, 1u);
  EXPECT_EQ(cb.counts().requests, 1u);
}

TEST_F(CircuitBreakerTest, TotalsAddUp) {
  BreakerSettings s = Settings();
  s.is_excluded = [](const absl::Status& st) { return absl::IsCancelled(st); };
  CircuitBreaker<int> cb(s);
  (void)cb.Execute(Succeed);
  (void)cb.Execute([]() -> absl::StatusOr<int> {
    return absl::CancelledError("client went away");
  });
  { absl::StatusOr<Permit> dropped = cb.Allow(); }
  Trip(cb);
  (void)cb.Execute(Succeed);  // rejected
  const BreakerTotals t = cb.totals();
  EXPECT_EQ(t.admitted, 9u);
  EXPECT_EQ(t.successes, 1u);
  EXPECT_EQ(t.failures, 6u);
  EXPECT_EQ(t.exclusions, 1u);
  EXPECT_EQ(t.abandoned, 1u);
  EXPECT_EQ(t.rejected_open, 1u);
  EXPECT_EQ(t.admitted,
            t.successes + t.failures + t.exclusions + t.abandoned + t.stale);
}

TEST_F(CircuitBreakerTest, RealClockIsTheDefault) {
  BreakerSettings s;
  s.name = "real";
  CircuitBreaker<int> cb(s);
  EXPECT_EQ(*cb.Execute(Succeed), 7);
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, CapBelowTheTimeoutIsRefusedOrRaised) {
  BreakerSettings s = Settings();
  s.timeout = absl::Seconds(10);
  s.max_timeout = absl::Seconds(5);
  s.backoff_multiplier = 2;
  const absl::Status v = ValidateBreakerSettings(s);
  EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v.message(), HasSubstr("'max_timeout'"));
  EXPECT_THAT(v.message(), HasSubstr("feature-service"));
  EXPECT_FALSE(CircuitBreaker<int>::Create(s).ok());
  // The constructor raises the cap to the timeout: backoff never shortens.
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(10) + absl::Nanoseconds(1));
  (void)cb.Execute(Fail);  // the trial fails
  EXPECT_EQ(cb.current_open_duration(), absl::Seconds(10));
}

TEST_F(CircuitBreakerTest, InfiniteTimeoutStaysOpenUntilReset) {
  BreakerSettings s = Settings();
  s.timeout = absl::InfiniteDuration();
  ASSERT_TRUE(ValidateBreakerSettings(s).ok());
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Hours(24 * 365 * 100));
  EXPECT_EQ(cb.state(), State::kOpen);
  cb.Reset();
  EXPECT_EQ(cb.state(), State::kClosed);
}

// A clock that parks one chosen thread inside Now() until released, to
// stop a call between reading the breaker's state and counting itself.
class GatedClock final : public Clock {
 public:
  explicit GatedClock(const FakeClock* time) : time_(time) {}
  absl::Time Now() const override {
    std::unique_lock<std::mutex> lock(mu_);
    if (gated_ == std::this_thread::get_id() && !released_) {
      parked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
    }
    return time_->Now();
  }
  void Gate(std::thread::id id) {
    std::lock_guard<std::mutex> lock(mu_);
    gated_ = id;
  }
  void WaitUntilParked() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return parked_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const FakeClock* time_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::thread::id gated_;
  mutable bool parked_ = false;
  bool released_ = false;
};

TEST_F(CircuitBreakerTest,
       StragglerFromAnEarlierGenerationCannotTakeATrialSlot) {
  // Regression: a closed-state call that stalled between reading the state
  // and counting its admission used to land in the half-open generation and
  // hold its only trial slot forever.
  GatedClock gated(&clock_);
  BreakerSettings s = Settings();
  s.clock = &gated;
  s.interval = absl::Seconds(60);  // makes the fast path read the clock
  s.timeout = absl::Seconds(1);
  CircuitBreaker<int> cb(s);
  std::thread straggler([&] {
    gated.Gate(std::this_thread::get_id());
    (void)cb.Execute(Succeed);
  });
  gated.WaitUntilParked();
  Trip(cb);
  clock_.Advance(absl::Seconds(2));
  ASSERT_EQ(cb.state(), State::kHalfOpen);
  gated.Release();
  straggler.join();
  EXPECT_EQ(cb.counts().requests, 0u);
  absl::StatusOr<Permit> trial = cb.Allow();
  ASSERT_TRUE(trial.ok()) << trial.status();
  trial->Done(absl::OkStatus());
  EXPECT_EQ(cb.state(), State::kClosed);
}

TEST_F(CircuitBreakerTest, HalfOpenWaitIgnoresAQuietPeriodWithNoTrialOut) {
  BreakerSettings s = Settings();
  s.max_requests = 3;
  s.timeout = absl::Seconds(1);
  s.half_open_max_wait = absl::Seconds(5);
  s.backoff_multiplier = 2;
  CircuitBreaker<int> cb(s);
  Trip(cb);
  clock_.Advance(absl::Seconds(2));
  (void)cb.Execute(Succeed);
  (void)cb.Execute(Succeed);
  clock_.Advance(absl::Seconds(60));  // no traffic; nothing outstanding
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  EXPECT_EQ(cb.current_open_duration(), absl::Seconds(1));
  // A trial admitted now has its own full wait.
  absl::StatusOr<Permit> late = cb.Allow();
  ASSERT_TRUE(late.ok());
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(cb.state(), State::kHalfOpen);
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(cb.state(), State::kOpen);
  EXPECT_EQ(cb.current_open_duration(), absl::Seconds(2));
}

TEST(StateNameTest, NamesEveryState) {
  EXPECT_EQ(StateName(State::kClosed), "closed");
  EXPECT_EQ(StateName(State::kHalfOpen), "half-open");
  EXPECT_EQ(StateName(State::kOpen), "open");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
