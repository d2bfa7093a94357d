// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The time line a breaker runs its timers on (the open period, a
// forced-open end, the closed interval) when its clock is not RealClock and
// so may step back: a wall-clock adapter, a FakeClock set back.
//
// The line is reading + offset. It never goes back below the time the
// breaker last armed a timer at (the floor): a reading below it is a step
// back, absorbed into the offset, so that it counts as no time passing and
// the timers run on from where they were instead of stretching by the
// step. Time the clock ran between the arming and the step, unread, is
// lost: a period stretches by at most its own length, never by the step.
// Forward steps count in full (a jump to a finite far-future time ends
// every timer, as on a SteadyTime). Readings at an end of the int64 range
// (a clock at InfinitePast or InfiniteFuture) are used as they are and move
// nothing.
//
// Lock-free: Read() is two loads and a compare, and writes only when the
// clock has stepped back; two readers that meet the same step absorb it
// once. ArmedAt() has one writer at a time (the breaker's lock).

#ifndef DEGRADE_DETAIL_BREAKER_STEP_LINE_HPP_
#define DEGRADE_DETAIL_BREAKER_STEP_LINE_HPP_

#include <atomic>
#include <cstdint>

#include "degrade/detail/macros.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class StepLine {
 public:
  // `reading` (Unix ns of the clock) on the line.
  DEGRADE_NOINLINE int64_t Read(int64_t reading) const {
    if (AtAnEnd(reading)) return reading;
    int64_t offset = offset_.load(std::memory_order_acquire);
    for (;;) {
      const int64_t t = SatAddNanos(reading, offset);
      const int64_t floor = floor_.load(std::memory_order_acquire);
      if (DEGRADE_LIKELY(t >= floor)) return t;
      // A racing reader may have absorbed the same step: the failed
      // exchange reloads `offset` and the loop reads the line again.
      if (offset_.compare_exchange_weak(offset, SatSubNanos(floor, reading),
                                        std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        return floor;
      }
    }
  }

  // A timer was armed at `line`: a later reading below it is a step back.
  // REQUIRES: one caller at a time.
  void ArmedAt(int64_t line) {
    if (AtAnEnd(line)) return;  // not a real time
    if (line > floor_.load(std::memory_order_relaxed)) {
      floor_.store(line, std::memory_order_release);
    }
  }

  // An instant of the clock's on the line, and back.
  int64_t FromClock(int64_t t) const {
    return AtAnEnd(t) ? t
                      : SatAddNanos(t, offset_.load(std::memory_order_acquire));
  }
  int64_t ToClock(int64_t t) const {
    return AtAnEnd(t) ? t
                      : SatSubNanos(t, offset_.load(std::memory_order_acquire));
  }

 private:
  static bool AtAnEnd(int64_t t) {
    return t == kSatMaxNanos || t == kSatMinNanos;
  }

  mutable std::atomic<int64_t> offset_{0};
  std::atomic<int64_t> floor_{kSatMinNanos};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_STEP_LINE_HPP_
