// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The proof of issue 16's hedging claim, as a deterministic discrete-event
// simulation on a FakeClock: a recall fan-out of 8 routes, each call's
// latency lognormal (median 10 ms, sigma 0.25) with 1% of calls 10x
// slower. Every route is hedged by its own HedgePolicy with the defaults
// (p95 delay, one hedge, at most 5% extra calls over a sliding 10 s
// window). A request waits for its slowest route.
//
// Nothing sleeps and no thread is started: each route has a
// ManualExecutor, and the simulation takes every task it is handed and
// runs it at the attempt's completion time, with the clock set to that
// time, so the real race code decides every call. The unhedged baseline
// uses the same first-attempt latencies (one random stream for first
// attempts, another for hedges), so the comparison is paired.
//
// The figures (p50/p99/p99.9 and the extra load) are printed and quoted in
// docs/retries-and-hedging.md ("Hedging").

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <queue>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/hedge.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kRoutes = 8;
constexpr int kRequests = 20000;
constexpr absl::Duration kArrivalGap = absl::Milliseconds(10);
constexpr double kPi = 3.14159265358979323846;

// Heavy-tailed attempt latency: lognormal, and 1 in 100 ten times slower.
class Latency {
 public:
  explicit Latency(uint64_t seed) : rng_(seed) {}
  absl::Duration Next() {
    // Box-Muller from two uniforms: the same numbers with every standard
    // library (std::lognormal_distribution is not specified bit for bit).
    const double u1 = std::max(rng_.NextUnit(), 1e-12);
    const double u2 = rng_.NextUnit();
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
    double ms = 10 * std::exp(0.25 * z);
    if (rng_.NextUnit() < 0.01) ms *= 10;
    return absl::Microseconds(static_cast<int64_t>(ms * 1000));
  }

 private:
  detail::SplitMix64 rng_;
};

struct Figures {
  absl::Duration p50, p99, p999;
  double extra_load = 0;  // hedges sent / route calls
  uint64_t hedges_won = 0;
};

absl::Duration Percentile(std::vector<absl::Duration> v, double q) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size()));
  return v[std::min(i, v.size() - 1)];
}

// One run of the fan-out; `hedged` false sends no hedge (the baseline).
Figures Simulate(bool hedged) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  Latency first(1), extra(2);

  std::vector<std::unique_ptr<HedgePolicy>> policies;
  std::vector<std::unique_ptr<testing::ManualExecutor>> executors;
  for (int r = 0; r < kRoutes; ++r) {
    HedgeSettings s;
    s.name = "r" + std::to_string(r);
    s.clock = &clock;
    s.metrics = NoTelemetry();
    policies.push_back(*HedgePolicy::Create(s));
    executors.push_back(std::make_unique<testing::ManualExecutor>());
  }

  struct RouteCall {
    std::unique_ptr<HedgedCall<int>> call;
    absl::Time start;
    bool finished = false;
  };
  struct Request {
    absl::Time start;
    std::vector<RouteCall> routes;
    int open = kRoutes;
    absl::Duration latency;
  };
  std::vector<Request> requests(kRequests);

  // Events: run a task, or a hedge timer, at a time; ties in order made.
  struct Event {
    absl::Time at;
    uint64_t seq;
    std::function<void()> run;
  };
  const auto later = [](const Event& a, const Event& b) {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  };
  std::priority_queue<Event, std::vector<Event>, decltype(later)> events(later);
  uint64_t seq = 0;
  const auto at = [&](absl::Time t, std::function<void()> f) {
    events.push(Event{t, seq++, std::move(f)});
  };

  const auto check = [&](Request& q, int r) {
    RouteCall& rc = q.routes[r];
    if (rc.finished || !rc.call->done()) return;
    rc.finished = true;
    (void)rc.call->Take();
    if (--q.open == 0) q.latency = clock.Now() - q.start;
  };
  // The task an attempt of request i's route r just handed its executor
  // completes after its latency; then the call may be decided.
  const auto schedule_attempt = [&](int i, int r, absl::Duration latency) {
    std::function<void()> task = executors[r]->Take();
    ASSERT_TRUE(task);
    at(clock.Now() + latency, [&, i, r, task = std::move(task)] {
      task();
      check(requests[i], r);
    });
  };
  std::function<void(int, int)> arm_hedge = [&](int i, int r) {
    RouteCall& rc = requests[i].routes[r];
    const absl::Time when = rc.call->next_hedge_at();
    if (!hedged || when == absl::InfiniteFuture()) return;
    at(when, [&, i, r] {
      RouteCall& c = requests[i].routes[r];
      if (c.finished || !c.call->SendHedge()) return;
      schedule_attempt(i, r, extra.Next());
      arm_hedge(i, r);
    });
  };

  for (int i = 0; i < kRequests; ++i) {
    at(t0 + kArrivalGap * i, [&, i] {
      Request& q = requests[i];
      q.start = clock.Now();
      q.routes.resize(kRoutes);
      for (int r = 0; r < kRoutes; ++r) {
        RouteCall& rc = q.routes[r];
        rc.start = clock.Now();
        rc.call = std::make_unique<HedgedCall<int>>(StartHedge(
            *policies[r], *executors[r], [](const CancelToken&) {
              return absl::StatusOr<int>(1);
            }));
        schedule_attempt(i, r, first.Next());
        arm_hedge(i, r);
      }
    });
  }

  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    clock.Set(std::max(clock.Now(), e.at));
    e.run();
  }

  std::vector<absl::Duration> latencies;
  for (const Request& q : requests) {
    EXPECT_EQ(q.open, 0);
    latencies.push_back(q.latency);
  }
  Figures f;
  f.p50 = Percentile(latencies, 0.50);
  f.p99 = Percentile(latencies, 0.99);
  f.p999 = Percentile(latencies, 0.999);
  uint64_t calls = 0, sent = 0;
  for (const auto& p : policies) {
    const HedgeStats st = p->stats();
    calls += st.calls;
    sent += st.hedges_sent;
    f.hedges_won += st.hedges_won;
  }
  f.extra_load = static_cast<double>(sent) / static_cast<double>(calls);
  return f;
}

TEST(HedgeSimulationTest, HedgingCutsTheFanOutP99ByFortyPercentForFivePercentMoreCalls) {
  const Figures plain = Simulate(false);
  const Figures hedged = Simulate(true);
  std::printf(
      "fan-out of %d routes, %d requests, lognormal(10 ms, 0.25) with 1%% "
      "10x stragglers\n"
      "  unhedged: p50 %s  p99 %s  p99.9 %s\n"
      "  hedged:   p50 %s  p99 %s  p99.9 %s  extra calls %.2f%%  hedges "
      "won %llu\n",
      kRoutes, kRequests, absl::FormatDuration(plain.p50).c_str(),
      absl::FormatDuration(plain.p99).c_str(),
      absl::FormatDuration(plain.p999).c_str(),
      absl::FormatDuration(hedged.p50).c_str(),
      absl::FormatDuration(hedged.p99).c_str(),
      absl::FormatDuration(hedged.p999).c_str(), 100 * hedged.extra_load,
      static_cast<unsigned long long>(hedged.hedges_won));
  EXPECT_EQ(plain.extra_load, 0.0);
  EXPECT_LE(hedged.p99, plain.p99 * 0.6);  // >= 40% lower
  EXPECT_LE(hedged.extra_load, 0.05);
  EXPECT_GT(hedged.hedges_won, 0u);
  // Hedging never makes the median worse.
  EXPECT_LE(hedged.p50, plain.p50);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
