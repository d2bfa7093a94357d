// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: signals.hpp
// -----------------------------------------------------------------------------
//
// Ready-made load signals for a `DegradationManager` (degradation_manager.hpp)
// to poll: request code records into them on its hot path, and the manager's
// monitor reads them through `Source()` once per period.
//
//   * `LatencyTracker`: durations in, a mean (or an exponentially weighted
//     moving average of means) in milliseconds out, per poll.
//   * `InFlightGauge`: work in progress (requests in flight, queue length),
//     counted by tokens that live as long as the work.
//
// Neither needs a manager: anything that wants "the mean latency since I
// last asked" or "how many are in flight" can use them.
//
//   degrade::LatencyTracker latency;
//   degrade::InFlightGauge in_flight;
//   manager.AddSource("avg_latency_ms", latency.Source());
//   manager.AddSource("in_flight", in_flight.Source());
//   ...
//   auto token = in_flight.Enter();          // counts until destroyed
//   const absl::Time start = clock.Now();
//   Serve(request);
//   latency.Record(clock.Now() - start);
//
// Thread safety: both are thread-safe. Recording and entering are lock-free
// (one relaxed atomic add); a poll of a LatencyTracker takes its mutex.

#ifndef DEGRADE_SIGNALS_HPP_
#define DEGRADE_SIGNALS_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// LatencyTracker
//
// A ready-made signal source: request code records durations, the manager's
// monitor polls `TakeMillis()`. kAverage reports the mean of the durations
// recorded since the previous poll (0 when there were none); kEwma folds
// that mean into an exponentially weighted moving average (unchanged when
// there were none). Durations are kept in whole microseconds; a negative
// one counts as 0 and one longer than about 12 days as 12 days.
//
// Thread-safe. `Record` is one relaxed compare-and-swap (retried under
// contention): the count and the sum share one 64-bit word, so a poll never
// sees a sample's duration without its count (an average of equal samples is
// exactly that sample). Polls
// serialise on an internal mutex, which `Record` takes only to fold the
// word into wider totals when nobody has polled for a very long time.
class LatencyTracker {
 public:
  enum class Kind { kAverage, kEwma };

  // REQUIRES: 0 < alpha <= 1 (other values are replaced by 0.3).
  explicit LatencyTracker(Kind kind = Kind::kAverage, double alpha = 0.3)
      : kind_(kind), alpha_(!(alpha > 0.0) || alpha > 1.0 ? 0.3 : alpha) {}

  LatencyTracker(const LatencyTracker&) = delete;
  LatencyTracker& operator=(const LatencyTracker&) = delete;

  void Record(absl::Duration d);

  // Consumes the durations recorded since the last call and returns the
  // mean (kAverage) or the updated moving average (kEwma), in milliseconds.
  double TakeMillis();

  // A source function for `DegradationManager::AddSource`.
  // REQUIRES: the tracker outlives the function.
  std::function<double()> Source() {
    return [this] { return TakeMillis(); };
  }

  // The packed word after adding one sample of `us` microseconds (REQUIRES:
  // us <= 2^40) to `word`, or 0 when the sum or the count would reach its
  // fold threshold: the caller folds under the lock instead. So the word
  // never holds more than the thresholds and no number of concurrent
  // saturated samples can carry the sum into the count. Exposed for tests.
  static constexpr uint64_t PackedAdd(uint64_t word, uint64_t us) {
    const uint64_t next = word + (kOneCount | us);
    return (next >> kCountShift) >= kFoldAtCount ||
                   (next & kSumMask) >= kFoldAtSum
               ? 0
               : next;
  }

 private:
  // Layout of `packed_`: count in the top 20 bits, microseconds below.
  static constexpr int kCountShift = 44;
  static constexpr uint64_t kOneCount = uint64_t{1} << kCountShift;
  static constexpr uint64_t kSumMask = kOneCount - 1;
  static constexpr uint64_t kFoldAtCount = uint64_t{1} << 19;
  static constexpr uint64_t kFoldAtSum = uint64_t{1} << 43;
  // One sample can't carry the sum past the fold threshold and overflow.
  static constexpr uint64_t kMaxSampleMicros = uint64_t{1} << 40;

  // Moves what `packed_` holds into the folded totals.
  void FoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Kind kind_;
  const double alpha_;
  std::atomic<uint64_t> packed_{0};
  detail::Mutex mu_;
  uint64_t folded_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Whole microseconds, exact until 2^64 us (584,000 years of samples in
  // one poll); past that the mean is computed in double.
  uint64_t folded_sum_us_ ABSL_GUARDED_BY(mu_) = 0;
  bool sum_saturated_ ABSL_GUARDED_BY(mu_) = false;
  double folded_sum_inexact_us_ ABSL_GUARDED_BY(mu_) = 0.0;
  void AddSumLocked(uint64_t us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double ewma_ ABSL_GUARDED_BY(mu_) = 0.0;
  bool has_ewma_ ABSL_GUARDED_BY(mu_) = false;
};

// InFlightGauge
//
// A ready-made signal source counting work in progress (requests in flight,
// queue length): `Enter()` returns a token that counts until it is destroyed.
// Thread-safe; tokens are movable, not copyable. `current()` is one relaxed
// load and may be stale the moment it returns.
// REQUIRES: the gauge outlives its tokens and its `Source()` functions.
class InFlightGauge {
 public:
  class [[nodiscard]] Token {
   public:
    Token(Token&& other) noexcept
        : gauge_(std::exchange(other.gauge_, nullptr)) {}
    Token& operator=(Token&& other) noexcept {
      if (this != &other) {
        Release();
        gauge_ = std::exchange(other.gauge_, nullptr);
      }
      return *this;
    }
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() { Release(); }

   private:
    friend class InFlightGauge;
    explicit Token(InFlightGauge* g) : gauge_(g) {}
    void Release() {
      if (gauge_ != nullptr) {
        gauge_->count_.fetch_sub(1, std::memory_order_relaxed);
        gauge_ = nullptr;
      }
    }
    InFlightGauge* gauge_;
  };

  Token Enter() {
    count_.fetch_add(1, std::memory_order_relaxed);
    return Token(this);
  }
  int64_t current() const { return count_.load(std::memory_order_relaxed); }

  // A source function for `DegradationManager::AddSource`.
  std::function<double()> Source() const {
    return [this] { return static_cast<double>(current()); };
  }

 private:
  std::atomic<int64_t> count_{0};
};

// ---- Implementation details ----

inline void LatencyTracker::Record(absl::Duration d) {
  int64_t us = d < absl::ZeroDuration() ? 0 : absl::ToInt64Microseconds(d);
  if (us > static_cast<int64_t>(kMaxSampleMicros)) {
    us = static_cast<int64_t>(kMaxSampleMicros);
  }
  const uint64_t sample = static_cast<uint64_t>(us);
  // A compare-and-swap, not a fetch_add: with a fetch_add, eight threads
  // adding saturated samples between one crossing the fold threshold and
  // the fold would carry the sum into the count.
  uint64_t w = packed_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t next = PackedAdd(w, sample);
    if (DEGRADE_UNLIKELY(next == 0)) break;
    if (packed_.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
      return;
    }
  }
  // The word is near a threshold (only if nobody polls for minutes at high
  // load, or samples are huge): fold it, and this sample, into the totals.
  detail::MutexLock lock(&mu_);
  FoldLocked();
  ++folded_count_;
  AddSumLocked(sample);
}

inline double LatencyTracker::TakeMillis() {
  detail::MutexLock lock(&mu_);
  FoldLocked();
  const uint64_t count = folded_count_;
  double mean = 0.0;
  if (count > 0 && !sum_saturated_ && count <= UINT64_MAX / 1000) {
    // The sum is whole microseconds, held exactly; the mean in ms is
    // sum / (1000 x count). Its whole part is an exact integer division
    // and only the remainder's fraction is rounded, so equal samples
    // average to exactly that sample (a double sum stopped being exact past
    // 2^53 us; dividing twice rounded twice: 2^40 us came back as
    // 1099511627.7759998).
    const uint64_t divisor = 1000 * count;
    mean = static_cast<double>(folded_sum_us_ / divisor) +
           static_cast<double>(folded_sum_us_ % divisor) /
               static_cast<double>(divisor);
  } else if (count > 0) {
    mean = folded_sum_inexact_us_ / (1000.0 * static_cast<double>(count));
  }
  folded_count_ = 0;
  folded_sum_us_ = 0;
  sum_saturated_ = false;
  folded_sum_inexact_us_ = 0.0;
  if (kind_ == Kind::kAverage) return mean;
  if (count > 0) {
    ewma_ = has_ewma_ ? alpha_ * mean + (1.0 - alpha_) * ewma_ : mean;
    has_ewma_ = true;
  }
  return ewma_;
}

inline void LatencyTracker::FoldLocked() {
  const uint64_t w = packed_.exchange(0, std::memory_order_relaxed);
  folded_count_ += w >> kCountShift;
  AddSumLocked(w & kSumMask);
}

inline void LatencyTracker::AddSumLocked(uint64_t us) {
  if (us > UINT64_MAX - folded_sum_us_) sum_saturated_ = true;
  folded_sum_us_ += us;  // wraps once saturated: then unused
  folded_sum_inexact_us_ += static_cast<double>(us);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_SIGNALS_HPP_
