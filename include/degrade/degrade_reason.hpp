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
// A fallback may also say which rung of a fallback ladder it served
// (`FallbackTier`: the key's own last-known-good value, by coarse age, or a
// segment's or the global default; ladder.hpp), so a ranker can weight a
// ten-minute-old copy of a user's own features above a population average.
// The tier is the optional third part of a trace entry:
// "features=open/stale-10m".
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
#include "absl/time/time.h"
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

// FallbackTier
//
// Which rung of a fallback ladder a degraded stage served. `kUnspecified` is
// every fallback that is not on a ladder (and every trace entry written
// before tiers existed): it adds nothing to the encoding. The stale tiers
// are the key's own last-known-good value, bucketed by age so that a tag
// stays a few bytes and a dashboard a few series: at most a minute, ten
// minutes, an hour, or older than an hour (the ladder's `max_age` bounds
// that). Values are stable: they are in logs.
enum class FallbackTier : uint8_t {
  kUnspecified = 0,
  kStale1m = 1,
  kStale10m = 2,
  kStale1h = 3,
  kStaleOld = 4,
  kSegment = 5,
  kGlobal = 6,
};

inline constexpr std::array<FallbackTier, 6> kAllFallbackTiers = {
    FallbackTier::kStale1m,  FallbackTier::kStale10m, FallbackTier::kStale1h,
    FallbackTier::kStaleOld, FallbackTier::kSegment,  FallbackTier::kGlobal,
};

// The tier's token: "stale-1m", "stale-10m", "stale-1h", "stale-old",
// "segment", "global"; "" for kUnspecified and for a value off the enum.
constexpr absl::string_view TierName(FallbackTier tier);

// Parses a token TierName produces (never kUnspecified). False, and `*tier`
// untouched, for anything else.
inline bool ParseTierName(absl::string_view token, FallbackTier* tier);

// True for the four stale tiers.
constexpr bool IsStaleTier(FallbackTier tier) {
  return tier == FallbackTier::kStale1m || tier == FallbackTier::kStale10m ||
         tier == FallbackTier::kStale1h || tier == FallbackTier::kStaleOld;
}

// The stale tier of a value `age` old. A negative age (a clock stepped
// back) is the freshest bucket; an infinite one the oldest.
inline FallbackTier StaleTierForAge(absl::Duration age);

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

constexpr absl::string_view TierName(FallbackTier tier) {
  switch (tier) {
    case FallbackTier::kUnspecified:
      return "";
    case FallbackTier::kStale1m:
      return "stale-1m";
    case FallbackTier::kStale10m:
      return "stale-10m";
    case FallbackTier::kStale1h:
      return "stale-1h";
    case FallbackTier::kStaleOld:
      return "stale-old";
    case FallbackTier::kSegment:
      return "segment";
    case FallbackTier::kGlobal:
      return "global";
  }
  return "";
}

inline bool ParseTierName(absl::string_view token, FallbackTier* tier) {
  for (FallbackTier t : kAllFallbackTiers) {
    if (TierName(t) == token) {
      *tier = t;
      return true;
    }
  }
  return false;
}

inline FallbackTier StaleTierForAge(absl::Duration age) {
  if (age <= absl::Minutes(1)) return FallbackTier::kStale1m;
  if (age <= absl::Minutes(10)) return FallbackTier::kStale10m;
  if (age <= absl::Hours(1)) return FallbackTier::kStale1h;
  return FallbackTier::kStaleOld;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADE_REASON_HPP_
