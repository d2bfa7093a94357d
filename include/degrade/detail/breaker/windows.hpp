// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Sliding windows that feed a breaker's rates and, with a time window, all of
// gobreaker's Counts (gobreaker v2's rolling mode). Writers (every admitted
// and every completed call) are lock-free; readers (the rule, counts()) scan
// the window, because keeping running aggregates exact under concurrent
// resets would cost every successful call a contended read-modify-write.
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
//     a fast success answers true when (a) it rolled its bucket (the first
//     record there), (b) an admission has started a newer bucket since the
//     last record that asked (a bucket may have left), or (c) its bucket's
//     successes, after it, are <= calls_to_decide. (c) covers the record that
//     brings the window to the minimum: that bucket's successes are at most
//     the window's calls, which are then exactly the minimum. It may also
//     answer true for a few more records per bucket (at most calls_to_decide
//     per bucket width): an extra ask, never a missed one. The window's clock
//     is the newest admission or record it has seen: a bucket that leaves
//     with no admission and no record after it is noticed by the next one.
//   * calls_to_decide == kNeverDecides (UINT64_MAX, no rate rule): no ask
//     for fast successes, and Record costs what it did before the rule
//     existed (no extra atomic read-modify-write, one more compare).
//
//   Under races: the records that answer true are those of the
//   single-threaded history in the order the window's atomics took them
//   (tickets, bucket counters, the roll flag, each taken by exactly one
//   record). What may differ is what the asker then reads: a concurrent
//   record that took an earlier ticket may not have stored its outcome yet,
//   so the rule may see one call short and answer "not yet"; the rule is
//   then asked again at the next failure, slow call or new bucket. A record
//   racing a Reset may answer true spuriously (an extra ask) and may land on
//   either side of the reset, the same ambiguity its generation has; one
//   racing the recycling of its bucket for an age a whole window newer may
//   land in the newer age. A Read racing a Reset may still see part of the
//   old generation: the breaker resets and reads under its own lock.
//
// Thread safety: every member function may be called from any thread
// concurrently with any other, except construction and destruction.

#ifndef DEGRADE_DETAIL_BREAKER_WINDOWS_HPP_
#define DEGRADE_DETAIL_BREAKER_WINDOWS_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
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

// The last `size` completed calls, as a ring of outcome bytes (one byte per
// call). A size of 0 is read as 1. Thread-safe (see the file comment).
class CountWindow {
 public:
  explicit CountWindow(uint32_t size)
      : size_(size == 0 ? 1 : size), slots_(new std::atomic<uint8_t>[size_]) {
    Reset();
  }

  // Records one completed call; returns whether the rule must be asked (see
  // the file comment). An excluded or unrecorded outcome is ignored: a count
  // window holds calls only.
  DEGRADE_ALWAYS_INLINE bool Record(uint8_t outcome) {
    if (DEGRADE_UNLIKELY((outcome & (kOutcomeRecorded | kOutcomeExcluded)) !=
                         kOutcomeRecorded)) {
      return false;
    }
    const uint64_t ticket = next_.fetch_add(1, std::memory_order_relaxed);
    slots_[ticket % size_].store(outcome, std::memory_order_relaxed);
    return AlwaysAsks(outcome);
  }

  WindowStats Read() const {
    WindowStats s;
    for (uint32_t i = 0; i < size_; ++i) {
      const uint8_t o = slots_[i].load(std::memory_order_relaxed);
      if ((o & kOutcomeRecorded) == 0) continue;
      ++s.calls;
      if (o & kOutcomeFailed) ++s.failures;
      if (o & kOutcomeSlow) ++s.slow;
    }
    return s;
  }

  // Not atomic with respect to concurrent Record(): a call racing a reset may
  // land on either side of it, which is the same ambiguity its generation has.
  void Reset() {
    for (uint32_t i = 0; i < size_; ++i) {
      slots_[i].store(0, std::memory_order_relaxed);
    }
    next_.store(0, std::memory_order_relaxed);
  }

  uint32_t size() const { return size_; }

 private:
  const uint32_t size_;
  std::unique_ptr<std::atomic<uint8_t>[]> slots_;
  std::atomic<uint64_t> next_{0};
};

// The calls admitted in the last `buckets * width` since the origin, in
// buckets of `width` (<= 0 is read as 1 ns; 0 buckets as 1). A bucket is
// recycled when its index comes round again; the recycling is rare (once
// per bucket width) and takes a lock so that two writers cannot both zero
// it. One bucket is one cache line. Thread-safe (see the file comment).
class TimeWindow {
 public:
  TimeWindow(int64_t width_nanos, uint32_t buckets, int64_t origin_nanos,
             uint64_t calls_to_decide = kNeverDecides)
      : width_(width_nanos <= 0 ? 1 : width_nanos),
        n_(buckets == 0 ? 1 : buckets),
        decide_at_(calls_to_decide == kNeverDecides
                       ? 0
                       : std::max<uint64_t>(calls_to_decide, 1)),
        buckets_(new Bucket[n_]),
        origin_(origin_nanos) {}

  // Counts one admission (a v2 `Requests`) at `now_nanos`. Lock-free: one
  // acquire load and one relaxed add, unless the bucket must be started.
  DEGRADE_ALWAYS_INLINE void RecordAdmission(int64_t now_nanos) {
    const int64_t age = AgeOf(now_nanos);
    Bucket* b = &buckets_[Index(age)];
    if (DEGRADE_UNLIKELY(b->age.load(std::memory_order_acquire) != age)) {
      bool rolled = false;
      b = Roll(now_nanos, /*by_record=*/false, &rolled);
      if (b == nullptr) return;
    }
    b->requests.fetch_add(1, std::memory_order_relaxed);
  }

  // Takes back the admission at `start_nanos` of a permit destroyed without
  // a report, if its bucket is still in the window. Lock-free.
  void RecordAbandon(int64_t start_nanos) {
    const int64_t age = AgeOf(start_nanos);
    Bucket& b = buckets_[Index(age)];
    if (b.age.load(std::memory_order_acquire) == age) {
      b.abandoned.fetch_add(1, std::memory_order_relaxed);
    }
  }

  // Counts one outcome of a call admitted at `start_nanos` in that
  // admission's bucket, or drops it when the bucket now holds a newer age.
  // Returns whether the rule must be asked (see the file comment).
  DEGRADE_ALWAYS_INLINE bool Record(int64_t start_nanos, uint8_t outcome) {
    const int64_t age = AgeOf(start_nanos);
    Bucket* b = &buckets_[Index(age)];
    bool rolled = false;
    if (DEGRADE_UNLIKELY(b->age.load(std::memory_order_acquire) != age)) {
      b = Roll(start_nanos, /*by_record=*/true, &rolled);
      if (b == nullptr) return false;  // older than the window
    }
    if (DEGRADE_UNLIKELY((outcome & (kOutcomeRecorded | kOutcomeExcluded)) !=
                         kOutcomeRecorded)) {
      if (outcome & kOutcomeExcluded) {
        b->exclusions.fetch_add(1, std::memory_order_relaxed);
      }
      return false;  // an exclusion never raises a rate
    }
    if (DEGRADE_UNLIKELY(AlwaysAsks(outcome))) {
      if (outcome & kOutcomeSlow) {
        b->slow.fetch_add(1, std::memory_order_relaxed);
      }
      ((outcome & kOutcomeFailed) != 0 ? b->failures : b->successes)
          .fetch_add(1, std::memory_order_relaxed);
      TakeBucketLeft();  // this ask covers the note
      return true;
    }
    const uint64_t successes =
        b->successes.fetch_add(1, std::memory_order_relaxed) + 1;
    if (DEGRADE_LIKELY(decide_at_ == 0)) return false;
    // Taken whatever the rest says: any ask covers the note.
    const bool bucket_left = TakeBucketLeft();
    return rolled || successes <= decide_at_ || bucket_left;
  }

  // Sums the buckets whose age is within the n_ newest as of `now_nanos`.
  // A bucket being recycled while it is read is read again (a seqlock on its
  // age), so no bucket is ever counted with another age's figures.
  WindowStats Read(int64_t now_nanos) const {
    const int64_t newest = AgeOf(now_nanos);  // >= 0
    const int64_t oldest = newest - (static_cast<int64_t>(n_) - 1);
    WindowStats s;
    for (uint32_t i = 0; i < n_; ++i) {
      const Bucket& b = buckets_[i];
      for (;;) {
        const int64_t age = b.age.load(std::memory_order_acquire);
        if (age < 0 || age < oldest || age > newest) break;
        const uint64_t requests = b.requests.load(std::memory_order_relaxed);
        const uint64_t successes = b.successes.load(std::memory_order_relaxed);
        const uint64_t failures = b.failures.load(std::memory_order_relaxed);
        const uint64_t exclusions =
            b.exclusions.load(std::memory_order_relaxed);
        const uint64_t slow = b.slow.load(std::memory_order_relaxed);
        const uint64_t abandoned = b.abandoned.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (b.age.load(std::memory_order_relaxed) != age) continue;
        // An abandon racing the bucket's reuse may land on the new age:
        // clamped, it costs that bucket at most one request.
        s.requests += requests > abandoned ? requests - abandoned : 0;
        s.successes += successes;
        s.failures += failures;
        s.exclusions += exclusions;
        s.slow += slow;
        break;
      }
    }
    s.calls = s.successes + s.failures;
    return s;
  }

  // Empties every bucket and makes `origin_nanos` the start of age 0.
  void Reset(int64_t origin_nanos) {
    MutexLock lock(&roll_mu_);
    origin_.store(origin_nanos, std::memory_order_relaxed);
    for (uint32_t i = 0; i < n_; ++i) ClearLocked(buckets_[i], kNoAge);
    newest_ = kNoAge;
    bucket_left_.store(false, std::memory_order_relaxed);
  }

  uint32_t buckets() const { return n_; }
  int64_t width_nanos() const { return width_; }

 private:
  static constexpr int64_t kNoAge = -1;
  static constexpr int64_t kRolling = -2;  // being zeroed; see ClearLocked

  struct alignas(kCacheLine) Bucket {
    std::atomic<int64_t> age{kNoAge};
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> successes{0};
    std::atomic<uint64_t> failures{0};
    std::atomic<uint64_t> exclusions{0};
    std::atomic<uint64_t> slow{0};
    // Admissions whose permit was destroyed without a report: taken off
    // `requests` when read, as the breaker's own requests are.
    std::atomic<uint64_t> abandoned{0};
  };
  static_assert(sizeof(Bucket) == kCacheLine, "one bucket, one cache line");

  // Never negative: an instant before the origin is age 0.
  int64_t AgeOf(int64_t nanos) const {
    return ElapsedNanosSince(nanos, origin_.load(std::memory_order_relaxed)) /
           width_;
  }

  uint32_t Index(int64_t age) const {
    return static_cast<uint32_t>(static_cast<uint64_t>(age) % n_);
  }

  // The seqlock's write side: readers that saw any zeroing see the age
  // change too (release fence before, release store after).
  void ClearLocked(Bucket& b, int64_t age)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(roll_mu_) {
    b.age.store(kRolling, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    b.requests.store(0, std::memory_order_relaxed);
    b.successes.store(0, std::memory_order_relaxed);
    b.failures.store(0, std::memory_order_relaxed);
    b.exclusions.store(0, std::memory_order_relaxed);
    b.slow.store(0, std::memory_order_relaxed);
    b.abandoned.store(0, std::memory_order_relaxed);
    b.age.store(age, std::memory_order_release);
  }

  // The bucket for `nanos` (its age recomputed under the lock, so that a
  // writer that read the origin before a Reset uses the new one), started
  // if it held an older age or none; nullptr if it holds a newer age.
  Bucket* Roll(int64_t nanos, bool by_record, bool* rolled) {
    MutexLock lock(&roll_mu_);
    const int64_t age = AgeOf(nanos);
    Bucket& b = buckets_[Index(age)];
    const int64_t current = b.age.load(std::memory_order_relaxed);
    if (current == age) return &b;
    if (current > age) return nullptr;
    ClearLocked(b, age);
    *rolled = true;
    if (age > newest_) {
      // A newer bucket: an older one may have left. The record that started
      // it asks itself; one started by an admission leaves a note.
      newest_ = age;
      if (decide_at_ != 0) {
        bucket_left_.store(!by_record, std::memory_order_relaxed);
      }
    }
    return &b;
  }

  // True for exactly one record after each note; a relaxed load otherwise.
  bool TakeBucketLeft() {
    return bucket_left_.load(std::memory_order_relaxed) &&
           bucket_left_.exchange(false, std::memory_order_relaxed);
  }

  const int64_t width_;
  const uint32_t n_;
  const uint64_t decide_at_;  // 0: no rule
  const std::unique_ptr<Bucket[]> buckets_;
  std::atomic<int64_t> origin_;
  std::atomic<bool> bucket_left_{false};
  Mutex roll_mu_;
  int64_t newest_ ABSL_GUARDED_BY(roll_mu_) = kNoAge;
};

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

  // Records a completed call admitted at `start_nanos` (the time is used
  // by a time window only). Returns whether the rate rule must be asked
  // (see the file comment); always false without a window. Lock-free;
  // without a window, one compare.
  DEGRADE_ALWAYS_INLINE bool Record(int64_t start_nanos, uint8_t outcome) {
    if (DEGRADE_LIKELY(kind_ == SlidingWindow::Kind::kNone)) return false;
    if (kind_ == SlidingWindow::Kind::kCount) return count_->Record(outcome);
    return time_->Record(start_nanos, outcome);
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
