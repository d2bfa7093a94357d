// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a breaker's state machine needs to know about its trip rule, worked
// out once at construction: whether the rule must be asked after successes
// (it has a rate part), from how many calls its rate parts can decide (the
// smallest and largest minimum), whether it runs user code (then it is
// asked outside the breaker's lock), and the thresholds the rate-based
// half-open policy judges trials by when the settings leave them at 0.
//
//   RulePlan p = PlanRule(settings);   // settings normalised
//   if (p.every_outcome) { /* ask after successes that reach a minimum */ }
//
// Pure functions of the settings. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_RULE_PLAN_HPP_
#define DEGRADE_DETAIL_BREAKER_RULE_PLAN_HPP_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "degrade/breaker_settings.hpp"
#include "degrade/trip.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// What the trip rule needs from the state machine, worked out once.
struct RulePlan {
  // Ask after every recorded outcome (a rate rule), not only failures.
  bool every_outcome = false;
  // The window calls from which a rate part can decide: the smallest
  // and the largest minimum among the rate parts (an AnyOf may mix them).
  uint64_t calls_to_decide = std::numeric_limits<uint64_t>::max();
  uint64_t largest_minimum = 0;
  // No user code in the rule: it is decided under the lock.
  bool library = false;
  // A rate part: threshold events are tracked.
  bool has_rates = false;
  // The rate-based half-open policy's thresholds.
  double half_open_failure_rate = 0.5;
  double half_open_slow_rate = 1.0;
};
inline bool HasCustomPart(const trip::Rule& r) {
  if (r.kind() == trip::Rule::Kind::kCustom) return true;
  if (r.kind() != trip::Rule::Kind::kAnyOf) return false;
  for (const trip::Rule& part : r.parts()) {
    if (HasCustomPart(part)) return true;
  }
  return false;
}
inline uint64_t LargestMinimum(const trip::Rule& r) {
  switch (r.kind()) {
    case trip::Rule::Kind::kFailureRate:
    case trip::Rule::Kind::kSlowCallRate:
      return r.minimum_calls();
    case trip::Rule::Kind::kAnyOf: {
      uint64_t m = 0;
      for (const trip::Rule& part : r.parts()) {
        m = std::max(m, LargestMinimum(part));
      }
      return m;
    }
    default:
      return 0;
  }
}
inline RulePlan PlanRule(const BreakerSettings& s) {
  const trip::Rule& r = s.ready_to_trip;
  RulePlan p;
  p.every_outcome = r.decides_on_every_outcome();
  p.calls_to_decide = r.calls_to_decide();
  p.largest_minimum = LargestMinimum(r);
  p.library = !HasCustomPart(r);
  const std::optional<double> failure = r.failure_rate_threshold();
  const std::optional<double> slow = r.slow_call_rate_threshold();
  p.has_rates = failure.has_value() || slow.has_value();
  p.half_open_failure_rate = s.half_open_failure_rate > 0
                                 ? s.half_open_failure_rate
                                 : failure.value_or(0.5);
  p.half_open_slow_rate = s.half_open_slow_call_rate > 0
                              ? s.half_open_slow_call_rate
                              : slow.value_or(1.0);
  return p;
}

// How many reported trials the rate-based half-open decides at:
// min(the rule's minimum, max_requests), resilience4j's half-open window.
// `uncapped_minimum` is the rule's calls_to_decide() before a count window
// capped it: the half-open window is the trials' own, not the closed
// state's. A rule without a rate part waits for every permitted trial.
inline uint64_t HalfOpenDecideAt(const RulePlan& p, uint64_t uncapped_minimum,
                                 uint64_t max_requests) {
  if (p.calls_to_decide == std::numeric_limits<uint64_t>::max()) {
    return max_requests;
  }
  return std::min(max_requests, std::max<uint64_t>(uncapped_minimum, 1));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_RULE_PLAN_HPP_
