// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of hedge.hpp on one thread: a FakeClock and a ManualExecutor decide
// when each attempt runs, so every race here has a scripted winner. The
// real-thread races (and TSan) are in hedge_concurrency_test.cpp, the
// fan-out simulation with its figures in hedge_simulation_test.cpp.

#include "degrade/hedge.hpp"

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "degrade/testing/status_matchers.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::testing::IsOk;
using ::degrade::testing::ManualExecutor;
using ::degrade::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

class HedgeTest : public ::testing::Test {
 protected:
  std::unique_ptr<HedgePolicy> Policy(HedgeSettings s) {
    s.clock = &clock_;
    s.metrics = NoTelemetry();
    auto p = HedgePolicy::Create(std::move(s));
    EXPECT_THAT(p.status(), IsOk());
    return *std::move(p);
  }
  // A fixed 10 ms delay and a cap that lets every call hedge.
  std::unique_ptr<HedgePolicy> Fixed(int max_hedges = 1) {
    HedgeSettings s;
    s.name = "ann";
    s.delay = absl::Milliseconds(10);
    s.max_hedges = max_hedges;
    s.max_extra_load = 1.0;
    return Policy(s);
  }
  BreakerSettings Breaker() {
    BreakerSettings b;
    b.name = "ann";
    b.clock = &clock_;
    b.metrics = NoTelemetry();
    return b;
  }

  FakeClock clock_;
  ManualExecutor executor_;
};

TEST_F(HedgeTest, AnAnswerWithinTheDelaySendsNoHedge) {
  auto policy = Fixed();
  const absl::Time start = clock_.Now();
  auto call = StartHedge(*policy, executor_, [](const CancelToken& t) {
    return absl::StatusOr<int>(t.attempt());
  });
  EXPECT_EQ(call.next_hedge_at(), start + absl::Milliseconds(10));
  EXPECT_EQ(executor_.pending(), 1u);
  clock_.Advance(absl::Milliseconds(3));
  executor_.RunAll();
  ASSERT_TRUE(call.done());
  EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());
  EXPECT_FALSE(call.SendHedge());
  EXPECT_EQ(call.winner(), 0);
  EXPECT_EQ(*call.Take(), 0);
  const HedgeStats st = policy->stats();
  EXPECT_EQ(st.calls, 1u);
  EXPECT_EQ(st.hedges_sent, 0u);
  EXPECT_EQ(st.attempts_cancelled, 0u);
}

TEST_F(HedgeTest, TheHedgeWinsAndTheRunningLoserSeesCancelled) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  bool loser_saw_cancel = false;
  auto call = StartHedge(breaker, *policy, executor_,
                         [&](const CancelToken& t) -> absl::StatusOr<int> {
                           if (t.attempt() == 0) {
                             // While the first attempt runs, the hedge
                             // answers: a race with a scripted winner.
                             executor_.RunLast();
                             loser_saw_cancel = t.cancelled();
                             return 100;
                           }
                           return 200;
                         });
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(call.SendHedge());
  EXPECT_EQ(call.attempts(), 2);
  executor_.RunNext();  // the first attempt, which runs the hedge inside
  EXPECT_TRUE(loser_saw_cancel);
  EXPECT_EQ(call.winner(), 1);
  EXPECT_EQ(*call.Take(), 200);
  const HedgeStats st = policy->stats();
  EXPECT_EQ(st.hedges_sent, 1u);
  EXPECT_EQ(st.hedges_won, 1u);
  EXPECT_EQ(st.attempts_cancelled, 1u);
  // The loser is neither a success nor a failure at the breaker.
  const BreakerTotals t = breaker.totals();
  EXPECT_EQ(t.admitted, 2u);
  EXPECT_EQ(t.successes, 1u);
  EXPECT_EQ(t.failures, 0u);
  EXPECT_EQ(t.exclusions, 1u);
}

TEST_F(HedgeTest, ALoserThatNeverStartedIsNotCalledAndIsExcluded) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  int calls = 0;
  auto call = StartHedge(breaker, *policy, executor_,
                         [&](const CancelToken& t) -> absl::StatusOr<int> {
                           ++calls;
                           return t.attempt();
                         });
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(call.SendHedge());
  executor_.RunLast();  // the hedge answers while the first waits in queue
  EXPECT_EQ(*call.Take(), 1);
  executor_.RunAll();  // cancellation after completion: not called
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(breaker.totals().successes, 1u);
  EXPECT_EQ(breaker.totals().exclusions, 1u);
  EXPECT_EQ(breaker.totals().failures, 0u);
}

TEST_F(HedgeTest, AFailureWaitsForTheAttemptStillRunning) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  auto call = StartHedge(breaker, *policy, executor_,
                         [](const CancelToken& t) -> absl::StatusOr<int> {
                           if (t.attempt() == 0) {
                             return absl::UnavailableError("primary down");
                           }
                           return 7;
                         });
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(call.SendHedge());
  executor_.RunNext();  // the first attempt fails: the hedge still runs
  EXPECT_FALSE(call.done());
  executor_.RunNext();
  EXPECT_EQ(*call.Take(), 7);
  // Reported before the decision, the failure counts as one.
  EXPECT_EQ(breaker.totals().failures, 1u);
  EXPECT_EQ(breaker.totals().successes, 1u);
  EXPECT_EQ(breaker.totals().exclusions, 0u);
}

TEST_F(HedgeTest, AFailureWithNothingElseRunningIsTheAnswer) {
  auto policy = Fixed(/*max_hedges=*/3);
  auto call = StartHedge(*policy, executor_, []() -> absl::StatusOr<int> {
    return absl::UnavailableError("down");
  });
  executor_.RunAll();  // before the delay: hedging is not retrying
  ASSERT_TRUE(call.done());
  EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());
  EXPECT_FALSE(call.SendHedge());
  EXPECT_THAT(call.Take(), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_EQ(policy->stats().hedges_sent, 0u);
}

TEST_F(HedgeTest, EveryAttemptFailingEndsWithTheLastFailure) {
  auto policy = Fixed(/*max_hedges=*/2);
  // Calls that needed no hedge leave room under the cap (1 hedge per call)
  // for this one's two.
  for (int i = 0; i < 2; ++i) {
    auto quick = StartHedge(*policy, executor_, [] { return 0; });
    executor_.RunAll();
    ASSERT_THAT(quick.Take(), IsOk());
  }
  auto call = StartHedge(*policy, executor_,
                         [](const CancelToken& t) -> absl::StatusOr<int> {
                           return absl::UnavailableError(
                               t.attempt() == 0 ? "first" : "later");
                         });
  const absl::Time start = clock_.Now();
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(call.SendHedge());
  EXPECT_EQ(call.next_hedge_at(), start + absl::Milliseconds(20));
  clock_.Advance(absl::Milliseconds(10));
  ASSERT_TRUE(call.SendHedge());
  EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());  // all 3 sent
  executor_.RunAll();
  EXPECT_THAT(call.Take(), StatusIs(absl::StatusCode::kUnavailable,
                                    HasSubstr("later")));
}

TEST_F(HedgeTest, AThrowingAttemptIsAFailureWithTheExceptionStatus) {
  auto policy = Fixed();
  auto call = StartHedge(*policy, executor_, []() -> absl::StatusOr<int> {
    throw std::runtime_error("boom");
  });
  executor_.RunAll();
  const absl::StatusOr<int> r = call.Take();
  EXPECT_TRUE(IsCallableException(r.status()));
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("hedged call 'ann'"),
                                          HasSubstr("boom")));
}

TEST_F(HedgeTest, AnOpenBreakerRejectsTheFirstAttemptWithoutCallingIt) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  breaker.ForceOpen();
  int calls = 0;
  auto call = StartHedge(breaker, *policy, executor_, [&] {
    ++calls;
    return absl::StatusOr<int>(1);
  });
  EXPECT_TRUE(call.done());
  EXPECT_TRUE(IsBreakerOpen(call.Take().status()));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(executor_.pending(), 0u);
}

TEST_F(HedgeTest, ARefusedFirstAttemptRunsOnTheCallersThreadUnhedged) {
  auto policy = Fixed();
  executor_.set_refusing(true);
  auto call = StartHedge(*policy, executor_, [] {
    return absl::StatusOr<int>(5);
  });
  ASSERT_TRUE(call.done());
  EXPECT_EQ(*call.Take(), 5);
  EXPECT_EQ(executor_.refused(), 1u);
}

// An executor whose Submit() throws from its `throw_from`-th call on (a
// queue that cannot allocate, a pool that reports "stopped" by throwing,
// as Java's RejectedExecutionException does); earlier calls are queued on
// `inner`.
class ThrowingExecutor final : public Executor {
 public:
  ThrowingExecutor(Executor* inner, int throw_from)
      : inner_(inner), throw_from_(throw_from) {}
  bool Submit(std::function<void()> task) override {
    if (++calls_ >= throw_from_) throw std::runtime_error("queue is broken");
    return inner_->Submit(std::move(task));
  }

 private:
  Executor* const inner_;
  const int throw_from_;
  int calls_ = 0;
};

// Issue 32, item 8: Hedge() never throws, whatever the executor does. The
// first attempt runs on the caller's thread, as when the executor refuses.
TEST_F(HedgeTest, AThrowingSubmitRunsTheFirstAttemptOnTheCallersThread) {
  auto policy = Fixed();
  ThrowingExecutor executor(&executor_, /*throw_from=*/1);
  absl::StatusOr<int> r = absl::UnknownError("not run");
  EXPECT_NO_THROW(
      r = Hedge(*policy, executor, [] { return absl::StatusOr<int>(5); }));
  EXPECT_EQ(r.value_or(-1), 5);
  EXPECT_EQ(executor_.pending(), 0u);
}

TEST_F(HedgeTest, AThrowingSubmitForAHedgeIsARefusedHedge) {
  auto policy = Fixed(/*max_hedges=*/2);
  CircuitBreaker<int> breaker(Breaker());
  ThrowingExecutor executor(&executor_, /*throw_from=*/2);
  auto call = StartHedge(breaker, *policy, executor,
                         [] { return absl::StatusOr<int>(1); });
  clock_.Advance(absl::Milliseconds(10));
  bool sent = true;
  EXPECT_NO_THROW(sent = call.SendHedge());
  EXPECT_FALSE(sent);
  EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());
  executor_.RunAll();
  EXPECT_EQ(*call.Take(), 1);
  EXPECT_EQ(policy->stats().hedges_refused, 1u);
  EXPECT_EQ(breaker.totals().successes, 1u);
  EXPECT_EQ(breaker.totals().failures, 0u);
}

TEST_F(HedgeTest, ARefusedHedgeIsCountedAndEndsHedging) {
  auto policy = Fixed(/*max_hedges=*/2);
  CircuitBreaker<int> breaker(Breaker());
  auto call = StartHedge(breaker, *policy, executor_,
                         [] { return absl::StatusOr<int>(1); });
  executor_.set_refusing(true);
  clock_.Advance(absl::Milliseconds(10));
  EXPECT_FALSE(call.SendHedge());
  EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());
  executor_.set_refusing(false);
  executor_.RunAll();
  EXPECT_EQ(*call.Take(), 1);
  EXPECT_EQ(policy->stats().hedges_refused, 1u);
  EXPECT_EQ(policy->stats().hedges_sent, 0u);
  // The refused hedge's permit is given back as an exclusion.
  EXPECT_EQ(breaker.totals().successes, 1u);
  EXPECT_EQ(breaker.totals().failures, 0u);
}

TEST_F(HedgeTest, AHedgeTheBreakerRejectsIsNotSent) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  auto call = StartHedge(breaker, *policy, executor_,
                         [] { return absl::StatusOr<int>(1); });
  breaker.ForceOpen();  // opened while the first attempt runs
  clock_.Advance(absl::Milliseconds(10));
  EXPECT_FALSE(call.SendHedge());
  EXPECT_EQ(executor_.pending(), 1u);
  executor_.RunAll();
  EXPECT_EQ(*call.Take(), 1);  // the first attempt was admitted before
  EXPECT_EQ(policy->stats().hedges_refused, 1u);
  EXPECT_EQ(policy->stats().hedges_sent, 0u);
  EXPECT_EQ(policy->stats().extra_load, 0.0);  // its share given back
}

TEST_F(HedgeTest, DroppingTheCallCancelsItsAttempts) {
  auto policy = Fixed();
  CircuitBreaker<int> breaker(Breaker());
  int calls = 0;
  {
    auto call = StartHedge(breaker, *policy, executor_, [&] {
      ++calls;
      return absl::StatusOr<int>(1);
    });
  }
  executor_.RunAll();
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(breaker.totals().exclusions, 1u);
  EXPECT_EQ(policy->stats().attempts_cancelled, 1u);
}

TEST_F(HedgeTest, TheExtraLoadCapLimitsHedgesToItsShareOfCalls) {
  HedgeSettings s;
  s.name = "cap";
  s.delay = absl::Milliseconds(10);
  auto policy = Policy(s);  // max_extra_load 0.05
  int sent = 0;
  for (int i = 0; i < 400; ++i) {
    auto call = StartHedge(*policy, executor_,
                           [] { return absl::StatusOr<int>(1); });
    clock_.Advance(absl::Milliseconds(10));
    if (call.SendHedge()) ++sent;
    executor_.RunAll();
    ASSERT_THAT(call.Take(), IsOk());
  }
  EXPECT_LE(sent, 20);  // 5% of 400
  EXPECT_GE(sent, 19);  // and the cap is not wasted
  EXPECT_EQ(policy->stats().hedges_over_budget, 400u - sent);
  EXPECT_LE(policy->stats().extra_load, 0.05);
}

// brpc #3228: a fixed window resets and lets a burst of hedges through at
// each boundary. Here, every window-long stretch of time stays under the
// cap, boundaries included.
TEST_F(HedgeTest, TheCapHoldsOverEverySlidingWindowNotJustFixedOnes) {
  HedgeSettings s;
  s.name = "slide";
  s.delay = absl::Milliseconds(1);
  auto policy = Policy(s);
  std::vector<absl::Time> calls, hedges;
  // 20 calls/s for 30 s; every call is slow enough to want a hedge.
  for (int i = 0; i < 600; ++i) {
    auto call = StartHedge(*policy, executor_,
                           [] { return absl::StatusOr<int>(1); });
    calls.push_back(clock_.Now());
    clock_.Advance(absl::Milliseconds(1));
    if (call.SendHedge()) hedges.push_back(clock_.Now());
    executor_.RunAll();
    clock_.Advance(absl::Milliseconds(49));
  }
  ASSERT_FALSE(hedges.empty());
  const absl::Time begin = calls.front();
  for (absl::Duration off = absl::ZeroDuration(); off < absl::Seconds(20);
       off += absl::Milliseconds(250)) {
    const absl::Time from = begin + off, to = from + absl::Seconds(10);
    int c = 0, h = 0;
    for (absl::Time t : calls) c += (t >= from && t < to) ? 1 : 0;
    for (absl::Time t : hedges) h += (t >= from && t < to) ? 1 : 0;
    // The cap counts calls over 9 to 10 slices: at most one slice (1 s of
    // calls) of slack, never a whole window's.
    EXPECT_LE(h, 0.05 * (c + 20) + 1) << "window from " << off;
  }
}

TEST_F(HedgeTest, AQuantileDelayWaitsForEnoughLatenciesThenFollowsP95) {
  HedgeSettings s;
  s.name = "p95";
  s.max_extra_load = 1.0;
  auto policy = Policy(s);  // quantile 0.95, min_samples 100
  EXPECT_EQ(policy->delay(), absl::InfiniteDuration());
  {
    auto call = StartHedge(*policy, executor_,
                           [] { return absl::StatusOr<int>(1); });
    EXPECT_EQ(call.next_hedge_at(), absl::InfiniteFuture());  // no hedge yet
    executor_.RunAll();
    ASSERT_THAT(call.Take(), IsOk());
  }
  // 1..100 ms, one each: p95 is 95 ms.
  for (int ms = 1; ms <= 100; ++ms) {
    policy->RecordLatency(absl::Milliseconds(ms));
  }
  clock_.Advance(absl::Seconds(1));  // past the cached value's refresh
  const absl::Duration d = policy->delay();
  EXPECT_GE(d, absl::Milliseconds(85));
  EXPECT_LE(d, absl::Milliseconds(105));
  // The window forgets: 11 s later there is nothing to go on.
  clock_.Advance(absl::Seconds(11));
  EXPECT_EQ(policy->delay(), absl::InfiniteDuration());
}

TEST_F(HedgeTest, AttemptLatenciesFeedTheQuantileLosersIncluded) {
  HedgeSettings s;
  s.name = "feed";
  s.min_samples = 2;
  s.delay_quantile = 0.5;
  s.max_extra_load = 1.0;
  auto policy = Policy(s);
  for (int i = 0; i < 2; ++i) {
    auto call = StartHedge(*policy, executor_,
                           [] { return absl::StatusOr<int>(1); });
    clock_.Advance(absl::Milliseconds(40));
    executor_.RunAll();
    ASSERT_THAT(call.Take(), IsOk());
  }
  clock_.Advance(absl::Seconds(1));
  const absl::Duration d = policy->delay();
  EXPECT_GE(d, absl::Milliseconds(32));
  EXPECT_LE(d, absl::Milliseconds(50));
}

TEST_F(HedgeTest, BadSettingsNameTheSettingAndTheValue) {
  const auto bad = [](HedgeSettings s) {
    return HedgePolicy::Create(std::move(s)).status();
  };
  HedgeSettings s;
  s.name = "x";
  s.delay = absl::ZeroDuration();
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               AllOf(HasSubstr("'delay'"), HasSubstr("0"))));
  s.delay = absl::Milliseconds(-5);
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("-5ms")));
  s.delay = absl::InfiniteDuration();
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'delay' = inf")));
  s = HedgeSettings{};
  for (double load : {0.0, -0.1, 1.5}) {
    s.max_extra_load = load;
    EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("'max_extra_load' = ")));
  }
  s.max_extra_load = 1.0;
  EXPECT_THAT(bad(s), IsOk());
  s.delay_quantile = 1.0;
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'delay_quantile' = 1")));
  s = HedgeSettings{};
  s.max_hedges = 0;
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'max_hedges' = 0")));
  s = HedgeSettings{};
  s.min_samples = 0;
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'min_samples' = 0")));
  s = HedgeSettings{};
  s.window = absl::Milliseconds(10);
  EXPECT_THAT(bad(s), StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("'window' = 10ms")));
}

TEST_F(HedgeTest, AVoidCallHedgesToo) {
  auto policy = Fixed();
  auto call = StartHedge(*policy, executor_, [](const CancelToken&) {});
  executor_.RunAll();
  EXPECT_THAT(call.Take(), IsOk());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
