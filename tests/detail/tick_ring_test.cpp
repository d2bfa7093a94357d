// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/tick_ring.hpp: what the window holds as ticks come and go, the
// newest-two-ticks sums, recycling a tick's word, an instant before the
// origin, saturation, and the conditional add racing itself (label
// concurrency, run under TSan).

#include "degrade/detail/tick_ring.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace {

constexpr int64_t kWidth = 1'000'000'000;  // 1 s ticks
constexpr int64_t kOrigin = 5'000'000'000;

TEST(TickRingTest, CountsStayForTheWindowAndLeaveATickAtATime) {
  TickRing ring(kWidth, kOrigin);
  for (uint32_t t = 0; t < 10; ++t) {
    ring.Add(0, t, 10);
    ring.Add(1, t);
  }
  TickSums s = ring.Read(9);
  EXPECT_EQ(s.first, 100u);
  EXPECT_EQ(s.second, 10u);
  EXPECT_EQ(s.first_recent, 20u);
  EXPECT_EQ(s.second_recent, 2u);
  EXPECT_EQ(s.second_now, 1u);
  // One tick later the oldest has left, the rest stay.
  s = ring.Read(10);
  EXPECT_EQ(s.first, 90u);
  EXPECT_EQ(s.second_now, 0u);
  // Long after, nothing is left, although no word was rewritten.
  s = ring.Read(100);
  EXPECT_EQ(s.first, 0u);
  EXPECT_EQ(s.second, 0u);
}

TEST(TickRingTest, ATickComingRoundAgainStartsItsWordAfresh) {
  TickRing ring(kWidth, kOrigin);
  ring.Add(0, 3, 7);
  ring.Add(0, 13, 2);  // the same slot, ten ticks later
  EXPECT_EQ(ring.Read(13).first, 2u);
  // A late add for the old tick lands in the newer one, never lost.
  ring.Add(0, 3);
  EXPECT_EQ(ring.Read(13).first, 3u);
}

TEST(TickRingTest, TicksCountFromTheOriginAndNotBeforeIt) {
  TickRing ring(kWidth, kOrigin);
  EXPECT_EQ(ring.TickOf(kOrigin), 0u);
  EXPECT_EQ(ring.TickOf(kOrigin + kWidth - 1), 0u);
  EXPECT_EQ(ring.TickOf(kOrigin + kWidth), 1u);
  EXPECT_EQ(ring.TickOf(kOrigin - 10 * kWidth), 0u);  // clock stepped back
}

TEST(TickRingTest, AddSecondIfChecksTheWindowAsItIsBeforeTheAdd) {
  TickRing ring(kWidth, kOrigin);
  ring.Add(0, 0, 5);
  int granted = 0;
  for (int i = 0; i < 10; ++i) {
    granted += ring.AddSecondIf(1, [](const TickSums& s) {
      return s.second < s.first;  // at most one per counted request
    });
  }
  EXPECT_EQ(granted, 5);
  EXPECT_EQ(ring.Read(1).second, 5u);
}

TEST(TickRingTest, ConditionalAddsRacingNeverOverdraw) {
  TickRing ring(kWidth, kOrigin);
  ring.Add(0, 0, 1000);
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (ring.AddSecondIf(0, [](const TickSums& s) {
              return s.second < s.first;
            })) {
          granted.fetch_add(1, std::memory_order_relaxed);
        }
        ring.Add(0, 0, 0);  // plain adds racing the conditional ones
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(granted.load(), 1000);
  EXPECT_EQ(ring.Read(0).second, 1000u);
}

}  // namespace
}  // namespace detail
}  // namespace degrade
