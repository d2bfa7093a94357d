// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// admission_queue.hpp on a FakeClock: FIFO when healthy; CoDel as folly does
// it (a whole interval above target before anything is sloughed, stopping
// once the queue drains); adaptive LIFO; deadline drops using the service
// estimate; capacity refusals that leave the caller the item, and eviction
// of a less important class; admission hooks; on_drop throwing and
// re-entering; the delay source, the histogram, telemetry; every bad
// setting named. Threads: admission_queue_concurrency_test.cpp.

#include "degrade/admission_queue.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "degrade/admission.hpp"

#if defined(__linux__)
#include <unistd.h>
#endif

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Queue = AdmissionQueue<int>;

constexpr RequestClass kCritPlus{Criticality::kCriticalPlus, 0};
constexpr RequestClass kCrit{Criticality::kCritical, 0};
constexpr RequestClass kSheddablePlus{Criticality::kSheddablePlus, 0};
constexpr RequestClass kSheddable{Criticality::kSheddable, 0};

std::size_t Drops(const QueueStats& s, DropReason r) {
  return static_cast<std::size_t>(s.drops[static_cast<std::size_t>(r)]);
}

QueueSettings Cfg(std::size_t capacity, bool adaptive_lifo = true,
                  bool deadline_aware = true) {
  QueueSettings s;
  s.capacity = capacity;
  s.adaptive_lifo = adaptive_lifo;
  s.deadline_aware = deadline_aware;
  return s;
}

// Settings on `clock` with no telemetry, for the tests that build their own
// queue (their own on_drop or item type).
QueueSettings On(const Clock* clock, std::size_t capacity) {
  QueueSettings s;
  s.capacity = capacity;
  s.clock = clock;
  s.metrics = NoTelemetry();
  return s;
}

// A queue on `clock` recording what it drops, and why.
struct Fixture {
  explicit Fixture(QueueSettings s = {}) {
    if (s.capacity == 0) s.capacity = 64;
    s.clock = &clock;
    s.metrics = NoTelemetry();
    auto q = Queue::Create(std::move(s), [this](int&& v, DropReason why) {
      dropped.emplace_back(v, why);
    });
    EXPECT_TRUE(q.ok()) << q.status();
    queue = std::move(*q);
  }
  std::vector<int> Pop(std::size_t max) {
    std::vector<int> out;
    queue->PopBatch(&out, max);
    return out;
  }
  void PushAll(std::initializer_list<int> values, RequestClass rc = {}) {
    for (int v : values) {
      int copy = v;
      ASSERT_TRUE(queue->Push(std::move(copy), absl::InfiniteFuture(), rc).ok());
    }
  }

  FakeClock clock;
  std::vector<std::pair<int, DropReason>> dropped;
  std::unique_ptr<Queue> queue;
};

// ---- Settings ---------------------------------------------------------------

TEST(AdmissionQueueTest, EveryBadSettingIsNamedWithItsValue) {
  struct Case {
    const char* what;
    void (*edit)(QueueSettings&);
    const char* setting;
    const char* value;
  };
  const Case cases[] = {
      {"capacity 0", [](QueueSettings& s) { s.capacity = 0; }, "capacity", "= 0"},
      {"capacity huge",
       [](QueueSettings& s) { s.capacity = kMaxQueueCapacity + 1; }, "capacity",
       "= 16777217"},
      {"name empty", [](QueueSettings& s) { s.name.clear(); }, "name", "= \"\""},
      {"target 0",
       [](QueueSettings& s) { s.codel_target = absl::ZeroDuration(); },
       "codel_target", "= 0"},
      {"target negative",
       [](QueueSettings& s) { s.codel_target = absl::Milliseconds(-5); },
       "codel_target", "= -5ms"},
      {"target == interval",
       [](QueueSettings& s) { s.codel_target = s.codel_interval; },
       "codel_target", "= 100ms"},
      {"target > interval",
       [](QueueSettings& s) { s.codel_target = absl::Seconds(1); },
       "codel_target", "= 1s"},
      {"target infinite",
       [](QueueSettings& s) { s.codel_target = absl::InfiniteDuration(); },
       "codel_target", "= inf"},
      {"interval 0",
       [](QueueSettings& s) { s.codel_interval = absl::ZeroDuration(); },
       "codel_interval", "= 0"},
      {"interval negative",
       [](QueueSettings& s) { s.codel_interval = -absl::Seconds(1); },
       "codel_interval", "= -1s"},
      {"interval infinite",
       [](QueueSettings& s) { s.codel_interval = absl::InfiniteDuration(); },
       "codel_interval", "= inf"},
  };
  for (const Case& c : cases) {
    QueueSettings s;
    s.name = "gpu";
    s.capacity = 8;
    c.edit(s);
    const absl::Status v = ValidateQueueSettings(s);
    EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(v.message(), HasSubstr(absl::StrCat("'", c.setting, "' ", c.value)))
        << c.what << ": " << v;
    auto q = Queue::Create(s);
    EXPECT_EQ(q.status(), v) << c.what;
  }
}

TEST(AdmissionQueueTest, SmallestValidDurationsAndCapacityWork) {
  FakeClock clock;
  QueueSettings s = On(&clock, 1);
  s.codel_target = absl::Nanoseconds(1);
  s.codel_interval = absl::Nanoseconds(2);
  auto q = Queue::Create(s);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_TRUE((*q)->Push(1).ok());
  EXPECT_TRUE(IsShed((*q)->Push(2)));
  std::vector<int> out;
  EXPECT_EQ((*q)->PopBatch(&out, 4), 1u);
  EXPECT_THAT(out, ElementsAre(1));
}

// ---- Order and batching -----------------------------------------------------

TEST(AdmissionQueueTest, HealthyQueueIsFifo) {
  Fixture f;
  f.PushAll({1, 2, 3, 4, 5});
  f.clock.Advance(absl::Milliseconds(1));
  EXPECT_THAT(f.Pop(10), ElementsAre(1, 2, 3, 4, 5));
  const QueueStats s = f.queue->stats();
  EXPECT_FALSE(s.lifo);
  EXPECT_FALSE(s.overloaded);
  EXPECT_EQ(s.pushed, 5u);
  EXPECT_EQ(s.popped, 5u);
  EXPECT_EQ(s.depth, 0u);
  EXPECT_EQ(s.capacity, 64u);
  EXPECT_THAT(f.dropped, IsEmpty());
}

TEST(AdmissionQueueTest, PopBatchReturnsAtMostMaxInOrderAndAppends) {
  Fixture f(Cfg(200));
  for (int i = 0; i < 150; ++i) f.PushAll({i});
  std::vector<int> out = {-1};
  EXPECT_EQ(f.queue->PopBatch(&out, 3), 3u);
  EXPECT_THAT(out, ElementsAre(-1, 0, 1, 2));
  EXPECT_EQ(f.queue->PopBatch(&out, 0), 0u);
  EXPECT_EQ(f.queue->PopBatch(nullptr, 5), 0u);
  // A batch larger than one lock hold (64) is still one ordered batch.
  out.clear();
  EXPECT_EQ(f.queue->PopBatch(&out, 100), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], i + 3);
  EXPECT_EQ(f.queue->size(), 47u);
  out.clear();
  EXPECT_EQ(f.queue->PopBatch(&out, 1000), 47u);
  EXPECT_EQ(f.queue->PopBatch(&out, 1000), 0u);
}

// ---- CoDel ------------------------------------------------------------------

TEST(AdmissionQueueTest, CodelSloughsOnlyAfterAWholeIntervalAboveTarget) {
  Fixture f(Cfg(100, false));
  for (int i = 0; i < 20; ++i) f.PushAll({i});
  // The first interval: every item has waited far past the slough timeout
  // (10 ms), yet nothing is dropped, because no interval has ended yet.
  for (int i = 0; i < 10; ++i) {
    f.clock.Advance(absl::Milliseconds(10));
    EXPECT_THAT(f.Pop(1), ElementsAre(i));
    EXPECT_FALSE(f.queue->stats().overloaded) << i;
  }
  EXPECT_THAT(f.dropped, IsEmpty());
  // 100 ms after the first pop the interval ends with its minimum (10 ms)
  // above the 5 ms target: overloaded, and the old items are sloughed.
  f.clock.Advance(absl::Milliseconds(10));
  EXPECT_THAT(f.Pop(1), IsEmpty());
  EXPECT_EQ(f.dropped.size(), 10u);
  for (const auto& [v, why] : f.dropped) EXPECT_EQ(why, DropReason::kCodel) << v;
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kCodel), 10u);
  // Drained: no standing queue, so fresh items are served even when they
  // waited past the slough timeout.
  EXPECT_FALSE(f.queue->stats().overloaded);
  f.PushAll({100});
  f.clock.Advance(absl::Milliseconds(30));
  EXPECT_THAT(f.Pop(1), ElementsAre(100));
  EXPECT_EQ(f.dropped.size(), 10u);
}

// A keep-alive client's bursts leave the most important class at the head
// past CoDel's slough timeout while less important work waits behind it.
// That head is the next item served; CoDel shortens the standing queue from
// the other classes instead (issue 32: one CRITICAL_PLUS in six was lost).
TEST(AdmissionQueueTest,
     CodelNeverSloughsTheMostImportantHeadWhileLessImportantWaits) {
  Fixture f(Cfg(100, false));
  f.PushAll({1, 2}, kCritPlus);
  f.PushAll({10, 11, 12}, kCrit);
  f.PushAll({20}, kSheddable);
  // A whole interval above target: the queue stands.
  f.clock.Advance(absl::Milliseconds(20));
  EXPECT_THAT(f.Pop(1), ElementsAre(1));
  f.clock.Advance(absl::Milliseconds(100));
  EXPECT_THAT(f.Pop(1), ElementsAre(2));
  EXPECT_TRUE(f.queue->stats().overloaded);
  EXPECT_THAT(f.dropped, IsEmpty());
  // Now the head is an old CRITICAL while only SHEDDABLE is less important:
  // CRITICAL is the most important class queued, so it is served, oldest
  // first, and SHEDDABLE is dropped once it reaches the head.
  EXPECT_THAT(f.Pop(2), ElementsAre(10, 11));
  f.PushAll({3}, kCritPlus);
  // The head (12, CRITICAL) is no longer the most important class queued:
  // sloughed. Then 20 (SHEDDABLE) is the head with CRITICAL_PLUS queued:
  // sloughed too. 3, younger than the slough timeout, is served.
  f.clock.Advance(absl::Milliseconds(5));
  EXPECT_THAT(f.Pop(1), ElementsAre(3));
  EXPECT_THAT(f.dropped, ElementsAre(std::make_pair(12, DropReason::kCodel),
                                     std::make_pair(20, DropReason::kCodel)));
}

// With one class queued the head is sloughed as in any CoDel queue: the
// exemption is for serving order among classes, not for a class that alone
// exceeds the capacity.
TEST(AdmissionQueueTest,
     CodelSloughsTheMostImportantClassWhenItIsAllThatIsQueued) {
  Fixture f(Cfg(100, false));
  f.PushAll({1, 2, 3, 4}, kCritPlus);
  f.clock.Advance(absl::Milliseconds(20));
  EXPECT_THAT(f.Pop(1), ElementsAre(1));
  f.clock.Advance(absl::Milliseconds(100));
  EXPECT_THAT(f.Pop(1), IsEmpty());
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kCodel), 3u);
}

TEST(AdmissionQueueTest, OneShortWaitInTheIntervalMeansNoStandingQueue) {
  Fixture f(Cfg(100, false));
  for (int i = 0; i < 5; ++i) f.PushAll({i});
  f.clock.Advance(absl::Milliseconds(20));
  EXPECT_THAT(f.Pop(1), ElementsAre(0));  // starts the interval
  f.PushAll({50});
  f.clock.Advance(absl::Milliseconds(40));
  EXPECT_THAT(f.Pop(4), ElementsAre(1, 2, 3, 4));
  f.PushAll({51});
  f.clock.Advance(absl::Milliseconds(2));
  EXPECT_THAT(f.Pop(1), ElementsAre(50));  // head waited 42 ms
  f.clock.Advance(absl::Milliseconds(1));
  f.PushAll({52, 53});
  // The queue never emptied, but head 51 is 3 ms old: below target.
  EXPECT_THAT(f.Pop(1), ElementsAre(51));
  f.clock.Advance(absl::Milliseconds(60));  // the interval has ended
  EXPECT_THAT(f.Pop(1), ElementsAre(52));   // 60 ms, but not sloughed
  EXPECT_FALSE(f.queue->stats().overloaded);
  EXPECT_THAT(f.dropped, IsEmpty());
}

TEST(AdmissionQueueTest, AdaptiveLifoServesNewestWhileTheQueueStands) {
  for (const bool adaptive : {true, false}) {
    SCOPED_TRACE(adaptive ? "adaptive LIFO" : "FIFO only");
    Fixture f(Cfg(100, adaptive));
    f.PushAll({1, 2, 3});
    f.clock.Advance(absl::Milliseconds(6));
    EXPECT_THAT(f.Pop(1), ElementsAre(1));  // head 6 ms: above target
    f.clock.Advance(absl::Milliseconds(99));
    f.PushAll({4, 5, 6});  // t = 105 ms
    f.clock.Advance(absl::Milliseconds(5));
    // t = 110 ms: the interval [6, 106) ended at 6 ms minimum, overloaded.
    // 2 and 3 waited 110 ms: sloughed. 4..6 waited 5 ms: kept.
    const std::vector<int> got = f.Pop(2);
    EXPECT_TRUE(f.queue->stats().overloaded);
    EXPECT_EQ(f.queue->stats().lifo, adaptive);
    EXPECT_EQ(f.dropped.size(), 2u);
    if (adaptive) {
      EXPECT_THAT(got, ElementsAre(6, 5));
      EXPECT_THAT(f.Pop(5), ElementsAre(4));
    } else {
      EXPECT_THAT(got, ElementsAre(4, 5));
      EXPECT_THAT(f.Pop(5), ElementsAre(6));
    }
    // Drained: FIFO again.
    EXPECT_FALSE(f.queue->stats().lifo);
    f.PushAll({7, 8});
    EXPECT_THAT(f.Pop(5), ElementsAre(7, 8));
  }
}

// ---- Deadlines --------------------------------------------------------------

TEST(AdmissionQueueTest, DeadlineChecksUseTheServiceEstimate) {
  Fixture f;
  EXPECT_EQ(f.queue->service_time_estimate(), absl::ZeroDuration());
  f.queue->RecordServiceTime(absl::Milliseconds(40));
  f.queue->RecordServiceTime(absl::Milliseconds(-1));         // ignored
  f.queue->RecordServiceTime(absl::InfiniteDuration());       // ignored
  EXPECT_EQ(f.queue->service_time_estimate(), absl::Milliseconds(40));
  f.queue->RecordServiceTime(absl::Milliseconds(80));  // EWMA, weight 1/4
  EXPECT_NEAR(absl::ToDoubleMilliseconds(f.queue->service_time_estimate()),
              50.0, 1e-6);

  const absl::Time t0 = f.clock.Now();
  int a = 1, b = 2, c = 3;
  // At push: a deadline inside the estimate is refused, the item kept.
  const absl::Status refused = f.queue->Push(std::move(a), t0 + absl::Milliseconds(40));
  EXPECT_TRUE(IsShed(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("deadline"));
  ASSERT_TRUE(ShedRetryAfter(refused).has_value());
  EXPECT_LT(*ShedRetryAfter(refused), absl::ZeroDuration());  // do not retry
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kDeadline), 1u);
  ASSERT_TRUE(f.queue->Push(std::move(b), t0 + absl::Milliseconds(100)).ok());
  ASSERT_TRUE(f.queue->Push(std::move(c), t0 + absl::Milliseconds(200)).ok());
  // At pop: at 60 ms, 60 + 50 > 100, so 2 cannot make it; 3 can.
  f.clock.Advance(absl::Milliseconds(60));
  EXPECT_THAT(f.Pop(5), ElementsAre(3));
  ASSERT_EQ(f.dropped.size(), 1u);
  EXPECT_EQ(f.dropped[0], std::make_pair(2, DropReason::kDeadline));
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kDeadline), 2u);
}

TEST(AdmissionQueueTest, APassedDeadlineIsRefusedUnlessDeadlinesAreIgnored) {
  for (const bool aware : {true, false}) {
    Fixture f(Cfg(4, true, aware));
    int v = 7;
    const absl::Status s = f.queue->Push(std::move(v), f.clock.Now() - absl::Seconds(1));
    EXPECT_EQ(s.ok(), !aware) << s;
    EXPECT_THAT(f.Pop(1), aware ? std::vector<int>{} : std::vector<int>{7});
  }
}

TEST(AdmissionQueueTest, ClocksAtTheInfinitiesNeitherCrashNorServeTheExpired) {
  Fixture f;
  f.clock.Set(absl::InfiniteFuture());
  int finite = 1, forever = 2;
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(finite), absl::FromUnixSeconds(1))));
  EXPECT_TRUE(f.queue->Push(std::move(forever)).ok());
  EXPECT_THAT(f.Pop(4), ElementsAre(2));
  f.clock.Set(absl::InfinitePast());
  f.PushAll({3, 4});
  EXPECT_THAT(f.Pop(4), ElementsAre(3, 4));
  EXPECT_GE(f.queue->QueueDelaySource()(), 0.0);
}

// ---- Capacity and eviction --------------------------------------------------

TEST(AdmissionQueueTest, FullQueueRefusesAndTheCallerKeepsTheItem) {
  FakeClock clock;
  QueueSettings s = On(&clock, 2);
  s.name = "gpu";
  auto q = AdmissionQueue<std::unique_ptr<int>>::Create(s);
  ASSERT_TRUE(q.ok());
  auto a = std::make_unique<int>(1), b = std::make_unique<int>(2),
       c = std::make_unique<int>(3);
  EXPECT_TRUE((*q)->Push(std::move(a)).ok());
  EXPECT_TRUE((*q)->Push(std::move(b)).ok());
  const absl::Status full = (*q)->Push(std::move(c));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(IsShed(full));
  EXPECT_THAT(full.message(), HasSubstr("admission queue 'gpu'"));
  EXPECT_THAT(full.message(), HasSubstr("capacity 2"));
  ASSERT_NE(c, nullptr);  // not moved from
  EXPECT_EQ(*c, 3);
  const QueueStats st = (*q)->stats();
  EXPECT_EQ(st.pushed, 2u);
  EXPECT_EQ(Drops(st, DropReason::kCapacity), 1u);
  EXPECT_EQ(st.depth, 2u);
}

TEST(AdmissionQueueTest, MoreImportantPushEvictsTheOldestOfTheLeastImportant) {
  Fixture f(Cfg(4));
  f.PushAll({1}, kSheddablePlus);
  f.PushAll({2}, kSheddable);
  f.PushAll({3}, kSheddable);
  f.PushAll({4}, kCrit);
  // Full. CRITICAL_PLUS evicts 2, the oldest SHEDDABLE.
  f.PushAll({5}, kCritPlus);
  ASSERT_EQ(f.dropped.size(), 1u);
  EXPECT_EQ(f.dropped[0], std::make_pair(2, DropReason::kShed));
  // Equal criticality never evicts: a SHEDDABLE push is refused.
  int v = 6;
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(v), absl::InfiniteFuture(), kSheddable)));
  EXPECT_EQ(v, 6);
  // CRITICAL evicts 3 (SHEDDABLE still the least important), then 1.
  f.PushAll({7}, kCrit);
  f.PushAll({8}, kCrit);
  ASSERT_EQ(f.dropped.size(), 3u);
  EXPECT_EQ(f.dropped[1].first, 3);
  EXPECT_EQ(f.dropped[2].first, 1);
  // Only CRITICAL and above are left: a CRITICAL push is refused.
  v = 9;
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(v), absl::InfiniteFuture(), kCrit)));
  const QueueStats s = f.queue->stats();
  EXPECT_EQ(Drops(s, DropReason::kShed), 3u);
  EXPECT_EQ(Drops(s, DropReason::kCapacity), 2u);
  // The most important criticality first, each oldest first.
  EXPECT_THAT(f.Pop(10), ElementsAre(5, 4, 7, 8));
}

TEST(AdmissionQueueTest, PreemptDropsTheOldestOfTheLeastImportantBelowTheCallerAndCountsThem) {
  Fixture f(Cfg(8));
  f.PushAll({1}, kSheddablePlus);
  f.PushAll({2}, kSheddable);
  f.PushAll({3}, kSheddable);
  f.PushAll({4}, kCrit);
  EXPECT_EQ(f.queue->queued_below(kCritPlus), 4u);
  EXPECT_EQ(f.queue->queued_below(kCrit), 3u);
  EXPECT_EQ(f.queue->queued_below(kSheddablePlus), 2u);
  EXPECT_EQ(f.queue->queued_below(kSheddable), 0u);
  // Not full: Preempt does not need a full queue, only a less important item.
  EXPECT_TRUE(f.queue->Preempt(kCrit));
  EXPECT_EQ(f.queue->queued_below(kCrit), 2u);
  ASSERT_EQ(f.dropped.size(), 1u);
  EXPECT_EQ(f.dropped[0], std::make_pair(2, DropReason::kShed));
  EXPECT_TRUE(f.queue->Preempt(kSheddablePlus));
  EXPECT_EQ(f.dropped.back().first, 3);
  // Nothing below SHEDDABLE_PLUS is left; an equal class is never preempted.
  EXPECT_FALSE(f.queue->Preempt(kSheddablePlus));
  EXPECT_FALSE(f.queue->Preempt(kSheddable));
  EXPECT_TRUE(f.queue->Preempt(kCritPlus));  // takes 1, the SHEDDABLE_PLUS
  EXPECT_EQ(f.dropped.back().first, 1);
  EXPECT_FALSE(f.queue->Preempt(kCrit));     // only CRITICAL is left
  EXPECT_EQ(f.dropped.size(), 3u);
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kShed), 3u);
  EXPECT_EQ(f.queue->size(), 1u);
  EXPECT_THAT(f.Pop(10), ElementsAre(4));
  EXPECT_FALSE(f.queue->Preempt(kCritPlus)) << "empty";
}

TEST(AdmissionQueueTest, PreemptDeliversOutsideTheLockSoOnDropMayPushAgain) {
  FakeClock clock;
  std::unique_ptr<Queue> q;
  std::vector<int> dropped;
  auto created = Queue::Create(On(&clock, 2), [&](int&& v, DropReason) {
    dropped.push_back(v);
    int again = v + 100;  // re-queued as CRITICAL: room was just made
    EXPECT_TRUE(q->Push(std::move(again), absl::InfiniteFuture(), kCrit).ok());
  });
  ASSERT_TRUE(created.ok()) << created.status();
  q = std::move(*created);
  int a = 1, b = 2;
  ASSERT_TRUE(q->Push(std::move(a), absl::InfiniteFuture(), kSheddable).ok());
  ASSERT_TRUE(q->Push(std::move(b), absl::InfiniteFuture(), kCrit).ok());
  EXPECT_TRUE(q->Preempt(kCritPlus));
  EXPECT_THAT(dropped, ElementsAre(1));
  std::vector<int> out;
  q->PopBatch(&out, 4);
  EXPECT_THAT(out, ElementsAre(2, 101));
}

// ---- Admission hooks --------------------------------------------------------

TEST(AdmissionQueueTest, AdmissionThresholdRefusesAtPushAndDropsAtPop) {
  int threshold = kAdmitAllRank;
  std::vector<absl::Duration> waits;
  QueueSettings s;
  s.admission_threshold = [&threshold] { return threshold; };
  s.on_sojourn = [&waits](absl::Duration d) { waits.push_back(d); };
  Fixture f(std::move(s));
  f.PushAll({1}, kCrit);
  f.PushAll({2}, kSheddable);
  f.PushAll({3}, kCritPlus);
  threshold = FloorRank(Criticality::kCritical);  // CRITICAL and above
  int v = 4;
  const absl::Status refused =
      f.queue->Push(std::move(v), absl::InfiniteFuture(), kSheddablePlus);
  EXPECT_TRUE(IsShed(refused));
  EXPECT_THAT(refused.message(), HasSubstr("SHEDDABLE_PLUS:0"));
  f.clock.Advance(absl::Milliseconds(3));
  EXPECT_THAT(f.Pop(10), ElementsAre(3, 1));  // CRITICAL_PLUS first
  ASSERT_EQ(f.dropped.size(), 1u);
  EXPECT_EQ(f.dropped[0], std::make_pair(2, DropReason::kShed));
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kShed), 2u);
  EXPECT_THAT(waits, ElementsAre(absl::Milliseconds(3), absl::Milliseconds(3)));
}

TEST(AdmissionQueueTest, AnAdmissionControllerDrivesBothHooks) {
  // The usual wiring: the door admits through the controller, the queue
  // reports each served item's wait back to it, and once DAGOR's window
  // closes overloaded the tightened threshold also refuses at the queue.
  FakeClock door_clock;
  AdmissionOptions o;
  o.name = "door";
  o.adaptive = true;
  o.clock = &door_clock;
  o.metrics = NoTelemetry();
  auto ac = AdmissionController::Create(o);
  ASSERT_TRUE(ac.ok()) << ac.status();
  QueueSettings s;
  s.admission = ac->get();
  s.capacity = 128;
  Fixture f(std::move(s));
  int pushed = 0;
  for (int i = 0; i < 100; ++i) {
    const RequestClass rc{Criticality::kSheddable, static_cast<uint8_t>(i)};
    if (!(*ac)->Admitted(rc)) continue;
    int v = i;
    ASSERT_TRUE(f.queue->Push(std::move(v), absl::InfiniteFuture(), rc).ok());
    ++pushed;
  }
  EXPECT_EQ(pushed, 100);
  f.clock.Advance(absl::Milliseconds(50));  // every item waits 50 ms > 20 ms
  door_clock.Advance(absl::Seconds(1));     // DAGOR's window has passed
  EXPECT_EQ(f.Pop(200).size(), 100u);
  EXPECT_LT((*ac)->threshold(), kAdmitAllRank);
  EXPECT_GE((*ac)->threshold(), FloorRank(Criticality::kCriticalPlus));
  int v = 0;
  const absl::Status refused = f.queue->Push(
      std::move(v), absl::InfiniteFuture(), {Criticality::kSheddable, 127});
  EXPECT_TRUE(IsShed(refused)) << refused;
}

TEST(AdmissionQueueTest, ThrowingHooksFailOpenAndAreSwallowed) {
  QueueSettings s;
  s.admission_threshold = []() -> int { throw std::runtime_error("threshold"); };
  s.on_sojourn = [](absl::Duration) { throw std::runtime_error("sojourn"); };
  Fixture f(std::move(s));
  f.PushAll({1, 2}, kSheddable);
  EXPECT_THAT(f.Pop(10), ElementsAre(1, 2));
}

// ---- on_drop ----------------------------------------------------------------

TEST(AdmissionQueueTest, ThrowingOnDropLosesNoDropAndBreaksNothing) {
  FakeClock clock;
  const QueueSettings s = On(&clock, 64);
  std::vector<int> seen;
  auto q = Queue::Create(s, [&seen](int&& v, DropReason) {
    seen.push_back(v);
    throw std::runtime_error("on_drop");
  });
  ASSERT_TRUE(q.ok());
  // 40 expired items: more than one lock hold's worth of drops (16).
  for (int i = 0; i < 40; ++i) {
    int v = i;
    ASSERT_TRUE((*q)->Push(std::move(v), clock.Now() + absl::Milliseconds(1)).ok());
  }
  int keep = 99;
  ASSERT_TRUE((*q)->Push(std::move(keep)).ok());
  clock.Advance(absl::Milliseconds(2));
  std::vector<int> out;
  EXPECT_EQ((*q)->PopBatch(&out, 8), 1u);
  EXPECT_THAT(out, ElementsAre(99));
  EXPECT_EQ(seen.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(Drops((*q)->stats(), DropReason::kDeadline), 40u);
  int again = 100;
  EXPECT_TRUE((*q)->Push(std::move(again)).ok());
  EXPECT_EQ((*q)->size(), 1u);
}

TEST(AdmissionQueueTest, OnDropMayPushAndPopTheSameQueue) {
  FakeClock clock;
  const QueueSettings s = On(&clock, 8);
  Queue* self = nullptr;
  std::vector<int> popped_inside;
  auto q = Queue::Create(s, [&](int&& v, DropReason why) {
    EXPECT_EQ(why, DropReason::kDeadline);
    int retry = v + 1000;  // requeued without a deadline, then served here
    EXPECT_TRUE(self->Push(std::move(retry)).ok());
    EXPECT_EQ(self->size(), 1u);
    EXPECT_EQ(self->PopBatch(&popped_inside, 4), 1u);
  });
  ASSERT_TRUE(q.ok());
  self = q->get();
  int v = 1;
  ASSERT_TRUE(self->Push(std::move(v), clock.Now() + absl::Milliseconds(1)).ok());
  clock.Advance(absl::Milliseconds(5));
  std::vector<int> out;
  EXPECT_EQ(self->PopBatch(&out, 4), 0u);
  EXPECT_THAT(out, IsEmpty());
  EXPECT_THAT(popped_inside, ElementsAre(1001));
  EXPECT_EQ(self->size(), 0u);
  const QueueStats st = self->stats();
  EXPECT_EQ(st.pushed, 2u);
  EXPECT_EQ(st.popped, 1u);
  EXPECT_EQ(Drops(st, DropReason::kDeadline), 1u);
}

// ---- Signals and telemetry --------------------------------------------------

TEST(AdmissionQueueTest, DelaySourceIsTheHeadsAgeAtPopsOrTheOldestItemsAge) {
  Fixture f;
  const std::function<double()> delay = f.queue->QueueDelaySource();
  EXPECT_NEAR(delay(), 0.0, 1e-12);  // idle and empty
  f.PushAll({1});
  f.clock.Advance(absl::Milliseconds(2));
  f.PushAll({2});
  f.clock.Advance(absl::Milliseconds(2));
  EXPECT_THAT(f.Pop(1), ElementsAre(1));  // the head waited 4 ms
  f.clock.Advance(absl::Milliseconds(1));
  EXPECT_THAT(f.Pop(1), ElementsAre(2));  // the head waited 3 ms
  EXPECT_NEAR(delay(), 3.5, 1e-9);  // the mean of the heads' ages
  f.PushAll({3});
  f.clock.Advance(absl::Milliseconds(7));
  // Nothing served since the last poll: a stalled consumer reads as the
  // head's age, not as zero.
  EXPECT_NEAR(delay(), 7.0, 1e-9);
  f.clock.Advance(absl::Milliseconds(1));
  EXPECT_NEAR(delay(), 8.0, 1e-9);
}

TEST(AdmissionQueueTest, SojournHistogramBucketsEveryServedItem) {
  QueueSettings cfg = Cfg(8, false, false);
  cfg.codel_target = absl::Seconds(5);  // so that a 7 s wait is no stall
  cfg.codel_interval = absl::Seconds(10);
  Fixture f(std::move(cfg));
  f.PushAll({1});
  f.clock.Advance(absl::Microseconds(500));
  EXPECT_THAT(f.Pop(1), ElementsAre(1));  // 0.5 ms: bucket le=1
  f.PushAll({2});
  f.clock.Advance(absl::Milliseconds(5));
  EXPECT_THAT(f.Pop(1), ElementsAre(2));  // exactly 5 ms: bucket le=5
  f.PushAll({3});
  f.clock.Advance(absl::Seconds(7));
  EXPECT_THAT(f.Pop(1), ElementsAre(3));  // over 5 s: the overflow bucket
  const QueueStats s = f.queue->stats();
  EXPECT_EQ(s.sojourn_buckets[0], 1u);
  EXPECT_EQ(s.sojourn_buckets[2], 1u);
  EXPECT_EQ(s.sojourn_buckets[kSojournBucketsMs.size()], 1u);
  uint64_t total = 0;
  for (uint64_t n : s.sojourn_buckets) total += n;
  EXPECT_EQ(total, 3u);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(s.sojourn_sum), 7005.5, 1e-6);
}

class RecordingTelemetry : public Telemetry {
 public:
  struct Detach : TelemetryAttachment {
    explicit Detach(RecordingTelemetry* t) : t_(t) {}
    ~Detach() override { t_->view = nullptr; }
    RecordingTelemetry* t_;
  };
  std::unique_ptr<TelemetryAttachment> AttachQueue(const QueueView& q) override {
    view = &q;
    ++attached;
    return std::make_unique<Detach>(this);
  }
  const QueueView* view = nullptr;
  int attached = 0;
};

TEST(AdmissionQueueTest, TelemetryScrapesTheViewUntilTheQueueDies) {
  RecordingTelemetry telemetry;
  FakeClock clock;
  {
    QueueSettings s;
    s.name = "gpu";
    s.capacity = 3;
    s.clock = &clock;
    s.metrics = &telemetry;
    auto q = Queue::Create(s);
    ASSERT_TRUE(q.ok());
    ASSERT_NE(telemetry.view, nullptr);
    EXPECT_EQ(telemetry.view->name(), "gpu");
    int a = 1, b = 2;
    ASSERT_TRUE((*q)->Push(std::move(a)).ok());
    ASSERT_TRUE((*q)->Push(std::move(b)).ok());
    const QueueStats s1 = telemetry.view->stats();
    EXPECT_EQ(s1.depth, 2u);
    EXPECT_EQ(s1.capacity, 3u);
    EXPECT_EQ(s1.pushed, 2u);
  }
  EXPECT_EQ(telemetry.attached, 1);
  EXPECT_EQ(telemetry.view, nullptr);
}

// ---- Regressions found in review ------------------------------------------

// Drives a standing queue: each 1 ms, two pushes and one single-item pop.
void Overload(Fixture& f, int steps, int* next) {
  for (int i = 0; i < steps; ++i) {
    f.PushAll({(*next)++, (*next)++});
    f.clock.Advance(absl::Milliseconds(1));
    f.Pop(1);
  }
}

// In adaptive LIFO both delay signals report the standing queue, not the
// newest items' waits.
TEST(AdmissionQueueTest, DelaySignalsReportTheStandingQueueUnderLifo) {
  QueueSettings s = Cfg(1000);
  std::vector<absl::Duration> sojourns;
  s.on_sojourn = [&sojourns](absl::Duration d) { sojourns.push_back(d); };
  Fixture f(std::move(s));
  const std::function<double()> delay = f.queue->QueueDelaySource();
  int next = 0;
  Overload(f, 300, &next);
  ASSERT_TRUE(f.queue->stats().overloaded);
  ASSERT_TRUE(f.queue->stats().lifo);
  delay();  // restart the mean
  sojourns.clear();
  Overload(f, 100, &next);
  ASSERT_TRUE(f.queue->stats().overloaded);
  double mean_ms = 0;
  for (absl::Duration d : sojourns) mean_ms += absl::ToDoubleMilliseconds(d);
  mean_ms /= static_cast<double>(sojourns.size());
  // An overloaded queue (its minimum wait above the 5 ms target for a whole
  // interval) must not report a queuing delay below that target.
  EXPECT_GE(delay(), 5.0) << "queue_delay_ms reads healthy while overloaded";
  EXPECT_GE(mean_ms, 5.0) << "on_sojourn (DAGOR's input) reads healthy";
}

// A pop taking exactly the last items leaves the queue calm and FIFO.
TEST(AdmissionQueueTest, PopThatEmptiesTheQueueAtExactlyMaxBatchClearsOverload) {
  Fixture f(Cfg(100, true));
  f.PushAll({1, 2, 3});
  f.clock.Advance(absl::Milliseconds(6));
  ASSERT_THAT(f.Pop(1), ElementsAre(1));
  f.clock.Advance(absl::Milliseconds(99));
  f.PushAll({4, 5, 6});
  f.clock.Advance(absl::Milliseconds(5));
  ASSERT_THAT(f.Pop(2), ElementsAre(6, 5));  // 2 and 3 sloughed
  ASSERT_TRUE(f.queue->stats().overloaded);
  ASSERT_THAT(f.Pop(1), ElementsAre(4));  // exactly the last item
  ASSERT_EQ(f.queue->size(), 0u);
  EXPECT_FALSE(f.queue->stats().overloaded) << "empty, yet still overloaded";
  EXPECT_FALSE(f.queue->stats().lifo);
  f.PushAll({7, 8});
  EXPECT_THAT(f.Pop(2), ElementsAre(7, 8)) << "a drained queue is FIFO again";
}

// A clock set back, or one that visited InfiniteFuture, restarts CoDel's
// interval.
TEST(AdmissionQueueTest, ClockSetBackDoesNotFreezeCodel) {
  for (const int mode : {0, 1, 2}) {
    SCOPED_TRACE(mode == 0 ? "clock steady" : mode == 1 ? "set back 1 h"
                                                        : "visited InfiniteFuture");
    Fixture f(Cfg(1000));
    const absl::Time t0 = f.clock.Now();
    f.PushAll({-1});
    ASSERT_THAT(f.Pop(1), ElementsAre(-1));  // starts CoDel's interval
    if (mode == 1) f.clock.Set(t0 - absl::Hours(1));
    if (mode == 2) {
      f.clock.Set(absl::InfiniteFuture());
      f.PushAll({-2});
      ASSERT_THAT(f.Pop(1), ElementsAre(-2));
      f.clock.Set(t0 + absl::Seconds(1));
    }
    int next = 0;
    Overload(f, 500, &next);  // half a second of 2x overload
    EXPECT_TRUE(f.queue->stats().overloaded);
    EXPECT_GT(Drops(f.queue->stats(), DropReason::kCodel), 0u);
  }
}

// A target of centuries saturates the slough timeout instead of overflowing.
TEST(AdmissionQueueTest, HugeCodelTargetDoesNotOverflowTheSloughTimeout) {
  constexpr int64_t kYear = 365 * 24;
  QueueSettings s = Cfg(8, false, false);
  s.codel_target = absl::Hours(150 * kYear);
  s.codel_interval = absl::Hours(151 * kYear);
  ASSERT_TRUE(ValidateQueueSettings(s).ok());
  Fixture f(std::move(s));
  f.clock.Set(absl::FromUnixSeconds(-8'500'000'000));  // about 1700
  f.PushAll({1, 2, 3});
  f.clock.Advance(absl::Hours(160 * kYear));
  f.PushAll({4});
  ASSERT_THAT(f.Pop(1), ElementsAre(1));  // starts the interval, min 160 y
  f.clock.Advance(absl::Hours(151 * kYear));
  // Overloaded now. 2 and 3 waited 311 y > 300 y: sloughed. 4 waited 151 y,
  // under the 300 y slough timeout: served.
  EXPECT_THAT(f.Pop(1), ElementsAre(4));
  EXPECT_EQ(f.dropped.size(), 2u);
}

// At 2x overload, half CRITICAL, DAGOR behind the queue sheds SHEDDABLE and
// CRITICAL loses < 10%.
TEST(AdmissionQueueTest, DagorAdmissionShedsSheddableFirstBehindACodelQueue) {
  for (const bool lifo : {true, false}) {
    SCOPED_TRACE(lifo ? "adaptive LIFO" : "FIFO");
    FakeClock clock;
    AdmissionOptions ao;
    ao.adaptive = true;
    ao.clock = &clock;
    ao.metrics = NoTelemetry();
    auto ac = AdmissionController::Create(ao);
    ASSERT_TRUE(ac.ok()) << ac.status();
    AdmissionController* controller = ac->get();
    QueueSettings s = On(&clock, 1000);
    s.adaptive_lifo = lifo;
    s.admission_threshold = [controller] { return controller->threshold(); };
    s.on_sojourn = [controller](absl::Duration d) {
      controller->RecordQueuingDelay(d);
    };
    bool measuring = false;
    uint64_t critical_offered = 0, critical_lost = 0;
    auto q = Queue::Create(s, [&](int&& v, DropReason) {
      if (measuring && v % 2 == 0) ++critical_lost;
    });
    ASSERT_TRUE(q.ok());
    int next = 0;
    detail::SplitMix64 rng(42);
    for (int ms = 0; ms < 10000; ++ms) {
      measuring = ms >= 8000;  // the last 2 s, after 8 s to converge
      // Arrival order within the millisecond is random, so that neither
      // LIFO nor FIFO favours a class by position.
      const bool critical_first = rng.Next() % 2 == 0;
      for (const Criticality c : {Criticality::kCritical, Criticality::kSheddable}) {
        const bool critical = (c == Criticality::kCritical) == critical_first;
        const RequestClass rc{
            critical ? Criticality::kCritical : Criticality::kSheddable,
            static_cast<uint8_t>(next % 128)};
        int v = critical ? 2 * next : 2 * next + 1;  // even: CRITICAL
        ++next;
        if (measuring && critical) ++critical_offered;
        if (!controller->Admitted(rc) ||
            !(*q)->Push(std::move(v), absl::InfiniteFuture(), rc).ok()) {
          if (measuring && critical) ++critical_lost;
        }
      }
      clock.Advance(absl::Milliseconds(1));
      std::vector<int> out;
      (*q)->PopBatch(&out, 1);
    }
    ASSERT_GT(critical_offered, 0u);
    EXPECT_LT(controller->threshold(), kAdmitAllRank)
        << "DAGOR never tightened at 2x overload";
    // The server has capacity for every CRITICAL request.
    EXPECT_LT(static_cast<double>(critical_lost) /
                  static_cast<double>(critical_offered),
              0.10)
        << critical_lost << " of " << critical_offered << " CRITICAL lost";
  }
}

// A head older than target + interval is a standing queue at once: no stale
// item served first.
TEST(AdmissionQueueTest, AStalledConsumerResumesIntoAStandingQueue) {
  Fixture f(Cfg(1000));
  f.PushAll({-1});
  ASSERT_THAT(f.Pop(1), ElementsAre(-1));
  for (int i = 0; i < 100; ++i) f.PushAll({i});
  f.clock.Advance(absl::Seconds(2));  // the consumer stalls
  // Fresh arrivals, more than one pop takes (a pop that empties the queue
  // clears the overload by design).
  for (int i = 1000; i < 1010; ++i) f.PushAll({i});
  const std::vector<int> first = f.Pop(8);
  EXPECT_TRUE(f.queue->stats().overloaded);
  EXPECT_THAT(first, ::testing::Not(::testing::Contains(0)))
      << "served a 2 s old item first";
}

// One slow (warm-up) batch does not make the queue refuse 1 s deadlines
// forever.
TEST(AdmissionQueueTest, OneSlowBatchDoesNotRefuseAllTrafficForever) {
  Fixture f;
  f.queue->RecordServiceTime(absl::Seconds(3));  // the warm-up batch
  std::size_t served = 0;
  int next = 0;
  for (int ms = 0; ms < 10000; ms += 20) {
    for (int i = 0; i < 10; ++i) {
      int v = next++;
      (void)f.queue->Push(std::move(v), f.clock.Now() + absl::Seconds(1));
    }
    std::vector<int> batch;
    if (f.queue->PopBatch(&batch, 32) > 0) {
      served += batch.size();
      f.queue->RecordServiceTime(absl::Milliseconds(20));
    }
    f.clock.Advance(absl::Milliseconds(20));
  }
  EXPECT_GT(served, 0u) << "10 s of traffic, nothing served; estimate "
                        << f.queue->service_time_estimate();
}

// After a probe the fresh sample replaces the stale estimate: ordinary
// deadlines are met again within two warm-up batch times.
TEST(AdmissionQueueTest, AProbeReplacesAStaleServiceEstimate) {
  Fixture f;
  f.queue->RecordServiceTime(absl::Seconds(3));
  int a = 1, b = 2;
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(a), f.clock.Now() + absl::Seconds(1))));
  f.clock.Advance(absl::Seconds(6));  // nothing handed out for 2 x 3 s
  ASSERT_TRUE(f.queue->Push(std::move(a), f.clock.Now() + absl::Seconds(1)).ok());
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(b), f.clock.Now() + absl::Seconds(1))))
      << "one probe at a time";
  EXPECT_THAT(f.Pop(8), ElementsAre(1));
  f.queue->RecordServiceTime(absl::Milliseconds(20));
  EXPECT_EQ(f.queue->service_time_estimate(), absl::Milliseconds(20));
  ASSERT_TRUE(f.queue->Push(std::move(b), f.clock.Now() + absl::Seconds(1)).ok());
  int c = 3;  // a deadline inside the estimate is refused again
  EXPECT_TRUE(IsShed(f.queue->Push(std::move(c), f.clock.Now() + absl::Milliseconds(10))));
}

// One absurd sample (400 years) once made the probe wait 800 years, so
// every push with a finite deadline was refused for good. The probe waits
// at most a minute, and its batch's sample replaces the estimate.
TEST(AdmissionQueueTest, AnAbsurdServiceTimeSampleIsForgottenWithinAMinute) {
  Fixture f;
  f.queue->RecordServiceTime(absl::Hours(24 * 365 * 400));
  int a = 1, b = 2;
  EXPECT_TRUE(
      IsShed(f.queue->Push(std::move(a), f.clock.Now() + absl::Seconds(1))));
  f.clock.Advance(absl::Seconds(59));
  EXPECT_TRUE(
      IsShed(f.queue->Push(std::move(a), f.clock.Now() + absl::Seconds(1))));
  f.clock.Advance(absl::Seconds(1));  // a minute without a hand-out
  ASSERT_TRUE(
      f.queue->Push(std::move(a), f.clock.Now() + absl::Seconds(1)).ok())
      << "no probe a minute after an absurd sample";
  EXPECT_THAT(f.Pop(8), ElementsAre(1));
  f.queue->RecordServiceTime(absl::Milliseconds(20));
  EXPECT_EQ(f.queue->service_time_estimate(), absl::Milliseconds(20));
  EXPECT_TRUE(
      f.queue->Push(std::move(b), f.clock.Now() + absl::Seconds(1)).ok());
}

// A queue at the largest capacity (2^24) once allocated and zeroed all its
// slots up front, about 640 MB; the slots now grow as the queue fills.
TEST(AdmissionQueueTest, TheLargestCapacityCommitsLittleUntilUsed) {
#if defined(__linux__)
  const auto resident_bytes = [] {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
  };
  const long before = resident_bytes();
#endif
  Fixture f(Cfg(kMaxQueueCapacity));
#if defined(__linux__)
  EXPECT_LT(resident_bytes() - before, 16L << 20)
      << "resident memory grew by more than 16 MiB for an empty queue";
#endif
  for (int i = 0; i < 1000; ++i) {
    int v = i;
    ASSERT_TRUE(f.queue->Push(std::move(v), absl::InfiniteFuture()).ok());
  }
  std::vector<int> out;
  EXPECT_EQ(f.queue->PopBatch(&out, 1000), 1000u);
  EXPECT_EQ(f.queue->stats().depth, 0u);
}

// Close() refuses pushes with UNAVAILABLE, wakes waiters, leaves the queued
// items to be served; the destructor hands what is left to on_drop (kShed).
TEST(AdmissionQueueTest, CloseRefusesPushesAndTheDestructorDropsTheRest) {
  auto f = std::make_unique<Fixture>();
  f->PushAll({1, 2});
  f->queue->Close();
  EXPECT_TRUE(f->queue->closed());
  int v = 3;
  const absl::Status refused = f->queue->Push(std::move(v));
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_FALSE(IsShed(refused));
  EXPECT_EQ(v, 3);
  std::vector<int> out;
  EXPECT_EQ(f->queue->WaitPopBatch(&out, 1, absl::InfiniteDuration()), 1u);
  EXPECT_THAT(out, ElementsAre(1));
  out.clear();
  EXPECT_EQ(f->queue->WaitPopBatch(&out, 1, absl::InfiniteDuration()), 1u);
  EXPECT_EQ(f->queue->WaitPopBatch(&out, 1, absl::InfiniteDuration()), 0u)
      << "closed and empty: returns at once";
  std::vector<std::pair<int, DropReason>> dropped;
  {
    Fixture g;
    g.PushAll({7, 8});
    g.queue.reset();
    dropped = g.dropped;
  }
  EXPECT_THAT(dropped, ElementsAre(std::make_pair(7, DropReason::kShed),
                                   std::make_pair(8, DropReason::kShed)));
}

// A full queue first discards an item already past its deadline.
TEST(AdmissionQueueTest, AFullQueueDropsAnExpiredItemBeforeRefusing) {
  Fixture f(Cfg(2));
  int a = 1, b = 2, c = 3;
  ASSERT_TRUE(f.queue->Push(std::move(a)).ok());
  ASSERT_TRUE(f.queue->Push(std::move(b), f.clock.Now() + absl::Milliseconds(5)).ok());
  f.clock.Advance(absl::Milliseconds(6));
  ASSERT_TRUE(f.queue->Push(std::move(c)).ok());
  EXPECT_THAT(f.dropped, ElementsAre(std::make_pair(2, DropReason::kDeadline)));
  EXPECT_EQ(Drops(f.queue->stats(), DropReason::kCapacity), 0u);
  EXPECT_THAT(f.Pop(4), ElementsAre(1, 3));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
