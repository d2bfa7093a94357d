// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/tick_window.hpp: what the window holds as ticks come and go, the
// newest-two-ticks sums, recycling a tick's word, instants before the
// origin and at the ends of time, stamps wrapping, saturation, the
// conditional add (its cache of completed ticks, its seal across a tick
// boundary, a tick behind the newest), and conditional adds racing each
// other, plain adds, sums and tick boundaries (label concurrency, run
// under TSan).

#include "degrade/detail/tick_window.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Time kOrigin = absl::FromUnixSeconds(1'700'000'000);
const absl::Duration kWindow = absl::Seconds(10);  // 1 s ticks

using Window2 = TickWindow<2>;

// At most one counter-1 add per counter-0 count in the window.
bool OnePerRequest(const Window2::Sums& s) { return s[1] < s[0]; }

TEST(TickWindowTest, CountsStayForTheWindowAndLeaveATickAtATime) {
  Window2 w(kWindow, kOrigin);
  for (uint64_t t = 0; t < 10; ++t) {
    w.Add(0, t, 10);
    w.Add(1, t);
  }
  Window2::Sums recent;
  Window2::Sums s = w.Sum(9, &recent);
  EXPECT_EQ(s[0], 100u);
  EXPECT_EQ(s[1], 10u);
  EXPECT_EQ(recent[0], 20u);
  EXPECT_EQ(recent[1], 2u);
  // One tick later the oldest has left, the rest stay.
  EXPECT_EQ(w.Sum(10)[0], 90u);
  // Long after, nothing is left, although no word was rewritten.
  s = w.Sum(100);
  EXPECT_EQ(s[0], 0u);
  EXPECT_EQ(s[1], 0u);
}

TEST(TickWindowTest, ATickComingRoundAgainStartsItsWordAfresh) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 3, 7);
  w.Add(0, 13, 2);  // the same slot, ten ticks later
  EXPECT_EQ(w.Sum(13)[0], 2u);
  // A late add for the old tick lands in the newer one, never lost.
  w.Add(0, 3);
  EXPECT_EQ(w.Sum(13)[0], 3u);
}

TEST(TickWindowTest, TicksCountFromTheOriginAndNotBeforeIt) {
  Window2 w(kWindow, kOrigin);
  EXPECT_EQ(w.TickOf(kOrigin), 0u);
  EXPECT_EQ(w.TickOf(kOrigin + absl::Milliseconds(999)), 0u);
  EXPECT_EQ(w.TickOf(kOrigin + absl::Seconds(1)), 1u);
  EXPECT_EQ(w.TickOf(kOrigin - absl::Hours(1)), 0u);  // clock stepped back
  EXPECT_EQ(w.TickOf(absl::UnixEpoch()), 0u);
  EXPECT_EQ(w.TickOf(absl::InfinitePast()), 0u);
  // The far end saturates rather than wrapping to an early tick.
  const uint64_t far = w.TickOf(absl::InfiniteFuture());
  EXPECT_GT(far, w.TickOf(kOrigin + absl::Hours(24 * 365 * 100)));
}

TEST(TickWindowTest, StampsWrapWithoutMixingTicks) {
  Window2 w(kWindow, kOrigin);
  // Ticks on both sides of 2^32: the 32-bit stamps wrap, the slots do not
  // collide (tick % 10 is taken of the 64-bit index).
  const uint64_t wrap = uint64_t{1} << 32;
  for (uint64_t t = wrap - 5; t < wrap + 5; ++t) w.Add(0, t, 1);
  EXPECT_EQ(w.Sum(wrap + 4)[0], 10u);
  EXPECT_EQ(w.Sum(wrap + 5)[0], 9u);
  int granted = 0;
  for (uint64_t t = wrap - 5; t < wrap + 5; ++t) {
    granted += w.AddIf(1, t, OnePerRequest) ? 1 : 0;
    granted += w.AddIf(1, t, OnePerRequest) ? 1 : 0;
  }
  EXPECT_EQ(granted, 10);
  EXPECT_EQ(w.Sum(wrap + 4)[1], 10u);
}

TEST(TickWindowTest, ACountSaturatesInsteadOfCarryingIntoItsTick) {
  TickWindow<1> w(kWindow, kOrigin);
  for (int i = 0; i < 4096; ++i) w.Add(0, 5, 1u << 20);
  const uint64_t full = w.Sum(5)[0];
  EXPECT_GE(full, (uint64_t{1} << 31) - (uint64_t{1} << 21));
  EXPECT_LT(full, uint64_t{1} << 31);
  w.Add(0, 5);
  EXPECT_EQ(w.Sum(5)[0], full);  // still tick 5's, still full
  EXPECT_EQ(w.Sum(15)[0], 0u);   // and it leaves the window on time
}

// A saturated count cannot record another grant, so AddIf must refuse
// rather than grant without counting (the attack review's case: every
// call granted once the count was full).
TEST(TickWindowTest, AddIfRefusesOnceItsCountIsSaturated) {
  TickWindow<1> w(kWindow, kOrigin);
  // Saturated with plain adds, which is quicker than 2^31 conditional ones.
  for (int i = 0; i < 4096; ++i) w.Add(0, 5, 1u << 20);
  int granted = 0;
  for (int i = 0; i < 100; ++i) {
    granted += w.AddIf(0, 5, [](const TickWindow<1>::Sums&) { return true; }) ? 1 : 0;
  }
  EXPECT_EQ(granted, 0);
}

// A caller that read an old tick and stalled while the clock jumped more
// than 2^20 ticks ahead (a FakeClock moved by 12 days at a 10 s window)
// must not take the newer tick's word for an old one and overwrite its
// grants (the attack review's reproducer: 20 more granted than allowed).
TEST(TickWindowTest, AStalledAddIfNeverOverwritesAFarNewerTick) {
  TickWindow<1> w(kWindow, kOrigin);
  const auto at_most_20 = [](const TickWindow<1>::Sums& s) { return s[0] < 20; };
  const uint64_t t = 100;
  const uint64_t far = t + 1048580;  // same slot, 2^20 + 4 ticks ahead
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  bool stalled_granted = false;
  std::thread stalled([&] {
    stalled_granted = w.AddIf(0, t, [&](const TickWindow<1>::Sums& s) {
      inside = true;
      while (!release) std::this_thread::yield();
      return s[0] < 20;
    });
  });
  while (!inside) std::this_thread::yield();
  int granted = 0;
  for (int i = 0; i < 30; ++i) granted += w.AddIf(0, far, at_most_20) ? 1 : 0;
  EXPECT_EQ(granted, 20);
  release = true;
  stalled.join();
  for (int i = 0; i < 30; ++i) granted += w.AddIf(0, far, at_most_20) ? 1 : 0;
  granted += stalled_granted ? 1 : 0;
  EXPECT_EQ(granted, 20);
  EXPECT_EQ(w.Sum(far)[0], 20u);
}

TEST(TickWindowTest, AddIfChecksTheWindowAsItIsBeforeTheAdd) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 0, 5);
  int granted = 0;
  for (int i = 0; i < 10; ++i) granted += w.AddIf(1, 1, OnePerRequest) ? 1 : 0;
  EXPECT_EQ(granted, 5);
  EXPECT_EQ(w.Sum(1)[1], 5u);
}

TEST(TickWindowTest, AddIfSeesCompletedTicksAndTheCurrentOneAcrossTicks) {
  Window2 w(kWindow, kOrigin);
  // Requests in every tick, the conditional add at each: its cache of the
  // completed ticks must agree with a full sum at every step.
  for (uint64_t t = 0; t < 30; ++t) {
    w.Add(0, t, 3);
    (void)w.AddIf(1, t, [&](const Window2::Sums& s) {
      const Window2::Sums full = w.Sum(t);
      EXPECT_EQ(s[0], full[0]) << "tick " << t;
      EXPECT_EQ(s[1], full[1]) << "tick " << t;
      return true;
    });
    // Requests added after the cache was made, in the current tick, count.
    w.Add(0, t, 2);
    (void)w.AddIf(1, t, [&](const Window2::Sums& s) {
      EXPECT_EQ(s[0], w.Sum(t)[0]) << "tick " << t;
      return false;
    });
  }
}

TEST(TickWindowTest, AddIfAfterAGapForgetsWhatLeftTheWindow) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 0, 2);
  EXPECT_TRUE(w.AddIf(1, 0, OnePerRequest));
  EXPECT_TRUE(w.AddIf(1, 0, OnePerRequest));
  EXPECT_FALSE(w.AddIf(1, 9, OnePerRequest));  // both still in the window
  w.Add(0, 10, 1);
  EXPECT_TRUE(w.AddIf(1, 10, OnePerRequest));  // tick 0 has left
  EXPECT_FALSE(w.AddIf(1, 10, OnePerRequest));
  w.Add(0, 1000, 1);
  EXPECT_TRUE(w.AddIf(1, 1000, OnePerRequest));  // a long gap
  EXPECT_EQ(w.Sum(1000)[1], 1u);
}

TEST(TickWindowTest, AnAddIfBehindTheNewestTickDecidesAtTheNewest) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 3, 2);
  EXPECT_TRUE(w.AddIf(1, 5, OnePerRequest));
  EXPECT_TRUE(w.AddIf(1, 5, OnePerRequest));
  // A thread that read the clock at tick 4 (or a FakeClock set back): the
  // window ending at 4 would not see tick 5's adds, and grant again.
  EXPECT_FALSE(w.AddIf(1, 4, OnePerRequest));
  w.Add(0, 5, 1);
  EXPECT_TRUE(w.AddIf(1, 0, OnePerRequest));  // counted at tick 5
  EXPECT_EQ(w.Sum(5)[1], 3u);
  EXPECT_EQ(w.Sum(4)[1], 0u);
  // Set back by more than a window: still held, nothing forgotten.
  EXPECT_FALSE(w.AddIf(1, 0, OnePerRequest));
}

TEST(TickWindowTest, AnAddIfAtAnEarlierTickAfterALaterOneLandsInTheLater) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 1, 10);
  EXPECT_TRUE(w.AddIf(1, 1, OnePerRequest));
  EXPECT_TRUE(w.AddIf(1, 2, OnePerRequest));  // seals tick 1
  EXPECT_TRUE(w.AddIf(1, 1, OnePerRequest));  // goes on to tick 2
  EXPECT_EQ(w.Sum(11)[1], 2u);  // tick 1 has left: two were counted at 2
}

TEST(TickWindowTest, TheFarFutureAndBackHoldsTheWindowAndStaysExact) {
  Window2 w(kWindow, kOrigin);
  const uint64_t far = w.TickOf(absl::InfiniteFuture());
  w.Add(0, 0, 1);
  EXPECT_TRUE(w.AddIf(1, far, [](const Window2::Sums&) { return true; }));
  // Back to the present: decided at the far tick, where counter 1 is one.
  w.Add(0, far, 1);
  EXPECT_FALSE(w.AddIf(1, 7, OnePerRequest));
  w.Add(0, far, 1);
  EXPECT_TRUE(w.AddIf(1, 7, OnePerRequest));
  EXPECT_EQ(w.Sum(far)[1], 2u);
}

TEST(TickWindowTest, ConditionalAddsRacingNeverOverdraw) {
  Window2 w(kWindow, kOrigin);
  w.Add(0, 0, 1000);
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (w.AddIf(1, 0, OnePerRequest)) {
          granted.fetch_add(1, std::memory_order_relaxed);
        }
        w.Add(0, 0, 0);  // plain adds racing the conditional ones
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(granted.load(), 1000);
  EXPECT_EQ(w.Sum(0)[1], 1000u);
}

// Threads racing across tick boundaries, each with its own idea of the
// tick (some one or two ticks behind, as after a stall): in rounds, one per
// tick, the conditional adds must never exceed the allowance of the window
// they were counted in, checked at each round's end while nobody adds.
TEST(TickWindowTest, ConditionalAddsRacingAcrossTicksNeverOverdraw) {
  Window2 w(kWindow, kOrigin);
  constexpr uint64_t kRounds = 40;
  constexpr int kThreads = 4;
  constexpr int kTries = 40;  // per thread and round: more than allowed
  std::atomic<uint64_t> round{0};
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (uint64_t r = 1; r <= kRounds; ++r) {
        while (round.load(std::memory_order_acquire) < r) {
          std::this_thread::yield();
        }
        const uint64_t lag = static_cast<uint64_t>(k % 3);
        for (int i = 0; i < kTries; ++i) {
          (void)w.AddIf(1, r > lag ? r - lag : 0, OnePerRequest);
          (void)w.Sum(r);  // a reader racing the adds
        }
        arrived.fetch_add(1, std::memory_order_acq_rel);
      }
    });
  }
  for (uint64_t r = 1; r <= kRounds; ++r) {
    w.Add(0, r, 5);  // five requests a tick: fifty a window
    round.store(r, std::memory_order_release);
    while (arrived.load(std::memory_order_acquire) < kThreads * static_cast<int>(r)) {
      std::this_thread::yield();
    }
    const Window2::Sums s = w.Sum(r);
    EXPECT_LE(s[1], s[0]) << "window ending at tick " << r;
  }
  for (std::thread& t : threads) t.join();
  // The allowance was used, not just respected.
  EXPECT_EQ(w.Sum(kRounds)[1], w.Sum(kRounds)[0]);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
