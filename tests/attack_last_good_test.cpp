// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An adversarial review of the last-known-good tier (ladder.hpp,
// coalesce.hpp, recovery_ramp.hpp, segment_defaults.hpp and the tag), on a
// FakeClock with no threads: background calls queue on a hand-cranked
// executor so that every interleaving is the test's choice.
//
// Tests named DISABLED_ show a defect the review found (the comment above
// each gives its severity and the fix it suggests); they fail on the code as
// reviewed. The enabled tests are attacks the code withstood, kept so that
// they keep being tried.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/coalesce.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/ladder.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using Features = std::vector<float>;
using FeatureLadder = Ladder<uint64_t, Features>;

// Runs what it is given only when the test cranks it.
struct HandCrankedExecutor final : Executor {
  bool Submit(std::function<void()> task) override {
    queue.push_back(std::move(task));
    return true;
  }
  void RunAll() {
    std::vector<std::function<void()>> now = std::move(queue);
    queue.clear();
    for (auto& t : now) t();
  }
  std::vector<std::function<void()>> queue;
};

struct AttackStore {
  bool up = true;
  int version = 1;
  uint64_t calls = 0;
  auto Get(uint64_t key) {
    return [this, key]() -> absl::StatusOr<Features> {
      ++calls;
      if (!up) return absl::UnavailableError("store down");
      return Features{static_cast<float>(key), static_cast<float>(version)};
    };
  }
};

struct AttackRig {
  explicit AttackRig(bool with_ramp = false, bool with_coalescer = false) {
    BreakerSettings b;
    b.name = "features";
    b.clock = &clock;
    b.metrics = NoTelemetry();
    b.ready_to_trip = trip::ConsecutiveFailures(3);
    b.timeout = absl::Seconds(5);
    breaker = std::make_unique<CircuitBreaker<Features>>(b);
    LastGoodCacheSettings c;
    c.name = "features";
    c.max_bytes = 64 << 20;
    c.max_entries = 200'000;
    c.stale_if_error = absl::Hours(1);
    c.max_age = absl::Hours(24);
    c.clock = &clock;
    c.metrics = NoTelemetry();
    cache = LastGoodCache<uint64_t, Features>::Create(c).value();
    if (with_ramp) {
      RecoveryRampSettings r;
      r.name = "features";
      r.clock = &clock;
      r.metrics = NoTelemetry();
      ramp = RecoveryRamp::Create(r).value();
    }
    if (with_coalescer) {
      CoalescerSettings cs;
      cs.name = "features";
      cs.executor = &executor;
      cs.clock = &clock;
      cs.metrics = NoTelemetry();
      coalescer = FeatureLadder::Shared::Create(cs).value();
    }
  }

  // The value check the ladder is given (none by default).
  std::function<absl::Status(const Features&)> validate;

  std::unique_ptr<FeatureLadder> Make(LadderSettings s = {}) {
    s.clock = &clock;
    s.metrics = NoTelemetry();
    FeatureLadder::Rungs rungs;
    rungs.breaker = breaker.get();
    rungs.cache = cache.get();
    rungs.ramp = ramp.get();
    rungs.coalescer = coalescer.get();
    rungs.segment = [this](absl::string_view seg) -> FeatureLadder::Value {
      return seg == "US" ? us : nullptr;
    };
    rungs.global = [this] { return global; };
    rungs.validate = validate;
    auto l = FeatureLadder::Create(s, rungs);
    EXPECT_TRUE(l.ok()) << l.status();
    return std::move(l).value();
  }

  void Put(uint64_t key, float version) {
    cache->Put(key, std::make_shared<const Features>(
                        Features{static_cast<float>(key), version}));
  }

  FakeClock clock;
  AttackStore store;
  HandCrankedExecutor executor;
  std::unique_ptr<CircuitBreaker<Features>> breaker;
  std::unique_ptr<LastGoodCache<uint64_t, Features>> cache;
  std::unique_ptr<RecoveryRamp> ramp;
  std::unique_ptr<FeatureLadder::Shared> coalescer;
  FeatureLadder::Value us = std::make_shared<const Features>(Features{-1, -1});
  FeatureLadder::Value global =
      std::make_shared<const Features>(Features{-2, -2});
};

std::unique_ptr<RecoveryRamp> AttackRamp(FakeClock* clock) {
  RecoveryRampSettings r;
  r.name = "features";
  r.period = absl::Seconds(10);
  r.rate_window = absl::Seconds(10);
  r.min_rate = 1;
  r.clock = clock;
  r.metrics = NoTelemetry();
  return RecoveryRamp::Create(r).value();
}

// ---- Findings (fail on the code as reviewed) -------------------------------

// Finding: the pre-outage rate collapses when the breaker reopens soon after
// a ramp ends. Severity: Medium. After a ramp, steady state restarts its
// count, and MeasuredRate() divides the calls since by at least a tenth of
// rate_window: 100 ms of steady traffic at 1,000/s reads as 100/s. The next
// ramp climbs to 100/s and then lets everything go, a 10x cliff at its end:
// the stampede the ramp exists to prevent, on exactly the flapping store
// that needs it most. Fix: while the window is not yet mature, keep the
// previous base_rate (take the larger of it and the partial measurement).
TEST(AttackLastGoodTest, ReopeningJustAfterARampKeepsThePreOutageRate) {
  FakeClock clock;
  auto ramp = AttackRamp(&clock);
  for (int i = 0; i < 20'000; ++i) {  // 1,000 calls a second for 20 s
    ASSERT_TRUE(ramp->Admit(true));
    clock.Advance(absl::Milliseconds(1));
  }
  ramp->Admit(false);
  ASSERT_GT(ramp->base_rate(), 900);
  clock.Advance(absl::Seconds(60));
  ASSERT_TRUE(ramp->Admit(true));
  ASSERT_EQ(ramp->state(), RampState::kRamping);
  for (int i = 0; i < 20'000 && ramp->state() != RampState::kSteady; ++i) {
    ramp->Admit(true);  // the ramp runs to its end
    clock.Advance(absl::Milliseconds(1));
  }
  ASSERT_EQ(ramp->state(), RampState::kSteady);
  for (int i = 0; i < 100; ++i) {  // 100 ms of steady traffic at 1,000/s
    ASSERT_TRUE(ramp->Admit(true));
    clock.Advance(absl::Milliseconds(1));
  }
  ramp->Admit(false);  // the store fails again
  EXPECT_GT(ramp->base_rate(), 500) << "the demand is still 1,000/s";
}

// Finding: stale-while-revalidate refreshes bypass the recovery ramp.
// Severity: Medium (with revalidate_for set). Get() serves the SWR window
// and launches the background refresh before it asks the ramp, so right
// after an outage every key still inside fresh_for + revalidate_for (all
// of them, after a short outage with revalidate_for of an hour) sends its
// refresh to the recovering store at once. Fix: ask the ramp (with the
// breaker's state) before Revalidate(); when it refuses, serve the stale
// value without a refresh.
TEST(AttackLastGoodTest, RevalidationsDuringARecoveryGoThroughTheRamp) {
  AttackRig rig(/*with_ramp=*/true, /*with_coalescer=*/true);
  LadderSettings s;
  s.coalesce_wait = absl::ZeroDuration();
  s.fresh_for = absl::Minutes(1);
  s.revalidate_for = absl::Hours(1);
  auto ladder = rig.Make(s);
  // The ramp saw an outage and the breaker has closed again: ramping, at
  // 10% of its 10/s floor.
  for (int i = 0; i < 100; ++i) {
    rig.ramp->Admit(true);
    rig.clock.Advance(absl::Milliseconds(10));
  }
  rig.ramp->Admit(false);
  for (uint64_t k = 0; k < 1000; ++k) rig.Put(k, 1);
  rig.clock.Advance(absl::Minutes(2));  // every key in its SWR window
  ASSERT_TRUE(rig.ramp->Admit(true));
  ASSERT_EQ(rig.ramp->state(), RampState::kRamping);
  for (uint64_t k = 0; k < 1000; ++k) {
    auto f = ladder->Get(k, "", rig.store.Get(k));
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE(f->is_stale());
  }
  rig.executor.RunAll();
  EXPECT_LE(rig.store.calls, 10u)
      << "the ramp admits about one call now, the store got "
      << rig.store.calls;
}

// Finding: an OK answer holding an empty (garbage) value replaces the
// key's last good value. Severity: Medium. Through() writes every OK result
// through to the cache, and the ladder has no way to refuse a value: a
// store that answers a cold shard or a schema mismatch with an empty vector
// wipes every user's last-known-good features one request at a time, and
// the next outage serves the garbage as "stale". Fix: a `validate` rung
// (V -> absl::Status); a refused value is a failure (DegradeReason::kInvalid
// exists for it), neither cached nor served, and walks down the ladder.
TEST(AttackLastGoodTest, AnEmptyOkValueNeverReplacesTheLastGoodOne) {
  AttackRig rig;
  rig.validate = [](const Features& f) {
    return f.empty() ? absl::InvalidArgumentError("an empty vector")
                     : absl::OkStatus();
  };
  auto ladder = rig.Make();
  ASSERT_TRUE(ladder->Get(7, "", rig.store.Get(7)).ok());
  rig.clock.Advance(absl::Minutes(1));
  auto garbage = ladder->Get(
      7, "", []() -> absl::StatusOr<Features> { return Features{}; });
  ASSERT_TRUE(garbage.ok());
  // Refused: the key's last good value is served instead, tagged invalid.
  EXPECT_TRUE(garbage->is_stale());
  EXPECT_EQ(garbage->trace().Encode(), "v1;features=invalid/stale-1m");
  EXPECT_THAT(*garbage->value(), ElementsAre(7, 1));
  rig.store.up = false;
  rig.clock.Advance(absl::Minutes(1));
  auto f = ladder->Get(7, "", rig.store.Get(7));
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->is_stale());
  EXPECT_THAT(*f->value(), ElementsAre(7, 1));
}

// Finding: a call left on the executor uses the ladder after it is
// destroyed. Severity: Medium (a documented REQUIRES, but an easy one to
// break). Through() captures `this`; the Coalescer goes out of its way to
// let a late call end harmlessly (its core is shared), and the ladder
// undoes that. With stale-while-revalidate every request in the window
// leaves such a call behind, and a process that rebuilds its ladder on a
// config reload while a shared ThreadPool lives on gets a use after free.
// This test is undefined behaviour as the code stands: run it under the
// asan-ubsan preset, where it reports a heap-use-after-free in Through().
// Fix: the call captures a shared_ptr to the state it touches (counters,
// cache, breaker handles) or a weak token checked before it runs, and the
// destructor stops waiting calls from touching the ladder.
TEST(AttackLastGoodTest, ACallStillQueuedWhenTheLadderGoesIsHarmless) {
  AttackRig rig(/*with_ramp=*/false, /*with_coalescer=*/true);
  LadderSettings s;
  s.coalesce_wait = absl::ZeroDuration();
  auto ladder = rig.Make(s);
  (void)ladder->Get(1, "", rig.store.Get(1));
  ASSERT_EQ(rig.executor.queue.size(), 1u);
  ladder.reset();
  rig.executor.RunAll();  // the call runs after its ladder is gone
  SUCCEED();
}

// Finding: `revalidations` counts requests, not the refreshes begun.
// Severity: Low. LadderStats documents it as "background refreshes begun",
// but Revalidate() counts before the coalescer joins the request to the
// refresh already in flight (or the executor refuses it): five requests in
// a key's SWR window read as five refreshes where the store saw one. Fix:
// count on the coalescer's kLeader role only (DoWithRole), and count the
// refused ones apart.
TEST(AttackLastGoodTest, RevalidationsCountTheRefreshesBegun) {
  AttackRig rig(/*with_ramp=*/false, /*with_coalescer=*/true);
  LadderSettings s;
  s.fresh_for = absl::Minutes(1);
  s.revalidate_for = absl::Hours(1);
  auto ladder = rig.Make(s);
  rig.Put(3, 1);
  rig.clock.Advance(absl::Minutes(2));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(ladder->Get(3, "", rig.store.Get(3)).ok());
  ASSERT_EQ(rig.executor.queue.size(), 1u);  // one refresh, as promised
  EXPECT_EQ(ladder->stats().revalidations, 1u);
  rig.executor.RunAll();
}

// Finding: a clock stepped back stretches fresh_for by the size of the step.
// Severity: Low (RealClock is steady; a Clock over wall time, or a FakeClock
// in a replay, steps). The cache reads a value written "in the future" as
// age 0 until the clock catches up, so with fresh_for of a minute a value
// is served without a call for the hour the clock went back, though half an
// hour really passed. The project's rule is that a step back is no time
// passing, not time frozen until the old reading returns. Fix: keep the
// age at the step (clamp the write time to now when reading it back) so
// the age grows again from there.
TEST(AttackLastGoodTest, AClockSteppedBackDoesNotStretchFreshFor) {
  AttackRig rig;
  LadderSettings s;
  s.fresh_for = absl::Minutes(1);
  auto ladder = rig.Make(s);
  const absl::Time t0 = rig.clock.Now();
  ASSERT_TRUE(ladder->Get(3, "", rig.store.Get(3)).ok());
  ASSERT_EQ(rig.store.calls, 1u);
  rig.clock.Set(t0 - absl::Hours(1));
  for (int i = 0; i < 6; ++i) {  // 30 minutes pass
    rig.clock.Advance(absl::Minutes(5));
    ASSERT_TRUE(ladder->Get(3, "", rig.store.Get(3)).ok());
  }
  EXPECT_GT(rig.store.calls, 1u) << "30 minutes passed, fresh_for is 1";
}

// Finding: the ramp ends in a cliff whenever demand is above the rate it
// measured. Severity: Medium. The ramp climbs to base_rate over `period`
// and then lets everything go. An instance that started during the outage
// (a deploy, an autoscaler, a crash loop caused by the outage) measured
// nothing, so its base is min_rate (10/s): it admits 1/s rising to 10/s
// and then its whole demand, 1,000/s here, in one step; a fleet of such
// instances steps together. The same cliff follows the base collapse above.
// Fix: end the ramp on evidence, not on the clock: past `period`, keep
// raising the rate (say doubling each period, as slow start does) while the
// ramp still refuses, and go steady only once a period passes with no
// refusal.
TEST(AttackLastGoodTest, ARampStartedWithoutAMeasuredRateHasNoCliff) {
  FakeClock clock;
  RecoveryRampSettings r;
  r.name = "features";
  r.period = absl::Seconds(10);
  r.clock = &clock;
  r.metrics = NoTelemetry();
  auto ramp = RecoveryRamp::Create(r).value();
  ramp->Admit(false);  // started during the outage
  clock.Advance(absl::Seconds(60));
  std::vector<uint64_t> per_second;
  for (int sec = 0; sec < 12; ++sec) {
    uint64_t admitted = 0;
    for (int i = 0; i < 1000; ++i) {
      admitted += ramp->Admit(true) ? 1 : 0;
      clock.Advance(absl::Milliseconds(1));
    }
    per_second.push_back(admitted);
  }
  for (std::size_t i = 1; i < per_second.size(); ++i) {
    EXPECT_LE(per_second[i], 2 * per_second[i - 1] + 10)
        << "second " << i << " admitted " << per_second[i] << " after "
        << per_second[i - 1];
  }
}

// Finding: at a low rate the ramp runs ahead of the clock and ends early.
// Severity: Medium (a store with little traffic, or min_rate set low).
// Now() floors the line's time at TAT - burst; when the ramp's interval is
// over 4 s longer than `burst` (a rate under about 0.24/s: 10% of a 1/s
// base), that floor is more than the line's step-back threshold ahead of
// the clock, so GcraLine takes it for a clock stepped back and grows its
// offset by the whole interval, for good. Each admission moves the ramp's
// time ahead by about ten seconds: a 60 s ramp is over after a handful of
// calls and a few seconds. Fix: compute the floor from TAT - tolerance
// (never ahead of the clock), or read the line with the ramp's own floor
// (ramp_start_) only.
TEST(AttackLastGoodTest, ALowRateRampLastsItsPeriod) {
  FakeClock clock;
  RecoveryRampSettings r;
  r.name = "features";
  r.period = absl::Seconds(60);
  r.min_rate = 1;
  r.clock = &clock;
  r.metrics = NoTelemetry();
  auto ramp = RecoveryRamp::Create(r).value();
  for (int i = 0; i < 20; ++i) {  // an idle store: 1 call a second
    ramp->Admit(true);
    clock.Advance(absl::Seconds(1));
  }
  ramp->Admit(false);
  ASSERT_LT(ramp->base_rate(), 2);
  clock.Advance(absl::Seconds(60));
  uint64_t admitted = 0;
  for (int i = 0; i < 300; ++i) {  // 30 s of demand at 10/s
    admitted += ramp->Admit(true) ? 1 : 0;
    clock.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(ramp->state(), RampState::kRamping) << "30 s into a 60 s ramp";
  // The ramp's rate over its first half averages under 0.55 x base.
  EXPECT_LE(admitted, 20u);
}

// Finding: with the coalescer's table full, stale-while-revalidate starts
// a refresh per request, not per key. Severity: Medium. A request for a key
// with no call in flight while max_inflight keys have one gets a call of
// its own, uncoalesced; for a background refresh that call is not even
// awaited, so every request in a key's SWR window adds one. The table is
// full exactly when the store is slow (a recovery): then a hot key sends a
// call per request to the store that is struggling. Fix: a refresh (a zero
// wait) that cannot register should be skipped, not run uncoalesced (the
// stale value was already served); for live misses, consider falling down
// the ladder rather than calling uncoalesced when the table is full.
TEST(AttackLastGoodTest, AFullCoalescerStillRefreshesOncePerKey) {
  AttackRig rig;
  CoalescerSettings cs;
  cs.executor = &rig.executor;
  cs.max_inflight = 1;
  cs.shards = 1;
  cs.metrics = NoTelemetry();
  auto coalescer = FeatureLadder::Shared::Create(cs).value();
  FeatureLadder::Rungs rungs;
  rungs.breaker = rig.breaker.get();
  rungs.cache = rig.cache.get();
  rungs.coalescer = coalescer.get();
  LadderSettings s;
  s.clock = &rig.clock;
  s.metrics = NoTelemetry();
  s.coalesce_wait = absl::ZeroDuration();
  s.fresh_for = absl::Minutes(1);
  s.revalidate_for = absl::Hours(1);
  auto ladder = FeatureLadder::Create(s, rungs).value();
  (void)ladder->Get(99, "", rig.store.Get(99));  // a slow call holds the slot
  rig.Put(3, 1);
  rig.clock.Advance(absl::Minutes(2));
  for (int i = 0; i < 5; ++i) {
    auto f = ladder->Get(3, "", rig.store.Get(3));
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE(f->is_stale());
  }
  rig.executor.RunAll();
  EXPECT_LE(rig.store.calls, 2u) << "one for key 99, at most one for key 3";
}

// Finding: during a ramp, requests that would only join a call already in
// flight are refused by the ramp (or spend its room). Severity: Low (it errs
// on the safe side). Get() asks the ramp before the coalescer, so a hot key
// whose call is on its way is served stale to every other request for it,
// and those that are admitted spend the ramp's room on calls the store
// never sees, starving other keys' refreshes. Fix: join a call in flight
// first (the coalescer could expose a join-only Do), and ask the ramp only
// for a request that would start one.
TEST(AttackLastGoodTest, JoiningACallInFlightNeedsNoRoomOnTheRamp) {
  AttackRig rig(/*with_ramp=*/true, /*with_coalescer=*/true);
  LadderSettings s;
  s.coalesce_wait = absl::ZeroDuration();
  auto ladder = rig.Make(s);
  for (int i = 0; i < 100; ++i) {
    rig.ramp->Admit(true);
    rig.clock.Advance(absl::Milliseconds(10));
  }
  rig.ramp->Admit(false);
  rig.clock.Advance(absl::Seconds(10));
  rig.Put(1, 1);
  (void)ladder->Get(1, "", rig.store.Get(1));  // starts the ramp and the call
  ASSERT_EQ(rig.ramp->state(), RampState::kRamping);
  ASSERT_EQ(rig.coalescer->inflight(), 1u);
  for (int i = 0; i < 5; ++i) (void)ladder->Get(1, "", rig.store.Get(1));
  EXPECT_EQ(ladder->stats().ramp_refused, 0u)
      << "a call for key 1 is in flight: joining it costs the store nothing";
  rig.executor.RunAll();
}

// ---- Attacks the code withstood --------------------------------------------

TEST(AttackLastGoodTest, ACallThatThrowsIsAFailureThatWalksDown) {
  AttackRig rig;
  auto ladder = rig.Make();
  ASSERT_TRUE(ladder->Get(7, "", rig.store.Get(7)).ok());
  auto f = ladder->Get(7, "US", []() -> absl::StatusOr<Features> {
    throw std::runtime_error("the client blew up");
  });
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->is_stale());
  EXPECT_EQ(f->trace().ReasonFor("features"), DegradeReason::kException);
  EXPECT_THAT(*f->value(), ElementsAre(7, 1));
  // A throw with nothing cached and no segment: the global default.
  f = ladder->Get(8, "", []() -> absl::StatusOr<Features> { throw 42; });
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tier(), FallbackTier::kGlobal);
}

TEST(AttackLastGoodTest,
     NothingOlderThanStaleIfErrorEvenWithTheClockAtInfinity) {
  AttackRig rig;
  auto ladder = rig.Make();
  ASSERT_TRUE(ladder->Get(7, "", rig.store.Get(7)).ok());
  rig.store.up = false;
  rig.clock.Advance(absl::Hours(1) + absl::Nanoseconds(1));
  auto f = ladder->Get(7, "US", rig.store.Get(7));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tier(), FallbackTier::kSegment);
  rig.clock.Set(absl::InfiniteFuture());
  f = ladder->Get(7, "", rig.store.Get(7));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tier(), FallbackTier::kGlobal);
  rig.clock.Set(absl::InfinitePast());
  f = ladder->Get(7, "", rig.store.Get(7));
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->value() == nullptr);
}

TEST(AttackLastGoodTest, EveryRungIsTaggedWithItsTierAndTheRealReason) {
  AttackRig rig;
  auto ladder = rig.Make();
  rig.Put(1, 1);
  rig.clock.Advance(absl::Minutes(30));
  ASSERT_TRUE(ladder->Get(5, "", rig.store.Get(5)).ok());
  rig.store.up = false;
  // Three failures trip the breaker; the first says error.
  auto f = ladder->Get(5, "", rig.store.Get(5));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->trace().Encode(), "v1;features=error/stale-1m");
  (void)ladder->Get(2, "", rig.store.Get(2));
  (void)ladder->Get(3, "", rig.store.Get(3));
  ASSERT_EQ(rig.breaker->state(), State::kOpen);
  f = ladder->Get(1, "US", rig.store.Get(1));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->trace().Encode(), "v1;features=open/stale-1h");
  EXPECT_EQ(f->tier(), FallbackTier::kStale1h);
  EXPECT_TRUE(f->is_stale());
  EXPECT_FALSE(f->is_default());
  f = ladder->Get(9, "US", rig.store.Get(9));
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->is_default());
  EXPECT_FALSE(f->is_stale());
  EXPECT_EQ(f->trace().Encode(), "v1;features=open/segment");
  f = ladder->Get(9, "FR", rig.store.Get(9));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->trace().Encode(), "v1;features=open/global");
  // Nothing anywhere: the call's own error, not a made-up one.
  rig.global = nullptr;
  f = ladder->Get(9, "FR", rig.store.Get(9));
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(IsBreakerOpen(f.status())) << f.status();
}

TEST(AttackLastGoodTest, StatsAddUpOverAMixedRun) {
  AttackRig rig(/*with_ramp=*/true);
  auto ladder = rig.Make();
  std::mt19937 rng(7);
  uint64_t requests = 0;
  for (int i = 0; i < 20'000; ++i) {
    if (i % 1000 == 0) rig.store.up = (rng() % 3) != 0;  // a flapping store
    const uint64_t k = rng() % 300;
    const char* seg = (k % 2) ? "US" : "";
    (void)ladder->Get(k, seg, rig.store.Get(k));
    ++requests;
    rig.clock.Advance(absl::Milliseconds(rng() % 20));
  }
  const LadderStats st = ladder->stats();
  EXPECT_EQ(st.requests(), requests);
  uint64_t buckets = 0;
  for (uint64_t b : st.stale_age_buckets) buckets += b;
  EXPECT_EQ(buckets, st.stale_total());
  EXPECT_LE(st.store_calls, rig.store.calls);
  EXPECT_EQ(st.ramp_refused, rig.ramp->stats().refused);
}

// Decode accepts exactly what Encode produces: hostile `/tier` tokens
// (empty, doubled slashes, a tier without a reason, unknown, truncated,
// upper case, a tier on the count) are refused, and whatever decodes
// encodes back to the same bytes.
TEST(AttackLastGoodTest, TraceDecodeOfHostileTierTokensRoundTripsOrRefuses) {
  const std::vector<std::string> pieces = {"v1",
                                           ";",
                                           "features",
                                           "=",
                                           "open",
                                           "/",
                                           "stale-1m",
                                           "stale-10m",
                                           "stale-1h",
                                           "stale-old",
                                           "segment",
                                           "global",
                                           "error",
                                           "none",
                                           "+3",
                                           "recall",
                                           "STALE-1M",
                                           "stale-",
                                           "stale-1m/",
                                           "//",
                                           "=/",
                                           "\x00",
                                           "\xff",
                                           "rate-limited",
                                           "rate_limited",
                                           "timeout",
                                           "+0",
                                           "0",
                                           " ",
                                           "segment;"};
  std::mt19937 rng(34);
  int decoded = 0;
  for (int i = 0; i < 200'000; ++i) {
    std::string text = (rng() % 8) ? "v1;" : "";
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int j = 0; j < n; ++j) text += pieces[rng() % pieces.size()];
    auto t = DegradationTrace::Decode(text);
    if (t.ok()) {
      ++decoded;
      ASSERT_EQ(t->Encode(), text);
    } else {
      ASSERT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  EXPECT_GT(decoded, 0);
  for (const char* bad :
       {"v1;features=open/", "v1;features=/stale-1m",
        "v1;features=open//stale-1m", "v1;features=open/stale-1m/segment",
        "v1;features=open/unspecified", "v1;features=open/Stale-1m",
        "v1;+1/stale-1m", "v1;/stale-1m",
        "v1;features=open/stale-1m;features=open/segment"}) {
    EXPECT_FALSE(DegradationTrace::Decode(bad).ok()) << bad;
  }
  // "none" is never encoded (a kNone entry records nothing), so a tier on
  // it is refused too.
  EXPECT_FALSE(
      DegradationTrace::Decode("v1;features=none/stale-10m;recall=open").ok());
  auto ok = DegradationTrace::Decode("v1;features=open/stale-10m;recall=open");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->TierFor("features"), FallbackTier::kStale10m);
  EXPECT_EQ(ok->TierFor("recall"), FallbackTier::kUnspecified);
}

// Drives `ramp` through 20 s of 1,000 calls a second, then an outage.
void SteadyThenOutage(FakeClock* clock, RecoveryRamp* ramp) {
  for (int i = 0; i < 20'000; ++i) {
    ramp->Admit(true);
    clock->Advance(absl::Milliseconds(1));
  }
  ramp->Admit(false);
}

// Finding: a clock stepped back and then forward again ends the ramp at
// once. Severity: Low (RealClock is steady; a Clock over wall time steps
// both ways under NTP). The GCRA line stands still through a step back by
// growing an offset that never shrinks, so when the clock returns the line
// is ahead by the whole step: an hour back and forward again reads as an
// hour of ramp elapsed, and every call goes at once, six seconds into a
// ten-second ramp. Fix: measure the ramp's elapsed time on the raw
// reading clamped to what was last seen (no time passes while the clock is
// behind, and none is invented when it returns), or rebase ramp_start_ by
// the offset the line added.
// Decided, kept disabled: this is the library-wide rule for a clock
// stepped back and then corrected (clock.hpp, gcra.hpp, failure-modes.md
// "A custom clock stepped back an hour and then corrected"): the forward
// step cannot be told from real time passing, so it reads as time passing.
// Clamping to the high-water mark instead would hold the ramp at its rate
// for the whole hour the clock is behind, which the step-back test above
// shows is the worse failure. RealClock never steps.
TEST(AttackLastGoodTest, DISABLED_AClockSteppedBackAndForwardKeepsTheRamp) {
  FakeClock clock;
  auto ramp = AttackRamp(&clock);
  SteadyThenOutage(&clock, ramp.get());
  const double base = ramp->base_rate();
  for (int i = 0; i < 5000; ++i) {  // 5 s into a 10 s ramp
    ramp->Admit(true);
    clock.Advance(absl::Milliseconds(1));
  }
  clock.Set(clock.Now() - absl::Hours(1));
  ramp->Admit(true);
  clock.Set(clock.Now() + absl::Hours(1));
  uint64_t admitted = 0;
  for (int i = 0; i < 1000; ++i) {
    admitted += ramp->Admit(true) ? 1 : 0;
    clock.Advance(absl::Milliseconds(1));
  }
  EXPECT_EQ(ramp->state(), RampState::kRamping);
  EXPECT_LE(admitted, base * 0.75) << "about 60% of the base should go";
}

// A breaker that flaps during the ramp keeps the rate the ramp is measured
// against; the ramp ends after its period; in no second does it admit more
// than its rate allows (plus its burst); a clock stepped back mid-ramp
// neither restarts it nor refuses everything while it is behind.
TEST(AttackLastGoodTest, TheRampHoldsItsRateThroughFlapsAndAStepBack) {
  FakeClock clock;
  auto ramp = AttackRamp(&clock);
  SteadyThenOutage(&clock, ramp.get());
  const double base = ramp->base_rate();
  ASSERT_GT(base, 900);
  for (int flap = 0; flap < 5; ++flap) {
    clock.Advance(absl::Seconds(5));
    for (int i = 0; i < 2000; ++i) {  // 2 s of ramp at 1,000 requests/s
      ramp->Admit(true);
      clock.Advance(absl::Milliseconds(1));
    }
    ramp->Admit(false);  // reopens mid-ramp
    EXPECT_EQ(ramp->base_rate(), base) << "flap " << flap;
  }
  // Now a full ramp, counting each second's admissions. It ends half a
  // period after its last refusal past the period, so by second 20.
  for (int sec = 0; sec < 20; ++sec) {
    uint64_t admitted = 0;
    for (int i = 0; i < 1000; ++i) {
      admitted += ramp->Admit(true) ? 1 : 0;
      clock.Advance(absl::Milliseconds(1));
    }
    if (sec < 9) {
      const double share = 0.1 + 0.9 * (sec + 1) / 10.0;
      EXPECT_LE(admitted, base * share + base * 0.05 + 2) << "second " << sec;
      EXPECT_GE(admitted, base * (share - 0.1) * 0.9) << "second " << sec;
    }
    if (sec == 5) {  // a step back of an hour, and the clock stays behind
      clock.Set(clock.Now() - absl::Hours(1));
      EXPECT_EQ(ramp->state(), RampState::kRamping);
      uint64_t during = 0;
      for (int i = 0; i < 100; ++i) {
        during += ramp->Admit(true) ? 1 : 0;
        clock.Advance(absl::Milliseconds(1));
      }
      EXPECT_GT(during, 0u);
      EXPECT_EQ(ramp->state(), RampState::kRamping);
    }
  }
  EXPECT_EQ(ramp->state(), RampState::kSteady);
  // A clock at infinity: no crash, and a decision either way.
  clock.Set(absl::InfiniteFuture());
  ramp->Admit(false);
  (void)ramp->Admit(true);
  (void)ramp->Admit(true);
  (void)ramp->stats();
}

TEST(AttackLastGoodTest,
     TheCoalescerNeverCachesAnErrorAndNeverAnswersOkForOne) {
  auto c = Coalescer<uint64_t, int>::Create(CoalescerSettings{}).value();
  int calls = 0;
  auto r = c->Do(1, absl::Seconds(1), [&]() -> absl::StatusOr<int> {
    ++calls;
    return absl::UnavailableError("down");
  });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  r = c->Do(1, absl::Seconds(1), [&]() -> absl::StatusOr<int> {
    ++calls;
    throw std::runtime_error("boom");
  });
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(IsCallableException(r.status()));
  r = c->Do(1, absl::Seconds(1), [&] {
    ++calls;
    return 5;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(c->inflight(), 0u);
}

// With a hand-cranked executor: a waiter that left at its budget does not
// stop the call from filling the cache, and a failed refresh is never
// cached, so the next request calls again.
TEST(AttackLastGoodTest, ALeftWaiterStillFillsTheCacheAndAFailureIsNotKept) {
  AttackRig rig(/*with_ramp=*/false, /*with_coalescer=*/true);
  LadderSettings s;
  s.coalesce_wait = absl::ZeroDuration();
  auto ladder = rig.Make(s);
  auto f = ladder->Get(5, "", rig.store.Get(5));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tier(), FallbackTier::kGlobal);
  EXPECT_EQ(f->trace().ReasonFor("features"), DegradeReason::kTimeout);
  auto joined = ladder->Get(5, "", rig.store.Get(5));  // joins, leaves at once
  ASSERT_TRUE(joined.ok());
  ASSERT_EQ(rig.executor.queue.size(), 1u);
  rig.executor.RunAll();
  EXPECT_EQ(rig.store.calls, 1u);
  ASSERT_NE(rig.cache->FindStale(5).value, nullptr);
  rig.store.up = false;
  (void)ladder->Get(5, "", rig.store.Get(5));
  rig.executor.RunAll();
  (void)ladder->Get(5, "", rig.store.Get(5));
  EXPECT_EQ(rig.executor.queue.size(), 1u) << "a failure must not be kept";
  rig.executor.RunAll();
  EXPECT_THAT(*rig.cache->FindStale(5).value, ElementsAre(5, 1));
}

// A reload with another dimension, an empty vector, a non-finite number or
// no segments never replaces the set serving.
TEST(AttackLastGoodTest, ABadSegmentReloadNeverReplacesTheServingSet) {
  SegmentDefaultsOptions o;
  o.metrics = NoTelemetry();
  auto seg = SegmentDefaults::Create(o).value();
  ASSERT_TRUE(seg->Set({{"US", {1, 2, 3}}, {"DE", {4, 5, 6}}}).ok());
  EXPECT_FALSE(seg->Set({{"US", {1, 2}}}).ok());
  EXPECT_FALSE(seg->Set({{"US", {}}}).ok());
  EXPECT_FALSE(seg->Set({{"US", {1, std::nanf(""), 3}}}).ok());
  EXPECT_FALSE(seg->Set({{"US", {1, 2, 3}}, {"", {1, 2, 3}}}).ok());
  EXPECT_FALSE(seg->Set({}).ok());
  EXPECT_FALSE(
      ParseSegmentDefaults(R"({"dimension": 3, "segments": {}})").ok());
  EXPECT_FALSE(
      ParseSegmentDefaults(R"({"dimension": 1, "segments": {"a": [1e39]}})")
          .ok());
  EXPECT_FALSE(ParseSegmentDefaults(
                   R"({"dimension": 1, "segments": {"a": [1], "a": [2]}})")
                   .ok());
  ASSERT_NE(seg->Find("US"), nullptr);
  EXPECT_THAT(*seg->Find("US"), ElementsAre(1, 2, 3));
  EXPECT_EQ(seg->Find(""), nullptr);
  EXPECT_EQ(seg->Find(std::string(1 << 20, 'x')), nullptr);
}

// Every key in one bucket: each still gets its own value, never a
// neighbour's.
struct OneBucketHash {
  std::size_t operator()(uint64_t) const { return 42; }
};

TEST(AttackLastGoodTest, KeysThatAllCollideStillGetTheirOwnValues) {
  using CollidingLadder = Ladder<uint64_t, Features, OneBucketHash>;
  FakeClock clock;
  BreakerSettings b;
  b.clock = &clock;
  b.metrics = NoTelemetry();
  CircuitBreaker<Features> breaker(b);
  LastGoodCacheSettings c;
  c.max_bytes = 16 << 20;
  c.max_entries = 1000;
  c.clock = &clock;
  c.metrics = NoTelemetry();
  auto cache = CollidingLadder::Cache::Create(c).value();
  CoalescerSettings cs;
  cs.metrics = NoTelemetry();
  auto coalescer = CollidingLadder::Shared::Create(cs).value();
  CollidingLadder::Rungs rungs;
  rungs.breaker = &breaker;
  rungs.cache = cache.get();
  rungs.coalescer = coalescer.get();
  LadderSettings s;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto ladder = CollidingLadder::Create(s, rungs).value();
  AttackStore store;
  for (uint64_t k = 0; k < 300; ++k) {
    ASSERT_TRUE(ladder->Get(k, store.Get(k)).ok());
  }
  store.up = false;
  breaker.ForceOpen();
  // One shard holds them all, so most were evicted (a shard's share of
  // max_entries): those left must be the right ones.
  int served = 0;
  for (uint64_t k = 0; k < 300; ++k) {
    auto f = ladder->Get(k, store.Get(k));
    if (!f.ok()) {
      EXPECT_TRUE(IsBreakerOpen(f.status())) << f.status();
      continue;
    }
    ASSERT_TRUE(f->is_stale()) << k;
    ASSERT_EQ((*f->value())[0], static_cast<float>(k));
    ++served;
  }
  EXPECT_GT(served, 0);
  std::printf("colliding keys still cached: %d of 300 (max_entries 1000)\n",
              served);
}

// The longest trace the tag can make (every slot a maximal stage name, the
// longest reason and tier) fits the encoding bound and decodes back.
TEST(AttackLastGoodTest, TheLongestTieredTraceFitsAndRoundTrips) {
  DegradationTrace t;
  for (std::size_t i = 0; i < DegradationTrace::kCapacity + 3; ++i) {
    std::string stage(kMaxStageNameLength, 'a');
    stage[0] = static_cast<char>('a' + i % 26);
    stage[1] = static_cast<char>('a' + i / 26);
    t.Add(stage, DegradeReason::kRateLimited, FallbackTier::kStaleOld);
  }
  const std::string text = t.Encode();
  EXPECT_LE(text.size(), DegradationTrace::kMaxEncodedSize);
  auto back = DegradationTrace::Decode(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(t.dropped(), 3u);
  // A tier outside the enumeration is dropped, not encoded.
  DegradationTrace u;
  u.Add("features", DegradeReason::kError, static_cast<FallbackTier>(200));
  EXPECT_EQ(u.Encode(), "v1;features=error");
}

// Settings at the edges: non-finite, negative, NaN, zero, huge.
TEST(AttackLastGoodTest, RampAndLadderRefuseSettingsAtTheEdges) {
  FakeClock clock;
  const auto ramp_with = [&](auto edit) {
    RecoveryRampSettings r;
    r.clock = &clock;
    r.metrics = NoTelemetry();
    edit(r);
    return RecoveryRamp::Create(r).status();
  };
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(ramp_with([&](auto& r) { r.start_share = nan; }).ok());
  EXPECT_FALSE(ramp_with([&](auto& r) { r.start_share = 0; }).ok());
  EXPECT_FALSE(ramp_with([&](auto& r) { r.min_rate = nan; }).ok());
  EXPECT_FALSE(ramp_with([&](auto& r) { r.min_rate = inf; }).ok());
  EXPECT_FALSE(
      ramp_with([&](auto& r) { r.period = absl::InfiniteDuration(); }).ok());
  EXPECT_FALSE(
      ramp_with([&](auto& r) { r.burst = -absl::InfiniteDuration(); }).ok());
  EXPECT_FALSE(
      ramp_with([&](auto& r) { r.rate_window = absl::Nanoseconds(1); }).ok());
  clock.Set(absl::InfiniteFuture());
  EXPECT_EQ(ramp_with([](auto&) {}).code(),
            absl::StatusCode::kFailedPrecondition);
  AttackRig rig;
  for (auto edit : std::vector<std::function<void(LadderSettings&)>>{
           [](LadderSettings& s) { s.fresh_for = absl::InfiniteDuration(); },
           [](LadderSettings& s) { s.coalesce_wait = -absl::Nanoseconds(1); },
           [](LadderSettings& s) {
             s.revalidate_for = absl::Minutes(1);  // no fresh_for
           },
           [](LadderSettings& s) { s.name = "bad name;="; }}) {
    LadderSettings s;
    s.metrics = NoTelemetry();
    edit(s);
    FeatureLadder::Rungs rungs;
    rungs.breaker = rig.breaker.get();
    rungs.cache = rig.cache.get();
    auto l = FeatureLadder::Create(s, rungs);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
