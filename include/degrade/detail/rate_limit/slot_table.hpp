// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The table of KeyedRateLimiter (keyed_rate_limit.hpp): slots of 16 bytes
// (a key's 64-bit fingerprint, 0 for empty, and its TAT in ticks), 8 to a
// bucket of two cache lines, allocated once and never grown.
//
// Two choices. A fingerprint names two buckets, and a key is held in one
// of them: a newcomer goes to the one holding fewer keys in debt. With one
// bucket a key, a table a third full already has buckets whose 8 slots are
// all in debt (about 2 keys in 1,000 of 100,000 find one at 2^18 slots);
// with the less loaded of two, a bucket pair is all debt only when the
// table is nearly full. Both buckets are guarded by the same lock stripe
// (their low bits agree), so one spinlock covers the lookup and the
// insert and a key can never be held twice.
//
// The stripes (a spinlock on its own cache line, at most 256, at most one
// per 8 buckets) also keep the stripe's last time (the time line's floor
// there, so a clock stepped back is no time passing), its counts, and the
// overflow cells of its buckets: one TAT per 64 buckets of the stripe,
// which the keyed limiter charges for a newcomer whose two buckets are
// all debt. The cells take 8 bytes per 512 slots (0.1%).
//
// The slots are atomics read and written relaxed under the stripe's lock,
// so that stats() may count live keys without taking every lock.
//
// Thread safety: Lock() is thread-safe; a Locked is used by the thread that
// took it and unlocks when destroyed. Count() is thread-safe.

#ifndef DEGRADE_DETAIL_RATE_LIMIT_SLOT_TABLE_HPP_
#define DEGRADE_DETAIL_RATE_LIMIT_SLOT_TABLE_HPP_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class SlotTable {
 public:
  static constexpr int kSlotsPerBucket = 8;
  // Buckets of a stripe that share one overflow cell.
  static constexpr int kBucketsPerOverflowShift = 6;

  struct Slot {
    std::atomic<uint64_t> fingerprint{0};
    std::atomic<int64_t> tat{0};
  };
  static_assert(sizeof(Slot) == 16, "a slot is 16 bytes: the memory bound");

  // Where a fingerprint is among its two buckets' slots (0..7 the first
  // bucket, 8..15 the second), and where a newcomer could go: an empty or
  // replenished slot of the bucket with fewer keys in debt (`free`, -1
  // when both are all debt), and the slot in least debt of the two
  // (`least`, for a retry-after).
  struct Probe {
    int found = -1;
    int free = -1;
    int least = -1;
  };

  struct Totals {
    uint64_t live = 0;
    uint64_t evictions = 0;
    uint64_t full = 0;
  };

 private:
  struct alignas(kCacheLine) Bucket {
    Slot slots[kSlotsPerBucket];
  };
  struct alignas(kCacheLine) Stripe {
    std::atomic<uint32_t> lock{0};
    int64_t last_now = 0;  // under `lock`
    std::atomic<uint64_t> evictions{0};
    std::atomic<uint64_t> full{0};
  };

  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // One bucket's scan: the fingerprint's slot, else its free slot (an
  // empty one first, a replenished one else), the slot in least debt and
  // how many are in debt.
  struct Scan {
    int found = -1;
    int free = -1;
    int least = -1;
    int live = 0;
    int64_t least_tat = 0;
  };
  static Scan ScanBucket(const Bucket& b, uint64_t fingerprint, int64_t now) {
    Scan s;
    bool empty = false;
    for (int i = 0; i < kSlotsPerBucket; ++i) {
      const uint64_t f = b.slots[i].fingerprint.load(std::memory_order_relaxed);
      if (f == fingerprint) {
        s.found = i;
        return s;
      }
      if (f == 0) {
        if (!empty) s.free = i;
        empty = true;
        continue;
      }
      const int64_t t = b.slots[i].tat.load(std::memory_order_relaxed);
      if (t <= now) {
        if (s.free < 0) s.free = i;
      } else {
        ++s.live;
        if (s.least < 0 || t < s.least_tat) {
          s.least = i;
          s.least_tat = t;
        }
      }
    }
    return s;
  }

 public:
  // A key's two buckets with their stripe locked; unlocks when destroyed.
  class Locked {
   public:
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;
    ~Locked() { stripe_->lock.store(0, std::memory_order_release); }

    int64_t last_now() const { return stripe_->last_now; }
    void set_last_now(int64_t t) { stripe_->last_now = t; }

    // The common case inline: a live key, most often in its first bucket
    // (a bucket is only passed over for a fuller one).
    DEGRADE_ALWAYS_INLINE Probe Find(uint64_t fingerprint, int64_t now) const {
      for (int i = 0; i < kSlotsPerBucket; ++i) {
        if (first_->slots[i].fingerprint.load(std::memory_order_relaxed) ==
            fingerprint) {
          Probe p;
          p.found = i;
          return p;
        }
      }
      return FindElsewhere(fingerprint, now);
    }

    DEGRADE_NOINLINE Probe FindElsewhere(uint64_t fingerprint,
                                         int64_t now) const {
      Probe p;
      const Scan a = ScanBucket(*first_, fingerprint, now);
      if (a.found >= 0) {
        p.found = a.found;
        return p;
      }
      if (second_ == first_) {
        p.free = a.free;
        p.least = a.least;
        return p;
      }
      const Scan b = ScanBucket(*second_, fingerprint, now);
      if (b.found >= 0) {
        p.found = kSlotsPerBucket + b.found;
        return p;
      }
      // The less loaded bucket; a tie stays in the first.
      if (a.live <= b.live) {
        p.free = a.free;
      } else if (b.free >= 0) {
        p.free = kSlotsPerBucket + b.free;
      }
      p.least = a.least;
      if (b.least >= 0 && (a.least < 0 || b.least_tat < a.least_tat)) {
        p.least = kSlotsPerBucket + b.least;
      }
      return p;
    }

    int64_t tat(int i) const {
      return slot(i).tat.load(std::memory_order_relaxed);
    }
    void set_tat(int i, int64_t t) {
      slot(i).tat.store(t, std::memory_order_relaxed);
    }
    // Into a free slot; a replenished key there is evicted losslessly.
    // Nothing ever evicts a key in debt.
    void Store(int i, uint64_t fingerprint, int64_t t) {
      Slot& s = slot(i);
      if (s.fingerprint.load(std::memory_order_relaxed) != 0) {
        Bump(stripe_->evictions);
      }
      s.fingerprint.store(fingerprint, std::memory_order_relaxed);
      s.tat.store(t, std::memory_order_relaxed);
    }

    // The overflow cell of the first bucket (a TAT; 0 when never used),
    // and the count of requests that found both buckets all debt.
    int64_t overflow_tat() const { return *overflow_; }
    void set_overflow_tat(int64_t t) { *overflow_ = t; }
    void CountFull() { Bump(stripe_->full); }

   private:
    friend class SlotTable;
    Locked(Bucket* first, Bucket* second, Stripe* s, int64_t* overflow)
        : first_(first), second_(second), stripe_(s), overflow_(overflow) {}
    Slot& slot(int i) const {
      return i < kSlotsPerBucket ? first_->slots[i]
                                 : second_->slots[i - kSlotsPerBucket];
    }
    Bucket* const first_;
    Bucket* const second_;
    Stripe* const stripe_;
    int64_t* const overflow_;
  };

  // REQUIRES: 1 <= max_keys <= 2^28.
  explicit SlotTable(std::size_t max_keys)
      : buckets_((max_keys + kSlotsPerBucket - 1) / kSlotsPerBucket),
        stripe_shift_(StripeShift(buckets_)),
        stripe_mask_((std::size_t{1} << stripe_shift_) - 1),
        overflow_cells_(
            (((buckets_ - 1) >> (stripe_shift_ + kBucketsPerOverflowShift)) + 1)
            << stripe_shift_),
        table_(new Bucket[buckets_]),
        stripes_(new Stripe[stripe_mask_ + 1]),
        overflow_(new int64_t[overflow_cells_]()) {}

  std::size_t capacity() const { return buckets_ * kSlotsPerBucket; }
  std::size_t memory_bytes() const {
    return buckets_ * sizeof(Bucket) + (stripe_mask_ + 1) * sizeof(Stripe) +
           overflow_cells_ * sizeof(int64_t);
  }

  Locked Lock(uint64_t fingerprint) {
    // The top 32 bits pick the first bucket (a multiply, not a modulo);
    // the low 32 bits the second, among the buckets of the same stripe.
    const std::size_t b = static_cast<std::size_t>(
        ((fingerprint >> 32) * static_cast<uint64_t>(buckets_)) >> 32);
    const std::size_t x = static_cast<std::size_t>(
        ((fingerprint & 0xFFFFFFFFu) * static_cast<uint64_t>(buckets_)) >> 32);
    const std::size_t stripe = b & stripe_mask_;
    const std::size_t step = stripe_mask_ + 1;
    std::size_t c = (x & ~stripe_mask_) | stripe;
    // Past the end (a last, partial row of stripes) or the first bucket
    // again: a bucket one row away. With one bucket, both are the same.
    if (c >= buckets_) c -= step;
    if (c == b) c = b + step < buckets_ ? b + step : b >= step ? b - step : b;
    Stripe& s = stripes_[stripe];
    for (int spins = 0; s.lock.exchange(1, std::memory_order_acquire) != 0;) {
      while (s.lock.load(std::memory_order_relaxed) != 0) {
        // The holder may have been preempted on a busy core: give it the
        // core rather than spin out our time slice.
        if (++spins > 64) std::this_thread::yield();
      }
    }
    const std::size_t cell =
        ((b >> (stripe_shift_ + kBucketsPerOverflowShift)) << stripe_shift_) |
        stripe;
    return Locked(&table_[b], &table_[c], &s, &overflow_[cell]);
  }

  // Live keys (in debt at `now`) and the stripes' counts. Reads every slot
  // without locks: a count a racing call may change as it is taken.
  Totals Count(int64_t now) const {
    Totals t;
    for (std::size_t b = 0; b < buckets_; ++b) {
      for (const Slot& slot : table_[b].slots) {
        if (slot.fingerprint.load(std::memory_order_relaxed) != 0 &&
            slot.tat.load(std::memory_order_relaxed) > now) {
          ++t.live;
        }
      }
    }
    for (std::size_t s = 0; s <= stripe_mask_; ++s) {
      t.evictions += stripes_[s].evictions.load(std::memory_order_relaxed);
      t.full += stripes_[s].full.load(std::memory_order_relaxed);
    }
    return t;
  }

 private:
  // log2 of the stripes, a power of two: 4 per core, at most 256, at most
  // one per 8 buckets (so a key's second bucket has several to be among).
  static int StripeShift(std::size_t buckets) {
    const std::size_t want = std::min<std::size_t>(
        256, 4 * std::max(1u, std::thread::hardware_concurrency()));
    int shift = 0;
    while ((std::size_t{2} << shift) <= want &&
           (std::size_t{16} << shift) <= buckets) {
      ++shift;
    }
    return shift;
  }

  const std::size_t buckets_;
  const int stripe_shift_;
  const std::size_t stripe_mask_;
  const std::size_t overflow_cells_;
  const std::unique_ptr<Bucket[]> table_;
  const std::unique_ptr<Stripe[]> stripes_;
  const std::unique_ptr<int64_t[]> overflow_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RATE_LIMIT_SLOT_TABLE_HPP_
