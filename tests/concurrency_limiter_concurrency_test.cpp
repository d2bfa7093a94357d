// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The concurrency-limits #234 race, under ThreadSanitizer: four threads
// acquire and release while their own reports move the limit. A count of
// the permits actually held, kept by the threads themselves, never exceeds
// what the limiter promises: the limit for a fixed limit without
// partitions; the largest limit plus the guarantees with them.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/request_class.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kThreads = 4;
constexpr int kIterations = 20'000;

// Runs kThreads workers; returns the most permits ever held at once.
int Hammer(ConcurrencyLimiter* limiter, int bound, bool vary_classes) {
  std::atomic<int> held{0};
  std::atomic<int> most{0};
  std::atomic<int> ready{0};
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {  // all start together
      }
      std::vector<LimiterPermit> mine;
      for (int i = 0; i < kIterations; ++i) {
        RequestClass rc;
        if (vary_classes) rc.criticality = static_cast<Criticality>((i + t) % 4);
        std::optional<LimiterPermit> p = limiter->TryAcquire(rc);
        if (p.has_value()) {
          const int now = held.fetch_add(1) + 1;
          if (now > bound) over.store(true);
          int seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {
          }
          mine.push_back(std::move(*p));
        }
        // Hold up to three permits, then release the oldest: sometimes fast,
        // sometimes slow, sometimes dropped, so the limit keeps moving.
        if (mine.size() > 2 || (!mine.empty() && i % 5 == 0)) {
          held.fetch_sub(1);
          LimiterPermit& q = mine.front();
          switch (i % 7) {
            case 0:
              q.Dropped();
              break;
            case 1:
              q.Ignore();
              break;
            default:
              q.Success(absl::Microseconds(i % 3 == 0 ? 50'000 : 100));
          }
          mine.erase(mine.begin());
        }
      }
      held.fetch_sub(static_cast<int>(mine.size()));
      mine.clear();
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(over.load()) << "held " << most.load() << " > " << bound;
  EXPECT_EQ(limiter->in_flight(), 0);
  return most.load();
}

LimiterSettings Settings(LimitAlgorithm a) {
  LimiterSettings s;
  s.algorithm = a;
  s.min_limit = 2;
  s.initial_limit = 6;
  s.max_limit = 12;
  s.window_samples = 1;
  s.probe_multiplier = 1;
  s.aimd_timeout = absl::Milliseconds(10);
  s.metrics = NoTelemetry();
  return s;
}

TEST(ConcurrencyLimiterConcurrencyTest, FixedLimitIsNeverOvershot) {
  LimiterSettings s = Settings(LimitAlgorithm::kFixed);
  s.initial_limit = 5;
  auto limiter = ConcurrencyLimiter::Create(s).value();
  const int most = Hammer(limiter.get(), 5, /*vary_classes=*/true);
  EXPECT_LE(most, 5);
  const LimiterStats st = limiter->stats();
  uint64_t acquired = 0;
  for (uint64_t a : st.acquired) acquired += a;
  EXPECT_EQ(st.succeeded + st.dropped + st.ignored, acquired);
}

class MovingLimitTest : public ::testing::TestWithParam<LimitAlgorithm> {};

TEST_P(MovingLimitTest, HeldNeverExceedsTheLimitPlusTheGuarantees) {
  LimiterSettings s = Settings(GetParam());
  s.guaranteed_share[static_cast<int>(Criticality::kCriticalPlus)] = 0.25;
  s.guaranteed_share[static_cast<int>(Criticality::kCritical)] = 0.25;
  auto limiter = ConcurrencyLimiter::Create(s).value();
  // At the largest limit the guarantees are ceil(0.25 x 12) = 3 each.
  const int bound = s.max_limit + 3 + 3;
  Hammer(limiter.get(), bound, /*vary_classes=*/true);
  const LimiterStats st = limiter->stats();
  EXPECT_GE(st.limit, s.min_limit);
  EXPECT_LE(st.limit, s.max_limit);
}

TEST_P(MovingLimitTest, WithoutPartitionsHeldNeverExceedsTheLargestLimit) {
  auto limiter = ConcurrencyLimiter::Create(Settings(GetParam())).value();
  Hammer(limiter.get(), 12, /*vary_classes=*/false);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, MovingLimitTest,
                         ::testing::Values(LimitAlgorithm::kAimd,
                                           LimitAlgorithm::kGradient2,
                                           LimitAlgorithm::kVegas),
                         [](const auto& info) {
                           return std::string(LimitAlgorithmName(info.param));
                         });

// Two threads polling one RejectionRateSource (a DegradationManager and a
// metrics exporter) each get a fraction in [0, 1], while windows close and
// re-measurements begin; the counts stay exact.
TEST(ConcurrencyLimiterConcurrencyTest,
     TwoThreadsPollingOneRejectionRateSourceGetAFraction) {
  // The last pass holds admissions while re-measuring (and abandons
  // probes by their refusals).
  const std::pair<LimitAlgorithm, bool> passes[] = {
      {LimitAlgorithm::kAimd, false},
      {LimitAlgorithm::kGradient2, false},
      {LimitAlgorithm::kVegas, false},
      {LimitAlgorithm::kVegas, true}};
  for (const auto& [a, hold] : passes) {
    LimiterSettings s = Settings(a);
    s.min_limit = 1;
    s.initial_limit = 8;
    s.max_limit = 64;
    s.window_samples = 3;
    s.probe_limit = 2;
    s.aimd_timeout = absl::Seconds(5);
    s.guaranteed_share[0] = 0.3;
    s.probe_holds_admissions = hold;
    auto limiter = ConcurrencyLimiter::Create(s).value();
    std::function<double()> source = limiter->RejectionRateSource();
    std::atomic<bool> stop{false};
    std::atomic<bool> out_of_range{false};
    std::atomic<double> bad_value{0};
    std::vector<std::thread> pollers;
    for (int t = 0; t < 2; ++t) {
      pollers.emplace_back([&] {
        while (!stop.load()) {
          const double r = source();
          if (!(r >= 0 && r <= 1)) {
            bad_value.store(r);
            out_of_range.store(true);
          }
          (void)limiter->stats();
        }
      });
    }
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t) {
      workers.emplace_back([&, t] {
        std::vector<LimiterPermit> mine;
        for (int i = 0; i < 20'000; ++i) {
          RequestClass rc;
          rc.criticality = static_cast<Criticality>((i + t) % 4);
          std::optional<LimiterPermit> p = limiter->TryAcquire(rc);
          if (p.has_value()) mine.push_back(std::move(*p));
          if (mine.size() > 3 || (!mine.empty() && i % 3 == 0)) {
            LimiterPermit q = std::move(mine.front());
            mine.erase(mine.begin());
            if (i % 11 == 0) {
              q.Dropped();
            } else if (i % 13 == 0) {
              LimiterPermit* alias = &q;
              q = std::move(*alias);  // self-move: still active, destroyed later
            } else {
              q.Success(absl::Microseconds(100 + (i % 50) * 1000));
            }
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    stop.store(true);
    for (auto& p : pollers) p.join();
    const LimiterStats st = limiter->stats();
    uint64_t acquired = 0;
    for (uint64_t x : st.acquired) acquired += x;
    EXPECT_EQ(st.succeeded + st.dropped + st.ignored, acquired)
        << LimitAlgorithmName(a);
    EXPECT_EQ(limiter->in_flight(), 0) << LimitAlgorithmName(a);
    EXPECT_FALSE(out_of_range.load())
        << LimitAlgorithmName(a) << ": the source returned " << bad_value.load();
    EXPECT_GE(limiter->limit(), 1);
    EXPECT_LE(limiter->limit(), 64);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
