// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/breaker_shards.hpp: the counters stay exact at
// quiescent points however many threads write them (more live threads than
// shards, threads handing slots on as they come and go), directly and through a
// CircuitBreaker's totals(), as 80 goroutines hammering one gobreaker would
// expect of its Counts.

#include "degrade/detail/breaker/breaker_shards.hpp"

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/breaker_types.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"
#include "support/barrier.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kThreads =
    80;  // more than the 64 slots, and than any shard count
constexpr uint64_t kPerThread = 300;

template <typename Body>
void RunAllAliveAtOnce(int n, Body body) {
  degrade_tests::Barrier all_alive(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&] {
      (void)detail::ThreadShardIndex();  // take a slot before the others go
      all_alive.ArriveAndWait();
      body();
    });
  }
  for (auto& t : threads) t.join();
}

TEST(BreakerShardsTest, SumsAreExactWithMoreLiveThreadsThanShards) {
  ASSERT_LT(detail::ShardArraySize(), static_cast<std::size_t>(kThreads));
  detail::BreakerShards shards("b");
  RunAllAliveAtOnce(kThreads, [&shards] {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      detail::BreakerShard& s = shards.Local();
      s.admitted.Add(1);
      s.successes.Add(1);
      if (i % 3 == 0) s.failures.Add(1);
    }
  });
  const BreakerTotals t = shards.Sum();
  EXPECT_EQ(t.admitted, kThreads * kPerThread);
  EXPECT_EQ(t.successes, kThreads * kPerThread);
  EXPECT_EQ(t.failures, kThreads * ((kPerThread + 2) / 3));
}

TEST(BreakerShardsTest, SumsAreExactAsThreadsComeAndGo) {
  // Each wave's threads take the slots the previous wave freed and go on
  // adding to the same shards with plain stores; nothing may be lost in the
  // hand-over, nor while the main thread keeps its own slot and counts too.
  detail::BreakerShards shards("b");
  uint64_t expected = 0;
  for (int wave = 0; wave < 6; ++wave) {
    RunAllAliveAtOnce(5 + 7 * wave, [&shards] {
      for (uint64_t i = 0; i < kPerThread; ++i) shards.Local().stale.Add(1);
    });
    expected += (5 + 7 * wave) * kPerThread;
    shards.Local().stale.Add(1);
    ++expected;
    EXPECT_EQ(shards.Sum().stale, expected) << "after wave " << wave;
  }
}

TEST(BreakerShardsTest, BreakerTotalsAreExactWithEightyCallingThreads) {
  BreakerSettings s;
  s.name = "eighty";
  FakeClock clock;
  s.clock = &clock;
  s.ready_to_trip = [](const Counts&) { return false; };  // stays closed
  CircuitBreaker<int> breaker(s);
  RunAllAliveAtOnce(kThreads, [&breaker] {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      EXPECT_TRUE(breaker.Execute([] { return absl::StatusOr<int>(1); }).ok());
      EXPECT_FALSE(breaker
                       .Execute([]() -> absl::StatusOr<int> {
                         return absl::UnavailableError("down");
                       })
                       .ok());
      {
        absl::StatusOr<Permit> p = breaker.Allow();
        ASSERT_TRUE(p.ok());
      }  // dropped unreported: abandoned
    }
  });
  const uint64_t each = kThreads * kPerThread;
  const BreakerTotals t = breaker.totals();
  EXPECT_EQ(t.admitted, 3 * each);
  EXPECT_EQ(t.successes, each);
  EXPECT_EQ(t.failures, each);
  EXPECT_EQ(t.abandoned, each);
  EXPECT_EQ(t.stale, 0u);
  EXPECT_EQ(t.rejected_open, 0u);
  const Counts c = breaker.counts();
  EXPECT_EQ(c.requests, 2 * each);  // abandoned permits are not requests
  EXPECT_EQ(c.total_successes, each);
  EXPECT_EQ(c.total_failures, each);
  EXPECT_EQ(breaker.state(), State::kClosed);
}

TEST(BreakerShardsTest, OpenRejectionsFromEightyThreadsAreAllCounted) {
  BreakerSettings s;
  s.name = "open";
  FakeClock clock;
  s.clock = &clock;
  CircuitBreaker<int> breaker(s);
  breaker.ForceOpen();
  RunAllAliveAtOnce(kThreads, [&breaker] {
    for (uint64_t i = 0; i < kPerThread; ++i) {
      EXPECT_TRUE(IsBreakerOpen(
          breaker.Execute([] { return absl::StatusOr<int>(1); }).status()));
    }
  });
  EXPECT_EQ(breaker.totals().rejected_open, kThreads * kPerThread);
  EXPECT_EQ(breaker.totals().admitted, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
