// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Per-thread shard indices, so that counters written on every call (a
// breaker's outcome counts) live on cache lines no other thread writes, and
// the counters that only one thread writes, which then need no
// read-modify-write.
//
// Every sharded structure has ShardArraySize() shards: ShardCount()
// exclusive ones, then SharedShardCount() shared ones. A thread claims the
// lowest free exclusive slot on first use and frees it when it exits, so a
// thread holding one is the only live thread writing that shard, in every
// sharded structure at once. Sequential numbering would eventually pair a
// long-lived thread (main, say) with a newly spawned one. While more threads
// are alive than there are exclusive slots, the extra ones are spread
// round-robin over the shared shards, where they add with a real atomic
// read-modify-write.
//
// Why the single writer's plain `store(load() + n)` is exact: while a
// thread holds slot i, no other thread writes shard i; the next holder of
// slot i claims it with an acquire read-modify-write of the slot word that
// reads the releasing exit's release (or a later read-modify-write of it),
// so the previous holder's last store happens before the new holder's first
// load. A thread whose slot has been freed (a thread_local destructor that
// runs after the one freeing the slot) is moved to a shared shard first.
//
// Thread-safe. ThreadShardIndex() and ThreadOwnsShard() are thread_local
// reads after the first call on a thread.

#ifndef DEGRADE_DETAIL_THREAD_SHARD_HPP_
#define DEGRADE_DETAIL_THREAD_SHARD_HPP_

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

// How many exclusive shards a sharded counter has: a power of two at least
// the core count, between 8 and 64 (the slot word's width), so that every
// thread that can run at once usually holds one. A process constant.
inline std::size_t ShardCount() {
  static const std::size_t count = [] {
    const std::size_t want =
        std::max<unsigned>(8, std::thread::hardware_concurrency());
    std::size_t n = 8;
    while (n < want && n < 64) n <<= 1;
    return n;
  }();
  return count;
}

// The shared shards after the exclusive ones: a quarter as many, so that
// threads past ShardCount() do not all contend on one line, while a breaker
// stays within 1.25x the memory of exclusive shards alone.
inline std::size_t SharedShardCount() { return ShardCount() / 4; }

// The shards a sharded structure must have: every index a thread is given
// is below this.
inline std::size_t ShardArraySize() {
  return ShardCount() + SharedShardCount();
}

// The calling thread's slot. Constant-initialised and trivially
// destructible, so reading it needs no guard and it stays readable from
// any thread_local destructor.
struct ThreadShardSlot {
  // Zero: not assigned yet.
  std::size_t index_plus_one = 0;
  // True while the thread holds exclusive slot `index_plus_one - 1`.
  bool exclusive = false;
};
DEGRADE_ALWAYS_INLINE ThreadShardSlot& CurrentThreadShardSlot() {
  thread_local ThreadShardSlot slot;
  return slot;
}

// The exclusive slots held by live threads, one bit each, and the
// round-robin counter for shared shards. Constant-initialised.
inline std::atomic<uint64_t>& ShardSlots() {
  static std::atomic<uint64_t> slots{0};
  return slots;
}
inline std::atomic<std::size_t>& ShardOverflow() {
  static std::atomic<std::size_t> overflow{0};
  return overflow;
}

inline void AssignSharedShard(ThreadShardSlot& slot) {
  const std::size_t k =
      ShardOverflow().fetch_add(1, std::memory_order_relaxed) %
      SharedShardCount();
  slot.index_plus_one = ShardCount() + k + 1;
  slot.exclusive = false;
}

// Frees the thread's exclusive slot when it exits; anything the thread
// counts after that (from a later thread_local destructor) goes to a
// shared shard.
struct ShardSlotReleaser {
  int bit = -1;
  ~ShardSlotReleaser() {
    if (bit < 0) return;
    AssignSharedShard(CurrentThreadShardSlot());
    ShardSlots().fetch_and(~(uint64_t{1} << bit), std::memory_order_acq_rel);
  }
};

// Once per thread: out of line, so that the lookup inlines into every
// counter (a call to it was a tenth of a first-time retry's instructions).
DEGRADE_NOINLINE inline void AcquireShardSlot(ThreadShardSlot& slot) {
  std::atomic<uint64_t>& slots = ShardSlots();
  const std::size_t count = ShardCount();
  const uint64_t all =
      count >= 64 ? ~uint64_t{0} : (uint64_t{1} << count) - 1;
  uint64_t used = slots.load(std::memory_order_relaxed);
  while ((used & all) != all) {
    int bit = 0;
    while ((used >> bit) & 1u) ++bit;
    if (slots.compare_exchange_weak(used, used | (uint64_t{1} << bit),
                                    std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      thread_local ShardSlotReleaser releaser;
      releaser.bit = bit;
      slot.index_plus_one = static_cast<std::size_t>(bit) + 1;
      slot.exclusive = true;
      return;
    }
  }
  AssignSharedShard(slot);
}

// The calling thread's shard index, below ShardArraySize().
DEGRADE_ALWAYS_INLINE std::size_t ThreadShardIndex() {
  ThreadShardSlot& slot = CurrentThreadShardSlot();
  if (DEGRADE_UNLIKELY(slot.index_plus_one == 0)) AcquireShardSlot(slot);
  return slot.index_plus_one - 1;
}

// Whether the calling thread is the only live writer of the shard
// ThreadShardIndex() gives it. False before the first ThreadShardIndex().
DEGRADE_ALWAYS_INLINE bool ThreadOwnsShard() { return CurrentThreadShardSlot().exclusive; }

// ShardCounter
//
// A counter in a per-thread shard: Add() on the shard ThreadShardIndex()
// picked for the calling thread is a plain load and store when the thread
// owns that shard, a relaxed fetch_add otherwise. Load() may run on any
// thread; it is a value the counter has held, and exact once the writers
// are done (joined, or synchronised with the reader).
class ShardCounter {
 public:
  // REQUIRES: this counter belongs to the shard ThreadShardIndex() gives
  // the calling thread (a counter of another shard would lose adds).
  DEGRADE_ALWAYS_INLINE void Add(uint64_t n) {
    if (DEGRADE_LIKELY(ThreadOwnsShard())) {
      value_.store(value_.load(std::memory_order_relaxed) + n,
                   std::memory_order_relaxed);
    } else {
      value_.fetch_add(n, std::memory_order_relaxed);
    }
  }
  uint64_t Load() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// ShardedCounts<N>
//
// N totals written on a hot path by many threads (the gRPC adapter's call
// counts): each thread adds to its own shard's cache line, so concurrent
// calls never contend on a counter; Load() sums the shards. The shards are
// allocated once, at construction: Add() never allocates nor locks.
// Thread-safe; Load() is exact once the writers are done, as ShardCounter.
template <std::size_t N>
class ShardedCounts {
 public:
  ShardedCounts() : shards_(new Shard[ShardArraySize()]) {}

  // REQUIRES: i < N.
  DEGRADE_ALWAYS_INLINE void Add(std::size_t i, uint64_t n = 1) {
    shards_[ThreadShardIndex()].counts[i].Add(n);
  }
  uint64_t Load(std::size_t i) const {
    uint64_t sum = 0;
    for (std::size_t s = 0; s < ShardArraySize(); ++s) {
      sum += shards_[s].counts[i].Load();
    }
    return sum;
  }

 private:
  struct alignas(kCacheLine) Shard {
    ShardCounter counts[N];
  };
  const std::unique_ptr<Shard[]> shards_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_THREAD_SHARD_HPP_
