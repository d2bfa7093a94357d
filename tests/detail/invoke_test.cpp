// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/invoke.hpp, the one exception boundary of the library: InvokeOr,
// CallQuietly, SafePredicate, InvokeToResult and InvokeCatching with void and
// value results, std and non-std exceptions, and the result traits.

#include "degrade/detail/invoke.hpp"

#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "degrade/status.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

constexpr absl::string_view kNotStd =
    "an exception not derived from std::exception";

// ---- Traits -----------------------------------------------------------------

static_assert(std::is_same_v<ResultOf<int>, absl::StatusOr<int>>);
static_assert(std::is_same_v<ResultOf<void>, absl::Status>);
static_assert(std::is_same_v<Unwrapped<int>::type, int>);
static_assert(
    std::is_same_v<Unwrapped<absl::StatusOr<std::string>>::type, std::string>);
static_assert(std::is_same_v<Unwrapped<absl::Status>::type, void>);
static_assert(kIsStatusOrOf<absl::StatusOr<int>, int>);
static_assert(kIsStatusOrOf<const absl::StatusOr<int>&, int>);
static_assert(!kIsStatusOrOf<int, int>);
static_assert(!kIsStatusOrOf<absl::StatusOr<long>, int>);

TEST(StatusOfTest, ReadsEitherKindOfResult) {
  const absl::Status down = absl::UnavailableError("down");
  EXPECT_EQ(StatusOf(down), down);
  EXPECT_EQ(StatusOf(absl::StatusOr<int>(down)), down);
  EXPECT_TRUE(StatusOf(absl::StatusOr<int>(3)).ok());
  // A reference into the argument, not a copy.
  const absl::StatusOr<int> r = down;
  EXPECT_EQ(&StatusOf(r), &r.status());
}

// ---- InvokeOr ---------------------------------------------------------------

TEST(InvokeOrTest, ReturnsWhatTheCallableReturns) {
  const auto on_throw = [](absl::string_view) { return -1; };
  EXPECT_EQ(InvokeOr([] { return 7; }, on_throw), 7);
  int ran = 0;
  InvokeOr([&ran] { ++ran; }, [](absl::string_view) {});
  EXPECT_EQ(ran, 1);
}

TEST(InvokeOrTest, TurnsEveryThrowIntoTheFallbackWithItsWhat) {
  struct Case {
    std::string name;
    std::function<std::string()> f;
    std::string what;
  };
  const std::vector<Case> table = {
      {"runtime_error",
       []() -> std::string { throw std::runtime_error("boom"); }, "boom"},
      {"logic_error",
       []() -> std::string { throw std::out_of_range("index 9"); }, "index 9"},
      {"int", []() -> std::string { throw 42; }, std::string(kNotStd)},
      {"c string", []() -> std::string { throw "text"; }, std::string(kNotStd)},
      {"user type",
       []() -> std::string {
         struct NotAnException {};
         throw NotAnException{};
       },
       std::string(kNotStd)},
  };
  for (const Case& c : table) {
    const std::string got = InvokeOr(c.f, [](absl::string_view what) {
      return "threw: " + std::string(what);
    });
    EXPECT_EQ(got, "threw: " + c.what) << c.name;
  }
}

// ---- CallQuietly and SafePredicate
// -------------------------------------------

TEST(CallQuietlyTest, CallsWithTheArgumentsAndSwallowsThrows) {
  std::vector<int> seen;
  CallQuietly([&seen](int a, int b) { seen.push_back(a + b); }, 2, 3);
  EXPECT_EQ(seen, std::vector<int>{5});
  // Neither kind of throw escapes, and the caller carries on.
  CallQuietly([](int) { throw std::runtime_error("observer broke"); }, 1);
  CallQuietly([] { throw 7; });
  // A callable with a result: the result is dropped.
  CallQuietly([&seen] {
    seen.push_back(9);
    return 1;
  });
  EXPECT_EQ(seen, (std::vector<int>{5, 9}));
}

TEST(SafePredicateTest, PassesTheAnswerOrGivesTheFallback) {
  const auto is_even = [](int v) { return v % 2 == 0; };
  EXPECT_TRUE(SafePredicate(is_even, false, 4));
  EXPECT_FALSE(SafePredicate(is_even, true, 3));
  const auto throws = [](int) -> bool { throw std::runtime_error("x"); };
  const auto throws_int = [](int) -> bool { throw 1; };
  for (const bool fallback : {true, false}) {
    EXPECT_EQ(SafePredicate(throws, fallback, 1), fallback);
    EXPECT_EQ(SafePredicate(throws_int, fallback, 1), fallback);
  }
  // A result convertible to bool is converted.
  EXPECT_TRUE(SafePredicate([] { return 5; }, false));
}

// ---- InvokeToResult and InvokeCatching --------------------------------------

TEST(InvokeToResultTest, WrapsEachKindOfResult) {
  auto value = [] { return 3; };
  auto status_or = []() -> absl::StatusOr<int> {
    return absl::NotFoundError("none");
  };
  auto status = [] { return absl::InternalError("bad"); };
  int ran = 0;
  auto nothing = [&ran] { ++ran; };
  EXPECT_EQ(*InvokeToResult<int>(value), 3);
  EXPECT_TRUE(absl::IsNotFound(InvokeToResult<int>(status_or).status()));
  EXPECT_TRUE(absl::IsInternal(InvokeToResult<void>(status)));
  EXPECT_TRUE(InvokeToResult<void>(nothing).ok());
  EXPECT_EQ(ran, 1);
}

TEST(InvokeCatchingTest, PassesResultsThrough) {
  auto value = [] { return std::string("ok"); };
  auto error = []() -> absl::StatusOr<int> {
    return absl::UnavailableError("down");
  };
  auto void_ok = [] {};
  auto void_error = [] { return absl::DeadlineExceededError("late"); };
  EXPECT_EQ(*InvokeCatching<std::string>(value, "k"), "ok");
  const absl::Status e = InvokeCatching<int>(error, "k").status();
  EXPECT_TRUE(absl::IsUnavailable(e));
  EXPECT_FALSE(IsCallableException(e));
  EXPECT_TRUE(InvokeCatching<void>(void_ok, "k").ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(InvokeCatching<void>(void_error, "k")));
}

TEST(InvokeCatchingTest, AThrowIsOneStatusShapeNamingWhere) {
  struct Case {
    std::string name;
    absl::string_view kind;
    absl::string_view who;
    absl::string_view what_for;
    std::string message;
  };
  const std::vector<Case> table = {
      {"kind alone", "CallWithTimeout", "", "",
       "CallWithTimeout: the callable threw an exception: boom"},
      {"kind and name", "circuit breaker", "recall", "",
       "circuit breaker 'recall': the callable threw an exception: boom"},
      {"all three", "degradation manager", "m", "source for 'gpu_util'",
       "degradation manager 'm': source for 'gpu_util': the callable threw an "
       "exception: boom"},
  };
  auto throws_value = []() -> int { throw std::runtime_error("boom"); };
  auto throws_void = [] { throw std::runtime_error("boom"); };
  for (const Case& c : table) {
    const absl::Status v =
        InvokeCatching<int>(throws_value, c.kind, c.who, c.what_for).status();
    const absl::Status n =
        InvokeCatching<void>(throws_void, c.kind, c.who, c.what_for);
    for (const absl::Status& s : {v, n}) {
      EXPECT_EQ(s.code(), absl::StatusCode::kUnknown) << c.name;
      EXPECT_TRUE(IsCallableException(s)) << c.name;
      EXPECT_FALSE(IsRejected(s)) << c.name;
      EXPECT_EQ(s.message(), c.message) << c.name;
    }
  }
}

TEST(InvokeCatchingTest, ANonStdThrowSaysSo) {
  auto throws = []() -> absl::StatusOr<int> { throw 42; };
  const absl::Status s = InvokeCatching<int>(throws, "k").status();
  EXPECT_TRUE(IsCallableException(s));
  EXPECT_THAT(s.message(), HasSubstr(std::string(kNotStd)));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
