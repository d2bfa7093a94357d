// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// N counters summed over a sliding window of time, lock-free and
// allocation-free: what the retry budget (requests, retries), the adaptive
// throttler (requests, accepts), the hedging policy's extra-load cap
// (calls, hedges, refunds) and its latency histogram (one counter per
// bucket) count over their recent past.
//
// What "sliding" means here: time is cut into ticks of window/10 since the
// window's origin, and a sum covers the current tick plus the nine before
// it. An event therefore counts for between 0.9 and 1 window, and drops
// out whole when its tick leaves. The window slides in tenths, so it never
// empties in one step (the burst a fixed window lets through when it
// resets: brpc #3228). A time before the origin is tick 0.
//
// Ticks are 64-bit indexes (tick % 10 picks the slot). Each tick's counter
// is one 64-bit word: the low 32 bits of the tick's index above a seal bit
// and a 31-bit count. A writer whose word holds an older tick starts it
// with a compare-and-swap, so a tick is recycled by whoever first needs it
// and no lock is ever taken; an add to the tick it holds is one relaxed
// fetch_add. A stamp up to 2^31 ticks ahead of a caller's tick is a newer
// tick (another caller saw the clock later); one further off is an old
// word whose 32-bit stamp wrapped. So a word left untouched for 2^31 ticks
// (6.8 years of 100 ms ticks, 68 of 1 s ones) reads as a future tick, and
// the window waits for it rather than overwriting what may be a newer
// tick's grants: exactness first. A caller stalled while the clock jumps
// 2^31 ticks or more (only a FakeClock does) is the one case left where
// a newer tick's word can be taken for an old one.
//
// AddIf() is the exact conditional add the budget and the hedge cap need:
// never more successes than the predicate allows, however threads race.
// Among adds of one tick the compare-and-swap on the tick's word settles
// it. Across a tick boundary the seal does: before anyone decides at tick
// t, the words of the guarded counter for t-9..t-1 are sealed, so an add
// still aiming at an older tick fails its compare-and-swap and tries again
// at the newer one, where it is counted. To make that cheap, the sums of
// the nine completed ticks are cached, stamped with the tick they are for
// and recomputed (sealing as it goes) once per tick by the first AddIf()
// to see the new tick; the others read the cache, the current tick's words
// and make one compare-and-swap. A cache being recomputed is skipped, not
// waited for: that caller seals and scans the ticks itself.
//
// Under races a plain Add() that read its tick just before the word was
// recycled for a newer tick lands in the newer one; a Sum() racing an add
// may miss it; the cache misses plain adds made to a completed tick after
// it was computed. Each is within one event per racing thread: noise to a
// throttling probability or a quantile. For a budget a missed deposit
// grants less; a deposit whose thread stalled a whole window lands in a
// newer tick and may allow one retry more (one per stalled thread), as may
// a hedge refund.
//
// A tick behind the newest one AddIf() has seen (a thread that read the
// clock a while ago, a FakeClock set back): AddIf() decides at the newest
// tick instead, so the retries of the ticks ahead are never forgotten and
// the budget stays exact; the window stands still until the clock catches
// up (a FakeClock set to InfiniteFuture and back holds it for good: the
// window then counts everything since; so does a window created while the
// FakeClock reads InfiniteFuture, whose origin no later time passes). Plain
// adds and sums use the tick they are given: counts in ticks ahead of it
// are not seen until the clock catches up. RealClock is monotonic; only a
// FakeClock goes back.
//
// Thread safety: every member may be called from any thread at once.

#ifndef DEGRADE_DETAIL_TICK_WINDOW_HPP_
#define DEGRADE_DETAIL_TICK_WINDOW_HPP_

#include <algorithm>
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

template <std::size_t N>
class TickWindow {
 public:
  static constexpr uint32_t kTicks = 10;
  using Sums = std::array<uint64_t, N>;

  // REQUIRES: window > 0 (a window under 10 ns is read as ticks of 1 ns).
  TickWindow(absl::Duration window, absl::Time origin)
      : width_(std::max<int64_t>(absl::ToInt64Nanoseconds(window) / kTicks,
                                 1)),
        origin_(absl::ToUnixNanos(origin)) {}

  // The current tick on `clock`'s coarse reading: ticks are 100 ms at the
  // least, so a few ms late is nothing. `real` is `clock` when that is the
  // default clock (read without a virtual call), else nullptr.
  DEGRADE_ALWAYS_INLINE uint64_t CoarseTick(const Clock* clock,
                                            const RealClock* real) const {
    return TickOf(real != nullptr ? real->CoarseUnixNanos()
                                  : absl::ToUnixNanos(clock->CoarseNow()));
  }

  uint64_t TickOf(absl::Time now) const {
    return TickOf(absl::ToUnixNanos(now));
  }
  uint64_t TickOf(int64_t now_nanos) const {
    return static_cast<uint64_t>(ElapsedNanosSince(now_nanos, origin_) /
                                 width_);
  }

  // Adds `n` to counter `which` of `tick`. REQUIRES: which < N; n small
  // (every caller adds 1): the cap leaves 2^20 of headroom, so racing adds
  // of 1 cannot carry into the seal bit, but two of 2^20 could.
  DEGRADE_ALWAYS_INLINE void Add(std::size_t which, uint64_t tick,
                                 uint32_t n = 1) {
    std::atomic<uint64_t>& word = Word(which, tick);
    uint64_t w = word.load(std::memory_order_relaxed);
    for (;;) {
      // The tick it holds, or one a window or more newer (this thread
      // stalled between reading the clock and adding): count there.
      if (DEGRADE_LIKELY(Lead(w, tick) >= 0)) {
        if (DEGRADE_UNLIKELY(CountOf(w) > kCountCap)) return;  // saturated
        word.fetch_add(n, std::memory_order_relaxed);
        return;
      }
      if (word.compare_exchange_weak(w, Pack(Low(tick), n),
                                     std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // Every counter summed over the window ending at `tick`; `recent`, if
  // given, gets the sums over its newest two ticks (a fifth of the window,
  // for a reader that must notice a change sooner than the window would).
  Sums Sum(uint64_t tick, Sums* recent = nullptr) const {
    Sums out{};
    if (recent != nullptr) *recent = Sums{};
    for (uint32_t k = 0; k < kTicks; ++k) {
      for (std::size_t i = 0; i < N; ++i) {
        const uint64_t w = slots_[k].counts[i].load(std::memory_order_relaxed);
        // raw-time-ok: 32-bit tick stamps that wrap on purpose (unsigned).
        const uint32_t age = Low(tick) - StampOf(w);
        if (age >= kTicks) continue;
        out[i] += CountOf(w);
        if (recent != nullptr && age < 2) (*recent)[i] += CountOf(w);
      }
    }
    return out;
  }

  // Adds one to counter `which` at `tick` if `allowed(sums)` holds for the
  // window as it is before the add, and says whether it did. Exact against
  // every other AddIf() of the same counter (see the top of the file).
  // `allowed` may be called more than once; it must be pure.
  // REQUIRES: which < N, the same `which` on every call, and no plain Add()
  // to counter `which`.
  template <typename Allowed>
  bool AddIf(std::size_t which, uint64_t tick, Allowed allowed) {
    for (;;) {
      Sums sums;
      if (!CompletedSums(which, tick, sums)) continue;  // `tick` moved on
      const uint64_t t = tick;
      for (std::size_t i = 0; i < N; ++i) {
        if (i == which) continue;
        const uint64_t w = Word(i, t).load(std::memory_order_relaxed);
        if (StampOf(w) == Low(t)) sums[i] += CountOf(w);
      }
      const uint64_t done = sums[which];
      std::atomic<uint64_t>& word = Word(which, t);
      uint64_t w = word.load(std::memory_order_relaxed);
      int64_t ahead = 0;
      for (;;) {
        ahead = Lead(w, t);
        if (ahead > 0 || (ahead == 0 && Sealed(w))) break;  // moved on
        const bool current = ahead == 0;
        // A saturated count cannot record one more grant: refusing is the
        // only answer that stays exact.
        if (current && CountOf(w) > kCountCap) return false;
        sums[which] = done + (current ? CountOf(w) : 0);
        if (!allowed(static_cast<const Sums&>(sums))) return false;
        const uint64_t next = current ? w + 1 : Pack(Low(t), 1);
        if (word.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
          return true;
        }
      }
      // A newer tick has begun (the word sealed for t + 1, or already
      // started by a caller that saw a tick a window or more ahead): go on
      // to it.
      tick = t + (ahead > 0 ? static_cast<uint64_t>(ahead) : 1);
    }
  }

  int64_t width_nanos() const { return width_; }

 private:
  // A count stops growing here, far from carrying into the seal bit even
  // with a million threads adding at once.
  static constexpr uint32_t kCountCap = (1u << 31) - (1u << 20) - 1;
  static constexpr uint64_t kSeal = uint64_t{1} << 31;
  // Half the stamp's range. A word up to this many ticks ahead is a newer
  // tick; only one at least this old is taken for a wrapped stamp. Why so
  // wide: a caller that stalled while the clock jumped far ahead (a
  // FakeClock moved by days) must see the newer tick's word as newer, or it
  // would overwrite that tick's grants and the budget would grant them
  // again.
  static constexpr uint32_t kMaxLead = uint32_t{1} << 31;

  struct Slot {
    std::atomic<uint64_t> counts[N] = {};
  };

  // The sums of the completed ticks for AddIf(), cached: valid when `seq`
  // is even and non-zero, for the window ending at `tick`. A seqlock whose
  // writer never blocks anyone: readers that find it odd or stale compute
  // the sums themselves.
  struct alignas(kCacheLine) Cache {
    std::atomic<uint32_t> seq{0};
    std::atomic<uint64_t> tick{0};
    std::array<std::atomic<uint64_t>, N> sums{};
  };

  static uint32_t StampOf(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
  static uint64_t CountOf(uint64_t w) { return w & (kSeal - 1); }
  static bool Sealed(uint64_t w) { return (w & kSeal) != 0; }
  static uint32_t Low(uint64_t tick) { return static_cast<uint32_t>(tick); }

  // How far the word's tick is ahead of `tick`: 0 when it is `tick`'s, > 0
  // when newer, -1 when older or when the stamp says nothing: a word never
  // written is all zero, whose stamp means no tick, and a lead of 2^31
  // ticks (6.8 years of 100 ms ticks) or more is an old stamp wrapped
  // round, not a tick another caller has seen.
  static int64_t Lead(uint64_t w, uint64_t tick) {
    // raw-time-ok: 32-bit tick stamps that wrap on purpose (unsigned).
    const uint32_t d = StampOf(w) - Low(tick);
    if (d == 0) return 0;
    if (d < kMaxLead && (CountOf(w) != 0 || Sealed(w))) return d;
    return -1;
  }
  static uint64_t Pack(uint32_t stamp, uint64_t count) {
    return (static_cast<uint64_t>(stamp) << 32) | count;
  }

  std::atomic<uint64_t>& Word(std::size_t which, uint64_t tick) {
    return slots_[tick % kTicks].counts[which];
  }

  // Fills `sums` with the counters over the nine ticks before the one
  // AddIf() decides at, `tick`, first moved on to the cache's tick if that
  // is newer. False, with `tick` set to the newer one, if another caller
  // has started a tick ahead of it (then nothing was cached).
  bool CompletedSums(std::size_t which, uint64_t& tick, Sums& sums) {
    const uint32_t seq = cache_.seq.load(std::memory_order_acquire);
    const uint64_t cached = cache_.tick.load(std::memory_order_relaxed);
    if (seq != 0 && cached > tick) tick = cached;
    if (seq != 0 && (seq & 1) == 0 && cached == tick) {
      for (std::size_t i = 0; i < N; ++i) {
        sums[i] = cache_.sums[i].load(std::memory_order_relaxed);
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (cache_.seq.load(std::memory_order_relaxed) == seq) return true;
    }
    // Stale or being written: become its writer if nobody is.
    uint32_t expected = seq;
    const bool writer = (seq & 1) == 0 &&
                        cache_.seq.compare_exchange_strong(
                            expected, seq + 1, std::memory_order_acquire,
                            std::memory_order_relaxed);
    if (writer) std::atomic_thread_fence(std::memory_order_release);
    const uint64_t newer = SealAndSum(which, tick, sums);
    if (newer != tick) {
      // The cache is unchanged: readers of the old tick may keep it.
      if (writer) cache_.seq.store(seq, std::memory_order_release);
      tick = newer;
      return false;
    }
    if (writer) {
      for (std::size_t i = 0; i < N; ++i) {
        cache_.sums[i].store(sums[i], std::memory_order_relaxed);
      }
      cache_.tick.store(tick, std::memory_order_relaxed);
      // Skips 0 (never valid) when the sequence wraps.
      cache_.seq.store(seq + 2 == 0 ? 2 : seq + 2, std::memory_order_release);
    }
    return true;
  }

  // Seals counter `which` of ticks t-9..t-1 (a word still holding an older
  // tick becomes that tick's, empty and sealed) and sums every counter
  // over them. Returns t, or the newer tick a word already holds (a caller
  // ahead of this one started it: t is stale, and its sums unfinished).
  uint64_t SealAndSum(std::size_t which, uint64_t t, Sums& sums) {
    sums = Sums{};
    for (uint64_t back = 1; back < kTicks && back <= t; ++back) {
      const uint64_t u = t - back;
      std::atomic<uint64_t>& word = Word(which, u);
      uint64_t w = word.load(std::memory_order_relaxed);
      while (!(StampOf(w) == Low(u) && Sealed(w))) {
        const int64_t ahead = Lead(w, u);
        if (ahead > 0) return u + static_cast<uint64_t>(ahead);
        const uint64_t next =
            StampOf(w) == Low(u) ? (w | kSeal) : Pack(Low(u), kSeal);
        if (word.compare_exchange_weak(w, next, std::memory_order_relaxed)) {
          w = next;
        }
      }
      sums[which] += CountOf(w);
      for (std::size_t i = 0; i < N; ++i) {
        if (i == which) continue;
        const uint64_t v = Word(i, u).load(std::memory_order_relaxed);
        if (StampOf(v) == Low(u)) sums[i] += CountOf(v);
      }
    }
    return t;
  }

  const int64_t width_;
  const int64_t origin_;
  Cache cache_;
  // Ten slots of N words, shared by every caller (the add on every request
  // is one contended fetch_add, as Finagle's is).
  alignas(kCacheLine) std::array<Slot, kTicks> slots_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_TICK_WINDOW_HPP_
