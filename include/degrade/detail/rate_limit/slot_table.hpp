// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The table of KeyedRateLimiter (keyed_rate_limit.hpp): slots of 16 bytes
// (a key's 64-bit fingerprint, 0 for empty, and its TAT in ticks), 8 to a
// bucket of two cache lines, allocated once and never grown. A fingerprint
// maps to one bucket; buckets are guarded by lock stripes (a spinlock on
// its own cache line, at most 256, at most one per bucket), which also
// keep the stripe's last time (the time line's floor there, so a clock
// stepped back is no time passing) and its eviction counts.
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
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class SlotTable {
 public:
  static constexpr int kSlotsPerBucket = 8;

  struct Slot {
    std::atomic<uint64_t> fingerprint{0};
    std::atomic<int64_t> tat{0};
  };
  static_assert(sizeof(Slot) == 16, "a slot is 16 bytes: the memory bound");

  // Where a fingerprint is in its bucket, and where a newcomer could go:
  // an empty or replenished slot (`free`), else the slot in least debt.
  struct Probe {
    int found = -1;
    int free = -1;
    int least = -1;
  };

  struct Totals {
    uint64_t live = 0;
    uint64_t evictions = 0;
    uint64_t evictions_in_debt = 0;
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
    std::atomic<uint64_t> evictions_in_debt{0};
    std::atomic<uint64_t> full{0};
  };

  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 public:
  // A bucket with its stripe locked; unlocks when destroyed.
  class Locked {
   public:
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;
    ~Locked() { stripe_->lock.store(0, std::memory_order_release); }

    int64_t last_now() const { return stripe_->last_now; }
    void set_last_now(int64_t t) { stripe_->last_now = t; }

    Probe Find(uint64_t fingerprint, int64_t now) const {
      Probe p;
      int64_t least = 0;
      for (int i = 0; i < kSlotsPerBucket; ++i) {
        const uint64_t f = fp(i);
        if (f == fingerprint) {
          p.found = i;
          return p;
        }
        if (f == 0) {
          if (p.free < 0 || fp(p.free) != 0) p.free = i;  // empty first
          continue;
        }
        const int64_t t = tat(i);
        if (t <= now) {
          if (p.free < 0) p.free = i;
        } else if (p.least < 0 || t < least) {
          p.least = i;
          least = t;
        }
      }
      return p;
    }

    int64_t tat(int i) const {
      return bucket_->slots[i].tat.load(std::memory_order_relaxed);
    }
    void set_tat(int i, int64_t t) {
      bucket_->slots[i].tat.store(t, std::memory_order_relaxed);
    }
    // Into a free slot; a replenished key there is evicted losslessly.
    void Store(int i, uint64_t fingerprint, int64_t t) {
      if (fp(i) != 0) Bump(stripe_->evictions);
      Put(i, fingerprint, t);
    }
    // Over a key still in debt, which is forgiven.
    void Evict(int i, uint64_t fingerprint, int64_t t) {
      Bump(stripe_->evictions);
      Bump(stripe_->evictions_in_debt);
      Put(i, fingerprint, t);
    }
    void CountFull() { Bump(stripe_->full); }

   private:
    friend class SlotTable;
    Locked(Bucket* b, Stripe* s) : bucket_(b), stripe_(s) {}
    uint64_t fp(int i) const {
      return bucket_->slots[i].fingerprint.load(std::memory_order_relaxed);
    }
    void Put(int i, uint64_t fingerprint, int64_t t) {
      bucket_->slots[i].fingerprint.store(fingerprint,
                                          std::memory_order_relaxed);
      bucket_->slots[i].tat.store(t, std::memory_order_relaxed);
    }
    Bucket* const bucket_;
    Stripe* const stripe_;
  };

  // REQUIRES: 1 <= max_keys <= 2^28.
  explicit SlotTable(std::size_t max_keys)
      : buckets_((max_keys + kSlotsPerBucket - 1) / kSlotsPerBucket),
        stripe_mask_(StripeCount(buckets_) - 1),
        table_(new Bucket[buckets_]),
        stripes_(new Stripe[stripe_mask_ + 1]) {}

  std::size_t capacity() const { return buckets_ * kSlotsPerBucket; }
  std::size_t memory_bytes() const {
    return buckets_ * sizeof(Bucket) + (stripe_mask_ + 1) * sizeof(Stripe);
  }

  Locked Lock(uint64_t fingerprint) {
    // The top 32 bits pick the bucket (a multiply, not a modulo).
    const std::size_t b = static_cast<std::size_t>(
        ((fingerprint >> 32) * static_cast<uint64_t>(buckets_)) >> 32);
    Stripe& s = stripes_[b & stripe_mask_];
    for (int spins = 0; s.lock.exchange(1, std::memory_order_acquire) != 0;) {
      while (s.lock.load(std::memory_order_relaxed) != 0) {
        // The holder may have been preempted on a busy core: give it the
        // core rather than spin out our time slice.
        if (++spins > 64) std::this_thread::yield();
      }
    }
    return Locked(&table_[b], &s);
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
      t.evictions_in_debt +=
          stripes_[s].evictions_in_debt.load(std::memory_order_relaxed);
      t.full += stripes_[s].full.load(std::memory_order_relaxed);
    }
    return t;
  }

 private:
  // A power of two: 4 per core, at most 256, at most the buckets.
  static std::size_t StripeCount(std::size_t buckets) {
    const std::size_t want = std::min<std::size_t>(
        256, 4 * std::max(1u, std::thread::hardware_concurrency()));
    std::size_t n = 1;
    while (n * 2 <= want && n * 2 <= buckets) n *= 2;
    return n;
  }

  const std::size_t buckets_;
  const std::size_t stripe_mask_;
  const std::unique_ptr<Bucket[]> table_;
  const std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RATE_LIMIT_SLOT_TABLE_HPP_
