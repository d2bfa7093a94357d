// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Sliding windows that feed a breaker's rates and, with a time window, all of
// gobreaker's Counts (gobreaker v2's rolling mode): the last N calls
// (count_window.hpp) or the calls of the last T (time_window.hpp), behind
// one interface. A fast success, almost every call, writes only the
// calling thread's shard (each file says how, and what that costs in
// exactness under concurrency); the other outcomes, which take the
// breaker's lock anyway, and readers (the rule, counts()) take the
// window's lock.
//
// Time windows: buckets aligned to when counting started
//
//   Reset(now) (a new generation) sets the origin: bucket age k covers
//   [origin + k*width, origin + (k+1)*width), so a 10 s window of 1 s buckets
//   started at 0.5 s holds the call of 0.5 s until 10.5 s, whatever the epoch
//   seconds are. An instant before the origin (a clock stepped back inside the
//   generation) counts in age 0, as v2 clamps a negative age to 0: it belongs
//   to this generation (the breaker drops earlier generations' stragglers
//   itself) and dropping it would lose a real outcome. Ages are computed with
//   ElapsedNanosSince, so origins and instants at the int64 ends saturate.
//
//   Admissions (RecordAdmission, at admission time) and outcomes (Record, at
//   the call's admission instant) both go to the admission's bucket, as v2
//   credits a late outcome to the bucket of its `age`. An outcome whose
//   bucket has been recycled for a newer age is dropped: it is older than the
//   window (v2: "an outcome older than the window is not counted"). One left
//   in a bucket that is merely out of range is invisible to Read.
//
// Should the rate rule be asked? (the value Record returns)
//
//   A rule with a minimum of `calls_to_decide` calls answers "not yet" below
//   it and otherwise compares failure and slow-call rates with thresholds.
//   Record returns true whenever, single-threaded, the answer after this
//   record could have changed towards "open" since the previous record;
//   false only when it provably could not. Failures and slow calls always
//   answer true. For a fast success:
//
//   * Count window, and no window: a fast success either adds a
//     non-failing call or replaces an older outcome, so neither rate can
//     rise; only the "not yet" -> "decide" step can open, when the calls
//     reach a minimum. The breaker counts its generation's calls up to its
//     rule's largest minimum itself (BreakerCore::ReachedMinimum), so for
//     these kinds Record answers true for failures and slow calls only.
//   * Time window. Rates can also rise when a bucket leaves (its successes
//     go), and the call count can drop below the minimum and climb back. So
//     a fast success answers true when (a) it is the first record of its
//     thread's lane in its bucket (the bucket may be new), (b) an admission
//     has started a newer bucket since the last record that asked (a bucket
//     may have left), (c) the report's own time is in another bucket than
//     the newest the window has seen: a bucket left with no admission to
//     notice it (a long call completing after it), or the clock stepped
//     back (the window read now is an older one), or (d) its lane's
//     successes in its bucket, after it, are <= calls_to_decide. (d) covers
//     the record that brings the window to the minimum: the lane's
//     successes are at most the bucket's, at most the window's calls, which
//     are then exactly the minimum. It may also answer true for a few more
//     records per bucket (at most calls_to_decide per lane and bucket
//     width): an extra ask, never a missed one. So the rule is asked at
//     every report after which, read at that report's time, it could
//     answer "open" where it answered "not yet" before, as resilience4j
//     asks after every call.
//   * calls_to_decide == kNeverDecides (UINT64_MAX, no rate rule): no ask
//     for fast successes, and Record costs what it did before the rule
//     existed (one more compare).
//
//   Under races: a record that asks may read, under the breaker's lock, a
//   window that does not yet hold a fast success another thread has just
//   added (its shard's store not yet visible), so the rule may see one call
//   short per thread completing a call at that instant and answer "not
//   yet"; it is asked again at the next failure, slow call, new bucket or
//   (time window, below the minimum) success. A record racing a Reset may
//   answer true spuriously (an extra ask) and may land on either side of
//   the reset, the same ambiguity its generation has. The breaker resets
//   and reads under its own lock.
//
// Thread safety: every member function may be called from any thread
// concurrently with any other, except construction and destruction.

#ifndef DEGRADE_DETAIL_BREAKER_WINDOWS_HPP_
#define DEGRADE_DETAIL_BREAKER_WINDOWS_HPP_

#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/breaker/count_window.hpp"
#include "degrade/detail/breaker/time_window.hpp"
#include "degrade/detail/breaker/window_outcome.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Window
//
// The window a breaker's settings chose, behind one interface: none (the
// rates cover the whole generation, from the breaker's own counts), the last
// N calls, or the calls of the last T. A new kind of window is a new branch
// here, not a change to the breaker. Thread-safe (see the file comment).
class Window {
 public:
  // `now_nanos` is the first origin (the first generation's start);
  // `calls_to_decide` bounds a time window's per-bucket ask: the largest
  // minimum of the rate rule's parts, or kNeverDecides without one (0 is
  // read as 1). Count windows and no window ignore it (the breaker counts
  // its calls to the minimum itself).
  // REQUIRES: `w` passes ValidateBreakerSettings (see
  // NormalizeBreakerSettings).
  Window(const SlidingWindow& w, int64_t now_nanos, uint64_t calls_to_decide)
      : kind_(w.kind) {
    if (kind_ == SlidingWindow::Kind::kCount) {
      count_ = std::make_unique<CountWindow>(w.size);
    } else if (kind_ == SlidingWindow::Kind::kTime) {
      const uint32_t buckets = w.size == 0 ? 1 : w.size;
      time_ = std::make_unique<TimeWindow>(
          absl::ToInt64Nanoseconds(w.length / buckets), buckets, now_nanos,
          calls_to_decide);
    }
  }

  // Whether there is a window at all; without one, Read() is not called.
  bool active() const { return kind_ != SlidingWindow::Kind::kNone; }
  // Whether Record(), RecordAdmission() and Read() need the time.
  bool timed() const { return kind_ == SlidingWindow::Kind::kTime; }

  // Takes back an admission whose permit was abandoned (time window only).
  void RecordAbandon(int64_t start_nanos) {
    if (kind_ == SlidingWindow::Kind::kTime) time_->RecordAbandon(start_nanos);
  }
  // Counts an admission at `now_nanos` in a time window (v2's Requests);
  // nothing otherwise. Lock-free; one relaxed add in the common case.
  DEGRADE_ALWAYS_INLINE void RecordAdmission(int64_t now_nanos) {
    if (kind_ == SlidingWindow::Kind::kTime) time_->RecordAdmission(now_nanos);
  }

  // Records a completed call admitted at `start_nanos` and reported at
  // `now_nanos` (both used by a time window only). Returns whether the rate
  // rule must be asked (see the file comment); always false without a
  // window. Without a window, one compare.
  DEGRADE_ALWAYS_INLINE bool Record(int64_t start_nanos, int64_t now_nanos,
                                    uint8_t outcome) {
    if (DEGRADE_LIKELY(kind_ == SlidingWindow::Kind::kNone)) return false;
    if (kind_ == SlidingWindow::Kind::kCount) return count_->Record(outcome);
    return time_->Record(start_nanos, now_nanos, outcome);
  }

  // REQUIRES: active().
  WindowStats Read(int64_t now_nanos) const {
    return kind_ == SlidingWindow::Kind::kCount ? count_->Read()
                                                : time_->Read(now_nanos);
  }

  // Starts a new generation: empties the window and, for a time window,
  // makes `now_nanos` the origin of its buckets.
  void Reset(int64_t now_nanos) {
    if (count_) count_->Reset();
    if (time_) time_->Reset(now_nanos);
  }

 private:
  const SlidingWindow::Kind kind_;
  std::unique_ptr<CountWindow> count_;
  std::unique_ptr<TimeWindow> time_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_WINDOWS_HPP_
