// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A breaker's time window: the calls admitted in the last `buckets * width`,
// in buckets of `width` aligned to the generation's origin (windows.hpp
// says what is counted where and when the rule is asked).
//
// Why lanes: with one set of shared buckets every admission and every
// success wrote the current bucket's cache line, so a second thread made a
// windowed breaker 4-7x slower per call. Here each thread shard
// (thread_shard.hpp) has a lane: the requests and fast successes of one
// bucket age, on a cache line of its own. A thread that admits or succeeds
// in its lane's age adds there, a plain load and store when it owns the
// shard. The first time it meets a newer age it takes the window's lock,
// moves the lane's counts into the shared bucket of their age and starts
// the lane at the new age: once per bucket width per thread. Everything
// else (failures, slow calls, exclusions, abandons, an outcome of a call
// admitted in an older bucket than its lane's) is recorded in the shared
// buckets under that lock: those outcomes take the breaker's lock anyway.
// Read() sums, under the lock, the shared buckets and the lanes whose age
// is in the window.
//
// Exactness: single-threaded, and whenever no call is being recorded,
// Read() is what one set of shared buckets would hold. A thread past the
// exclusive shards shares a lane, adding with fetch_add; when two such
// threads meet a new bucket at once, one's add may be counted in the newer
// age (one bucket late). A record racing Reset() may land on either side
// of it, as its generation may.
//
// Memory: ShardArraySize() cache lines for the lanes plus 64 bytes per
// bucket: with 8 exclusive shards and 10 buckets, 1,280 bytes.
//
// Thread-safe: every member may be called from any thread.

#ifndef DEGRADE_DETAIL_BREAKER_TIME_WINDOW_HPP_
#define DEGRADE_DETAIL_BREAKER_TIME_WINDOW_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "degrade/detail/breaker/window_outcome.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// `width_nanos` <= 0 is read as 1 ns; 0 buckets as 1. `calls_to_decide`:
// the largest minimum of the rate rule, or kNeverDecides (0 is read as 1).
class TimeWindow {
 public:
  TimeWindow(int64_t width_nanos, uint32_t buckets, int64_t origin_nanos,
             uint64_t calls_to_decide = kNeverDecides)
      : width_(width_nanos <= 0 ? 1 : width_nanos),
        n_(buckets == 0 ? 1 : buckets),
        decide_at_(calls_to_decide == kNeverDecides
                       ? 0
                       : std::max<uint64_t>(calls_to_decide, 1)),
        lane_count_(ShardArraySize()),
        lanes_(new Lane[lane_count_]),
        buckets_(new Bucket[n_]),
        origin_(origin_nanos) {}

  // Counts one admission (a v2 `Requests`) at `now_nanos`: an add to the
  // calling thread's lane, unless the lane must move to a newer bucket.
  DEGRADE_ALWAYS_INLINE void RecordAdmission(int64_t now_nanos) {
    Lane& lane = lanes_[ThreadShardIndex()];
    if (DEGRADE_LIKELY(lane.age.load(std::memory_order_relaxed) ==
                       AgeOf(now_nanos))) {
      Bump(lane.requests);
      return;
    }
    AdmitSlow(now_nanos);
  }

  // Takes back the admission at `start_nanos` of a permit destroyed without
  // a report, if its bucket is still in the window.
  void RecordAbandon(int64_t start_nanos) {
    MutexLock lock(&mu_);
    bool rolled = false;
    if (Bucket* b = SharedLocked(AgeOf(start_nanos), true, &rolled)) {
      ++b->abandoned;
    }
  }

  // Counts one outcome, reported at `now_nanos`, of a call admitted at
  // `start_nanos` in that admission's bucket, or drops it when the bucket
  // now holds a newer age. Returns whether the rule must be asked
  // (windows.hpp). A fast success in the lane's age, reported in the
  // window's newest bucket, is an add to the lane.
  DEGRADE_ALWAYS_INLINE bool Record(int64_t start_nanos, int64_t now_nanos,
                                    uint8_t outcome) {
    if (DEGRADE_LIKELY(outcome == kOutcomeRecorded)) {
      Lane& lane = lanes_[ThreadShardIndex()];
      const int64_t age = AgeOf(start_nanos);
      const int64_t now_age = now_nanos == start_nanos ? age : AgeOf(now_nanos);
      if (DEGRADE_LIKELY(lane.age.load(std::memory_order_relaxed) == age &&
                         now_age ==
                             clock_age_.load(std::memory_order_relaxed))) {
        const uint64_t successes = Bump(lane.successes);
        if (DEGRADE_LIKELY(decide_at_ == 0)) return false;
        // Taken whatever the rest says: any ask covers the note.
        const bool bucket_left = TakeBucketLeft();
        return successes <= decide_at_ || bucket_left;
      }
    }
    return RecordSlow(start_nanos, now_nanos, outcome);
  }

  // Sums the buckets and lanes whose age is within the n_ newest as of
  // `now_nanos`.
  WindowStats Read(int64_t now_nanos) const {
    MutexLock lock(&mu_);
    const int64_t newest = AgeOf(now_nanos);  // >= 0
    const int64_t oldest = newest - (static_cast<int64_t>(n_) - 1);
    const auto in_window = [&](int64_t age) {
      return age >= 0 && age >= oldest && age <= newest;
    };
    WindowStats s;
    uint64_t abandoned = 0;
    for (uint32_t i = 0; i < n_; ++i) {
      const Bucket& b = buckets_[i];
      if (!in_window(b.age)) continue;
      s.requests += b.counts.requests;
      s.successes += b.counts.successes;
      s.failures += b.counts.failures;
      s.exclusions += b.counts.exclusions;
      s.slow += b.counts.slow;
      abandoned += b.abandoned;
    }
    for (std::size_t i = 0; i < lane_count_; ++i) {
      const Lane& lane = lanes_[i];
      if (!in_window(lane.age.load(std::memory_order_relaxed))) continue;
      s.requests += lane.requests.load(std::memory_order_relaxed);
      s.successes += lane.successes.load(std::memory_order_relaxed);
    }
    // An abandon is recorded in its admission's bucket, which may hold the
    // admission itself in a lane not yet moved there: clamp the sum only.
    s.requests = s.requests > abandoned ? s.requests - abandoned : 0;
    s.calls = s.successes + s.failures;
    return s;
  }

  // Empties every bucket and lane and makes `origin_nanos` the start of age
  // 0.
  void Reset(int64_t origin_nanos) {
    MutexLock lock(&mu_);
    origin_.store(origin_nanos, std::memory_order_relaxed);
    for (uint32_t i = 0; i < n_; ++i) buckets_[i] = Bucket{};
    for (std::size_t i = 0; i < lane_count_; ++i) {
      Lane& lane = lanes_[i];
      lane.age.store(kNoAge, std::memory_order_relaxed);
      lane.requests.store(0, std::memory_order_relaxed);
      lane.successes.store(0, std::memory_order_relaxed);
    }
    newest_ = kNoAge;
    clock_age_.store(kNoAge, std::memory_order_relaxed);
    bucket_left_.store(false, std::memory_order_relaxed);
  }

  uint32_t buckets() const { return n_; }
  int64_t width_nanos() const { return width_; }

 private:
  static constexpr int64_t kNoAge = -1;

  // One thread shard's counts for one bucket age.
  struct alignas(kCacheLine) Lane {
    std::atomic<int64_t> age{kNoAge};
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> successes{0};
  };
  // Written and read under mu_ only. `counts.calls` is left at 0 (Read
  // sums successes and failures).
  struct Bucket {
    int64_t age = kNoAge;
    WindowStats counts;
    // Admissions whose permit was destroyed without a report: taken off
    // `requests` when read, as the breaker's own requests are.
    uint64_t abandoned = 0;
  };

  // The lane's counter plus one; the new value. REQUIRES: the counter is
  // in the calling thread's lane.
  DEGRADE_ALWAYS_INLINE static uint64_t Bump(std::atomic<uint64_t>& c) {
    if (DEGRADE_LIKELY(ThreadOwnsShard())) {
      const uint64_t v = c.load(std::memory_order_relaxed) + 1;
      c.store(v, std::memory_order_relaxed);
      return v;
    }
    return c.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  // Never negative: an instant before the origin is age 0.
  int64_t AgeOf(int64_t nanos) const {
    return ElapsedNanosSince(nanos, origin_.load(std::memory_order_relaxed)) /
           width_;
  }

  uint32_t Index(int64_t age) const {
    return static_cast<uint32_t>(static_cast<uint64_t>(age) % n_);
  }

  DEGRADE_NOINLINE void AdmitSlow(int64_t now_nanos) {
    MutexLock lock(&mu_);
    // Recomputed under the lock: a Reset may have moved the origin.
    const int64_t age = AgeOf(now_nanos);
    Lane& lane = lanes_[ThreadShardIndex()];
    const int64_t lane_age = lane.age.load(std::memory_order_relaxed);
    if (age > lane_age) {
      MoveLaneLocked(lane, age, /*by_record=*/false);
    } else if (age < lane_age) {
      // Admitted in an older bucket than the lane's (a clock stepped back).
      bool rolled = false;
      if (Bucket* b = SharedLocked(age, false, &rolled)) ++b->counts.requests;
      return;
    }
    Bump(lane.requests);
  }

  DEGRADE_NOINLINE bool RecordSlow(int64_t start_nanos, int64_t now_nanos,
                                   uint8_t outcome) {
    MutexLock lock(&mu_);
    const int64_t age = AgeOf(start_nanos);
    // The window read now is not the one the last ask read when the clock
    // has moved to a newer bucket (an older one may have left, with no
    // admission to notice it) or stepped back (newer buckets are out of
    // reach): a success then asks too.
    const int64_t now_age = AgeOf(now_nanos);
    // Only noted: a bucket is started by an admission or an outcome of its
    // own age, as in gobreaker v2 (a clock stepped back later still reads
    // the buckets a report's time passed over).
    const bool clock_moved = now_age != newest_;
    if (now_age > newest_) NoteNewestLocked(now_age, /*by_record=*/true);
    if (outcome == kOutcomeRecorded) {
      Lane& lane = lanes_[ThreadShardIndex()];
      const int64_t lane_age = lane.age.load(std::memory_order_relaxed);
      if (age >= lane_age) {
        // The first record in a bucket asks, as its bucket may be new.
        if (age > lane_age) MoveLaneLocked(lane, age, /*by_record=*/true);
        Bump(lane.successes);
        if (decide_at_ == 0) return false;
        TakeBucketLeft();  // this ask covers the note
        return true;
      }
    }
    bool rolled = clock_moved;
    Bucket* b = SharedLocked(age, true, &rolled);
    if (b == nullptr) {
      // Older than the window: not counted, but a success still asks when
      // the window it would be read with has moved.
      return clock_moved && IsCall(outcome) && decide_at_ != 0;
    }
    WindowStats& c = b->counts;
    if (!IsCall(outcome)) {
      if (outcome & kOutcomeExcluded) ++c.exclusions;
      return false;  // an exclusion never raises a rate
    }
    if (outcome & kOutcomeSlow) ++c.slow;
    if (AlwaysAsks(outcome)) {
      ++((outcome & kOutcomeFailed) != 0 ? c.failures : c.successes);
      TakeBucketLeft();  // this ask covers the note
      return true;
    }
    const uint64_t successes = ++c.successes;
    if (decide_at_ == 0) return false;
    const bool bucket_left = TakeBucketLeft();
    return rolled || successes <= decide_at_ || bucket_left;
  }

  // Moves the lane's counts into the shared bucket of their age and starts
  // the lane at `age`. The counts are exchanged, so an add racing it on a
  // shared lane lands in one age or the other, never in neither.
  void MoveLaneLocked(Lane& lane, int64_t age, bool by_record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t old = lane.age.load(std::memory_order_relaxed);
    const uint64_t requests =
        lane.requests.exchange(0, std::memory_order_relaxed);
    const uint64_t successes =
        lane.successes.exchange(0, std::memory_order_relaxed);
    lane.age.store(age, std::memory_order_relaxed);
    bool rolled = false;
    if (old != kNoAge) {
      if (Bucket* b = SharedLocked(old, by_record, &rolled)) {
        b->counts.requests += requests;
        b->counts.successes += successes;
      }
    }
    // The new age takes its shared bucket now, as one set of buckets would:
    // an outcome of the age it recycles is then dropped, not counted.
    SharedLocked(age, by_record, &rolled);
  }

  // The shared bucket for `age`, started if it held an older age or none
  // (`*rolled`); nullptr if it holds a newer age (older than the window).
  Bucket* SharedLocked(int64_t age, bool by_record, bool* rolled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Bucket& b = buckets_[Index(age)];
    if (b.age == age) return &b;
    if (b.age > age) return nullptr;
    b = Bucket{};
    b.age = age;
    *rolled = true;
    NoteNewestLocked(age, by_record);
    return &b;
  }

  // A newer bucket: an older one may have left. The record that started it
  // asks itself; one started by an admission leaves a note.
  void NoteNewestLocked(int64_t age, bool by_record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (age <= newest_) return;
    newest_ = age;
    clock_age_.store(age, std::memory_order_relaxed);
    if (decide_at_ != 0)
      bucket_left_.store(!by_record, std::memory_order_relaxed);
  }

  // True for exactly one record after each note; a relaxed load otherwise.
  bool TakeBucketLeft() {
    return bucket_left_.load(std::memory_order_relaxed) &&
           bucket_left_.exchange(false, std::memory_order_relaxed);
  }

  const int64_t width_;
  const uint32_t n_;
  const uint64_t decide_at_;  // 0: no rule
  const std::size_t lane_count_;
  const std::unique_ptr<Lane[]> lanes_;
  mutable Mutex mu_;
  const std::unique_ptr<Bucket[]> buckets_;  // guarded by mu_
  std::atomic<int64_t> origin_;
  std::atomic<bool> bucket_left_{false};
  // The newest age started, as newest_: read by the fast success path.
  std::atomic<int64_t> clock_age_{kNoAge};
  int64_t newest_ ABSL_GUARDED_BY(mu_) = kNoAge;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_TIME_WINDOW_HPP_
