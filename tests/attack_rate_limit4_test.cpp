// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fourth adversarial review of the local rate limits (rate_limit.hpp),
// after a lost compare-and-swap came to pause and the word to be read
// after the clock, and the warming retry-after to be an upper bound:
// several threads on a frozen clock, and a client asking for several
// permits at once from a warming limiter and waiting what it is told.
//
// A test named DISABLED_ shows a defect that is still open: its comment
// states the condition, what should happen, what happens, and the line at
// fault. The others are characterisations of a bound that holds and could
// break.

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

RateLimitSettings Fourth(const Clock& clock, double rate, int64_t burst) {
  RateLimitSettings s;
  s.name = "attack4";
  s.rate = rate;
  s.burst = burst;
  s.precise_clock = true;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

// Condition: four threads take one permit at a time, far more than the
// burst, on a clock that does not move (burst 500, 1/s). The tat is now
// read after the clock and a lost compare-and-swap pauses.
// Holds: exactly the burst is admitted, however the threads interleave.
TEST(AttackRateLimit4ConcurrencyTest, FrozenClockAdmitsExactlyTheBurst) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto limiter = RateLimiter::Create(Fourth(clock, 1, 500)).value();
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      int64_t mine = 0;
      for (int i = 0; i < 2000; ++i) mine += limiter->TryAcquire() ? 1 : 0;
      admitted.fetch_add(mine);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 500);
}

// Condition: a warming limiter (100/s, burst 10, warm_up 1 s, cold factor
// 3) drained at a cold start; a client asks for 4 permits at a time and,
// when refused, waits exactly the retry-after it was given.
// Holds: that wait is enough (an upper bound: the request is then
// admitted), and not absurd: at most what 4 permits cost at the cold rate
// plus one more interval (4 x 30 ms + 30 ms).
TEST(AttackRateLimit4Test, WarmingRetryAfterForSeveralIsEnoughAndNotAbsurd) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  RateLimitSettings s = Fourth(clock, 100, 10);
  s.warm_up = absl::Seconds(1);
  s.cold_factor = 3;
  auto limiter = RateLimiter::Create(s).value();
  while (limiter->TryAcquire(4)) {
  }
  for (int round = 0; round < 40; ++round) {
    absl::Duration retry;
    if (limiter->TryAcquire(4, &retry)) continue;
    ASSERT_GT(retry, absl::ZeroDuration()) << "round " << round;
    EXPECT_LE(retry, absl::Milliseconds(150)) << "round " << round;
    clock.Advance(retry);
    EXPECT_TRUE(limiter->TryAcquire(4))
        << "round " << round << " after " << retry;
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
