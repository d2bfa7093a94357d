// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// AdmissionController under threads (label `concurrency`, run under TSan):
// four threads admit (and close a window by try-lock each 5,000 requests)
// while a fifth closes adaptive windows that move the threshold and a sixth
// scrapes stats(), the admitters now and then reporting a downstream refusal
// (RecordRefusal) that races the window closes. Every decision is counted
// exactly once, under its criticality, and the threshold never leaves its
// range.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/request_class.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kAdmitters = 4;
constexpr int kMinPerThread = 50'000;
constexpr int kMinWindows = 40;

TEST(AdmissionConcurrencyTest, CountsAddUpExactlyWhileTheThresholdMoves) {
  FakeClock clock;
  AdmissionOptions o;
  o.name = "stress";
  o.adaptive = true;
  o.interval_requests = 5000;
  o.tighten_fraction = 0.2;
  o.loosen_fraction = 0.2;
  o.clock = &clock;
  o.metrics = NoTelemetry();
  auto c = AdmissionController::Create(o).value();

  std::atomic<int> ready{0};
  std::atomic<int> finished{0};
  std::atomic<int> windows{0};
  // Refusals the admitters saw: they keep going until there was one, so
  // the run always covers a moved threshold.
  std::atomic<uint64_t> refusals{0};
  struct Tally {
    std::array<uint64_t, kNumCriticalities> sent{};
    std::array<uint64_t, kNumCriticalities> admitted{};
  };
  std::vector<Tally> tallies(kAdmitters);

  std::vector<std::thread> threads;
  for (int t = 0; t < kAdmitters; ++t) {
    threads.emplace_back([&, t] {
      Tally& tally = tallies[static_cast<std::size_t>(t)];
      ready.fetch_add(1);
      while (ready.load() < kAdmitters + 2) std::this_thread::yield();
      for (int i = 0; i < kMinPerThread || windows.load() < kMinWindows ||
                      refusals.load() == 0;
           ++i) {
        RequestClass rc;
        const int rank = (i * 37 + t * 101) % kAdmitAllRank;
        rc.criticality = static_cast<Criticality>(rank / kNumCohorts);
        rc.cohort = static_cast<uint8_t>(rank % kNumCohorts);
        const auto k = static_cast<std::size_t>(rc.criticality);
        ++tally.sent[k];
        // Alternate the two entry points: both must count.
        const bool ok = (i & 1) ? c->Admitted(rc) : c->Admit(rc).ok();
        tally.admitted[k] += ok ? 1 : 0;
        if (!ok) refusals.fetch_add(1, std::memory_order_relaxed);
        // A later stage's refusal, racing the mover's window closes.
        if (i % 97 == 0) c->RecordRefusal(rc);
      }
      finished.fetch_add(1);
    });
  }
  // The mover: closes windows, overloaded and calm in runs of ten.
  threads.emplace_back([&] {
    ready.fetch_add(1);
    while (ready.load() < kAdmitters + 2) std::this_thread::yield();
    for (int w = 0; finished.load() < kAdmitters; ++w) {
      clock.Advance(absl::Seconds(1));
      c->RecordQueuingDelay((w / 10) % 2 == 0 ? absl::Seconds(1)
                                              : absl::ZeroDuration());
      const int t = c->threshold();
      EXPECT_GE(t, FloorRank(Criticality::kCriticalPlus));
      EXPECT_LE(t, kAdmitAllRank);
      windows.fetch_add(1);
    }
  });
  // The scraper: totals only grow.
  threads.emplace_back([&] {
    ready.fetch_add(1);
    while (ready.load() < kAdmitters + 2) std::this_thread::yield();
    uint64_t last = 0;
    while (finished.load() < kAdmitters) {
      const AdmissionStats st = c->stats();
      uint64_t total = 0;
      for (std::size_t k = 0; k < kNumCriticalities; ++k) {
        total += st.admitted[k] + st.shed[k];
      }
      EXPECT_GE(total, last);
      last = total;
    }
  });
  for (auto& th : threads) th.join();

  const AdmissionStats st = c->stats();
  uint64_t shed_total = 0;
  for (std::size_t k = 0; k < kNumCriticalities; ++k) {
    uint64_t sent = 0;
    uint64_t admitted = 0;
    for (const Tally& tally : tallies) {
      sent += tally.sent[k];
      admitted += tally.admitted[k];
    }
    EXPECT_EQ(st.admitted[k], admitted) << "criticality " << k;
    EXPECT_EQ(st.admitted[k] + st.shed[k], sent) << "criticality " << k;
    shed_total += st.shed[k];
  }
  EXPECT_EQ(st.shed[0], 0u) << "CRITICAL_PLUS is never shed by default";
  EXPECT_GT(shed_total, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
