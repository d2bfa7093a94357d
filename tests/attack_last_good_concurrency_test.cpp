// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An adversarial review of the last-known-good tier with threads: the
// coalescer's waiters under a hung or failing shared call, a coalescer
// destroyed with its call in flight, segment defaults reloaded under
// readers, and the whole ladder under a flapping store on many threads.
// DISABLED_ tests show a defect the review found (severity and fix in the
// comment above); they fail on the code as reviewed. The enabled ones are
// attacks the code withstood.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/coalesce.hpp"
#include "degrade/deadline.hpp"
#include "degrade/ladder.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using Features = std::vector<float>;
using FeatureLadder = Ladder<uint64_t, Features>;

struct ThreadedRig {
  ThreadedRig() {
    BreakerSettings b;
    b.name = "features";
    b.clock = &clock;
    b.metrics = NoTelemetry();
    b.ready_to_trip = trip::ConsecutiveFailures(5);
    b.timeout = absl::Milliseconds(200);
    breaker = std::make_unique<CircuitBreaker<Features>>(b);
    LastGoodCacheSettings c;
    c.name = "features";
    c.max_bytes = 16 << 20;
    c.max_entries = 10'000;
    c.stale_if_error = absl::Hours(1);
    c.max_age = absl::Hours(24);
    c.clock = &clock;
    c.metrics = NoTelemetry();
    cache = LastGoodCache<uint64_t, Features>::Create(c).value();
    pool = std::make_unique<ThreadPool>(2, 4096);
    CoalescerSettings cs;
    cs.name = "features";
    cs.executor = pool.get();
    cs.metrics = NoTelemetry();
    coalescer = FeatureLadder::Shared::Create(cs).value();
  }

  std::unique_ptr<FeatureLadder> Make(LadderSettings s) {
    s.clock = &clock;
    s.metrics = NoTelemetry();
    FeatureLadder::Rungs rungs;
    rungs.breaker = breaker.get();
    rungs.cache = cache.get();
    rungs.coalescer = coalescer.get();
    rungs.segment = [us = us](absl::string_view seg) -> FeatureLadder::Value {
      return seg == "US" ? us : nullptr;
    };
    rungs.global = [g = global] { return g; };
    return FeatureLadder::Create(s, rungs).value();
  }

  FakeClock clock;
  std::unique_ptr<CircuitBreaker<Features>> breaker;
  std::unique_ptr<LastGoodCache<uint64_t, Features>> cache;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<FeatureLadder::Shared> coalescer;
  FeatureLadder::Value us = std::make_shared<const Features>(Features{-1, -1});
  FeatureLadder::Value global =
      std::make_shared<const Features>(Features{-2, -2});
};

// Finding: with an executor, the request that starts the call waits for
// it only `coalesce_wait`, a setting documented as how long a request
// waits for a call *another* request made. Severity: Medium. Get() takes
// no deadline, so the leader's budget is coalesce_wait (100 ms by default)
// rather than the stage's, as the issue asks ("the leader runs under the
// stage's deadline"): a healthy store answering in 40 ms, inside a 200 ms
// stage budget, is never served fresh with coalesce_wait = 20 ms; every
// request is tagged a timeout and served stale or a default, and with
// coalesce_wait = 0 ("never wait") no request is ever fresh. Fix: a Get()
// overload taking the stage's Deadline; the leader waits until it, the
// joiners until min(it, now + coalesce_wait).
TEST(AttackLastGoodConcurrencyTest,
     TheLeaderWaitsForItsOwnCallNotJustCoalesceWait) {
  ThreadedRig rig;
  LadderSettings s;
  // "Never wait" for a call another request made: the request that starts
  // the call still waits for it (call_wait), however long the executor
  // takes to run it. Before the fix it gave up at once, every time.
  s.coalesce_wait = absl::ZeroDuration();
  s.call_wait = absl::Hours(1);
  auto ladder = rig.Make(s);
  int fresh = 0;
  for (uint64_t k = 0; k < 5; ++k) {
    auto f = ladder->Get(k, "", [k]() -> absl::StatusOr<Features> {
      return Features{static_cast<float>(k), 1};
    });
    ASSERT_TRUE(f.ok());
    if (!f->degraded()) ++fresh;
  }
  rig.pool.reset();
  EXPECT_EQ(fresh, 5) << "a healthy store was served fresh " << fresh
                      << " times in 5";
}

// Many waiters on one key whose call fails: exactly one call, every waiter
// gets the failure (never OK, never a default), and the failure is not
// kept: the next request calls again.
TEST(AttackLastGoodConcurrencyTest, AFailedSharedCallFailsEveryWaiterOnce) {
  ThreadPool pool(1);
  CoalescerSettings cs;
  cs.executor = &pool;
  cs.metrics = NoTelemetry();
  auto c = Coalescer<uint64_t, int>::Create(cs).value();
  std::atomic<int> calls{0};
  auto release = std::make_shared<absl::Notification>();
  constexpr int kWaiters = 32;
  std::atomic<int> ok{0}, unavailable{0}, other{0}, started{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      started.fetch_add(1);
      auto r = c->Do(
          1, absl::Seconds(60), [&calls, release]() -> absl::StatusOr<int> {
            calls.fetch_add(1);
            release->WaitForNotificationWithTimeout(absl::Seconds(30));
            return absl::UnavailableError("store down");
          });
      if (r.ok()) {
        ok.fetch_add(1);
      } else if (r.status().code() == absl::StatusCode::kUnavailable) {
        unavailable.fetch_add(1);
      } else {
        other.fetch_add(1);
      }
    });
  }
  while (started.load() < kWaiters || c->stats().joined + 1 < kWaiters) {
    std::this_thread::yield();
  }
  release->Notify();
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(ok.load(), 0);
  EXPECT_EQ(unavailable.load(), kWaiters);
  EXPECT_EQ(other.load(), 0);
  auto again = c->Do(1, absl::Seconds(60), [&calls] {
    calls.fetch_add(1);
    return 7;
  });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 7);
  EXPECT_EQ(calls.load(), 2);
}

// A hung call: every waiter leaves at its own budget with
// DEADLINE_EXCEEDED; none waits for the call. The bound is loose (the
// machine is shared); the lateness is printed.
TEST(AttackLastGoodConcurrencyTest,
     WaitersLeaveAtTheirOwnBudgetWhileTheCallHangs) {
  ThreadPool pool(1);
  CoalescerSettings cs;
  cs.executor = &pool;
  cs.metrics = NoTelemetry();
  auto c = Coalescer<uint64_t, int>::Create(cs).value();
  auto release = std::make_shared<absl::Notification>();
  constexpr int kWaiters = 16;
  std::vector<absl::Duration> late(kWaiters);
  std::vector<char> timed_out(kWaiters);  // not vector<bool>: one byte each
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      const absl::Duration budget = absl::Milliseconds(5 + i);
      const absl::Time start = absl::Now();
      auto r = c->DoWithRole(7, budget, [release]() -> absl::StatusOr<int> {
        release->WaitForNotificationWithTimeout(absl::Seconds(30));
        return 1;
      });
      late[i] = absl::Now() - start - budget;
      timed_out[i] = r.timed_out && r.result.status().code() ==
                                        absl::StatusCode::kDeadlineExceeded;
    });
  }
  for (auto& t : threads) t.join();
  release->Notify();
  absl::Duration worst = absl::ZeroDuration();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_TRUE(timed_out[i]) << i;
    worst = std::max(worst, late[i]);
  }
  EXPECT_LT(worst, absl::Seconds(1));
  std::printf("worst lateness past budget: %s\n",
              absl::FormatDuration(worst).c_str());
}

// The coalescer destroyed while its call is in flight: the call ends later
// harmlessly and its hook never runs after the destructor returned.
TEST(AttackLastGoodConcurrencyTest, ACoalescerDestroyedMidCallLetsTheCallEnd) {
  auto pool = std::make_unique<ThreadPool>(1);
  auto hook_after = std::make_shared<std::atomic<int>>(0);
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  CoalescerSettings cs;
  cs.executor = pool.get();
  cs.metrics = NoTelemetry();
  auto c =
      Coalescer<uint64_t, int>::Create(cs, [hook_after, destroyed](
                                               const uint64_t&,
                                               const absl::StatusOr<int>&) {
        if (destroyed->load()) hook_after->fetch_add(1);
      }).value();
  auto release = std::make_shared<absl::Notification>();
  auto ran = std::make_shared<std::atomic<int>>(0);
  for (uint64_t k = 0; k < 8; ++k) {
    (void)c->Do(k, absl::ZeroDuration(),
                [release, ran]() -> absl::StatusOr<int> {
                  release->WaitForNotificationWithTimeout(absl::Seconds(30));
                  ran->fetch_add(1);
                  return 1;
                });
  }
  c.reset();
  destroyed->store(true);
  release->Notify();
  pool.reset();  // runs or drops what is queued, joins
  EXPECT_EQ(hook_after->load(), 0);
  EXPECT_GE(ran->load(), 1);
}

// Reloads racing lookups: a reader sees one whole set, never a mix, and
// a pointer it holds stays valid and unchanged across later reloads.
TEST(AttackLastGoodConcurrencyTest, SegmentReloadsRacingLookupsNeverMix) {
  SegmentDefaultsOptions o;
  o.metrics = NoTelemetry();
  auto seg = SegmentDefaults::Create(o).value();
  const auto set_of = [](float g) {
    SegmentVectors v;
    for (int i = 0; i < 50; ++i) {
      v[std::to_string(i)] = std::vector<float>(16, g);
    }
    return v;
  };
  ASSERT_TRUE(seg->Set(set_of(0)).ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> mixed{0}, missing{0}, changed{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        auto a = seg->Find("7");
        if (a == nullptr) {
          missing.fetch_add(1);
          continue;
        }
        const float g = (*a)[0];
        for (float x : *a) {
          if (x != g) mixed.fetch_add(1);
        }
        auto b = seg->Find("8");
        if (b == nullptr) missing.fetch_add(1);
        if ((*a)[15] != g) changed.fetch_add(1);
      }
    });
  }
  for (int g = 1; g < 400; ++g) {
    ASSERT_TRUE(seg->Set(set_of(static_cast<float>(g))).ok());
    if (g % 7 == 0) {
      EXPECT_FALSE(seg->Set({{"7", {1, 2}}}).ok());  // refused mid-race
    }
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(mixed.load(), 0u);
  EXPECT_EQ(missing.load(), 0u);
  EXPECT_EQ(changed.load(), 0u);
  EXPECT_EQ((*seg->Find("7"))[0], 399.0f);
}

// The whole ladder on four threads with a flapping store and a clock moved
// by the threads themselves: every answer is the key's own value or a
// default, its tier matches what was served, and the stats add up.
TEST(AttackLastGoodConcurrencyTest, TheLadderUnderAFlappingStoreOnManyThreads) {
  ThreadedRig rig;
  LadderSettings s;
  s.coalesce_wait = absl::Milliseconds(50);
  auto ladder = rig.Make(s);
  auto up = std::make_shared<std::atomic<bool>>(true);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1500;
  std::atomic<uint64_t> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t k = static_cast<uint64_t>((i * 7 + t) % 64);
        if (t == 0 && i % 100 == 0) up->store(!up->load());
        auto f = ladder->Get(k, (k % 2) ? "US" : "",
                             [k, up]() -> absl::StatusOr<Features> {
                               if (!up->load()) {
                                 return absl::UnavailableError("down");
                               }
                               return Features{static_cast<float>(k), 1};
                             });
        rig.clock.Advance(absl::Milliseconds(1));
        if (!f.ok()) {
          errors.fetch_add(1);
          continue;
        }
        const Features& v = *f->value();
        bool right = false;
        if (!f->degraded() || f->is_stale()) {
          right = v.size() == 2 && v[0] == static_cast<float>(k);
        } else if (f->tier() == FallbackTier::kSegment) {
          right = f->value() == rig.us && k % 2 == 1;
        } else if (f->tier() == FallbackTier::kGlobal) {
          right = f->value() == rig.global;
        }
        if (!right) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  rig.pool.reset();  // the calls use the ladder: finished before it goes
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(errors.load(), 0u);
  const LadderStats st = ladder->stats();
  EXPECT_EQ(st.requests(), static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(rig.coalescer->inflight(), 0u);
}

// The ramp on four threads, with a fifth flapping the breaker and moving
// the clock: transitions race admissions. The base rate frozen at the
// first outage stays, and over the flaps and a whole ramp
// the threads together are admitted no more than the ramp's rate allows.
TEST(AttackLastGoodConcurrencyTest,
     TheRampUnderRacingTransitionsKeepsItsBound) {
  FakeClock clock;
  RecoveryRampSettings r;
  r.name = "features";
  r.period = absl::Seconds(1);
  r.min_rate = 100;
  r.clock = &clock;
  r.metrics = NoTelemetry();
  auto ramp = RecoveryRamp::Create(r).value();
  for (int i = 0; i < 1000; ++i) {  // 1,000 calls a second before
    ramp->Admit(true);
    clock.Advance(absl::Milliseconds(1));
  }
  std::atomic<bool> closed{false};  // the threads start in the outage
  absl::Mutex flip;                 // writers first: the flips are not starved
  const auto set_closed = [&](bool c) {
    absl::MutexLock l(&flip);
    closed.store(c);
  };
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> admitted_while_ramping{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        // The reading and the report under one lock. Without it a thread
        // that read "open", was descheduled past the ramp's end and then
        // called Admit(false) started a new outage: under ThreadSanitizer
        // the run ended in kOutage with the base re-measured at 655/s
        // instead of 1,000/s. That is the API's race (Admit takes the
        // caller's one reading of the breaker, with no generation to tell
        // a stale one), noted in the review; this test is about the
        // ramp's own transitions racing its admissions.
        absl::ReaderMutexLock l(&flip);
        const bool c = closed.load();
        if (ramp->Admit(c) && c && ramp->state() == RampState::kRamping) {
          admitted_while_ramping.fetch_add(1);
        }
      }
    });
  }
  // Flap: 20 outages of 50 ms, 50 ms of ramp between, on the fake clock;
  // each phase lasts until a thread has seen it.
  const auto until = [&](RampState want) {
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (ramp->state() != want && absl::Now() < give_up) {
      std::this_thread::yield();
    }
  };
  double base = 0;
  for (int flap = 0; flap < 20; ++flap) {
    set_closed(false);
    until(RampState::kOutage);
    if (flap == 0) base = ramp->base_rate();
    clock.Advance(absl::Milliseconds(50));
    set_closed(true);
    until(RampState::kRamping);
    clock.Advance(absl::Milliseconds(50));
  }
  const RecoveryRampStats mid = ramp->stats();
  // One full ramp, the clock moved in 10 ms steps. The threads ask far
  // more than the old rate, so past its period the ramp keeps doubling
  // until it refuses nothing for half a period: at most about 40 periods.
  // The bound below is for the ramp's period itself.
  for (int i = 0; i < 100; ++i) {
    clock.Advance(absl::Milliseconds(10));
    std::this_thread::yield();
  }
  const uint64_t within_period = admitted_while_ramping.load();
  for (int i = 0; i < 6000 && ramp->state() != RampState::kSteady; ++i) {
    clock.Advance(absl::Milliseconds(10));
    std::this_thread::yield();
  }
  until(RampState::kSteady);  // the next admission after the end moves it
  stop.store(true);
  for (auto& t : threads) t.join();
  const RecoveryRampStats end = ramp->stats();
  EXPECT_EQ(end.state, RampState::kSteady);
  EXPECT_EQ(mid.outages, 20u);
  EXPECT_GT(base, 900);
  EXPECT_LT(base, 1100);
  EXPECT_EQ(ramp->base_rate(), base) << "flaps mid-ramp keep the base";
  // 20 flaps of 50 ms at under 15% of 1,000/s (about 15 each with the
  // burst) and a 1 s ramp averaging 55% (about 600 with the burst): a
  // lost compare-and-swap would admit the spinning threads' millions.
  EXPECT_LT(within_period, 1200u) << "admitted " << within_period;
  std::printf(
      "ramp under racing flaps: %llu admitted while ramping, %llu "
      "outages seen for 20 flaps\n",
      static_cast<unsigned long long>(within_period),
      static_cast<unsigned long long>(mid.outages));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
