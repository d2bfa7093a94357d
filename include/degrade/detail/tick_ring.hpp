// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A sliding window of two counters, lock-free and allocation-free: what the
// retry budget (requests deposited, retries withdrawn) and the adaptive
// throttler (requests, accepts) count over their last `ttl` or two minutes.
//
// What "sliding" means here: time is cut into ticks of `width` since the
// ring's origin, and the window is the current tick plus the `ticks - 1`
// before it. An event therefore counts for between (ticks - 1) and `ticks`
// widths, and drops out whole when its tick leaves. With ten ticks the
// window slides in tenths of its length, so it never empties in one step
// (the burst a fixed window lets through when it resets: brpc #3228).
//
// Each tick's counter is one 64-bit word: the tick's number (low 32 bits
// of the tick index) above its count. A writer whose word holds another
// tick starts it with a compare-and-swap, so a tick is recycled by whoever
// first needs it and no lock is ever taken; an add to the tick it holds is
// one relaxed fetch_add. Reads scan the ticks and keep the counts of those
// inside the window. 32-bit tick numbers wrap after 2^32 ticks (13 years of
// 100 ms ticks): a word left untouched that long is read as a stale tick,
// never as a current one, unless it is exactly a multiple of 2^32 ticks old.
//
// Under races an add that read its tick just before the word was recycled
// for a newer tick lands in the newer one (a count a few ns late); a read
// racing a recycle may miss the old tick's count. Both are within one event
// per racing thread, which is what a budget or a throttling probability
// can afford.
//
// Thread safety: every member may be called from any thread at once.

#ifndef DEGRADE_DETAIL_TICK_RING_HPP_
#define DEGRADE_DETAIL_TICK_RING_HPP_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The sums a TickRing read: of counter 0 and counter 1 over the window;
// both over the newest two ticks (the current one and the one before: a
// fifth of the window, for a reader that must notice a change sooner than
// the whole window would); and counter 1 of the current tick alone (for a
// conditional add).
struct TickSums {
  uint64_t first = 0;
  uint64_t second = 0;
  uint64_t first_recent = 0;
  uint64_t second_recent = 0;
  uint64_t second_now = 0;
};

class TickRing {
 public:
  static constexpr uint32_t kTicks = 10;

  // REQUIRES: width_nanos > 0.
  TickRing(int64_t width_nanos, int64_t origin_nanos)
      : width_(width_nanos > 0 ? width_nanos : 1), origin_(origin_nanos) {}

  // The current tick on `clock`'s coarse reading: the ticks are 100 ms at
  // the least, so a few ms late is nothing. `real` is `clock` when that is
  // the default clock (read without a virtual call), else nullptr.
  DEGRADE_ALWAYS_INLINE uint32_t CoarseTick(const Clock* clock,
                                            const RealClock* real) const {
    return TickOf(real != nullptr ? real->CoarseUnixNanos()
                                  : absl::ToUnixNanos(clock->CoarseNow()));
  }

  // The tick of `now_nanos`: an instant before the origin (a clock stepped
  // back) is tick 0.
  uint32_t TickOf(int64_t now_nanos) const {
    return static_cast<uint32_t>(ElapsedNanosSince(now_nanos, origin_) /
                                 width_);
  }

  // Adds `n` to counter `which` (0 or 1) of `tick`.
  DEGRADE_ALWAYS_INLINE void Add(int which, uint32_t tick, uint32_t n = 1) {
    std::atomic<uint64_t>& word = Word(which, tick);
    uint64_t w = word.load(std::memory_order_relaxed);
    for (;;) {
      // The tick it holds, or a newer one (this thread's clock read is a
      // little behind): count there.
      if (DEGRADE_LIKELY(static_cast<int32_t>(StampOf(w) - tick) >= 0)) {
        if (DEGRADE_UNLIKELY(CountOf(w) > kCountCap)) return;  // saturated
        word.fetch_add(n, std::memory_order_relaxed);
        return;
      }
      if (word.compare_exchange_weak(w, Pack(tick, n),
                                     std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // Adds one to counter 1 of `tick` if `allowed(sums)` holds for the window
  // as it is before the add (sums from Read(tick)), and says whether it
  // did. Exact against other conditional adds of the same tick: the
  // compare-and-swap fails when one of them got in first, and the check is
  // made again with its count.
  template <typename Allowed>
  bool AddSecondIf(uint32_t tick, Allowed allowed) {
    TickSums sums = Read(tick);
    std::atomic<uint64_t>& word = Word(1, tick);
    uint64_t w = word.load(std::memory_order_relaxed);
    for (;;) {
      const bool current = StampOf(w) == tick;
      sums.second = sums.second - sums.second_now + (current ? CountOf(w) : 0);
      sums.second_now = current ? CountOf(w) : 0;
      if (!allowed(sums)) return false;
      const uint64_t next =
          current ? (CountOf(w) > kCountCap ? w : w + 1) : Pack(tick, 1);
      if (word.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  // Both counters summed over the window that ends at `tick`.
  TickSums Read(uint32_t tick) const {
    TickSums s;
    const uint32_t own = tick % kTicks;
    for (uint32_t i = 0; i < kTicks; ++i) {
      const uint64_t a = slots_[i].counts[0].load(std::memory_order_relaxed);
      const uint64_t b = slots_[i].counts[1].load(std::memory_order_relaxed);
      if (InWindow(a, tick)) {
        s.first += CountOf(a);
        if (Recent(a, tick)) s.first_recent += CountOf(a);
      }
      if (InWindow(b, tick)) {
        s.second += CountOf(b);
        if (Recent(b, tick)) s.second_recent += CountOf(b);
        // From the tick's own slot only: a word never written (all zero)
        // reads as tick 0 in every slot.
        if (i == own && StampOf(b) == tick) s.second_now = CountOf(b);
      }
    }
    return s;
  }

  int64_t width_nanos() const { return width_; }

 private:
  // A count stops growing here, far from carrying into the tick's number
  // even with a million threads adding at once.
  static constexpr uint64_t kCountCap = (uint64_t{1} << 32) - (1u << 20) - 1;

  struct Slot {
    std::atomic<uint64_t> counts[2] = {0, 0};
  };

  static uint32_t StampOf(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
  static uint64_t CountOf(uint64_t w) { return w & 0xffffffffu; }
  static uint64_t Pack(uint32_t tick, uint64_t count) {
    return (static_cast<uint64_t>(tick) << 32) | count;
  }
  // The word's tick is the current one or one of the kTicks - 1 before it.
  static bool InWindow(uint64_t w, uint32_t tick) {
    return static_cast<uint32_t>(tick - StampOf(w)) < kTicks;
  }

  static bool Recent(uint64_t w, uint32_t tick) {
    return static_cast<uint32_t>(tick - StampOf(w)) < 2;
  }

  std::atomic<uint64_t>& Word(int which, uint32_t tick) {
    return slots_[tick % kTicks].counts[which];
  }

  const int64_t width_;
  const int64_t origin_;
  // Ten slots of 16 bytes: three cache lines, shared by every caller (the
  // add on every request is one contended fetch_add, as Finagle's is).
  alignas(kCacheLine) std::array<Slot, kTicks> slots_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_TICK_RING_HPP_
