// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0

#include "degrade/clock.hpp"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(FakeClockTest, StandsStillUntilAdvanced) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(absl::Milliseconds(1500));
  EXPECT_EQ(clock.Now(), t0 + absl::Milliseconds(1500));
}

TEST(FakeClockTest, StartsWhereItIsTold) {
  const absl::Time start = absl::FromUnixSeconds(42);
  FakeClock clock(start);
  EXPECT_EQ(clock.Now(), start);
}

TEST(FakeClockTest, SetMovesEitherWay) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  clock.Set(t0 + absl::Hours(2));
  EXPECT_EQ(clock.Now(), t0 + absl::Hours(2));
  clock.Set(t0 - absl::Hours(1));
  EXPECT_EQ(clock.Now(), t0 - absl::Hours(1));
}

TEST(FakeClockTest, NegativeAdvanceIsIgnored) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  clock.Advance(-absl::Seconds(5));
  EXPECT_EQ(clock.Now(), t0);
}

TEST(FakeClockTest, HugeAdvanceSaturatesInsteadOfWrapping) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  clock.Advance(absl::Hours(24 * 365 * 300));
  EXPECT_GT(clock.Now(), t0);
  clock.Advance(absl::InfiniteDuration());
  EXPECT_GT(clock.Now(), t0 + absl::Hours(24 * 365 * 200));
  clock.Advance(absl::Seconds(1));
  EXPECT_GT(clock.Now(), t0);
}

TEST(FakeClockTest, ConcurrentAdvancesAreNotLost) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&clock] {
      for (int j = 0; j < kPerThread; ++j) {
        clock.Advance(absl::Nanoseconds(1));
        (void)clock.Now();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.Now(), t0 + absl::Nanoseconds(kThreads * kPerThread));
}

TEST(RealClockTest, NeverGoesBackwardsAndTracksWallTime) {
  const RealClock& clock = RealClock::Instance();
  absl::Time prev = clock.Now();
  for (int i = 0; i < 1000; ++i) {
    const absl::Time now = clock.Now();
    ASSERT_GE(now, prev);
    prev = now;
  }
  // Anchored to the wall clock, so log lines carry plausible times.
  EXPECT_LT(absl::AbsDuration(clock.Now() - absl::Now()), absl::Minutes(1));
}

TEST(RealClockTest, CoarseReadingNeverRunsAheadAndLagsLittle) {
  const RealClock& clock = RealClock::Instance();
  absl::Time prev_coarse = clock.CoarseNow();
  for (int i = 0; i < 1000; ++i) {
    const absl::Time coarse = clock.CoarseNow();
    const absl::Time precise = clock.Now();
    ASSERT_GE(coarse, prev_coarse);
    ASSERT_LE(coarse, precise);
    // A kernel tick is at most 10 ms (HZ=100); allow for a descheduled
    // thread between the two reads without asserting wall-clock timing.
    ASSERT_LT(precise - coarse, absl::Seconds(1));
    prev_coarse = coarse;
  }
}

TEST(RealClockTest, NanosecondReadingsMatchTheTimeReadings) {
  const RealClock& clock = RealClock::Instance();
  const int64_t before = clock.UnixNanos();
  const absl::Time t = clock.Now();
  const int64_t after = clock.UnixNanos();
  EXPECT_LE(before, absl::ToUnixNanos(t));
  EXPECT_LE(absl::ToUnixNanos(t), after);
}

TEST(FakeClockTest, CoarseNowIsNow) {
  FakeClock clock;
  clock.Advance(absl::Nanoseconds(7));
  EXPECT_EQ(clock.CoarseNow(), clock.Now());
}

TEST(RealClockTest, InstanceIsShared) {
  EXPECT_EQ(&RealClock::Instance(), &RealClock::Instance());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
