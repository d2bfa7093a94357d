// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// KeyedRateLimiter under threads (label concurrency, run under
// ThreadSanitizer): racing callers on shared keys, on a frozen FakeClock,
// are admitted exactly each key's burst and then, round after round,
// exactly what the advance replenished; and threads churning through
// unique keys in a small table (evictions on every call) while others
// read stats() and Debt() keep the hot keys exact; and newcomers racing
// for a full table's overflow cell get exactly its burst.

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kThreads = 8;

template <typename Body>
void Race(Body body) {
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      body(t);
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& th : threads) th.join();
}

KeyedRateLimitSettings Settings(const FakeClock& clock, std::size_t max_keys) {
  KeyedRateLimitSettings s;
  s.name = "racy";
  s.rate = 100;
  s.burst = 20;
  s.max_keys = max_keys;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return s;
}

TEST(KeyedRateLimiterConcurrencyTest, RacingCallersGetEachKeysExactShare) {
  constexpr uint64_t kKeys = 64;
  FakeClock clock;
  auto l = KeyedRateLimiter<uint64_t>::Create(Settings(clock, 4096)).value();
  for (int round = 0; round < 10; ++round) {
    std::vector<std::atomic<int64_t>> admitted(kKeys);
    Race([&](int t) {
      for (int i = 0; i < 3000; ++i) {
        const uint64_t k = static_cast<uint64_t>(i + t) % kKeys;
        if (l->TryAcquire(k)) admitted[k].fetch_add(1);
      }
    });
    for (uint64_t k = 0; k < kKeys; ++k) {
      // The burst first, then 100 ms at 100/s.
      ASSERT_EQ(admitted[k].load(), round == 0 ? 20 : 10)
          << "key " << k << " round " << round;
    }
    clock.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(l->stats().evictions_in_debt, 0u);
}

TEST(KeyedRateLimiterConcurrencyTest, ChurnAndReadersKeepHotKeysExact) {
  FakeClock clock;
  auto l = KeyedRateLimiter<uint64_t>::Create(Settings(clock, 64)).value();
  // Hot keys 0..3 in deep debt: nothing may evict them.
  for (uint64_t k = 0; k < 4; ++k) ASSERT_TRUE(l->TryAcquire(k, 20));
  std::atomic<uint64_t> next{1000};
  std::atomic<int64_t> hot_admitted{0};
  Race([&](int t) {
    for (int i = 0; i < 4000; ++i) {
      if (t == 0 && i % 100 == 0) {
        (void)l->stats();
      } else if (t == 1) {
        if (l->TryAcquire(static_cast<uint64_t>(i % 4))) {
          hot_admitted.fetch_add(1);
        }
      } else {
        l->TryAcquire(next.fetch_add(1));
      }
    }
  });
  EXPECT_EQ(hot_admitted.load(), 0);
  for (uint64_t k = 0; k < 4; ++k) {
    EXPECT_EQ(l->Debt(k), absl::Milliseconds(200)) << k;
  }
  EXPECT_LE(l->stats().live_keys, l->capacity());
}

// A table of one bucket, all in debt, on a frozen clock: racing threads
// with unique newcomers and one repeated newcomer share the overflow cell,
// which admits exactly its burst (20) in all, and the residents keep
// their debt.
TEST(KeyedRateLimiterConcurrencyTest,
     RacingNewcomersToAFullTableShareTheOverflowExactly) {
  FakeClock clock;
  auto l = KeyedRateLimiter<uint64_t>::Create(Settings(clock, 8)).value();
  for (uint64_t k = 0; k < 8; ++k) ASSERT_TRUE(l->TryAcquire(k, 20));
  std::atomic<int64_t> admitted{0};
  Race([&](int t) {
    for (int i = 0; i < 2000; ++i) {
      const uint64_t k = i % 2 == 0 ? 999
                                    : 1'000'000 * static_cast<uint64_t>(t + 1) +
                                          static_cast<uint64_t>(i);
      if (l->TryAcquire(k)) admitted.fetch_add(1);
    }
  });
  EXPECT_EQ(admitted.load(), 20);
  for (uint64_t k = 0; k < 8; ++k) {
    EXPECT_EQ(l->Debt(k), absl::Milliseconds(200)) << k;
  }
  const KeyedRateLimitStats st = l->stats();
  EXPECT_EQ(st.table_full, uint64_t{kThreads} * 2000);
  EXPECT_EQ(st.evictions, 0u);
  EXPECT_EQ(st.live_keys, 8u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
