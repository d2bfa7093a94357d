// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/budget_ledger.hpp: how deposits are dated (a quiet thread's
// exactly, a busy thread's at most a tick early and never late), the window
// sliding a tick at a time, the allowance raised by deposits made since the
// mark, a clock set back or sent to the end of time never granting more,
// saturation; and threads racing deposits, withdrawals and tick boundaries
// never granting more than the windows allow and leaving the ledger whole
// (label concurrency, run under TSan).

#include "degrade/detail/budget_ledger.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace {

const absl::Duration kWindow = absl::Seconds(10);  // 1 s ticks
const absl::Duration kTick = absl::Seconds(1);

int WithdrawAll(BudgetLedger& l, int at_most = 10'000'000) {
  int n = 0;
  while (n < at_most && l.TryWithdraw()) ++n;
  return n;
}

TEST(BudgetLedgerTest, AQuietThreadsRequestsAreDatedExactly) {
  FakeClock clock;
  BudgetLedger l(1.0, 0, kWindow, &clock);
  // Five requests a tick for fifteen ticks, with nothing but the deposits
  // reading the clock: each tick's first deposit marks it.
  for (int t = 0; t < 15; ++t) {
    for (int i = 0; i < 5; ++i) l.Deposit();
    clock.Advance(kTick);
  }
  // At tick 15 the window is ticks 6..15: nine ticks of five requests.
  EXPECT_EQ(l.Read().requests, 45u);
  for (int t = 0; t < 9; ++t) {
    clock.Advance(kTick);
    EXPECT_EQ(l.Read().requests, 40u - 5u * static_cast<uint64_t>(t))
        << "tick " << 16 + t;
  }
}

TEST(BudgetLedgerTest, ABusyThreadsRequestsLeaveAtMostATickEarlyNeverLate) {
  FakeClock clock;
  BudgetLedger l(1.0, 0, kWindow, &clock);
  constexpr uint64_t kPerTick = 1000;
  for (int t = 0; t < 12; ++t) {
    for (uint64_t i = 0; i < kPerTick; ++i) l.Deposit();
    clock.Advance(kTick);
  }
  // Tick 12: ticks 3..11 hold 9,000 requests. A thread past its first 64
  // reads of a tick notices a new tick within 64 requests, so up to 63 of
  // tick 3's were booked to tick 2 and have left already.
  const uint64_t n = l.Read().requests;
  EXPECT_LE(n, 9 * kPerTick);
  EXPECT_GE(n, 9 * kPerTick - (BudgetLedger::kStride - 1));
}

TEST(BudgetLedgerTest, TheFloorAndThePercentAndTheWindowSliding) {
  FakeClock clock;
  BudgetLedger l(0.2, 10, kWindow, &clock);
  for (int i = 0; i < 100; ++i) l.Deposit();
  BudgetLedger::Window w = l.Read();
  EXPECT_EQ(w.requests, 100u);
  EXPECT_DOUBLE_EQ(w.balance, 30.0);
  EXPECT_EQ(WithdrawAll(l), 30);
  EXPECT_EQ(l.Read().retries, 30u);
  EXPECT_EQ(l.Read().balance, 0.0);
  // The retries stay in the window as long as the requests do.
  clock.Advance(9 * kTick);
  EXPECT_FALSE(l.TryWithdraw());
  clock.Advance(kTick);
  w = l.Read();
  EXPECT_EQ(w.requests, 0u);
  EXPECT_EQ(w.retries, 0u);
  EXPECT_EQ(WithdrawAll(l), 10);
  EXPECT_EQ(l.granted(), 40u);
  EXPECT_EQ(l.refused(), 3u);  // one to end each drain, one at tick 9
}

TEST(BudgetLedgerTest, RequestsMadeSinceTheMarkRaiseTheAllowanceAtOnce) {
  FakeClock clock;
  BudgetLedger l(0.5, 0, kWindow, &clock);
  EXPECT_FALSE(l.TryWithdraw());
  l.Deposit();
  EXPECT_FALSE(l.TryWithdraw());  // half a retry is none
  l.Deposit();
  EXPECT_TRUE(l.TryWithdraw());
  EXPECT_FALSE(l.TryWithdraw());
  for (int i = 0; i < 10; ++i) l.Deposit();
  EXPECT_EQ(WithdrawAll(l), 5);
}

TEST(BudgetLedgerTest, AClockSetBackHoldsTheWindowAndForgetsNoRetry) {
  FakeClock clock;
  BudgetLedger l(0.2, 0, kWindow, &clock);
  clock.Advance(5 * kTick);
  for (int i = 0; i < 1000; ++i) l.Deposit();
  EXPECT_EQ(WithdrawAll(l), 200);
  clock.Advance(-absl::Hours(1));
  EXPECT_FALSE(l.TryWithdraw());
  EXPECT_EQ(l.Read().retries, 200u);
  // Deposits still count while the clock is behind.
  for (int i = 0; i < 10; ++i) l.Deposit();
  EXPECT_EQ(WithdrawAll(l), 2);
  // Back where it was, then past the window: all of it has left.
  clock.Advance(absl::Hours(1));
  EXPECT_FALSE(l.TryWithdraw());
  clock.Advance(10 * kTick);
  EXPECT_EQ(l.Read().requests, 0u);
  for (int i = 0; i < 10; ++i) l.Deposit();
  EXPECT_EQ(WithdrawAll(l), 2);
}

TEST(BudgetLedgerTest, TheEndsOfTimeNeverGrantMoreThanTheFloor) {
  FakeClock clock;
  BudgetLedger l(0, 7, kWindow, &clock);
  clock.Set(absl::InfinitePast());
  EXPECT_EQ(WithdrawAll(l), 7);
  clock.Set(absl::InfiniteFuture());
  // Infinitely later the window has slid past everything.
  EXPECT_EQ(WithdrawAll(l), 7);
  EXPECT_EQ(WithdrawAll(l), 0);
  // The window cannot slide past the end of time; stepping back from it
  // holds the window where it is rather than granting afresh.
  clock.Set(absl::FromUnixSeconds(1'800'000'000));
  EXPECT_EQ(WithdrawAll(l), 0);
  EXPECT_EQ(l.granted(), 14u);
}

// A tick is never shorter than 1 ns, so the shortest window is 10 ns.
TEST(BudgetLedgerTest, AOneNanosecondWindowStillSlides) {
  FakeClock clock;
  BudgetLedger l(0, 3, absl::Nanoseconds(1), &clock);
  EXPECT_EQ(WithdrawAll(l), 3);
  clock.Advance(absl::Nanoseconds(9));
  EXPECT_EQ(WithdrawAll(l), 0);
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(WithdrawAll(l), 3);
}

TEST(BudgetLedgerTest, TheAllowanceSaturatesInsteadOfWrapping) {
  FakeClock clock;
  BudgetLedger l(1.0, static_cast<double>(BudgetLedger::kMaxField), kWindow,
                &clock);
  for (int i = 0; i < 1000; ++i) l.Deposit();
  EXPECT_TRUE(l.TryWithdraw());
  const BudgetLedger::Window w = l.Read();
  EXPECT_EQ(w.retries, 1u);
  EXPECT_EQ(w.requests, 1000u);
  clock.Advance(kTick);
  EXPECT_TRUE(l.TryWithdraw());
  EXPECT_EQ(l.Read().retries, 2u);
}

// Threads beyond the shard count share shards (fetch_add); none of their
// deposits may be lost.
TEST(BudgetLedgerTest, ManyThreadsDepositingLoseNothing) {
  FakeClock clock;
  BudgetLedger l(1.0, 0, kWindow, &clock);
  const int threads = static_cast<int>(ShardArraySize()) + 4;
  constexpr int kEach = 20'000;
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < kEach; ++j) l.Deposit();
    });
  }
  for (std::thread& t : ts) t.join();
  EXPECT_EQ(l.Read().requests, static_cast<uint64_t>(threads) * kEach);
}

// Within one window: racing depositors and withdrawers never get more than
// floor(percent x every deposit + reserve), and once the depositors are
// done the withdrawers find every retry that is left.
TEST(BudgetLedgerTest, RacingWithdrawalsNeverOverdrawOneWindow) {
  FakeClock clock;
  BudgetLedger l(0.2, 50, kWindow, &clock);
  constexpr int kDepositors = 2;
  constexpr int kWithdrawers = 3;
  constexpr int kEach = 50'000;
  std::atomic<int> depositing{kDepositors};
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kDepositors; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < kEach; ++j) l.Deposit();
      depositing.fetch_sub(1);
    });
  }
  for (int i = 0; i < kWithdrawers; ++i) {
    ts.emplace_back([&] {
      uint64_t mine = 0;
      for (;;) {
        const bool done = depositing.load() == 0;
        while (l.TryWithdraw()) ++mine;
        if (done) break;
        std::this_thread::yield();
      }
      granted.fetch_add(mine);
    });
  }
  for (std::thread& t : ts) t.join();
  EXPECT_EQ(granted.load(), 50u + kDepositors * kEach / 5);
  EXPECT_EQ(l.granted(), granted.load());
  EXPECT_EQ(l.Read().retries, granted.load());
}

// Across tick boundaries: withdrawers racing a thread that moves the clock
// on a tick at a time. The retries of any ten consecutive ticks fit one
// window's allowance, so T ticks grant at most the floor x ceil(T / 10);
// and the ledger is whole afterwards.
TEST(BudgetLedgerTest, RacingWithdrawalsAcrossTicksStayWithinTheWindows) {
  FakeClock clock;
  constexpr uint64_t kFloor = 100;
  BudgetLedger l(0, kFloor, kWindow, &clock);
  constexpr int kTicksRun = 40;  // ticks 0..40: 41 ticks, five blocks
  std::atomic<bool> done{false};
  std::atomic<uint64_t> attempts{0};
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&] {
      uint64_t mine = 0;
      while (!done.load()) {
        if (l.TryWithdraw()) ++mine;
        l.Deposit();
        attempts.fetch_add(1, std::memory_order_relaxed);
      }
      granted.fetch_add(mine);
    });
  }
  ts.emplace_back([&] {
    // Each tick lasts until the withdrawers have made 300 more attempts,
    // enough to drain a floor of 100 when it is there.
    for (int t = 0; t < kTicksRun; ++t) {
      const uint64_t until = attempts.load() + 300;
      while (attempts.load() < until) std::this_thread::yield();
      clock.Advance(kTick);
    }
    done.store(true);
  });
  for (std::thread& t : ts) t.join();
  EXPECT_LE(granted.load(), kFloor * 5);
  EXPECT_GE(granted.load(), kFloor);  // the first window's, at least
  EXPECT_EQ(l.granted(), granted.load());
  // Whole afterwards: a window later exactly the floor is there.
  clock.Advance(kWindow);
  EXPECT_EQ(WithdrawAll(l), static_cast<int>(kFloor));
}

}  // namespace
}  // namespace detail
}  // namespace degrade
