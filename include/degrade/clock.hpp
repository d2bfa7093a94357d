// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: clock.hpp
// -----------------------------------------------------------------------------
//
// Every time-based component in degrade (breakers, windows, hysteresis holds,
// refresh periods) reads time through a `Clock` it was given, never from a
// global. Production code passes nothing and gets `RealClock`; tests pass a
// `FakeClock` and move time by hand, so no test ever sleeps:
//
//   degrade::FakeClock clock;
//   degrade::BreakerSettings settings;
//   settings.clock = &clock;
//   degrade::CircuitBreaker<int> breaker(settings);
//   ...                                  // trip it
//   clock.Advance(absl::Seconds(61));    // the open timeout has now passed
//
// The clock must outlive every component that holds a pointer to it.
//
// A clock other than `RealClock` may step. Components time their holds,
// periods and ages on a line that never steps back (detail/saturating.hpp's
// SteadyTime; a breaker's lock-free equivalent): a step back counts as no
// time passing from the next reading on. A step forward counts in full, a
// jump to a finite far-future instant included, because no reading tells it
// from a process that really was paused that long: every running timer ends
// at once, and when the clock comes back the line stays ahead and runs on
// from there. Readings at InfinitePast / InfiniteFuture move a SteadyTime by
// nothing.

#ifndef DEGRADE_CLOCK_HPP_
#define DEGRADE_CLOCK_HPP_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Clock
//
// The source of time for everything in degrade. Implementations must be
// thread-safe: `Now()` is called concurrently from every thread that uses a
// component holding the clock.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time. Successive calls on one clock never go
  // backwards unless the clock is a `FakeClock` that a test `Set()` back.
  virtual absl::Time Now() const = 0;

  // Returns the current time at a coarser resolution (a few milliseconds at
  // most), where that is much cheaper to read. Components use it for
  // expiries and window buckets, which are seconds long, and `Now()` for
  // durations that need precision (slow calls). It never runs ahead of
  // `Now()`. The default is `Now()`.
  virtual absl::Time CoarseNow() const { return Now(); }
};

// RealClock
//
// Monotonic time expressed as an `absl::Time`. It starts at the wall-clock
// time of its construction and then advances with the monotonic clock, so a
// wall-clock step (NTP, an operator) can neither reopen a breaker early nor
// hold it open for an hour, while log lines still show plausible times.
// `CoarseNow()` reads CLOCK_MONOTONIC_COARSE on Linux (about 4 ns against
// about 25 ns for the precise clock, at the kernel tick's resolution).
//
// Thread-safe; immutable after construction.
class RealClock final : public Clock {
 public:
  RealClock()
      : wall_anchor_nanos_(absl::ToUnixNanos(absl::Now())),
        mono_anchor_(MonotonicNanos()) {}

  absl::Time Now() const override { return absl::FromUnixNanos(UnixNanos()); }

  absl::Time CoarseNow() const override {
    return absl::FromUnixNanos(CoarseUnixNanos());
  }

  // The same readings as plain nanoseconds since the Unix epoch, without the
  // virtual call: hot paths that hold the default clock use these.
  int64_t UnixNanos() const {
    // A monotonic reading less its anchor, read from the same clock at
    // construction: never a step, and no wrap within 292 years of uptime.
    // raw-time-ok: monotonic, against its own anchor (see above)
    return wall_anchor_nanos_ + (MonotonicNanos() - mono_anchor_);
  }
  int64_t CoarseUnixNanos() const {
    // The coarse clock shares the monotonic epoch; it may read a tick behind
    // the anchor (a few ms below it), never a wrap.
    // raw-time-ok: monotonic, against its own anchor (see above)
    return wall_anchor_nanos_ + (CoarseNanos() - mono_anchor_);
  }

  // The process-wide instance components use when given no clock.
  static const RealClock& Instance() {
    static const RealClock clock;
    return clock;
  }

 private:
  static int64_t MonotonicNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Same epoch as steady_clock (CLOCK_MONOTONIC) where the coarse clock
  // exists, so the two readings can be mixed.
  static int64_t CoarseNanos() {
#if defined(__linux__) && defined(CLOCK_MONOTONIC_COARSE)
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0) {
      return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }
#endif
    return MonotonicNanos();
  }

  int64_t wall_anchor_nanos_;
  int64_t mono_anchor_;
};

// FakeClock
//
// A clock that moves only when told to. Thread-safe: `Now()`, `Advance()` and
// `Set()` may race; each is a single atomic operation, so a reader sees either
// the old or the new time, never a torn one.
class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary fixed instant far from the Unix epoch, so that
  // "zero time" sentinels in the code under test can't be confused with now.
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000))
      : nanos_(absl::ToUnixNanos(start)) {}

  absl::Time Now() const override {
    return absl::FromUnixNanos(nanos_.load(std::memory_order_acquire));
  }

  // Moves time forward by `d`.
  // REQUIRES: `d >= absl::ZeroDuration()`; a negative `d` is ignored, because
  // time that runs backwards is a `Set()` and should read like one in a test.
  // Saturates at the largest representable time rather than wrapping, so
  // "advance past everything" (even `absl::InfiniteDuration()`) stays in
  // the future.
  void Advance(absl::Duration d) {
    if (d <= absl::ZeroDuration()) return;
    const int64_t step = absl::ToInt64Nanoseconds(d);  // saturates itself
    int64_t current = nanos_.load(std::memory_order_relaxed);
    int64_t next;
    do {
      next = detail::SatAddNanos(current, step);
    } while (!nanos_.compare_exchange_weak(
        current, next, std::memory_order_acq_rel, std::memory_order_relaxed));
  }

  // Jumps to `t`, forwards or backwards.
  void Set(absl::Time t) {
    nanos_.store(absl::ToUnixNanos(t), std::memory_order_release);
  }

 private:
  std::atomic<int64_t> nanos_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CLOCK_HPP_
