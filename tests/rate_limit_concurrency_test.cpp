// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// RateLimiter under threads (label concurrency, run under ThreadSanitizer):
// racing callers on a frozen FakeClock are admitted exactly the burst,
// round after round exactly what the clock's advance replenished; with
// per-thread credit never more than the shared state gave out; racing
// reservations are handed distinct waits, one interval apart, with none
// lost or granted twice; and a clock the callers advance while they race
// never lets more through than rate x time + burst.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/rate_limit.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

constexpr int kThreads = 8;

std::unique_ptr<RateLimiter> Make(const FakeClock& clock, double rate,
                                  int64_t burst, absl::Duration max_wait) {
  RateLimitSettings s;
  s.name = "racy";
  s.rate = rate;
  s.burst = burst;
  s.max_wait = max_wait;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  return RateLimiter::Create(s).value();
}

// Runs `body(thread)` on kThreads threads released together.
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

TEST(RateLimiterConcurrencyTest, RacingCallersGetExactlyWhatWasReplenished) {
  FakeClock clock;
  auto l = Make(clock, 1000, 500, absl::ZeroDuration());
  int64_t total = 0;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> admitted{0};
    Race([&](int) {
      for (int i = 0; i < 2000; ++i) {
        const int64_t n = i % 3 == 0 ? 2 : 1;
        if (l->TryAcquire(n)) admitted.fetch_add(n);
      }
    });
    // The first round takes the burst; each later one the 100 ms of
    // replenishment. A permit may be left when only requests of 2 came
    // after the last single one: take it so each round starts empty.
    int64_t got = admitted.load();
    while (l->TryAcquire()) ++got;
    EXPECT_EQ(got, round == 0 ? 500 : 100) << "round " << round;
    total += got;
    clock.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(l->stats().admitted_permits, static_cast<uint64_t>(total));
}

TEST(RateLimiterConcurrencyTest, PerThreadCreditNeverAdmitsMoreThanTaken) {
  FakeClock clock;
  RateLimitSettings s;
  s.name = "credit";
  s.rate = 1000;
  s.burst = 500;
  s.credit_per_thread = 16;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto l = RateLimiter::Create(s).value();
  int64_t total = 0;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> admitted{0};
    Race([&](int) {
      for (int i = 0; i < 2000; ++i) {
        if (l->TryAcquire()) admitted.fetch_add(1);
      }
    });
    total += admitted.load();
    // Never more than the shared state gave out; less only by the credit
    // the threads still hold.
    const int64_t given = 500 + 100 * round;
    EXPECT_LE(total, given) << "round " << round;
    EXPECT_GE(total, given - kThreads * 16 - 16) << "round " << round;
    clock.Advance(absl::Milliseconds(100));
  }
  EXPECT_EQ(l->stats().admitted, static_cast<uint64_t>(total));
}

TEST(RateLimiterConcurrencyTest, RacingReservationsGetDistinctWaits) {
  FakeClock clock;
  // 100/s with no burst: the k-th reservation waits k x 10 ms.
  auto l = Make(clock, 100, 1, absl::Seconds(10));
  std::vector<std::vector<absl::Duration>> waits(kThreads);
  Race([&](int t) {
    for (;;) {
      absl::StatusOr<absl::Duration> w = l->Reserve();
      if (!w.ok()) return;
      waits[t].push_back(*w);
    }
  });
  std::vector<absl::Duration> all;
  for (const auto& w : waits) all.insert(all.end(), w.begin(), w.end());
  std::sort(all.begin(), all.end());
  // 0, 10 ms, ..., 10 s: 1001 reservations, each handed out once.
  ASSERT_EQ(all.size(), 1001u);
  for (std::size_t k = 0; k < all.size(); ++k) {
    ASSERT_EQ(all[k], absl::Milliseconds(10) * static_cast<int64_t>(k)) << k;
  }
}

TEST(RateLimiterConcurrencyTest, AMovingClockNeverLetsMoreThroughThanTheRate) {
  FakeClock clock;
  auto l = Make(clock, 10'000, 100, absl::ZeroDuration());
  std::atomic<int64_t> admitted{0};
  // The callers move the clock themselves, 50 us every 100 calls: 80 ms in
  // all, whatever the scheduler does.
  Race([&](int) {
    for (int i = 1; i <= 20'000; ++i) {
      if (l->TryAcquire()) admitted.fetch_add(1);
      if (i % 100 == 0) clock.Advance(absl::Microseconds(50));
    }
  });
  // 80 ms at 10,000/s, plus the burst.
  EXPECT_LE(admitted.load(), 800 + 100);
  EXPECT_GE(admitted.load(), 100);
  EXPECT_EQ(l->stats().admitted, static_cast<uint64_t>(admitted.load()));
}

TEST(RateLimiterConcurrencyTest, EveryCallAtOnceKeepsTheBound) {
  FakeClock clock;
  RateLimitSettings s;
  s.name = "mixed";
  s.rate = 1000;
  s.burst = 50;
  s.warm_up = absl::Milliseconds(100);
  s.max_wait = absl::Milliseconds(20);
  s.credit_per_thread = 4;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto l = RateLimiter::Create(s).value();
  std::atomic<int64_t> taken{0}, returned{0}, advances{0};
  Race([&](int t) {
    for (int i = 1; i <= 5000; ++i) {
      switch ((i + t) % 5) {
        case 0:
          taken.fetch_add(l->TryAcquire() ? 1 : 0);
          break;
        case 1:
          taken.fetch_add(l->Admit(2).ok() ? 2 : 0);
          break;
        case 2:
          if (l->Reserve(3).ok()) {
            taken.fetch_add(3);
            if (i % 2 == 0) {
              l->GiveBack(3);
              returned.fetch_add(3);
            }
          }
          break;
        case 3:
          (void)l->stats();
          break;
        default:
          if (i % 10 == 4) {
            clock.Advance(absl::Microseconds(100));
            advances.fetch_add(1);
          }
      }
    }
  });
  // One permit per 100 us advance at 1000/s, plus the burst, the longest
  // wait's worth and the threads' credit.
  const int64_t net = taken.load() - returned.load();
  EXPECT_GT(advances.load(), 0);
  EXPECT_LE(net, advances.load() / 10 + 50 + 20 + kThreads * 4);
  EXPECT_GE(net, 1);
  EXPECT_EQ(l->stats().admitted_permits, static_cast<uint64_t>(taken.load()));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
