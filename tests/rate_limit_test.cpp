// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// RateLimiter on a FakeClock, to the tick: the burst and then the rate,
// the exact retry-after (as a Duration and as ShedError's hint), a refusal
// that changes nothing, requests larger than the burst, pacing waits and
// giving a reservation back, the warm-up ramp (and Guava #3552's poll that
// never warmed), clocks stepping back and reading infinite times, every bad
// setting named, and the stats. Threads are in
// rate_limit_concurrency_test.cpp.

#include "degrade/rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

RateLimitSettings Settings(const FakeClock& clock, double rate, int64_t burst) {
  RateLimitSettings s;
  s.name = "store";
  s.rate = rate;
  s.burst = burst;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

std::unique_ptr<RateLimiter> Make(const RateLimitSettings& s) {
  auto r = RateLimiter::Create(s);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

// How many single permits TryAcquire admits at this instant.
int Drain(RateLimiter& l) {
  int n = 0;
  while (l.TryAcquire()) ++n;
  return n;
}

TEST(RateLimiterTest, AdmitsTheBurstThenTheRate) {
  FakeClock clock;
  auto l = Make(Settings(clock, 10, 5));
  EXPECT_EQ(Drain(*l), 5);
  absl::Duration retry;
  EXPECT_FALSE(l->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Milliseconds(100));
  clock.Advance(absl::Milliseconds(99));
  EXPECT_FALSE(l->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Milliseconds(1));
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(Drain(*l), 1);
  // Quiet for longer than the burst takes: the burst, not more.
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(Drain(*l), 5);
}

TEST(RateLimiterTest, TheRetryAfterIsExactAndShedErrorCarriesIt) {
  FakeClock clock;
  auto l = Make(Settings(clock, 3, 1));
  ASSERT_TRUE(l->Admit().ok());
  absl::Duration retry;
  ASSERT_FALSE(l->TryAcquire(1, &retry));
  // 1/3 s, rounded up to the nanosecond.
  EXPECT_EQ(retry, absl::Nanoseconds(333'333'334));
  const absl::Status st = l->Admit();
  EXPECT_TRUE(IsShed(st)) << st;
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("rate limiter 'store'"), absl::string_view::npos);
  EXPECT_EQ(ShedRetryAfter(st), absl::Milliseconds(334));
  // At the retry-after, admitted; a nanosecond before, not.
  clock.Advance(retry - absl::Nanoseconds(1));
  EXPECT_FALSE(l->TryAcquire());
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(l->TryAcquire());
}

TEST(RateLimiterTest, ARefusalChangesNothing) {
  FakeClock clock;
  auto l = Make(Settings(clock, 10, 2));
  ASSERT_EQ(Drain(*l), 2);
  absl::Duration first;
  ASSERT_FALSE(l->TryAcquire(1, &first));
  for (int i = 0; i < 1000; ++i) {
    absl::Duration again;
    ASSERT_FALSE(l->TryAcquire(1, &again));
    ASSERT_EQ(again, first);
    ASSERT_FALSE(l->Admit(2).ok());
    ASSERT_FALSE(l->Reserve().ok());
  }
  clock.Advance(first);
  EXPECT_EQ(Drain(*l), 1);
  const RateLimitStats st = l->stats();
  EXPECT_EQ(st.admitted, 3u);
  EXPECT_EQ(st.admitted_permits, 3u);
  EXPECT_EQ(st.refused, 3003u);  // the two drains ended on one each
  EXPECT_EQ(st.rate, 10.0);
}

TEST(RateLimiterTest, AdmitsExactlyTheRateUnderTwiceTheDemand) {
  FakeClock clock;
  auto l = Make(Settings(clock, 100, 10));
  int admitted = 0;
  // 200 requests a second for 10 s, one every 5 ms.
  for (int i = 0; i < 2000; ++i) {
    admitted += l->TryAcquire() ? 1 : 0;
    clock.Advance(absl::Milliseconds(5));
  }
  // The burst, then one per 10 ms over the 9.995 s after the first.
  EXPECT_EQ(admitted, 10 + 999);
}

TEST(RateLimiterTest, SeveralPermitsAtOnceAndMoreThanTheBurst) {
  FakeClock clock;
  auto l = Make(Settings(clock, 10, 5));
  EXPECT_TRUE(l->TryAcquire(3));
  absl::Duration retry;
  EXPECT_FALSE(l->TryAcquire(3, &retry));
  EXPECT_EQ(retry, absl::Milliseconds(100));
  // More than the burst is never admitted without a wait: "do not retry".
  clock.Advance(absl::Hours(1));
  EXPECT_FALSE(l->TryAcquire(6, &retry));
  EXPECT_LT(retry, absl::ZeroDuration());
  const absl::Status st = l->Admit(6);
  EXPECT_TRUE(IsShed(st));
  EXPECT_LT(*ShedRetryAfter(st), absl::ZeroDuration());
  EXPECT_NE(st.message().find("never"), absl::string_view::npos) << st;
  // n < 1 is a caller's mistake, not a shed.
  EXPECT_FALSE(l->TryAcquire(0));
  EXPECT_EQ(l->Admit(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(l->Admit(-5).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(l->TryAcquire(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(Drain(*l), 5);
}

TEST(RateLimiterTest, PacingHandsOutWaitsUpToMaxWait) {
  FakeClock clock;
  RateLimitSettings s = Settings(clock, 10, 1);
  s.max_wait = absl::Milliseconds(250);
  auto l = Make(s);
  EXPECT_EQ(l->Reserve().value(), absl::ZeroDuration());
  EXPECT_EQ(l->Reserve().value(), absl::Milliseconds(100));
  EXPECT_EQ(l->Reserve().value(), absl::Milliseconds(200));
  // The fourth would wait 300 ms: refused, retry when it would be 250.
  const absl::StatusOr<absl::Duration> r = l->Reserve();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsShed(r.status()));
  EXPECT_EQ(ShedRetryAfter(r.status()), absl::Milliseconds(50));
  // TryAcquire never waits.
  EXPECT_FALSE(l->TryAcquire());
  clock.Advance(absl::Milliseconds(50));
  EXPECT_EQ(l->Reserve().value(), absl::Milliseconds(250));
  // More than the burst fits a wait: 3 permits wait 2 intervals from idle.
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(l->Reserve(3).value(), absl::Milliseconds(200));
  EXPECT_FALSE(l->Reserve(4).ok());
}

TEST(RateLimiterTest, GivingBackAReservationShortensTheNextWait) {
  FakeClock clock;
  RateLimitSettings s = Settings(clock, 10, 1);
  s.max_wait = absl::Seconds(1);
  auto l = Make(s);
  ASSERT_EQ(l->Reserve().value(), absl::ZeroDuration());
  ASSERT_EQ(l->Reserve(2).value(), absl::Milliseconds(200));
  l->GiveBack(2);  // the caller gave up
  EXPECT_EQ(l->Reserve().value(), absl::Milliseconds(100));
  // Giving back more than was taken fills the bucket and no more.
  l->GiveBack(1000);
  EXPECT_EQ(Drain(*l), 1);
  l->GiveBack(0);
  l->GiveBack(-3);
  EXPECT_FALSE(l->TryAcquire());
}

// Admissions over `d`, one attempt every `step`.
int Poll(RateLimiter& l, FakeClock& clock, absl::Duration d,
         absl::Duration step) {
  int n = 0;
  for (absl::Duration t; t < d; t += step) {
    n += l.TryAcquire() ? 1 : 0;
    clock.Advance(step);
  }
  return n;
}

TEST(RateLimiterTest, WarmUpRampsFromTheColdRateToTheRate) {
  FakeClock clock;
  RateLimitSettings s = Settings(clock, 100, 1);
  s.warm_up = absl::Seconds(1);
  s.cold_factor = 3;
  auto l = Make(s);
  EXPECT_NEAR(l->current_rate(), 100.0 / 3, 1e-9);
  // The first second averages (100/3 + 100) / 2, the next is at the rate.
  const int first = Poll(*l, clock, absl::Seconds(1), absl::Milliseconds(1));
  EXPECT_GE(first, 62);
  EXPECT_LE(first, 70);
  EXPECT_DOUBLE_EQ(l->current_rate(), 100.0);
  EXPECT_EQ(Poll(*l, clock, absl::Seconds(1), absl::Milliseconds(1)), 100);
  // Quiet for less than the warm-up: still warm.
  clock.Advance(absl::Milliseconds(500));
  EXPECT_EQ(Poll(*l, clock, absl::Seconds(1), absl::Milliseconds(1)), 100);
  // Quiet for a warm-up: cold again, the first interval is 30 ms.
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(l->TryAcquire());
  absl::Duration retry;
  ASSERT_FALSE(l->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Milliseconds(30));
}

TEST(RateLimiterTest, APollSlowerThanTheRateStillWarmsUp) {
  // Guava #3552: 10/s warming up, polled every 120 ms, admitted every
  // other poll forever. Here the ramp follows time, not stored permits.
  FakeClock clock;
  RateLimitSettings s = Settings(clock, 10, 1);
  s.warm_up = absl::Seconds(1);
  auto l = Make(s);
  Poll(*l, clock, absl::Seconds(2), absl::Milliseconds(120));
  EXPECT_EQ(Poll(*l, clock, absl::Seconds(12), absl::Milliseconds(120)), 100);
}

TEST(RateLimiterTest, AClockSteppedBackIsNoTimePassing) {
  FakeClock clock;
  auto l = Make(Settings(clock, 10, 10));
  ASSERT_EQ(Drain(*l), 10);
  // An hour back: the limiter stands still at where it was, then moves on
  // with the clock; it neither refuses for an hour nor forgives anything.
  clock.Set(clock.Now() - absl::Hours(1));
  EXPECT_FALSE(l->TryAcquire());
  clock.Advance(absl::Milliseconds(100));
  EXPECT_EQ(Drain(*l), 1);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(Drain(*l), 10);
  // A small step back (below a second) reads as the time it left: the
  // limiter waits for the clock to come back.
  ASSERT_EQ(Drain(*l), 0);
  clock.Set(clock.Now() - absl::Milliseconds(500));
  clock.Advance(absl::Milliseconds(500));
  EXPECT_EQ(Drain(*l), 0);
  clock.Advance(absl::Milliseconds(100));
  EXPECT_EQ(Drain(*l), 1);
}

TEST(RateLimiterTest, AClockAtAnInfinityIsNoTimePassing) {
  for (const absl::Time end : {absl::InfiniteFuture(), absl::InfinitePast()}) {
    FakeClock clock;
    auto l = Make(Settings(clock, 10, 10));
    ASSERT_EQ(Drain(*l), 10);
    const absl::Time before = clock.Now();
    clock.Set(end);
    absl::Duration retry;
    EXPECT_FALSE(l->TryAcquire(1, &retry));
    EXPECT_EQ(retry, absl::Milliseconds(100));
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(l->TryAcquire());
    // Back to a finite time: on from where it was.
    clock.Set(before + absl::Milliseconds(100));
    EXPECT_EQ(Drain(*l), 1);
  }
  // A limiter cannot start on a clock at an infinity.
  FakeClock clock(absl::InfiniteFuture());
  EXPECT_EQ(RateLimiter::Create(Settings(clock, 10, 1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RateLimiterTest, TheExtremeSettingsWork) {
  FakeClock clock;
  // One an hour, a burst of one.
  auto slow = Make(Settings(clock, kMinRateLimit, 1));
  EXPECT_TRUE(slow->TryAcquire());
  absl::Duration retry;
  EXPECT_FALSE(slow->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Hours(1));
  // 1e9 a second with the largest burst: a second's worth.
  auto fast = Make(Settings(clock, kMaxRateLimit, kMaxRateLimitBurst));
  EXPECT_TRUE(fast->TryAcquire(kMaxRateLimitBurst));
  EXPECT_FALSE(fast->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Nanoseconds(1));
  // 30 days' worth of burst at one an hour.
  auto deep = Make(Settings(clock, kMinRateLimit, 24 * 30));
  EXPECT_TRUE(deep->TryAcquire(24 * 30));
  EXPECT_FALSE(deep->TryAcquire());
}

TEST(RateLimiterTest, PerThreadCreditBatchesAndStaysExactAtTheEdge) {
  FakeClock clock;
  RateLimitSettings s = Settings(clock, 10, 10);
  s.credit_per_thread = 4;
  auto l = Make(s);
  // Batches of this request and 4 more: 5, 5, then nothing left.
  EXPECT_EQ(Drain(*l), 10);
  absl::Duration retry;
  EXPECT_FALSE(l->TryAcquire(1, &retry));
  EXPECT_EQ(retry, absl::Milliseconds(100));  // exact for the shared state
  // One permit replenished: no batch fits, the request alone does.
  clock.Advance(absl::Milliseconds(100));
  EXPECT_TRUE(l->TryAcquire());
  EXPECT_FALSE(l->TryAcquire());
  // Larger than the credit: straight to the shared state.
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(l->Admit(6).ok());
  EXPECT_EQ(Drain(*l), 4);
  const RateLimitStats st = l->stats();
  EXPECT_EQ(st.admitted, 16u);
  EXPECT_EQ(st.admitted_permits, 21u);
}

TEST(RateLimiterTest, EveryBadSettingIsNamed) {
  FakeClock clock;
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* field;
    void (*edit)(RateLimitSettings&);
  };
  const Case cases[] = {
      {"'rate' = 0", [](RateLimitSettings& s) { s.rate = 0; }},
      {"'rate' = -1", [](RateLimitSettings& s) { s.rate = -1; }},
      {"'rate' = nan", [](RateLimitSettings& s) { s.rate = std::nan(""); }},
      {"'rate' = inf",
       [](RateLimitSettings& s) {
         s.rate = std::numeric_limits<double>::infinity();
       }},
      {"'rate' = 0.0001", [](RateLimitSettings& s) { s.rate = 1e-4; }},
      {"'rate' = 2e+09", [](RateLimitSettings& s) { s.rate = 2e9; }},
      {"'burst' = 0", [](RateLimitSettings& s) { s.burst = 0; }},
      {"'burst' = -1", [](RateLimitSettings& s) { s.burst = -1; }},
      {"'burst' = 2000000000",
       [](RateLimitSettings& s) { s.burst = 2'000'000'000; }},
      {"30 days",
       [](RateLimitSettings& s) {
         s.rate = 1;
         s.burst = 3'000'000;
       }},
      {"'warm_up' = 500us",
       [](RateLimitSettings& s) { s.warm_up = absl::Microseconds(500); }},
      {"'warm_up' = -1s",
       [](RateLimitSettings& s) { s.warm_up = absl::Seconds(-1); }},
      {"'warm_up' = 2h",
       [](RateLimitSettings& s) { s.warm_up = absl::Hours(2); }},
      {"'warm_up' = inf",
       [](RateLimitSettings& s) { s.warm_up = absl::InfiniteDuration(); }},
      {"'cold_factor' = 1", [](RateLimitSettings& s) { s.cold_factor = 1; }},
      {"'cold_factor' = nan",
       [](RateLimitSettings& s) { s.cold_factor = std::nan(""); }},
      {"'cold_factor' = 101",
       [](RateLimitSettings& s) { s.cold_factor = 101; }},
      {"'credit_per_thread' = -1",
       [](RateLimitSettings& s) { s.credit_per_thread = -1; }},
      {"'credit_per_thread' = 6 is invalid: must be in [0, burst] = [0, 5]",
       [](RateLimitSettings& s) { s.credit_per_thread = 6; }},
      {"'max_wait' = -1ns",
       [](RateLimitSettings& s) { s.max_wait = absl::Nanoseconds(-1); }},
      {"'max_wait' = 2h",
       [](RateLimitSettings& s) { s.max_wait = absl::Hours(2); }},
      {"'max_wait' = inf",
       [](RateLimitSettings& s) { s.max_wait = absl::InfiniteDuration(); }},
  };
  (void)nan;
  (void)inf;
  for (const Case& c : cases) {
    RateLimitSettings s = Settings(clock, 10, 5);
    c.edit(s);
    const absl::Status st = ValidateRateLimitSettings(s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_NE(st.message().find("rate limiter 'store': setting"),
              absl::string_view::npos)
        << st;
    EXPECT_NE(st.message().find(c.field), absl::string_view::npos)
        << c.field << " not in: " << st;
    EXPECT_EQ(RateLimiter::Create(s).status(), st);
  }
  RateLimitSettings s = Settings(clock, 10, 5);
  s.name = "bad\nname";
  s.rate = 0;
  EXPECT_EQ(ValidateRateLimitSettings(s).message().find('\n'),
            std::string::npos);
  EXPECT_TRUE(ValidateRateLimitSettings(Settings(clock, 10, 5)).ok());
}

// Any settings at all: either refused with INVALID_ARGUMENT, or a limiter
// whose calls keep their promises (never more than the burst at once,
// refusals with a retry-after, no crash, no overflow).
TEST(RateLimiterTest, RandomSettingsAreRefusedOrKeepTheirPromises) {
  FakeClock clock;
  detail::SplitMix64 rng(33);
  const double doubles[] = {std::nan(""),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            0,
                            -1,
                            1e-300,
                            kMinRateLimit,
                            1,
                            7.5,
                            1e6,
                            kMaxRateLimit,
                            1e300};
  const int64_t ints[] = {std::numeric_limits<int64_t>::min(),
                          -1,
                          0,
                          1,
                          2,
                          1000,
                          kMaxRateLimitBurst,
                          std::numeric_limits<int64_t>::max()};
  const absl::Duration durations[] = {-absl::InfiniteDuration(),
                                      absl::Nanoseconds(-1),
                                      absl::ZeroDuration(),
                                      absl::Nanoseconds(1),
                                      absl::Milliseconds(1),
                                      absl::Seconds(1),
                                      absl::Hours(1),
                                      absl::Hours(2),
                                      absl::InfiniteDuration()};
  const auto pick = [&rng](const auto& table) {
    return table[rng.Next() % (sizeof(table) / sizeof(table[0]))];
  };
  int valid = 0;
  for (int i = 0; i < 3000; ++i) {
    // Each field wild one time in three, so that some draws are valid.
    const auto wild = [&rng] { return rng.Next() % 3 == 0; };
    RateLimitSettings s =
        Settings(clock, wild() ? pick(doubles) : 10, wild() ? pick(ints) : 5);
    s.warm_up = wild() ? pick(durations) : absl::Seconds(1);
    s.cold_factor = wild() ? pick(doubles) : 3;
    s.max_wait = wild() ? pick(durations) : absl::Milliseconds(100);
    s.credit_per_thread = wild() ? pick(ints) : 2;
    const absl::Status v = ValidateRateLimitSettings(s);
    auto l = RateLimiter::Create(s);
    ASSERT_EQ(l.status(), v);
    if (!v.ok()) {
      ASSERT_EQ(v.code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ++valid;
    RateLimiter& r = **l;
    int64_t admitted = 0;
    for (int k = 0; k < 50 && admitted <= s.burst; ++k) {
      absl::Duration retry;
      if (r.TryAcquire(1, &retry)) {
        ++admitted;
      } else {
        ASSERT_NE(retry, absl::ZeroDuration());
      }
      (void)r.Reserve(2);
      clock.Advance(absl::Nanoseconds(static_cast<int64_t>(rng.Next() % 3)));
    }
    ASSERT_LE(admitted, std::max<int64_t>(s.burst, 1) + 50);
    (void)r.stats();
  }
  EXPECT_GT(valid, 50);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
