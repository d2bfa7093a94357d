// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Time arithmetic that cannot overflow: the one place the library adds,
// subtracts and scales instants, durations and nanosecond counts, so that a
// clock at InfinitePast or InfiniteFuture, a clock stepped backwards, and
// durations of years or infinity give a defined, documented answer instead
// of signed overflow (UB) or a wrapped value.
//
// Two families, with the same rules:
//
//   * absl::Time / absl::Duration: `SatAdd(t, d)`, `SatSub(a, b)`,
//     `SatMul(d, k)`, `ElapsedSince(now, then)`. Results beyond the range
//     become the infinite value of the right sign (InfiniteFuture,
//     InfiniteDuration, ...), which absl itself treats as absorbing: an
//     infinite operand wins, so `InfiniteFuture + (-InfiniteDuration)` stays
//     InfiniteFuture. These spell out, in one tested place, what the
//     library relies on.
//   * int64_t nanoseconds (the breaker's and the windows' packed clocks):
//     `SatAddNanos`, `SatSubNanos`, `SatMulNanos`, `ElapsedNanosSince`,
//     clamping to [INT64_MIN, INT64_MAX]. absl::ToUnixNanos(InfiniteFuture)
//     is INT64_MAX and of InfinitePast INT64_MIN, so the ends of the int64
//     range play the part of the infinite instants.
//
// `ElapsedSince` / `ElapsedNanosSince` are what "how long since" should use:
// never negative (a clock stepped back reads as no time passed, not as a
// negative age that would, say, hold a level forever or underflow a
// counter), and zero between two equal infinite instants.
//
// The rule, for the whole library: every elapsed-time computation goes
// through ElapsedSince / ElapsedNanosSince / RemainingUntil (never a raw
// `now - then`), so it saturates and treats a clock going backwards as no
// time passing; timers that must survive a stepped clock measure on a
// SteadyTime. tests/hygiene/raw_time_subtraction.py finds raw
// subtractions of times under include/; a reviewed exception carries a
// `raw-time-ok:` comment saying why.
//
// Pure functions (SteadyTime aside); thread-safe.

#ifndef DEGRADE_DETAIL_SATURATING_HPP_
#define DEGRADE_DETAIL_SATURATING_HPP_

#include <cstdint>
#include <limits>

#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

inline constexpr int64_t kSatMaxNanos = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kSatMinNanos = std::numeric_limits<int64_t>::min();

// ---- Nanosecond integers ----

// a + b, clamped to the int64 range.
constexpr int64_t SatAddNanos(int64_t a, int64_t b) {
  if (b > 0 && a > kSatMaxNanos - b) return kSatMaxNanos;
  if (b < 0 && a < kSatMinNanos - b) return kSatMinNanos;
  return a + b;
}

// a - b, clamped to the int64 range.
constexpr int64_t SatSubNanos(int64_t a, int64_t b) {
  if (b < 0 && a > kSatMaxNanos + b) return kSatMaxNanos;
  if (b > 0 && a < kSatMinNanos + b) return kSatMinNanos;
  return a - b;
}

// d * k, clamped to the int64 range (the sign is the product's).
constexpr int64_t SatMulNanos(int64_t d, int64_t k) {
  if (d == 0 || k == 0) return 0;
  const bool negative = (d < 0) != (k < 0);
  // Compare magnitudes in unsigned arithmetic: |INT64_MIN| has no int64.
  const uint64_t ud = d < 0 ? 0 - static_cast<uint64_t>(d)
                            : static_cast<uint64_t>(d);
  const uint64_t uk = k < 0 ? 0 - static_cast<uint64_t>(k)
                            : static_cast<uint64_t>(k);
  const uint64_t limit = negative ? static_cast<uint64_t>(kSatMaxNanos) + 1
                                  : static_cast<uint64_t>(kSatMaxNanos);
  if (ud > limit / uk) return negative ? kSatMinNanos : kSatMaxNanos;
  const uint64_t product = ud * uk;  // <= limit
  if (!negative) return static_cast<int64_t>(product);
  return product == static_cast<uint64_t>(kSatMaxNanos) + 1
             ? kSatMinNanos
             : -static_cast<int64_t>(product);
}

// now - then, or 0 when `now` is not after `then` (a clock stepped back);
// clamped to INT64_MAX (from INT64_MIN to INT64_MAX is 2^64 - 1 ns).
constexpr int64_t ElapsedNanosSince(int64_t now, int64_t then) {
  if (now <= then) return 0;
  // raw-time-ok: now > then, and the difference is taken unsigned
  const uint64_t diff = static_cast<uint64_t>(now) - static_cast<uint64_t>(then);
  return diff > static_cast<uint64_t>(kSatMaxNanos)
             ? kSatMaxNanos
             : static_cast<int64_t>(diff);
}

// ---- absl::Time and absl::Duration ----

// t + d. Beyond the representable range: InfiniteFuture or InfinitePast.
// An infinite `t` stays what it is whatever `d` is.
inline absl::Time SatAdd(absl::Time t, absl::Duration d) { return t + d; }

// a - b. Beyond the range: +/-InfiniteDuration. An infinite `a` wins
// (InfiniteFuture - InfiniteFuture is InfiniteDuration); use ElapsedSince for
// "how long since", which is zero there.
inline absl::Duration SatSub(absl::Time a, absl::Time b) {
  return a - b;  // raw-time-ok: the saturating helper itself
}

// d * k. Beyond the range: +/-InfiniteDuration. An infinite `d` stays
// infinite (signed by k; `InfiniteDuration() * 0` is InfiniteDuration).
inline absl::Duration SatMul(absl::Duration d, int64_t k) { return d * k; }

// now - then, never negative: ZeroDuration when `now` is not after `then` (a
// clock stepped back, or the two the same infinite instant); InfiniteDuration
// when `now` is InfiniteFuture or `then` InfinitePast (and they differ), or
// the gap exceeds the Duration range.
inline absl::Duration ElapsedSince(absl::Time now, absl::Time then) {
  if (now <= then) return absl::ZeroDuration();
  return now - then;  // raw-time-ok: now > then, and absl saturates
}

// The time left until `deadline` at `now`, never negative: InfiniteDuration
// for a deadline at InfiniteFuture (no deadline) whatever the clock reads,
// ZeroDuration once `now` has reached a finite deadline.
inline absl::Duration RemainingUntil(absl::Time deadline, absl::Time now) {
  if (deadline == absl::InfiniteFuture()) return absl::InfiniteDuration();
  return ElapsedSince(deadline, now);
}

// Whether `now` has reached `deadline`; a deadline at InfiniteFuture is
// never reached, even by a clock at InfiniteFuture. The same answer as
// `RemainingUntil(deadline, now) == ZeroDuration()`.
inline bool DeadlineReached(absl::Time deadline, absl::Time now) {
  return deadline != absl::InfiniteFuture() && now >= deadline;
}

// SteadyTime
//
// Follows a clock that may step and gives a time line that never does:
// what timers (holds, ttls) are measured on. The first finite reading is
// taken as it is; each later finite reading moves the line on by
// ElapsedSince(reading, previous finite reading), so a clock stepped back
// counts as no time passing (and the time already run is kept, not run
// again), and a reading at InfinitePast or InfiniteFuture (or at an end of
// the int64 nanosecond range, which stands for them), which no real clock
// gives, counts as no time passing either. When the first readings
// are infinite the line starts at the Unix epoch, and the first finite
// reading after them moves it by nothing. A finite reading far in the
// future (a custom clock's bug) moves the line all the way, ending every
// timer on it: a forward step is taken as time that passed, and when the
// clock comes back that step back moves the line by nothing (it does not
// wait for the clock to catch up). Not thread-safe: its owner guards it.
class SteadyTime {
 public:
  // The line's time at `reading`.
  absl::Time Advance(absl::Time reading) {
    const bool first = !read_;
    read_ = true;
    if (AtAnInfinity(reading)) return now_;
    if (first) {
      now_ = reading;
    } else if (has_last_) {
      now_ = now_ + ElapsedSince(reading, last_);
    }
    has_last_ = true;
    last_ = reading;
    return now_;
  }
  // The line's time at the last reading (the epoch before any).
  absl::Time now() const { return now_; }

  // InfinitePast, InfiniteFuture, or a reading at an end of the int64
  // nanosecond range, which plays their part (a FakeClock set to an
  // infinite instant reads FromUnixNanos(INT64_MAX)).
  static bool AtAnInfinity(absl::Time t) {
    return t >= absl::FromUnixNanos(kSatMaxNanos) ||
           t <= absl::FromUnixNanos(kSatMinNanos);
  }

 private:
  absl::Time now_ = absl::UnixEpoch();
  absl::Time last_ = absl::UnixEpoch();
  bool has_last_ = false;  // a finite reading seen
  bool read_ = false;      // any reading seen
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SATURATING_HPP_
