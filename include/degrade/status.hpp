// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: status.hpp
// -----------------------------------------------------------------------------
//
// The error vocabulary of degrade. A status the library makes on its own
// behalf (a breaker rejecting a call, a callable that threw) carries a payload
// that says so, and the predicates here read that payload. Callers branch on
// these predicates, never on message text, so a wrapped backend that happens
// to return UNAVAILABLE is never mistaken for an open breaker:
//
//   absl::StatusOr<Features> r = breaker.Execute(fetch);
//   if (degrade::IsBreakerOpen(r.status())) { /* serve the default */ }
//
// All functions here are thread-safe and allocate only when building an error.

#ifndef DEGRADE_STATUS_HPP_
#define DEGRADE_STATUS_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/status_payload.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The payload type URL under which degrade records why it made a status
// (the predicates below read it). Name it to forward the payload across a
// process boundary, or to keep it when rebuilding a status by hand.
inline constexpr absl::string_view kStatusPayloadUrl =
    detail::kReasonPayloadUrl;

// True when `status` is a rejection by a circuit breaker that is open (or
// forced open): the callable was not run.
inline bool IsBreakerOpen(const absl::Status& status) {
  return detail::HasReason(status, detail::kReasonOpen);
}

// True when `status` is a rejection by a half-open breaker whose trial slots
// (`max_requests`) were all taken: the callable was not run.
inline bool IsTooManyRequests(const absl::Status& status) {
  return detail::HasReason(status, detail::kReasonTooMany);
}

// True when the callable threw; the status message carries the exception's
// `what()`. The breaker counted the call as a failure.
inline bool IsCallableException(const absl::Status& status) {
  return detail::HasReason(status, detail::kReasonException);
}

// True for either kind of breaker rejection: the callable did not run.
inline bool IsRejected(const absl::Status& status) {
  return IsBreakerOpen(status) || IsTooManyRequests(status);
}

// Builds the status for a callable named by `where` that threw `what`:
// UNKNOWN, with the payload IsCallableException() reads. Every callable the
// library runs for a user (a breaker's call, a signal source, a hot-list
// refresh) that throws yields this one shape.
inline absl::Status CallableExceptionError(absl::string_view where,
                                           absl::string_view what) {
  return detail::WithReason(
      absl::UnknownError(
          absl::StrCat(where, ": the callable threw an exception: ", what)),
      detail::kReasonException);
}

// ---- Shedding ---------------------------------------------------------------

inline constexpr absl::string_view kRetryAfterPayloadUrl =
    "type.degrade.dev/degrade.RetryAfterMs";

// WithRetryAfter(status, wait)
//
// `status` carrying the retry-after payload RetryAfterHint() reads: `wait`
// in whole milliseconds, rounded up (any positive wait stays positive), or
// "do not retry" when it is negative or infinite. What ShedError() attaches,
// and what an RPC adapter attaches when the server sent a pushback (gRPC's
// grpc-retry-pushback-ms). OK stays OK: there is nothing to retry. Pure.
inline absl::Status WithRetryAfter(absl::Status status, absl::Duration wait) {
  if (status.ok()) return status;
  int64_t ms = -1;
  if (wait >= absl::ZeroDuration() && wait != absl::InfiniteDuration()) {
    // Ceil, not "+ 1ms - 1ns": a Duration has quarter-nanosecond ticks.
    ms = absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1)));
  }
  status.SetPayload(kRetryAfterPayloadUrl, absl::Cord(absl::StrCat(ms)));
  return status;
}

// ShedError(where, why, retry_after)
//
// The status of a request refused by overload control (admission, a
// concurrency limit, a disciplined queue): RESOURCE_EXHAUSTED, with the
// payload IsShed() reads and, when `retry_after` is given, a hint as
// WithRetryAfter() writes it (negative means "do not retry", which is what
// a server that wants no retries at all sends). Retries and the gRPC
// adapter read it with ShedRetryAfter().
inline absl::Status ShedError(absl::string_view where, absl::string_view why,
                              std::optional<absl::Duration> retry_after = std::nullopt) {
  absl::Status s = detail::WithReason(
      absl::ResourceExhaustedError(absl::StrCat(where, ": shed: ", why)),
      detail::kReasonShed);
  if (retry_after.has_value()) s = WithRetryAfter(std::move(s), *retry_after);
  return s;
}

// True when `status` is a refusal by degrade's overload control: the work
// was not done, and it is not the backend's failure (a breaker must not
// count it; a retry must not resend it blindly).
inline bool IsShed(const absl::Status& status) {
  return detail::HasReason(status, detail::kReasonShed);
}

// The retry-after hint of any status that carries one: a shed status, or a
// backend's reply whose adapter copied the server's pushback (gRPC's
// grpc-retry-pushback-ms) into the same payload. Read like ShedRetryAfter:
// nullopt for none or malformed, negative for "do not retry".
inline std::optional<absl::Duration> RetryAfterHint(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  const auto p = status.GetPayload(kRetryAfterPayloadUrl);
  if (!p.has_value()) return std::nullopt;
  int64_t ms = 0;
  if (!absl::SimpleAtoi(std::string(*p), &ms)) return std::nullopt;
  return ms < 0 ? absl::Milliseconds(-1) : absl::Milliseconds(ms);
}

// The retry-after hint of a shed status: nullopt when there is none (or the
// status is not a shed), a negative duration for "do not retry", otherwise
// how long to wait. A malformed payload reads as none.
inline std::optional<absl::Duration> ShedRetryAfter(const absl::Status& status) {
  if (!IsShed(status)) return std::nullopt;
  return RetryAfterHint(status);
}

// ---- Rate limits
// -------------------------------------------------------------

inline constexpr absl::string_view kRateLimitedPayloadUrl =
    "type.degrade.dev/degrade.RateLimited";

// RateLimitedError(where, why, retry_after)
//
// The status of a request refused by a rate limit (RateLimiter,
// KeyedRateLimiter, redis::ClusterQuota): a ShedError, with the same
// retry-after, that IsRateLimited() also recognises. It stays a shed for
// everything that reads sheds (a retry waits for the hint, the gRPC
// adapter answers RESOURCE_EXHAUSTED with the pushback), and a stage that
// serves its Plan B for it is tagged `rate_limited`, not `error`
// (ReasonFromStatus). A marker beside the shed payload, not a different
// reason, so code that asks IsShed() sees no change.
inline absl::Status RateLimitedError(
    absl::string_view where, absl::string_view why,
    std::optional<absl::Duration> retry_after = std::nullopt) {
  absl::Status s = ShedError(where, why, retry_after);
  s.SetPayload(kRateLimitedPayloadUrl, absl::Cord("1"));
  return s;
}

// True for a RateLimitedError: refused by a rate limit on this side.
inline bool IsRateLimited(const absl::Status& status) {
  return IsShed(status) &&
         status.GetPayload(kRateLimitedPayloadUrl).has_value();
}

// ---- Client-side throttling -------------------------------------------------

inline constexpr absl::string_view kThrottledPayloadUrl =
    "type.degrade.dev/degrade.Throttled";

// ThrottledError(where, why)
//
// The status of a request the client refused itself (AdaptiveThrottler,
// throttle.hpp) because the server has been refusing that much: a
// ShedError without a retry-after hint (so a retry loop does not resend
// it) that IsThrottled() also recognises. It never reached the server, so
// a breaker must not count it: throttle outside the breaker.
inline absl::Status ThrottledError(absl::string_view where, absl::string_view why) {
  absl::Status s = ShedError(where, why);
  s.SetPayload(kThrottledPayloadUrl, absl::Cord("1"));
  return s;
}

// True for a ThrottledError: refused on this side, not by the server.
inline bool IsThrottled(const absl::Status& status) {
  return IsShed(status) && status.GetPayload(kThrottledPayloadUrl).has_value();
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STATUS_HPP_
