// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A breaker's count window: the last `size` completed calls, read as calls,
// failures and slow calls (resilience4j's COUNT_BASED window).
//
// Why it is not a ring of outcomes: a ring is one shared cursor that every
// call advances, so two threads succeeding at once fight over its cache
// line (a windowed breaker got 4-7x slower per call with a second thread).
// Here a fast success (not failed, not slow: almost every call) only adds
// to the calling thread's shard of a counter (thread_shard.hpp). The other
// outcomes, which take the breaker's lock anyway, are kept with their
// position in the sequence of calls:
//
//   position of a marked call = fast successes so far + marked calls so far
//   the window = positions [total - size, total), total = both counts now
//
// so a marked call leaves the window once `size` calls came after it,
// exactly as in a ring. Only the last `size` marked calls can be in the
// window, so they are kept in a ring of `size` entries, oldest overwritten.
//
// Exactness: single-threaded, and whenever no call is completing, Read()
// is what a ring of the last `size` outcomes would hold. While successes
// complete on other threads, a marked call's position may be behind by at
// most the fast successes that were being added at that instant (one per
// thread completing a call then), so it may leave the window that many
// calls early or late; totals are never lost.
//
// Memory: ShardArraySize() cache lines for the shards plus 8 bytes per
// slot of `size`: with 8 exclusive shards and a window of 100, 1,440 bytes.
//
// Thread-safe: Record() from any thread; Read() and Reset() take a mutex
// that only marked records share.

#ifndef DEGRADE_DETAIL_BREAKER_COUNT_WINDOW_HPP_
#define DEGRADE_DETAIL_BREAKER_COUNT_WINDOW_HPP_

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "degrade/detail/breaker/window_outcome.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The last `size` completed calls (a size of 0 is read as 1).
class CountWindow {
 public:
  explicit CountWindow(uint32_t size)
      : size_(size == 0 ? 1 : size), marked_(new uint64_t[size_]()) {}

  // Records one completed call; returns whether the rule must be asked
  // (failures and slow calls: a fast success can only lower a rate over
  // the last `size` calls). An excluded or unrecorded outcome is ignored: a
  // count window holds calls only. A fast success is one add to the
  // calling thread's shard.
  DEGRADE_ALWAYS_INLINE bool Record(uint8_t outcome) {
    if (DEGRADE_UNLIKELY(!IsCall(outcome))) return false;
    if (DEGRADE_LIKELY(!AlwaysAsks(outcome))) {
      fast_.Add(0);
      return false;
    }
    RecordMarked(outcome);
    return true;
  }

  WindowStats Read() const {
    MutexLock lock(&mu_);
    const uint64_t total = TotalLocked();
    const uint64_t first = total > size_ ? total - size_ : 0;
    WindowStats s;
    s.calls = std::min<uint64_t>(total, size_);
    // Newest first; positions only grow, so the first one before the
    // window ends the scan.
    const uint64_t kept = std::min<uint64_t>(marked_count_, size_);
    for (uint64_t k = 1; k <= kept; ++k) {
      const uint64_t entry = marked_[(marked_count_ - k) % size_];
      if ((entry >> kOutcomeBits) < first) break;
      if (entry & kOutcomeFailed) ++s.failures;
      if (entry & kOutcomeSlow) ++s.slow;
    }
    return s;
  }

  // A call racing a reset may land on either side of it, the same
  // ambiguity its generation has.
  void Reset() {
    MutexLock lock(&mu_);
    base_ = fast_.Load(0);
    marked_count_ = 0;
    last_position_ = 0;
  }

  uint32_t size() const { return size_; }

 private:
  // An entry is its position shifted past the outcome's bits: positions
  // below 2^56, 2^56 calls in one generation.
  static constexpr int kOutcomeBits = 8;

  DEGRADE_NOINLINE void RecordMarked(uint8_t outcome) {
    MutexLock lock(&mu_);
    // Positions never go back, whatever a racing read of the shards saw.
    const uint64_t position = std::max(TotalLocked(), last_position_);
    last_position_ = position + 1;
    marked_[marked_count_ % size_] = (position << kOutcomeBits) | outcome;
    ++marked_count_;
  }

  // Calls recorded in this generation: fast successes plus marked calls.
  uint64_t TotalLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t fast = fast_.Load(0);
    return (fast > base_ ? fast - base_ : 0) + marked_count_;
  }

  const uint32_t size_;
  ShardedCounts<1> fast_;  // fast successes since construction
  mutable Mutex mu_;
  // Guarded by mu_ (what it points to).
  const std::unique_ptr<uint64_t[]> marked_;
  uint64_t marked_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_position_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t base_ ABSL_GUARDED_BY(mu_) = 0;  // fast_ when the generation began
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_COUNT_WINDOW_HPP_
