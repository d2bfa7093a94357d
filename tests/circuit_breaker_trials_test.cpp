// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Half-open trials as a resilience4j user porting a config sees them:
//   * the trials are the half-open generation's window, classified as closed
//     calls are (failed, slow, successful, excluded and abandoned trials;
//     with count and time windows of any size, and without a window), so
//     counts(), the rates and the half-open -> closed / open event show
//     them, as resilience4j's half-open metrics (a count window of the
//     permitted calls) do;
//   * the rate-based half-open decides once min(minimum calls, permitted
//     trials) have reported: resilience4j's own example, 4 permitted calls
//     and a minimum of 2, decides after 2.
// All on a FakeClock.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "breaker_test_util.hpp"
#include "degrade/breaker_listener.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using namespace breaker_test;  // NOLINT: the shared helpers

// Keeps every state change a breaker reports, with its counts.
class ChangeLog final : public Telemetry {
 public:
  std::unique_ptr<BreakerListener> AttachBreaker(const BreakerView&) override {
    return std::make_unique<Listener>(this);
  }
  std::vector<BreakerStateChange> changes() const {
    detail::MutexLock lock(&mu_);
    return changes_;
  }
  BreakerStateChange last() const {
    detail::MutexLock lock(&mu_);
    return changes_.empty() ? BreakerStateChange{} : changes_.back();
  }

 private:
  struct Listener final : BreakerListener {
    explicit Listener(ChangeLog* log) : log(log) {}
    void OnStateChange(const BreakerStateChange& c) override {
      detail::MutexLock lock(&log->mu_);
      BreakerStateChange copy = c;
      copy.breaker = {};
      log->changes_.push_back(copy);
    }
    ChangeLog* log;
  };
  mutable detail::Mutex mu_;
  std::vector<BreakerStateChange> changes_ ABSL_GUARDED_BY(mu_);
};

enum class WindowKind { kNone, kCount, kTime };

std::string Name(WindowKind k) {
  switch (k) {
    case WindowKind::kNone:
      return "none";
    case WindowKind::kCount:
      return "count";
    case WindowKind::kTime:
      return "time";
  }
  return "?";
}

// A breaker that trips on its first failure and judges four trials by their
// rates, as in resilience4j's porting path; `minimum` is the rule's minimum
// number of calls (0: a consecutive-failures rule, no minimum).
BreakerSettings TrialSettings(const FakeClock* clock, Telemetry* t,
                              WindowKind kind, uint64_t minimum = 0) {
  BreakerSettings s = TestSettings(clock, "trials");
  s.ready_to_trip = minimum == 0 ? trip::ConsecutiveFailures(1)
                                 : trip::FailureRate(0.5, minimum);
  s.max_requests = 4;
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.half_open_failure_rate = 0.5;
  s.slow_call_duration = absl::Seconds(1);
  s.half_open_slow_call_rate = 0.5;
  s.is_excluded = [](const absl::Status& st) {
    return absl::IsInvalidArgument(st);
  };
  if (kind == WindowKind::kCount) s.window = SlidingWindow::Count(10);
  if (kind == WindowKind::kTime) {
    s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  }
  s.metrics = t;
  return s;
}

// Fails until the breaker opens, then lets the open timeout pass.
void OpenThenHalfOpen(Breaker& b, FakeClock& clock) {
  for (int i = 0; i < 100 && b.state() == State::kClosed; ++i) {
    ASSERT_TRUE(RunFailure(b));
  }
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Advance(kTimeout + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);
}

class TrialsInTheWindowTest : public ::testing::TestWithParam<WindowKind> {};

TEST_P(TrialsInTheWindowTest, FailedAndSuccessfulTrialsAreCounted) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, GetParam()));
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  const Counts during = b.counts();
  EXPECT_EQ(during.window_calls, 3u);
  EXPECT_EQ(during.window_failures, 1u);
  EXPECT_DOUBLE_EQ(during.failure_rate(), 1.0 / 3);
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed) << "1 failed trial of 4: 25% < 50%";
  const BreakerStateChange closed = log.last();
  EXPECT_EQ(closed.from, State::kHalfOpen);
  EXPECT_EQ(closed.to, State::kClosed);
  EXPECT_EQ(closed.counts.window_calls, 4u);
  EXPECT_EQ(closed.counts.window_failures, 1u);
  EXPECT_DOUBLE_EQ(closed.counts.failure_rate(), 0.25);
  EXPECT_EQ(closed.counts.total_failures, 1u);
  EXPECT_EQ(closed.counts.total_successes, 3u);
  EXPECT_EQ(b.counts().window_calls, 0u) << "the closed generation is new";
}

TEST_P(TrialsInTheWindowTest, SlowTrialsShowInTheReopeningEvent) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, GetParam()));
  OpenThenHalfOpen(b, clock);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(RunTaking(b, clock, absl::Seconds(2)));
  }
  EXPECT_EQ(b.counts().window_slow_calls, 3u);
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kOpen) << "3 slow trials of 4";
  const BreakerStateChange reopened = log.last();
  EXPECT_EQ(reopened.cause, TransitionCause::kTrialsFailed);
  EXPECT_EQ(reopened.counts.window_calls, 4u);
  EXPECT_EQ(reopened.counts.window_slow_calls, 3u);
  EXPECT_EQ(reopened.counts.window_failures, 0u);
  EXPECT_DOUBLE_EQ(reopened.counts.slow_call_rate(), 0.75);
}

TEST_P(TrialsInTheWindowTest, ExcludedAndAbandonedTrialsAreNotCalls) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, GetParam()));
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunWith(b, ClientError()));  // excluded: its slot comes back
  { absl::StatusOr<Permit> dropped = b.Allow(); }
  const Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 0u);
  EXPECT_EQ(c.total_exclusions, 1u);
  EXPECT_EQ(c.requests, 1u)
      << "the excluded trial; the dropped one is taken back";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kClosed) << "1 failure in 4 judged trials";
  const BreakerStateChange closed = log.last();
  EXPECT_EQ(closed.counts.window_calls, 4u);
  EXPECT_EQ(closed.counts.window_failures, 1u);
  EXPECT_EQ(closed.counts.total_exclusions, 1u);
}

TEST_P(TrialsInTheWindowTest, GobreakersPolicyShowsItsTrialsToo) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  BreakerSettings s = TrialSettings(&clock, &log, GetParam());
  s.half_open_policy = HalfOpenPolicy::kFirstFailureReopens;
  Breaker b(s);
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunTaking(b, clock, absl::Seconds(2)));  // slow, a success
  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  const BreakerStateChange reopened = log.last();
  EXPECT_EQ(reopened.cause, TransitionCause::kTrialFailed);
  EXPECT_EQ(reopened.counts.window_calls, 3u);
  EXPECT_EQ(reopened.counts.window_failures, 1u);
  EXPECT_EQ(reopened.counts.window_slow_calls, 1u);
}

TEST_P(TrialsInTheWindowTest, AStragglerFromTheClosedStateIsNotATrial) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, GetParam()));
  absl::StatusOr<Permit> straggler = b.Allow();  // admitted while closed
  ASSERT_TRUE(straggler.ok());
  OpenThenHalfOpen(b, clock);
  straggler->Done(absl::OkStatus());
  EXPECT_EQ(b.counts().window_calls, 0u);
  EXPECT_EQ(b.state(), State::kHalfOpen);
}

INSTANTIATE_TEST_SUITE_P(Windows, TrialsInTheWindowTest,
                         ::testing::Values(WindowKind::kNone,
                                           WindowKind::kCount,
                                           WindowKind::kTime),
                         [](const ::testing::TestParamInfo<WindowKind>& i) {
                           return Name(i.param);
                         });

// The trials are the half-open window whatever the closed one is: a trial
// older than a time window's length still counts, as it does in the
// decision.
TEST(TrialsInATimeWindowTest, ATrialOlderThanTheWindowStillCounts) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  BreakerSettings s = TrialSettings(&clock, &log, WindowKind::kTime);
  s.window = SlidingWindow::Time(absl::Seconds(2), 2);
  s.max_requests = 3;
  Breaker b(s);
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(3));
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.counts().window_calls, 2u);
  EXPECT_EQ(b.counts().window_failures, 1u);
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed) << "1 failure in 3";
  EXPECT_EQ(log.last().counts.window_calls, 3u);
  EXPECT_EQ(log.last().counts.window_failures, 1u);
}

// A count window smaller than the permits does not cut the trials short.
TEST(TrialsInACountWindowTest, ASmallerWindowShowsEveryTrial) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  BreakerSettings s = TrialSettings(&clock, &log, WindowKind::kCount);
  s.window = SlidingWindow::Count(2);
  Breaker b(s);
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 1.0 / 3);
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(log.last().counts.window_calls, 4u);
  EXPECT_DOUBLE_EQ(log.last().counts.failure_rate(), 0.25);
}

// ---------------------------------------------------------------------------
// When the rate-based half-open decides
// ---------------------------------------------------------------------------

// resilience4j: permittedNumberOfCallsInHalfOpenState = 4 and
// minimumNumberOfCalls = 2 decide after 2 trials.
TEST(RateBasedDecisionTest, ResilienceFoursExampleDecidesAfterTwo) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, WindowKind::kCount, /*minimum=*/2));
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen) << "1 of the minimum 2";
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed) << "0% of 2 trials";
  EXPECT_EQ(log.last().cause, TransitionCause::kTrialsSucceeded);
  EXPECT_EQ(log.last().counts.window_calls, 2u);
}

TEST(RateBasedDecisionTest, TwoTrialsAtTheThresholdReopen) {
  FakeClock clock(kAlignedStart);
  ChangeLog log;
  Breaker b(TrialSettings(&clock, &log, WindowKind::kCount, /*minimum=*/2));
  OpenThenHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.state(), State::kHalfOpen) << "one result is below the minimum";
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kOpen) << "1 of 2 = 50% reaches 50%";
  EXPECT_EQ(log.last().cause, TransitionCause::kTrialsFailed);
}

TEST(RateBasedDecisionTest, TheOtherPermittedTrialsBecomeStragglers) {
  FakeClock clock(kAlignedStart);
  Breaker b(TrialSettings(&clock, nullptr, WindowKind::kNone, /*minimum=*/2));
  OpenThenHalfOpen(b, clock);
  std::vector<Permit> trials;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<Permit> p = b.Allow();
    ASSERT_TRUE(p.ok()) << i;
    trials.push_back(std::move(*p));
  }
  trials[0].Done(absl::OkStatus());
  trials[1].Done(absl::OkStatus());
  ASSERT_EQ(b.state(), State::kClosed);
  trials[2].Done(Failure());
  trials[3].Done(Failure());
  EXPECT_EQ(b.state(), State::kClosed) << "the half-open generation is over";
  EXPECT_EQ(b.counts().total_failures, 0u);
}

TEST(RateBasedDecisionTest, AMinimumAbovePermitsWaitsForEveryPermit) {
  FakeClock clock(kAlignedStart);
  Breaker b(TrialSettings(&clock, nullptr, WindowKind::kNone, /*minimum=*/20));
  OpenThenHalfOpen(b, clock);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen) << "min(20, 4) = 4";
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed);
}

TEST(RateBasedDecisionTest, ARuleWithoutAMinimumWaitsForEveryPermit) {
  FakeClock clock(kAlignedStart);
  Breaker b(TrialSettings(&clock, nullptr, WindowKind::kNone, /*minimum=*/0));
  OpenThenHalfOpen(b, clock);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed);
}

// An AnyOf decides from its smallest minimum, as its closed-state rates do.
TEST(RateBasedDecisionTest, AnAnyOfUsesItsSmallestMinimum) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TrialSettings(&clock, nullptr, WindowKind::kNone);
  s.ready_to_trip =
      trip::AnyOf({trip::FailureRate(0.5, 3), trip::SlowCallRate(0.5, 10)});
  Breaker b(s);
  OpenThenHalfOpen(b, clock);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed) << "min(3, 4) trials";
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
