// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail::SerialDispatcher: events are delivered in the order they were
// queued, by one thread at a time; an event queued from inside a callback is
// delivered by the same drain (no recursion, no deadlock); a throwing
// callback loses only its own event. The concurrent case (label
// concurrency) pushes and drains from several threads and checks that no
// two deliveries overlap and that every event arrives once.

#include "degrade/detail/serial_dispatcher.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SerialDispatcherTest, DeliversInQueueOrder) {
  SerialDispatcher<int> d;
  for (int i = 1; i <= 5; ++i) d.Push(i);
  std::vector<int> got;
  d.Drain([&got](int e) { got.push_back(e); });
  EXPECT_THAT(got, ElementsAre(1, 2, 3, 4, 5));
  // Drained events are gone.
  d.Drain([&got](int e) { got.push_back(e); });
  EXPECT_EQ(got.size(), 5u);
}

TEST(SerialDispatcherTest, DrainWithNothingQueuedCallsNothing) {
  SerialDispatcher<int> d;
  int calls = 0;
  d.Drain([&calls](int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(SerialDispatcherTest, APushFromACallbackIsDeliveredByTheSameDrain) {
  SerialDispatcher<int> d;
  std::vector<int> got;
  int depth = 0;
  int max_depth = 0;
  std::function<void(int)> deliver;
  deliver = [&](int e) {
    ++depth;
    max_depth = std::max(max_depth, depth);
    got.push_back(e);
    if (e < 3) {
      d.Push(e * 10);
      d.Drain(deliver);  // re-entrant: returns at once, the outer loop delivers
    }
    --depth;
  };
  d.Push(1);
  d.Push(2);
  d.Push(3);
  d.Drain(deliver);
  // The batch first, then what its callbacks queued, in their order.
  EXPECT_THAT(got, ElementsAre(1, 2, 3, 10, 20));
  EXPECT_EQ(max_depth, 1) << "never delivered recursively";
}

TEST(SerialDispatcherTest, AThrowingCallbackLosesOnlyItsEvent) {
  SerialDispatcher<int> d;
  std::vector<int> got;
  const auto deliver = [&got](int e) {
    if (e == 2) throw std::runtime_error("callback broke");
    if (e == 4) throw 4;  // not a std::exception either
    got.push_back(e);
  };
  for (int i = 1; i <= 5; ++i) d.Push(i);
  d.Drain(deliver);
  EXPECT_THAT(got, ElementsAre(1, 3, 5));
  // The dispatcher is not left "draining": later events still flow.
  d.Push(6);
  d.Drain(deliver);
  EXPECT_THAT(got, ElementsAre(1, 3, 5, 6));
}

TEST(SerialDispatcherTest, ConcurrentPushersNeverDeliverConcurrently) {
  SerialDispatcher<int> d;
  constexpr int kThreads = 4;
  constexpr int kEventsEach = 2000;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  // Only one callback runs at a time, so `per_thread` needs no lock; TSan
  // would report a race here if two ever ran together.
  std::vector<std::vector<int>> per_thread(kThreads);
  const auto deliver = [&](int e) {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    per_thread[static_cast<std::size_t>(e / kEventsEach)].push_back(
        e % kEventsEach);
    inside.fetch_sub(1);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&d, &deliver, t] {
      for (int i = 0; i < kEventsEach; ++i) {
        d.Push(t * kEventsEach + i);
        d.Drain(deliver);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  // Every event arrived exactly once, each thread's in the order it pushed
  // them, with no final Drain needed: a pusher that found another thread
  // draining left its event to that thread, which delivered it.
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(per_thread[t].size(), static_cast<std::size_t>(kEventsEach))
        << "thread " << t;
    for (int i = 0; i < kEventsEach; ++i) {
      ASSERT_EQ(per_thread[t][i], i) << "thread " << t;
    }
  }
  std::vector<int> rest;
  d.Drain([&rest](int e) { rest.push_back(e); });
  EXPECT_THAT(rest, IsEmpty());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
