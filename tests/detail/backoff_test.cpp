// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/backoff.hpp. FullJitter: a table of its edges (attempt 0
// and negative, huge attempts, multiplier 1, max below initial, u = 0 and
// u -> 1, a ceiling that overflows to infinity) and agreement with the two
// formulas it replaced (the Retrier's and the etcd watcher's). OpenBackoff:
// growth by the multiplier up to the cap, reset to the base, no growth at
// 1, jitter bounds and determinism per seed, an infinite base.

#include "degrade/detail/backoff.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/time/time.h"
#include "degrade/detail/splitmix.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using detail::OpenBackoff;

using detail::FullJitter;

TEST(FullJitterTest, TableOfEdges) {
  const absl::Duration inf = absl::InfiniteDuration();
  const absl::Duration ms = absl::Milliseconds(1);
  const double below_one = 1.0 - 0x1.0p-53;
  struct Case {
    const char* what;
    absl::Duration initial;
    double multiplier;
    absl::Duration max;
    int attempt;
    double u;
    absl::Duration want;
  };
  const Case cases[] = {
      {"attempt 0 waits up to initial", 100 * ms, 2, absl::Seconds(5), 0, 0.5,
       50 * ms},
      {"a negative attempt counts as 0", 100 * ms, 2, absl::Seconds(5), -3, 0.5,
       50 * ms},
      {"attempt 3 grows by multiplier^3", 100 * ms, 2, absl::Seconds(5), 3, 0.5,
       400 * ms},
      {"growth stops at max", 100 * ms, 2, absl::Seconds(5), 10, 0.5,
       absl::Milliseconds(2500)},
      {"a huge attempt is max", 100 * ms, 2, absl::Seconds(5),
       std::numeric_limits<int>::max(), 0.5, absl::Milliseconds(2500)},
      {"multiplier 1 never grows", 100 * ms, 1, absl::Seconds(5), 1000, 0.5,
       50 * ms},
      {"max below initial wins", absl::Seconds(1), 2, 100 * ms, 0, 0.5,
       50 * ms},
      {"u = 0 waits nothing", 100 * ms, 2, absl::Seconds(5), 3, 0.0,
       absl::ZeroDuration()},
      {"u = 0 under an infinite ceiling waits nothing", absl::Seconds(1), 2,
       inf, std::numeric_limits<int>::max(), 0.0, absl::ZeroDuration()},
      {"overflow with an infinite max is infinite", absl::Seconds(1), 2, inf,
       std::numeric_limits<int>::max(), 0.5, inf},
      {"overflow with a finite max is max", absl::Seconds(1), 100,
       absl::Hours(1), 10000, 0.5, absl::Minutes(30)},
      {"a zero initial waits nothing, even overflowing", absl::ZeroDuration(),
       100, inf, 10000, 0.5, absl::ZeroDuration()},
      {"a zero max waits nothing", 100 * ms, 2, absl::ZeroDuration(), 3, 0.5,
       absl::ZeroDuration()},
      {"a NaN multiplier is read as past max", 100 * ms,
       std::numeric_limits<double>::quiet_NaN(), absl::Seconds(5), 1, 0.5,
       absl::Milliseconds(2500)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FullJitter(c.initial, c.multiplier, c.max, c.attempt, c.u),
              c.want)
        << c.what;
  }
  // u -> 1: just under the ceiling, never over it.
  for (const int attempt : {0, 3, 10}) {
    const absl::Duration ceiling =
        std::min(100 * ms * std::pow(2.0, attempt), absl::Seconds(5));
    const absl::Duration d =
        FullJitter(100 * ms, 2, absl::Seconds(5), attempt, below_one);
    EXPECT_LE(d, ceiling) << attempt;
    EXPECT_GE(d, ceiling - absl::Nanoseconds(1)) << attempt;
  }
}

// The Retrier's waits must not move: FullJitter is the formula retry.hpp
// had, bit for bit, over the policies it accepts.
TEST(FullJitterTest, IsTheRetriersFormulaExactly) {
  detail::SplitMix64 rng(7);
  for (const double multiplier : {1.0, 1.6, 2.0, 3.7, 100.0}) {
    for (int retry = 1; retry <= 10; ++retry) {
      const absl::Duration initial = absl::Microseconds(1 + 977 * retry);
      const absl::Duration max = initial * 40 + absl::Nanoseconds(3);
      const double u = rng.NextUnit();
      const double cap = std::min(
          absl::ToDoubleSeconds(initial) * std::pow(multiplier, retry - 1),
          absl::ToDoubleSeconds(max));
      EXPECT_EQ(FullJitter(initial, multiplier, max, retry - 1, u),
                absl::Seconds(u * cap))
          << multiplier << " " << retry;
    }
  }
}

// The etcd watcher doubled a Duration; FullJitter computes in double
// seconds, which may round differently, by less than a nanosecond.
TEST(FullJitterTest, MatchesTheWatchersDoublingWithinANanosecond) {
  detail::SplitMix64 rng(0x5EED);
  const absl::Duration initial = absl::Milliseconds(100);
  const absl::Duration max = absl::Seconds(5);
  for (int failures = 1; failures <= 62; ++failures) {
    absl::Duration cap = initial;
    for (int i = 1; i < failures && cap < max; ++i) cap *= 2;
    cap = std::min(cap, max);
    const double u = rng.NextUnit();
    const absl::Duration old = cap * u;
    const absl::Duration now = FullJitter(initial, 2.0, max, failures - 1, u);
    EXPECT_LE(absl::AbsDuration(now - old), absl::Nanoseconds(1)) << failures;
  }
}

TEST(OpenBackoffTest, GrowsByTheMultiplierUpToTheCapAndResets) {
  OpenBackoff b(absl::Seconds(1), 2.0, absl::Seconds(5), 0.0, 1);
  const std::vector<absl::Duration> want = {absl::Seconds(1), absl::Seconds(2),
                                            absl::Seconds(4), absl::Seconds(5),
                                            absl::Seconds(5)};
  for (absl::Duration d : want) {
    EXPECT_EQ(b.current(), d);
    EXPECT_EQ(b.NextOpenPeriod(), d);  // no jitter: exactly current()
    b.Grow();
  }
  b.Reset();
  EXPECT_EQ(b.current(), absl::Seconds(1));
}

TEST(OpenBackoffTest, NoCapGrowsWithoutBoundAndMultiplierOneNeverGrows) {
  OpenBackoff uncapped(absl::Seconds(1), 10.0, absl::ZeroDuration(), 0.0, 1);
  for (int i = 0; i < 6; ++i) uncapped.Grow();
  EXPECT_EQ(uncapped.current(), absl::Seconds(1000000));
  OpenBackoff fixed(absl::Seconds(3), 1.0, absl::ZeroDuration(), 0.0, 1);
  for (int i = 0; i < 6; ++i) fixed.Grow();
  EXPECT_EQ(fixed.current(), absl::Seconds(3));
}

TEST(OpenBackoffTest, JitterStaysWithinItsBoundsAndRepeatsPerSeed) {
  OpenBackoff a(absl::Seconds(10), 1.0, absl::ZeroDuration(), 0.5, 42);
  OpenBackoff b(absl::Seconds(10), 1.0, absl::ZeroDuration(), 0.5, 42);
  OpenBackoff c(absl::Seconds(10), 1.0, absl::ZeroDuration(), 0.5, 43);
  bool differs = false;
  absl::Duration lo = absl::InfiniteDuration();
  absl::Duration hi = absl::ZeroDuration();
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration d = a.NextOpenPeriod();
    EXPECT_EQ(d, b.NextOpenPeriod()) << "same seed, same draw " << i;
    differs = differs || d != c.NextOpenPeriod();
    EXPECT_GE(d, absl::Seconds(5));
    EXPECT_LT(d, absl::Seconds(15));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  EXPECT_TRUE(differs);
  // 1000 uniform draws cover most of [5 s, 15 s).
  EXPECT_LT(lo, absl::Seconds(6));
  EXPECT_GT(hi, absl::Seconds(14));
  // Jitter never feeds back into the un-jittered duration.
  EXPECT_EQ(a.current(), absl::Seconds(10));
}

// Issue 13 (time at the extremes): the cap was applied before the jitter,
// so with max_timeout 5 s and jitter 0.5 an open period could last 7.5 s.
TEST(OpenBackoffTest, TheCapHoldsAfterTheJitter) {
  OpenBackoff b(absl::Seconds(4), 2.0, absl::Seconds(5), 0.5, 42);
  b.Grow();
  ASSERT_EQ(b.current(), absl::Seconds(5));
  int at_cap = 0;
  absl::Duration lo = absl::InfiniteDuration();
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration d = b.NextOpenPeriod();
    EXPECT_LE(d, absl::Seconds(5)) << "draw " << i;
    EXPECT_GE(d, absl::Milliseconds(2500)) << "draw " << i;
    if (d == absl::Seconds(5)) ++at_cap;
    lo = std::min(lo, d);
  }
  // The upper half of the draws is cut to the cap; the lower half remains.
  EXPECT_GT(at_cap, 400);
  EXPECT_LT(at_cap, 600);
  EXPECT_LT(lo, absl::Seconds(3));
  // Below the cap the jitter goes both ways, as before.
  OpenBackoff below(absl::Seconds(2), 2.0, absl::Seconds(5), 0.5, 42);
  absl::Duration hi = absl::ZeroDuration();
  for (int i = 0; i < 1000; ++i) hi = std::max(hi, below.NextOpenPeriod());
  EXPECT_GT(hi, absl::Milliseconds(2900));
}

TEST(OpenBackoffTest, AnInfiniteBaseStaysInfinite) {
  OpenBackoff b(absl::InfiniteDuration(), 2.0, absl::ZeroDuration(), 0.5, 7);
  EXPECT_EQ(b.NextOpenPeriod(), absl::InfiniteDuration());
  b.Grow();
  EXPECT_EQ(b.current(), absl::InfiniteDuration());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
