// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/thread_shard.hpp: live threads never share a shard slot,
// whatever threads came and went before, and the shard count is a power of
// two in [8, 64].

#include "degrade/detail/thread_shard.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace {

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

}  // namespace
}  // namespace degrade
