// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Hedged calls on real threads, for ThreadSanitizer (label concurrency):
// winners and losers racing, losers cancelled after the answer (and tasks
// that start after it), an executor refusing, calls that throw, and calls
// dropped while their attempts run. The checks are invariants (every
// attempt reaches the breaker exactly once; one answer per call), never
// timings: the delays are a microsecond so hedges race the first attempt
// as closely as the scheduler allows.

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/hedge.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kCallers = 4;
constexpr int kCallsEach = 300;

std::unique_ptr<HedgePolicy> Policy(int max_hedges = 2) {
  HedgeSettings s;
  s.name = "race";
  s.delay = absl::Microseconds(1);
  s.max_hedges = max_hedges;
  s.max_extra_load = 1.0;
  s.metrics = NoTelemetry();
  return *HedgePolicy::Create(s);
}

BreakerSettings Settings() {
  BreakerSettings b;
  b.name = "race";
  b.metrics = NoTelemetry();
  b.ready_to_trip = [](const Counts&) { return false; };  // keep admitting
  return b;
}

template <typename Body>
void OnCallers(Body body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kCallers; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
}

// Every attempt admitted reports once: as a success, a failure or, for a
// loser, an exclusion.
void ExpectEveryAttemptReported(const CircuitBreaker<int>& breaker) {
  const BreakerTotals t = breaker.totals();
  EXPECT_EQ(t.successes + t.failures + t.exclusions, t.admitted);
  EXPECT_EQ(t.abandoned, 0u);
}

TEST(HedgeConcurrencyTest, WinnersAndLosersRaceAndEveryAttemptIsReported) {
  auto policy = Policy();
  CircuitBreaker<int> breaker(Settings());
  std::atomic<int> ran{0};
  {
    ThreadPool pool(4);
    OnCallers([&](int) {
      for (int i = 0; i < kCallsEach; ++i) {
        absl::StatusOr<int> r =
            Hedge(breaker, *policy, pool, [&ran](const CancelToken& t) {
              ran.fetch_add(1);
              // A little work the loser may abandon half-way.
              for (int k = 0; k < 50 && !t.cancelled(); ++k) {
                std::this_thread::yield();
              }
              return absl::StatusOr<int>(t.attempt());
            });
        ASSERT_TRUE(r.ok()) << r.status();
      }
    });
  }  // the pool joins: every loser has finished
  const HedgeStats st = policy->stats();
  EXPECT_EQ(st.calls, uint64_t{kCallers * kCallsEach});
  EXPECT_GT(st.hedges_sent, 0u);
  EXPECT_LE(st.hedges_won, st.hedges_sent);
  // Each call is answered once: the successes before the decision.
  EXPECT_EQ(breaker.totals().successes, st.calls);
  ExpectEveryAttemptReported(breaker);
  // A task that starts after its call was answered never calls.
  EXPECT_LE(static_cast<uint64_t>(ran.load()), st.calls + st.hedges_sent);
}

TEST(HedgeConcurrencyTest, AFirstAttemptBlockedUntilCancelledLosesToTheHedge) {
  auto policy = Policy(1);
  CircuitBreaker<int> breaker(Settings());
  {
    ThreadPool pool(2);
    for (int i = 0; i < 50; ++i) {
      absl::StatusOr<int> r =
          Hedge(breaker, *policy, pool, [](const CancelToken& t) {
            if (t.attempt() == 0) {
              while (!t.cancelled()) std::this_thread::yield();
              return absl::StatusOr<int>(absl::CancelledError("stopped"));
            }
            return absl::StatusOr<int>(1);
          });
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(*r, 1);
    }
  }
  EXPECT_EQ(policy->stats().hedges_won, 50u);
  EXPECT_EQ(policy->stats().attempts_cancelled, 50u);
  EXPECT_EQ(breaker.totals().failures, 0u);  // cancelled: excluded
  EXPECT_EQ(breaker.totals().exclusions, 50u);
  ExpectEveryAttemptReported(breaker);
}

TEST(HedgeConcurrencyTest, AnExecutorRefusingCostsHedgesNeverAnswers) {
  auto policy = Policy();
  CircuitBreaker<int> breaker(Settings());
  {
    ThreadPool pool(1, /*max_queue=*/1);  // refuses most of the time
    OnCallers([&](int) {
      for (int i = 0; i < kCallsEach; ++i) {
        absl::StatusOr<int> r = Hedge(breaker, *policy, pool, [] {
          std::this_thread::yield();
          return absl::StatusOr<int>(1);
        });
        ASSERT_TRUE(r.ok()) << r.status();
      }
    });
  }
  EXPECT_EQ(breaker.totals().successes, uint64_t{kCallers * kCallsEach});
  ExpectEveryAttemptReported(breaker);
}

TEST(HedgeConcurrencyTest, ThrowingAttemptsAreFailuresAndNothingLeaks) {
  auto policy = Policy();
  CircuitBreaker<int> breaker(Settings());
  {
    ThreadPool pool(4);
    OnCallers([&](int caller) {
      for (int i = 0; i < kCallsEach; ++i) {
        const bool first_throws = (i + caller) % 2 == 0;
        absl::StatusOr<int> r = Hedge(
            breaker, *policy, pool,
            [first_throws](const CancelToken& t) -> absl::StatusOr<int> {
              if ((t.attempt() == 0) == first_throws) {
                throw std::runtime_error("attempt threw");
              }
              return t.attempt();
            });
        // Either a hedge answered, or the throw was the answer.
        EXPECT_TRUE(r.ok() || IsCallableException(r.status())) << r.status();
      }
    });
  }
  ExpectEveryAttemptReported(breaker);
}

TEST(HedgeConcurrencyTest, DroppingCallsWhileTheirAttemptsRunIsSafe) {
  auto policy = Policy();
  CircuitBreaker<int> breaker(Settings());
  {
    ThreadPool pool(4);
    OnCallers([&](int) {
      for (int i = 0; i < kCallsEach; ++i) {
        auto call = StartHedge(breaker, *policy, pool,
                               [](const CancelToken& t) {
                                 std::this_thread::yield();
                                 return absl::StatusOr<int>(t.attempt());
                               });
        call.SendHedge();
        if (i % 2 == 0) (void)call.Take();
        // Otherwise dropped here, racing its attempts.
      }
    });
  }
  ExpectEveryAttemptReported(breaker);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
