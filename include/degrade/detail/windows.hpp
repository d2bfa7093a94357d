// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Sliding windows that feed failure and slow-call rates into a breaker.
// Writers (every call that completes) are lock-free; readers (the failure
// path, counts()) scan the window, because a failure is the rare, already
// slow path and keeping running aggregates exact under concurrent resets would
// cost every successful call a contended read-modify-write.

#ifndef DEGRADE_DETAIL_WINDOWS_HPP_
#define DEGRADE_DETAIL_WINDOWS_HPP_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Outcome bits stored per call.
inline constexpr uint8_t kOutcomeRecorded = 1;
inline constexpr uint8_t kOutcomeFailed = 2;
inline constexpr uint8_t kOutcomeSlow = 4;
inline constexpr uint8_t kOutcomeExcluded = 8;

struct WindowStats {
  uint64_t calls = 0;
  uint64_t failures = 0;
  uint64_t slow = 0;
  uint64_t requests = 0;
  uint64_t successes = 0;
  uint64_t exclusions = 0;
};

// The last `size` completed calls, as a ring of outcome bytes.
class CountWindow {
 public:
  explicit CountWindow(uint32_t size)
      : size_(size == 0 ? 1 : size), slots_(new std::atomic<uint8_t>[size_]) {
    Reset();
  }

  DEGRADE_ALWAYS_INLINE void Record(uint8_t outcome) {
    const uint64_t i = next_.fetch_add(1, std::memory_order_relaxed) % size_;
    slots_[i].store(outcome, std::memory_order_relaxed);
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

 private:
  const uint32_t size_;
  std::unique_ptr<std::atomic<uint8_t>[]> slots_;
  std::atomic<uint64_t> next_{0};
};

// The calls that started in the last `buckets * width` of time, in buckets of
// `width`. A bucket is recycled when time reaches it again; the recycling is
// rare (once per bucket width) and takes a lock so that two writers can't both
// zero it.
class TimeWindow {
 public:
  TimeWindow(int64_t width_nanos, uint32_t buckets)
      : width_(width_nanos <= 0 ? 1 : width_nanos),
        n_(buckets == 0 ? 1 : buckets),
        buckets_(new Bucket[n_]) {}

  DEGRADE_ALWAYS_INLINE void Record(int64_t now_nanos, uint8_t outcome) {
    const int64_t epoch = EpochOf(now_nanos);
    Bucket& b = buckets_[Index(epoch)];
    if (b.epoch.load(std::memory_order_acquire) != epoch && !Roll(b, epoch)) {
      return;  // `now` is older than the bucket's epoch: too old to count.
    }
    b.calls.fetch_add(1, std::memory_order_relaxed);
    if (outcome & kOutcomeFailed) {
      b.failures.fetch_add(1, std::memory_order_relaxed);
    }
    if (outcome & kOutcomeSlow) b.slow.fetch_add(1, std::memory_order_relaxed);
  }

  WindowStats Read(int64_t now_nanos) const {
    const int64_t newest = EpochOf(now_nanos);
    // Saturating: a clock at InfinitePast must not overflow.
    const int64_t span = static_cast<int64_t>(n_) - 1;
    const int64_t oldest = newest < std::numeric_limits<int64_t>::min() + span
                               ? std::numeric_limits<int64_t>::min()
                               : newest - span;
    WindowStats s;
    for (uint32_t i = 0; i < n_; ++i) {
      const Bucket& b = buckets_[i];
      const int64_t e = b.epoch.load(std::memory_order_acquire);
      if (e < oldest || e > newest) continue;
      s.calls += b.calls.load(std::memory_order_relaxed);
      s.failures += b.failures.load(std::memory_order_relaxed);
      s.slow += b.slow.load(std::memory_order_relaxed);
    }
    return s;
  }

  void Reset() {
    MutexLock lock(&roll_mu_);
    for (uint32_t i = 0; i < n_; ++i) {
      buckets_[i].epoch.store(kNoEpoch, std::memory_order_relaxed);
      buckets_[i].calls.store(0, std::memory_order_relaxed);
      buckets_[i].failures.store(0, std::memory_order_relaxed);
      buckets_[i].slow.store(0, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr int64_t kNoEpoch = std::numeric_limits<int64_t>::min();

  struct Bucket {
    std::atomic<int64_t> epoch{kNoEpoch};
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> failures{0};
    std::atomic<uint64_t> slow{0};
  };

  int64_t EpochOf(int64_t nanos) const {
    // Floor division, so that times before the Unix epoch still bucket evenly.
    int64_t q = nanos / width_;
    if ((nanos % width_) != 0 && nanos < 0) --q;
    return q;
  }

  uint32_t Index(int64_t epoch) const {
    int64_t r = epoch % static_cast<int64_t>(n_);
    if (r < 0) r += n_;
    return static_cast<uint32_t>(r);
  }

  bool Roll(Bucket& b, int64_t epoch) {
    MutexLock lock(&roll_mu_);
    const int64_t current = b.epoch.load(std::memory_order_relaxed);
    if (current == epoch) return true;
    if (current > epoch && current != kNoEpoch) return false;
    b.calls.store(0, std::memory_order_relaxed);
    b.failures.store(0, std::memory_order_relaxed);
    b.slow.store(0, std::memory_order_relaxed);
    b.epoch.store(epoch, std::memory_order_release);
    return true;
  }

  const int64_t width_;
  const uint32_t n_;
  std::unique_ptr<Bucket[]> buckets_;
  Mutex roll_mu_;
};

// Window
//
// The window a breaker's settings chose, behind one interface: none (the
// rates cover the whole generation, from the breaker's own counts), the last
// N calls, or the calls of the last T. A new kind of window is a new branch
// here, not a change to the breaker.
class Window {
 public:
  // REQUIRES: `w` passes ValidateBreakerSettings (see
  // NormalizeBreakerSettings).
  explicit Window(const SlidingWindow& w) : kind_(w.kind) {
    if (kind_ == SlidingWindow::Kind::kCount) {
      count_ = std::make_unique<CountWindow>(w.size);
    } else if (kind_ == SlidingWindow::Kind::kTime) {
      time_ = std::make_unique<TimeWindow>(
          absl::ToInt64Nanoseconds(w.length / w.size), w.size);
    }
  }

  // Whether there is a window at all; without one, Read() is not called.
  bool active() const { return kind_ != SlidingWindow::Kind::kNone; }
  // Whether Record() and Read() need the time.
  bool timed() const { return kind_ == SlidingWindow::Kind::kTime; }

  // Records a completed call admitted at `start_nanos`. Lock-free. Without
  // a window this is one compare, inlined into every call's success path.
  DEGRADE_ALWAYS_INLINE bool Record(int64_t start_nanos, uint8_t outcome) {
    if (DEGRADE_LIKELY(kind_ == SlidingWindow::Kind::kNone)) return false;
    if ((outcome & kOutcomeRecorded) == 0) return false;
    if (kind_ == SlidingWindow::Kind::kCount) {
      count_->Record(outcome);
    } else {
      time_->Record(start_nanos, outcome);
    }
    return false;
  }
  DEGRADE_ALWAYS_INLINE void RecordAdmission(int64_t now_nanos) {
    (void)now_nanos;
  }

  // REQUIRES: active().
  WindowStats Read(int64_t now_nanos) const {
    return kind_ == SlidingWindow::Kind::kCount ? count_->Read()
                                                : time_->Read(now_nanos);
  }

  void Reset(int64_t now_nanos) {
    (void)now_nanos;
    if (count_) count_->Reset();
    if (time_) time_->Reset();
  }

 private:
  const SlidingWindow::Kind kind_;
  std::unique_ptr<CountWindow> count_;
  std::unique_ptr<TimeWindow> time_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_WINDOWS_HPP_
