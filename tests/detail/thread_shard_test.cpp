// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/thread_shard.hpp: live threads never share a shard slot,
// whatever threads came and went before; threads past the exclusive slots
// get shared shards and are told so; a thread whose slot is freed counts on
// a shared shard; the shard count is a power of two in [8, 64]; and
// ShardedCounts loses no add from more threads than there are shards.

#include "degrade/detail/thread_shard.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "support/barrier.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(ShardSlotTest, LiveThreadsNeverShareASlotWhateverCameBefore) {
  // Regression: sequential numbering paired main with the 9th thread spawned
  // after it, and two threads hammering one counter shard cost 4x.
  const std::size_t main_slot = detail::ThreadShardIndex();
  for (int i = 0; i < 40; ++i) {
    std::size_t slot = 0;
    std::thread([&slot] { slot = detail::ThreadShardIndex(); }).join();
    // Breakers have at least 8 shards and pick one by slot modulo a power
    // of two, so distinct slots must stay distinct modulo 8.
    EXPECT_NE(slot % 8, main_slot % 8) << "spawned thread " << i;
  }
  // Four threads alive together, plus main: five distinct slots.
  std::mutex mu;
  std::vector<std::size_t> slots{main_slot % 8};
  std::atomic<int> arrived{0};
  std::vector<std::thread> live;
  for (int i = 0; i < 4; ++i) {
    live.emplace_back([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        slots.push_back(detail::ThreadShardIndex() % 8);
      }
      arrived.fetch_add(1);
      while (arrived.load() < 4) std::this_thread::yield();  // stay alive
    });
  }
  for (auto& t : live) t.join();
  std::sort(slots.begin(), slots.end());
  EXPECT_EQ(std::unique(slots.begin(), slots.end()), slots.end());
}

TEST(ShardCountTest, IsAPowerOfTwoBetweenEightAndSixtyFour) {
  const std::size_t n = detail::ShardCount();
  EXPECT_GE(n, 8u);
  EXPECT_LE(n, 64u);
  EXPECT_EQ(n & (n - 1), 0u) << n;
  EXPECT_GE(n, std::min<std::size_t>(64, std::thread::hardware_concurrency()));
}

TEST(ShardSlotTest, AThreadKeepsItsSlotForItsLifetime) {
  const std::size_t first = detail::ThreadShardIndex();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(detail::ThreadShardIndex(), first);
}

struct SlotSeen {
  std::size_t index = 0;
  bool owns = false;
};

TEST(ShardSlotTest, ThreadsPastTheExclusiveSlotsShareTheSharedShards) {
  const std::size_t main_slot = detail::ThreadShardIndex();
  ASSERT_TRUE(detail::ThreadOwnsShard());
  ASSERT_LT(main_slot, detail::ShardCount());
  const int n = static_cast<int>(detail::ShardCount()) + 6;
  std::vector<SlotSeen> seen(static_cast<std::size_t>(n));
  degrade_tests::Barrier all_alive(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_FALSE(detail::ThreadOwnsShard()) << "before the first index";
      SlotSeen& mine = seen[static_cast<std::size_t>(i)];
      mine.index = detail::ThreadShardIndex();
      mine.owns = detail::ThreadOwnsShard();
      all_alive.ArriveAndWait();  // nobody frees a slot before all have one
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::size_t> exclusive{main_slot};
  std::size_t shared = 0;
  for (const SlotSeen& s : seen) {
    if (s.owns) {
      EXPECT_LT(s.index, detail::ShardCount());
      EXPECT_TRUE(exclusive.insert(s.index).second)
          << "exclusive slot " << s.index << " given twice";
    } else {
      ++shared;
      EXPECT_GE(s.index, detail::ShardCount());
      EXPECT_LT(s.index, detail::ShardArraySize());
    }
  }
  // Main and the spawned threads took every exclusive slot, no more.
  EXPECT_EQ(exclusive.size(), detail::ShardCount());
  EXPECT_EQ(shared, static_cast<std::size_t>(n) + 1 - detail::ShardCount());
}

TEST(ShardSlotTest, ADestructorRunAfterTheSlotIsFreedCountsOnASharedShard) {
  // Constructed before the thread's first ThreadShardIndex(), so destroyed
  // after the thread_local that frees the slot: what it counts must not go
  // to a shard that the slot's next holder writes without read-modify-write.
  struct LateCounter {
    SlotSeen* out = nullptr;
    ~LateCounter() {
      if (out == nullptr) return;
      out->index = detail::ThreadShardIndex();
      out->owns = detail::ThreadOwnsShard();
    }
  };
  SlotSeen during, after;
  std::thread([&] {
    thread_local LateCounter late;
    late.out = &after;
    during.index = detail::ThreadShardIndex();
    during.owns = detail::ThreadOwnsShard();
  }).join();
  EXPECT_TRUE(during.owns);
  EXPECT_LT(during.index, detail::ShardCount());
  EXPECT_FALSE(after.owns);
  EXPECT_GE(after.index, detail::ShardCount());
  EXPECT_LT(after.index, detail::ShardArraySize());
  // And the slot was freed: the next thread gets it, exclusively.
  SlotSeen next;
  std::thread([&] {
    next.index = detail::ThreadShardIndex();
    next.owns = detail::ThreadOwnsShard();
  }).join();
  EXPECT_TRUE(next.owns);
  EXPECT_EQ(next.index, during.index);
}

TEST(ShardCounterTest, SharedAddsFromManyThreadsAreNeverLost) {
  // Threads with no exclusive slot yet add with fetch_add: the slow path of
  // every counter, on one counter from 8 threads at once.
  detail::ShardCounter counter;
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&counter] {
      for (int k = 0; k < 10000; ++k) counter.Add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.Load(), 80000u);
}

TEST(ShardedCountsTest, AddsFromMoreThreadsThanShardsSumExactly) {
  // More threads than exclusive slots, so both paths run at once: owners'
  // plain stores and the shared shards' fetch_add, on several counters.
  detail::ShardedCounts<3> counts;
  const std::size_t n = detail::ShardCount() + 4;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&counts, i] {
      for (int k = 0; k < 5000; ++k) {
        counts.Add(0);
        counts.Add(1 + i % 2, 2);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counts.Load(0), n * 5000);
  EXPECT_EQ(counts.Load(1) + counts.Load(2), n * 5000 * 2);
  EXPECT_EQ(counts.Load(1), ((n + 1) / 2) * 5000 * 2);
}

TEST(ShardArraySizeTest, IsTheExclusiveShardsPlusAQuarterShared) {
  EXPECT_EQ(detail::SharedShardCount(), detail::ShardCount() / 4);
  EXPECT_GE(detail::SharedShardCount(), 2u);
  EXPECT_EQ(detail::ShardArraySize(),
            detail::ShardCount() + detail::SharedShardCount());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
