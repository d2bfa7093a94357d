// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fourth adversarial review of the local rate limits (rate_limit.hpp),
// after a lost compare-and-swap came to pause and the word to be read
// after the clock, and the warming retry-after to be an upper bound:
// several threads on a frozen clock, and a client asking for several
// permits at once from a warming limiter and waiting what it is told.
//
// Tests whose comment says "What happened (fixed since)" failed on the
// code they were written against and pass since the fixes. A test named
// DISABLED_ shows a defect that is still open: its comment
// states the condition, what should happen, what happens, and the line at
// fault. The others are characterisations of a bound that holds and could
// break.

#include <atomic>
#include <cstdint>
#include <memory>
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

// A warming limiter (100/s, burst 10, warm_up 1 s, cold factor 3) whose
// cold-start burst has been taken 4 permits at a time.
std::unique_ptr<RateLimiter> DrainedWarmingLimiter(FakeClock& clock) {
  RateLimitSettings s = Fourth(clock, 100, 10);
  s.warm_up = absl::Seconds(1);
  s.cold_factor = 3;
  auto limiter = RateLimiter::Create(s).value();
  while (limiter->TryAcquire(4)) {
  }
  return limiter;
}

// Condition: a warming limiter (100/s, burst 10, warm_up 1 s, cold factor
// 3) drained at a cold start; a client asks for 4 permits at a time and,
// when refused, waits exactly the retry-after it was given, as the header
// invites ("while warming up an upper bound").
// Expected: after waiting the retry-after, the 4 permits are admitted.
// What happened (fixed since): in round 7 the retry-after is 59.29 ms and the
// request is refused again at that time: for n > 1 WarmingWait's moved-on time
// (include/degrade/rate_limit.hpp:415-419) can return a wait that is not
// yet enough (the loop's fit test uses the interval at the moved time but
// not the ramp's progress the same way Decide does; :464 hands it out).
// Severity: low-medium (a client that trusts the hint is refused again
// and, with a retry budget, may give up).
TEST(AttackRateLimit4Test, WarmingRetryAfterForFourIsEnough) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto limiter = DrainedWarmingLimiter(clock);
  for (int round = 0; round < 40; ++round) {
    absl::Duration retry;
    if (limiter->TryAcquire(4, &retry)) continue;
    ASSERT_GT(retry, absl::ZeroDuration()) << "round " << round;
    clock.Advance(retry);
    EXPECT_TRUE(limiter->TryAcquire(4))
        << "round " << round << " after " << retry;
  }
}

// Condition: as above, but the client finds the true wait 1 ms at a time
// (a refusal writes nothing) and compares it with the retry-after.
// Expected: the retry-after is an upper bound and a close one: within one
// cold interval (30 ms) of the true wait.
// What happened (fixed since): the hint is 2-3 x the true wait at the start of
// the ramp: told 260 ms, admitted after 87 ms (round 0); 257 ms vs 130 ms; 193
// ms vs 99 ms. The fall-back bound (rate_limit.hpp:420-426, the stable
// tolerance with today's cost) is taken when the 8 rounds (:415) do not
// settle, and it is far above the true wait. Severity: low (clients that
// honour the hint wait up to 3 x longer than needed while warming, so the
// warm-up runs below its own curve).
TEST(AttackRateLimit4Test, WarmingRetryAfterIsCloseToTheTrueWait) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto limiter = DrainedWarmingLimiter(clock);
  for (int round = 0; round < 40; ++round) {
    absl::Duration retry;
    if (limiter->TryAcquire(4, &retry)) continue;
    ASSERT_GT(retry, absl::ZeroDuration()) << "round " << round;
    // The true wait, found 1 ms at a time (a refusal writes nothing).
    absl::Duration waited;
    while (!limiter->TryAcquire(4) && waited < absl::Seconds(5)) {
      clock.Advance(absl::Milliseconds(1));
      waited += absl::Milliseconds(1);
    }
    EXPECT_GE(retry + absl::Milliseconds(1), waited) << "round " << round;
    EXPECT_LE(retry, waited + absl::Milliseconds(30))
        << "round " << round << ": told " << retry << ", admitted after "
        << waited;
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
