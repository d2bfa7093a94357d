// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A hostile review of the reliability fixes: the concurrency limiter's
// recovery (re-measurements that saturation can not starve, a no-load
// latency that follows lows over long_window windows, a re-measurement
// window counted in arrival order), a control or ForceLevel on a manager
// without a config, retries and the caller's deadline, and executors whose
// Submit() throws. Every scenario runs on a FakeClock except the one
// concurrency test, which has no clock at all.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/hedge.hpp"
#include "degrade/retry.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gtest/gtest.h"
#include "limiter_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

// ---- Limiter helpers (limiter_test_util.hpp) ------------------------------

using namespace limiter_test;  // NOLINT: the shared helpers
using Sim = Simulation;

// Latency = base up to *c in flight, growing linearly above (c workers
// with a queue in front).
std::function<absl::Duration(int)> Workers(const int* c,
                                           const absl::Duration* base) {
  return [c, base](int n) { return n <= *c ? *base : *base * n / *c; };
}

// Acquires and reports `latency` one call at a time (in flight never above
// one: nothing is refused, so a re-measurement does not hold admissions)
// until a re-measurement is under way. False if none began in `tries`.
bool ReportUntilReMeasuring(ConcurrencyLimiter* l, absl::Duration latency,
                            int tries) {
  for (int i = 0; i < tries; ++i) {
    if (l->stats().re_measuring) return true;
    std::optional<LimiterPermit> p = l->TryAcquire();
    if (p.has_value()) p->Success(latency);
  }
  return l->stats().re_measuring;
}

class LimiterAttack : public ::testing::TestWithParam<LimitAlgorithm> {};

// A re-measurement measures the first window_samples permits admitted
// after it began, and nothing else. If one of them is a long-lived call
// (a stream, a long poll, a request stuck on a dead backend), its window
// can not fill until that call reports: every other permit of the
// re-measurement carries an epoch no window accepts, so no sample counts.
// With the default (non-holding) re-measurement nothing abandons it: the
// limit is frozen, and an overload that begins meanwhile (every call
// Dropped) never lowers it.
TEST_P(LimiterAttack,
       ALongLivedPermitInTheReMeasurementWindowDoesNotFreezeTheLimit) {
  LimiterSettings s = Base(GetParam(), 1, 50, 1000);  // the defaults
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  ASSERT_TRUE(
      ReportUntilReMeasuring(limiter.get(), absl::Milliseconds(10), 100'000))
      << "no re-measurement began";
  LimiterPermit stream = *limiter->TryAcquire();  // one of its window
  const int before = limiter->limit();
  // Overload: every call times out.
  for (int i = 0; i < 100'000; ++i) {
    std::optional<LimiterPermit> p = limiter->TryAcquire();
    if (p.has_value()) p->Dropped();
  }
  EXPECT_LT(limiter->limit(), before)
      << "100000 Dropped() calls left the limit at " << limiter->limit()
      << "; re-measuring: " << limiter->stats().re_measuring;
  stream.Success(absl::Milliseconds(10));
}

// The same with the holding re-measurement (the one a saturated limiter
// gets whatever the settings): its refusal budget must end it.
TEST_P(LimiterAttack, ALongLivedPermitInAHoldingReMeasurementIsAbandoned) {
  LimiterSettings s = Base(GetParam(), 1, 50, 1000);
  s.probe_holds_admissions = true;
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  ASSERT_TRUE(
      ReportUntilReMeasuring(limiter.get(), absl::Milliseconds(10), 100'000));
  LimiterPermit stream = *limiter->TryAcquire();
  const int before = limiter->limit();
  // Open loop: 20 arrivals per round trip, each admitted call times out.
  for (int round = 0; round < 100'000; ++round) {
    std::vector<LimiterPermit> out;
    for (int i = 0; i < 20; ++i) {
      std::optional<LimiterPermit> p = limiter->TryAcquire();
      if (p.has_value()) out.push_back(std::move(*p));
    }
    for (LimiterPermit& q : out) q.Dropped();
  }
  EXPECT_LT(limiter->limit(), before) << "re-measuring: "
                                      << limiter->stats().re_measuring;
  stream.Success(absl::Milliseconds(10));
}

// A re-measurement whose calls all end without a sample (Ignore(), a clock
// stepped back, a sub-microsecond latency) gives their slots back: the
// next arrivals measure instead, and it ends.
TEST_P(LimiterAttack, AReMeasurementOfIgnoredOrBackwardsSamplesStillEnds) {
  for (int how = 0; how < 3; ++how) {
    SCOPED_TRACE(how);
    LimiterSettings s = Base(GetParam(), 1, 50, 1000);
    auto limiter = Make(s);
    ASSERT_NE(limiter, nullptr);
    ASSERT_TRUE(ReportUntilReMeasuring(limiter.get(), absl::Milliseconds(10),
                                       100'000));
    std::vector<LimiterPermit> window;
    for (int i = 0; i < 40; ++i) window.push_back(*limiter->TryAcquire());
    for (LimiterPermit& p : window) {
      if (how == 0) p.Ignore();
      if (how == 1) p.Success(-absl::Milliseconds(3));
      if (how == 2) p.Success(absl::Nanoseconds(500));
    }
    for (int i = 0; i < 10 && limiter->stats().re_measuring; ++i) {
      limiter->TryAcquire()->Success(absl::Milliseconds(10));
    }
    EXPECT_FALSE(limiter->stats().re_measuring);
    EXPECT_EQ(limiter->stats().no_load_latency, absl::Milliseconds(10));
  }
}

// The documented repair for a re-measurement's call that ends without a
// sample: "an ignored permit gives its slot back". But every arrival while
// the re-measurement runs counts against its window, not only the first
// window_samples, so once more than window_samples have arrived (any load
// above a trickle) the slot given back goes to nobody: the next arrival
// already counts past the window. One client cancel among the first ten
// calls, and the re-measurement (and the limit) never ends.
TEST_P(LimiterAttack,
       OneCancelledCallAmongTheFirstWindowDoesNotWedgeTheReMeasurement) {
  LimiterSettings s = Base(GetParam(), 1, 50, 1000);  // the defaults
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  ASSERT_TRUE(
      ReportUntilReMeasuring(limiter.get(), absl::Milliseconds(10), 100'000));
  std::vector<LimiterPermit> window;
  for (int i = 0; i < s.window_samples; ++i) {
    window.push_back(*limiter->TryAcquire());
  }
  LimiterPermit later = *limiter->TryAcquire();  // the 11th arrival
  window[0].Ignore();                            // a client cancel
  for (int i = 1; i < s.window_samples; ++i) {
    window[i].Success(absl::Milliseconds(10));
  }
  later.Success(absl::Milliseconds(10));
  int calls = 0;
  while (limiter->stats().re_measuring && calls < 100'000) {
    limiter->TryAcquire()->Success(absl::Milliseconds(10));
    ++calls;
  }
  EXPECT_FALSE(limiter->stats().re_measuring)
      << "still re-measuring after " << calls << " more calls";
  // And while it is wedged nothing moves the limit: an overload now.
  const int before = limiter->limit();
  for (int i = 0; i < 10'000; ++i) limiter->TryAcquire()->Dropped();
  EXPECT_LT(limiter->limit(), before);
}

// A window of the re-measurement in which most calls timed out is an
// overload, not a no-load latency: it must not set the estimate from the
// few that answered, nor skip the decrease an ordinary window would make.
TEST_P(LimiterAttack, DropsDuringAReMeasurementStillCutTheLimit) {
  LimiterSettings s = Base(GetParam(), 1, 50, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  ASSERT_TRUE(
      ReportUntilReMeasuring(limiter.get(), absl::Milliseconds(10), 100'000));
  const int before = limiter->limit();
  std::vector<LimiterPermit> window;
  for (int i = 0; i < s.window_samples; ++i) {
    window.push_back(*limiter->TryAcquire());
  }
  for (int i = 0; i < s.window_samples; ++i) {
    if (i == 0) {
      window[i].Success(absl::Microseconds(50));  // the one that answered
    } else {
      window[i].Dropped();
    }
  }
  EXPECT_FALSE(limiter->stats().re_measuring);
  EXPECT_LT(limiter->limit(), before) << "9 of 10 calls timed out";
  EXPECT_NE(limiter->stats().no_load_latency, absl::Microseconds(50))
      << "one answer among nine timeouts became the no-load latency";
}

// A server that really got ten times faster (100 ms -> 10 ms, same 20
// workers), offered three times its new capacity: the limit must stop
// queueing at the old latency (Vegas would read 100 ms as no queue, and
// Gradient2 tolerates 1.5x its long RTT) within a couple of minutes.
TEST_P(LimiterAttack, AServerTenTimesFasterIsUsedWithinTwoMinutes) {
  LimiterSettings s = Base(GetParam(), 1, 20, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  FakeClock clock;
  int c = 20;
  absl::Duration base = absl::Milliseconds(100);
  Sim sim(limiter.get(), &clock, 3 * c / 0.010);
  sim.latency = Workers(&c, &base);
  sim.Run(absl::Minutes(1));
  const Sim::Window warm = sim.Take();
  base = absl::Milliseconds(10);
  sim.Run(absl::Minutes(2));
  (void)sim.Take();
  sim.Run(absl::Minutes(1));
  const Sim::Window w = sim.Take();
  EXPECT_LT(w.mean_latency, absl::Milliseconds(25))
      << "admitted calls queue at " << w.mean_latency << " on a 10 ms server"
      << "; limit " << limiter->limit() << " (before: mean "
      << warm.mean_latency << "), no-load estimate "
      << limiter->stats().no_load_latency;
  EXPECT_LT(limiter->stats().no_load_latency, absl::Milliseconds(15));
}

// Sustained true overload (3x the capacity for half an hour): the holding
// re-measurements that saturation now triggers must not let the limit
// creep above the server's concurrency band.
TEST_P(LimiterAttack, HalfAnHourOfTrueOverloadDoesNotCreepUp) {
  LimiterSettings s = Base(GetParam(), 1, 20, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  FakeClock clock;
  int c = 40;
  absl::Duration base = absl::Milliseconds(100);
  Sim sim(limiter.get(), &clock, 3 * c / 0.100);
  sim.latency = Workers(&c, &base);
  sim.Run(absl::Minutes(5));
  const Sim::Window early = sim.Take();
  sim.Run(absl::Minutes(20));
  (void)sim.Take();
  sim.Run(absl::Minutes(5));
  const Sim::Window late = sim.Take();
  const double hi = GetParam() == LimitAlgorithm::kGradient2
                        ? 1.5 * c + 4 + 0.1 * c
                        : c + 6 * std::log10(2.0 * c) + 1;
  EXPECT_LE(late.max_limit, hi * 1.1)
      << "early max " << early.max_limit << ", late max " << late.max_limit;
  EXPECT_LT(late.mean_latency, base * 1.8) << late.mean_latency;
  EXPECT_GT(late.refused, 0.5);  // it is overload: 2/3 must be refused
  // The holds must not cost the server its throughput: capacity is
  // c / base = 400 calls a second.
  EXPECT_GT(static_cast<double>(late.served), 0.9 * 400 * 300)
      << "served " << late.served << " in 5 minutes";
}

// Production traffic has client cancels. With 2% of calls cancelled
// (Ignore()d) at 80% load, a re-measurement soon has one among its first
// window_samples calls while later arrivals have already been counted; it
// never ends, and the limit stops following the server. Then the server's
// capacity halves (offered load 1.6x): the limit must follow it, as it
// does without cancels (the convergence tests).
TEST_P(LimiterAttack, ClientCancelsDoNotStopTheLimitFollowingTheServer) {
  LimiterSettings s = Base(GetParam(), 1, 20, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  FakeClock clock;
  int c = 50;
  absl::Duration base = absl::Milliseconds(100);
  Sim sim(limiter.get(), &clock, 0.8 * c / 0.100);
  sim.latency = Workers(&c, &base);
  sim.cancel_every = 50;
  sim.Run(absl::Minutes(10));
  const int before = limiter->limit();
  c = 25;
  sim.Run(absl::Minutes(3));
  (void)sim.Take();
  sim.Run(absl::Minutes(1));
  const Sim::Window w = sim.Take();
  const double hi = GetParam() == LimitAlgorithm::kGradient2
                        ? 1.5 * c + 4 + 0.1 * c
                        : c + 6 * std::log10(2.0 * c) + 1;
  EXPECT_LE(limiter->limit(), hi)
      << "limit " << before << " before the halving, " << limiter->limit()
      << " after; re-measuring: " << limiter->stats().re_measuring;
  EXPECT_LT(w.mean_latency, base * 2) << w.mean_latency;
}

// The latency steps up and down, again and again (a noisy neighbour, a GC
// regime, a cache warming and cooling): after each step the limit must
// serve the 30 in flight offered to 100 workers within two minutes.
TEST_P(LimiterAttack, LatencyStepsUpAndDownNeverStickTheLimit) {
  LimiterSettings s = Base(GetParam(), 1, 20, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  FakeClock clock;
  int c = 100;
  absl::Duration base = absl::Milliseconds(10);
  Sim sim(limiter.get(), &clock, 30 / 0.010);
  sim.latency = Workers(&c, &base);
  sim.Run(absl::Minutes(1));
  for (int step = 0; step < 8; ++step) {
    base = step % 2 == 0 ? absl::Milliseconds(20) : absl::Milliseconds(10);
    sim.Run(absl::Minutes(2));
    (void)sim.Take();
    sim.Run(absl::Minutes(1));
    const Sim::Window w = sim.Take();
    EXPECT_LT(w.refused, 0.05) << "step " << step << " to " << base
                               << ": limit " << limiter->limit();
  }
}

// The extremes the validation accepts, on the latency step of issue 32
// (10 ms -> 20 ms, 30 -> 60 in flight offered to 100 workers).
struct Extreme {
  const char* name;
  int window_samples;
  int probe_limit;
  int probe_multiplier;
  bool hold;
};

// The extremes the validation accepts. A held re-measurement lasts about
// window_samples / probe_limit round trips: spaced by probe_multiplier
// alone, window_samples 512 with probe_limit 1 refused over 90% of this
// traffic. Validation now bounds the ratio at 32, and holds that confirm
// the estimate back off to at least 40 holds' length apart.
TEST_P(LimiterAttack, TheExtremeSettingsStillRecoverFromALatencyStep) {
  const Extreme rows[] = {
      {"window_samples 1", 1, 3, 30, false},
      {"window_samples 512, probe_limit 16", 512, 16, 30, false},
      {"probe_limit 1", 10, 1, 30, false},
      {"probe_limit 1, holding", 10, 1, 30, true},
      {"probe_multiplier 1", 10, 3, 1, false},
      {"window_samples 32, probe_limit 1", 32, 1, 30, false},
      {"window_samples 32, probe_limit 1, holding", 32, 1, 30, true},
      {"window_samples 512, probe_limit 16, holding", 512, 16, 30, true},
  };
  for (const Extreme& r : rows) {
    SCOPED_TRACE(r.name);
    LimiterSettings s = Base(GetParam(), 1, 20, 1000);
    s.window_samples = r.window_samples;
    s.probe_limit = r.probe_limit;
    s.probe_multiplier = r.probe_multiplier;
    s.probe_holds_admissions = r.hold;
    auto limiter = Make(s);
    ASSERT_NE(limiter, nullptr);
    FakeClock clock;
    int c = 100;
    absl::Duration base = absl::Milliseconds(10);
    Sim sim(limiter.get(), &clock, 30 / 0.010);
    sim.latency = Workers(&c, &base);
    sim.Run(absl::Minutes(1));
    base = absl::Milliseconds(20);
    sim.Run(absl::Minutes(4));
    (void)sim.Take();
    sim.Run(absl::Minutes(1));
    const Sim::Window w = sim.Take();
    EXPECT_LT(w.refused, r.hold ? 0.2 : 0.05)
        << "limit " << limiter->limit() << ", no-load "
        << limiter->stats().no_load_latency;
  }
}

// Re-measurements at 80% load, with the per-call latency varying by
// +-20% (real servers are not constant): still nothing shed by default.
TEST_P(LimiterAttack, AtEightyPercentLoadWithJitterNothingIsShed) {
  LimiterSettings s = Base(GetParam(), 1, 20, 1000);
  auto limiter = Make(s);
  ASSERT_NE(limiter, nullptr);
  FakeClock clock;
  int c = 50;
  absl::Duration base = absl::Milliseconds(100);
  Sim sim(limiter.get(), &clock, 0.8 * c / 0.100);
  uint64_t k = 0;
  sim.latency = [&](int n) {
    k = k * 6364136223846793005ULL + 1442695040888963407ULL;
    const double f = 0.8 + 0.4 * static_cast<double>(k >> 11) / 9007199254740992.0;
    return (n <= c ? base : base * n / c) * f;
  };
  sim.Run(absl::Minutes(1));
  (void)sim.Take();
  sim.Run(absl::Minutes(10));
  const Sim::Window w = sim.Take();
  EXPECT_LT(w.refused, 0.002) << "limit " << limiter->limit();
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LimiterAttack,
                         ::testing::Values(LimitAlgorithm::kGradient2,
                                           LimitAlgorithm::kVegas),
                         [](const auto& info) {
                           return std::string(LimitAlgorithmName(info.param));
                         });

// Threads acquiring and reporting while re-measurements begin every few
// samples: a permit that read the epoch before a re-measurement began but
// saw it under way after its compare-and-swap takes one of the window's
// slots with an epoch no window accepts, and does not give it back. With
// window_samples 1 that was the only slot: the re-measurement never ends.
// After the threads stop, a single caller must see it end.
TEST(LimiterConcurrencyAttack, RacingAcquirersNeverWedgeAReMeasurement) {
  // The race needs a thread delayed between two loads in TryAcquire (the
  // epoch before its compare-and-swap, `probing_` after it); most rounds
  // hit it on two cores, and ten rounds make a pass by luck unlikely.
  int wedged = 0;
  int last_limit = 0;
  for (int round = 0; round < 10; ++round) {
    const LimitAlgorithm a =
        round % 2 == 0 ? LimitAlgorithm::kGradient2 : LimitAlgorithm::kVegas;
    LimiterSettings s = Base(a, 1, 8, 64);
    s.window_samples = 1;
    s.probe_multiplier = 1;  // a re-measurement every 4..8 samples
    auto limiter = Make(s);
    ASSERT_NE(limiter, nullptr);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        int i = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          std::optional<LimiterPermit> p = limiter->TryAcquire();
          if (p.has_value()) {
            p->Success(absl::Microseconds(100 + (i++ + t) % 50));
          }
        }
      });
    }
    // A fixed amount of work, not a duration: stop after the limiter has
    // counted enough calls.
    while (limiter->stats().succeeded < 400'000) std::this_thread::yield();
    stop = true;
    for (std::thread& t : threads) t.join();
    bool ended = false;
    for (int i = 0; i < 1000 && !ended; ++i) {
      ended = !limiter->stats().re_measuring;
      std::optional<LimiterPermit> p = limiter->TryAcquire();
      if (p.has_value()) p->Success(absl::Microseconds(100));
    }
    if (!ended) {
      ++wedged;
      last_limit = limiter->limit();
    }
  }
  EXPECT_EQ(wedged, 0) << wedged << " of 10 limiters stayed re-measuring for "
                       << "1000 calls after their threads stopped (limit "
                       << last_limit << ", frozen)";
}

// ---- Managers without a config ------------------------------------------

class BareManagerAttack : public ::testing::Test {
 protected:
  ManagerOptions Options() {
    ManagerOptions o;
    o.name = "bare";
    o.clock = &clock_;
    o.log_sink = [this](absl::string_view l) { lines_.emplace_back(l); };
    return o;
  }
  FakeClock clock_;
  std::vector<std::string> lines_;
};

// An infinite ForceLevel(0) beside a features-off control: the control
// must end at its `until` though the override never does.
TEST_F(BareManagerAttack, AControlEndsBesideAnInfiniteOverride) {
  DegradationManager m(Options());
  ASSERT_TRUE(m.ForceLevel(0, absl::InfiniteDuration()).ok());
  DegradationManager::Control c;
  c.features_off = {"cache"};
  c.until = clock_.Now() + absl::Minutes(5);
  c.version = 1;
  ASSERT_TRUE(m.SetControl(c).ok());
  FeatureGate g = m.Feature("cache");
  EXPECT_FALSE(g.enabled());
  clock_.Advance(absl::Minutes(5));
  m.Evaluate();
  EXPECT_TRUE(g.enabled());
  EXPECT_FALSE(m.CurrentControl().has_value());
  EXPECT_EQ(m.ForcedLevel(), 0);
}

// A control set, then a config installed before it expires, then it
// expires: the gates come back and the level follows the config.
TEST_F(BareManagerAttack, AControlOutlivingTheFirstReloadStillEnds) {
  DegradationManager m(Options());
  DegradationManager::Control c;
  c.features_off = {"cache"};
  c.until = clock_.Now() + absl::Minutes(5);
  c.version = 1;
  ASSERT_TRUE(m.SetControl(c).ok());
  FeatureGate g = m.Feature("cache");
  ASSERT_TRUE(m.ForceLevel(0, absl::Minutes(1)).ok());
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(m.ForcedLevel(), std::nullopt);
  EXPECT_FALSE(g.enabled());  // the control is still in force
  clock_.Advance(absl::Minutes(4));
  EXPECT_FALSE(m.CurrentControl().has_value());
  EXPECT_TRUE(g.enabled());
  EXPECT_TRUE(m.Enabled("cache"));
}

// ---- Retry and the caller's deadline ------------------------------------

// The breaker-guarded Retry with a sleep that wakes late: no attempt
// starts at or after the deadline.
TEST(RetryDeadlineAttack, TheGuardedRetryStartsNothingAfterTheDeadline) {
  FakeClock clock;
  RetrySettings p;
  p.name = "r";
  p.unbudgeted = true;
  p.metrics = NoTelemetry();
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(100);
  p.max_attempts = 10;
  p.sleep = [&clock](absl::Duration d) {
    clock.Advance(d + absl::Milliseconds(450));
  };
  auto r = Retrier::Create(p).value();
  BreakerSettings b;
  b.name = "r";
  b.clock = &clock;
  b.metrics = NoTelemetry();
  CircuitBreaker<int> breaker(b);
  const Deadline d = Deadline::In(absl::Milliseconds(500), &clock);
  int calls = 0;
  RetryRecord rec;
  auto v = Retry(
      *r, breaker, d,
      [&]() -> absl::StatusOr<int> {
        ++calls;
        EXPECT_LT(clock.Now(), d.when()) << "attempt " << calls;
        return absl::UnavailableError("down");
      },
      &rec);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  EXPECT_FALSE(v.ok());
}

// A sleep that lands exactly on the deadline: the retry would start at
// the deadline, which has passed.
TEST(RetryDeadlineAttack, ASleepEndingExactlyAtTheDeadlineStartsNoRetry) {
  FakeClock clock;
  RetrySettings p;
  p.name = "r";
  p.unbudgeted = true;
  p.metrics = NoTelemetry();
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(100);
  p.max_attempts = 10;
  const Deadline d = Deadline::In(absl::Milliseconds(500), &clock);
  p.sleep = [&clock, &d](absl::Duration) { clock.Set(d.when()); };
  auto r = Retrier::Create(p).value();
  int calls = 0;
  RetryRecord rec;
  (void)Retry(
      *r, d,
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return absl::UnavailableError("down");
      },
      &rec);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
}

// ---- Executors whose Submit throws --------------------------------------

// Queues the task, then throws (an executor that logs or counts after
// queueing, and whose logging throws). Degrade takes a throw as "nothing
// queued"; the attempt must still not run twice.
class QueueThenThrow final : public Executor {
 public:
  explicit QueueThenThrow(testing::ManualExecutor* inner) : inner_(inner) {}
  bool Submit(std::function<void()> task) override {
    inner_->Submit(std::move(task));
    throw std::runtime_error("metrics sink is broken");
  }

 private:
  testing::ManualExecutor* inner_;
};

// Throws something that is not a std::exception.
class ThrowsAnInt final : public Executor {
 public:
  bool Submit(std::function<void()>) override { throw 42; }
};

HedgeSettings Fixed(FakeClock* clock) {
  HedgeSettings s;
  s.name = "h";
  s.delay = absl::Milliseconds(10);
  s.max_hedges = 1;
  s.max_extra_load = 1.0;
  s.clock = clock;
  s.metrics = NoTelemetry();
  return s;
}

TEST(SubmitThrowsAttack, AHedgeWhoseSubmitQueuedThenThrewRunsTheAttemptOnce) {
  FakeClock clock;
  auto policy = HedgePolicy::Create(Fixed(&clock)).value();
  testing::ManualExecutor inner;
  QueueThenThrow executor(&inner);
  int runs = 0;
  absl::StatusOr<int> r = absl::UnknownError("not run");
  EXPECT_NO_THROW(r = Hedge(*policy, executor, [&runs] {
                    ++runs;
                    return absl::StatusOr<int>(5);
                  }));
  EXPECT_EQ(r.value_or(-1), 5);
  inner.RunAll();  // the copy the executor did queue
  EXPECT_EQ(runs, 1) << "one call, one attempt, run " << runs << " times";
}

TEST(SubmitThrowsAttack, ANonStandardThrowIsARefusalEverywhere) {
  FakeClock clock;
  auto policy = HedgePolicy::Create(Fixed(&clock)).value();
  ThrowsAnInt executor;
  absl::StatusOr<int> r = absl::UnknownError("not run");
  EXPECT_NO_THROW(r = Hedge(*policy, executor,
                            [] { return absl::StatusOr<int>(7); }));
  EXPECT_EQ(r.value_or(-1), 7);
  absl::StatusOr<int> t = absl::UnknownError("not run");
  EXPECT_NO_THROW(t = CallWithTimeout(executor, absl::Seconds(1),
                                      [] { return 3; }));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted)
      << t.status();
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
