// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A breaker's state, mode and generation packed in one 64-bit word, so the
// hot paths decide with one atomic load, and the one table of which
// transitions are legal.
//
//   bits 0-1  State (closed, half-open, open)
//   bits 2-3  BreakerMode: normal, forced open, metrics-only or bypass
//   bits 4-63 generation: +1 at every transition and closed interval
//
// The modes constrain the states: forced open is only ever open,
// metrics-only and bypass only ever closed, and half-open is only reached from
// open by the open duration passing in normal mode. Everything else is allowed,
// including a state to itself (a new generation: the closed interval, Reset()
// while closed, ForceOpen() while open). IsLegalTransition() is checked on
// every transition in debug builds and table-tested.
//
// Pure functions; thread safety is the owner's (the word is an atomic).

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_WORD_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_WORD_HPP_

#include <cstdint>

#include "degrade/breaker_types.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

struct BreakerWord {
  static constexpr uint64_t kStateMask = 0x3;
  static constexpr int kModeShift = 2;
  static constexpr uint64_t kModeMask = 0x3;
  static constexpr int kGenShift = 4;

  static constexpr State StateOf(uint64_t w) {
    return static_cast<State>(w & kStateMask);
  }
  static constexpr BreakerMode ModeOf(uint64_t w) {
    return static_cast<BreakerMode>((w >> kModeShift) & kModeMask);
  }
  static constexpr uint64_t GenOf(uint64_t w) { return w >> kGenShift; }
  static constexpr uint64_t Pack(State s, BreakerMode m, uint64_t gen) {
    return static_cast<uint64_t>(s) | (static_cast<uint64_t>(m) << kModeShift) |
           (gen << kGenShift);
  }
};

// Whether a breaker in `from` may start a generation in `to` with mode
// `mode` (the mode after the transition).
constexpr bool IsLegalTransition(State from, State to, BreakerMode mode) {
  if (mode == BreakerMode::kForcedOpen && to != State::kOpen) return false;
  if ((mode == BreakerMode::kMetricsOnly || mode == BreakerMode::kBypass) &&
      to != State::kClosed) {
    return false;
  }
  if (to == State::kHalfOpen) {
    return from == State::kOpen && mode == BreakerMode::kNormal;
  }
  return true;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_WORD_HPP_
