// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/overload/slot_ring.hpp: removing any element keeps the order of the
// rest, on a ring that has wrapped, and moves only the shorter side (a queue
// that evicts or expires its oldest item under overload must not shift a ring
// of millions while it holds its lock).

#include "degrade/detail/overload/slot_ring.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

struct Counted {
  explicit Counted(int v, int* moves) : value(v), moves(moves) {}
  Counted(Counted&& o) noexcept : value(o.value), moves(o.moves) { ++*moves; }
  Counted& operator=(Counted&&) = delete;
  int value;
  int* moves;
};

TEST(SlotRingTest, RemoveAtKeepsTheOrderAndMovesTheShorterSide) {
  constexpr std::size_t kCap = 16;
  for (std::size_t start = 0; start < kCap; ++start) {  // every wrap offset
    for (std::size_t victim = 0; victim < kCap; ++victim) {
      int moves = 0;
      SlotRing<Counted> ring(kCap);
      for (std::size_t k = 0; k < start; ++k) {  // advance the head
        ring.push_back(Counted(-1, &moves));
        (void)ring.pop_front();
      }
      for (std::size_t k = 0; k < kCap; ++k) {
        ring.push_back(Counted(static_cast<int>(k), &moves));
      }
      moves = 0;
      const Counted removed = ring.remove_at(victim);
      EXPECT_EQ(removed.value, static_cast<int>(victim));
      const std::size_t shorter = std::min(victim, kCap - 1 - victim);
      // One move out of the slot, one into `removed` (elided or not), and
      // one per element of the shorter side.
      EXPECT_LE(moves, static_cast<int>(shorter) + 2)
          << "start " << start << " victim " << victim;
      std::vector<int> rest;
      while (!ring.empty()) rest.push_back(ring.pop_front().value);
      std::vector<int> want;
      for (std::size_t k = 0; k < kCap; ++k) {
        if (k != victim) want.push_back(static_cast<int>(k));
      }
      EXPECT_EQ(rest, want) << "start " << start << " victim " << victim;
    }
  }
}

// The slots grow as the ring fills (a ring of 2^24 once allocated them all
// up front): order survives each growth, from any wrap offset, and the ring
// grows to exactly its capacity, not past it.
TEST(SlotRingTest, SlotsGrowAsTheRingFillsKeepingTheOrder) {
  SlotRing<int> huge(std::size_t{1} << 24);
  EXPECT_EQ(huge.allocated(), SlotRing<int>::kInitialSlots);
  SlotRing<int> tiny(5);
  EXPECT_EQ(tiny.allocated(), 5u);

  constexpr std::size_t kCap = 300;  // 64, 128, 256, then 300
  for (std::size_t start :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{100}}) {
    SlotRing<int> ring(kCap);
    for (std::size_t k = 0; k < start; ++k) {  // move the head
      ring.push_back(-1);
      (void)ring.pop_front();
    }
    for (std::size_t k = 0; k < kCap; ++k) {
      ring.push_back(static_cast<int>(k));
      if (k == 100) {
        EXPECT_EQ(ring.remove_at(50), 50);  // a removal across a growth
        ring.push_back(-2);
      }
    }
    EXPECT_TRUE(ring.full());
    EXPECT_EQ(ring.allocated(), kCap);
    std::vector<int> got;
    while (!ring.empty()) got.push_back(ring.pop_front());
    std::vector<int> want;
    for (std::size_t k = 0; k < kCap; ++k) {
      if (k == 50) continue;
      want.push_back(static_cast<int>(k));
      if (k == 100) want.push_back(-2);
    }
    EXPECT_EQ(got, want) << "start " << start;
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
