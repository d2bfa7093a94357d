// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Adversarial tests of the circuit breaker's sliding windows (the sharded
// count window and the laned time window), of the half-open trials' counts,
// and of the rate-based half-open decision point. (Written by a reviewer
// who had not seen the code; its seven failures were fixed: a report after
// a bucket left, or after the clock stepped back, now asks the rule; the
// half-open counts are the trials' own; the half-open minimum is not capped
// by the closed window.) Each
// single-threaded test compares the breaker against a naive reference
// model (a deque of the last N outcomes; plain buckets of the last T) and,
// for trip decisions, against a resilience4j-style evaluation after every
// recorded outcome. The threaded tests check totals at quiescence with more
// threads alive than there are exclusive shards, and with threads exiting
// and new ones starting. No test sleeps: every breaker reads a FakeClock.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "breaker_test_util.hpp"
#include "degrade/breaker_listener.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using namespace breaker_test;  // NOLINT: the shared helpers

// ---------------------------------------------------------------------------
// Reference models
// ---------------------------------------------------------------------------

enum class Kind { kSuccess, kFailure, kExcluded };

absl::Status StatusOf(Kind k) {
  switch (k) {
    case Kind::kSuccess:
      return absl::OkStatus();
    case Kind::kFailure:
      return Failure();
    case Kind::kExcluded:
      return ClientError();
  }
  return absl::OkStatus();
}

struct RefStats {
  uint64_t calls = 0, failures = 0, slow = 0;
  uint64_t requests = 0, successes = 0, exclusions = 0;
};

// The last `n` completed, recorded (not excluded) calls.
struct CountRef {
  explicit CountRef(size_t n) : n(n) {}
  void Add(bool failed, bool slow) {
    q.emplace_back(failed, slow);
    if (q.size() > n) q.pop_front();
  }
  RefStats Read() const {
    RefStats s;
    s.calls = q.size();
    for (const auto& e : q) {
      s.failures += e.first ? 1 : 0;
      s.slow += e.second ? 1 : 0;
    }
    return s;
  }
  size_t n;
  std::deque<std::pair<bool, bool>> q;
};

// One set of plain buckets of `width`, aligned to `origin` (gobreaker v2's
// rolling window as windows.hpp describes it): admissions and outcomes go
// to the admission's bucket; a bucket holding a newer age drops them.
struct TimeRef {
  TimeRef(int64_t origin, int64_t width, uint32_t n)
      : origin(origin), width(width), n(n), b(n) {}
  struct B {
    int64_t age = -1;
    uint64_t req = 0, succ = 0, fail = 0, excl = 0, slow = 0, aband = 0;
  };
  int64_t Age(int64_t t) const { return t < origin ? 0 : (t - origin) / width; }
  B* Get(int64_t age) {
    B& x = b[static_cast<size_t>(age % n)];
    if (x.age == age) return &x;
    if (x.age > age) return nullptr;
    x = B{};
    x.age = age;
    return &x;
  }
  void Admit(int64_t t) {
    if (B* x = Get(Age(t))) ++x->req;
  }
  void Abandon(int64_t start) {
    if (B* x = Get(Age(start))) ++x->aband;
  }
  void Outcome(int64_t start, Kind k, bool slow) {
    B* x = Get(Age(start));
    if (x == nullptr) return;
    if (k == Kind::kExcluded) {
      ++x->excl;
      return;
    }
    if (slow) ++x->slow;
    if (k == Kind::kFailure) {
      ++x->fail;
    } else {
      ++x->succ;
    }
  }
  RefStats Read(int64_t now) const {
    const int64_t newest = Age(now);
    const int64_t oldest = newest - (static_cast<int64_t>(n) - 1);
    RefStats s;
    uint64_t req = 0, aband = 0;
    for (const B& x : b) {
      if (x.age < 0 || x.age < oldest || x.age > newest) continue;
      req += x.req;
      aband += x.aband;
      s.successes += x.succ;
      s.failures += x.fail;
      s.exclusions += x.excl;
      s.slow += x.slow;
    }
    s.requests = req > aband ? req - aband : 0;
    s.calls = s.successes + s.failures;
    return s;
  }
  int64_t origin, width;
  uint32_t n;
  std::vector<B> b;
};

int64_t NowNanos(const FakeClock& clock) {
  return absl::ToUnixNanos(clock.Now());
}

bool IsClientError(const absl::Status& s) {
  return s.code() == absl::StatusCode::kInvalidArgument;
}

// A call admitted and still out.
struct Pending {
  std::optional<Permit> permit;
  int64_t start = 0;
};

// Drives one breaker and its reference with a random sequence of
// admissions, completions (out of order), exclusions, abandons, slow calls,
// clock steps forward (small, across buckets, past the whole window) and
// back. `check` compares after every step; it returns false to stop.
template <typename OnAdmit, typename OnDone, typename OnAbandon, typename Check>
void RandomWalk(uint32_t seed, int steps, Breaker& b, FakeClock& clock,
                int64_t bucket_nanos, int64_t window_nanos, int64_t slow_nanos,
                OnAdmit on_admit, OnDone on_done, OnAbandon on_abandon,
                Check check, bool step_back = true) {
  std::mt19937 rng(seed);
  std::vector<Pending> pending;
  for (int step = 0; step < steps; ++step) {
    const int op = static_cast<int>(rng() % 100);
    if (op < 35 || pending.empty()) {
      absl::StatusOr<Permit> p = b.Allow();
      if (!p.ok()) return;  // the walk ends when the breaker stops admitting
      Pending e;
      e.start = NowNanos(clock);
      e.permit.emplace(std::move(*p));
      on_admit(e.start);
      pending.push_back(std::move(e));
    } else if (op < 75) {
      const size_t i = rng() % pending.size();
      const uint32_t r = rng() % 10;
      const Kind k =
          r < 5 ? Kind::kSuccess : (r < 8 ? Kind::kFailure : Kind::kExcluded);
      const int64_t elapsed =
          std::max<int64_t>(0, NowNanos(clock) - pending[i].start);
      const bool slow = slow_nanos > 0 && elapsed > slow_nanos;
      pending[i].permit->Done(StatusOf(k));
      on_done(pending[i].start, k, slow);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 80) {
      const size_t i = rng() % pending.size();
      pending[i].permit.reset();  // abandoned: destroyed without Done
      on_abandon(pending[i].start);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 92) {
      // Forward by a fraction of a bucket, or a few buckets.
      const int64_t d =
          op < 88 ? static_cast<int64_t>(
                        rng() % static_cast<uint64_t>(bucket_nanos / 2 + 1))
                  : static_cast<int64_t>(
                        rng() % static_cast<uint64_t>(bucket_nanos * 3 + 1));
      clock.Advance(absl::Nanoseconds(d));
    } else if (op < 96 || !step_back) {
      // Past the whole window.
      clock.Advance(absl::Nanoseconds(window_nanos + bucket_nanos +
                                      static_cast<int64_t>(rng() % 7)));
    } else {
      // Stepped back, by up to two windows.
      const int64_t back = static_cast<int64_t>(
          rng() % static_cast<uint64_t>(2 * window_nanos + 1));
      clock.Set(absl::FromUnixNanos(NowNanos(clock) - back));
    }
    if (!check(step)) return;
  }
}

BreakerSettings WalkSettings(const FakeClock* clock, SlidingWindow w,
                             absl::Duration slow) {
  BreakerSettings s = TestSettings(clock, "attack-walk");
  s.window = w;
  s.slow_call_duration = slow;
  s.is_excluded = IsClientError;
  return s;
}

// ---------------------------------------------------------------------------
// Single-threaded equivalence with the reference windows
// ---------------------------------------------------------------------------

struct CountCase {
  uint32_t size;
  uint32_t seed;
};

class CountWindowEquivalence : public ::testing::TestWithParam<CountCase> {};

TEST_P(CountWindowEquivalence, MatchesADequeOfTheLastNOutcomes) {
  const CountCase c = GetParam();
  FakeClock clock(kAlignedStart);
  const absl::Duration slow = absl::Milliseconds(5);
  Breaker b(WalkSettings(&clock, SlidingWindow::Count(c.size), slow));
  CountRef ref(c.size);
  RandomWalk(
      c.seed, 20000, b, clock, absl::ToInt64Nanoseconds(absl::Milliseconds(2)),
      absl::ToInt64Nanoseconds(absl::Milliseconds(20)),
      absl::ToInt64Nanoseconds(slow), [](int64_t) {},
      [&](int64_t, Kind k, bool s) {
        if (k != Kind::kExcluded) ref.Add(k == Kind::kFailure, s);
      },
      [](int64_t) {},
      [&](int step) {
        const Counts got = b.counts();
        const RefStats want = ref.Read();
        EXPECT_EQ(got.window_calls, want.calls) << "step " << step;
        EXPECT_EQ(got.window_failures, want.failures) << "step " << step;
        EXPECT_EQ(got.window_slow_calls, want.slow) << "step " << step;
        return !::testing::Test::HasFailure();
      });
}

INSTANTIATE_TEST_SUITE_P(Sizes, CountWindowEquivalence,
                         ::testing::Values(CountCase{1, 1}, CountCase{2, 2},
                                           CountCase{3, 3}, CountCase{7, 4},
                                           CountCase{100, 5},
                                           CountCase{1000, 6}));

struct TimeCase {
  absl::Duration length;
  uint32_t buckets;
  uint32_t seed;
};

class TimeWindowEquivalence : public ::testing::TestWithParam<TimeCase> {};

TEST_P(TimeWindowEquivalence, MatchesPlainBucketsOfTheLastT) {
  const TimeCase c = GetParam();
  // Not aligned to the bucket width, on purpose.
  FakeClock clock(kAlignedStart + absl::Nanoseconds(123456789));
  const int64_t width = absl::ToInt64Nanoseconds(c.length / c.buckets);
  const int64_t window = width * c.buckets;
  const absl::Duration slow = absl::Nanoseconds(std::max<int64_t>(1, width));
  Breaker b(
      WalkSettings(&clock, SlidingWindow::Time(c.length, c.buckets), slow));
  TimeRef ref(NowNanos(clock), width, c.buckets);
  RandomWalk(
      c.seed, 20000, b, clock, width, window, absl::ToInt64Nanoseconds(slow),
      [&](int64_t t) { ref.Admit(t); },
      [&](int64_t start, Kind k, bool s) { ref.Outcome(start, k, s); },
      [&](int64_t start) { ref.Abandon(start); },
      [&](int step) {
        const Counts got = b.counts();
        const RefStats want = ref.Read(NowNanos(clock));
        EXPECT_EQ(got.window_calls, want.calls) << "step " << step;
        EXPECT_EQ(got.window_failures, want.failures) << "step " << step;
        EXPECT_EQ(got.window_slow_calls, want.slow) << "step " << step;
        EXPECT_EQ(got.requests, want.requests) << "step " << step;
        EXPECT_EQ(got.total_successes, want.successes) << "step " << step;
        EXPECT_EQ(got.total_failures, want.failures) << "step " << step;
        EXPECT_EQ(got.total_exclusions, want.exclusions) << "step " << step;
        return !::testing::Test::HasFailure();
      });
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TimeWindowEquivalence,
    ::testing::Values(TimeCase{absl::Seconds(10), 10, 11},
                      TimeCase{absl::Seconds(1), 1, 12},        // one bucket
                      TimeCase{absl::Nanoseconds(16), 16, 13},  // 1 ns buckets
                      TimeCase{absl::Nanoseconds(1), 1, 14},
                      TimeCase{absl::Seconds(3), 7, 15},         // uneven width
                      TimeCase{absl::Hours(24 * 365), 2, 16}));  // huge

// ---------------------------------------------------------------------------
// Trip decisions against a resilience4j-style evaluation
// ---------------------------------------------------------------------------

// Whether `rule` (a FailureRate/SlowCallRate or an AnyOf of them) trips on
// the reference stats.
bool RefTrips(const trip::Rule& rule, const RefStats& s) {
  Counts c;
  c.window_calls = s.calls;
  c.window_failures = s.failures;
  c.window_slow_calls = s.slow;
  return rule.Check(c, nullptr);
}

void ExpectSameTripCall(const trip::Rule& rule, SlidingWindow w, uint32_t seed,
                        bool step_back = false) {
  FakeClock clock(kAlignedStart + absl::Nanoseconds(777));
  const absl::Duration slow = absl::Milliseconds(300);
  BreakerSettings s = WalkSettings(&clock, w, slow);
  s.ready_to_trip = rule;
  Breaker b(s);
  const trip::Rule capped = b.settings().ready_to_trip;
  const bool timed = w.kind == SlidingWindow::Kind::kTime;
  const int64_t width = timed
                            ? absl::ToInt64Nanoseconds(w.length / w.size)
                            : absl::ToInt64Nanoseconds(absl::Milliseconds(200));
  const int64_t window = timed ? width * w.size : width * 10;
  CountRef cref(timed ? 1 : w.size);
  TimeRef tref(NowNanos(clock), std::max<int64_t>(width, 1),
               timed ? w.size : 1);
  bool ref_tripped = false;
  int recorded = 0;
  RandomWalk(
      seed, 4000, b, clock, width, window, absl::ToInt64Nanoseconds(slow),
      [&](int64_t t) {
        if (timed) tref.Admit(t);
      },
      [&](int64_t start, Kind k, bool sl) {
        if (timed) {
          tref.Outcome(start, k, sl);
        } else if (k != Kind::kExcluded) {
          cref.Add(k == Kind::kFailure, sl);
        }
        if (k == Kind::kExcluded) return;
        ++recorded;
        const RefStats st = timed ? tref.Read(NowNanos(clock)) : cref.Read();
        ref_tripped = RefTrips(capped, st);
      },
      [&](int64_t start) {
        if (timed) tref.Abandon(start);
      },
      [&](int step) {
        const bool open = b.state() == State::kOpen;
        EXPECT_EQ(open, ref_tripped)
            << "step " << step << " after " << recorded
            << " recorded calls; breaker counts: window_calls="
            << b.counts().window_calls
            << " failures=" << b.counts().window_failures;
        return !open && !ref_tripped && !::testing::Test::HasFailure();
      },
      step_back);
}

TEST(AttackTripDecision, CountWindowTripsAtTheSameCallAsTheReference) {
  for (uint32_t seed = 1; seed <= 40 && !HasFailure(); ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    ExpectSameTripCall(trip::FailureRate(0.6, 5), SlidingWindow::Count(8),
                       seed);
    ExpectSameTripCall(
        trip::AnyOf({trip::FailureRate(0.7, 3), trip::SlowCallRate(0.5, 9)}),
        SlidingWindow::Count(12), seed + 1000);
    // A minimum above the window: capped at the window's size.
    ExpectSameTripCall(trip::FailureRate(0.5, 50), SlidingWindow::Count(4),
                       seed + 2000);
    ExpectSameTripCall(
        trip::AnyOf({trip::FailureRate(1.0, 3), trip::SlowCallRate(1.0, 2)}),
        SlidingWindow::Count(1), seed + 3000);
  }
}

// The clock only moves forward here; the next test steps it back too.
TEST(AttackTripDecision, TimeWindowTripsAtTheSameCallAsTheReference) {
  for (uint32_t seed = 1; seed <= 400 && !HasFailure(); ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    ExpectSameTripCall(trip::FailureRate(0.6, 5),
                       SlidingWindow::Time(absl::Seconds(2), 4), seed);
    ExpectSameTripCall(
        trip::AnyOf({trip::FailureRate(0.7, 3), trip::SlowCallRate(0.5, 9)}),
        SlidingWindow::Time(absl::Seconds(3), 3), seed + 1000);
  }
}

TEST(AttackTripDecision, TripsAtTheSameCallAsTheReferenceWithClockSteppedBack) {
  for (uint32_t seed = 1; seed <= 40 && !HasFailure(); ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    ExpectSameTripCall(trip::FailureRate(0.6, 5), SlidingWindow::Count(8), seed,
                       true);
    ExpectSameTripCall(trip::FailureRate(0.6, 5),
                       SlidingWindow::Time(absl::Seconds(2), 4), seed, true);
    ExpectSameTripCall(
        trip::AnyOf({trip::FailureRate(0.7, 3), trip::SlowCallRate(0.5, 9)}),
        SlidingWindow::Time(absl::Seconds(3), 3), seed + 1000, true);
  }
}

// The minimal case behind a divergence of the random walk: a call admitted
// in bucket 1 completes after bucket 0 has left the window, with no other
// admission or record in between. Evaluated at that completion (as
// resilience4j does after every call, and as counts() reads it then), the
// window is over the threshold; the breaker does not ask its rule.
TEST(AttackTripDecision, ALongCallCompletingAfterABucketLeftIsAsked) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "bucket-left");
  s.window = SlidingWindow::Time(absl::Seconds(4), 4);
  s.ready_to_trip = trip::FailureRate(0.5, 2);
  Breaker b(s);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunOk(b));  // bucket 0: 5 S
  clock.Advance(absl::Seconds(1));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RunFailure(b));  // bucket 1
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);  // 4 of 12: 33%
  clock.Advance(absl::Milliseconds(500));
  absl::StatusOr<Permit> x = b.Allow();  // bucket 1
  ASSERT_TRUE(x.ok());
  clock.Advance(absl::Milliseconds(2700));  // 4.2 s: bucket 0 has left
  x->Done(absl::OkStatus());
  EXPECT_EQ(b.state(), State::kOpen)
      << "the window the breaker reports is at its 50% threshold with 8 "
         "calls (minimum 2), but the rule was not asked";
  // What the rule decided on: the window as read at the report.
  const Counts c = b.last_trip().counts;
  EXPECT_EQ(c.window_calls, 8u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.5);
}

// The minimal case behind the stepped-back divergence: failures of calls
// admitted in bucket 0 report in bucket 1 (rate low over both buckets);
// the clock then steps back into bucket 0, where the window holds bucket 0
// only, at 50%. A success recorded there does not ask the rule.
TEST(AttackTripDecision, AClockSteppedBackIntoTheWindowIsAsked) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "stepped-back");
  s.window = SlidingWindow::Time(absl::Seconds(4), 4);
  s.ready_to_trip = trip::FailureRate(0.5, 1);
  Breaker b(s);
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  std::vector<Permit> held;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Permit> p = b.Allow();
    ASSERT_TRUE(p.ok());
    held.push_back(std::move(*p));
  }
  clock.Advance(absl::Seconds(1));
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(RunOk(b));
  for (Permit& p : held) p.Done(Failure());
  ASSERT_EQ(b.state(), State::kClosed);  // 3 of 15
  clock.Set(kAlignedStart + absl::Milliseconds(500));
  ASSERT_TRUE(RunOk(b));  // bucket 0: 3 failures, 3 successes
  EXPECT_EQ(b.state(), State::kOpen);
  const Counts c = b.last_trip().counts;
  EXPECT_EQ(c.window_calls, 6u);
  EXPECT_DOUBLE_EQ(c.failure_rate(), 0.5);
}

// A closed interval starts a new generation mid-window: the time window
// starts over, aligned to the interval's end.
TEST(AttackTripDecision, AnIntervalRestartsTheWindowAlignedToItsEnd) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "interval");
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  s.interval = absl::Milliseconds(2500);
  s.ready_to_trip = trip::FailureRate(0.5, 4);
  Breaker b(s);
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  clock.Advance(absl::Milliseconds(2500) + kNs);
  ASSERT_TRUE(RunOk(b));  // a new generation: 1 call, not 4
  Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 1u);
  EXPECT_EQ(c.window_failures, 0u);
  EXPECT_EQ(b.state(), State::kClosed);
  clock.Advance(absl::Milliseconds(999));  // still the new origin's bucket 0
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunFailure(b));
  ASSERT_TRUE(RunOk(b));  // 2 of 4
  EXPECT_EQ(b.state(), State::kOpen);
}

TEST(AttackTripDecision, TripsAtExactlyTheMinimumOnASuccess) {
  for (int timed = 0; timed < 2; ++timed) {
    SCOPED_TRACE(timed ? "time window" : "count window");
    FakeClock clock(kAlignedStart);
    BreakerSettings s = TestSettings(&clock, "at-minimum");
    s.window = timed ? SlidingWindow::Time(absl::Seconds(10), 10)
                     : SlidingWindow::Count(10);
    s.ready_to_trip =
        trip::AnyOf({trip::FailureRate(0.5, 4), trip::SlowCallRate(1.0, 8)});
    Breaker b(s);
    ASSERT_TRUE(RunFailure(b));
    ASSERT_TRUE(RunOk(b));
    ASSERT_TRUE(RunFailure(b));
    ASSERT_EQ(b.state(), State::kClosed);  // 3 calls, under the minimum
    ASSERT_TRUE(RunOk(b));                 // 2 of 4: 50%, at the minimum
    EXPECT_EQ(b.state(), State::kOpen);
  }
}

// A time window whose calls fall below the minimum when a bucket leaves,
// then climb back to it with successes only, within one bucket.
TEST(AttackTripDecision, TimeWindowBackAtTheMinimumAfterABucketLeft) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "refill");
  s.window = SlidingWindow::Time(absl::Seconds(3), 3);
  s.ready_to_trip = trip::FailureRate(0.4, 6);
  Breaker b(s);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunOk(b));  // bucket 0
  clock.Advance(absl::Seconds(1));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunFailure(b));  // bucket 1
  ASSERT_EQ(b.state(), State::kClosed);                    // 3 of 8: 37.5%
  clock.Advance(absl::Seconds(2));  // bucket 3: bucket 0 left, 3 calls
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);  // 5 calls, under the minimum
  ASSERT_TRUE(RunOk(b));                 // 3 of 6: 50%
  EXPECT_EQ(b.state(), State::kOpen);
}

// ---------------------------------------------------------------------------
// Half-open trials in the window
// ---------------------------------------------------------------------------

struct ChangeRecorder : Telemetry {
  struct Listener : BreakerListener {
    explicit Listener(ChangeRecorder* r) : r(r) {}
    void OnStateChange(const BreakerStateChange& c) override {
      r->changes.push_back(c);
    }
    ChangeRecorder* r;
  };
  std::unique_ptr<BreakerListener> AttachBreaker(const BreakerView&) override {
    return std::make_unique<Listener>(this);
  }
  std::vector<BreakerStateChange> changes;
  const BreakerStateChange* Last(State from, State to) const {
    for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
      if (it->from == from && it->to == to) return &*it;
    }
    return nullptr;
  }
};

// Trips `b` with failures and moves it to half-open.
void TripToHalfOpen(Breaker& b, FakeClock& clock) {
  for (int i = 0; i < 100 && b.state() == State::kClosed; ++i) {
    ASSERT_TRUE(RunFailure(b));
  }
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Advance(kTimeout + kNs);
  ASSERT_EQ(b.state(), State::kHalfOpen);
}

// Trials straddling the window's length: the decision counts all three
// (one failure in three: closes), but the window the event carries and
// counts() shows during half-open have lost the first.
TEST(AttackHalfOpen, TrialsOlderThanATimeWindowStillShowInTheEventCounts) {
  FakeClock clock(kAlignedStart);
  ChangeRecorder rec;
  BreakerSettings s = TestSettings(&clock, "straddle");
  s.metrics = &rec;
  s.window = SlidingWindow::Time(absl::Seconds(2), 2);
  s.ready_to_trip = trip::FailureRate(0.5, 3);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 3;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));  // trial 1
  clock.Advance(absl::Seconds(3));
  ASSERT_TRUE(RunOk(b));  // trial 2
  const Counts mid = b.counts();
  EXPECT_EQ(mid.total_failures, 1u);
  EXPECT_EQ(mid.window_failures, 1u)
      << "counts() in half-open dropped a trial the decision will count";
  EXPECT_EQ(mid.window_calls, 2u);
  ASSERT_TRUE(RunOk(b));  // trial 3: 1 of 3 failed, closes
  ASSERT_EQ(b.state(), State::kClosed);
  const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kClosed);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->counts.window_calls, 3u)
      << "the event does not carry the trials the decision was taken on";
  EXPECT_EQ(e->counts.window_failures, 1u);
}

// resilience4j's half-open window is its own, of
// permittedNumberOfCallsInHalfOpenState calls, and decides at
// min(minimumNumberOfCalls, permitted): 10 here, not the closed window's 3.
TEST(AttackHalfOpen, ACountWindowSmallerThanMaxRequestsDoesNotCapTheTrials) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "capped");
  s.window = SlidingWindow::Count(3);
  s.ready_to_trip = trip::FailureRate(0.5, 20);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 10;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen)
      << "decided after 3 of 10 permitted trials (the closed window's size)";
}

// With gobreaker's policy and max_requests above the count window, the
// close event's window shows only the last `size` of the trials.
TEST(AttackHalfOpen, CloseEventOfACountWindowCarriesEveryTrial) {
  FakeClock clock(kAlignedStart);
  ChangeRecorder rec;
  BreakerSettings s = TestSettings(&clock, "first-failure");
  s.metrics = &rec;
  s.window = SlidingWindow::Count(3);
  s.ready_to_trip = trip::FailureRate(0.5, 3);
  s.max_requests = 5;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);
  const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kClosed);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->counts.total_successes, 5u);
  EXPECT_EQ(e->counts.window_calls, 5u)
      << "the event's window holds " << e->counts.window_calls
      << " of the 5 trials the breaker closed on";
}

TEST(AttackHalfOpen, StragglersOfTheClosedGenerationCountNowhere) {
  for (int timed = 0; timed < 2; ++timed) {
    SCOPED_TRACE(timed ? "time window" : "count window");
    FakeClock clock(kAlignedStart);
    ChangeRecorder rec;
    BreakerSettings s = TestSettings(&clock, "stragglers");
    s.metrics = &rec;
    s.window = timed ? SlidingWindow::Time(absl::Seconds(10), 5)
                     : SlidingWindow::Count(10);
    s.slow_call_duration = absl::Milliseconds(100);
    s.ready_to_trip = trip::FailureRate(0.5, 2);
    s.half_open_policy = HalfOpenPolicy::kRateBased;
    s.max_requests = 4;
    Breaker b(s);
    std::vector<Permit> old;
    for (int i = 0; i < 4; ++i) {
      absl::StatusOr<Permit> p = b.Allow();
      ASSERT_TRUE(p.ok());
      old.push_back(std::move(*p));
    }
    TripToHalfOpen(b, clock);
    absl::StatusOr<Permit> t1 = b.Allow();
    ASSERT_TRUE(t1.ok());
    old[0].Done(Failure());
    old[1].Done(absl::OkStatus());  // slow
    old[2].Done(ClientError());
    { Permit dropped = std::move(old[3]); }
    Counts c = b.counts();
    EXPECT_EQ(c.window_calls, 0u);
    EXPECT_EQ(c.window_failures, 0u);
    EXPECT_EQ(c.window_slow_calls, 0u);
    EXPECT_EQ(c.requests, 1u);
    clock.Advance(absl::Milliseconds(200));
    t1->Done(absl::OkStatus());  // slow trial, succeeded
    c = b.counts();
    EXPECT_EQ(c.window_calls, 1u);
    EXPECT_EQ(c.window_slow_calls, 1u);
    EXPECT_EQ(c.window_failures, 0u);
    ASSERT_TRUE(RunFailure(b));  // 2 reported: 1 of 2 failed, reopens
    EXPECT_EQ(b.state(), State::kOpen);
    const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kOpen);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->counts.window_calls, 2u);
    EXPECT_EQ(e->counts.window_failures, 1u);
    EXPECT_EQ(e->counts.window_slow_calls, 1u);
  }
}

TEST(AttackHalfOpen, ExcludedAndAbandonedTrialsGiveTheirSlotsBack) {
  for (int timed = 0; timed < 2; ++timed) {
    SCOPED_TRACE(timed ? "time window" : "count window");
    FakeClock clock(kAlignedStart);
    ChangeRecorder rec;
    BreakerSettings s = TestSettings(&clock, "give-back");
    s.metrics = &rec;
    s.is_excluded = IsClientError;
    s.window = timed ? SlidingWindow::Time(absl::Seconds(10), 10)
                     : SlidingWindow::Count(10);
    s.ready_to_trip = trip::FailureRate(0.5, 4);
    s.half_open_policy = HalfOpenPolicy::kRateBased;
    s.max_requests = 4;
    Breaker b(s);
    TripToHalfOpen(b, clock);
    ASSERT_TRUE(RunWith(b, ClientError()));
    {
      absl::StatusOr<Permit> p = b.Allow();
      ASSERT_TRUE(p.ok());
    }  // abandoned
    ASSERT_TRUE(RunFailure(b));
    clock.Advance(absl::Milliseconds(999));  // straddles a bucket boundary
    ASSERT_TRUE(RunOk(b));
    ASSERT_TRUE(RunOk(b));
    ASSERT_EQ(b.state(), State::kHalfOpen);
    const Counts mid = b.counts();
    EXPECT_EQ(mid.window_calls, 3u);
    EXPECT_EQ(mid.window_failures, 1u);
    EXPECT_EQ(mid.total_exclusions, 1u);
    ASSERT_TRUE(RunOk(b));  // 1 of 4: closes
    ASSERT_EQ(b.state(), State::kClosed);
    const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kClosed);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->counts.window_calls, 4u);
    EXPECT_EQ(e->counts.window_failures, 1u);
    EXPECT_EQ(e->counts.total_exclusions, 1u);
    EXPECT_EQ(e->counts.requests, 5u);       // admitted 6, one abandoned
    EXPECT_EQ(b.counts().window_calls, 0u);  // the new generation is empty
  }
}

// The doc: the smallest minimum among an AnyOf's rate parts.
TEST(AttackHalfOpen, AnyOfOfDifferentMinimumsDecidesAtTheSmallest) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "any-of");
  s.window = SlidingWindow::Count(20);
  s.ready_to_trip =
      trip::AnyOf({trip::SlowCallRate(0.5, 6), trip::FailureRate(0.5, 2)});
  s.slow_call_duration = absl::Seconds(1);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 6;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kHalfOpen);
  ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kClosed);
}

TEST(AttackHalfOpen, ARuleWithoutARatePartWaitsForEveryPermittedTrial) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "no-rate");
  s.window = SlidingWindow::Count(2);
  s.ready_to_trip = trip::ConsecutiveFailures(2);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 5;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(RunOk(b));
  EXPECT_EQ(b.state(), State::kHalfOpen);
  ASSERT_TRUE(RunFailure(b));  // 1 of 5: closes
  EXPECT_EQ(b.state(), State::kClosed);
}

// kRateBased with a rule without a rate part judges all five trials (one
// failure: 20%, closes), but a count window of 2 hands the event, and
// failure_rate() just before the decision, only the last two.
TEST(AttackHalfOpen, RateBasedEventOfASmallCountWindowCarriesEveryTrial) {
  FakeClock clock(kAlignedStart);
  ChangeRecorder rec;
  BreakerSettings s = TestSettings(&clock, "no-rate-event");
  s.metrics = &rec;
  s.window = SlidingWindow::Count(2);
  s.ready_to_trip = trip::ConsecutiveFailures(2);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 5;
  Breaker b(s);
  TripToHalfOpen(b, clock);
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunOk(b));
  ASSERT_TRUE(RunFailure(b));
  EXPECT_DOUBLE_EQ(b.counts().failure_rate(), 0.25)
      << "half-open failure_rate() over 4 trials with 1 failure";
  ASSERT_TRUE(RunOk(b));
  ASSERT_EQ(b.state(), State::kClosed);
  const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kClosed);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->counts.window_calls, 5u);
  EXPECT_EQ(e->counts.window_failures, 1u);
}

TEST(AttackHalfOpen, MaxWaitExpiryCarriesTheTrialsInTheEvent) {
  FakeClock clock(kAlignedStart);
  ChangeRecorder rec;
  BreakerSettings s = TestSettings(&clock, "max-wait");
  s.metrics = &rec;
  s.window = SlidingWindow::Time(absl::Seconds(4), 4);
  s.ready_to_trip = trip::FailureRate(0.5, 3);
  s.half_open_policy = HalfOpenPolicy::kRateBased;
  s.max_requests = 3;
  s.half_open_max_wait = absl::Seconds(2);
  Breaker b(s);
  TripToHalfOpen(b, clock);
  ASSERT_TRUE(RunFailure(b));
  absl::StatusOr<Permit> hung = b.Allow();
  ASSERT_TRUE(hung.ok());
  clock.Advance(absl::Seconds(2) + kNs);
  EXPECT_EQ(b.state(), State::kOpen);
  const BreakerStateChange* e = rec.Last(State::kHalfOpen, State::kOpen);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->cause, TransitionCause::kTrialTimedOut);
  EXPECT_EQ(e->counts.window_calls, 1u);
  EXPECT_EQ(e->counts.window_failures, 1u);
  hung->Done(Failure());  // stale now
  EXPECT_EQ(b.counts().window_calls, 0u);
}

// ---------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------

// Runs `per_thread` calls on each of `threads` threads that are all alive at
// once (more than the exclusive shards), in `waves` successive waves, so
// that exited threads' shard slots are taken by new ones. Call i of a
// thread fails when i % 7 < fails_of_7, is excluded when i % 13 == 5, is
// abandoned when i % 17 == 9, and succeeds otherwise.
struct Tally {
  std::atomic<uint64_t> admitted{0}, successes{0}, failures{0}, exclusions{0},
      abandoned{0};
};

void Hammer(Breaker& b, Tally& t, int threads, int waves, int per_thread,
            FakeClock* advance = nullptr, int fails_of_7 = 1) {
  for (int wave = 0; wave < waves; ++wave) {
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    ts.reserve(static_cast<size_t>(threads));
    for (int k = 0; k < threads; ++k) {
      ts.emplace_back([&, k] {
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();
        for (int i = 0; i < per_thread; ++i) {
          if (advance != nullptr && k == 0 && i % 16 == 0) {
            advance->Advance(absl::Milliseconds(3));
          }
          absl::StatusOr<Permit> p = b.Allow();
          if (!p.ok()) continue;
          t.admitted.fetch_add(1);
          if (i % 17 == 9) {
            t.abandoned.fetch_add(1);
            continue;  // destroyed without Done
          }
          if (i % 7 < fails_of_7) {
            p->Done(Failure());
            t.failures.fetch_add(1);
          } else if (i % 13 == 5) {
            p->Done(ClientError());
            t.exclusions.fetch_add(1);
          } else {
            p->Done(absl::OkStatus());
            t.successes.fetch_add(1);
          }
        }
      });
    }
    for (std::thread& th : ts) th.join();
  }
}

constexpr int kThreads = 80;

// Calls admitted on one set of threads and completed on another (an
// asynchronous client): the window's lanes are the completing thread's.
TEST(AttackThreads, CompletedOnAnotherThreadExactTimeWindowTotals) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-async");
  s.window = SlidingWindow::Time(absl::Hours(1), 10);  // holds every call
  Breaker b(s);
  constexpr int kPairs = 20;
  constexpr int kCalls = 300;
  std::atomic<uint64_t> successes{0}, failures{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < kPairs; ++k) {
    std::vector<Permit> permits;
    for (int i = 0; i < kCalls; ++i) {
      absl::StatusOr<Permit> p = b.Allow();
      ASSERT_TRUE(p.ok());
      permits.push_back(std::move(*p));
      if (i % 50 == 0) clock.Advance(absl::Seconds(1));
    }
    ts.emplace_back([&, k, permits = std::move(permits)]() mutable {
      for (size_t i = 0; i < permits.size(); ++i) {
        if ((i + static_cast<size_t>(k)) % 5 == 0) {
          permits[i].Done(Failure());
          failures.fetch_add(1);
        } else {
          permits[i].Done(absl::OkStatus());
          successes.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : ts) th.join();
  const Counts c = b.counts();
  EXPECT_EQ(c.requests, uint64_t{kPairs} * kCalls);
  EXPECT_EQ(c.total_successes, successes.load());
  EXPECT_EQ(c.total_failures, failures.load());
  EXPECT_EQ(c.window_calls, successes.load() + failures.load());
}

TEST(AttackThreads, ManyThreadsMoreThanTheShardsExactCountWindowTotals) {
  ASSERT_GT(static_cast<size_t>(kThreads), detail::ShardArraySize());
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-count");
  s.is_excluded = IsClientError;
  s.window = SlidingWindow::Count(100000);
  Breaker b(s);
  Tally t;
  Hammer(b, t, kThreads, 3, 200);
  const Counts c = b.counts();
  EXPECT_EQ(c.window_calls, t.successes.load() + t.failures.load());
  EXPECT_EQ(c.window_failures, t.failures.load());
  EXPECT_EQ(c.total_successes, t.successes.load());
  EXPECT_EQ(c.total_failures, t.failures.load());
  EXPECT_EQ(c.total_exclusions, t.exclusions.load());
  EXPECT_EQ(c.requests, t.admitted.load() - t.abandoned.load());
}

// After concurrent traffic, a single-threaded run of exactly `size` calls
// must leave exactly those in the window.
TEST(AttackThreads, CountWindowExactAfterQuiescence) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-small-count");
  s.is_excluded = IsClientError;
  s.window = SlidingWindow::Count(50);
  Breaker b(s);
  Tally t;
  Hammer(b, t, kThreads, 2, 150);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(i < 10 ? RunFailure(b) : RunOk(b));
  }
  Counts c = b.counts();
  EXPECT_EQ(c.window_calls, 50u);
  EXPECT_EQ(c.window_failures, 10u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(RunOk(b));
  c = b.counts();
  EXPECT_EQ(c.window_failures, 0u);
}

TEST(AttackThreads, ManyThreadsExactTimeWindowTotalsOnAFixedClock) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-time");
  s.is_excluded = IsClientError;
  s.window = SlidingWindow::Time(absl::Seconds(10), 10);
  Breaker b(s);
  Tally t;
  Hammer(b, t, kThreads, 3, 200);
  const Counts c = b.counts();
  EXPECT_EQ(c.window_calls, t.successes.load() + t.failures.load());
  EXPECT_EQ(c.window_failures, t.failures.load());
  EXPECT_EQ(c.total_successes, t.successes.load());
  EXPECT_EQ(c.total_failures, t.failures.load());
  EXPECT_EQ(c.total_exclusions, t.exclusions.load());
  EXPECT_EQ(c.requests, t.admitted.load() - t.abandoned.load());
}

// The clock crosses many bucket boundaries while the threads run; the
// window is long enough to hold them all, so at quiescence every call is
// in it (a record one bucket late is still in the window).
TEST(AttackThreads, ManyThreadsExactTimeWindowTotalsAcrossBuckets) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-time-moving");
  s.is_excluded = IsClientError;
  s.window = SlidingWindow::Time(absl::Hours(1), 1000);  // 3.6 s buckets
  Breaker b(s);
  Tally t;
  Hammer(b, t, kThreads, 3, 400, &clock);
  const Counts c = b.counts();
  EXPECT_EQ(c.window_calls, t.successes.load() + t.failures.load());
  EXPECT_EQ(c.window_failures, t.failures.load());
  EXPECT_EQ(c.total_successes, t.successes.load());
  EXPECT_EQ(c.total_failures, t.failures.load());
  EXPECT_EQ(c.total_exclusions, t.exclusions.load());
  EXPECT_EQ(c.requests, t.admitted.load() - t.abandoned.load());
}

// The same with 1 ms buckets (the clock moves 3 ms per 16 calls of one
// thread): nothing is double-counted, so the window never holds more than
// was done.
TEST(AttackThreads, NarrowBucketsNeverHoldMoreThanWasDone) {
  FakeClock clock(kAlignedStart);
  BreakerSettings s = TestSettings(&clock, "threads-narrow");
  s.is_excluded = IsClientError;
  s.window = SlidingWindow::Time(absl::Milliseconds(10000), 10000);
  Breaker b(s);
  Tally t;
  Hammer(b, t, kThreads, 2, 300, &clock);
  const Counts c = b.counts();
  EXPECT_LE(c.window_calls, t.successes.load() + t.failures.load());
  EXPECT_LE(c.window_failures, t.failures.load());
  EXPECT_LE(c.requests, t.admitted.load());
}

// Generations moved under the traffic (Reset, ForceOpen, trips): no crash,
// no race, and a quiet breaker reset afterwards starts from an empty window.
TEST(AttackThreads, ResetsAndTripsUnderTrafficLeaveAnEmptyWindowAfterReset) {
  for (int timed = 0; timed < 2; ++timed) {
    SCOPED_TRACE(timed ? "time window" : "count window");
    FakeClock clock(kAlignedStart);
    BreakerSettings s = TestSettings(&clock, "threads-reset");
    s.is_excluded = IsClientError;
    s.window = timed ? SlidingWindow::Time(absl::Seconds(2), 4)
                     : SlidingWindow::Count(64);
    s.ready_to_trip = trip::FailureRate(0.5, 8);
    s.half_open_policy = HalfOpenPolicy::kRateBased;
    s.max_requests = 8;
    s.timeout = absl::Milliseconds(10);
    Breaker b(s);
    std::atomic<bool> stop{false};
    std::thread mover([&] {
      int i = 0;
      while (!stop.load()) {
        clock.Advance(absl::Milliseconds(7));
        if (i % 5 == 0) b.Reset();
        if (i % 11 == 0) b.ForceOpen();
        (void)b.counts();
        (void)b.state();
        ++i;
        std::this_thread::yield();
      }
    });
    Tally t;
    Hammer(b, t, 24, 3, 3000, nullptr, /*fails_of_7=*/4);
    stop.store(true);
    mover.join();
    b.Reset();
    Counts c = b.counts();
    EXPECT_EQ(c.window_calls, 0u);
    EXPECT_EQ(c.window_failures, 0u);
    EXPECT_EQ(c.requests, 0u);
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(RunOk(b));
    c = b.counts();
    EXPECT_EQ(c.window_calls, 6u);
    EXPECT_EQ(c.total_successes, 6u);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
