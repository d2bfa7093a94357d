// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: breaker_types.hpp
// -----------------------------------------------------------------------------
//
// The vocabulary of a circuit breaker, apart from the breaker itself: its
// `State`, the `Counts` of the current generation that trip rules read, the
// lifetime `BreakerTotals`, the `SlidingWindow` a failure rate is computed
// over, and the `TripReason` a breaker keeps when a rule opens it (the
// counts are cleared on that transition, so without it nobody could say
// afterwards why the breaker opened). Trip rules (trip.hpp), settings (breaker_settings.hpp) and
// telemetry (telemetry.hpp) speak these types without compiling the breaker.
//
//   degrade::Counts c;            // what ready_to_trip receives
//   c.window_calls = 20;
//   c.window_failures = 12;
//   bool trip = c.failure_rate() >= 0.5;              // 0.6: trips
//   degrade::SlidingWindow w = degrade::SlidingWindow::Count(100);
//   absl::string_view s = degrade::StateName(degrade::State::kHalfOpen);
//   degrade::TripReason why;  // filled by trip::Rule::Check
//   std::string line = why.ToJson();  // {"rule":"none"}
//
// Thread safety: these are plain values (a copy is a snapshot) and pure
// functions, safe to call from any thread.

#ifndef DEGRADE_BREAKER_TYPES_HPP_
#define DEGRADE_BREAKER_TYPES_HPP_

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_line.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// State
//
// The three states of a breaker.
enum class State : uint8_t { kClosed = 0, kHalfOpen = 1, kOpen = 2 };

// Returns "closed", "half-open" or "open"; a value outside the enum (read
// from a corrupt word, cast from an integer) returns "unknown state: N", so
// a log line says what was actually there. The view stays valid for the
// life of the program.
inline absl::string_view StateName(State s);

// Counts
//
// What the breaker has seen in the current generation. A plain value: copies
// are snapshots. With a time window (SlidingWindow::Time) the first four
// fields roll with the window, as gobreaker v2's rolling counts do: they
// cover the calls admitted in the window's span, each outcome credited to
// the bucket of its call's admission, and the consecutive counts are
// capped at the window's totals.
struct Counts {
  // Calls admitted in this generation, less those whose permit was destroyed
  // without reporting. Includes calls still in flight and excluded ones.
  // With a time window: the admissions in the window, abandoned permits
  // included (a bucket cannot take an admission back).
  uint64_t requests = 0;
  uint64_t total_successes = 0;
  uint64_t total_failures = 0;
  // Outcomes that `is_excluded` said to count as neither success nor failure.
  uint64_t total_exclusions = 0;
  uint64_t consecutive_successes = 0;
  uint64_t consecutive_failures = 0;

  // The sliding window's view (see `SlidingWindow`). Without a window these
  // cover the whole generation: successes + failures, failures, slow calls.
  uint64_t window_calls = 0;
  uint64_t window_failures = 0;
  uint64_t window_slow_calls = 0;

  // Failures over calls in the window; 0 when the window is empty.
  double failure_rate() const {
    return window_calls == 0 ? 0.0
                             : static_cast<double>(window_failures) /
                                   static_cast<double>(window_calls);
  }
  // Slow calls over calls in the window; 0 when the window is empty.
  double slow_call_rate() const {
    return window_calls == 0 ? 0.0
                             : static_cast<double>(window_slow_calls) /
                                   static_cast<double>(window_calls);
  }
};

// TripReason
//
// Why a breaker opened: the rule that decided and what it saw. Filled by
// `trip::Rule::Check` when the rule trips; a default value (kNone) means
// the breaker was not opened by a rule (it never opened, or was opened by
// hand). A plain value.
struct TripReason {
  enum class Rule : uint8_t {
    kNone,  // not tripped by a rule (never opened, or manual)
    kConsecutiveFailures,
    kFailureRate,
    kSlowCallRate,
    kCustom,  // a user's ready_to_trip predicate
  };
  Rule rule = Rule::kNone;
  // The rate (0..1) seen, or the consecutive failures; 0 for kCustom.
  double value = 0;
  // The rule's rate, or its n; 0 for kCustom.
  double threshold = 0;
  // `window_calls` when the rule decided (what a rate was computed over).
  uint64_t calls = 0;
  // The whole snapshot the rule decided on.
  Counts counts;

  // One JSON object, for log lines: {"rule":"failure_rate","rate":0.62,
  // "calls":50,"threshold":0.5}; slow_call_rate likewise;
  // {"rule":"consecutive_failures","failures":6,"threshold":6};
  // {"rule":"custom","failures":3,"calls":10} (window_failures and
  // window_calls); {"rule":"none"}. Rates are printed with up to 6
  // significant digits and no trailing zeros, counts exactly; a non-finite
  // number (only a hand-made value can hold one) is printed as null so the
  // line stays valid JSON.
  std::string ToJson() const;
  // For people: "failure rate 62% of 50 calls >= 50%", "slow-call rate 80%
  // of 50 calls >= 75%", "6 consecutive failures >= 6", "custom rule (3
  // failures in 10 calls)", "none".
  std::string ToString() const;
};

// "none", "consecutive_failures", "failure_rate", "slow_call_rate",
// "custom"; "unknown" for a value outside the enum.
inline absl::string_view TripRuleName(TripReason::Rule rule);

// SlidingWindow
//
// Which recent calls the failure and slow-call rates are computed over. The
// window is cleared with the rest of `Counts` at every transition and closed
// interval, so rates never mix generations; a time window's buckets start
// when the generation does (not on epoch seconds).
struct SlidingWindow {
  enum class Kind : uint8_t { kNone, kCount, kTime };

  Kind kind = Kind::kNone;
  // kCount: the number of most recent completed calls kept.
  // kTime: the number of buckets `length` is divided into.
  uint32_t size = 0;
  // kTime only: how far back the window reaches. Calls are placed by the
  // time they were admitted.
  absl::Duration length = absl::ZeroDuration();

  // The last `calls` completed calls. REQUIRES: calls > 0.
  static SlidingWindow Count(uint32_t calls) {
    SlidingWindow w;
    w.kind = Kind::kCount;
    w.size = calls;
    return w;
  }
  // The calls admitted in the last `length`, kept in `buckets` buckets; the
  // oldest bucket drops out whole, so the window spans between
  // `length - length / buckets` and `length`.
  // REQUIRES: length > 0, buckets > 0.
  static SlidingWindow Time(absl::Duration length, uint32_t buckets = 10) {
    SlidingWindow w;
    w.kind = Kind::kTime;
    w.size = buckets;
    w.length = length;
    return w;
  }
};

// BreakerTotals
//
// Lifetime counters, never cleared; exact at any quiescent point:
// admitted == successes + failures + exclusions + abandoned + stale
//             + calls in flight.
struct BreakerTotals {
  uint64_t admitted = 0;
  uint64_t successes = 0;
  uint64_t failures = 0;
  uint64_t exclusions = 0;
  // Calls (successes or failures) slower than `slow_call_duration`.
  uint64_t slow_calls = 0;
  // Permits destroyed without reporting in the generation that issued them.
  uint64_t abandoned = 0;
  // Outcomes (or abandonments) ignored because the generation had changed.
  uint64_t stale = 0;
  uint64_t rejected_open = 0;
  uint64_t rejected_too_many = 0;
};

// BreakerMode
//
// A manual control layered on the state (see CircuitBreaker's ForceOpen(),
// Disable(), Bypass()). Two of resilience4j's states are modes here, under
// names that say what they do, because its DISABLED records nothing while
// gobreaker-style users know `Disable()` as "never trip, keep counting":
//
//   kForcedOpen   open, every call rejected; ForceOpen() until Reset(), or
//                 ForceOpenFor()/ForceOpenUntil() until then (resilience4j
//                 FORCED_OPEN has no end).
//   kMetricsOnly  closed, every call admitted and counted (Counts, windows,
//                 totals, events), never trips: Disable(), resilience4j
//                 METRICS_ONLY.
//   kBypass       closed, every call admitted, nothing recorded (no Counts,
//                 totals or per-call events): Bypass(), resilience4j
//                 DISABLED.
enum class BreakerMode : uint8_t {
  kNormal = 0,
  kForcedOpen = 1,
  kMetricsOnly = 2,
  kBypass = 3,
};

// "normal", "forced_open", "metrics_only", "bypass".
inline absl::string_view BreakerModeName(BreakerMode m) {
  switch (m) {
    case BreakerMode::kNormal:
      return "normal";
    case BreakerMode::kForcedOpen:
      return "forced_open";
    case BreakerMode::kMetricsOnly:
      return "metrics_only";
    case BreakerMode::kBypass:
      return "bypass";
  }
  return "unknown";
}

// ---- Implementation details ----

inline absl::string_view StateName(State s) {
  switch (s) {
    case State::kClosed:
      return "closed";
    case State::kHalfOpen:
      return "half-open";
    case State::kOpen:
      return "open";
  }
  // Every spelling is built once and never freed, so the view outlives any
  // caller, static destructors included.
  static const std::array<std::string, 256>* const kUnknown = [] {
    auto* names = new std::array<std::string, 256>;
    for (std::size_t i = 0; i < names->size(); ++i) {
      (*names)[i] = absl::StrCat("unknown state: ", i);
    }
    return names;
  }();
  return (*kUnknown)[static_cast<uint8_t>(s)];
}

inline absl::string_view TripRuleName(TripReason::Rule rule) {
  switch (rule) {
    case TripReason::Rule::kNone:
      return "none";
    case TripReason::Rule::kConsecutiveFailures:
      return "consecutive_failures";
    case TripReason::Rule::kFailureRate:
      return "failure_rate";
    case TripReason::Rule::kSlowCallRate:
      return "slow_call_rate";
    case TripReason::Rule::kCustom:
      return "custom";
  }
  return "unknown";
}

namespace detail {

// A JSON number with up to 6 significant digits (absl's double formatting,
// which ignores the C locale), or null when there is none to print.
inline std::string JsonSixDigits(double x) {
  return std::isfinite(x) ? absl::StrCat(x) : std::string("null");
}

// A count held in a double, printed as the integer it is when it is one.
inline std::string JsonCount(double x) {
  if (std::isfinite(x) && x >= 0 && x < 1e15 && x == std::floor(x)) {
    return absl::StrCat(static_cast<uint64_t>(x));
  }
  return JsonSixDigits(x);
}

// A rate as a percentage: 0.62 -> "62%".
inline std::string Percent(double rate) {
  return absl::StrCat(rate * 100, "%");
}

}  // namespace detail

inline std::string TripReason::ToJson() const {
  detail::JsonLine json;
  json.Str("rule", TripRuleName(rule));
  switch (rule) {
    case Rule::kFailureRate:
    case Rule::kSlowCallRate:
      json.Raw("rate", detail::JsonSixDigits(value))
          .Int("calls", calls)
          .Raw("threshold", detail::JsonSixDigits(threshold));
      break;
    case Rule::kConsecutiveFailures:
      json.Raw("failures", detail::JsonCount(value))
          .Raw("threshold", detail::JsonCount(threshold));
      break;
    case Rule::kCustom:
      json.Int("failures", counts.window_failures)
          .Int("calls", counts.window_calls);
      break;
    case Rule::kNone:
      break;
  }
  return json.Done();
}

inline std::string TripReason::ToString() const {
  switch (rule) {
    case Rule::kFailureRate:
    case Rule::kSlowCallRate:
      return absl::StrCat(
          rule == Rule::kFailureRate ? "failure rate " : "slow-call rate ",
          detail::Percent(value), " of ", calls, " calls >= ",
          detail::Percent(threshold));
    case Rule::kConsecutiveFailures:
      return absl::StrCat(detail::JsonCount(value),
                          " consecutive failures >= ",
                          detail::JsonCount(threshold));
    case Rule::kCustom:
      return absl::StrCat("custom rule (", counts.window_failures,
                          " failures in ", counts.window_calls, " calls)");
    case Rule::kNone:
      break;
  }
  return std::string(TripRuleName(rule));
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_BREAKER_TYPES_HPP_
