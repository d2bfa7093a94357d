// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// admission_queue.hpp with threads (label `concurrency`, run under TSan):
// WaitPopBatch wakes on a push and returns on its timeout; four producers and
// one consumer on a small queue under CoDel, deadlines, admission changes and
// evictions, where every item ends exactly once (served, dropped through
// on_drop, or refused to its producer) and the stats agree with what the
// threads saw.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "degrade/admission_queue.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/barrier.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;

QueueSettings Small(const Clock* clock, std::size_t capacity) {
  QueueSettings s;
  s.name = "stress";
  s.capacity = capacity;
  s.clock = clock;
  s.metrics = NoTelemetry();
  return s;
}

TEST(AdmissionQueueConcurrencyTest, WaitPopBatchWakesOnPush) {
  FakeClock clock;
  auto q = AdmissionQueue<int>::Create(Small(&clock, 4));
  ASSERT_TRUE(q.ok());
  std::vector<int> out;
  degrade_tests::Barrier started(2);
  std::thread consumer([&] {
    started.ArriveAndWait();
    // No timeout: only a push can end this wait.
    (*q)->WaitPopBatch(&out, 8, absl::InfiniteDuration());
  });
  started.ArriveAndWait();
  int v = 42;
  ASSERT_TRUE((*q)->Push(std::move(v)).ok());
  consumer.join();
  EXPECT_THAT(out, ElementsAre(42));
}

TEST(AdmissionQueueConcurrencyTest, WaitPopBatchReturnsOnItsTimeout) {
  FakeClock clock;
  auto q = AdmissionQueue<int>::Create(Small(&clock, 4));
  ASSERT_TRUE(q.ok());
  std::vector<int> out;
  EXPECT_EQ((*q)->WaitPopBatch(&out, 8, absl::Milliseconds(1)), 0u);
  EXPECT_EQ((*q)->WaitPopBatch(&out, 8, absl::ZeroDuration()), 0u);
  EXPECT_EQ((*q)->WaitPopBatch(&out, 8, -absl::Seconds(1)), 0u);
  EXPECT_EQ((*q)->WaitPopBatch(nullptr, 8, absl::InfiniteDuration()), 0u);
  int v = 1;
  ASSERT_TRUE((*q)->Push(std::move(v)).ok());
  EXPECT_EQ((*q)->WaitPopBatch(&out, 8, absl::InfiniteDuration()), 1u);
  EXPECT_THAT(out, ElementsAre(1));
}

TEST(AdmissionQueueConcurrencyTest, FourProducersEveryItemEndsExactlyOnce) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 2000;
  constexpr int kTotal = kProducers * kPerProducer;
  FakeClock clock;
  std::atomic<int> threshold{kAdmitAllRank};
  QueueSettings s = Small(&clock, 48);
  s.admission_threshold = [&threshold] {
    return threshold.load(std::memory_order_relaxed);
  };
  std::atomic<uint64_t> sojourns{0};
  s.on_sojourn = [&sojourns](absl::Duration) {
    sojourns.fetch_add(1, std::memory_order_relaxed);
  };
  // Per item: 1 served, 2 dropped, 4 refused; anything but one bit is a bug.
  std::vector<std::atomic<uint8_t>> fate(kTotal);
  std::array<std::atomic<uint64_t>, kNumDropReasons> dropped_by{};
  std::atomic<uint64_t> refused{0};
  auto q = AdmissionQueue<int>::Create(s, [&](int&& v, DropReason why) {
    fate[static_cast<std::size_t>(v)].fetch_add(2, std::memory_order_relaxed);
    dropped_by[static_cast<std::size_t>(why)].fetch_add(1);
    if (v % 97 == 0) throw std::runtime_error("a callback that throws");
  });
  ASSERT_TRUE(q.ok());
  AdmissionQueue<int>& queue = **q;
  const std::function<double()> delay = queue.QueueDelaySource();

  std::atomic<int> producers_left{kProducers};
  // A producer refused by a full queue waits for the consumer's next round
  // (yielding, no sleep), so refusals do not use up the items at once.
  std::atomic<int> rounds{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      detail::SplitMix64 rng(static_cast<uint64_t>(p + 1));
      for (int i = 0; i < kPerProducer; ++i) {
        const uint64_t r = rng.Next();
        int v = p * kPerProducer + i;
        const RequestClass rc{static_cast<Criticality>(r % 4),
                              static_cast<uint8_t>((r >> 8) % 128)};
        const absl::Time deadline =
            (r >> 16) % 8 == 0 ? absl::InfiniteFuture()
                               : clock.Now() + absl::Milliseconds(5 + (r >> 20) % 200);
        const absl::Status st = queue.Push(std::move(v), deadline, rc);
        if (!st.ok()) {
          EXPECT_TRUE(IsShed(st)) << st;
          fate[static_cast<std::size_t>(p * kPerProducer + i)].fetch_add(
              4, std::memory_order_relaxed);
          refused.fetch_add(1, std::memory_order_relaxed);
          // As a server does when its limiter refuses: make room below.
          // What it drops goes through on_drop, exactly once like the rest.
          if (r % 3 == 0) (void)queue.Preempt(rc);
          if (absl::StrContains(st.message(), "is full")) {
            // Full, so the consumer is not waiting for a backlog: it will
            // finish a round.
            // Or until it is no longer full: a round that dropped many
            // items may leave fewer than the consumer waits for.
            const int seen = rounds.load();
            while (rounds.load() == seen && queue.size() == queue.capacity()) {
              std::this_thread::yield();
            }
          }
        }
      }
      producers_left.fetch_sub(1);
    });
  }
  std::vector<int> served_values;
  std::thread consumer([&] {
    detail::SplitMix64 rng(7);
    std::vector<int> batch;
    batch.reserve(32);
    int round = 0;
    while (true) {
      // Serve only once a backlog stands (or the producers are done), so
      // that CoDel and LIFO run whatever the scheduler does.
      while (producers_left.load() > 0 && queue.size() < 24) {
        std::this_thread::yield();
      }
      const bool last = producers_left.load() == 0;
      batch.clear();
      const uint64_t r = rng.Next();
      queue.WaitPopBatch(&batch, 1 + r % 2, absl::Microseconds(200));
      for (int v : batch) {
        fate[static_cast<std::size_t>(v)].fetch_add(1, std::memory_order_relaxed);
        served_values.push_back(v);
      }
      clock.Advance(absl::Milliseconds(static_cast<int64_t>((r >> 8) % 3)));
      queue.RecordServiceTime(absl::Milliseconds(static_cast<int64_t>((r >> 16) % 11)));
      if (++round % 50 == 0) {
        threshold.store(round % 100 == 0 ? kAdmitAllRank
                                         : FloorRank(Criticality::kSheddablePlus));
        (void)delay();
        (void)queue.stats();
      }
      rounds.fetch_add(1);
      if (last && queue.size() == 0) break;
    }
  });
  for (std::thread& t : threads) t.join();
  consumer.join();

  uint64_t served = 0, dropped = 0, refusals = 0;
  for (int v = 0; v < kTotal; ++v) {
    const uint8_t f = fate[static_cast<std::size_t>(v)].load();
    ASSERT_TRUE(f == 1 || f == 2 || f == 4) << "item " << v << " fate " << int{f};
    served += f == 1;
    dropped += f == 2;
    refusals += f == 4;
  }
  const QueueStats st = queue.stats();
  EXPECT_EQ(st.depth, 0u);
  EXPECT_EQ(st.pushed + refusals, static_cast<uint64_t>(kTotal));
  EXPECT_EQ(st.popped, served);
  // on_sojourn: every served item, and items CoDel or a deadline dropped
  // at a pop (a push's eviction of an expired item reports none).
  EXPECT_GE(sojourns.load(), served);
  EXPECT_LE(sojourns.load(),
            served + dropped_by[static_cast<std::size_t>(DropReason::kCodel)] +
                dropped_by[static_cast<std::size_t>(DropReason::kDeadline)]);
  EXPECT_EQ(refusals, refused.load());
  uint64_t stat_drops = 0;
  for (uint64_t n : st.drops) stat_drops += n;
  EXPECT_EQ(stat_drops, dropped + refusals);
  EXPECT_EQ(st.pushed, served + dropped);
  uint64_t bucketed = 0;
  for (uint64_t n : st.sojourn_buckets) bucketed += n;
  EXPECT_EQ(bucketed, served);
  // The run exercised what it claims to.
  EXPECT_GT(served, 0u);
  EXPECT_GT(dropped_by[static_cast<std::size_t>(DropReason::kDeadline)].load(), 0u);
  EXPECT_GT(dropped_by[static_cast<std::size_t>(DropReason::kCodel)].load(), 0u);
  EXPECT_GT(refusals, 0u);
}

// Three consumers, three producers, evictions, a moving threshold and re-entrant on_drop: every item ends once.
TEST(AdmissionQueueConcurrencyTest, ThreeConsumersReentrantDropsExactlyOnce) {
  constexpr int kProducers = 3, kConsumers = 3, kPer = 3000;
  constexpr int kTotal = kProducers * kPer;
  FakeClock clock;
  std::atomic<int> threshold{kAdmitAllRank};
  QueueSettings s = Small(&clock, 8);
  s.admission_threshold = [&threshold] { return threshold.load(); };
  std::vector<std::atomic<uint8_t>> fate(kTotal);
  AdmissionQueue<int>* self = nullptr;
  auto q = AdmissionQueue<int>::Create(s, [&](int&& v, DropReason) {
    fate[static_cast<std::size_t>(v)].fetch_add(2);
    if (v % 7 == 0) {
      std::vector<int> more;
      self->PopBatch(&more, 2);
      for (int m : more) fate[static_cast<std::size_t>(m)].fetch_add(1);
    }
  });
  ASSERT_TRUE(q.ok());
  self = q->get();
  std::atomic<int> producers_left{kProducers};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      detail::SplitMix64 rng(static_cast<uint64_t>(p + 11));
      for (int i = 0; i < kPer; ++i) {
        const uint64_t r = rng.Next();
        int v = p * kPer + i;
        const RequestClass rc{static_cast<Criticality>(r % 4),
                              static_cast<uint8_t>((r >> 8) % 128)};
        const absl::Time deadline =
            (r >> 16) % 4 == 0 ? absl::InfiniteFuture()
                               : clock.Now() + absl::Milliseconds(1 + (r >> 20) % 30);
        if (!self->Push(std::move(v), deadline, rc).ok()) {
          fate[static_cast<std::size_t>(p * kPer + i)].fetch_add(4);
        }
        if (i % 64 == 0) clock.Advance(absl::Milliseconds(1));
      }
      producers_left.fetch_sub(1);
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      detail::SplitMix64 rng(static_cast<uint64_t>(c + 101));
      std::vector<int> batch;
      int round = 0;
      while (true) {
        const bool last = producers_left.load() == 0;
        batch.clear();
        const uint64_t r = rng.Next();
        self->WaitPopBatch(&batch, 1 + r % 3, absl::Microseconds(50));
        for (int v : batch) fate[static_cast<std::size_t>(v)].fetch_add(1);
        clock.Advance(absl::Milliseconds(static_cast<int64_t>((r >> 8) % 4)));
        self->RecordServiceTime(absl::Milliseconds(static_cast<int64_t>((r >> 16) % 5)));
        if (c == 0 && ++round % 40 == 0) {
          threshold.store(round % 80 == 0 ? kAdmitAllRank
                                          : FloorRank(Criticality::kSheddablePlus));
        }
        if (last && self->size() == 0) break;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  uint64_t served = 0, dropped = 0;
  for (int v = 0; v < kTotal; ++v) {
    const uint8_t f = fate[static_cast<std::size_t>(v)].load();
    ASSERT_TRUE(f == 1 || f == 2 || f == 4) << "item " << v << " fate " << int{f};
    served += f == 1;
    dropped += f == 2;
  }
  const QueueStats st = self->stats();
  EXPECT_EQ(st.popped, served);
  EXPECT_EQ(st.pushed, served + dropped);
  uint64_t bucketed = 0;
  for (uint64_t n : st.sojourn_buckets) bucketed += n;
  EXPECT_EQ(bucketed, served);
}

// Several consumers blocked with no timeout are all woken by pushes (a lost wakeup hangs it).
TEST(AdmissionQueueConcurrencyTest, NoLostWakeupWithSeveralInfiniteWaiters) {
  constexpr int kConsumers = 4, kItems = 4000;
  FakeClock clock;
  auto q = AdmissionQueue<int>::Create(Small(&clock, 64));
  ASSERT_TRUE(q.ok());
  std::atomic<int> got{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      std::vector<int> out;
      while (true) {
        out.clear();
        (*q)->WaitPopBatch(&out, 1, absl::InfiniteDuration());
        bool stop = false;
        for (int v : out) {
          if (v < 0) stop = true; else got.fetch_add(1);
        }
        if (stop) return;
      }
    });
  }
  for (int i = 0; i < kItems; ++i) {
    int v = i;
    while (!(*q)->Push(std::move(v)).ok()) std::this_thread::yield();
  }
  while ((*q)->size() > 0) std::this_thread::yield();
  for (int c = 0; c < kConsumers; ++c) {
    int stop = -1;
    while (!(*q)->Push(std::move(stop)).ok()) std::this_thread::yield();
  }
  for (std::thread& t : consumers) t.join();
  EXPECT_EQ(got.load(), kItems);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
