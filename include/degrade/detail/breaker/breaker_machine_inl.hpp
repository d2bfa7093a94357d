// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The larger transition members of detail::BreakerMachine (the initial
// state, the passage of time, the half-open deadline), included at the end
// of breaker_machine.hpp. Including it alone includes that header first.
//
// Thread safety: as BreakerMachine; each REQUIRES mu_ (see the
// declarations).

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_INL_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_INL_HPP_

#include <atomic>
#include <cstdint>

#include "degrade/detail/breaker/breaker_machine.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

inline void BreakerMachine::StartInitialLocked(int64_t now) {
  switch (settings_.initial_state) {
    case InitialState::kOpen:
      return StartGenerationLocked(State::kOpen, now);
    case InitialState::kForcedOpen:
      return StartGenerationLocked(State::kOpen, now, kForcedOpen);
    case InitialState::kMetricsOnly:
      return StartGenerationLocked(State::kClosed, now, kMetricsOnly);
    case InitialState::kBypass:
      return StartGenerationLocked(State::kClosed, now, kBypass);
    case InitialState::kClosed:
      break;
  }
  StartGenerationLocked(State::kClosed, now);
}

inline void BreakerMachine::AdvanceLocked(int64_t now) {
  const uint64_t w = word_.load(std::memory_order_relaxed);
  switch (StateOf(w)) {
    case State::kClosed:
      if (Line(now) > interval_expiry_.load(std::memory_order_relaxed)) {
        StartGenerationLocked(State::kClosed, now, ModeOf(w));
      }
      break;
    case State::kOpen:
      if (Line(now) > open_expiry_.load(std::memory_order_relaxed)) {
        TransitionLocked(State::kHalfOpen, now,
                         ModeOf(w) == kForcedOpen
                             ? TransitionCause::kForcedOpenElapsed
                             : TransitionCause::kOpenElapsed);
      }
      break;
    case State::kHalfOpen:
      if (now > half_open_deadline_.load(std::memory_order_relaxed) &&
          (wait_from_entering_ || trials_.outstanding() > 0)) {
        if (settings_.half_open_wait_expiry == HalfOpenWaitExpiry::kClose) {
          CloseLocked(now, TransitionCause::kTrialWaitElapsed);
        } else {
          ReopenLocked(now, TransitionCause::kTrialTimedOut);
        }
      }
      break;
  }
}

inline void BreakerMachine::SetHalfOpenDeadlineLocked() {
  if (wait_from_entering_) return;  // armed once, on entering
  half_open_deadline_.store(trials_.deadline(), std::memory_order_release);
}
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_MACHINE_INL_HPP_
