// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The fleet quota's local limiter (quota.hpp) for when Redis does not
// answer: a token bucket kept as one atomic word, the time at which it
// would next hold a whole token's debt (GCRA's theoretical arrival time),
// so taking tokens is one compare-and-swap and a refusal writes nothing.
// The rate can change while requests take tokens (the quota moves from
// the last leased share to the fair share); the debt already run up is
// kept, so a change never hands out a fresh burst.
//
// Private to the Redis adapter: the core's own limiter may replace it.
// Thread-safe; lock-free.

#ifndef DEGRADE_REDIS_DETAIL_TOKEN_BUCKET_HPP_
#define DEGRADE_REDIS_DETAIL_TOKEN_BUCKET_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>

#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace redis {

class LocalTokenBucket {
 public:
  LocalTokenBucket() = default;
  LocalTokenBucket(const LocalTokenBucket&) = delete;
  LocalTokenBucket& operator=(const LocalTokenBucket&) = delete;

  // Sets `rate` tokens per second with room for `burst` tokens (at least
  // 1). A rate of 0 or below (or not finite) refuses everything.
  void SetRate(double rate, double burst) {
    if (!std::isfinite(rate) || rate <= 0) {
      interval_ns_.store(kNever, std::memory_order_relaxed);
      tolerance_ns_.store(0, std::memory_order_relaxed);
      return;
    }
    const double interval = std::max(1.0, 1e9 / rate);
    const double tolerance = std::max(1.0, burst) * interval;
    interval_ns_.store(Clamp(interval), std::memory_order_relaxed);
    tolerance_ns_.store(Clamp(tolerance), std::memory_order_relaxed);
  }

  // What a request for more than the burst gets.
  enum class Oversize {
    kNever,     // refused with kTooBig: it can never fit this bucket
    kWhenFull,  // admitted when no earlier oversized request's debt is
                // outstanding, running up the debt (as Guava's limiter: a
                // pacer smooths, it does not cap a request's size)
  };

  // Takes `n` (> 0) tokens at `now_ns`, or returns false and sets
  // `*wait_ns` to how long until they would be there (kNever at rate 0;
  // kTooBig for more than the burst with Oversize::kNever).
  bool TryTake(int64_t n, int64_t now_ns, int64_t* wait_ns,
               Oversize oversize = Oversize::kNever) {
    const int64_t interval = interval_ns_.load(std::memory_order_relaxed);
    const int64_t tolerance = tolerance_ns_.load(std::memory_order_relaxed);
    if (interval == kNever) {
      *wait_ns = kNever;
      return false;
    }
    const int64_t cost = Mul(interval, n);
    const bool oversized = cost > tolerance;
    if (oversized && oversize == Oversize::kNever) {
      *wait_ns = kTooBig;
      return false;
    }
    // Acquire/release on the stored time: a call that sees an oversized
    // request's debt also sees the reach widened for it.
    int64_t tat = tat_ns_.load(std::memory_order_acquire);
    while (true) {
      // A stored time further ahead than any admission puts it (now + the
      // tolerance, or + the largest oversized request's debt: `reach`) was
      // written before the clock stepped back: the bucket is then empty,
      // not empty for the length of the step. A smaller step reads as no
      // time having passed: the debt stands.
      const int64_t allowed = Add(now_ns, tolerance);
      const int64_t reach =
          std::max(tolerance, reach_ns_.load(std::memory_order_relaxed));
      if (tat > Add(now_ns, reach)) {
        // Re-anchored once (then the clock moves the bucket on again).
        if (!tat_ns_.compare_exchange_weak(tat, allowed,
                                           std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
          continue;
        }
        tat = allowed;
      }
      const int64_t base = std::max(tat, now_ns);
      const int64_t next = Add(base, cost);
      if (oversized) {
        if (tat > allowed) {  // an earlier one's debt: wait until it is paid
          *wait_ns = SatSubNanos(tat, allowed);
          return false;
        }
      } else if (next > allowed) {
        // Saturating: a clock near an end of the range (a FakeClock in
        // 1677) puts `allowed` far below a stored time.
        *wait_ns = next >= kNever ? kNever : SatSubNanos(next, allowed);
        return false;
      }
      if (oversized) {
        // Widened before the debt is written, so that no other call takes
        // the debt for a clock stepped back (it only ever grows).
        const int64_t ahead = SatSubNanos(next, now_ns);
        int64_t r = reach_ns_.load(std::memory_order_relaxed);
        while (ahead > r && !reach_ns_.compare_exchange_weak(
                                r, ahead, std::memory_order_relaxed)) {
        }
      }
      if (tat_ns_.compare_exchange_weak(tat, next, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        return true;
      }
    }
  }

  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kTooBig = -1;

 private:
  static int64_t Clamp(double v) {
    return v >= 9e18 ? kNever : static_cast<int64_t>(v);
  }
  static int64_t Add(int64_t a, int64_t b) {
    return a > kNever - b ? kNever : a + b;  // b >= 0 here
  }
  static int64_t Mul(int64_t a, int64_t n) {
    return n != 0 && a > kNever / n ? kNever : a * n;
  }

  std::atomic<int64_t> tat_ns_{0};
  std::atomic<int64_t> interval_ns_{kNever};
  std::atomic<int64_t> tolerance_ns_{0};
  std::atomic<int64_t> reach_ns_{0};  // the largest oversized debt, ns
};

}  // namespace redis
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_DETAIL_TOKEN_BUCKET_HPP_
