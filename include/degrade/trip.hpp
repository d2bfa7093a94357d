// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: trip.hpp
// -----------------------------------------------------------------------------
//
// Trip rules: ready-made `ready_to_trip` predicates for a breaker. A rule
// reads the `Counts` of the current generation and says whether to open;
// the breaker asks it after every closed-state failure and slow call. The
// state machine, the rule and the window that counts are three separate
// parts: any predicate on `Counts` is a rule, and a rate rule reads the
// window the settings chose (`SlidingWindow`).
//
//   degrade::BreakerSettings s;
//   s.window = degrade::SlidingWindow::Count(100);
//   // Open when half of the last 100 calls failed (once 20 were seen), or
//   // on 10 failures in a row, whichever comes first.
//   s.ready_to_trip = degrade::trip::AnyOf(
//       degrade::trip::FailureRate(0.5, /*minimum_calls=*/20),
//       degrade::trip::ConsecutiveFailures(10));
//
// Thread safety: a rule is an immutable callable; the breaker calls it one
// call at a time (outside its main lock, under one of its own), so a rule
// needs no synchronisation of its own.

#ifndef DEGRADE_TRIP_HPP_
#define DEGRADE_TRIP_HPP_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "degrade/breaker_types.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace trip {
using Rule = std::function<bool(const Counts&)>;
}  // namespace trip

namespace detail {

// A trip rule on a rate: trips when the window holds at least
// `minimum_calls` calls (at least 1) and `rate_of(counts)` is at least
// `rate`.
template <typename RateOf>
trip::Rule RateRule(double rate, uint64_t minimum_calls, RateOf rate_of) {
  const uint64_t minimum = std::max<uint64_t>(minimum_calls, 1);
  return [rate, minimum, rate_of](const Counts& c) {
    return c.window_calls >= minimum && rate_of(c) >= rate;
  };
}

}  // namespace detail

namespace trip {

// Trips when `n` failures in a row have been seen. gobreaker's default is
// "more than 5", that is `ConsecutiveFailures(6)`, which is also the
// breaker's default rule.
inline Rule ConsecutiveFailures(uint64_t n) {
  return [n](const Counts& c) { return c.consecutive_failures >= n; };
}

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` (0..1] of them failed.
inline Rule FailureRate(double rate, uint64_t minimum_calls) {
  return detail::RateRule(rate, minimum_calls,
                          [](const Counts& c) { return c.failure_rate(); });
}

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` (0..1] of them were slower than `slow_call_duration`.
inline Rule SlowCallRate(double rate, uint64_t minimum_calls) {
  return detail::RateRule(rate, minimum_calls,
                          [](const Counts& c) { return c.slow_call_rate(); });
}

// Trips when any of `rules` trips; empty rules are skipped.
inline Rule AnyOf(std::vector<Rule> rules) {
  return [rules = std::move(rules)](const Counts& c) {
    for (const Rule& r : rules) {
      if (r && r(c)) return true;
    }
    return false;
  };
}

template <typename... Rules>
Rule AnyOf(Rule first, Rules... rest) {
  return AnyOf(std::vector<Rule>{std::move(first), Rule(std::move(rest))...});
}

}  // namespace trip
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TRIP_HPP_
