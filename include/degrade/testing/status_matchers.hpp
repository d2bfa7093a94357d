// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: testing/status_matchers.hpp
// -----------------------------------------------------------------------------
//
// gMock matchers for `absl::Status` and `absl::StatusOr<T>`, for degrade's
// tests and for users testing services built on degrade. Abseil has such
// matchers in absl/status/status_matchers.h, but not in the 20220623 release
// Debian ships, and never as an installed target by default; these follow
// the same names, so switching later is a change of namespace.
//
//   using degrade::testing::IsOk;
//   using degrade::testing::IsOkAndHolds;
//   using degrade::testing::StatusIs;
//
//   EXPECT_THAT(backend.Call(), IsOkAndHolds(42));
//   EXPECT_THAT(backend.Call(), StatusIs(absl::StatusCode::kUnavailable,
//                                        ::testing::HasSubstr("down")));
//   EXPECT_THAT(breaker.Execute(f), degrade::testing::IsBreakerOpenStatus());
//
// Every matcher here except `IsOkAndHolds` accepts both an `absl::Status`
// and an `absl::StatusOr<T>` (by value or reference). On a mismatch they
// explain what they saw: the code and message, and for `IsOkAndHolds` the
// value and the inner matcher's own explanation.
//
// The breaker matchers (`IsBreakerOpenStatus()` and friends) test degrade's
// status payload through the predicates in degrade/status.hpp, never the
// message text, exactly as production code should.
//
// A note on names: this header lives in `degrade::testing`, so inside
// namespace `degrade`, or after `using namespace degrade;`, gMock's namespace
// must be spelled `::testing`.
//
// Thread safety: matchers are immutable values; they may be used from any
// thread, as gMock allows.

#ifndef DEGRADE_TESTING_STATUS_MATCHERS_HPP_
#define DEGRADE_TESTING_STATUS_MATCHERS_HPP_

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "degrade/detail/invoke.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"
#include "gmock/gmock.h"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace matchers {

// "OK" or "UNAVAILABLE: down", with the payloads when there are some (the
// payload is what tells a breaker's rejection from a backend's error).
inline std::string Describe(const absl::Status& status) {
  return status.ToString();
}

// The shared logic of a status matcher, independent of the argument type.
class StatusMatcherCommon {
 public:
  virtual ~StatusMatcherCommon() = default;
  virtual void DescribeTo(std::ostream* os) const = 0;
  virtual void DescribeNegationTo(std::ostream* os) const = 0;
  virtual bool MatchAndExplain(
      const absl::Status& status,
      ::testing::MatchResultListener* listener) const = 0;
};

// Adapts a StatusMatcherCommon to one argument type.
template <typename StatusType, typename Common>
class MonoStatusMatcher : public ::testing::MatcherInterface<StatusType> {
 public:
  explicit MonoStatusMatcher(Common common) : common_(std::move(common)) {}

  void DescribeTo(std::ostream* os) const override { common_.DescribeTo(os); }
  void DescribeNegationTo(std::ostream* os) const override {
    common_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(
      StatusType actual,
      ::testing::MatchResultListener* listener) const override {
    // StatusOf: the status of either kind of argument.
    return common_.MatchAndExplain(StatusOf(actual), listener);
  }

 private:
  const Common common_;
};

// A polymorphic matcher: converts to Matcher<absl::Status>,
// Matcher<const absl::StatusOr<T>&>, ... on demand.
template <typename Common>
class PolymorphicStatusMatcher {
 public:
  explicit PolymorphicStatusMatcher(Common common)
      : common_(std::move(common)) {}

  template <typename StatusType>
  operator ::testing::Matcher<StatusType>() const {  // NOLINT: implicit
    return ::testing::Matcher<StatusType>(
        new MonoStatusMatcher<const StatusType&, Common>(common_));
  }

 private:
  Common common_;
};

template <typename Common>
PolymorphicStatusMatcher<Common> MakeStatusMatcher(Common common) {
  return PolymorphicStatusMatcher<Common>(std::move(common));
}

class IsOkCommon final : public StatusMatcherCommon {
 public:
  void DescribeTo(std::ostream* os) const override { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK";
  }
  bool MatchAndExplain(
      const absl::Status& status,
      ::testing::MatchResultListener* listener) const override {
    if (!status.ok()) *listener << "whose status is " << Describe(status);
    return status.ok();
  }
};

class StatusIsCommon final : public StatusMatcherCommon {
 public:
  StatusIsCommon(::testing::Matcher<absl::StatusCode> code,
                 ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << ", and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "has a status code that ";
    code_.DescribeNegationTo(os);
    *os << ", or a message that ";
    message_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(
      const absl::Status& status,
      ::testing::MatchResultListener* listener) const override {
    ::testing::StringMatchResultListener inner;
    if (!code_.MatchAndExplain(status.code(), &inner)) {
      *listener << "whose status code " << status.code()
                << " is wrong (the status is " << Describe(status) << ")";
      if (!inner.str().empty()) *listener << ", " << inner.str();
      return false;
    }
    const std::string message(status.message());
    if (!message_.MatchAndExplain(message, &inner)) {
      *listener << "whose status message is wrong (the status is "
                << Describe(status) << ")";
      if (!inner.str().empty()) *listener << ", " << inner.str();
      return false;
    }
    *listener << "whose status is " << Describe(status);
    return true;
  }

 private:
  const ::testing::Matcher<absl::StatusCode> code_;
  const ::testing::Matcher<const std::string&> message_;
};

// Matches a status for which `predicate` holds.
class PredicateCommon final : public StatusMatcherCommon {
 public:
  PredicateCommon(bool (*predicate)(const absl::Status&), const char* what)
      : predicate_(predicate), what_(what) {}

  void DescribeTo(std::ostream* os) const override { *os << "is " << what_; }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not " << what_;
  }
  bool MatchAndExplain(
      const absl::Status& status,
      ::testing::MatchResultListener* listener) const override {
    *listener << "whose status is " << Describe(status);
    return predicate_(status);
  }

 private:
  bool (*predicate_)(const absl::Status&);
  const char* what_;
};

template <typename StatusOrType, typename InnerMatcher>
class IsOkAndHoldsImpl : public ::testing::MatcherInterface<StatusOrType> {
 public:
  using Value = typename std::remove_cv_t<
      std::remove_reference_t<StatusOrType>>::value_type;

  explicit IsOkAndHoldsImpl(const InnerMatcher& inner)
      : inner_(::testing::SafeMatcherCast<const Value&>(inner)) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and has a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK, or has a value that ";
    inner_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(
      StatusOrType actual,
      ::testing::MatchResultListener* listener) const override {
    if (!actual.ok()) {
      *listener << "whose status is " << Describe(actual.status());
      return false;
    }
    ::testing::StringMatchResultListener inner;
    const bool matched = inner_.MatchAndExplain(*actual, &inner);
    *listener << "which holds " << ::testing::PrintToString(*actual);
    if (!inner.str().empty()) *listener << ", " << inner.str();
    return matched;
  }

 private:
  const ::testing::Matcher<const Value&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename StatusOrType>
  operator ::testing::Matcher<StatusOrType>() const {  // NOLINT: implicit
    return ::testing::Matcher<StatusOrType>(
        new IsOkAndHoldsImpl<const StatusOrType&, InnerMatcher>(inner_));
  }

 private:
  InnerMatcher inner_;
};

}  // namespace matchers
}  // namespace detail

namespace testing {

// IsOk()
//
// Matches an OK `absl::Status` or an `absl::StatusOr<T>` holding a value.
inline detail::matchers::PolymorphicStatusMatcher<detail::matchers::IsOkCommon>
IsOk() {
  return detail::matchers::MakeStatusMatcher(detail::matchers::IsOkCommon());
}

// StatusIs(code_matcher)
// StatusIs(code_matcher, message_matcher)
//
// Matches a status (or a StatusOr's status) whose code matches
// `code_matcher` (an `absl::StatusCode`, or a matcher of one) and whose
// message matches `message_matcher` (a string, or a matcher of
// `std::string` such as `::testing::HasSubstr("down")`; default: any).
template <typename CodeMatcher, typename MessageMatcher>
detail::matchers::PolymorphicStatusMatcher<detail::matchers::StatusIsCommon>
StatusIs(CodeMatcher&& code_matcher, MessageMatcher&& message_matcher) {
  return detail::matchers::MakeStatusMatcher(detail::matchers::StatusIsCommon(
      ::testing::MatcherCast<absl::StatusCode>(
          std::forward<CodeMatcher>(code_matcher)),
      ::testing::MatcherCast<const std::string&>(
          std::forward<MessageMatcher>(message_matcher))));
}
template <typename CodeMatcher>
detail::matchers::PolymorphicStatusMatcher<detail::matchers::StatusIsCommon>
StatusIs(CodeMatcher&& code_matcher) {
  return StatusIs(std::forward<CodeMatcher>(code_matcher), ::testing::_);
}

// IsOkAndHolds(value_matcher)
//
// Matches an `absl::StatusOr<T>` that holds a value matching
// `value_matcher` (a value, compared with ==, or a matcher of `T`).
template <typename InnerMatcher>
detail::matchers::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(
    InnerMatcher&& value_matcher) {
  return detail::matchers::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(
      std::forward<InnerMatcher>(value_matcher));
}

// IsBreakerOpenStatus()
//
// Matches a rejection by an open (or forced-open) circuit breaker: see
// `degrade::IsBreakerOpen`.
inline detail::matchers::PolymorphicStatusMatcher<
    detail::matchers::PredicateCommon>
IsBreakerOpenStatus() {
  return detail::matchers::MakeStatusMatcher(detail::matchers::PredicateCommon(
      &degrade::IsBreakerOpen, "a rejection by an open circuit breaker"));
}

// IsTooManyRequestsStatus()
//
// Matches a rejection by a half-open breaker whose trial calls are all
// taken: see `degrade::IsTooManyRequests`.
inline detail::matchers::PolymorphicStatusMatcher<
    detail::matchers::PredicateCommon>
IsTooManyRequestsStatus() {
  return detail::matchers::MakeStatusMatcher(detail::matchers::PredicateCommon(
      &degrade::IsTooManyRequests,
      "a rejection by a half-open circuit breaker with no trial slot "
      "left"));
}

// IsRejectedStatus()
//
// Matches either kind of breaker rejection: see `degrade::IsRejected`.
inline detail::matchers::PolymorphicStatusMatcher<
    detail::matchers::PredicateCommon>
IsRejectedStatus() {
  return detail::matchers::MakeStatusMatcher(detail::matchers::PredicateCommon(
      &degrade::IsRejected, "a rejection by a circuit breaker"));
}

// IsCallableExceptionStatus()
//
// Matches the status made of an exception thrown by a breaker's callable:
// see `degrade::IsCallableException`.
inline detail::matchers::PolymorphicStatusMatcher<
    detail::matchers::PredicateCommon>
IsCallableExceptionStatus() {
  return detail::matchers::MakeStatusMatcher(detail::matchers::PredicateCommon(
      &degrade::IsCallableException,
      "the status of an exception thrown by a breaker's callable"));
}

}  // namespace testing
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TESTING_STATUS_MATCHERS_HPP_
