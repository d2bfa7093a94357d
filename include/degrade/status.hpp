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

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/status_payload.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

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

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STATUS_HPP_
