// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Retrier on a FakeClock (its sleep advances the clock, so nothing sleeps):
// what is retried and what never is (a breaker's rejection, a shed without
// a hint, "do not retry"), the backoff's full jitter and its cap, the
// server's retry-after, the deadline, the budget (the original error
// returned and counted), the message of the last error, the attempt's
// number and deadline, a throwing attempt and predicate, composition with
// a breaker, telling callers not to retry, the stats and their export,
// every bad setting named; and threads sharing one retrier and budget
// (label concurrency, run under TSan).

#include "degrade/retry.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/retry_budget.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

class RetryTest : public ::testing::Test {
 protected:
  RetrySettings Policy() {
    RetrySettings p;
    p.name = "recall";
    p.budget = budget_.get();
    p.sleep = [this](absl::Duration d) {
      slept_.push_back(d);
      clock_.Advance(d);
    };
    p.metrics = NoTelemetry();
    return p;
  }
  std::unique_ptr<Retrier> Make(const RetrySettings& p) {
    return Retrier::Create(p).value();
  }
  Deadline In(absl::Duration d) { return Deadline::In(d, &clock_); }

  // An attempt that fails with `error` the first `failures` times.
  auto FailThen(int failures, absl::Status error) {
    return [this, failures, error]() -> absl::StatusOr<int> {
      ++calls_;
      if (calls_ <= failures) return error;
      return 42;
    };
  }

  FakeClock clock_;
  std::unique_ptr<RetryBudget> budget_ = [this] {
    RetryBudgetSettings s;
    s.clock = &clock_;
    s.metrics = NoTelemetry();
    return RetryBudget::Create(s).value();
  }();
  std::vector<absl::Duration> slept_;
  int calls_ = 0;
};

TEST_F(RetryTest, AFirstSuccessIsReturnedWithoutWaiting) {
  auto r = Make(Policy());
  RetryRecord rec;
  auto v = Retry(*r, In(absl::Seconds(1)), FailThen(0, absl::OkStatus()), &rec);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 42);
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(rec.stop, RetryStop::kSucceeded);
  EXPECT_TRUE(slept_.empty());
  EXPECT_EQ(budget_->stats().window_requests, 1u);  // deposited
}

TEST_F(RetryTest, UnavailableIsRetriedUntilItSucceeds) {
  auto r = Make(Policy());
  RetryRecord rec;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(2, absl::UnavailableError("down")), &rec);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(rec.attempts, 3);
  EXPECT_EQ(rec.stop, RetryStop::kSucceeded);
  EXPECT_EQ(slept_.size(), 2u);
  EXPECT_EQ(budget_->stats().granted, 2u);
}

TEST_F(RetryTest, GivingUpReturnsTheLastErrorSayingHowAndWhy) {
  auto r = Make(Policy());
  RetryRecord rec;
  absl::Status down = absl::UnavailableError("backend down");
  down.SetPayload("type.example/x", absl::Cord("kept"));
  auto v = Retry(*r, In(absl::Seconds(10)), FailThen(100, down), &rec);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(v.status().message(),
            "retry 'recall': 3 attempts, stopped: attempts_exhausted; last "
            "error: backend down");
  EXPECT_TRUE(v.status().GetPayload("type.example/x").has_value());
  EXPECT_EQ(rec.stop, RetryStop::kAttemptsExhausted);
  EXPECT_EQ(calls_, 3);
}

TEST_F(RetryTest, OtherCodesAreNotRetriedByDefault) {
  auto r = Make(Policy());
  RetryRecord rec;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(100, absl::NotFoundError("no user")), &rec);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(v.status().message(), HasSubstr("1 attempt, stopped: not_retryable"));
  EXPECT_EQ(calls_, 1);
}

TEST_F(RetryTest, ABreakerRejectionIsNeverRetriedWhateverThePredicate) {
  RetrySettings p = Policy();
  p.retryable = [](const absl::Status&) { return true; };
  auto r = Make(p);
  BreakerSettings bs;
  bs.clock = &clock_;
  bs.metrics = NoTelemetry();
  CircuitBreaker<int> breaker(bs);
  breaker.ForceOpen();
  RetryRecord rec;
  auto v = Retry(*r, breaker, In(absl::Seconds(10)),
                 FailThen(0, absl::OkStatus()), &rec);
  EXPECT_TRUE(IsBreakerOpen(v.status()));  // the fallback still sees it
  EXPECT_EQ(rec.stop, RetryStop::kBreakerRejected);
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(calls_, 0);
}

TEST_F(RetryTest, EachAttemptIsOneCallAtTheBreakerAndAnOpenOneStopsTheLoop) {
  auto r = Make(Policy());
  BreakerSettings bs;
  bs.clock = &clock_;
  bs.metrics = NoTelemetry();
  bs.ready_to_trip = trip::ConsecutiveFailures(2);
  CircuitBreaker<int> breaker(bs);
  RetryRecord rec;
  auto v = Retry(*r, breaker, In(absl::Seconds(10)),
                 FailThen(100, absl::UnavailableError("down")), &rec);
  EXPECT_EQ(calls_, 2);  // the second failure tripped it
  EXPECT_EQ(rec.attempts, 3);
  EXPECT_EQ(rec.stop, RetryStop::kBreakerRejected);
  EXPECT_TRUE(IsBreakerOpen(v.status()));
  EXPECT_EQ(breaker.totals().failures, 2u);
}

TEST_F(RetryTest, AShedWithoutAHintIsNotRetriedAndOneWithAHintWaitsForIt) {
  auto r = Make(Policy());
  RetryRecord rec;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(100, ShedError("server", "busy")), &rec);
  EXPECT_EQ(rec.stop, RetryStop::kShed);
  EXPECT_EQ(calls_, 1);
  EXPECT_TRUE(IsShed(v.status()));

  calls_ = 0;
  v = Retry(*r, In(absl::Seconds(10)),
            FailThen(1, ShedError("server", "busy", absl::Seconds(2))), &rec);
  EXPECT_TRUE(v.ok());
  ASSERT_EQ(slept_.size(), 1u);
  EXPECT_EQ(slept_[0], absl::Seconds(2));  // the backoff is at most 50 ms
}

TEST_F(RetryTest, DoNotRetryFromTheServerStopsAtOnce) {
  RetrySettings p = Policy();
  p.retryable = [](const absl::Status&) { return true; };
  auto r = Make(p);
  absl::Status pushback = absl::UnavailableError("go away");
  pushback.SetPayload(kRetryAfterPayloadUrl, absl::Cord("-1"));
  RetryRecord rec;
  Retry(*r, In(absl::Seconds(10)), FailThen(100, pushback), &rec).IgnoreError();
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
  EXPECT_EQ(calls_, 1);
  Retry(*r, In(absl::Seconds(10)),
        FailThen(100, ShedError("s", "x", absl::InfiniteDuration())), &rec)
      .IgnoreError();
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
}

TEST_F(RetryTest, ResourceExhaustedIsRetriedOnlyWithAHint) {
  EXPECT_FALSE(DefaultRetryable(absl::ResourceExhaustedError("quota")));
  absl::Status hinted = absl::ResourceExhaustedError("quota");
  hinted.SetPayload(kRetryAfterPayloadUrl, absl::Cord("30"));
  EXPECT_TRUE(DefaultRetryable(hinted));
  EXPECT_TRUE(DefaultRetryable(absl::DeadlineExceededError("per-try")));
  EXPECT_FALSE(DefaultRetryable(absl::InternalError("bug")));
}

TEST_F(RetryTest, NoRetryStartsPastTheDeadline) {
  RetrySettings p = Policy();
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(100);
  p.max_attempts = 10;
  auto r = Make(p);
  RetryRecord rec;
  const Deadline d = In(absl::Milliseconds(150));
  auto v = Retry(*r, d, [&](const RetryAttempt& a) -> absl::StatusOr<int> {
    ++calls_;
    clock_.Advance(absl::Milliseconds(40));  // the attempt takes 40 ms
    EXPECT_EQ(a.deadline.when(), d.when());
    return absl::DeadlineExceededError("per-try timeout");
  }, &rec);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  EXPECT_LE(clock_.Now(), d.when());
  EXPECT_GE(calls_, 2);  // the first backoffs fitted
  EXPECT_THAT(v.status().message(), HasSubstr("stopped: deadline"));
}

// A sleep that overruns (a loaded machine wakes the thread late) must not
// start the retry after the caller's deadline: the deadline is read again
// once the sleep returns (issue 32, item 7).
TEST_F(RetryTest, NoRetryStartsPastTheDeadlineAfterALateWakeUp) {
  RetrySettings p = Policy();
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(100);
  p.max_attempts = 10;
  p.sleep = [this](absl::Duration d) {
    slept_.push_back(d);
    clock_.Advance(d + absl::Seconds(1));  // woken a second late
  };
  auto r = Make(p);
  RetryRecord rec;
  const Deadline d = In(absl::Milliseconds(500));
  auto v = Retry(
      *r, d,
      [&]() -> absl::StatusOr<int> {
        ++calls_;
        EXPECT_LT(clock_.Now(), d.when())
            << "attempt " << calls_ << " started late";
        return absl::UnavailableError("down");
      },
      &rec);
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(slept_.size(), 1u);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(v.status().message(), HasSubstr("stopped: deadline"));
}

TEST_F(RetryTest, AnEmptyBudgetReturnsTheOriginalErrorAndCountsIt) {
  RetryBudgetSettings bs;
  bs.clock = &clock_;
  bs.metrics = NoTelemetry();
  bs.min_retries_per_sec = 0;
  bs.percent_can_retry = 0.5;
  auto budget = RetryBudget::Create(bs).value();
  RetrySettings p = Policy();
  p.budget = budget.get();
  auto r = Make(p);
  RetryRecord rec;
  // The first call's deposit is worth half a retry: none is granted.
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(100, absl::UnavailableError("down")), &rec);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(v.status().message(), HasSubstr("down"));
  EXPECT_EQ(rec.stop, RetryStop::kBudgetExhausted);
  EXPECT_TRUE(rec.budget_refused);
  EXPECT_EQ(budget->stats().refused, 1u);
  // The second makes it a whole one.
  calls_ = 0;
  Retry(*r, In(absl::Seconds(10)), FailThen(100, absl::UnavailableError("down")),
        &rec).IgnoreError();
  EXPECT_EQ(rec.attempts, 2);
  EXPECT_EQ(rec.stop, RetryStop::kBudgetExhausted);
  EXPECT_EQ(r->stats().stops[static_cast<int>(RetryStop::kBudgetExhausted)], 2u);
}

TEST_F(RetryTest, TheBackoffIsFullJitterUnderAGrowingCap) {
  RetrySettings p = Policy();
  p.max_attempts = 10;
  p.initial_backoff = absl::Milliseconds(10);
  p.max_backoff = absl::Milliseconds(80);
  p.unbudgeted = true;
  p.budget = nullptr;
  auto r = Make(p);
  std::vector<double> max_seen(9, 0.0);
  for (int call = 0; call < 300; ++call) {
    slept_.clear();
    Retry(*r, In(absl::Hours(1)), [] { return absl::UnavailableError("x"); })
        .IgnoreError();
    ASSERT_EQ(slept_.size(), 9u);
    for (int n = 0; n < 9; ++n) {
      const double cap = std::min(10.0 * std::pow(2.0, n), 80.0);
      const double ms = absl::ToDoubleMilliseconds(slept_[n]);
      EXPECT_GE(ms, 0.0);
      EXPECT_LT(ms, cap);
      max_seen[n] = std::max(max_seen[n], ms / cap);
    }
  }
  for (double m : max_seen) EXPECT_GT(m, 0.9);  // jitter spans the range
}

TEST_F(RetryTest, TheSameSeedDrawsTheSameBackoffs) {
  auto run = [this](uint64_t seed) {
    RetrySettings p = Policy();
    p.seed = seed;
    auto r = Make(p);
    slept_.clear();
    Retry(*r, In(absl::Hours(1)), [] { return absl::UnavailableError("x"); })
        .IgnoreError();
    return slept_;
  };
  EXPECT_EQ(run(3), run(3));
  EXPECT_NE(run(3), run(4));
}

TEST_F(RetryTest, TheAttemptKnowsItsNumber) {
  auto r = Make(Policy());
  std::vector<int> numbers;
  Retry(*r, In(absl::Seconds(10)), [&](const RetryAttempt& a) {
    numbers.push_back(a.number);
    return absl::UnavailableError("x");
  }).IgnoreError();
  EXPECT_EQ(numbers, (std::vector<int>{1, 2, 3}));
}

TEST_F(RetryTest, AThrowingAttemptOrPredicateIsNotRetried) {
  RetrySettings p = Policy();
  auto r = Make(p);
  auto v = Retry(*r, In(absl::Seconds(10)), [&]() -> absl::StatusOr<int> {
    ++calls_;
    throw std::runtime_error("boom");
  });
  EXPECT_TRUE(IsCallableException(v.status()));
  EXPECT_EQ(calls_, 1);
  p.retryable = [](const absl::Status&) -> bool { throw std::runtime_error("x"); };
  auto r2 = Make(p);
  calls_ = 0;
  RetryRecord rec;
  Retry(*r2, In(absl::Seconds(10)), FailThen(100, absl::UnavailableError("x")),
        &rec).IgnoreError();
  EXPECT_EQ(rec.stop, RetryStop::kNotRetryable);
  EXPECT_EQ(calls_, 1);
}

TEST_F(RetryTest, AVoidAttemptReturnsAStatus) {
  auto r = Make(Policy());
  int n = 0;
  absl::Status s = Retry(*r, In(absl::Seconds(10)), [&]() -> absl::Status {
    return ++n < 2 ? absl::UnavailableError("x") : absl::OkStatus();
  });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(n, 2);
}

TEST_F(RetryTest, TellingCallersNotToRetryMarksOnlyWhatItGaveUpOn) {
  RetrySettings p = Policy();
  p.tell_callers_not_to_retry = true;
  auto r = Make(p);
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(100, absl::UnavailableError("down")));
  ASSERT_TRUE(RetryAfterHint(v.status()).has_value());
  EXPECT_LT(*RetryAfterHint(v.status()), absl::ZeroDuration());
  // So the caller's retrier stops at once.
  auto upper = Make(Policy());
  RetryRecord rec;
  Retry(*upper, In(absl::Seconds(10)), [&] { return v.status(); }, &rec)
      .IgnoreError();
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
  // A status it would not retry passes unmarked.
  calls_ = 0;
  v = Retry(*r, In(absl::Seconds(10)), FailThen(100, absl::NotFoundError("x")));
  EXPECT_FALSE(RetryAfterHint(v.status()).has_value());
}

TEST_F(RetryTest, StatsCountAttemptsPerCallAndStopsAndAreExported) {
  MetricsRegistry registry;
  RetrySettings p = Policy();
  p.metrics = &registry;
  auto r = Make(p);
  Retry(*r, In(absl::Seconds(10)), FailThen(0, absl::OkStatus())).IgnoreError();
  calls_ = 0;
  Retry(*r, In(absl::Seconds(10)), FailThen(1, absl::UnavailableError("x")))
      .IgnoreError();
  calls_ = 0;
  Retry(*r, In(absl::Seconds(10)), FailThen(9, absl::UnavailableError("x")))
      .IgnoreError();
  const RetrierStats st = r->stats();
  EXPECT_EQ(st.calls, 3u);
  EXPECT_EQ(st.attempts[0], 1u);
  EXPECT_EQ(st.attempts[1], 1u);
  EXPECT_EQ(st.attempts[2], 1u);
  EXPECT_EQ(st.stops[static_cast<int>(RetryStop::kSucceeded)], 2u);
  EXPECT_EQ(st.stops[static_cast<int>(RetryStop::kAttemptsExhausted)], 1u);
  const std::string text = registry.RenderPrometheus();
  EXPECT_THAT(text, HasSubstr("degrade_retry_attempts_count{retrier=\"recall\"} 3"));
  EXPECT_THAT(text, HasSubstr("degrade_retry_attempts_sum{retrier=\"recall\"} 6"));
  EXPECT_THAT(text, HasSubstr("degrade_retry_calls_total{retrier=\"recall\",stop=\"attempts_exhausted\"} 1"));
}

TEST_F(RetryTest, RefusesBadPoliciesNamingSettingAndValue) {
  struct Case {
    void (*mutate)(RetrySettings&);
    const char* text;
  };
  const Case cases[] = {
      {[](RetrySettings& p) { p.max_attempts = 0; }, "'max_attempts' = 0"},
      {[](RetrySettings& p) { p.max_attempts = 11; }, "'max_attempts' = 11"},
      {[](RetrySettings& p) { p.initial_backoff = absl::Milliseconds(-1); },
       "'initial_backoff' = -1ms"},
      {[](RetrySettings& p) { p.initial_backoff = absl::InfiniteDuration(); },
       "'initial_backoff' = inf"},
      {[](RetrySettings& p) { p.max_backoff = -absl::InfiniteDuration(); },
       "'max_backoff' = -inf"},
      {[](RetrySettings& p) { p.max_backoff = absl::Milliseconds(10); },
       "'max_backoff' = 10ms"},
      {[](RetrySettings& p) { p.multiplier = std::nan(""); },
       "'multiplier' = nan"},
      {[](RetrySettings& p) { p.multiplier = 0.5; }, "'multiplier' = 0.5"},
      {[](RetrySettings& p) { p.budget = nullptr; }, "'budget' = null"},
      {[](RetrySettings& p) { p.name = ""; }, "'name'"},
  };
  for (const Case& c : cases) {
    RetrySettings p = Policy();
    c.mutate(p);
    const absl::Status st = Retrier::Create(p).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(st.message(), HasSubstr(c.text));
    EXPECT_EQ(ValidateRetrySettings(p), st);
    // The old spelling of both still compiles and agrees.
    const RetryPolicy& old_spelling = p;
    EXPECT_EQ(ValidateRetryPolicy(old_spelling), st);
  }
  RetrySettings unbudgeted = Policy();
  unbudgeted.budget = nullptr;
  unbudgeted.unbudgeted = true;
  EXPECT_TRUE(Retrier::Create(unbudgeted).ok());
}

// The first attempt runs on a short path of its own (retry.hpp): these pin
// that it behaves as the loop did.

TEST_F(RetryTest, AFirstSuccessOverwritesTheRecordAndCountsAsOneAttempt) {
  auto r = Make(Policy());
  RetryRecord rec;
  rec.attempts = 7;
  rec.stop = RetryStop::kDeadline;
  rec.budget_refused = true;
  rec.waited = absl::Seconds(3);
  ASSERT_TRUE(
      Retry(*r, In(absl::Seconds(1)), FailThen(0, absl::OkStatus()), &rec).ok());
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(rec.stop, RetryStop::kSucceeded);
  EXPECT_FALSE(rec.budget_refused);
  EXPECT_EQ(rec.waited, absl::ZeroDuration());
  const RetrierStats st = r->stats();
  EXPECT_EQ(st.calls, 1u);
  EXPECT_EQ(st.attempts[0], 1u);
  EXPECT_EQ(st.stops[static_cast<int>(RetryStop::kSucceeded)], 1u);
}

// A deadline that has passed before the call makes no attempt at all (the
// attempt would hand the expired deadline to its RPC client), deposits
// nothing and withdraws nothing, whatever the attempt would have answered.
TEST_F(RetryTest, AnExpiredDeadlineMakesNoAttemptAndSpendsNoBudget) {
  auto r = Make(Policy());
  const Deadline d = In(absl::Milliseconds(10));
  clock_.Advance(absl::Milliseconds(20));
  RetryRecord rec;
  for (const absl::Status& answer :
       {absl::OkStatus(), absl::UnavailableError("down")}) {
    calls_ = 0;
    auto v = Retry(*r, d, FailThen(answer.ok() ? 0 : 100, answer), &rec);
    EXPECT_EQ(calls_, 0);
    EXPECT_TRUE(absl::IsDeadlineExceeded(v.status())) << v.status();
    EXPECT_EQ(rec.attempts, 0);
    EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  }
  EXPECT_TRUE(slept_.empty());
  EXPECT_EQ(budget_->stats().window_requests, 0u);
  EXPECT_EQ(budget_->stats().granted, 0u);
  EXPECT_EQ(r->stats().calls, 2u);
}

TEST_F(RetryTest, OneAttemptAllowedIsOneAttemptMade) {
  RetrySettings p = Policy();
  p.max_attempts = 1;
  auto r = Make(p);
  RetryRecord rec;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 FailThen(100, absl::UnavailableError("down")), &rec);
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(rec.attempts, 1);
  EXPECT_EQ(rec.stop, RetryStop::kAttemptsExhausted);
  EXPECT_THAT(v.status().message(), HasSubstr("1 attempt, stopped"));
  EXPECT_EQ(budget_->stats().granted, 0u);
}

TEST_F(RetryTest, AThrowThroughTheBreakerIsItsFailureAndNotRetried) {
  auto r = Make(Policy());
  BreakerSettings bs;
  bs.clock = &clock_;
  bs.metrics = NoTelemetry();
  CircuitBreaker<int> breaker(bs);
  RetryRecord rec;
  auto v = Retry(*r, breaker, In(absl::Seconds(10)),
                 [&]() -> absl::StatusOr<int> {
                   ++calls_;
                   throw std::runtime_error("boom");
                 },
                 &rec);
  EXPECT_TRUE(IsCallableException(v.status()));
  EXPECT_THAT(v.status().message(), HasSubstr("boom"));
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(rec.stop, RetryStop::kNotRetryable);
  EXPECT_EQ(breaker.totals().failures, 1u);
}

TEST_F(RetryTest, ANoexceptAttemptIsRetriedLikeAnyOther) {
  auto r = Make(Policy());
  RetryRecord rec;
  int n = 0;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 [&](const RetryAttempt& a) noexcept -> absl::StatusOr<int> {
                   ++n;
                   if (a.number < 3) return absl::UnavailableError("down");
                   return a.number;
                 },
                 &rec);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(rec.attempts, 3);
}

TEST_F(RetryTest, AnAttemptMayRetryThroughTheSameRetrier) {
  auto r = Make(Policy());
  RetryRecord outer;
  RetryRecord inner;
  int outer_calls = 0;
  auto v = Retry(*r, In(absl::Seconds(10)),
                 [&]() -> absl::StatusOr<int> {
                   ++outer_calls;
                   auto x = Retry(*r, In(absl::Seconds(10)),
                                  FailThen(1, absl::UnavailableError("x")),
                                  &inner);
                   if (outer_calls == 1) return absl::UnavailableError("y");
                   return x;
                 },
                 &outer);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(outer.attempts, 2);
  EXPECT_EQ(inner.attempts, 1);  // the second inner call succeeded at once
  const RetrierStats st = r->stats();
  EXPECT_EQ(st.calls, 3u);
  EXPECT_EQ(st.attempts[0], 1u);
  EXPECT_EQ(st.attempts[1], 2u);
  EXPECT_EQ(st.stops[static_cast<int>(RetryStop::kSucceeded)], 3u);
}

TEST(RetryConcurrencyTest, ThreadsShareOneRetrierAndBudget) {
  FakeClock clock;
  RetryBudgetSettings bs;
  bs.clock = &clock;
  bs.metrics = NoTelemetry();
  bs.min_retries_per_sec = 0;
  auto budget = RetryBudget::Create(bs).value();
  RetrySettings p;
  p.budget = budget.get();
  p.sleep = [](absl::Duration) {};
  p.metrics = NoTelemetry();
  auto r = Retrier::Create(p).value();
  constexpr int kThreads = 4;
  constexpr int kCalls = 2000;
  std::atomic<int> attempts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        Retry(*r, Deadline::In(absl::Seconds(1), &clock), [&]() -> absl::Status {
          attempts.fetch_add(1, std::memory_order_relaxed);
          return (i + t) % 2 == 0 ? absl::UnavailableError("x")
                                  : absl::OkStatus();
        }).IgnoreError();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const RetrierStats st = r->stats();
  EXPECT_EQ(st.calls, uint64_t{kThreads * kCalls});
  uint64_t made = 0;
  for (std::size_t k = 0; k < kAttemptBuckets; ++k) made += (k + 1) * st.attempts[k];
  EXPECT_EQ(made, static_cast<uint64_t>(attempts.load()));
  // Retries stayed within 20% of the calls.
  EXPECT_LE(attempts.load() - kThreads * kCalls, kThreads * kCalls / 5);
  EXPECT_EQ(budget->stats().granted,
            static_cast<uint64_t>(attempts.load() - kThreads * kCalls));
}

// The retry is withdrawn after its backoff, the budget only read before
// it: threads that all saw room before their sleeps race for the last
// retries after them. The withdrawal is the grant, so no more retries are
// sent than the window allows (the floor: 10), each one sent is exactly
// one granted, and every thread that lost the race stops as budget
// exhausted with its error.
TEST(RetryConcurrencyTest, RetriersRacingAfterTheirSleepsNeverOverspend) {
  FakeClock clock;
  RetryBudgetSettings bs;
  bs.clock = &clock;
  bs.metrics = NoTelemetry();
  bs.percent_can_retry = 0.0;
  bs.min_retries_per_sec = 1;
  bs.ttl = absl::Seconds(10);  // the floor: 10 retries per window
  auto budget = RetryBudget::Create(bs).value();
  RetrySettings p;
  p.budget = budget.get();
  p.max_attempts = 2;
  p.sleep = [](absl::Duration) { std::this_thread::yield(); };
  p.metrics = NoTelemetry();
  auto r = Retrier::Create(p).value();
  constexpr int kThreads = 8;
  constexpr int kCalls = 50;
  std::atomic<int> attempts{0};
  std::atomic<int> budget_stops{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        RetryRecord rec;
        Retry(
            *r, Deadline::In(absl::InfiniteDuration(), &clock),
            [&]() -> absl::Status {
              attempts.fetch_add(1, std::memory_order_relaxed);
              return absl::UnavailableError("x");
            },
            &rec)
            .IgnoreError();
        if (rec.stop == RetryStop::kBudgetExhausted) {
          budget_stops.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const int retries = attempts.load() - kThreads * kCalls;
  EXPECT_EQ(retries, 10);
  EXPECT_EQ(budget->stats().granted, 10u);
  EXPECT_EQ(budget_stops.load(), kThreads * kCalls - 10);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
