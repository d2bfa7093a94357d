// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The arithmetic the rate limiters share (rate_limit.hpp,
// keyed_rate_limit.hpp): the generic cell rate algorithm on one number, the
// theoretical arrival time (TAT), and the time line it is measured on.
//
// GCRA. With an emission interval T (1 / rate) and a tolerance tau
// (burst x T), a request for cost c at `now` would move the TAT to
// next = max(TAT, now) + c; it may go at `next - tau`, so it waits
// next - tau - now (nothing when that is not positive), and is admitted iff
// that wait is at most the wait it accepts. Admitted, TAT := next; refused,
// nothing changes. A TAT at or before `now - tau` is a full bucket, which
// is what an absent key is: that is why idle state costs nothing.
//
// Ticks. Times and intervals are int64 counts of a quarter nanosecond
// since the limiter was created (its epoch), so 1 / rate is exact to a
// quarter nanosecond up to 1e9 per second and the line lasts 18 years;
// beyond that a reading counts as no time passing.
//
// The time line. A clock read as ticks plus an offset. A clock stepped back
// (by `kStepBackTicks` or more below the lowest time the state allows, TAT
// - tau - the longest wait) raises the offset so that the line stands still
// at that floor and moves on with the clock from there: time does not run
// backwards and the limiter does not refuse for as long as the step was.
// It may forgive nothing and may lose at most tau + the longest wait of
// credit. Smaller dips (two threads' readings racing, a coarse clock's
// tick) read as the floor. A reading at an infinity (InfinitePast,
// InfiniteFuture, or past the line's 18 years) reads as the latest good
// reading (to within a millisecond behind it), or the floor when that is
// higher: no time passes while the clock is broken, and what was held then
// can be spent, nothing more.
//
// A clock stepped back and then forward again (a custom clock corrected)
// reads as the forward step passing: the line cannot tell it from real
// time, so a limiter in debt may find its bucket full again. What is
// forgiven is at most the state's whole span, the burst plus the longest
// wait; RealClock never steps.
//
// Thread safety: GcraLine is thread-safe (its offset is an atomic that only
// grows); the functions are pure.

#ifndef DEGRADE_DETAIL_RATE_LIMIT_GCRA_HPP_
#define DEGRADE_DETAIL_RATE_LIMIT_GCRA_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

inline constexpr int64_t kGcraTicksPerNano = 4;
// The line's length: 2^59 ns (18 years) in ticks, leaving 2^61 of headroom
// so that a TAT plus a tolerance or a cost (at most 60 days) never
// saturates in practice.
inline constexpr int64_t kGcraMaxElapsedNanos = int64_t{1} << 59;
inline constexpr int64_t kGcraStepBackTicks = int64_t{1'000'000'000} * 4;
inline constexpr int64_t kGcraGoodSlackTicks = int64_t{1'000'000} * 4;
// A clock reading that says "no time passes": at an infinity or past the
// line's end.
inline constexpr int64_t kGcraNoReading = std::numeric_limits<int64_t>::min();

inline int64_t GcraTicks(absl::Duration d) {
  return SatMulNanos(absl::ToInt64Nanoseconds(d), kGcraTicksPerNano);
}
// Ticks as a Duration, rounded up to the nanosecond (a wait is never
// reported shorter than it is).
inline absl::Duration GcraDuration(int64_t ticks) {
  if (ticks <= 0) return absl::ZeroDuration();
  return absl::Nanoseconds(ticks / kGcraTicksPerNano +
                           (ticks % kGcraTicksPerNano != 0 ? 1 : 0));
}
// The emission interval of `rate` permits per second, in ticks (>= 1).
inline int64_t GcraInterval(double rate) {
  const double t = 1e9 * static_cast<double>(kGcraTicksPerNano) / rate;
  if (!(t >= 1)) return 1;
  if (t >= 9e18) return std::numeric_limits<int64_t>::max() / 4;
  return static_cast<int64_t>(std::llround(t));
}

// The outcome of one GCRA decision. When admitted, `next` is the new TAT
// and `wait` what the request waits (>= 0). When refused, `wait` is how
// long until it would be admitted without other traffic, or -1 when it
// never would (it costs more than the tolerance and the longest wait).
struct GcraStep {
  bool admit = false;
  int64_t next = 0;
  int64_t wait = 0;
};

// The decision for `cost` ticks at `now`, with the state `tat`, a
// `tolerance` and the longest acceptable wait `max_wait`; `least_wait` is
// the wait the same request would have at best (from a full bucket at the
// stable rate), to tell "later" from "never". Pure.
inline GcraStep GcraDecide(int64_t tat, int64_t now, int64_t cost,
                           int64_t least_wait, int64_t tolerance,
                           int64_t max_wait) {
  GcraStep s;
  s.next = SatAddNanos(tat > now ? tat : now, cost);
  const int64_t wait = SatSubNanos(SatSubNanos(s.next, tolerance), now);
  if (wait <= max_wait) {
    s.admit = true;
    s.wait = wait > 0 ? wait : 0;
    return s;
  }
  if (least_wait > max_wait) {
    s.wait = -1;
  } else {
    s.wait = SatSubNanos(wait, max_wait);
  }
  return s;
}

// GcraRamp
//
// A warm-up ramp on the line (Guava's and Sentinel's cold start): after a
// quiet spell of `warm_up`, the rate rises linearly from rate / cold_factor
// to the rate over `warm_up`. `interval` is the stable one, in ticks.
// Pure; thread-safe.
struct GcraRamp {
  int64_t interval;
  int64_t warm_up;  // ticks; 0: off
  double cold_factor;

  // The interval at `now` during a ramp that began at `ramp_start`: the rate
  // rises linearly from rate / cold_factor to rate over the warm-up.
  int64_t Interval(int64_t now, int64_t ramp_start) const {
    if (warm_up == 0) return interval;
    const int64_t since = ElapsedNanosSince(now, ramp_start);
    if (since >= warm_up) return interval;
    const double frac =
        static_cast<double>(since) / static_cast<double>(warm_up);
    const double share = 1.0 / cold_factor + (1.0 - 1.0 / cold_factor) * frac;
    return static_cast<int64_t>(
        std::ceil(static_cast<double>(interval) / share));
  }

  // While warming, the tolerance shrinks as the ramp goes on (the burst is
  // `burst` permits at a rate that rises), so the wait computed with today's
  // tolerance comes too early. Moved on to the time it names until the
  // request fits there (the wait only grows), else the bound with the
  // stable tolerance and today's cost, which no later time beats.
  // `ramp` is the current ramp's start; `new_ramp`: none has begun (the
  // bucket idle for a warm-up), so one begins with the admission, whenever
  // that is. `tolerance` is the stable one (burst x interval).
  int64_t WarmingWait(int64_t tat, int64_t t, int64_t n, int64_t burst,
                      int64_t tolerance, int64_t max_wait, int64_t wait,
                      int64_t ramp, bool new_ramp) const {
    const auto late = [&](int64_t w) {  // how far t + w still is from fitting
      const int64_t at = SatAddNanos(t, w);
      const int64_t i = Interval(at, new_ramp ? at : ramp);
      const int64_t next = SatAddNanos(tat > at ? tat : at, SatMulNanos(i, n));
      return SatSubNanos(SatSubNanos(next, SatMulNanos(i, burst)),
                         SatAddNanos(at, max_wait));
    };
    // A wait that surely fits, at this time and any later: the stable (the
    // smallest) tolerance against today's (the largest) cost.
    const int64_t cost = SatMulNanos(Interval(t, new_ramp ? t : ramp), n);
    const int64_t bound = std::max(
        wait, SatSubNanos(
                  SatSubNanos(SatAddNanos(tat > t ? tat : t, cost), tolerance),
                  SatAddNanos(t, max_wait)));
    // How fast the unused burst's tolerance can shrink against time passing:
    // (burst - n) x the steepest fall of the interval, at the cold end. Below
    // one half, lateness falls by at least half of any time waited, less one
    // tick per permit (the interval is rounded up to a tick), so once a time
    // fits, any time 2 x (burst - n) ticks later fits too. Otherwise the
    // bound.
    const double spare = static_cast<double>(burst - n);
    const double steepest = static_cast<double>(interval) * (cold_factor - 1) *
                            cold_factor / static_cast<double>(warm_up);
    if (spare * steepest >= 0.5) return bound;
    const int64_t margin = 2 * (burst - n);
    // Each round moves to the time named: the fit improves by less than the
    // time moved, so this approaches the answer from below.
    int64_t w = wait;
    for (int round = 0; round < 64 && w < bound; ++round) {
      const int64_t more = late(w);
      if (more <= 0) return std::min(bound, SatAddNanos(w, margin));
      w = SatAddNanos(w, more);
    }
    return bound;
  }
};

// CpuRelax(n)
//
// `n` spin-wait hints: what a compare-and-swap that lost does before trying
// again. Nothing on an architecture without one.
inline void CpuRelax(int n) {
  for (int i = 0; i < n; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
  }
}

// GcraLine
//
// A limiter's time line on `clock` (see the file comment). `coarse` reads
// CoarseNow(), the default RealClock without a virtual call.
class GcraLine {
 public:
  GcraLine(const Clock* clock, bool coarse)
      : clock_(clock),
        real_(clock == &RealClock::Instance() ? &RealClock::Instance()
                                              : nullptr),
        coarse_(coarse),
        epoch_nanos_(EpochOf(clock)) {}

  // The line's time, given the lowest time the state allows (`floor`).
  int64_t Now(int64_t floor) const {
    const int64_t raw = Raw();
    if (raw == kGcraNoReading) {
      const int64_t good = good_.load(std::memory_order_relaxed);
      return good > floor ? good : floor;
    }
    int64_t offset = offset_.load(std::memory_order_relaxed);
    int64_t t = SatAddNanos(raw, offset);
    while (t < floor && SatSubNanos(floor, t) >= kGcraStepBackTicks) {
      // A step back: stand still at the floor, then move on with the
      // clock. The offset only grows.
      const int64_t want = SatAddNanos(offset, SatSubNanos(floor, t));
      if (offset_.compare_exchange_weak(offset, want,
                                        std::memory_order_relaxed)) {
        offset = want;
      }
      t = SatAddNanos(raw, offset);
    }
    Remember(t);
    return t < floor ? floor : t;
  }

  // The line's time without a floor: for reports (a gauge), never for a
  // decision.
  int64_t Peek() const {
    const int64_t raw = Raw();
    if (raw == kGcraNoReading) return 0;
    return SatAddNanos(raw, offset_.load(std::memory_order_relaxed));
  }

 private:
  // The earlier of the precise and the coarse reading: the coarse clock
  // lags the precise one by up to its tick, and a line whose first coarse
  // reading fell before its epoch would start a few ms in debt (a new
  // limiter short of its burst, a warm-up that never starts cold).
  static int64_t EpochOf(const Clock* clock) {
    const absl::Time precise = clock->Now();
    const absl::Time coarse = clock->CoarseNow();
    const bool p = !SteadyTime::AtAnInfinity(precise);
    const bool c = !SteadyTime::AtAnInfinity(coarse);
    if (!p && !c) return 0;
    if (p && c) return absl::ToUnixNanos(std::min(precise, coarse));
    return absl::ToUnixNanos(p ? precise : coarse);
  }

  // The latest good reading on the line, for a reading at an infinity:
  // kept exactly when the line went back (a state read at a later time
  // than the latest would hand its credit out again) and to within
  // kGcraGoodSlackTicks ahead, so that the hot path writes it about once a
  // millisecond rather than on every call.
  DEGRADE_ALWAYS_INLINE void Remember(int64_t t) const {
    const int64_t good = good_.load(std::memory_order_relaxed);
    if (DEGRADE_UNLIKELY(t < good ||
                         SatSubNanos(t, good) > kGcraGoodSlackTicks)) {
      good_.store(t, std::memory_order_relaxed);
    }
  }

  DEGRADE_ALWAYS_INLINE int64_t Raw() const {
    int64_t ns;
    if (real_ != nullptr) {
      ns = coarse_ ? real_->CoarseUnixNanos() : real_->UnixNanos();
    } else {
      const absl::Time t = coarse_ ? clock_->CoarseNow() : clock_->Now();
      if (SteadyTime::AtAnInfinity(t)) return kGcraNoReading;
      ns = absl::ToUnixNanos(t);
    }
    // Signed: a clock stepped back before the epoch is a step like another.
    const int64_t since = SatSubNanos(ns, epoch_nanos_);
    if (since >= kGcraMaxElapsedNanos || since <= -kGcraMaxElapsedNanos) {
      return kGcraNoReading;
    }
    return since * kGcraTicksPerNano;
  }

  const Clock* const clock_;
  const RealClock* const real_;
  const bool coarse_;
  const int64_t epoch_nanos_;
  mutable std::atomic<int64_t> offset_{0};
  mutable std::atomic<int64_t> good_{0};  // the line starts at 0
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RATE_LIMIT_GCRA_HPP_
