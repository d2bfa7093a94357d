// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A second adversarial review of the local rate limits after two-choice
// placement and the shared overflow cell (keyed_rate_limit.hpp,
// detail/rate_limit/slot_table.hpp), the time line at an infinity
// (detail/rate_limit/gcra.hpp) and a limiter in front of a breaker
// (with_fallback.hpp). Each test states the condition a deployment creates
// and the bound it checks. The four that showed defects (an override in
// the overflow cell, a burst derived from lease_horizon in the limit
// record, permits spent behind an open breaker) failed on the code they
// were written against and pass since the fixes.

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/with_fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/breakers.hpp"

// The fleet quota's lease arguments need only hiredis's header (nothing of
// it is called here); without it the quota test is left out.
#if __has_include(<hiredis/hiredis.h>)
#include "degrade/redis/detail/quota_script.hpp"
#include "degrade/redis/quota_options.hpp"
#define DEGRADE_ATTACK2_HAS_QUOTA 1
#else
#define DEGRADE_ATTACK2_HAS_QUOTA 0
#endif

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

// A clock that can be told to read an infinity.
class BrokenClock final : public Clock {
 public:
  absl::Time Now() const override {
    return infinite_ ? absl::InfiniteFuture() : base_.Now();
  }
  void SetInfinite(bool v) { infinite_ = v; }
  FakeClock& base() { return base_; }

 private:
  FakeClock base_;
  bool infinite_ = false;
};

KeyedRateLimitSettings Keyed(const Clock& clock, double rate, int64_t burst,
                             std::size_t max_keys) {
  KeyedRateLimitSettings s;
  s.name = "attack2";
  s.rate = rate;
  s.burst = burst;
  s.max_keys = max_keys;
  s.seed = 12345;
  s.precise_clock = true;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

// Fills a one-bucket table (max_keys 8: both choices are the same bucket,
// one overflow cell) with 8 residents in debt of `debt_permits` each.
void FillOneBucket(KeyedRateLimiter<std::string>& l, int64_t debt_permits) {
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(l.TryAcquire(absl::StrCat("resident", i), debt_permits));
  }
}

// Hot residents that keep spending at their rate stay in debt.
void KeepResidentsBusy(KeyedRateLimiter<std::string>& l) {
  for (int i = 0; i < 8; ++i) (void)l.TryAcquire(absl::StrCat("resident", i));
}

// ---- The overflow cell ----

// A known-hot item configured with a low limit (an override: 1 per 100 s)
// that arrives while its buckets are all debt is charged to the shared
// overflow cell at *its* limit: the cell's TAT moves 100 s ahead, and every
// other newcomer of that part of the table (default limit: 1/s, burst 2)
// is then refused for about 98 s, though none of them has ever sent a
// request. Expected: a newcomer's wait in the cell is bounded by its own
// limit (a few seconds here), not by the strictest override that passed
// through the cell. Was: the cell was one TAT judged with each caller's own
// tolerance. Fixed: an override key has a state of its own outside the
// table and never enters a cell.
TEST(AttackKeyedOverflowTest,
     AStrictOverrideInTheCellLocksOutEveryOtherNewcomer) {
  FakeClock clock;
  auto l = KeyedRateLimiter<std::string>::Create(Keyed(clock, 1, 2, 8),
                                                 {{"hot-item", {0.01, 1}}})
               .value();
  FillOneBucket(*l, 2);
  ASSERT_TRUE(l->TryAcquire("hot-item"));  // via the overflow cell
  absl::Duration wait;
  bool alice = false;
  for (int s = 0; s < 10 && !alice; ++s) {
    clock.Advance(absl::Seconds(1));
    KeepResidentsBusy(*l);
    alice = l->TryAcquire("alice", 1, &wait);
  }
  EXPECT_TRUE(alice) << "a never-seen key is still refused after 10 s; "
                        "retry-after "
                     << wait;
}

// The same with a generous override (a VIP: 1000/s, burst 10000): one VIP
// newcomer spending its burst through the cell refuses every default
// newcomer of the region for 10 s.
TEST(AttackKeyedOverflowTest, AVipBurstInTheCellLocksOutEveryOtherNewcomer) {
  FakeClock clock;
  auto l = KeyedRateLimiter<std::string>::Create(Keyed(clock, 1, 2, 8),
                                                 {{"vip", {1000, 10000}}})
               .value();
  FillOneBucket(*l, 2);
  ASSERT_TRUE(l->TryAcquire("vip", 10000));
  absl::Duration wait;
  bool alice = false;
  for (int s = 0; s < 4 && !alice; ++s) {
    clock.Advance(absl::Seconds(1));
    KeepResidentsBusy(*l);
    alice = l->TryAcquire("alice", 1, &wait);
  }
  EXPECT_TRUE(alice) << "retry-after " << wait;
}

// What a new user sees when the table is full: the refusal said it was
// over its rate, though it never sent a request, so an operator reading the
// log (or a client reading the status) could not tell a full table (size
// max_keys up) from a misbehaving caller. The message now names the full
// table.
TEST(AttackKeyedOverflowTest, ANewcomerRefusedForAFullTableIsToldSo) {
  FakeClock clock;
  for (KeyedTableFull mode :
       {KeyedTableFull::kShareOverflow, KeyedTableFull::kRefuse}) {
    KeyedRateLimitSettings s = Keyed(clock, 1, 2, 8);
    s.when_full = mode;
    auto l = KeyedRateLimiter<std::string>::Create(s).value();
    FillOneBucket(*l, 2);
    // Drain the cell (kShareOverflow) with other newcomers first.
    (void)l->TryAcquire("first-newcomer", 2);
    const absl::Status st = l->Admit("never-seen-before");
    ASSERT_TRUE(IsRateLimited(st)) << st;
    EXPECT_THAT(st.message(), HasSubstr("full")) << st;
  }
}

// Characterisation (holds today, by design): with the table full of keys
// that stay in debt, 100 distinct never-seen users of one region share a
// single key's limit between them: exactly its burst is admitted on a
// frozen clock, and the rest of a flood of invented keys (attacker or
// surge) crowds the legitimate newcomers of the same 512 slots out in the
// same proportion. Recorded so that a change to the cell's policy shows
// here.
TEST(AttackKeyedOverflowTest, ManyNewcomersShareOneKeysBurstInAFullRegion) {
  FakeClock clock;
  auto l = KeyedRateLimiter<std::string>::Create(Keyed(clock, 1, 2, 8)).value();
  FillOneBucket(*l, 2);
  int admitted = 0;
  for (int u = 0; u < 100; ++u) {
    admitted += l->TryAcquire(absl::StrCat("user", u)) ? 1 : 0;
  }
  EXPECT_EQ(admitted, 2);
  // Over 10 s with the residents kept in debt, the region's newcomers get
  // about one key's rate, not one key's rate each.
  int later = 0;
  for (int s = 0; s < 10; ++s) {
    clock.Advance(absl::Seconds(1));
    KeepResidentsBusy(*l);
    for (int u = 0; u < 100; ++u) {
      later += l->TryAcquire(absl::StrCat("user", u)) ? 1 : 0;
    }
  }
  EXPECT_LE(later, 11);
  EXPECT_GE(l->stats().table_full, 1000u);
}

// ---- Two-choice placement: one key, one slot, its debt kept ----

// Many keys, random costs and random time steps on a table big enough that
// no pair of buckets fills: each key's admissions must be exactly those of
// its own GCRA, computed here independently. A key stored twice (one copy
// replenished, one in debt) or a debt lost when a key moved to its other
// bucket would admit a request the reference refuses.
TEST(AttackKeyedPlacementTest, EveryKeyMatchesItsOwnGcraExactly) {
  FakeClock clock;
  // rate 4/s: an interval of exactly 250 ms = 1e9 ticks.
  const int64_t kInterval = 1'000'000'000;
  const int64_t burst = 3;
  const int64_t tol = kInterval * burst;
  for (uint64_t seed : {1u, 7u, 99u, 12345u}) {
    KeyedRateLimitSettings s = Keyed(clock, 4, burst, 256);
    s.seed = seed;
    auto l = KeyedRateLimiter<std::string>::Create(s).value();
    std::map<std::string, int64_t> tat;  // ticks since creation
    int64_t now = 0;
    detail::SplitMix64 rng(seed);
    int mismatches = 0;
    for (int step = 0; step < 20000; ++step) {
      const uint64_t r = rng.Next();
      if (r % 4 == 0) {
        const int64_t ms = static_cast<int64_t>((r >> 8) % 300);
        clock.Advance(absl::Milliseconds(ms));
        now += ms * 4'000'000;
      }
      const std::string key = absl::StrCat("k", (r >> 20) % 120);
      const int64_t n = 1 + static_cast<int64_t>((r >> 40) % 3);
      int64_t& t = tat[key];
      const int64_t next = std::max(t, now) + n * kInterval;
      const bool want = next - tol <= now;
      const bool got = l->TryAcquire(key, n);
      if (want != got) ++mismatches;
      if (got) t = next;  // follow the limiter: count each mismatch once
    }
    const KeyedRateLimitStats st = l->stats();
    // The comparison is exact only while no pair of buckets filled.
    ASSERT_EQ(st.table_full, 0u) << "seed " << seed;
    EXPECT_EQ(mismatches, 0) << "seed " << seed;
    EXPECT_EQ(st.evictions_in_debt, 0u);
  }
}

// ---- The clock ----

// An infinite clock, then a finite one earlier than the last good reading
// (a custom clock corrected back after a glitch): nothing is forgiven, and
// the debt is paid on the line, not on the raw reading.
TEST(AttackKeyedClockTest, InfinityThenAnEarlierFiniteReadingForgivesNothing) {
  BrokenClock clock;
  for (bool keyed : {false, true}) {
    std::unique_ptr<KeyedRateLimiter<std::string>> k;
    std::unique_ptr<RateLimiter> r;
    if (keyed) {
      k = KeyedRateLimiter<std::string>::Create(Keyed(clock, 1, 2, 64)).value();
    } else {
      RateLimitSettings s;
      s.name = "attack2";
      s.rate = 1;
      s.burst = 2;
      s.precise_clock = true;
      s.clock = &clock;
      s.metrics = NoTelemetry();
      r = RateLimiter::Create(s).value();
    }
    auto take = [&] { return keyed ? k->TryAcquire("a") : r->TryAcquire(); };
    clock.base().Advance(absl::Seconds(10));
    const absl::Time good = clock.base().Now();
    int admitted = 0;
    for (int i = 0; i < 5; ++i) admitted += take() ? 1 : 0;
    EXPECT_EQ(admitted, 2);
    clock.SetInfinite(true);
    EXPECT_FALSE(take());
    clock.SetInfinite(false);
    // Earlier by less than a step back, then by more.
    for (absl::Duration back : {absl::Milliseconds(500), absl::Seconds(30)}) {
      clock.base().Set(good - back);
      EXPECT_FALSE(take()) << "keyed " << keyed << " back " << back;
      clock.SetInfinite(true);
      EXPECT_FALSE(take()) << "keyed " << keyed << " back " << back;
      clock.SetInfinite(false);
    }
    // Back at the good reading; 1 s of line time later: one permit.
    clock.base().Set(good - absl::Seconds(30) + absl::Seconds(1));
    EXPECT_TRUE(take()) << "keyed " << keyed;
    EXPECT_FALSE(take()) << "keyed " << keyed;
  }
}

// ---- WithFallback with a misbehaving limiter ----

// A limiter callable that throws (a lambda over a lookup that fails, a
// quota adapter with a bug): the call's own exception became Plan B, but
// the limiter's escaped WithFallback. Now Plan B, tagged exception, as for
// every other failure ("Any failure becomes the fallback"), and the call
// is not made.
#if DEGRADE_HAS_EXCEPTIONS
TEST(AttackWithFallbackTest, ALimiterThatThrowsServesPlanB) {
  FakeClock clock;
  auto cb = degrade_tests::MakeBreaker<int>(&clock, "cb");
  auto gate = []() -> absl::Status { throw std::runtime_error("lookup"); };
  int calls = 0;
  StageResult<int> r(StageResult<int>::Fresh(0));
  EXPECT_NO_THROW(r = WithFallback(
                      gate, *cb, "features",
                      [&] {
                        ++calls;
                        return 7;
                      },
                      -1));
  EXPECT_TRUE(r.is_default());
  EXPECT_EQ(r.trace().ReasonFor("features"), DegradeReason::kException);
  EXPECT_EQ(calls, 0);
}
#endif

// A limiter that answers an error that is not a refusal (an internal
// error of the gate itself) is served Plan B tagged `shed`: it reads as a
// deliberate shed on dashboards, where the breaker would call it `error`.
TEST(AttackWithFallbackTest, AGateErrorIsTaggedShed) {
  FakeClock clock;
  auto cb = degrade_tests::MakeBreaker<int>(&clock, "cb");
  auto gate = [] { return absl::InternalError("quota adapter broke"); };
  const StageResult<int> r = WithFallback(
      gate, *cb, "features", [] { return 7; }, -1);
  EXPECT_TRUE(r.is_default());
  EXPECT_EQ(r.trace().ReasonFor("features"), DegradeReason::kShed);
}

// A limiter that re-enters WithFallback on the same breaker (a gate that
// itself consults a guarded dependency): no lock is held, both run.
TEST(AttackWithFallbackTest, ALimiterThatReentersRuns) {
  FakeClock clock;
  auto cb = degrade_tests::MakeBreaker<int>(&clock, "cb");
  int inner = 0;
  auto gate = [&]() -> absl::Status {
    const StageResult<int> r = WithFallback(
        *cb, "inner",
        [&] {
          ++inner;
          return 1;
        },
        -1);
    return r.is_default() ? absl::UnavailableError("inner") : absl::OkStatus();
  };
  const StageResult<int> r = WithFallback(
      gate, *cb, "outer", [] { return 7; }, -1);
  EXPECT_FALSE(r.is_default());
  EXPECT_EQ(inner, 1);
}

// The limiter is asked before the breaker: while the breaker is open every
// call spends a permit for a call that is never made. When the breaker
// closes again the limiter's burst is gone and the first real calls are
// refused. With a fleet quota this spends the fleet's tokens on nothing.
// Expected: a call the breaker rejects costs no permit. Fixed: the limiter
// is asked once the breaker has admitted the call.
TEST(AttackWithFallbackTest, CallsTheOpenBreakerRejectsSpendNoPermit) {
  FakeClock clock;
  RateLimitSettings s;
  s.name = "features";
  s.rate = 0.001;  // refills once in 1000 s: the burst is all there is
  s.burst = 3;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto limiter = RateLimiter::Create(s).value();
  auto cb = degrade_tests::MakeBreaker<int>(&clock, "cb");
  degrade_tests::Trip(*cb);
  for (int i = 0; i < 3; ++i) {
    (void)WithFallback(
        *limiter, *cb, "features", [] { return 7; }, -1);
  }
  EXPECT_TRUE(limiter->TryAcquire()) << "the open breaker's rejections "
                                        "spent the whole burst";
}

#if DEGRADE_ATTACK2_HAS_QUOTA
// ---- The fleet quota's limit record ----

// A rollout that changes only lease_horizon (how long an instance may hold
// a lease: a tuning knob, not the fleet's limit) with the default burst
// (0: limit x lease_horizon) sends a different burst to the script, which
// answers DQLIMIT: every new instance is refused and runs on its fair
// share, outside the bucket, for the whole rollout and until the old
// bucket expires (at least a minute after the last old instance). The
// fleet then gets the old limit plus the new instances' fair shares (up
// to about twice the limit near the end of the rollout, docs/redis.md
// "Changing the limit"), for a change that did not touch the limit.
// Expected: the limit record compares what the operator set (rate, and
// burst when set), or the derived burst is not part of the record. Fixed:
// the script is sent the burst as set (0: derived, by the script, from
// each caller's lease_horizon), and instances with different limits now
// share the bucket at the lowest instead of being refused
// (redis_quota_attack_test.cpp covers both on a real Redis).
TEST(AttackQuotaLimitRecordTest,
     ChangingOnlyTheLeaseHorizonIsNotALimitConflict) {
  redis::ClusterQuotaOptions before;
  before.name = "feature_store";
  before.limit_per_second = 1000;
  before.expected_members = 20;
  redis::ClusterQuotaOptions after = before;
  after.lease_horizon = absl::Seconds(2);
  ASSERT_TRUE(redis::ValidateClusterQuotaOptions(before).ok());
  ASSERT_TRUE(redis::ValidateClusterQuotaOptions(after).ok());
  const detail::redis::LeaseArgs a = detail::redis::QuotaLeaseArgs(before);
  const detail::redis::LeaseArgs b = detail::redis::QuotaLeaseArgs(after);
  EXPECT_EQ(a.limit, b.limit);
  EXPECT_EQ(a.burst, b.burst)
      << "a burst as set: " << a.burst << " vs " << b.burst;
}
#endif  // DEGRADE_ATTACK2_HAS_QUOTA

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
