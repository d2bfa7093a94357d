// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The gMock status matchers: each one matches what it should, refuses what
// it should not, and explains a mismatch with what it saw (the code, the
// message, the payload, the value), and describes itself and its negation.
// The breaker matchers read degrade's payload, never the message.

#include "degrade/testing/status_matchers.hpp"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using ::degrade::FakeClock;
using ::degrade::testing::IsBreakerOpenStatus;
using ::degrade::testing::IsCallableExceptionStatus;
using ::degrade::testing::IsOk;
using ::degrade::testing::IsOkAndHolds;
using ::degrade::testing::IsRejectedStatus;
using ::degrade::testing::IsTooManyRequestsStatus;
using ::degrade::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::StatusCode kUnavailable = absl::StatusCode::kUnavailable;

template <typename M, typename V>
std::string Explain(const M& matcher, const V& value) {
  ::testing::StringMatchResultListener listener;
  ::testing::ExplainMatchResult(matcher, value, &listener);
  return listener.str();
}

TEST(StatusMatchersTest, IsOkOnStatusAndStatusOr) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(absl::UnavailableError("down"), Not(IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(absl::UnavailableError("down")), Not(IsOk()));
  EXPECT_EQ(Explain(IsOk(), absl::UnavailableError("down")),
            "whose status is UNAVAILABLE: down");
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(IsOk()), "is OK");
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(IsOk(), true),
            "is not OK");
}

TEST(StatusMatchersTest, StatusIsMatchesCodeAndMessage) {
  const absl::Status down = absl::UnavailableError("feature service down");
  EXPECT_THAT(down, StatusIs(kUnavailable));
  EXPECT_THAT(down, StatusIs(kUnavailable, HasSubstr("feature")));
  EXPECT_THAT(down, StatusIs(kUnavailable, "feature service down"));
  EXPECT_THAT(down, StatusIs(Not(absl::StatusCode::kOk)));
  EXPECT_THAT(absl::StatusOr<int>(down), StatusIs(kUnavailable));
  EXPECT_THAT(absl::StatusOr<int>(1), StatusIs(absl::StatusCode::kOk));

  EXPECT_THAT(down, Not(StatusIs(absl::StatusCode::kInternal)));
  EXPECT_THAT(down, Not(StatusIs(kUnavailable, HasSubstr("recall"))));
  EXPECT_THAT(Explain(StatusIs(absl::StatusCode::kInternal), down),
              HasSubstr("whose status code UNAVAILABLE is wrong"));
  EXPECT_THAT(Explain(StatusIs(kUnavailable, "recall down"), down),
              HasSubstr("whose status message is wrong (the status is "
                        "UNAVAILABLE: feature service down)"));
  EXPECT_EQ(
      ::testing::DescribeMatcher<absl::Status>(StatusIs(kUnavailable, "x")),
      "has a status code that is equal to UNAVAILABLE, and a message "
      "that is equal to \"x\"");
}

TEST(StatusMatchersTest, IsOkAndHoldsMatchesTheValue) {
  const absl::StatusOr<std::vector<float>> v = std::vector<float>{1, 2};
  EXPECT_THAT(v, IsOkAndHolds(ElementsAre(1, 2)));
  EXPECT_THAT(absl::StatusOr<int>(5), IsOkAndHolds(5));
  EXPECT_THAT(absl::StatusOr<int>(5), IsOkAndHolds(::testing::Gt(4)));

  EXPECT_THAT(absl::StatusOr<int>(5), Not(IsOkAndHolds(6)));
  EXPECT_THAT(absl::StatusOr<int>(absl::UnavailableError("down")),
              Not(IsOkAndHolds(_)));
  EXPECT_EQ(Explain(IsOkAndHolds(6), absl::StatusOr<int>(5)), "which holds 5");
  EXPECT_EQ(Explain(IsOkAndHolds(6),
                    absl::StatusOr<int>(absl::UnavailableError("down"))),
            "whose status is UNAVAILABLE: down");
  EXPECT_EQ(::testing::DescribeMatcher<absl::StatusOr<int>>(IsOkAndHolds(6)),
            "is OK and has a value that is equal to 6");
}

TEST(StatusMatchersTest, BreakerRejectionsAreToldApartFromBackendErrors) {
  FakeClock clock;
  degrade::BreakerSettings settings;
  settings.name = "feature-service";
  settings.clock = &clock;
  settings.timeout = absl::Seconds(10);
  settings.ready_to_trip = degrade::trip::ConsecutiveFailures(1);
  degrade::CircuitBreaker<int> breaker(settings);

  const absl::StatusOr<int> backend_error =
      breaker.Execute([]() -> absl::StatusOr<int> {
        return absl::UnavailableError("backend down");
      });
  EXPECT_THAT(backend_error, StatusIs(kUnavailable));
  EXPECT_THAT(backend_error, Not(IsBreakerOpenStatus()))
      << "same code, but not a rejection";
  EXPECT_THAT(backend_error, Not(IsRejectedStatus()));

  const absl::StatusOr<int> rejected = breaker.Execute([] { return 1; });
  EXPECT_THAT(rejected, IsBreakerOpenStatus());
  EXPECT_THAT(rejected.status(), IsRejectedStatus());
  EXPECT_THAT(rejected, Not(IsTooManyRequestsStatus()));
  EXPECT_THAT(Explain(IsBreakerOpenStatus(), rejected.status()),
              HasSubstr("feature-service"));

  // Half-open with its one trial taken: the next call is "too many".
  clock.Advance(absl::Seconds(11));
  absl::StatusOr<degrade::Permit> trial = breaker.Allow();
  ASSERT_TRUE(trial.ok());
  EXPECT_THAT(breaker.Execute([] { return 1; }), IsTooManyRequestsStatus());
  trial->Done(absl::OkStatus());

  const absl::Status threw =
      degrade::CallableExceptionError("breaker 'x'", "boom");
  EXPECT_THAT(threw, IsCallableExceptionStatus());
  EXPECT_THAT(absl::UnknownError("boom"), Not(IsCallableExceptionStatus()));
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(IsBreakerOpenStatus()),
            "is a rejection by an open circuit breaker");
}

// ---- Match and explain, case by case ----------------------------------------

TEST(StatusMatchersTest, MatchesExplainNothingBeyondWhatTheySaw) {
  // A match on an OK value has nothing to complain about.
  EXPECT_EQ(Explain(IsOk(), absl::OkStatus()), "");
  EXPECT_EQ(Explain(IsOk(), absl::StatusOr<int>(1)), "");
  // StatusIs and the predicates say what they saw either way, so a
  // surprising pass is as readable as a failure.
  EXPECT_EQ(Explain(StatusIs(kUnavailable), absl::UnavailableError("down")),
            "whose status is UNAVAILABLE: down");
  EXPECT_EQ(Explain(IsOkAndHolds(5), absl::StatusOr<int>(5)), "which holds 5");
}

TEST(StatusMatchersTest, IsOkExplainsTheErrorOfAStatusOr) {
  const absl::StatusOr<std::string> failed = absl::NotFoundError("no user 7");
  EXPECT_THAT(failed, Not(IsOk()));
  EXPECT_EQ(Explain(IsOk(), failed), "whose status is NOT_FOUND: no user 7");
}

TEST(StatusMatchersTest, StatusIsExplainsTheInnerMatchersComplaint) {
  const absl::Status down = absl::UnavailableError("feature service down");
  // The code matcher's own explanation is passed on.
  const std::string code =
      Explain(StatusIs(::testing::AnyOf(absl::StatusCode::kInternal,
                                        absl::StatusCode::kUnknown)),
              down);
  EXPECT_THAT(code, HasSubstr("whose status code UNAVAILABLE is wrong (the "
                              "status is UNAVAILABLE: feature service down)"));
  // So is the message matcher's.
  const std::string message =
      Explain(StatusIs(kUnavailable, ::testing::StartsWith("recall")), down);
  EXPECT_THAT(message, HasSubstr("whose status message is wrong"));
  EXPECT_THAT(message, HasSubstr("feature service down"));
  // An OK StatusOr has code OK: StatusIs(kUnavailable) refuses it, saying so.
  EXPECT_THAT(Explain(StatusIs(kUnavailable), absl::StatusOr<int>(3)),
              HasSubstr("whose status code OK is wrong"));
  EXPECT_EQ(::testing::DescribeMatcher<absl::Status>(
                StatusIs(kUnavailable, "x"), /*negation=*/true),
            "has a status code that isn't equal to UNAVAILABLE, or a message "
            "that isn't equal to \"x\"");
}

TEST(StatusMatchersTest, IsOkAndHoldsPassesOnTheInnerExplanation) {
  const absl::StatusOr<std::vector<int>> v = std::vector<int>{1, 2};
  EXPECT_THAT(v, Not(IsOkAndHolds(ElementsAre(1, 3))));
  const std::string why = Explain(IsOkAndHolds(ElementsAre(1, 3)), v);
  EXPECT_THAT(why, HasSubstr("which holds { 1, 2 }"));
  EXPECT_THAT(why, HasSubstr("element #1"));  // ElementsAre's own words
  EXPECT_EQ(::testing::DescribeMatcher<absl::StatusOr<int>>(IsOkAndHolds(6),
                                                            /*negation=*/true),
            "is not OK, or has a value that isn't equal to 6");
}

// One row per predicate matcher: the payload reason it reads, its
// description, and the statuses it must match and refuse.
struct PredicateCase {
  ::testing::Matcher<const absl::Status&> matcher;
  std::vector<absl::Status> matches;
  std::vector<absl::Status> refuses;
  std::string description;
};

absl::Status Tagged(absl::Status s, absl::string_view reason) {
  return degrade::detail::WithReason(std::move(s), reason);
}

TEST(StatusMatchersTest, PredicateMatchersReadThePayloadTable) {
  using degrade::detail::kReasonException;
  using degrade::detail::kReasonOpen;
  using degrade::detail::kReasonTooMany;
  const absl::Status open = Tagged(absl::UnavailableError("b"), kReasonOpen);
  const absl::Status too_many =
      Tagged(absl::UnavailableError("b"), kReasonTooMany);
  const absl::Status threw = Tagged(absl::UnknownError("b"), kReasonException);
  // Backend errors that say the words but carry no payload.
  const absl::Status says_open =
      absl::UnavailableError("circuit breaker 'b' is open");
  const absl::Status says_threw =
      absl::UnknownError("the callable threw an exception: boom");
  const std::vector<PredicateCase> table = {
      {IsBreakerOpenStatus(),
       {open},
       {too_many, threw, says_open, absl::OkStatus()},
       "is a rejection by an open circuit breaker"},
      {IsTooManyRequestsStatus(),
       {too_many},
       {open, threw, says_open, absl::OkStatus()},
       "is a rejection by a half-open circuit breaker with no trial slot "
       "left"},
      {IsRejectedStatus(),
       {open, too_many},
       {threw, says_open, absl::OkStatus()},
       "is a rejection by a circuit breaker"},
      {IsCallableExceptionStatus(),
       {threw},
       {open, says_threw, absl::UnknownError("boom"), absl::OkStatus()},
       "is the status of an exception thrown by a breaker's callable"},
  };
  for (const PredicateCase& c : table) {
    EXPECT_EQ(::testing::DescribeMatcher<const absl::Status&>(c.matcher),
              c.description);
    EXPECT_EQ(::testing::DescribeMatcher<const absl::Status&>(c.matcher, true),
              "is not" + c.description.substr(2));
    for (const absl::Status& s : c.matches) {
      EXPECT_THAT(s, c.matcher) << c.description;
    }
    for (const absl::Status& s : c.refuses) {
      EXPECT_THAT(s, Not(c.matcher)) << c.description;
      // The explanation shows the status whole, payload included, which is
      // what tells a rejection from a backend error that looks like one.
      EXPECT_EQ(Explain(c.matcher, s), "whose status is " + s.ToString())
          << c.description;
    }
  }
  EXPECT_THAT(Explain(IsBreakerOpenStatus(), too_many),
              HasSubstr("too_many_requests"));
}

TEST(StatusMatchersTest, MatchersTakeStatusOrByValueAndByReference) {
  const absl::StatusOr<int> rejected =
      Tagged(absl::UnavailableError("b"), degrade::detail::kReasonOpen);
  const absl::StatusOr<int>& ref = rejected;
  EXPECT_THAT(rejected, IsBreakerOpenStatus());
  EXPECT_THAT(ref, IsRejectedStatus());
  EXPECT_THAT(absl::StatusOr<int>(rejected), StatusIs(kUnavailable));
  EXPECT_THAT(rejected.status(), Not(IsOk()));
}

}  // namespace DEGRADE_TEST_UNIT
