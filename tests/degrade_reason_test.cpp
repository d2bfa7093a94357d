// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// DegradeReason: the stable tokens and their parse, kAllDegradeReasons, and
// ReasonFromStatus on real breaker statuses (the payload decides, never the
// message or the code).

#include "degrade/degrade_reason.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace_test_support.hpp"  // PrintTo(DegradeReason)

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using R = DegradeReason;

// ---- Reasons ---------------------------------------------------------------

TEST(ReasonTest, NamesAreShortStableTokensThatParseBack) {
  const std::vector<std::pair<DegradeReason, absl::string_view>> table = {
      {R::kBreakerOpen, "open"},         {R::kTooManyRequests, "too_many"},
      {R::kTimeout, "timeout"},          {R::kError, "error"},
      {R::kException, "exception"},      {R::kShed, "shed"},
      {R::kUpstream, "upstream"},        {R::kInvalid, "invalid"},
      {R::kRateLimited, "rate_limited"},
  };
  for (const auto& [reason, token] : table) {
    EXPECT_EQ(ReasonName(reason), token);
    DegradeReason parsed = R::kNone;
    EXPECT_TRUE(ParseReasonName(token, &parsed)) << token;
    EXPECT_EQ(parsed, reason);
  }
  EXPECT_EQ(ReasonName(R::kNone), "none");
  EXPECT_EQ(ReasonName(static_cast<DegradeReason>(99)), "unknown");
  DegradeReason untouched = R::kShed;
  for (absl::string_view bad : {"none", "unknown", "", "OPEN", "open "}) {
    EXPECT_FALSE(ParseReasonName(bad, &untouched)) << bad;
  }
  EXPECT_EQ(untouched, R::kShed);
}

TEST(ReasonTest, AllDegradeReasonsListsEveryReasonOnceInValueOrder) {
  // The same table as above: a reason added to the enum must be added to
  // the list (and to ReasonName), and shows up here.
  EXPECT_THAT(
      kAllDegradeReasons,
      ::testing::ElementsAre(R::kBreakerOpen, R::kTooManyRequests, R::kTimeout,
                             R::kError, R::kException, R::kShed, R::kUpstream,
                             R::kInvalid, R::kRateLimited));
  std::set<std::string> tokens;
  for (DegradeReason r : kAllDegradeReasons) {
    EXPECT_TRUE(IsDegradeReason(r)) << ReasonName(r);
    EXPECT_NE(ReasonName(r), "unknown");
    EXPECT_NE(ReasonName(r), "none");
    tokens.insert(std::string(ReasonName(r)));
  }
  EXPECT_EQ(tokens.size(), kAllDegradeReasons.size()) << "tokens are distinct";
}

TEST(ReasonTest, IsDegradeReasonRejectsNoneAndBadCasts) {
  EXPECT_FALSE(IsDegradeReason(R::kNone));
  EXPECT_FALSE(IsDegradeReason(static_cast<DegradeReason>(10)));
  EXPECT_FALSE(IsDegradeReason(static_cast<DegradeReason>(255)));
  static_assert(IsDegradeReason(R::kShed), "usable in constant expressions");
  static_assert(ReasonName(R::kTimeout) == "timeout", "");
}

class ReasonFromStatusTest : public ::testing::Test {
 protected:
  BreakerSettings Settings() {
    BreakerSettings s;
    s.name = "feature-service";
    s.clock = &clock_;
    s.timeout = absl::Seconds(10);
    s.max_requests = 1;
    s.ready_to_trip = trip::ConsecutiveFailures(1);
    return s;
  }
  FakeClock clock_;
};

TEST_F(ReasonFromStatusTest, OkIsNone) {
  EXPECT_EQ(ReasonFromStatus(absl::OkStatus()), R::kNone);
}

TEST_F(ReasonFromStatusTest, OpenBreakerRejectionIsOpen) {
  CircuitBreaker<int> cb(Settings());
  (void)cb.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  ASSERT_EQ(cb.state(), State::kOpen);
  const absl::StatusOr<int> r = cb.Execute([] { return 1; });
  ASSERT_TRUE(IsBreakerOpen(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kBreakerOpen);
}

TEST_F(ReasonFromStatusTest, HalfOpenRejectionIsTooMany) {
  CircuitBreaker<int> cb(Settings());
  (void)cb.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  clock_.Advance(absl::Seconds(11));
  ASSERT_EQ(cb.state(), State::kHalfOpen);
  absl::StatusOr<Permit> trial = cb.Allow();  // takes the only trial slot
  ASSERT_TRUE(trial.ok()) << trial.status();
  const absl::StatusOr<int> r = cb.Execute([] { return 1; });
  ASSERT_TRUE(IsTooManyRequests(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kTooManyRequests);
  trial->Done(absl::OkStatus());
}

TEST_F(ReasonFromStatusTest, ThrowingCallableIsException) {
  CircuitBreaker<int> cb(Settings());
  const absl::StatusOr<int> r = cb.Execute(
      []() -> absl::StatusOr<int> { throw std::runtime_error("boom"); });
  ASSERT_TRUE(IsCallableException(r.status())) << r.status();
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kException);
}

TEST_F(ReasonFromStatusTest, CallableDeadlineExceededIsTimeout) {
  CircuitBreaker<int> cb(Settings());
  const absl::StatusOr<int> r = cb.Execute([]() -> absl::StatusOr<int> {
    return absl::DeadlineExceededError("100 ms budget spent");
  });
  EXPECT_EQ(ReasonFromStatus(r.status()), R::kTimeout);
}

TEST_F(ReasonFromStatusTest, OtherErrorsAreErrorEvenIfTheyLookLikeRejections) {
  // A backend's own UNAVAILABLE carrying the breaker's words is not a
  // rejection: only the payload counts.
  EXPECT_EQ(ReasonFromStatus(absl::UnavailableError(
                "circuit breaker 'feature-service' is open")),
            R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::InternalError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::CancelledError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::UnknownError("x")), R::kError);
  EXPECT_EQ(ReasonFromStatus(CallableExceptionError("here", "what")),
            R::kException);
}

TEST_F(ReasonFromStatusTest,
       RateLimitRefusalIsRateLimitedOtherShedsStayErrors) {
  EXPECT_EQ(ReasonFromStatus(
                RateLimitedError("rate limiter 'x'", "over", absl::Seconds(1))),
            R::kRateLimited);
  EXPECT_EQ(ReasonFromStatus(ShedError("admission", "full")), R::kError);
  EXPECT_EQ(ReasonFromStatus(absl::ResourceExhaustedError("quota")), R::kError);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
