// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of the open duration: exponential backoff after failed trials, its
// cap and reset, jitter, and the half-open maximum wait. FakeClock only.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker_test_util.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using namespace breaker_test;  // NOLINT: the shared helpers
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// ---------------------------------------------------------------------------
// Exponential backoff and jitter of the open duration
// ---------------------------------------------------------------------------

TEST(BackoffTest, OpenDurationDoublesAfterEachFailedTrialUpToTheCap) {
  FakeClock clock(kAlignedStart);
  Breaker b(BackoffSettings(&clock));

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));

  const absl::Duration expected[] = {absl::Seconds(2), absl::Seconds(4),
                                     absl::Seconds(5), absl::Seconds(5)};
  for (const absl::Duration d : expected) {
    SCOPED_TRACE(absl::StrCat("open duration ", absl::FormatDuration(d)));
    ASSERT_EQ(b.state(), State::kHalfOpen);
    ASSERT_TRUE(RunFailure(b));  // the trial fails
    ASSERT_EQ(b.state(), State::kOpen);
    EXPECT_EQ(b.current_open_duration(), d);
    ExpectOpenForExactly(b, clock, d);
  }
}

TEST(BackoffTest, SuccessfulCloseResetsTheOpenDuration) {
  FakeClock clock(kAlignedStart);
  Breaker b(BackoffSettings(&clock));

  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Seconds(1) + kNs);
  ASSERT_TRUE(RunFailure(b));  // 2 s
  clock.Advance(absl::Seconds(2) + kNs);
  ASSERT_TRUE(RunFailure(b));  // 4 s
  ASSERT_EQ(b.current_open_duration(), absl::Seconds(4));
  clock.Advance(absl::Seconds(4) + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);

  ASSERT_TRUE(RunOk(b));  // the trial succeeds
  ASSERT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));

  ASSERT_TRUE(RunFailure(b));
  ASSERT_EQ(b.state(), State::kOpen);
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

TEST(BackoffTest, MultiplierOfOneKeepsTheOpenDurationFixed) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.backoff_multiplier = 1.0;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
  ExpectOpenForExactly(b, clock, absl::Seconds(1));
}

// Trips a jittered breaker named `name` (1 s timeout, no backoff) and
// measures `trips` successive open durations to the millisecond: each entry is
// the first whole millisecond at which the breaker was seen half-open.
std::vector<absl::Duration> MeasureJitteredOpenDurations(
    const std::string& name, int trips) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, name);
  s.ready_to_trip = trip::ConsecutiveFailures(1);
  s.max_requests = 1;
  s.backoff_jitter = 0.5;
  Breaker b(s);

  std::vector<absl::Duration> observed;
  EXPECT_TRUE(RunFailure(b));
  for (int i = 0; i < trips; ++i) {
    EXPECT_EQ(b.state(), State::kOpen);
    const absl::Duration d =
        StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(3));
    observed.push_back(d);
    if (d == absl::InfiniteDuration()) break;
    EXPECT_TRUE(RunFailure(b));  // a failed trial reopens: a fresh draw
  }
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1))
      << "jitter must not feed back into the un-jittered duration";
  return observed;
}

TEST(BackoffTest, JitterKeepsTheOpenDurationWithinItsBounds) {
  const std::vector<absl::Duration> observed =
      MeasureJitteredOpenDurations("jittered", 50);
  ASSERT_EQ(observed.size(), 50u);
  absl::Duration min = absl::InfiniteDuration();
  absl::Duration max = -absl::InfiniteDuration();
  for (const absl::Duration d : observed) {
    // The true duration x satisfies d - 1ms <= x < d and 0.5s <= x <= 1.5s.
    EXPECT_GT(d, absl::Milliseconds(500)) << d;
    EXPECT_LE(d - absl::Milliseconds(1), absl::Milliseconds(1500)) << d;
    min = std::min(min, d);
    max = std::max(max, d);
  }
  // Without jitter every entry would be 1.001 s.
  EXPECT_GE(max - min, absl::Milliseconds(200))
      << "min " << min << ", max " << max;
}

TEST(BackoffTest, JitterIsDeterministicPerBreakerName) {
  const std::vector<absl::Duration> a1 = MeasureJitteredOpenDurations("a", 10);
  const std::vector<absl::Duration> a2 = MeasureJitteredOpenDurations("a", 10);
  const std::vector<absl::Duration> b = MeasureJitteredOpenDurations("b", 10);
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
}

TEST(BackoffTest, JitterAppliesToTheBackedOffDuration) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = BackoffSettings(&clock);
  s.max_timeout = absl::ZeroDuration();  // no cap
  s.backoff_jitter = 0.5;
  Breaker b(s);

  ASSERT_TRUE(RunFailure(b));
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(
        StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(10)),
        absl::InfiniteDuration());
    ASSERT_TRUE(RunFailure(b));
  }
  ASSERT_EQ(b.current_open_duration(), absl::Seconds(8));
  const absl::Duration d =
      StepUntilNotOpen(b, clock, absl::Milliseconds(1), absl::Seconds(20));
  EXPECT_GT(d, absl::Seconds(4));
  EXPECT_LE(d - absl::Milliseconds(1), absl::Seconds(12));
}

// ---------------------------------------------------------------------------
// Half-open maximum wait
// ---------------------------------------------------------------------------

TEST(HalfOpenMaxWaitTest, UnreportedTrialReopensTheBreakerAfterTheWait) {
  FakeClock clock(kAlignedStart);
  Transitions events;
  Breaker b(MaxWaitSettings(&clock, &events));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->admitted_state(), State::kHalfOpen);

  clock.Advance(kMaxWait);
  EXPECT_EQ(b.state(), State::kHalfOpen) << "at exactly the maximum wait";
  bool ran = false;
  const absl::Status second = b.Execute([&ran] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_FALSE(ran);
  EXPECT_TRUE(IsTooManyRequests(second)) << second;

  clock.Advance(kNs);
  EXPECT_EQ(b.state(), State::kOpen) << "1 ns past the maximum wait";
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2))
      << "the unreported trial counts as a failed trial";
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kHalfOpen),
                                         Pair(State::kHalfOpen, State::kOpen)));
  ExpectOpenForExactly(b, clock, absl::Seconds(2));

  // The trial reports at last, in a generation that has moved on.
  const uint64_t stale_before = b.totals().stale;
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.totals().stale, stale_before + 1);
  EXPECT_EQ(b.state(), State::kHalfOpen) << "a stale success closes nothing";
}

TEST(HalfOpenMaxWaitTest, NextCallPastTheWaitIsRejectedAsOpen) {
  FakeClock clock(kAlignedStart);
  Breaker b(MaxWaitSettings(&clock, nullptr));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(kMaxWait + kNs);
  absl::StatusOr<Permit> next = b.Allow();
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(IsBreakerOpen(next.status())) << next.status();
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2));
}

TEST(HalfOpenMaxWaitTest, TrialReportingAtExactlyTheWaitStillCloses) {
  FakeClock clock(kAlignedStart);
  Breaker b(MaxWaitSettings(&clock, nullptr));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(kMaxWait);
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
}

TEST(HalfOpenMaxWaitTest, TrialReportingPastTheWaitDoesNotCloseTheBreaker) {
  FakeClock clock(kAlignedStart);
  Transitions events;
  Breaker b(MaxWaitSettings(&clock, &events));

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  // Nothing looks at the breaker until the trial reports, 1 ns too late.
  // The trial did not report within the maximum wait, so it is a failed
  // trial: the outcome must not depend on whether someone called state() in
  // between (compare UnreportedTrialReopensTheBreakerAfterTheWait).
  clock.Advance(kMaxWait + kNs);
  const uint64_t stale_before = b.totals().stale;
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2));
  EXPECT_EQ(b.totals().stale, stale_before + 1);
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kHalfOpen),
                                         Pair(State::kHalfOpen, State::kOpen)));
}

// Found by review (issue 13): a trial dropped (permit destroyed) after the
// wait only gave its slot back, though a trial reporting then finds the
// breaker reopened "whether or not anyone looked in between".
TEST(HalfOpenMaxWaitTest, ATrialAbandonedPastTheWaitReopensLikeOneReporting) {
  FakeClock clock(kAlignedStart);
  Breaker b(MaxWaitSettings(&clock, nullptr));
  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(kMaxWait + kNs);  // nobody looks at the breaker
  const uint64_t stale_before = b.totals().stale;
  trial = absl::UnknownError("dropped");  // the permit is destroyed
  EXPECT_EQ(b.totals().stale, stale_before + 1);
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2));
}

TEST(HalfOpenMaxWaitTest, ZeroMeansWaitForever) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = MaxWaitSettings(&clock, nullptr);
  s.half_open_max_wait = absl::ZeroDuration();
  Breaker b(s);

  absl::StatusOr<Permit> trial = TripAndAdmitTrial(b, clock);
  ASSERT_TRUE(trial.ok()) << trial.status();
  clock.Advance(absl::Hours(1000));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  trial->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
}

// The overlapping-trials setting of issue 13, defect 5: a 50 ms wait and
// `max_requests` trials.
BreakerSettings OverlapSettings(const FakeClock* clock, Transitions* events,
                                uint32_t max_requests) {
  BreakerSettings s = MaxWaitSettings(clock, events);
  s.max_requests = max_requests;
  s.half_open_max_wait = absl::Milliseconds(50);
  return s;
}

// Trips `b` and admits trial A at T and trial B at T+30 ms.
struct TwoTrials {
  absl::StatusOr<Permit> a;
  absl::StatusOr<Permit> b;
};
TwoTrials AdmitTwoTrials(Breaker& b, FakeClock& clock) {
  TwoTrials t{TripAndAdmitTrial(b, clock), absl::UnknownError("not yet")};
  clock.Advance(absl::Milliseconds(30));
  t.b = b.Allow();
  return t;
}

// Issue 13, defect 5: the wait is per trial. The reproduction: two trials
// allowed, a 50 ms wait, A admitted at T, B at T+30 ms, A succeeding at
// T+40 ms. The breaker used to reopen at T+51 ms (A's clock, never stopped
// while B was out) though B had been out for 21 ms.
TEST(HalfOpenMaxWaitTest, OverlappingTrialsEachGetTheirOwnWait) {
  FakeClock clock(kAlignedStart);
  Transitions events;
  Breaker b(OverlapSettings(&clock, &events, 2));
  TwoTrials t = AdmitTwoTrials(b, clock);
  ASSERT_TRUE(t.a.ok() && t.b.ok()) << t.a.status() << " " << t.b.status();
  absl::StatusOr<Permit>& a = t.a;
  clock.Advance(absl::Milliseconds(10));
  a->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kHalfOpen);

  clock.Advance(absl::Milliseconds(11));  // T+51 ms: A's wait, long gone
  EXPECT_EQ(b.state(), State::kHalfOpen) << "B has been out for 21 ms";
  clock.Advance(absl::Milliseconds(29));  // T+80 ms: exactly B's wait
  EXPECT_EQ(b.state(), State::kHalfOpen);
  clock.Advance(kNs);
  EXPECT_EQ(b.state(), State::kOpen) << "B out 1 ns longer than the wait";
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(2))
      << "the hung trial counts as a failed one";
  EXPECT_THAT(events.events, ElementsAre(Pair(State::kClosed, State::kOpen),
                                         Pair(State::kOpen, State::kHalfOpen),
                                         Pair(State::kHalfOpen, State::kOpen)));
}

TEST(HalfOpenMaxWaitTest, SecondTrialReportingWithinItsWaitCloses) {
  FakeClock clock(kAlignedStart);
  Breaker b(OverlapSettings(&clock, nullptr, 2));
  TwoTrials t = AdmitTwoTrials(b, clock);
  ASSERT_TRUE(t.a.ok() && t.b.ok()) << t.a.status() << " " << t.b.status();
  absl::StatusOr<Permit>& a = t.a;
  absl::StatusOr<Permit>& trial_b = t.b;
  clock.Advance(absl::Milliseconds(10));
  a->Done(absl::OkStatus());
  clock.Advance(absl::Milliseconds(40));  // T+80 ms, B out exactly 50 ms
  trial_b->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kClosed);
  EXPECT_EQ(b.current_open_duration(), absl::Seconds(1));
}

// The oldest trial decides, whichever order they report in; an excluded or
// abandoned trial stops its own clock and nobody else's.
TEST(HalfOpenMaxWaitTest, TheOldestOutstandingTrialDecides) {
  struct Case {
    const char* name;
    // How trial A (the older one) leaves at T+40 ms.
    void (*leave)(absl::StatusOr<Permit>&);
  };
  const Case cases[] = {
      {"excluded",
       [](absl::StatusOr<Permit>& p) {
         p->Done(absl::InvalidArgumentError("the caller's own error"));
       }},
      {"abandoned",
       [](absl::StatusOr<Permit>& p) { p = absl::UnknownError("dropped"); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeClock clock(kAlignedStart);
    BreakerSettings s = OverlapSettings(&clock, nullptr, 2);
    s.is_excluded = [](const absl::Status& st) {
      return st.code() == absl::StatusCode::kInvalidArgument;
    };
    Breaker b(s);
    TwoTrials t = AdmitTwoTrials(b, clock);
    ASSERT_TRUE(t.a.ok() && t.b.ok()) << t.a.status() << " " << t.b.status();
    clock.Advance(absl::Milliseconds(10));
    c.leave(t.a);
    clock.Advance(absl::Milliseconds(40));  // T+80 ms
    EXPECT_EQ(b.state(), State::kHalfOpen);
    clock.Advance(kNs);
    EXPECT_EQ(b.state(), State::kOpen);
  }
  {
    SCOPED_TRACE("the newer trial reports first");
    FakeClock clock(kAlignedStart);
    Breaker b(OverlapSettings(&clock, nullptr, 3));
    TwoTrials t = AdmitTwoTrials(b, clock);
    ASSERT_TRUE(t.a.ok() && t.b.ok()) << t.a.status() << " " << t.b.status();
    t.b->Done(absl::OkStatus());
    clock.Advance(absl::Milliseconds(20));  // T+50 ms: A's wait, exactly
    EXPECT_EQ(b.state(), State::kHalfOpen);
    clock.Advance(kNs);
    EXPECT_EQ(b.state(), State::kOpen) << "A, still out, is past its wait";
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
