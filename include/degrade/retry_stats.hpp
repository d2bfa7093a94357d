// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: retry_stats.hpp
// -----------------------------------------------------------------------------
//
// What the retry components report, as plain values, and the read-only
// views they offer a `Telemetry` (telemetry.hpp), so that a metrics
// registry can scrape them without knowing their types (the pattern of
// overload_stats.hpp):
//
//   * `RetryBudget` (retry_budget.hpp): the window's requests and retries,
//     the balance, and the retries granted and refused;
//   * `Retrier` (retry.hpp): calls, attempts per call, why each call
//     stopped;
//   * `AdaptiveThrottler` (throttle.hpp): the window's requests and
//     accepts, the rejection probability, local rejections.
//
//   class MyTelemetry : public degrade::Telemetry {
//     std::unique_ptr<degrade::TelemetryAttachment> AttachRetryBudget(
//         const degrade::RetryBudgetView& b) override {
//       budgets_.push_back(&b);  // scrape b.stats() until detached
//       return std::make_unique<Detach>(this, &b);
//     }
//   };
//
// Thread safety: the structs are plain values. A view's methods may be
// called from any thread while its attachment lives.

#ifndef DEGRADE_RETRY_STATS_HPP_
#define DEGRADE_RETRY_STATS_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "degrade/stats_view.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// RetryStop
//
// Why a retried call stopped. Every call ends with exactly one.
enum class RetryStop : uint8_t {
  kSucceeded = 0,         // an attempt succeeded
  kNotRetryable = 1,      // the status is not one the policy retries
  kAttemptsExhausted = 2, // max_attempts were made
  kDeadline = 3,          // the next attempt could not start before the deadline
  kBudgetExhausted = 4,   // the retry budget refused the retry
  kDoNotRetry = 5,        // the server's retry-after said "do not retry"
  kBreakerRejected = 6,   // a breaker refused the attempt (IsRejected)
  kShed = 7,              // shed or throttled without a retry-after hint
};

inline constexpr std::size_t kNumRetryStops = 8;

// "succeeded", "not_retryable", "attempts_exhausted", "deadline",
// "budget_exhausted", "do_not_retry", "breaker_rejected", "shed": metric
// labels and the words of a final status's message.
inline absl::string_view RetryStopName(RetryStop s) {
  switch (s) {
    case RetryStop::kSucceeded:
      return "succeeded";
    case RetryStop::kNotRetryable:
      return "not_retryable";
    case RetryStop::kAttemptsExhausted:
      return "attempts_exhausted";
    case RetryStop::kDeadline:
      return "deadline";
    case RetryStop::kBudgetExhausted:
      return "budget_exhausted";
    case RetryStop::kDoNotRetry:
      return "do_not_retry";
    case RetryStop::kBreakerRejected:
      return "breaker_rejected";
    case RetryStop::kShed:
      return "shed";
  }
  return "unknown";
}

// ---- Retry budget -----------------------------------------------------------

struct RetryBudgetStats {
  // Over the sliding window (the last ttl): requests deposited and retries
  // withdrawn.
  uint64_t window_requests = 0;
  uint64_t window_retries = 0;
  // Retries the budget would grant now: percent_can_retry x window_requests
  // + min_retries_per_sec x ttl - window_retries, at least 0.
  double balance = 0.0;
  // Totals since construction.
  uint64_t granted = 0;
  uint64_t refused = 0;
};

using RetryBudgetView = StatsView<RetryBudgetStats>;

// ---- Retrier ----------------------------------------------------------------

// Calls by how many attempts they made: attempts[k - 1] counts the calls
// that made k attempts (a policy allows at most kAttemptBuckets).
inline constexpr std::size_t kAttemptBuckets = 10;

struct RetrierStats {
  uint64_t calls = 0;
  std::array<uint64_t, kAttemptBuckets> attempts{};
  // Calls by why they stopped, indexed by RetryStop.
  std::array<uint64_t, kNumRetryStops> stops{};
};

using RetrierView = StatsView<RetrierStats>;

// ---- Adaptive throttler -----------------------------------------------------

struct ThrottleStats {
  // Over the sliding window: requests asked for (sent or refused here) and
  // the ones the server accepted.
  uint64_t window_requests = 0;
  uint64_t window_accepts = 0;
  // The probability a request is refused locally now.
  double rejection_probability = 0.0;
  // Totals since construction: let through, refused locally.
  uint64_t admitted = 0;
  uint64_t throttled = 0;
};

using ThrottleView = StatsView<ThrottleStats>;

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RETRY_STATS_HPP_
