// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// N counters summed over a sliding window of time, for the hedging policy's
// extra-load cap (calls and hedges) and its latency histogram (one counter
// per bucket). "Sliding" means: the window is cut into `slices` equal
// slices, and a sum covers the slice holding `now` and the slices - 1
// before it, so it spans between (slices - 1) / slices of the window and
// the whole window, never less. A fixed window would drop to zero at each
// boundary and let a burst of hedges through right after it (brpc #3228);
// this one forgets one slice at a time.
//
// Adding is one acquire load and one relaxed add, unless the slice must be
// started afresh (once per slice width): that takes a lock so that two
// writers cannot both zero it. A count that races the restart of its slice
// may be lost or land in the new slice, and a sum racing an add may miss
// it: the users are statistics (a 5% cap, a p95), where one count either
// way is noise. A time before the origin (a FakeClock set back) counts in
// the first slice; a time older than a slice's current age is dropped.
//
// Thread safety: Add() and Sum() from any thread, concurrently.

#ifndef DEGRADE_DETAIL_SLIDING_COUNTERS_HPP_
#define DEGRADE_DETAIL_SLIDING_COUNTERS_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

template <std::size_t N>
class SlidingCounters {
 public:
  using Sums = std::array<uint64_t, N>;

  // REQUIRES: window > 0 (a non-positive one is read as 1 ns); slices >= 1
  // (0 is read as 1).
  SlidingCounters(absl::Duration window, uint32_t slices, absl::Time origin)
      : n_(slices == 0 ? 1 : slices),
        width_(std::max<int64_t>(
            absl::ToInt64Nanoseconds(window) / static_cast<int64_t>(n_), 1)),
        origin_(absl::ToUnixNanos(origin)),
        slices_(new Slice[n_]) {}

  // Adds `n` to counter `i` at `now`. REQUIRES: i < N.
  void Add(absl::Time now, std::size_t i, uint64_t n = 1) {
    const int64_t age = AgeOf(now);
    Slice& s = slices_[static_cast<std::size_t>(age % n_)];
    int64_t current = s.age.load(std::memory_order_acquire);
    if (current != age) {
      if (current > age) return;  // older than the window now holds
      Restart(s, age);
      // Another writer may have moved it on past `age` meanwhile.
      if (s.age.load(std::memory_order_acquire) != age) return;
    }
    s.counts[i].fetch_add(n, std::memory_order_relaxed);
  }

  // Every counter summed over the window ending at `now`.
  Sums Sum(absl::Time now) const {
    const int64_t newest = AgeOf(now);
    const int64_t oldest = newest - static_cast<int64_t>(n_) + 1;
    Sums out{};
    for (uint32_t k = 0; k < n_; ++k) {
      const Slice& s = slices_[k];
      for (;;) {
        const int64_t age = s.age.load(std::memory_order_acquire);
        if (age < oldest || age > newest) break;  // stale, unused or rolling
        Sums part;
        for (std::size_t i = 0; i < N; ++i) {
          part[i] = s.counts[i].load(std::memory_order_relaxed);
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.age.load(std::memory_order_relaxed) != age) continue;
        for (std::size_t i = 0; i < N; ++i) out[i] += part[i];
        break;
      }
    }
    return out;
  }

  absl::Duration slice_width() const { return absl::Nanoseconds(width_); }

 private:
  static constexpr int64_t kUnused = -1;
  static constexpr int64_t kRolling = -2;

  struct alignas(kCacheLine) Slice {
    std::atomic<int64_t> age{kUnused};
    std::array<std::atomic<uint64_t>, N> counts{};
  };

  int64_t AgeOf(absl::Time now) const {
    const int64_t d = absl::ToUnixNanos(now) - origin_;
    return d < 0 ? 0 : d / width_;
  }

  // Empties `s` for `age`, unless a writer already moved it to `age` or
  // later. Rare: once per slice width.
  void Restart(Slice& s, int64_t age) {
    MutexLock lock(&roll_mu_);
    if (s.age.load(std::memory_order_relaxed) >= age) return;
    // Readers skip a rolling slice, so none sums half-zeroed counts.
    s.age.store(kRolling, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (auto& c : s.counts) c.store(0, std::memory_order_relaxed);
    s.age.store(age, std::memory_order_release);
  }

  const uint32_t n_;
  const int64_t width_;
  const int64_t origin_;
  std::unique_ptr<Slice[]> slices_;
  Mutex roll_mu_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SLIDING_COUNTERS_HPP_
