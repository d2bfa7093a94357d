// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An adversarial review of the local rate limits (rate_limit.hpp,
// keyed_rate_limit.hpp): what real deployments do to them. Clocks that
// stand still, step back or sit at an infinity; settings at their bounds;
// per-thread credit held by threads that exit; GiveBack abuse; many
// threads on one key; a scan of unique keys against a hot key. Each test
// states the condition and the bound it checks.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

RateLimitSettings AttackSettings(const FakeClock& clock, double rate,
                                 int64_t burst) {
  RateLimitSettings s;
  s.name = "attack";
  s.rate = rate;
  s.burst = burst;
  s.precise_clock = true;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

int64_t Drain(RateLimiter& l, int64_t tries) {
  int64_t n = 0;
  for (int64_t i = 0; i < tries; ++i) n += l.TryAcquire() ? 1 : 0;
  return n;
}

// A clock that never moves: whatever the threads do, the limiter admits
// exactly its burst, never one more (one atomic word, no lost update).
TEST(AttackRateLimitConcurrencyTest, AFrozenClockAdmitsExactlyTheBurst) {
  FakeClock clock;
  auto l = RateLimiter::Create(AttackSettings(clock, 10, 1000)).value();
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      int64_t mine = 0;
      for (int i = 0; i < 2000; ++i) mine += l->TryAcquire() ? 1 : 0;
      admitted.fetch_add(mine);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 1000);
  EXPECT_EQ(l->stats().admitted, 1000u);
  EXPECT_EQ(l->stats().refused, 16000u - 1000u);
}

// Per-thread credit held by threads that exit: no time passes, so the
// fleet of short-lived threads can never take more than the burst; what
// dead threads hold is at most ShardArraySize() x credit, and whoever
// reuses their slots spends it (nothing is lost for good).
TEST(AttackRateLimitConcurrencyTest,
     CreditOfExitedThreadsNeitherLeaksNorDoubles) {
  FakeClock clock;
  RateLimitSettings s = AttackSettings(clock, 10, 400);
  s.credit_per_thread = 10;
  auto l = RateLimiter::Create(s).value();
  std::atomic<int64_t> admitted{0};
  for (int round = 0; round < 4; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&] { admitted += l->TryAcquire() ? 1 : 0; });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_LE(admitted.load(), 400);
  // Sequential threads now drain what is left, the dead threads' credit
  // included (their slots are reused).
  for (int t = 0; t < 64; ++t) {
    std::thread th([&] { admitted += Drain(*l, 1000); });
    th.join();
  }
  admitted += Drain(*l, 1000);
  const int64_t stranded = static_cast<int64_t>(detail::ShardArraySize()) * 10;
  EXPECT_LE(admitted.load(), 400);
  EXPECT_GE(admitted.load(), 400 - stranded);
}

// The documented excess of credit: taken at one time, spent an hour later
// on top of a refilled bucket. Over a window of zero length the limiter
// admits at most burst + (shards x credit), never more.
TEST(AttackRateLimitConcurrencyTest,
     CreditSpentLateExceedsBurstByAtMostTheCredit) {
  FakeClock clock;
  RateLimitSettings s = AttackSettings(clock, 10, 100);
  s.credit_per_thread = 20;
  auto l = RateLimiter::Create(s).value();
  std::vector<std::thread> takers;
  for (int t = 0; t < 4; ++t) {
    takers.emplace_back([&] { EXPECT_TRUE(l->TryAcquire()); });
  }
  for (std::thread& t : takers) t.join();
  clock.Advance(absl::Hours(1));
  int64_t burst_window = 0;
  for (int t = 0; t < 8; ++t) {
    std::thread th([&] { burst_window += Drain(*l, 500); });
    th.join();
  }
  burst_window += Drain(*l, 500);
  EXPECT_GE(burst_window, 100);
  EXPECT_LE(burst_window,
            100 + static_cast<int64_t>(detail::ShardArraySize()) * 20);
}

// GiveBack of far more than was taken: the bucket fills, no more.
TEST(AttackRateLimitTest, GivingBackMoreThanTakenFillsTheBucketAndNoMore) {
  FakeClock clock;
  auto l = RateLimiter::Create(AttackSettings(clock, 10, 5)).value();
  EXPECT_EQ(Drain(*l, 100), 5);
  l->GiveBack(int64_t{1} << 62);
  l->GiveBack(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Drain(*l, 100), 5);
  l->GiveBack(0);
  l->GiveBack(-7);
  EXPECT_EQ(Drain(*l, 100), 0);
}

// The clock steps back by 1 ms, 1 s and 1 h after the bucket is spent: no
// debt is forgiven (nothing admitted at once) and the limiter does not
// refuse for the length of the step (after one interval it admits again).
TEST(AttackRateLimitTest, ClockSteppingBackNeitherForgivesNorFreezes) {
  for (absl::Duration step :
       {absl::Milliseconds(1), absl::Seconds(1), absl::Hours(1)}) {
    FakeClock clock;
    auto l = RateLimiter::Create(AttackSettings(clock, 10, 5)).value();
    EXPECT_EQ(Drain(*l, 100), 5);
    clock.Set(clock.Now() - step);
    EXPECT_EQ(Drain(*l, 100), 0) << step;
    // One interval plus the step's own dip (a small step is not detected
    // as one: it reads as the floor until the clock has caught up).
    clock.Advance(absl::Milliseconds(100) +
                  std::min(step, absl::Milliseconds(1)));
    const int64_t after = Drain(*l, 100);
    if (step >= absl::Seconds(1)) {
      EXPECT_EQ(after, 1) << step;
    } else {
      EXPECT_LE(after, 1) << step;
    }
    clock.Advance(absl::Seconds(10));
    EXPECT_EQ(Drain(*l, 100), 5) << step;
  }
}

// A clock that reads InfiniteFuture or InfinitePast is no time passing:
// the limiter decides at its latest good reading (detail/rate_limit/
// gcra.hpp GcraLine::Now), so the burst still held then (here 3 of 5) is
// spent, and nothing more, until the clock is back.
TEST(AttackRateLimitTest, AClockAtAnInfinitySpendsWhatIsHeldAndNoMore) {
  for (absl::Time broken : {absl::InfiniteFuture(), absl::InfinitePast()}) {
    FakeClock clock;
    auto l = RateLimiter::Create(AttackSettings(clock, 10, 5)).value();
    EXPECT_EQ(Drain(*l, 2), 2);
    const absl::Time good = clock.Now();
    clock.Set(broken);
    EXPECT_EQ(Drain(*l, 100), 3);
    clock.Set(good + absl::Seconds(10));
    EXPECT_EQ(Drain(*l, 100), 5);
  }
}

// A custom clock stepped back an hour and then corrected reads as the
// hour passing (no limiter can tell that from a real hour): a limiter in
// debt finds its bucket full again. What that forgives is bounded by one
// burst, never the hour's worth, and the rate holds from there.
TEST(AttackRateLimitTest, AClockSteppedBackThenForwardForgivesAtMostTheBurst) {
  FakeClock clock;
  auto l = RateLimiter::Create(AttackSettings(clock, 10, 5)).value();
  ASSERT_EQ(Drain(*l, 100), 5);
  const absl::Time good = clock.Now();
  clock.Set(good - absl::Hours(1));
  EXPECT_EQ(Drain(*l, 100), 0);
  clock.Set(good);
  EXPECT_EQ(Drain(*l, 100), 5) << "one burst, not 36,000 permits";
  EXPECT_EQ(Drain(*l, 100), 0);
  clock.Advance(absl::Milliseconds(100));
  EXPECT_EQ(Drain(*l, 100), 1);
}

// What does hold at an infinity: nothing beyond the burst is admitted, and
// the limiter serves normally once the clock is back.
TEST(AttackRateLimitTest, AClockAtAnInfinityNeverOpensTheLimiter) {
  for (absl::Time broken : {absl::InfiniteFuture(), absl::InfinitePast()}) {
    FakeClock clock;
    auto l = RateLimiter::Create(AttackSettings(clock, 10, 5)).value();
    const absl::Time good = clock.Now();
    clock.Set(broken);
    EXPECT_LE(Drain(*l, 1000), 5);
    absl::Duration retry;
    EXPECT_FALSE(l->TryAcquire(1, &retry));
    EXPECT_GE(retry, absl::ZeroDuration());
    clock.Set(good + absl::Seconds(10));
    EXPECT_EQ(Drain(*l, 100), 5);
    clock.Advance(absl::Milliseconds(100));
    EXPECT_EQ(Drain(*l, 100), 1);
  }
}

// The bounds of the settings: the slowest (1 an hour) and the fastest
// (1e9/s with a burst of 1e9) rates, n = burst, n > burst, n <= 0, and
// waits of 0, 1 ns and an hour.
TEST(AttackRateLimitTest, ExtremeSettingsKeepExactAnswers) {
  FakeClock clock;
  {
    auto l = RateLimiter::Create(AttackSettings(clock, 1.0 / 3600, 1)).value();
    EXPECT_TRUE(l->TryAcquire());
    absl::Duration retry;
    EXPECT_FALSE(l->TryAcquire(1, &retry));
    EXPECT_EQ(retry, absl::Hours(1));
    EXPECT_FALSE(l->TryAcquire(2, &retry));
    EXPECT_LT(retry, absl::ZeroDuration()) << "2 > burst: never";
  }
  {
    auto l = RateLimiter::Create(AttackSettings(clock, 1e9, kMaxRateLimitBurst))
                 .value();
    EXPECT_TRUE(l->TryAcquire(kMaxRateLimitBurst));
    EXPECT_FALSE(l->TryAcquire(1));
    clock.Advance(absl::Nanoseconds(1));
    EXPECT_TRUE(l->TryAcquire(1));
    EXPECT_FALSE(l->TryAcquire(1));
    absl::Status never = l->Admit(std::numeric_limits<int64_t>::max());
    EXPECT_TRUE(IsShed(never)) << never;
    EXPECT_EQ(ShedRetryAfter(never), absl::Milliseconds(-1));
  }
  {
    auto l = RateLimiter::Create(AttackSettings(clock, 10, 3)).value();
    EXPECT_FALSE(l->TryAcquire(0));
    EXPECT_FALSE(l->TryAcquire(-1));
    EXPECT_FALSE(l->TryAcquire(std::numeric_limits<int64_t>::min()));
    EXPECT_TRUE(absl::IsInvalidArgument(l->Admit(0)));
    EXPECT_TRUE(absl::IsInvalidArgument(l->Reserve(-3).status()));
    EXPECT_EQ(Drain(*l, 100), 3) << "bad requests took nothing";
  }
  for (absl::Duration max_wait :
       {absl::ZeroDuration(), absl::Nanoseconds(1), absl::Hours(1)}) {
    RateLimitSettings s = AttackSettings(clock, 10, 1);
    s.max_wait = max_wait;
    auto l = RateLimiter::Create(s).value();
    ASSERT_TRUE(l->Reserve().ok());
    absl::StatusOr<absl::Duration> w = l->Reserve();
    if (max_wait < absl::Milliseconds(100)) {
      EXPECT_TRUE(IsShed(w.status())) << max_wait;
      // ShedError rounds the hint up to the millisecond.
      EXPECT_EQ(ShedRetryAfter(w.status()), absl::Milliseconds(100));
    } else {
      ASSERT_TRUE(w.ok()) << max_wait;
      EXPECT_EQ(*w, absl::Milliseconds(100));
      // An hour of queue: 36,000 reservations, then refused.
      int64_t more = 0;
      while (l->Reserve().ok()) ++more;
      EXPECT_EQ(more, 35999);
    }
  }
  for (absl::Duration bad :
       {-absl::Nanoseconds(1), absl::Hours(1) + absl::Nanoseconds(1),
        absl::InfiniteDuration()}) {
    RateLimitSettings s = AttackSettings(clock, 10, 1);
    s.max_wait = bad;
    EXPECT_TRUE(absl::IsInvalidArgument(RateLimiter::Create(s).status()));
  }
}

// Warm-up at the cold factor's bounds: (1, 100]. At 100 a cold limiter of
// 100/s admits one a second; 1 and NaN are refused.
TEST(AttackRateLimitTest, WarmUpAtTheColdFactorBounds) {
  FakeClock clock;
  for (double bad : {1.0, 100.0001, std::nan(""), -3.0,
                     std::numeric_limits<double>::infinity()}) {
    RateLimitSettings s = AttackSettings(clock, 100, 1);
    s.warm_up = absl::Seconds(10);
    s.cold_factor = bad;
    EXPECT_TRUE(absl::IsInvalidArgument(RateLimiter::Create(s).status()))
        << bad;
  }
  RateLimitSettings s = AttackSettings(clock, 100, 1);
  s.warm_up = absl::Seconds(10);
  s.cold_factor = 100;
  auto l = RateLimiter::Create(s).value();
  EXPECT_TRUE(l->TryAcquire());
  absl::Duration retry;
  EXPECT_FALSE(l->TryAcquire(1, &retry));
  EXPECT_GT(retry, absl::Milliseconds(900));
  EXPECT_LE(retry, absl::Seconds(1));
  // Warm: after the warm-up, the stable 10 ms interval.
  clock.Advance(absl::Seconds(10));
  for (int i = 0; i < 2000; ++i) {
    l->TryAcquire();
    clock.Advance(absl::Milliseconds(10));
  }
  EXPECT_TRUE(l->TryAcquire());
  EXPECT_FALSE(l->TryAcquire());
  clock.Advance(absl::Milliseconds(10));
  EXPECT_TRUE(l->TryAcquire());
}

KeyedRateLimitSettings KeyedSettings(const FakeClock& clock, double rate,
                                     int64_t burst, std::size_t keys) {
  KeyedRateLimitSettings s;
  s.name = "attack_keyed";
  s.rate = rate;
  s.burst = burst;
  s.max_keys = keys;
  s.precise_clock = true;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

// A scan of unique one-shot keys through a tiny table (every bucket full)
// never evicts a hot key that has spent its burst: it stays refused. The
// clock is frozen, so the scan gets the 63 free slots and then the one
// overflow cell's burst (10), and no more: a newcomer the table cannot
// hold is indistinguishable from one asking again.
TEST(AttackKeyedRateLimitTest, AScanOfUniqueKeysNeverResetsASpentHotKey) {
  FakeClock clock;
  auto l = KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 10, 64))
               .value();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(l->TryAcquire(7));
  ASSERT_FALSE(l->TryAcquire(7));
  int64_t scan_admitted = 0;
  for (uint64_t k = 1000; k < 200000; ++k) {
    scan_admitted += l->TryAcquire(k) ? 1 : 0;
    if (k % 997 == 0) {
      EXPECT_FALSE(l->TryAcquire(7)) << "hot key reset after scan key " << k;
    }
  }
  EXPECT_FALSE(l->TryAcquire(7));
  EXPECT_EQ(l->capacity(), 64u);
  EXPECT_EQ(scan_admitted, 63 + 10);
  EXPECT_EQ(l->stats().evictions_in_debt, 0u);
}

// A newcomer asking for many permits never evicts a hot key in debt. (It
// did: Take() compared the resident's remaining debt with the newcomer's
// cost, so one-shot keys with n = burst forgave every resident's debt, a
// per-item cap reset at will by whoever chooses keys and n.) Now no key in
// debt is ever evicted: the newcomer is charged to the overflow cell, and
// the hot key stays refused.
TEST(AttackKeyedRateLimitTest, BurstSizedNewcomersNeverResetAHotKeyInDebt) {
  FakeClock clock;
  // One bucket of 8 slots: every key shares it.
  auto l = KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 10, 8))
               .value();
  // The hot key: its 10 spent, then 3 s later 3 have come back (7 s of
  // debt left).
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(l->TryAcquire(7));
  clock.Advance(absl::Seconds(3));
  // Seven one-shot keys fill the bucket with full debt (n = burst).
  for (uint64_t k = 100; k < 107; ++k) ASSERT_TRUE(l->TryAcquire(k, 10));
  // One more, with a cost (10 s) above the hot key's debt (7 s).
  ASSERT_TRUE(l->TryAcquire(999, 10));
  EXPECT_GT(l->Debt(7), absl::Seconds(6)) << "the hot key's debt was forgiven";
  int64_t hot = 0;
  for (int i = 0; i < 20; ++i) hot += l->TryAcquire(7) ? 1 : 0;
  EXPECT_EQ(hot, 3);
}

// A key whose buckets are full of keys in debt is still limited: it gets
// at most its burst in a frozen window. (It was admitted untracked, every
// time: no limit at all while its neighbours stayed in debt; and with an
// unkeyed public mix, nine keys sharing a bucket were found offline.) Now
// such a key is charged to an overflow cell, and a key has two buckets
// placed by a per-table seed.
TEST(AttackKeyedRateLimitTest, AKeyWhoseBucketIsFullIsStillLimited) {
  FakeClock clock;
  // One bucket: eight keys in full debt, then a ninth.
  auto one = KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 10, 8))
                 .value();
  for (uint64_t k = 1; k <= 8; ++k) ASSERT_TRUE(one->TryAcquire(k, 10));
  int64_t ninth = 0;
  for (int i = 0; i < 1000; ++i) ninth += one->TryAcquire(9) ? 1 : 0;
  EXPECT_LE(ninth, 10);
}

// The same, unprovoked: 100,000 distinct integer keys (they never collide:
// the mix is a bijection) in a table of 2^18 slots; each is held and
// refused on its second request in a frozen window.
TEST(AttackKeyedRateLimitTest, DistinctIntegerKeysNeverShareABudget) {
  FakeClock clock;
  auto l =
      KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 1, 1 << 18))
          .value();
  for (uint64_t k = 0; k < 100000; ++k) ASSERT_TRUE(l->TryAcquire(k * 8191));
  int64_t refused = 0;
  for (uint64_t k = 0; k < 100000; ++k)
    refused += l->TryAcquire(k * 8191) ? 0 : 1;
  EXPECT_EQ(refused, 100000);
  EXPECT_EQ(l->stats().table_full, 0u);
  EXPECT_EQ(l->stats().live_keys, 100000u);
}

// Keys chosen offline to share one bucket under the unseeded mix of the
// fingerprint (SplitMix64 of the identity hash, the top bits scaled to
// the buckets): with the per-table seed they land anywhere, so 200 of
// them, each spent, are all held and none meets a full bucket.
TEST(AttackKeyedRateLimitTest, KeysChosenOfflineToShareABucketAreSpreadOut) {
  FakeClock clock;
  constexpr uint64_t kBuckets = (1 << 16) / 8;
  auto l =
      KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 1, 1 << 16))
          .value();
  std::vector<uint64_t> chosen;
  for (uint64_t k = 0; chosen.size() < 200; ++k) {
    const uint64_t f = detail::SplitMix64Step(k);
    if (((f >> 32) * kBuckets) >> 32 == 0) chosen.push_back(k);
  }
  for (uint64_t k : chosen) ASSERT_TRUE(l->TryAcquire(k));
  for (uint64_t k : chosen) EXPECT_FALSE(l->TryAcquire(k)) << k;
  EXPECT_EQ(l->stats().table_full, 0u);
  EXPECT_EQ(l->stats().live_keys, 200u);
}

// The same seed places keys the same way (a run can be repeated), and a
// table of one bucket behaves the same whatever the seed.
TEST(AttackKeyedRateLimitTest, AGivenSeedRepeatsARun) {
  FakeClock clock;
  KeyedRateLimitSettings s = KeyedSettings(clock, 1, 1, 256);
  s.seed = 12345;
  auto a = KeyedRateLimiter<uint64_t>::Create(s).value();
  auto b = KeyedRateLimiter<uint64_t>::Create(s).value();
  for (uint64_t k = 0; k < 1000; ++k) {
    ASSERT_EQ(a->TryAcquire(k), b->TryAcquire(k)) << k;
  }
  EXPECT_EQ(a->stats().table_full, b->stats().table_full);
  EXPECT_GT(a->stats().table_full, 0u);
}

// A colliding hash (a custom Hash that maps everything to one value):
// distinct keys share one budget, as documented, and an override is
// still compared by the key itself, with a state of its own: the VIP's
// burst is untouched by the debt the default keys ran up on the shared
// slot, and its spending leaves them theirs.
struct ConstantHash {
  std::size_t operator()(const std::string&) const { return 42; }
};
TEST(AttackKeyedRateLimitTest,
     FingerprintCollisionsShareOneBudgetAsDocumented) {
  FakeClock clock;
  auto l = KeyedRateLimiter<std::string, ConstantHash>::Create(
               KeyedSettings(clock, 1, 2, 64), {{"vip", {100, 100}}})
               .value();
  EXPECT_TRUE(l->TryAcquire("a"));
  EXPECT_TRUE(l->TryAcquire("b"));
  EXPECT_FALSE(l->TryAcquire("c")) << "a, b, c share one slot";
  EXPECT_TRUE(l->TryAcquire("vip", 100)) << "the VIP's whole burst";
  EXPECT_FALSE(l->TryAcquire("vip"));
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(l->TryAcquire("c")) << "the shared slot's one permit";
  EXPECT_FALSE(l->TryAcquire("a"));
}

// Keyed at clock extremes and stepping back: a key in debt stays in debt
// (nothing forgiven), and the limiter serves again once the clock is back.
TEST(AttackKeyedRateLimitTest, ClockStepsAndInfinitiesForgiveNothing) {
  FakeClock clock;
  auto l = KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 10, 2, 64))
               .value();
  ASSERT_TRUE(l->TryAcquire(1, 2));
  const absl::Time good = clock.Now();
  // (Not back an hour and then forward again: the forward step would read
  // as an hour passing, which no limiter can tell from a real hour.)
  for (absl::Time t : {good - absl::Seconds(1), good - absl::Hours(1),
                       absl::InfiniteFuture(), absl::InfinitePast()}) {
    clock.Set(t);
    EXPECT_FALSE(l->TryAcquire(1));
  }
  clock.Set(good + absl::Hours(2));
  EXPECT_TRUE(l->TryAcquire(1, 2));
  EXPECT_FALSE(l->TryAcquire(1));
  clock.Advance(absl::Milliseconds(100));
  EXPECT_TRUE(l->TryAcquire(1));
}

// Many threads on one hot key with a frozen clock: exactly the burst.
TEST(AttackKeyedRateLimitConcurrencyTest, ThreadsOnOneKeyGetExactlyTheBurst) {
  FakeClock clock;
  auto l =
      KeyedRateLimiter<uint64_t>::Create(KeyedSettings(clock, 1, 500, 1024))
          .value();
  std::atomic<int64_t> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        admitted += l->TryAcquire(3) ? 1 : 0;
        l->TryAcquire(static_cast<uint64_t>(t + 1) * 1000000 + i);  // noise
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 500);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
