// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/backoff.hpp: growth by the multiplier up to the cap, reset
// to the base, no growth at 1, jitter bounds and determinism per seed, an
// infinite base.

#include "degrade/detail/backoff.hpp"

#include <algorithm>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace {

using detail::OpenBackoff;

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

}  // namespace
}  // namespace degrade
