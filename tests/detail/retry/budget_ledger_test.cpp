// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/retry/budget_ledger.hpp: how deposits are dated (a quiet thread's
// exactly, a busy thread's at most a tick early and never late), the window
// sliding a tick at a time, the allowance raised by deposits made since the
// mark, a clock set back or sent to the end of time never granting more,
// a ledger built at InfinitePast, 1 ns ticks at the end of time,
// saturation; a withdrawal racing a mark refused rather than granted from
// the ended window, one preempted across a tick judged by the tick it
// read, a mark dated when it is taken (HookClock puts a second thread, or
// a stall, inside a call);
// and threads racing deposits, withdrawals and tick boundaries
// never granting more than the windows allow and leaving the ledger whole
// (label concurrency, run under TSan).

#include "degrade/detail/retry/budget_ledger.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Duration kWindow = absl::Seconds(10);  // 1 s ticks
const absl::Duration kTick = absl::Seconds(1);

int WithdrawAll(BudgetLedger& l, int at_most = 10'000'000) {
  int n = 0;
  while (n < at_most && l.TryWithdraw()) ++n;
  return n;
}

// A clock that runs a hook on its n-th read from when it is armed: a way to
// act at a chosen point inside a ledger call (the read a mark takes under
// its lock is the second read of a withdrawal that notices a tick). The
// read returns the time after the hook, or with `stale` the time before
// it (the caller was preempted between reading the clock and using it).
class HookClock : public Clock {
 public:
  absl::Time Now() const override {
    std::function<void()> hook;
    absl::Time before;
    bool stale;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (countdown_ > 0 && --countdown_ == 0) hook = std::move(hook_);
      before = now_;
      stale = stale_;
    }
    if (hook) hook();
    std::lock_guard<std::mutex> lock(mu_);
    return hook && stale ? before : now_;
  }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }
  void Arm(int nth_read, std::function<void()> hook, bool stale = false) {
    std::lock_guard<std::mutex> lock(mu_);
    countdown_ = nth_read;
    hook_ = std::move(hook);
    stale_ = stale;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  mutable int countdown_ = 0;
  mutable std::function<void()> hook_;
  bool stale_ = false;
};

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

// Another thread's withdrawal that notices the new tick while this one is
// marking it must not be granted from the window that has just ended: it
// would be dated before the mark and leave the window a tick early (with
// a marker stalled long enough, a window would grant twice its floor).
TEST(BudgetLedgerTest, AWithdrawalWhileAnotherThreadMarksIsRefused) {
  HookClock clock;
  BudgetLedger l(0, 5, kWindow, &clock);
  EXPECT_EQ(WithdrawAll(l, 3), 3);  // tick 0: 2 of the floor left
  clock.Advance(kTick);
  bool racer_granted = true;
  // The outer withdrawal's first read notices tick 1; its second is the
  // mark's, under the lock: the racer runs there.
  clock.Arm(2, [&] {
    std::thread racer([&] { racer_granted = l.TryWithdraw(); });
    racer.join();
  });
  EXPECT_TRUE(l.TryWithdraw());  // from tick 1's window: 3 used, 2 left
  EXPECT_FALSE(racer_granted);
  EXPECT_EQ(l.refused(), 1u);
  EXPECT_EQ(WithdrawAll(l), 1);
  // Ticks 0..9 granted the floor; tick 10 frees tick 0's three.
  for (int t = 2; t <= 9; ++t) {
    clock.Advance(kTick);
    EXPECT_EQ(WithdrawAll(l), 0) << "tick " << t;
  }
  clock.Advance(kTick);
  EXPECT_EQ(WithdrawAll(l), 3);
  EXPECT_EQ(l.granted(), 8u);
}

// A caller that noticed tick 2 and was then preempted until tick 5 must
// date its mark tick 5. Labelled tick 2, the mark would leave the window
// three ticks early, and with it every request a busy thread (one reading
// the clock only every 64th deposit) made after it.
TEST(BudgetLedgerTest, AMarkIsDatedWhenTakenNotWhenNoticed) {
  HookClock clock;
  BudgetLedger l(1.0, 0, kWindow, &clock);
  clock.Advance(kTick);
  for (int i = 0; i < 64; ++i) l.Deposit();  // tick 1: now on its stride
  clock.Advance(kTick);
  clock.Arm(2, [&] { clock.Advance(3 * kTick); });  // the stall
  l.TryWithdraw();                           // notices tick 2, marks at tick 5
  for (int i = 0; i < 63; ++i) l.Deposit();  // tick 5, no clock read
  clock.Advance(7 * kTick);
  for (int t = 12; t <= 14; ++t) {
    EXPECT_EQ(l.Read().requests, 63u) << "tick " << t;
    clock.Advance(kTick);
  }
  EXPECT_EQ(l.Read().requests, 0u) << "tick 15";
}

// A withdrawal that read the clock in tick 9 and was preempted while
// another thread marked tick 10 must be judged by tick 9's window, which is
// spent: granted from tick 10's fresh window, ticks 0..9 by the clocks
// their withdrawals read would have granted the floor and one more.
TEST(BudgetLedgerTest, AWithdrawalIsJudgedByTheTickItsClockReadShowed) {
  HookClock clock;
  BudgetLedger l(0, 5, kWindow, &clock);
  EXPECT_EQ(WithdrawAll(l), 5);  // tick 0
  clock.Advance(9 * kTick);
  clock.Arm(
      1,
      [&] {
        clock.Advance(kTick);
        std::thread marker([&] { l.Read(); });  // marks tick 10
        marker.join();
      },
      /*stale=*/true);
  EXPECT_FALSE(l.TryWithdraw());  // read tick 9
  EXPECT_EQ(WithdrawAll(l), 5);   // tick 10: ticks 1..10 granted nothing
  EXPECT_EQ(l.granted(), 10u);
}

// With 1 ns ticks the last ten ticks of the clock's range are one window
// like any other (the window test once wrapped there).
TEST(BudgetLedgerTest, TheLastTicksOfTimeAreOneWindow) {
  FakeClock clock;
  BudgetLedger l(0, 3, absl::Nanoseconds(10), &clock);  // 1 ns ticks
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  clock.Set(absl::FromUnixNanos(kMax - 5));
  EXPECT_EQ(WithdrawAll(l), 3);
  clock.Set(absl::FromUnixNanos(kMax - 2));
  EXPECT_EQ(WithdrawAll(l), 0);
  clock.Set(absl::InfiniteFuture());
  EXPECT_EQ(WithdrawAll(l), 0);
  EXPECT_EQ(l.granted(), 3u);
}

// Ticks count from the start of the clock's range: a ledger built while
// a FakeClock reads InfinitePast slides normally once time returns.
TEST(BudgetLedgerTest, ALedgerBuiltAtInfinitePastStillSlides) {
  FakeClock clock;
  clock.Set(absl::InfinitePast());
  BudgetLedger l(0, 4, kWindow, &clock);
  EXPECT_EQ(WithdrawAll(l), 4);
  clock.Set(absl::FromUnixSeconds(1'800'000'000));
  EXPECT_EQ(WithdrawAll(l), 4);
  clock.Advance(9 * kTick);
  EXPECT_EQ(WithdrawAll(l), 0);
  clock.Advance(kTick);
  EXPECT_EQ(WithdrawAll(l), 4);
  EXPECT_EQ(l.granted(), 12u);
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

// The same race with readers (Read() takes marks too, granted() reads
// beside them), checked a window at a time: every withdrawal records the
// tick its clock read showed before and after it, and the retries whose
// whole withdrawal fell within any ten consecutive ticks fit the floor.
// (One that straddled a boundary may be dated either side, so it is left
// out.) The race this guards most, a withdrawal granted from a window that
// has just ended, is rare here; AWithdrawalWhileAnotherThreadMarksIsRefused
// forces it.
TEST(BudgetLedgerTest, NoTenTicksGrantMoreThanTheFloorWhileReadersRace) {
  FakeClock clock;
  constexpr uint64_t kFloor = 20;
  constexpr int kTicksRun = 200;
  constexpr int kWithdrawers = 3;
  BudgetLedger l(0, kFloor, kWindow, &clock);
  const absl::Time start = clock.Now();
  auto tick_now = [&] {
    return static_cast<int>((clock.Now() - start) / kTick);
  };
  std::vector<std::vector<std::pair<int, int>>> grants(kWithdrawers);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> attempts{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < kWithdrawers; ++i) {
    ts.emplace_back([&, i] {
      while (!done.load()) {
        const int before = tick_now();
        const bool ok = l.TryWithdraw();
        if (ok) grants[i].emplace_back(before, tick_now());
        attempts.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // The readers race the withdrawals and the marks. What they see must
  // still hold: granted() never goes back (it is every retry ever granted,
  // whatever mark came between), and the window never shows more retries
  // than the floor allows (percent 0: the allowance is the floor).
  std::atomic<uint64_t> granted_went_back{0};
  std::atomic<uint64_t> window_over_floor{0};
  std::atomic<uint64_t> reads{0};
  ts.emplace_back([&] {
    uint64_t last = 0;
    while (!done.load()) {
      const uint64_t g = l.granted();
      if (g < last) granted_went_back.fetch_add(1);
      last = g;
      if (l.Read().retries > kFloor) window_over_floor.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  ts.emplace_back([&] {
    for (int t = 0; t < kTicksRun; ++t) {
      const uint64_t until = attempts.load() + 60;
      while (attempts.load() < until) std::this_thread::yield();
      clock.Advance(kTick);
    }
    done.store(true);
  });
  for (std::thread& t : ts) t.join();
  uint64_t total = 0;
  std::vector<uint64_t> within(kTicksRun + 1);  // by tick, non-straddling
  for (const auto& mine : grants) {
    total += mine.size();
    for (const auto& [before, after] : mine) {
      if (before == after) ++within[static_cast<std::size_t>(before)];
    }
  }
  EXPECT_EQ(l.granted(), total);
  EXPECT_EQ(granted_went_back.load(), 0u);
  EXPECT_EQ(window_over_floor.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  for (int first = 0; first + 9 <= kTicksRun; ++first) {
    uint64_t in = 0;
    for (int t = first; t < first + 10; ++t) {
      in += within[static_cast<std::size_t>(t)];
    }
    EXPECT_LE(in, kFloor) << "ticks " << first << ".." << first + 9;
  }
  EXPECT_GE(total, kFloor);  // the first window, at least
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
