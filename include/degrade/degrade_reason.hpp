// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degrade_reason.hpp
// -----------------------------------------------------------------------------
//
// Why a stage served its Plan B. A `DegradeReason` is the second half of
// every entry of a degradation trace (degradation_trace.hpp), a label of the
// fallback counters, and a token in impression logs, so it has one short,
// stable spelling (`ReasonName`) that never changes and parses back
// (`ParseReasonName`). `ReasonFromStatus` maps a dependency call's status to
// the reason, recognising degrade's own rejections by their payload (never
// by message or code), and `kAllDegradeReasons` lists every reason, for code
// that counts or prints per reason without casting integers to the enum.
//
//   absl::StatusOr<Features> f = breaker.Execute(fetch);
//   const degrade::DegradeReason why = degrade::ReasonFromStatus(f.status());
//   if (why != degrade::DegradeReason::kNone) {
//     log.Add("features", degrade::ReasonName(why));   // "open", "timeout"...
//   }
//   for (degrade::DegradeReason r : degrade::kAllDegradeReasons) {
//     std::printf("%s %llu\n", std::string(degrade::ReasonName(r)).c_str(),
//                 static_cast<unsigned long long>(fallbacks(r)));
//   }
//
// Thread safety: every function here is pure and thread-safe. Nothing
// allocates or throws.

#ifndef DEGRADE_DEGRADE_REASON_HPP_
#define DEGRADE_DEGRADE_REASON_HPP_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// DegradeReason
//
// Why a stage degraded. `kNone` means it did not; it is never stored in a
// trace. The numeric values are not part of any wire format (the encoding
// uses `ReasonName()`), but are kept stable anyway for logs that print them.
enum class DegradeReason : uint8_t {
  kNone = 0,
  // The stage's circuit breaker was open (or forced open).
  kBreakerOpen = 1,
  // The stage's breaker was half-open and its trial calls were all taken.
  kTooManyRequests = 2,
  // The call ran past its deadline (or a fan-out's slowest shards did).
  kTimeout = 3,
  // The call returned an error.
  kError = 4,
  // The call threw; the breaker caught it at the library boundary.
  kException = 5,
  // The degradation level switched the stage off (load shedding), or a
  // limiter in front of it that is not a rate limit refused the call.
  kShed = 6,
  // The stage ran, but on degraded inputs.
  kUpstream = 7,
  // The call returned a value that failed validation.
  kInvalid = 8,
  // A rate limit in front of the stage refused the call (IsRateLimited):
  // the dependency was not called, and its breaker counted nothing.
  kRateLimited = 9,
};

// kAllDegradeReasons
//
// Every reason a stage can degrade for, in the order of their values;
// `kNone`, which is no degradation, is not among them. Loop over this rather
// than over integers cast to the enum: a reason added to the enum is added
// here, and `IsDegradeReason` and every loop follow.
inline constexpr std::array<DegradeReason, 9> kAllDegradeReasons = {
    DegradeReason::kBreakerOpen, DegradeReason::kTooManyRequests,
    DegradeReason::kTimeout,     DegradeReason::kError,
    DegradeReason::kException,   DegradeReason::kShed,
    DegradeReason::kUpstream,    DegradeReason::kInvalid,
    DegradeReason::kRateLimited,
};

namespace detail {
// The one place that looks at the numbers: reason k of the list has the
// value k + 1, so a per-reason array of `kAllDegradeReasons.size() + 1`
// slots can be indexed by the value, with slot 0 for kNone.
constexpr bool ReasonsAreNumberedInOrder() {
  for (std::size_t i = 0; i < kAllDegradeReasons.size(); ++i) {
    if (static_cast<std::size_t>(kAllDegradeReasons[i]) != i + 1) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::ReasonsAreNumberedInOrder(),
              "kAllDegradeReasons lists the reasons in value order, from 1");

// True when `reason` is one of `kAllDegradeReasons`: false for `kNone` and
// for a value outside the enumeration (a bad cast).
constexpr bool IsDegradeReason(DegradeReason reason);

// Returns the short, stable token for `reason` used in encodings and logs:
// "none", "open", "too_many", "timeout", "error", "exception", "shed",
// "upstream", "invalid", "rate_limited"; "unknown" for a value outside the
// enumeration.
// The tokens never change: stored impression logs are decoded with them.
constexpr absl::string_view ReasonName(DegradeReason reason);

// Sets `*reason` to the degradation reason whose `ReasonName()` is `token`
// and returns true; returns false (leaving `*reason` alone) for any other
// token, including "none" and "unknown", which name no degradation.
// REQUIRES: `reason != nullptr`.
inline bool ParseReasonName(absl::string_view token, DegradeReason* reason);

// Maps a status from a dependency call to the reason its stage degraded.
// degrade's own statuses are recognised by their payload (see status.hpp),
// never by message or code, so a backend that itself returns UNAVAILABLE is
// an error, not an open breaker:
//   OK -> kNone; IsBreakerOpen -> kBreakerOpen; IsTooManyRequests ->
//   kTooManyRequests; IsCallableException -> kException; IsRateLimited ->
//   kRateLimited; DEADLINE_EXCEEDED -> kTimeout; any other non-OK status
//   (another shed included) -> kError.
inline DegradeReason ReasonFromStatus(const absl::Status& status);

// ---- Implementation details -------------------------------------------------

constexpr bool IsDegradeReason(DegradeReason reason) {
  for (DegradeReason r : kAllDegradeReasons) {
    if (r == reason) return true;
  }
  return false;
}

constexpr absl::string_view ReasonName(DegradeReason reason) {
  switch (reason) {
    case DegradeReason::kNone:
      return "none";
    case DegradeReason::kBreakerOpen:
      return "open";
    case DegradeReason::kTooManyRequests:
      return "too_many";
    case DegradeReason::kTimeout:
      return "timeout";
    case DegradeReason::kError:
      return "error";
    case DegradeReason::kException:
      return "exception";
    case DegradeReason::kShed:
      return "shed";
    case DegradeReason::kUpstream:
      return "upstream";
    case DegradeReason::kInvalid:
      return "invalid";
    case DegradeReason::kRateLimited:
      return "rate_limited";
  }
  return "unknown";
}

inline bool ParseReasonName(absl::string_view token, DegradeReason* reason) {
  for (DegradeReason r : kAllDegradeReasons) {
    if (ReasonName(r) == token) {
      *reason = r;
      return true;
    }
  }
  return false;
}

inline DegradeReason ReasonFromStatus(const absl::Status& status) {
  if (status.ok()) return DegradeReason::kNone;
  if (IsBreakerOpen(status)) return DegradeReason::kBreakerOpen;
  if (IsTooManyRequests(status)) return DegradeReason::kTooManyRequests;
  if (IsCallableException(status)) return DegradeReason::kException;
  if (IsRateLimited(status)) return DegradeReason::kRateLimited;
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return DegradeReason::kTimeout;
  }
  return DegradeReason::kError;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADE_REASON_HPP_
