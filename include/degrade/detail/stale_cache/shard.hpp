// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// One shard of a LastGoodCache (stale_cache.hpp): a table allocated once
// (a slot per entry it may hold, chained buckets of slot ids), an S3-FIFO
// eviction policy over the slots, and the reader gate that lets a lookup
// run without the shard's mutex.
//
//   detail::StaleCacheShard<K, V, H> shard(max_entries, max_bytes, hasher);
//   shard.Put(key, hasher(key), value, charge, now, max_age);
//   shard.Find(key, hasher(key), now, max_age, &out, &age);
//
// The gate (StaleCacheGate): a reader adds 2 to `enter` (acquire) and 1 to
// `exit` (release) when done; bit 0 of `enter` is the writer's. A writer,
// holding the shard mutex, sets the bit and waits until every reader that
// entered before it has left (exit == enter / 2); a reader that finds the
// bit set takes its 2 back and waits for the writer to finish. Readers
// never wait for each other. Every structure a reader follows (bucket
// heads, chain links, keys, values, write times) is written only with the
// bit set, so a reader sees it whole; the S3-FIFO queues are read only by
// writers and change under the mutex alone. `exit` doubles as the count of
// lookups, so counting hits costs nothing extra.
//
// S3-FIFO (Yang et al., SOSP'23): a new key enters the small FIFO (about
// 10% of the slots) unless the ghost remembers it, in which case it enters
// the main FIFO. Leaving the small FIFO, a key read or written twice since
// it entered moves to main; others are forgotten, their hash put in the
// ghost. Leaving main, a key with a nonzero count is put back at the tail
// with its count decremented. A hit or a replacing put only raises a 2-bit
// count (relaxed atomic; no relinking). The ghost is a direct-mapped array
// of 32-bit fingerprints, as many as main's slots rounded up to a power of
// two: a newer eviction overwrites an older one that maps to the same
// place, which approximates a FIFO of recently evicted keys.
//
// Thread safety: Find may be called from any thread at any time; Put,
// Erase, Sweep and AddStats lock the shard's mutex themselves.

#ifndef DEGRADE_DETAIL_STALE_CACHE_SHARD_HPP_
#define DEGRADE_DETAIL_STALE_CACHE_SHARD_HPP_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/stale_cache_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

inline constexpr uint32_t kStaleCacheNil = 0xffffffffu;

// Bytes of a value as the default weigher counts them: the object, plus
// the heap buffer of a std::string or std::vector (its capacity, which is
// what the allocator holds).
template <class T>
struct StaleCacheHeapBytes {
  static std::size_t Of(const T&) { return 0; }
};
template <class C, class Tr, class A>
struct StaleCacheHeapBytes<std::basic_string<C, Tr, A>> {
  static std::size_t Of(const std::basic_string<C, Tr, A>& s) {
    // A short string lives inside the object: no heap buffer.
    return s.capacity() + 1 > sizeof(s) ? (s.capacity() + 1) * sizeof(C) : 0;
  }
};
template <class T, class A>
struct StaleCacheHeapBytes<std::vector<T, A>> {
  static std::size_t Of(const std::vector<T, A>& v) {
    return v.capacity() * sizeof(T);
  }
};
template <class T>
std::size_t StaleCacheDefaultWeigh(const T& v) {
  return sizeof(T) + StaleCacheHeapBytes<T>::Of(v);
}

// The user's hash, mixed once: the top bits pick the shard, the low bits
// the bucket and the ghost place, bits 24..55 the ghost fingerprint, and a
// hash like std::hash of an integer (the identity) would make those the
// key's own bits: every small key in one shard, one fingerprint for all.
template <class Hash, class K>
uint64_t StaleCacheHashOf(const Hash& hash, const K& key) {
  return SplitMix64Step(static_cast<uint64_t>(hash(key)));
}

// a + b, clamped to the size_t range: a weigher may report anything.
inline std::size_t StaleCacheAddBytes(std::size_t a, std::size_t b) {
  return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}

// The reader gate described above. Cache-line aligned: it is the one word
// a hit writes besides the entry's count.
class alignas(kCacheLine) StaleCacheGate {
 public:
  void Enter() const {
    for (;;) {
      if ((enter_.fetch_add(2, std::memory_order_acquire) & 1) == 0) return;
      enter_.fetch_sub(2, std::memory_order_relaxed);
      for (int spins = 0; enter_.load(std::memory_order_relaxed) & 1;) {
        Backoff(&spins);
      }
    }
  }
  void Exit() const { exit_.fetch_add(1, std::memory_order_release); }

  // REQUIRES: the caller holds the shard mutex (one writer at a time).
  void Lock() {
    enter_.fetch_or(1, std::memory_order_acq_rel);
    for (int spins = 0;;) {
      const uint64_t left = exit_.load(std::memory_order_acquire);
      if (left == (enter_.load(std::memory_order_relaxed) >> 1)) return;
      Backoff(&spins);
    }
  }
  void Unlock() { enter_.fetch_and(~uint64_t{1}, std::memory_order_release); }

  // Lookups completed so far.
  uint64_t completed() const { return exit_.load(std::memory_order_acquire); }

  // Holds the gate for a scope: opened again whatever leaves it (a key's
  // copy or comparison that throws must not lock readers out).
  class Held {
   public:
    explicit Held(StaleCacheGate* gate) : gate_(gate) { gate_->Lock(); }
    ~Held() { gate_->Unlock(); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

   private:
    StaleCacheGate* const gate_;
  };

 private:
  static void Backoff(int* spins) {
    // A writer holds the bit for a table update (tens of ns); after a few
    // hundred polls it has been descheduled, so give the core away.
    if (++*spins > 256) std::this_thread::yield();
  }

  mutable std::atomic<uint64_t> enter_{0};
  mutable std::atomic<uint64_t> exit_{0};
};

// One slot. Fields a reader follows are written only under the gate.
template <class K, class V>
struct StaleCacheSlot {
  std::shared_ptr<const V> value;
  // The clock's reading at the put, Unix ns. Atomic because a reader may
  // move it back to its own reading: a clock stepped back then reads as
  // the value's age standing still, not as a fresh value for the length of
  // the step.
  std::atomic<int64_t> written{0};
  uint32_t bytes = 0;  // charged
  uint32_t bucket_next = kStaleCacheNil;
  uint32_t queue_next = kStaleCacheNil;  // FIFO link, or free-list link
  mutable std::atomic<uint8_t> freq{0};  // 0..3, raised by hits
  uint8_t queue = 0;                     // kFree, kSmall, kMain, kDead
  K key{};
};

template <class K, class V, class Hash>
class StaleCacheShard {
 public:
  using Slot = StaleCacheSlot<K, V>;
  using Value = std::shared_ptr<const V>;
  enum Result : uint8_t { kHit, kMiss, kTooOld };

  // The bytes a cache charges per entry beyond key and value: its slot
  // less the key, the shared_ptr control block (allocate_shared: two
  // counts and a vtable pointer), a bucket head and a ghost fingerprint.
  static constexpr std::size_t kOverhead =
      sizeof(Slot) - sizeof(K) + 2 * sizeof(void*) + 2 * sizeof(uint32_t);

  StaleCacheShard(uint32_t max_entries, uint64_t max_bytes, const Hash& hash)
      : max_entries_(max_entries),
        max_bytes_(max_bytes),
        small_target_(std::max<uint32_t>(1, max_entries / 10)),
        bucket_mask_(PowerOfTwoAtLeast(max_entries) - 1),
        ghost_mask_(PowerOfTwoAtLeast(max_entries - max_entries / 10) - 1),
        hash_(hash),
        slots_(new Slot[max_entries]),
        buckets_(new uint32_t[bucket_mask_ + 1]),
        ghost_(new uint32_t[ghost_mask_ + 1]()) {
    std::fill(buckets_.get(), buckets_.get() + bucket_mask_ + 1,
              kStaleCacheNil);
    for (uint32_t i = 0; i < max_entries; ++i) {
      slots_[i].queue_next = i + 1 < max_entries ? i + 1 : kStaleCacheNil;
    }
    free_head_ = 0;
    graveyard_.reserve(8);
  }

  StaleCacheShard(const StaleCacheShard&) = delete;
  StaleCacheShard& operator=(const StaleCacheShard&) = delete;

  uint64_t max_bytes() const { return max_bytes_; }
  uint32_t max_entries() const { return max_entries_; }

  // The value of `key` if held and at most `max_age` ns old at `now`.
  // Takes no lock and allocates nothing: the gate's two atomic adds, the
  // probe, one reference-count increment and (below the cap) a relaxed
  // store of the count.
  Result Find(const K& key, uint64_t hash, int64_t now, int64_t max_age,
              Value* out, int64_t* age) const {
    gate_.Enter();
    // Left however the lookup ends (a key comparison that throws too), or
    // a writer would wait for this reader for ever.
    struct Leave {
      const StaleCacheGate& gate;
      ~Leave() { gate.Exit(); }
    } leave{gate_};
    uint32_t id = buckets_[hash & bucket_mask_];
    while (id != kStaleCacheNil && !(slots_[id].key == key)) {
      id = slots_[id].bucket_next;
    }
    Result r = kMiss;
    if (id == kStaleCacheNil) {
      misses_.fetch_add(1, std::memory_order_relaxed);
    } else {
      Slot& s = slots_[id];
      int64_t written = s.written.load(std::memory_order_relaxed);
      if (written > now && now != std::numeric_limits<int64_t>::min()) {
        // The clock was stepped back past the put (or another reader's
        // reading was a hair later): the value is as old as it was when
        // the clock stood here, never younger for the whole step.
        s.written.compare_exchange_strong(written, now,
                                          std::memory_order_relaxed);
        written = now;
      }
      *age = ElapsedNanosSince(now, written);
      if (*age > max_age) {
        too_old_.fetch_add(1, std::memory_order_relaxed);
        r = kTooOld;
      } else {
        *out = s.value;
        Touch(s);
        r = kHit;
      }
    }
    return r;
  }

  // Whether `key` is held, under the mutex: not a lookup (neither counted
  // nor raising the use count).
  bool Contains(const K& key, uint64_t hash) const {
    MutexLock lock(&mu_);
    return FindLocked(key, hash) != kStaleCacheNil;
  }

  // Stores `value` (charged `bytes`, at most max_bytes()) under `key`,
  // replacing a held value, evicting first so that both bounds hold. The
  // values it lets go are destroyed after the shard's mutex is released, so
  // a value's destructor may use the cache. If copying the key throws,
  // nothing changes and the exception propagates.
  void Put(const K& key, uint64_t hash, Value value, uint32_t bytes,
           int64_t now, int64_t max_age) {
    std::vector<Value> dead;
    {
      MutexLock lock(&mu_);
      uint32_t id = FindLocked(key, hash);
      if (id != kStaleCacheNil) {
        StaleCacheGate::Held gate(&gate_);
        Slot& s = slots_[id];
        pinned_ = id;  // making room must not evict the key being replaced
        while (bytes_ - s.bytes + bytes > max_bytes_ &&
               EvictOne(now, max_age)) {
        }
        pinned_ = kStaleCacheNil;
        graveyard_.push_back(std::move(s.value));
        s.value = std::move(value);
        s.written.store(now, std::memory_order_relaxed);
        bytes_ = bytes_ - s.bytes + bytes;
        s.bytes = bytes;
        Touch(s);
        ++replaced_;
      } else {
        K copy(key);  // before any slot is taken: it may throw
        StaleCacheGate::Held gate(&gate_);
        for (;;) {
          const bool room =
              live_ < max_entries_ && bytes_ + bytes <= max_bytes_;
          if (room && free_head_ != kStaleCacheNil) break;
          // Below the entry bound with no free slot, a slot erased earlier
          // is still in its queue: reclaim it rather than evict a value.
          if (room && ReclaimDead()) break;
          if (!EvictOne(now, max_age)) break;
        }
        id = free_head_;
        Slot& s = slots_[id];
        s.key = std::move(copy);
        free_head_ = s.queue_next;
        s.value = std::move(value);
        s.written.store(now, std::memory_order_relaxed);
        s.bytes = bytes;
        s.freq.store(0, std::memory_order_relaxed);
        uint32_t& head = buckets_[hash & bucket_mask_];
        s.bucket_next = head;
        head = id;
        const uint32_t g = hash & ghost_mask_;
        if (ghost_[g] == Fingerprint(hash)) {
          ghost_[g] = 0;
          Push(&main_, id, kMain);
        } else {
          Push(&small_, id, kSmall);
        }
        ++live_;
        bytes_ += bytes;
        ++inserts_;
      }
      dead.swap(graveyard_);
    }
  }

  bool Erase(const K& key, uint64_t hash) {
    std::vector<Value> dead;
    uint32_t id;
    {
      MutexLock lock(&mu_);
      StaleCacheGate::Held gate(&gate_);
      id = FindLocked(key, hash);
      // The slot stays in its queue, marked dead, until the queue reaches
      // it, a sweep passes or a put below the entry bound needs it:
      // unlinking from a singly linked FIFO costs a walk.
      if (id != kStaleCacheNil) Drop(id, hash, kDead, &evictions_explicit_);
      dead.swap(graveyard_);
    }
    return id != kStaleCacheNil;
  }

  // Evicts every value older than `max_age` at `now` and frees dead slots.
  // Holds the mutex for one pass over the queues and the gate only for
  // each removal, so lookups wait at most one unlink.
  std::size_t Sweep(int64_t now, int64_t max_age) {
    std::vector<Value> dead_values;
    std::size_t swept = 0;
    {
      MutexLock lock(&mu_);
      for (Queue* q : {&small_, &main_}) {
        uint32_t prev = kStaleCacheNil;
        for (uint32_t id = q->head; id != kStaleCacheNil;) {
          Slot& s = slots_[id];
          const uint32_t next = s.queue_next;
          const bool dead = s.queue == kDead;
          if (dead ||
              ElapsedNanosSince(
                  now, s.written.load(std::memory_order_relaxed)) > max_age) {
            (prev == kStaleCacheNil ? q->head : slots_[prev].queue_next) = next;
            if (q->tail == id) q->tail = prev;
            --q->count;
            if (!dead) {
              const uint64_t hash = StaleCacheHashOf(hash_, s.key);
              StaleCacheGate::Held gate(&gate_);
              Drop(id, hash, kFree, &evictions_age_);
              ++swept;
            }
            Free(id);
          } else {
            prev = id;
          }
          id = next;
        }
      }
      dead_values.swap(graveyard_);
    }
    return swept;
  }

  void AddStats(LastGoodCacheStats* st) const {
    const uint64_t lookups = gate_.completed();
    const uint64_t misses = misses_.load(std::memory_order_relaxed);
    const uint64_t too_old = too_old_.load(std::memory_order_relaxed);
    // Read after the lookups, so a lookup in flight may be in these and not
    // in `lookups`: never count it as a hit.
    st->hits += lookups > misses + too_old ? lookups - misses - too_old : 0;
    st->misses += misses;
    st->too_old += too_old;
    MutexLock lock(&mu_);
    st->entries += live_;
    st->bytes += bytes_;
    st->inserts += inserts_;
    st->replaced += replaced_;
    st->evictions_size += evictions_size_;
    st->evictions_age += evictions_age_;
    st->evictions_explicit += evictions_explicit_;
  }

 private:
  enum QueueId : uint8_t { kFree, kSmall, kMain, kDead };
  struct Queue {
    uint32_t head = kStaleCacheNil;
    uint32_t tail = kStaleCacheNil;
    uint32_t count = 0;  // dead slots included
  };

  static uint64_t PowerOfTwoAtLeast(uint64_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
  }
  // Nonzero, so an empty ghost place never matches.
  static uint32_t Fingerprint(uint64_t hash) {
    return static_cast<uint32_t>(hash >> 24) | 1u;
  }
  static void Touch(const Slot& s) {
    // Racing readers may lose an increment; the count is a hint.
    const uint8_t f = s.freq.load(std::memory_order_relaxed);
    if (f < 3)
      s.freq.store(static_cast<uint8_t>(f + 1), std::memory_order_relaxed);
  }

  uint32_t FindLocked(const K& key, uint64_t hash) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    uint32_t id = buckets_[hash & bucket_mask_];
    while (id != kStaleCacheNil && !(slots_[id].key == key)) {
      id = slots_[id].bucket_next;
    }
    return id;
  }

  void Push(Queue* q, uint32_t id, uint8_t which)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Slot& s = slots_[id];
    s.queue = which;
    s.queue_next = kStaleCacheNil;
    (q->tail == kStaleCacheNil ? q->head : slots_[q->tail].queue_next) = id;
    q->tail = id;
    ++q->count;
  }
  uint32_t Pop(Queue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint32_t id = q->head;
    q->head = slots_[id].queue_next;
    if (q->head == kStaleCacheNil) q->tail = kStaleCacheNil;
    --q->count;
    return id;
  }
  void Free(uint32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    slots_[id].queue = kFree;
    slots_[id].queue_next = free_head_;
    free_head_ = id;
  }

  // Unlinks a live slot from its bucket and releases its value (into the
  // graveyard), counting the eviction. REQUIRES: the gate held.
  void Drop(uint32_t id, uint64_t hash, uint8_t mark, uint64_t* counter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Slot& s = slots_[id];
    uint32_t* link = &buckets_[hash & bucket_mask_];
    while (*link != id && *link != kStaleCacheNil) {
      link = &slots_[*link].bucket_next;
    }
    if (*link == kStaleCacheNil) {
      // Not in its bucket: the key's hash changed since it was put (a Hash
      // that breaks its contract). Find it wherever it is rather than walk
      // off the table.
      for (uint64_t b = 0; b <= bucket_mask_ && *link != id; ++b) {
        link = &buckets_[b];
        while (*link != id && *link != kStaleCacheNil) {
          link = &slots_[*link].bucket_next;
        }
      }
      if (*link != id) return;  // not linked at all: nothing to unlink
    }
    *link = s.bucket_next;
    graveyard_.push_back(std::move(s.value));
    s.value.reset();
    bytes_ -= s.bytes;
    s.bytes = 0;
    s.queue = mark;
    --live_;
    ++*counter;
  }

  // Unlinks one dead (erased) slot from its queue and frees it; false when
  // there is none. A walk, paid only by a put that needs the slot.
  bool ReclaimDead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (Queue* q : {&small_, &main_}) {
      uint32_t prev = kStaleCacheNil;
      for (uint32_t id = q->head; id != kStaleCacheNil;
           prev = id, id = slots_[id].queue_next) {
        if (slots_[id].queue != kDead) continue;
        (prev == kStaleCacheNil ? q->head : slots_[prev].queue_next) =
            slots_[id].queue_next;
        if (q->tail == id) q->tail = prev;
        --q->count;
        Free(id);
        return true;
      }
    }
    return false;
  }

  // Whether the value at the head of `q` is past `max_age`.
  bool HeadExpired(const Queue& q, int64_t now, int64_t max_age) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (q.head == kStaleCacheNil || q.head == pinned_) return false;
    const Slot& s = slots_[q.head];
    return s.queue != kDead &&
           ElapsedNanosSince(now, s.written.load(std::memory_order_relaxed)) >
               max_age;
  }

  // Frees one slot or moves one entry between queues; false when both
  // queues are empty. Values past `max_age` at either queue's head (FIFO
  // order is write order, so the heads are the oldest) go first.
  // REQUIRES: the gate held.
  bool EvictOne(int64_t now, int64_t max_age)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Main holding only the key being replaced has nothing to give.
    const bool main_expired = HeadExpired(main_, now, max_age);
    const bool from_small =
        !main_expired && small_.count > 0 &&
        (HeadExpired(small_, now, max_age) || small_.count >= small_target_ ||
         main_.count == 0 || (main_.count == 1 && main_.head == pinned_));
    if (!from_small && main_.count == 0) return false;
    const uint32_t id = Pop(from_small ? &small_ : &main_);
    Slot& s = slots_[id];
    if (s.queue == kDead) {
      Free(id);
      return true;
    }
    const uint64_t hash = StaleCacheHashOf(hash_, s.key);
    if (id != pinned_ &&
        ElapsedNanosSince(now, s.written.load(std::memory_order_relaxed)) >
            max_age) {
      Drop(id, hash, kFree, &evictions_age_);
      Free(id);
      return true;
    }
    const uint8_t f = s.freq.load(std::memory_order_relaxed);
    if (from_small) {
      if (f > 1 || id == pinned_) {
        Push(&main_, id, kMain);
        return true;
      }
      ghost_[hash & ghost_mask_] = Fingerprint(hash);
    } else if (f > 0 || id == pinned_) {
      if (f > 0)
        s.freq.store(static_cast<uint8_t>(f - 1), std::memory_order_relaxed);
      Push(&main_, id, kMain);
      return true;
    }
    Drop(id, hash, kFree, &evictions_size_);
    Free(id);
    return true;
  }

  const uint32_t max_entries_;
  const uint64_t max_bytes_;
  const uint32_t small_target_;
  const uint64_t bucket_mask_;
  const uint64_t ghost_mask_;
  const Hash hash_;
  // Allocated once. Readers follow buckets_ and slots_ under the gate.
  const std::unique_ptr<Slot[]> slots_;
  const std::unique_ptr<uint32_t[]> buckets_;
  const std::unique_ptr<uint32_t[]> ghost_;  // written under mu_ only

  StaleCacheGate gate_;
  mutable std::atomic<uint64_t> misses_{0};
  mutable std::atomic<uint64_t> too_old_{0};

  mutable Mutex mu_;
  Queue small_ ABSL_GUARDED_BY(mu_);
  Queue main_ ABSL_GUARDED_BY(mu_);
  uint32_t free_head_ ABSL_GUARDED_BY(mu_) = kStaleCacheNil;
  uint32_t pinned_ ABSL_GUARDED_BY(mu_) = kStaleCacheNil;
  uint32_t live_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t inserts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t replaced_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_age_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_explicit_ ABSL_GUARDED_BY(mu_) = 0;
  // Values evicted or replaced, released after the gate opens.
  std::vector<Value> graveyard_ ABSL_GUARDED_BY(mu_);
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_STALE_CACHE_SHARD_HPP_
