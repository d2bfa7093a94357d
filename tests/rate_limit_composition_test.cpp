// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A limiter in front of a breaker and a fallback: WithFallback(limiter,
// breaker, ...) serves Plan B on a refusal, tagged rate_limited, without
// running the call or counting anything in the breaker; the limiters'
// refusals are RateLimitedError (still a shed, with its retry-after), and
// ReasonFromStatus tells them from other sheds without changing how those
// read.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/with_fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/breakers.hpp"
#include "support/traces.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::Entries;
using ::degrade_tests::MakeBreaker;
using ::degrade_tests::Trip;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using R = DegradeReason;

std::unique_ptr<RateLimiter> MakeLimiter(const FakeClock& clock, double rate,
                                         int64_t burst) {
  RateLimitSettings s;
  s.name = "feature_store";
  s.rate = rate;
  s.burst = burst;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto l = RateLimiter::Create(s);
  EXPECT_TRUE(l.ok()) << l.status();
  return std::move(l).value();
}

class LimiterBreakerFallbackTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::unique_ptr<RateLimiter> limiter_ = MakeLimiter(clock_, 1, 2);
  std::unique_ptr<CircuitBreaker<int>> cb_ = MakeBreaker<int>(&clock_, "cb");
  int calls_ = 0;

  StageResult<int> Fetch() {
    return WithFallback(
        *limiter_, *cb_, "features",
        [this] {
          ++calls_;
          return 7;
        },
        -1);
  }
};

TEST_F(LimiterBreakerFallbackTest, RefusalIsPlanBTaggedRateLimited) {
  EXPECT_FALSE(Fetch().is_default());
  EXPECT_FALSE(Fetch().is_default());  // the burst of 2
  const StageResult<int> r = Fetch();
  EXPECT_TRUE(r.is_default());
  EXPECT_EQ(r.value(), -1);
  EXPECT_THAT(Entries(r.trace()),
              ElementsAre(std::make_pair("features", R::kRateLimited)));
  EXPECT_EQ(r.trace().Encode(), "v1;features=rate_limited");
  EXPECT_EQ(calls_, 2) << "a refused call is not made";
}

TEST_F(LimiterBreakerFallbackTest, RefusalsAreNotBreakerFailures) {
  (void)Fetch();
  (void)Fetch();
  // Far more refusals than the default rule's 5 consecutive failures.
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Fetch().trace().ReasonFor("features"), R::kRateLimited);
  }
  EXPECT_EQ(cb_->state(), State::kClosed);
  const Counts c = cb_->counts();
  EXPECT_EQ(c.requests, 2u) << "the breaker saw only the admitted calls";
  EXPECT_EQ(c.total_successes, 2u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(c.consecutive_failures, 0u);
  // The limit refills at its rate and the stage is fresh again.
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(Fetch().is_default());
  EXPECT_EQ(calls_, 3);
}

TEST_F(LimiterBreakerFallbackTest, FallbackSeesTheRefusalAndItsRetryAfter) {
  (void)limiter_->TryAcquire(2);
  absl::Status seen;
  const StageResult<int> r = WithFallback(
      *limiter_, *cb_, "features", [] { return 7; },
      [&seen](const absl::Status& why) {
        seen = why;
        return -2;
      });
  EXPECT_EQ(r.value(), -2);
  EXPECT_TRUE(IsRateLimited(seen)) << seen;
  EXPECT_TRUE(IsShed(seen)) << "still a shed for retries and the gRPC adapter";
  EXPECT_EQ(ShedRetryAfter(seen), absl::Seconds(1));
}

TEST_F(LimiterBreakerFallbackTest, AdmittedFailureIsCountedAndTaggedAsBefore) {
  const StageResult<int> r = WithFallback(
      *limiter_, *cb_, "features",
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); },
      -1);
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kError);
  EXPECT_EQ(cb_->counts().total_failures, 1u);
}

TEST_F(LimiterBreakerFallbackTest, OpenBreakerBehindAnAdmittingLimiterIsOpen) {
  Trip(*cb_);
  const StageResult<int> r = Fetch();
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kBreakerOpen);
  EXPECT_EQ(calls_, 0);
  // The open breaker rejected the call before the limiter was asked: the
  // whole burst is still there for when it closes.
  EXPECT_TRUE(limiter_->TryAcquire(2)) << "a rejected call spent a permit";
}

// A breaker that opens between the limiter's admission and the call (here
// the limiter itself trips it, standing in for another thread): the call
// is not made, Plan B is tagged open, and a limiter that can take a permit
// back (GiveBack(n), as RateLimiter) is given it.
struct TrippingGate {
  CircuitBreaker<int>* breaker;
  int given_back = 0;
  absl::Status Admit() {
    Trip(*breaker);
    return absl::OkStatus();
  }
  void GiveBack(int64_t n) { given_back += static_cast<int>(n); }
};
TEST_F(LimiterBreakerFallbackTest,
       APermitForACallTheBreakerThenRejectsIsGivenBack) {
  TrippingGate gate{cb_.get()};
  const StageResult<int> r = WithFallback(
      gate, *cb_, "features",
      [this] {
        ++calls_;
        return 7;
      },
      -1);
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kBreakerOpen);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(gate.given_back, 1);
}

// Half-open, the breaker admits a trial and then the limiter is asked; a
// refusal gives the trial slot back (counted excluded), so the next call
// the limiter admits is the trial that closes the breaker, not a "too many
// requests" rejection.
TEST_F(LimiterBreakerFallbackTest,
       AHalfOpenTrialTheLimiterRefusesGivesItsSlotBack) {
  Trip(*cb_);
  clock_.Advance(kDefaultOpenTimeout + absl::Seconds(1));
  ASSERT_EQ(cb_->state(), State::kHalfOpen);
  ASSERT_TRUE(limiter_->TryAcquire(2));  // drain the burst
  const StageResult<int> refused = Fetch();
  EXPECT_EQ(refused.trace().ReasonFor("features"), R::kRateLimited);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(cb_->state(), State::kHalfOpen);
  EXPECT_EQ(cb_->totals().exclusions, 1u);
  clock_.Advance(absl::Seconds(1));  // one permit
  const StageResult<int> trial = Fetch();
  EXPECT_FALSE(trial.is_default()) << trial.trace().Encode();
  EXPECT_EQ(calls_, 1);
  EXPECT_EQ(cb_->state(), State::kClosed);
}

TEST_F(LimiterBreakerFallbackTest, FallibleFallbackFailingNamesTheLimiter) {
  (void)limiter_->TryAcquire(2);
  const absl::StatusOr<StageResult<int>> r = WithFallback(
      *limiter_, *cb_, "features", [] { return 7; },
      []() -> absl::StatusOr<int> { return absl::NotFoundError("no file"); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("stage 'features'"));
  EXPECT_THAT(r.status().message(), HasSubstr("the limiter refused"));
  EXPECT_THAT(r.status().message(), HasSubstr("rate limiter 'feature_store'"));
}

TEST_F(LimiterBreakerFallbackTest, UpstreamTraceIsMergedOnARefusal) {
  DegradationTrace upstream;
  upstream.Add("recall", R::kTimeout);
  (void)limiter_->TryAcquire(2);
  const StageResult<int> r = WithFallback(
      upstream, *limiter_, *cb_, "features", [] { return 7; }, -1);
  EXPECT_EQ(r.trace().Encode(), "v1;recall=timeout;features=rate_limited");
  const StageResult<int> fresh = WithFallback(
      upstream, *limiter_, *cb_, "features", [] { return 7; }, -1);
  EXPECT_TRUE(fresh.is_default());  // still refused: nothing refilled
  clock_.Advance(absl::Seconds(1));
  const StageResult<int> ok = WithFallback(
      upstream, *limiter_, *cb_, "features", [] { return 7; }, -1);
  EXPECT_FALSE(ok.is_default());
  EXPECT_EQ(ok.trace().Encode(), "v1;recall=timeout");
}

TEST_F(LimiterBreakerFallbackTest, KeyedLimiterThroughALambda) {
  KeyedRateLimitSettings s;
  s.name = "per_user";
  s.rate = 1;
  s.burst = 1;
  s.max_keys = 16;
  s.clock = &clock_;
  s.metrics = NoTelemetry();
  auto keyed = KeyedRateLimiter<std::string>::Create(s).value();
  auto fetch_for = [&](const std::string& user) {
    auto gate = [&] { return keyed->Admit(user); };
    return WithFallback(
        gate, *cb_, "features", [] { return 7; }, -1);
  };
  EXPECT_FALSE(fetch_for("alice").is_default());
  EXPECT_EQ(fetch_for("alice").trace().ReasonFor("features"), R::kRateLimited);
  EXPECT_FALSE(fetch_for("bob").is_default()) << "a key of its own";
  EXPECT_EQ(cb_->counts().total_failures, 0u);
}

TEST_F(LimiterBreakerFallbackTest, AnotherLimitersShedIsTaggedShed) {
  auto admission = [] {
    return ShedError("admission", "queue full", absl::Milliseconds(5));
  };
  const StageResult<int> r = WithFallback(
      admission, *cb_, "features", [] { return 7; }, -1);
  EXPECT_EQ(r.trace().ReasonFor("features"), R::kShed);
  EXPECT_EQ(cb_->counts().requests, 0u);
}

// Threads racing through one limiter, breaker and fallback: exactly the
// burst is served fresh, every other call is Plan B tagged rate_limited,
// and the breaker saw only the fresh calls.
TEST(LimiterBreakerFallbackConcurrencyTest, RefusalsNeverReachTheBreaker) {
  FakeClock clock;
  auto limiter = MakeLimiter(clock, 1, 100);
  auto cb = MakeBreaker<int>(&clock, "cb");
  constexpr int kThreads = 8;
  constexpr int kCallsEach = 200;
  std::atomic<int> fresh{0};
  std::atomic<int> limited{0};
  std::atomic<int> other{0};
  std::atomic<int> made{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCallsEach; ++i) {
        const StageResult<int> r = WithFallback(
            *limiter, *cb, "features",
            [&made] {
              made.fetch_add(1);
              return 7;
            },
            -1);
        if (!r.is_default()) {
          fresh.fetch_add(1);
        } else if (r.trace().ReasonFor("features") == R::kRateLimited) {
          limited.fetch_add(1);
        } else {
          other.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fresh.load(), 100) << "exactly the burst (the clock stands)";
  EXPECT_EQ(limited.load(), kThreads * kCallsEach - 100);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(made.load(), 100);
  const Counts c = cb->counts();
  EXPECT_EQ(c.requests, 100u);
  EXPECT_EQ(c.total_failures, 0u);
  EXPECT_EQ(cb->state(), State::kClosed);
}

// ---- The refusal's status ----

TEST(RateLimitedErrorTest, IsAShedWithTheMarker) {
  const absl::Status s = RateLimitedError("rate limiter 'x'",
                                          "over 1 permits/s", absl::Seconds(2));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(IsShed(s));
  EXPECT_TRUE(IsRateLimited(s));
  EXPECT_FALSE(IsThrottled(s));
  EXPECT_EQ(ShedRetryAfter(s), absl::Seconds(2));
  EXPECT_EQ(ReasonFromStatus(s), R::kRateLimited);
}

TEST(RateLimitedErrorTest, OtherShedsKeepTheirMapping) {
  EXPECT_FALSE(IsRateLimited(ShedError("admission", "full")));
  EXPECT_EQ(ReasonFromStatus(ShedError("admission", "full")), R::kError);
  EXPECT_EQ(ReasonFromStatus(ThrottledError("client", "throttled")), R::kError);
  // The marker alone, without the shed payload, is not a refusal of ours.
  absl::Status forged = absl::ResourceExhaustedError("backend quota");
  forged.SetPayload(kRateLimitedPayloadUrl, absl::Cord("1"));
  EXPECT_FALSE(IsRateLimited(forged));
  EXPECT_EQ(ReasonFromStatus(forged), R::kError);
  EXPECT_FALSE(IsRateLimited(absl::OkStatus()));
}

TEST(RateLimitedErrorTest, EveryLimiterRefusesWithIt) {
  FakeClock clock;
  auto local = MakeLimiter(clock, 1, 1);
  ASSERT_TRUE(local->Admit().ok());
  const absl::Status a = local->Admit();
  EXPECT_TRUE(IsRateLimited(a)) << a;
  EXPECT_EQ(ShedRetryAfter(a), absl::Seconds(1));
  const absl::Status never = local->Admit(2);
  EXPECT_TRUE(IsRateLimited(never)) << never;
  EXPECT_LT(*ShedRetryAfter(never), absl::ZeroDuration());
  const absl::StatusOr<absl::Duration> reserved = local->Reserve();
  EXPECT_TRUE(IsRateLimited(reserved.status())) << reserved.status();
  EXPECT_FALSE(IsRateLimited(local->Admit(0))) << "a bad argument is no shed";

  KeyedRateLimitSettings s;
  s.rate = 1;
  s.burst = 1;
  s.max_keys = 4;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto keyed = KeyedRateLimiter<int>::Create(s).value();
  ASSERT_TRUE(keyed->Admit(1).ok());
  EXPECT_TRUE(IsRateLimited(keyed->Admit(1)));
  EXPECT_TRUE(IsRateLimited(keyed->Admit(2, 5)));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
