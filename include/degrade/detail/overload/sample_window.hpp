// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The window of latency samples a ConcurrencyLimiter is filling, gathered
// without a lock: one packed word takes every report with one fetch_add
// (samples: 12 bits, drops: 12 bits, the sum of the successes' latencies in
// microseconds: 40 bits). A window is at most 512 samples, so the counts
// have room for thousands of reporters racing the one that closes it, and
// 4095 samples of kMaxSample fit the sum. The most permits in flight any
// sample saw is kept beside it (usually a plain load: the maximum is
// reached early in a window).
//
// Thread-safe: Add() from any thread; Take() and Clear() by one thread at a
// time (the owner's lock).

#ifndef DEGRADE_DETAIL_OVERLOAD_SAMPLE_WINDOW_HPP_
#define DEGRADE_DETAIL_OVERLOAD_SAMPLE_WINDOW_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/overload/limit_algorithms.hpp"
#include "degrade/limiter_settings.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class SampleWindow {
 public:
  // A sample's latency is recorded up to this (longer counts as this long).
  static constexpr absl::Duration kMaxSample = absl::Seconds(256);
  static_assert(kMaxSample == kLongestLimiterSample,
                "LimiterSettings documents this bound to users");

  // REQUIRES: 1 <= size <= 512.
  explicit SampleWindow(uint32_t size) : size_(size) {}

  // Adds one report (a drop has no latency). True when it completed the
  // window: the caller then Take()s it.
  bool Add(bool drop, absl::Duration latency, int in_flight) {
    uint64_t add = 1;
    if (drop) {
      add |= uint64_t{1} << kDropShift;
    } else {
      // ToInt64Nanoseconds is inline for the durations a sample has; the
      // division by a constant is a multiply.
      const int64_t ns = absl::ToInt64Nanoseconds(
          std::clamp(latency, absl::ZeroDuration(), kMaxSample));
      add |= static_cast<uint64_t>(ns / 1000) << kSumShift;
    }
    int seen = max_in_flight_.load(std::memory_order_relaxed);
    while (in_flight > seen &&
           !max_in_flight_.compare_exchange_weak(seen, in_flight,
                                                 std::memory_order_relaxed)) {
    }
    const uint64_t before = word_.fetch_add(add, std::memory_order_acq_rel);
    return (before & kCountMask) + 1 == size_;
  }

  // The window so far, emptied.
  LimitWindow Take() {
    const uint64_t w = word_.exchange(0, std::memory_order_acq_rel);
    LimitWindow win;
    win.samples = static_cast<uint32_t>(w & kCountMask);
    win.full = win.samples >= size_;
    win.drops = static_cast<uint32_t>((w >> kDropShift) & kCountMask);
    win.max_in_flight = max_in_flight_.exchange(0, std::memory_order_relaxed);
    const uint64_t timed = win.samples - win.drops;
    if (timed > 0) {
      win.average_latency_us =
          static_cast<double>(w >> kSumShift) / static_cast<double>(timed);
    }
    return win;
  }

  void Clear() {
    word_.store(0, std::memory_order_relaxed);
    max_in_flight_.store(0, std::memory_order_relaxed);
  }

 private:
  static constexpr int kDropShift = 12;
  static constexpr int kSumShift = 24;
  static constexpr uint64_t kCountMask = (uint64_t{1} << 12) - 1;

  const uint64_t size_;
  alignas(kCacheLine) std::atomic<uint64_t> word_{0};
  std::atomic<int> max_in_flight_{0};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_OVERLOAD_SAMPLE_WINDOW_HPP_
