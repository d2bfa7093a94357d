// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// status.hpp and the payload behind it (detail/status_payload.hpp): the
// predicates read degrade's payload and nothing else (not the message, not
// the code), CallableExceptionError has one shape, and detail::Reworded
// keeps the code and every payload while leaving an OK status alone.

#include "degrade/status.hpp"

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/status_payload.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

absl::Status Tagged(absl::Status s, absl::string_view reason) {
  return detail::WithReason(std::move(s), reason);
}

TEST(StatusTest, PredicatesReadThePayloadNeverTheMessageTable) {
  struct Case {
    std::string name;
    absl::Status status;
    bool open;
    bool too_many;
    bool exception;
  };
  const absl::Status foreign_url = [] {
    absl::Status s = absl::UnavailableError("x");
    s.SetPayload("type.example.com/other", absl::Cord(detail::kReasonOpen));
    return s;
  }();
  const std::vector<Case> table = {
      {"open", Tagged(absl::UnavailableError("b"), detail::kReasonOpen), true,
       false, false},
      {"too many", Tagged(absl::UnavailableError("b"), detail::kReasonTooMany),
       false, true, false},
      {"exception", Tagged(absl::UnknownError("b"), detail::kReasonException),
       false, false, true},
      // The code plays no part: the payload alone decides.
      {"open, any code", Tagged(absl::InternalError("b"), detail::kReasonOpen),
       true, false, false},
      {"open, empty message",
       Tagged(absl::UnavailableError(""), detail::kReasonOpen), true, false,
       false},
      // The words without the payload are a backend's error.
      {"says open", absl::UnavailableError("circuit breaker 'b' is open"),
       false, false, false},
      {"says too many",
       absl::UnavailableError("circuit breaker 'b' is half-open: too many "
                              "requests"),
       false, false, false},
      {"says threw",
       absl::UnknownError("b: the callable threw an exception: boom"), false,
       false, false},
      {"unknown reason", Tagged(absl::UnavailableError("b"), "breaker_opened"),
       false, false, false},
      {"empty reason", Tagged(absl::UnavailableError("b"), ""), false, false,
       false},
      {"another url", foreign_url, false, false, false},
      {"ok", absl::OkStatus(), false, false, false},
      // An OK status cannot carry a payload (absl drops it).
      {"ok, tagged", Tagged(absl::OkStatus(), detail::kReasonOpen), false,
       false, false},
  };
  for (const Case& c : table) {
    EXPECT_EQ(IsBreakerOpen(c.status), c.open) << c.name;
    EXPECT_EQ(IsTooManyRequests(c.status), c.too_many) << c.name;
    EXPECT_EQ(IsCallableException(c.status), c.exception) << c.name;
    EXPECT_EQ(IsRejected(c.status), c.open || c.too_many) << c.name;
  }
}

TEST(StatusTest, CallableExceptionErrorHasOneShape) {
  const absl::Status s =
      CallableExceptionError("circuit breaker 'rank'", "socket closed");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(s.message(),
            "circuit breaker 'rank': the callable threw an exception: socket "
            "closed");
  const auto payload = s.GetPayload(kStatusPayloadUrl);  // absl::optional
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(*payload, "callable_exception");
  EXPECT_TRUE(IsCallableException(s));
  EXPECT_FALSE(IsRejected(s));
  EXPECT_EQ(kStatusPayloadUrl, "type.degrade.dev/degrade.Reason");
}

TEST(StatusTest, RewordedKeepsTheCodeAndEveryPayload) {
  absl::Status original =
      Tagged(absl::DeadlineExceededError("late"), detail::kReasonException);
  original.SetPayload("type.example.com/trace", absl::Cord("abc"));
  const absl::Status s =
      detail::Reworded(original, "stage 'rank': late (after 100ms)");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), "stage 'rank': late (after 100ms)");
  EXPECT_TRUE(IsCallableException(s));
  EXPECT_EQ(s.GetPayload("type.example.com/trace"), absl::Cord("abc"));
  int payloads = 0;
  s.ForEachPayload(
      [&payloads](absl::string_view, const absl::Cord&) { ++payloads; });
  EXPECT_EQ(payloads, 2);
  EXPECT_EQ(original.message(), "late");  // the original is untouched
}

TEST(StatusTest, RewordedLeavesOkAlone) {
  const absl::Status s = detail::Reworded(absl::OkStatus(), "context");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(StatusTest, ShedErrorIsResourceExhaustedWithAHint) {
  const absl::Status s =
      ShedError("admission \"rank\"", "SHEDDABLE below the threshold",
                absl::Microseconds(1500));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(IsShed(s));
  EXPECT_FALSE(IsRejected(s));
  EXPECT_NE(s.message().find("admission \"rank\": shed: SHEDDABLE"),
            absl::string_view::npos)
      << s;
  // Rounded up to whole milliseconds: a hint never says "sooner".
  EXPECT_EQ(ShedRetryAfter(s), absl::Milliseconds(2));
  EXPECT_EQ(ShedRetryAfter(ShedError("q", "full", absl::ZeroDuration())),
            absl::ZeroDuration());
}

TEST(StatusTest, ShedWithoutHintAndDoNotRetry) {
  EXPECT_EQ(ShedRetryAfter(ShedError("q", "full")), std::nullopt);
  for (const absl::Duration never :
       {absl::Milliseconds(-5), absl::InfiniteDuration(),
        -absl::InfiniteDuration()}) {
    const auto hint = ShedRetryAfter(ShedError("q", "full", never));
    ASSERT_TRUE(hint.has_value());
    EXPECT_LT(*hint, absl::ZeroDuration()) << never;
  }
}

// Any positive hint rounds up to a whole millisecond, sub-nanosecond too.
TEST(StatusTest, ShedRetryAfterRoundsUpSubNanosecondDurations) {
  const absl::Duration a = absl::Milliseconds(1) + absl::Nanoseconds(0.5);
  ASSERT_GT(a, absl::Milliseconds(1));
  std::optional<absl::Duration> got = ShedRetryAfter(ShedError("x", "y", a));
  ASSERT_TRUE(got.has_value());
  EXPECT_GE(*got, a) << "rounded down to " << absl::FormatDuration(*got);

  const absl::Duration b = absl::Nanoseconds(0.25);
  ASSERT_GT(b, absl::ZeroDuration());
  got = ShedRetryAfter(ShedError("x", "y", b));
  ASSERT_TRUE(got.has_value());
  EXPECT_GE(*got, b) << "a positive hint became " << absl::FormatDuration(*got);
}

TEST(StatusTest, ShedIsReadFromThePayloadOnly) {
  EXPECT_FALSE(IsShed(absl::ResourceExhaustedError("shed: full")));
  EXPECT_EQ(ShedRetryAfter(absl::ResourceExhaustedError("x")), std::nullopt);
  absl::Status odd = ShedError("q", "full");
  odd.SetPayload(kRetryAfterPayloadUrl, absl::Cord("soon"));
  EXPECT_TRUE(IsShed(odd));
  EXPECT_EQ(ShedRetryAfter(odd), std::nullopt);  // malformed: no hint
  EXPECT_FALSE(IsShed(absl::OkStatus()));
}

// What an RPC adapter attaches when a server sent a pushback: the same
// payload as a shed's, on any status, without making it a shed.
TEST(StatusTest, WithRetryAfterGivesAnyFailureAHintAndKeepsTheRest) {
  const absl::Status s =
      WithRetryAfter(absl::UnavailableError("recall: down"), absl::Milliseconds(250));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "recall: down");
  EXPECT_FALSE(IsShed(s));
  EXPECT_EQ(RetryAfterHint(s), absl::Milliseconds(250));

  // Rounded up; negative and infinite are "do not retry"; OK stays OK.
  EXPECT_EQ(RetryAfterHint(WithRetryAfter(absl::UnknownError("x"), absl::Nanoseconds(1))),
            absl::Milliseconds(1));
  for (const absl::Duration d : {absl::Milliseconds(-5), absl::InfiniteDuration(),
                                 -absl::InfiniteDuration()}) {
    const std::optional<absl::Duration> hint =
        RetryAfterHint(WithRetryAfter(absl::UnknownError("x"), d));
    ASSERT_TRUE(hint.has_value()) << absl::FormatDuration(d);
    EXPECT_LT(*hint, absl::ZeroDuration()) << absl::FormatDuration(d);
  }
  EXPECT_TRUE(WithRetryAfter(absl::OkStatus(), absl::Seconds(1)).ok());
  EXPECT_EQ(RetryAfterHint(WithRetryAfter(absl::OkStatus(), absl::Seconds(1))),
            std::nullopt);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
