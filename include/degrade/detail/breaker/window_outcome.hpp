// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a breaker's sliding windows (count_window.hpp, time_window.hpp)
// share: the outcome bits of one completed call, what a window holds, and
// the rule for which outcomes always ask the trip rule. See windows.hpp for
// the windows' contract.
//
// Constants and a plain struct; no state. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_WINDOW_OUTCOME_HPP_
#define DEGRADE_DETAIL_BREAKER_WINDOW_OUTCOME_HPP_

#include <cstdint>
#include <limits>

#include "degrade/detail/macros.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Outcome bits of one completed call. A call is counted only with
// kOutcomeRecorded; kOutcomeExcluded wins over the others (an excluded call
// is counted in exclusions, never in calls).
inline constexpr uint8_t kOutcomeRecorded = 1;
inline constexpr uint8_t kOutcomeFailed = 2;
inline constexpr uint8_t kOutcomeSlow = 4;
inline constexpr uint8_t kOutcomeExcluded = 8;

// calls_to_decide of a breaker without a rate rule (trip::Rule's UINT64_MAX).
inline constexpr uint64_t kNeverDecides = std::numeric_limits<uint64_t>::max();

// What a window holds. calls == successes + failures; slow counts slow
// successes and slow failures. A count window fills calls, failures and slow
// only (requests, successes and exclusions stay 0: the breaker takes them
// from its generation counters).
struct WindowStats {
  uint64_t calls = 0;
  uint64_t failures = 0;
  uint64_t slow = 0;
  uint64_t requests = 0;
  uint64_t successes = 0;
  uint64_t exclusions = 0;
};

// A failure or a slow call always asks the rule.
DEGRADE_ALWAYS_INLINE bool AlwaysAsks(uint8_t outcome) {
  return (outcome & (kOutcomeFailed | kOutcomeSlow)) != 0;
}

// Whether `outcome` is a call a window counts (recorded, not excluded).
DEGRADE_ALWAYS_INLINE bool IsCall(uint8_t outcome) {
  return (outcome & (kOutcomeRecorded | kOutcomeExcluded)) == kOutcomeRecorded;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_WINDOW_OUTCOME_HPP_
