// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A third adversarial review of the local rate limits (rate_limit.hpp,
// keyed_rate_limit.hpp), under what real deployments do to them: a
// warming limiter whose clients honour the retry-after, a coarse clock a
// tick behind the precise one when a limiter is made, a custom clock
// corrected back by less than a second or reset to the Unix epoch, a
// reservation raced by plain acquires and by per-thread credit, requests
// for INT64_MAX permits, a scan racing a hot key, overrides with long
// keys.
//
// Tests whose comment says "What happened (fixed since)" failed on the
// code they were written against and pass since the fixes. A test named
// DISABLED_ shows a defect that is still open: its comment
// states the condition, what should happen, what happens, and the line at
// fault. The others are characterisations of a bound that holds and could
// break.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

RateLimitSettings Third(const Clock& clock, double rate, int64_t burst) {
  RateLimitSettings s;
  s.name = "attack3";
  s.rate = rate;
  s.burst = burst;
  s.precise_clock = true;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

int64_t TakeAll(RateLimiter& l, int64_t tries) {
  int64_t n = 0;
  for (int64_t i = 0; i < tries; ++i) n += l.TryAcquire() ? 1 : 0;
  return n;
}

// A clock whose coarse reading is a tick (4 ms) behind its precise one, as
// CLOCK_MONOTONIC_COARSE is behind CLOCK_MONOTONIC: the Clock interface
// allows it ("a few milliseconds at most ... never runs ahead of Now()").
class LaggingCoarseClock final : public Clock {
 public:
  absl::Time Now() const override { return base_.Now(); }
  absl::Time CoarseNow() const override {
    return base_.Now() - absl::Milliseconds(4);
  }
  FakeClock& base() { return base_; }

 private:
  FakeClock base_;
};

// ---- Warm-up ----

// Condition: a warming limiter (100/s, burst 10, warm_up 1 s, cold factor
// 3) right after a cold start, and a client that waits exactly the
// retry-after a refusal gave it, as the header invites ("exact ...; while
// warming up an upper bound").
// Expected: the same request is admitted after waiting the retry-after.
// What happened (fixed since): it is refused again (after 30 ms it is still 15
// ms short). The retry-after is computed with the tolerance at the time of the
// refusal (burst x the cold interval), but the tolerance shrinks as the
// ramp warms, so the request needs *more* time than was said: for
// n < burst the wait tat - now - (burst - n) x interval grows as the
// interval falls. include/degrade/rate_limit.hpp:414-416 (tolerance from
// the interval now) and :422 (the refusal's wait returned as the
// retry-after). Severity: low-medium (a client that honours the hint is
// refused again during every warm-up; the header's bound is false).
TEST(AttackRateLimit3Test, WarmingUpTheRetryAfterIsAnUpperBound) {
  FakeClock clock;
  RateLimitSettings s = Third(clock, 100, 10);
  s.warm_up = absl::Seconds(1);
  auto l = RateLimiter::Create(s).value();
  ASSERT_EQ(TakeAll(*l, 10), 10);
  absl::Duration retry;
  ASSERT_FALSE(l->TryAcquire(1, &retry));
  ASSERT_GT(retry, absl::ZeroDuration());
  clock.Advance(retry);
  absl::Duration again;
  EXPECT_TRUE(l->TryAcquire(1, &again))
      << "refused after the retry-after " << retry << "; now told " << again;
}

// Condition: a warming limiter made on a clock whose coarse reading is a
// tick behind the precise one (the real clock's CLOCK_MONOTONIC_COARSE is
// almost always up to a tick behind CLOCK_MONOTONIC), with burst / rate >=
// 20 ms so that the limiter reads the coarse clock (the default).
// Expected: "A new limiter starts cold": after its first admission the
// rate is rate / cold_factor (about 3.3 of 10 per second here, with an
// hour's warm-up).
// What happened (fixed since): it starts hot, at the full rate. The epoch is
// taken from the precise Now() (detail/rate_limit/gcra.hpp:166-170, GcraLine's
// EpochOf) but decisions read CoarseNow() (:188, :190), so the first reading is
// a few ms *before* the epoch; the initial TAT is -warm_up
// (include/degrade/rate_limit.hpp:371), so the quiet spell measured is
// warm_up - 4 ms < warm_up and no ramp starts
// (include/degrade/rate_limit.hpp:412); ramp_start_ is INT64_MIN, so
// Interval() returns the stable interval. The warm-up meant to protect a
// cold cache after a deploy never happens for a new limiter on the
// default clock. Severity: medium.
TEST(AttackRateLimit3Test, ANewLimiterOnALaggingCoarseClockStartsCold) {
  LaggingCoarseClock clock;
  RateLimitSettings s = Third(clock, 10, 10);
  s.precise_clock = false;  // burst / rate = 1 s: the coarse clock
  s.warm_up = absl::Hours(1);
  auto l = RateLimiter::Create(s).value();
  ASSERT_TRUE(l->TryAcquire());
  EXPECT_LT(l->current_rate(), 5.0) << "started at the full rate";
  // What a cold start admits in the next 10 s: about 33 at 3.3/s, 100 hot.
  int64_t admitted = 0;
  for (int i = 0; i < 100; ++i) {
    clock.base().Advance(absl::Milliseconds(100));
    admitted += TakeAll(*l, 10);
  }
  EXPECT_LT(admitted, 60) << "a new limiter admitted at the full rate";
}

// The same on the real clock, as a service would make it. Probabilistic
// only in the direction of passing: it fails unless the coarse clock
// ticked between the limiter's creation and its first call.
TEST(AttackRateLimit3Test, ANewLimiterOnTheRealClockStartsCold) {
  RateLimitSettings s;
  s.name = "attack3-real";
  s.rate = 10;
  s.burst = 10;  // burst / rate = 1 s: the coarse clock
  s.warm_up = absl::Hours(1);
  s.metrics = NoTelemetry();
  auto l = RateLimiter::Create(s).value();
  ASSERT_TRUE(l->TryAcquire());
  EXPECT_LT(l->current_rate(), 5.0) << "started at the full rate";
}

// Condition: the same lagging coarse clock and a limiter without warm-up
// (1000/s, burst 20: burst / rate = 20 ms, so the coarse clock is read).
// Expected: Create() returns "a limiter with its full burst": 20 at once.
// What happened (fixed since): 16. The same mix of readings (the epoch from
// Now(), decisions from CoarseNow(), detail/rate_limit/gcra.hpp:166-170 and
// :188-190) puts the first decision 4 ms before the epoch, where the TAT
// of 0 (include/degrade/rate_limit.hpp:371) leaves 4 ms' worth of the
// burst unavailable. On the real clock a new limiter is short of up to a
// coarse tick's worth of permits (rate x tick) until the tick passes, and
// refuses them with a retry-after. Severity: low.
TEST(AttackRateLimit3Test, ANewLimiterOnALaggingCoarseClockHasItsBurst) {
  LaggingCoarseClock clock;
  RateLimitSettings s = Third(clock, 1000, 20);
  s.precise_clock = false;
  auto l = RateLimiter::Create(s).value();
  EXPECT_EQ(TakeAll(*l, 100), 20);
}

// ---- A clock corrected back by less than a second ----

// Condition: a custom clock (a FakeClock, a wall-clock wrapper) corrected
// back by 400 ms while a limiter (10/s, burst 5) holds 3 of its 5 permits.
// Expected, as rate-limits.md's failure table says: "A smaller step back
// reads as the time it left, until the clock returns": the 3 permits held
// at that time can be spent.
// What happens: none can. A step under kGcraStepBackTicks (1 s) is not
// detected as a step and reads as the *floor* (TAT - tolerance - max_wait,
// detail/rate_limit/gcra.hpp:143 and :154 `return t < floor ? floor : t`),
// where the bucket is empty, not as the time it left; the credit held is
// lost and the limiter refuses everything until the clock has caught up.
// Severity: low (custom clocks only; RealClock is monotonic), but the
// documented behaviour is not what happens.
// Left as a known limitation (rate-limits.md's failure table says so):
// a step this small cannot be told from a thread preempted between its
// clock read and its decision, and treating it as a step would push the
// line ahead of the clock for good; a reset beyond 18 years is a limiter
// to make anew.
TEST(AttackRateLimit3Test, DISABLED_ASmallStepBackReadsAsTheTimeItLeft) {
  FakeClock clock;
  auto l = RateLimiter::Create(Third(clock, 10, 5)).value();
  ASSERT_EQ(TakeAll(*l, 2), 2);
  clock.Set(clock.Now() - absl::Milliseconds(400));
  EXPECT_EQ(TakeAll(*l, 100), 3) << "the credit held when the clock left";
}

// Condition: the same kind of correction (900 ms back) on a limiter of
// 100/s, burst 1, and a client that waits the refusal's retry-after.
// Expected: "A refusal says exactly when the same request would be
// admitted" (rate_limit.hpp's file comment): after waiting it, admitted.
// What happens: refused for 900 ms (the length of the step) while every
// refusal says 10 ms: the line reads as the floor until the clock
// catches up (detail/rate_limit/gcra.hpp:143-154). Severity: low.
// Left as a known limitation (rate-limits.md's failure table says so):
// a step this small cannot be told from a thread preempted between its
// clock read and its decision, and treating it as a step would push the
// line ahead of the clock for good; a reset beyond 18 years is a limiter
// to make anew.
TEST(AttackRateLimit3Test,
     DISABLED_AfterASmallStepBackTheRetryAfterIsStillExact) {
  FakeClock clock;
  auto l = RateLimiter::Create(Third(clock, 100, 1)).value();
  ASSERT_TRUE(l->TryAcquire());
  clock.Set(clock.Now() - absl::Milliseconds(900));
  int refusals = 0;
  for (int i = 0; i < 10; ++i) {
    absl::Duration retry;
    if (l->TryAcquire(1, &retry)) break;
    ++refusals;
    ASSERT_GE(retry, absl::ZeroDuration());
    clock.Advance(retry);
  }
  EXPECT_LE(refusals, 1) << "refused again and again after waiting the "
                            "retry-after it gave";
}

// Condition: a custom clock reset to the Unix epoch (a wall-clock wrapper
// on a host whose RTC failed, a VM restored without its time) 56 years
// behind where the limiter was made, then moving on from there.
// Expected: as for any step back of a second or more ("time stands still
// at the lowest time the limiter's state allows and moves on with the
// clock from there", rate-limits.md): one interval after the step, a
// permit again.
// What happens: a reading more than 2^59 ns (18 years) from the epoch is
// "no reading" (detail/rate_limit/gcra.hpp:194-198), so every reading
// after the reset is no time passing: the limiter refuses for good, each
// refusal with a retry-after of one interval that never comes true. A
// step back of 17 years recovers at once; one of 19 never does. Severity:
// low (custom clocks only).
// Left as a known limitation (rate-limits.md's failure table says so):
// a step this small cannot be told from a thread preempted between its
// clock read and its decision, and treating it as a step would push the
// line ahead of the clock for good; a reset beyond 18 years is a limiter
// to make anew.
TEST(AttackRateLimit3Test, DISABLED_AClockResetToTheEpochMovesOnFromThere) {
  FakeClock clock(absl::FromUnixSeconds(1'780'000'000));  // 2026
  auto l = RateLimiter::Create(Third(clock, 10, 5)).value();
  ASSERT_EQ(TakeAll(*l, 100), 5);
  clock.Set(absl::UnixEpoch());
  EXPECT_EQ(TakeAll(*l, 100), 0) << "no debt forgiven (this holds)";
  clock.Advance(absl::Seconds(1));
  EXPECT_GE(TakeAll(*l, 100), 1) << "refused for good after the reset";
}

// ---- Pacing, GiveBack and the extremes of n ----

// Reserve() racing TryAcquire() on a frozen clock: whatever the
// interleaving, the permits handed out (admitted now or with a wait) are
// at most the burst plus max_wait's worth, and every wait handed out is
// within max_wait.
TEST(AttackRateLimit3ConcurrencyTest, ReserveRacingTryAcquireKeepsTheBound) {
  FakeClock clock;
  RateLimitSettings s = Third(clock, 1000, 10);
  s.max_wait = absl::Milliseconds(50);  // 50 permits' worth
  auto l = RateLimiter::Create(s).value();
  std::atomic<int64_t> permits{0};
  std::atomic<bool> long_wait{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        if (t % 2 == 0) {
          absl::StatusOr<absl::Duration> w = l->Reserve(1 + i % 3);
          if (w.ok()) {
            permits += 1 + i % 3;
            if (*w > absl::Milliseconds(50)) long_wait = true;
          }
        } else if (l->TryAcquire()) {
          ++permits;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_LE(permits.load(), 10 + 50);
  EXPECT_GE(permits.load(), 10 + 50 - 2);  // a 3 may not fit the last room
  EXPECT_FALSE(long_wait.load());
}

// Reserve then abandon, at the extremes: INT64_MAX permits are never
// admitted by any call and change nothing; GiveBack(INT64_MAX) fills the
// bucket and no more; a reservation given back restores exactly the
// permits it took.
TEST(AttackRateLimit3Test, Int64MaxPermitsChangeNothingAndGiveBackCaps) {
  FakeClock clock;
  RateLimitSettings s = Third(clock, 100, 5);
  s.max_wait = absl::Hours(1);
  auto l = RateLimiter::Create(s).value();
  const int64_t huge = std::numeric_limits<int64_t>::max();
  absl::Duration retry;
  EXPECT_FALSE(l->TryAcquire(huge, &retry));
  EXPECT_LT(retry, absl::ZeroDuration());
  EXPECT_FALSE(l->Reserve(huge).ok());
  EXPECT_TRUE(IsShed(l->Admit(huge)));
  absl::StatusOr<absl::Duration> w = l->Reserve(8);  // 3 beyond the burst
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(*w, absl::Milliseconds(30));
  l->GiveBack(8);
  EXPECT_EQ(TakeAll(*l, 100), 5);
  l->GiveBack(huge);
  EXPECT_EQ(TakeAll(*l, 100), 5) << "a full bucket, never more";
}

// Per-thread credit racing Reserve() on a frozen clock: credit is only
// ever taken from the shared word, so whatever the threads hold, the
// permits handed out (spent from credit, admitted, reserved with a wait)
// never exceed the burst plus max_wait's worth.
TEST(AttackRateLimit3ConcurrencyTest, CreditRacingReserveKeepsTheBound) {
  FakeClock clock;
  RateLimitSettings s = Third(clock, 1000, 40);
  s.credit_per_thread = 8;
  s.max_wait = absl::Milliseconds(20);  // 20 permits' worth
  auto l = RateLimiter::Create(s).value();
  std::atomic<int64_t> permits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        if (t == 0) {
          if (l->Reserve(2).ok()) permits += 2;
        } else if (l->TryAcquire()) {
          ++permits;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_LE(permits.load(), 40 + 20);
}

// A hot key in debt while other threads scan unique keys through a small
// table (a client rotating ids) on a frozen clock: whatever the
// interleaving, the hot key, its burst spent, gets nothing more.
TEST(AttackKeyedRateLimit3ConcurrencyTest, AScanNeverResetsAHotKeyInDebt) {
  FakeClock clock;
  KeyedRateLimitSettings s;
  s.name = "attack3-scan";
  s.rate = 1;
  s.burst = 5;
  s.max_keys = 64;
  s.seed = 99;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto l = KeyedRateLimiter<std::string>::Create(s).value();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(l->TryAcquire("hot"));
  std::atomic<int64_t> hot{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        if (t == 0) {
          if (l->TryAcquire("hot")) ++hot;
        } else {
          (void)l->TryAcquire(absl::StrCat("scan", t, "-", i), 1 + i % 5);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(hot.load(), 0) << "the hot key's debt was forgiven";
}

// ---- Keyed: the memory bound ----

// Condition: 4096 overrides (the most allowed) keyed by 2 KiB strings (a
// caller id that is a certificate subject, a URL), on a table of 64 slots.
// Expected: memory_bytes() is "the bytes the limiter holds (table,
// stripes, overrides, itself)": at least the 8 MiB of keys it copied.
// What happened (fixed since): it counts sizeof(OverrideEntry) per override and
// none of the keys' heap, so it reports a few hundred KiB for a limiter that
// holds over 8 MiB; a capacity plan read from it is wrong by the keys' size.
// include/degrade/keyed_rate_limit.hpp:223-226. Severity: low.
TEST(AttackKeyedRateLimit3Test, MemoryBytesCountsTheOverrideKeys) {
  FakeClock clock;
  KeyedRateLimitSettings s;
  s.name = "attack3-keyed";
  s.rate = 1;
  s.burst = 1;
  s.max_keys = 64;
  s.seed = 7;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  KeyedRateLimiter<std::string>::Overrides overrides;
  std::size_t key_bytes = 0;
  for (int i = 0; i < 4096; ++i) {
    std::string key = absl::StrCat(i, std::string(2048, 'k'));
    key_bytes += key.size();
    overrides.push_back({std::move(key), {2, 2}});
  }
  auto l =
      KeyedRateLimiter<std::string>::Create(s, std::move(overrides)).value();
  EXPECT_GE(l->memory_bytes(), key_bytes);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
