// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: breaker_types.hpp
// -----------------------------------------------------------------------------
//
// The vocabulary of a circuit breaker, apart from the breaker itself: its
// `State`, the `Counts` of the current generation that trip rules read, the
// lifetime `BreakerTotals`, and the `SlidingWindow` a failure rate is
// computed over. Trip rules (trip.hpp), settings (breaker_settings.hpp) and
// telemetry (telemetry.hpp) speak these types without compiling the breaker.
//
//   degrade::Counts c;            // what ready_to_trip receives
//   c.window_calls = 20;
//   c.window_failures = 12;
//   bool trip = c.failure_rate() >= 0.5;              // 0.6: trips
//   degrade::SlidingWindow w = degrade::SlidingWindow::Count(100);
//   absl::string_view s = degrade::StateName(degrade::State::kHalfOpen);
//
// Thread safety: these are plain values; a copy is a snapshot.

#ifndef DEGRADE_BREAKER_TYPES_HPP_
#define DEGRADE_BREAKER_TYPES_HPP_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// State
//
// The three states of a breaker.
enum class State : uint8_t { kClosed = 0, kHalfOpen = 1, kOpen = 2 };

// Returns "closed", "half-open" or "open".
inline absl::string_view StateName(State s) {
  switch (s) {
    case State::kClosed:
      return "closed";
    case State::kHalfOpen:
      return "half-open";
    case State::kOpen:
      return "open";
  }
  return "unknown";
}

// Counts
//
// What the breaker has seen in the current generation. A plain value: copies
// are snapshots.
struct Counts {
  // Calls admitted in this generation, less those whose permit was destroyed
  // without reporting. Includes calls still in flight and excluded ones.
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

// SlidingWindow
//
// Which recent calls the failure and slow-call rates are computed over. The
// window is cleared with the rest of `Counts` at every transition and closed
// interval, so rates never mix generations.
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

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_BREAKER_TYPES_HPP_
