// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Per-thread shard indices, so that counters written on every call (a
// breaker's outcome counts) live on cache lines no other thread writes.
//
// A thread claims the lowest free slot of 64 on first use and frees it when
// it exits, so threads alive at the same time never share a shard while
// there are no more of them than shards. Sequential numbering would
// eventually pair a long-lived thread (main, say) with a newly spawned one
// and make both pay for sharing a line; past 64 live threads, slots are
// shared round-robin.
//
// Thread-safe. ThreadShardIndex() is a thread_local read after the first
// call on a thread.

#ifndef DEGRADE_DETAIL_THREAD_SHARD_HPP_
#define DEGRADE_DETAIL_THREAD_SHARD_HPP_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

#include "degrade/detail/macros.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The slots of live threads, one bit each, and the round-robin counter for
// threads past 64. Constant-initialised function statics: no guard on use.
inline std::atomic<uint64_t>& ShardSlots() {
  static std::atomic<uint64_t> slots{0};
  return slots;
}
inline std::atomic<std::size_t>& ShardOverflow() {
  static std::atomic<std::size_t> overflow{0};
  return overflow;
}

struct ShardSlotReleaser {
  int bit = -1;
  ~ShardSlotReleaser() {
    if (bit >= 0) {
      ShardSlots().fetch_and(~(uint64_t{1} << bit), std::memory_order_acq_rel);
    }
  }
};

inline std::size_t AcquireShardSlot() {
  std::atomic<uint64_t>& slots = ShardSlots();
  uint64_t used = slots.load(std::memory_order_relaxed);
  while (used != ~uint64_t{0}) {
    int bit = 0;
    while ((used >> bit) & 1u) ++bit;
    if (slots.compare_exchange_weak(used, used | (uint64_t{1} << bit),
                                    std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      thread_local ShardSlotReleaser releaser;
      releaser.bit = bit;
      return static_cast<std::size_t>(bit);
    }
  }
  // More than 64 live threads: share, spread round-robin.
  return ShardOverflow().fetch_add(1, std::memory_order_relaxed);
}

// The calling thread's shard slot. Stored plus one so that zero means "not
// assigned yet", which keeps the thread_local constant-initialised (no guard
// check on the hot path).
inline std::size_t ThreadShardIndex() {
  thread_local std::size_t index_plus_one = 0;
  if (DEGRADE_UNLIKELY(index_plus_one == 0)) {
    index_plus_one = AcquireShardSlot() + 1;
  }
  return index_plus_one - 1;
}

// How many shards a sharded counter should have: a power of two at least
// the core count, between 8 and 64, so that threads rarely share one.
inline std::size_t ShardCount() {
  const std::size_t want =
      std::max<unsigned>(8, std::thread::hardware_concurrency());
  std::size_t n = 1;
  while (n < want && n < 64) n <<= 1;
  return n;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_THREAD_SHARD_HPP_
