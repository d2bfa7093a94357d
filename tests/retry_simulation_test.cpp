// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The proofs of docs/retries-and-hedging.md ("Figures"), as deterministic
// simulations on a FakeClock. Each prints its figures.
//
// Brownout in a three-layer call graph. A frontend sends 1000 requests/s
// for 60 s to layer 1, which calls layer 2, which calls the bottom. The
// bottom is in a brownout: half its calls fail (UNAVAILABLE), and it has
// slowed down to 1300 calls/s. Past that its queue grows: the calls beyond
// 1300 in a second time out (DEADLINE_EXCEEDED), and so does every call in
// the second after one that was over (the queue it left makes every call
// slower than its caller's timeout). Three clients retry: the frontend's (layer 1),
// layer 1's (layer 2) and layer 2's (the bottom). A layer answers its
// caller with what its retrier returned, so failures propagate up.
//
//   * naive: 3 attempts per layer, no budget. The retries push the bottom
//     far past its 1200/s, nearly every call times out, each failure is
//     retried at every layer, and the bottom sees the 3 x 3 x 3 = 27x
//     ceiling almost reached;
//   * budget: the same with a RetryBudget (Finagle defaults) per client,
//     and tell_callers_not_to_retry, so a layer that gave up on its own
//     retries tells its caller not to retry it again: the bottom sees its
//     requests plus at most 20% (and the 10/s floor);
//   * budget only (no telling): each layer may still add 20%, so the bottom
//     sees up to 1.2^3 = 1.73x, past its 1.3x: it stays overloaded.
//     Reported, to show why one layer must own retries;
//   * no retries at all, for the goodput.
//
// Throttling. A client is asked for 100 requests/s; the server can accept
// 40 a second and refuses the rest (RESOURCE_EXHAUSTED), i.e. 60% of the
// offered load, for 10 minutes, then heals. The client's AdaptiveThrottler
// brings what it sends down to about k x what the server accepts, and back
// to everything within one window (two minutes) of the server healing.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/retry.hpp"
#include "degrade/retry_budget.hpp"
#include "degrade/throttle.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

enum class Mode { kNaive, kBudget, kBudgetOnly, kNoRetries };

struct BrownoutFigures {
  double bottom_load = 0;  // bottom calls per frontend request
  double goodput = 0;      // fraction of frontend requests that succeeded
};

// The bottom: half its calls fail; past 1300 calls in a second the rest of
// that second and all of the next time out.
class Bottom {
 public:
  explicit Bottom(const FakeClock& clock) : clock_(clock) {}
  absl::Status Call() {
    ++calls_;
    const int64_t second = absl::ToUnixSeconds(clock_.Now());
    if (second != second_) {
      backlog_ = second == second_ + 1 && this_second_ > kCapacity;
      second_ = second;
      this_second_ = 0;
    }
    if (++this_second_ > kCapacity || backlog_) {
      return absl::DeadlineExceededError("bottom: slow, timed out");
    }
    if (rng_.NextUnit() < 0.5) return absl::UnavailableError("bottom: failed");
    return absl::OkStatus();
  }
  uint64_t calls() const { return calls_; }

 private:
  static constexpr int kCapacity = 1300;
  const FakeClock& clock_;
  detail::SplitMix64 rng_{12345};
  bool backlog_ = false;
  int64_t second_ = -1;
  int this_second_ = 0;
  uint64_t calls_ = 0;
};

BrownoutFigures RunBrownout(Mode mode) {
  FakeClock clock;
  Bottom bottom(clock);
  std::vector<std::unique_ptr<RetryBudget>> budgets;
  std::vector<std::unique_ptr<Retrier>> retriers;  // [0] frontend .. [2]
  for (int layer = 0; layer < 3; ++layer) {
    RetrySettings p;
    p.name = "layer";
    p.max_attempts = mode == Mode::kNoRetries ? 1 : 3;
    p.sleep = [](absl::Duration) {};  // backoffs do not move the arrivals
    p.seed = 100 + static_cast<uint64_t>(layer);
    p.metrics = NoTelemetry();
    if (mode == Mode::kBudget || mode == Mode::kBudgetOnly) {
      RetryBudgetSettings bs;
      bs.clock = &clock;
      bs.metrics = NoTelemetry();
      budgets.push_back(RetryBudget::Create(bs).value());
      p.budget = budgets.back().get();
      p.tell_callers_not_to_retry = mode == Mode::kBudget;
    } else {
      p.unbudgeted = true;
    }
    retriers.push_back(Retrier::Create(p).value());
  }
  const Deadline none = Deadline::At(absl::InfiniteFuture(), &clock);
  auto layer2 = [&] {
    return Retry(*retriers[2], none, [&] { return bottom.Call(); });
  };
  auto layer1 = [&] { return Retry(*retriers[1], none, layer2); };
  constexpr int kRequests = 60'000;  // 1000/s for 60 s
  int good = 0;
  for (int i = 0; i < kRequests; ++i) {
    if (Retry(*retriers[0], none, layer1).ok()) ++good;
    clock.Advance(absl::Milliseconds(1));
  }
  return {static_cast<double>(bottom.calls()) / kRequests,
          static_cast<double>(good) / kRequests};
}

TEST(RetrySimulationTest, BrownoutNaiveRetriesStormWhileTheBudgetHoldsTheLoad) {
  const BrownoutFigures naive = RunBrownout(Mode::kNaive);
  const BrownoutFigures budget = RunBrownout(Mode::kBudget);
  const BrownoutFigures budget_only = RunBrownout(Mode::kBudgetOnly);
  const BrownoutFigures none = RunBrownout(Mode::kNoRetries);
  std::printf(
      "brownout, bottom load per request / goodput:\n"
      "  naive 3x3x3      %6.2fx  %5.1f%%\n"
      "  budget + telling %6.2fx  %5.1f%%\n"
      "  budget only      %6.2fx  %5.1f%%\n"
      "  no retries       %6.2fx  %5.1f%%\n",
      naive.bottom_load, 100 * naive.goodput, budget.bottom_load,
      100 * budget.goodput, budget_only.bottom_load, 100 * budget_only.goodput,
      none.bottom_load, 100 * none.goodput);
  EXPECT_GE(naive.bottom_load, 20.0);
  // 20% of the requests, plus the floor: 10/s against 1000/s.
  EXPECT_LE(budget.bottom_load, 1.2 + 0.01);
  EXPECT_GE(budget.goodput, none.goodput);
  EXPECT_GT(budget.goodput, naive.goodput);
  EXPECT_LE(budget_only.bottom_load, 1.2 * 1.2 * 1.2 + 0.04);
}

struct ThrottleFigures {
  double sent_per_accepted = 0;  // during the overload, its last 5 minutes
  double sent_share_after = 0;   // sent / asked, 2 minutes after healing
  double first_full_second = 0;  // seconds after healing until all is sent
};

ThrottleFigures RunThrottle(double k) {
  FakeClock clock;
  ThrottleSettings s;
  s.k = k;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto throttler = AdaptiveThrottler::Create(s).value();
  constexpr int kPerSecond = 100;
  constexpr int kHealAt = 600, kEnd = 900;
  ThrottleFigures f;
  uint64_t sent = 0, accepted = 0, sent_after = 0, asked_after = 0;
  f.first_full_second = -1;
  for (int sec = 0; sec < kEnd; ++sec) {
    int accepted_this_second = 0, sent_this_second = 0;
    for (int i = 0; i < kPerSecond; ++i) {
      if (throttler->Admit().ok()) {
        ++sent_this_second;
        const bool ok = sec >= kHealAt || accepted_this_second < 40;
        if (ok) ++accepted_this_second;
        throttler->RecordStatus(ok ? absl::OkStatus()
                                   : absl::ResourceExhaustedError("full"));
      }
      clock.Advance(absl::Milliseconds(10));
    }
    if (sec >= kHealAt - 300 && sec < kHealAt) {
      sent += static_cast<uint64_t>(sent_this_second);
      accepted += static_cast<uint64_t>(accepted_this_second);
    }
    if (sec >= kHealAt + 110 && sec < kHealAt + 120) {
      sent_after += static_cast<uint64_t>(sent_this_second);
      asked_after += kPerSecond;
    }
    if (sec >= kHealAt && f.first_full_second < 0 &&
        sent_this_second == kPerSecond) {
      f.first_full_second = sec - kHealAt;
    }
  }
  f.sent_per_accepted = static_cast<double>(sent) / static_cast<double>(accepted);
  f.sent_share_after =
      static_cast<double>(sent_after) / static_cast<double>(asked_after);
  return f;
}

TEST(RetrySimulationTest, ThrottlingSendsAboutKTimesWhatIsAcceptedAndRecovers) {
  const ThrottleFigures hard = RunThrottle(1.15);
  const ThrottleFigures book = RunThrottle(2.0);
  std::printf(
      "throttling, server accepts 40%% of the offered load:\n"
      "  k = 1.15: sent / accepted %.3f; sent 2 min after healing %.1f%%; "
      "everything sent again after %.0f s\n"
      "  k = 2:    sent / accepted %.3f; sent 2 min after healing %.1f%%; "
      "everything sent again after %.0f s\n",
      hard.sent_per_accepted, 100 * hard.sent_share_after,
      hard.first_full_second, book.sent_per_accepted,
      100 * book.sent_share_after, book.first_full_second);
  EXPECT_LE(hard.sent_per_accepted, 1.2);
  EXPECT_LE(book.sent_per_accepted, 2.1);  // without throttling: 2.5
  for (const ThrottleFigures& f : {hard, book}) {
    EXPECT_EQ(f.sent_share_after, 1.0);
    EXPECT_GE(f.first_full_second, 0);
    EXPECT_LE(f.first_full_second, 120);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
