// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/breaker/windows.hpp: the count and time windows on their own, fed
// plain nanoseconds. Buckets start at the origin a reset gives them; every one
// of gobreaker v2's Counts rolls with a time window, late outcomes go to the
// bucket of their admission; Record's "ask the rule" answer is true exactly
// where a rate rule's answer could have turned towards open; instants at the
// int64 ends; and records racing resets and reads never overcount.

#include "degrade/detail/breaker/windows.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000 * kMs;

constexpr uint8_t kS = kOutcomeRecorded;
constexpr uint8_t kF = kOutcomeRecorded | kOutcomeFailed;
constexpr uint8_t kSlowS = kOutcomeRecorded | kOutcomeSlow;
constexpr uint8_t kX = kOutcomeExcluded;

// One call as the breaker's closed path makes it: admitted, then reported.
bool Call(TimeWindow& w, int64_t at, uint8_t outcome) {
  w.RecordAdmission(at);
  return w.Record(at, at, outcome);
}

// ---- Time window: where calls land ----

TEST(TimeWindowTest, BucketsAreAlignedToTheOriginNotTheEpoch) {
  // 10 s in 10 buckets of 1 s, counting started at 0.5 s.
  TimeWindow w(kSec, 10, 500 * kMs);
  Call(w, 500 * kMs, kS);
  Call(w, 10'400 * kMs, kS);
  // Bucket 0 is [0.5 s, 1.5 s), bucket 10 is [10.5 s, 11.5 s): at 10.4 s the
  // window is buckets 0..9 and holds both (on epoch seconds the call of
  // 0.5 s would already have left with second 0).
  EXPECT_EQ(w.Read(10'400 * kMs).calls, 2u);
  EXPECT_EQ(w.Read(10'400 * kMs).requests, 2u);
  // At 10.6 s the window is buckets 1..10: the first call has left.
  EXPECT_EQ(w.Read(10'600 * kMs).calls, 1u);
  EXPECT_EQ(w.Read(10'600 * kMs).requests, 1u);
}

TEST(TimeWindowTest, ResetMovesTheOrigin) {
  TimeWindow w(kSec, 10, 0);
  Call(w, 3 * kSec, kF);
  w.Reset(7'250 * kMs);
  EXPECT_EQ(w.Read(7'250 * kMs).calls, 0u) << "a reset empties the window";
  Call(w, 7'250 * kMs, kS);
  EXPECT_EQ(w.Read(17'249 * kMs).calls, 1u);
  EXPECT_EQ(w.Read(17'250 * kMs).calls, 0u) << "bucket 0 is [7.25 s, 8.25 s)";
}

TEST(TimeWindowTest, InstantsBeforeTheOriginCountInTheFirstBucket) {
  // A clock stepped back inside the generation: the call is this
  // generation's, so it is kept, in age 0 (gobreaker v2 clamps a negative
  // age to 0), and leaves with age 0.
  TimeWindow w(kSec, 10, 5 * kSec);
  EXPECT_TRUE(Call(w, 4 * kSec, kF));
  const WindowStats s = w.Read(5'500 * kMs);
  EXPECT_EQ(s.requests, 1u);
  EXPECT_EQ(s.failures, 1u);
  EXPECT_EQ(w.Read(4 * kSec).failures, 1u) << "a read before the origin too";
  EXPECT_EQ(w.Read(14'999 * kMs).failures, 1u);
  EXPECT_EQ(w.Read(15 * kSec).failures, 0u);
}

TEST(TimeWindowTest, LateOutcomeIsCreditedToItsAdmissionBucket) {
  TimeWindow w(kSec, 10, 0);
  w.RecordAdmission(500 * kMs);  // a slow call, admitted in bucket 0
  Call(w, 9'900 * kMs, kS);      // a fast one in bucket 9
  // The slow call fails at 9.95 s; it counts where it was admitted.
  w.Record(500 * kMs, 9'950 * kMs, kF);
  EXPECT_EQ(w.Read(9'950 * kMs).failures, 1u);
  EXPECT_EQ(w.Read(9'950 * kMs).requests, 2u);
  // So it leaves with bucket 0, not with bucket 9.
  const WindowStats later = w.Read(10 * kSec);
  EXPECT_EQ(later.failures, 0u);
  EXPECT_EQ(later.successes, 1u);
  EXPECT_EQ(later.requests, 1u);
}

TEST(TimeWindowTest, OutcomeWhoseAdmissionBucketLeftIsDropped) {
  TimeWindow w(kSec, 10, 0);
  w.RecordAdmission(500 * kMs);     // admitted in bucket 0 ...
  w.RecordAdmission(10'500 * kMs);  // ... which bucket 10 has recycled
  EXPECT_FALSE(w.Record(500 * kMs, 10'500 * kMs, kF))
      << "older than the window";
  const WindowStats s = w.Read(10'500 * kMs);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.calls, 0u);
  EXPECT_EQ(s.requests, 1u) << "bucket 10's own figures are untouched";
}

TEST(TimeWindowTest, AllCountsRollAsInGobreakerV2) {
  // A v2 user's ReadyToTrip reads TotalFailures over the rolling window:
  // each second's requests, successes, failures and exclusions leave
  // together when their second does.
  TimeWindow w(kSec, 10, 0);
  const auto second = [&](int64_t s, int ok, int failed, int excluded) {
    for (int i = 0; i < ok; ++i) Call(w, s * kSec + i, kS);
    for (int i = 0; i < failed; ++i) Call(w, s * kSec + 100 + i, kF);
    for (int i = 0; i < excluded; ++i) Call(w, s * kSec + 200 + i, kX);
  };
  second(0, 5, 3, 1);
  second(4, 2, 0, 2);
  second(9, 1, 2, 0);
  WindowStats s = w.Read(9'999 * kMs);
  EXPECT_EQ(s.requests, 16u);
  EXPECT_EQ(s.successes, 8u);
  EXPECT_EQ(s.failures, 5u);
  EXPECT_EQ(s.exclusions, 3u);
  EXPECT_EQ(s.calls, 13u) << "exclusions are not calls";
  s = w.Read(10 * kSec);  // second 0 left
  EXPECT_EQ(s.requests, 7u);
  EXPECT_EQ(s.successes, 3u);
  EXPECT_EQ(s.failures, 2u) << "TotalFailures >= 5 no longer holds";
  EXPECT_EQ(s.exclusions, 2u);
  s = w.Read(14 * kSec);  // second 4 left
  EXPECT_EQ(s.requests, 3u);
  EXPECT_EQ(s.exclusions, 0u);
  EXPECT_EQ(w.Read(19 * kSec).requests, 0u);
}

TEST(TimeWindowTest, SlowCallsAreCountedAndStillCalls) {
  TimeWindow w(kSec, 10, 0);
  Call(w, 1, kSlowS);
  Call(w, 2, static_cast<uint8_t>(kF | kOutcomeSlow));
  Call(w, 3, kS);
  const WindowStats s = w.Read(4);
  EXPECT_EQ(s.slow, 2u);
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.successes, 2u);
  EXPECT_EQ(s.failures, 1u);
}

// ---- Time window: when to ask the rule ----

TEST(TimeWindowTest, FirstRecordInANewBucketAsks) {
  // With a minimum of 1, a fast success asks only as the first of its
  // bucket: the bucket before it may have left, taking successes with it.
  TimeWindow w(kSec, 10, 0, /*calls_to_decide=*/1);
  EXPECT_TRUE(Call(w, 100 * kMs, kS));
  EXPECT_FALSE(Call(w, 200 * kMs, kS));
  EXPECT_FALSE(Call(w, 900 * kMs, kS));
  EXPECT_TRUE(Call(w, 1'100 * kMs, kS)) << "first record of bucket 1";
  EXPECT_FALSE(Call(w, 1'200 * kMs, kS));
  EXPECT_TRUE(Call(w, 5 * kSec, kS)) << "first record of bucket 5";
}

TEST(TimeWindowTest, RecordAfterAnAdmissionStartedABucketAsks) {
  // Bucket 2's first admission means bucket 0's time is nearer its end;
  // the next record (of a call admitted earlier) must ask, once.
  TimeWindow w(kSec, 10, 0, /*calls_to_decide=*/1);
  EXPECT_TRUE(Call(w, 100 * kMs, kS));
  w.RecordAdmission(1'100 * kMs);
  w.RecordAdmission(1'200 * kMs);
  EXPECT_TRUE(w.Record(1'100 * kMs, 1'200 * kMs, kS))
      << "first record of bucket 1";
  w.RecordAdmission(2'100 * kMs);  // starts bucket 2: leaves the note
  EXPECT_TRUE(w.Record(1'200 * kMs, 2'100 * kMs, kS))
      << "a late record after the note";
  w.RecordAdmission(2'200 * kMs);
  EXPECT_TRUE(w.Record(2'100 * kMs, 2'200 * kMs, kS))
      << "bucket 2's first success";
  EXPECT_FALSE(w.Record(2'200 * kMs, 2'200 * kMs, kS))
      << "the note was taken once";
}

TEST(TimeWindowTest, RecordReachingTheMinimumAsks) {
  // The resilience4j example on a time window: minimum 4, F F F S. The S
  // brings the window to 4 calls at 75% failures, so it must ask.
  TimeWindow w(kSec, 10, 0, /*calls_to_decide=*/4);
  EXPECT_TRUE(Call(w, 1, kF));
  EXPECT_TRUE(Call(w, 2, kF));
  EXPECT_TRUE(Call(w, 3, kF));
  EXPECT_TRUE(Call(w, 4, kS));
  // A fast success can ask a few times more per bucket (while the bucket's
  // successes are within the minimum), never fewer; past that it is free.
  Call(w, 5, kS);
  Call(w, 6, kS);
  EXPECT_TRUE(Call(w, 7, kS)) << "4th success of the bucket";
  EXPECT_FALSE(Call(w, 8, kS));
  EXPECT_FALSE(Call(w, 9, kS));
  EXPECT_TRUE(Call(w, 10, kF)) << "failures always ask";
  EXPECT_TRUE(Call(w, 11, kSlowS)) << "slow calls always ask";
  EXPECT_FALSE(Call(w, 12, kX)) << "an exclusion never raises a rate";
}

TEST(TimeWindowTest, ReachingTheMinimumAgainAfterABucketLeftAsks) {
  // Bucket 0 holds many successes; it leaves; the window has fewer calls
  // than the minimum and climbs back to it in the middle of bucket 10.
  TimeWindow w(kSec, 10, 0, /*calls_to_decide=*/4);
  for (int i = 0; i < 20; ++i) Call(w, i, kS);
  EXPECT_TRUE(Call(w, 9 * kSec, kS));
  EXPECT_TRUE(Call(w, 10 * kSec, kF));  // bucket 0 has left
  EXPECT_TRUE(Call(w, 10 * kSec + 1, kF));
  // Window: bucket 9 (1 S) and bucket 10 (F F S) = 4 calls, 50% failed.
  EXPECT_TRUE(Call(w, 10 * kSec + 2, kS));
  EXPECT_EQ(w.Read(10 * kSec + 2).calls, 4u);
}

TEST(TimeWindowTest, ASuccessReportedAfterABucketLeftAsks) {
  // No admission in the newer bucket: the report's own time tells that
  // bucket 0 left (a long call completing after it).
  TimeWindow w(kSec, 4, 0, /*calls_to_decide=*/2);
  for (int i = 0; i < 5; ++i) Call(w, 100 * kMs + i, kS);
  w.RecordAdmission(1'100 * kMs);
  for (int i = 0; i < 6; ++i) Call(w, 1'200 * kMs + i, kS);
  EXPECT_FALSE(w.Record(1'100 * kMs, 1'900 * kMs, kS)) << "nothing left yet";
  w.RecordAdmission(1'950 * kMs);
  EXPECT_TRUE(w.Record(1'950 * kMs, 4'200 * kMs, kS))
      << "bucket 0 left between the admission and the report";
  EXPECT_EQ(w.Read(4'200 * kMs).calls, 8u) << "bucket 1: 6 + 2 late successes";
}

TEST(TimeWindowTest, ASuccessReportedAfterTheClockSteppedBackAsks) {
  TimeWindow w(kSec, 4, 0, /*calls_to_decide=*/2);
  for (int i = 0; i < 5; ++i) Call(w, 3'100 * kMs + i, kS);
  EXPECT_FALSE(Call(w, 3'200 * kMs, kS));
  // The clock steps back to 2.5 s: a window read there is another one.
  EXPECT_TRUE(Call(w, 2'500 * kMs, kS));
}

TEST(TimeWindowTest, WithoutARuleSuccessesNeverAsk) {
  TimeWindow w(kSec, 10, 0);  // kNeverDecides
  for (int64_t t : {int64_t{0}, kSec, 2 * kSec, 2 * kSec + 1}) {
    EXPECT_FALSE(Call(w, t, kS)) << t;
  }
  w.RecordAdmission(3 * kSec);
  EXPECT_FALSE(w.Record(2 * kSec, 3 * kSec, kS)) << "no note without a rule";
  EXPECT_TRUE(Call(w, 3 * kSec, kF));
}

// ---- Time window: extremes ----

TEST(TimeWindowTest, OriginAtTheSmallestInstant) {
  TimeWindow w(kSec, 10, kMin);
  Call(w, kMin, kF);
  EXPECT_EQ(w.Read(kMin).failures, 1u);
  EXPECT_EQ(w.Read(kMin + 9 * kSec).failures, 1u);
  EXPECT_EQ(w.Read(kMin + 10 * kSec).failures, 0u);
  EXPECT_EQ(w.Read(kMax).failures, 0u);
  // 2^64 - 1 ns after the origin saturates to INT64_MAX ns: still a bucket.
  Call(w, kMax, kS);
  Call(w, kMax - 1, kS);
  EXPECT_EQ(w.Read(kMax).successes, 2u);
  EXPECT_EQ(w.Read(kMin).successes, 0u) << "before the newest bucket: 0";
}

TEST(TimeWindowTest, OriginAtTheLargestInstant) {
  // Every instant is at or before the origin: all of them are age 0.
  TimeWindow w(kSec, 10, kMax);
  Call(w, kMin, kS);
  Call(w, 0, kF);
  Call(w, kMax, kS);
  const WindowStats s = w.Read(kMin);
  EXPECT_EQ(s.requests, 3u);
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(w.Read(kMax).calls, 3u);
}

TEST(TimeWindowTest, NowAtBothEndsWithAnOriginInTheMiddle) {
  TimeWindow w(kSec, 10, 0);
  Call(w, kMin, kF);  // before the origin: age 0
  Call(w, kMax, kS);  // the last age there is
  EXPECT_EQ(w.Read(kMin).failures, 1u);
  EXPECT_EQ(w.Read(kMin).successes, 0u);
  EXPECT_EQ(w.Read(kMax).failures, 0u);
  EXPECT_EQ(w.Read(kMax).successes, 1u);
}

TEST(TimeWindowTest, OneBucketHoldsOnlyTheCurrentWidth) {
  TimeWindow w(kSec, 1, 0, /*calls_to_decide=*/1);
  EXPECT_TRUE(Call(w, 500 * kMs, kS));
  EXPECT_FALSE(Call(w, 600 * kMs, kS));
  EXPECT_EQ(w.Read(999 * kMs).calls, 2u);
  EXPECT_EQ(w.Read(kSec).calls, 0u);
  EXPECT_TRUE(Call(w, kSec, kS)) << "the one bucket, recycled";
  EXPECT_FALSE(w.Record(500 * kMs, kSec, kS)) << "its old age is gone";
  EXPECT_EQ(w.Read(kSec).calls, 1u);
}

TEST(TimeWindowTest, TenThousandBucketsOfOneNanosecond) {
  TimeWindow w(1, 10'000, 0);
  for (int64_t t = 0; t < 20'000; ++t) Call(w, t, t % 4 == 0 ? kF : kS);
  WindowStats s = w.Read(19'999);
  EXPECT_EQ(s.calls, 10'000u);
  EXPECT_EQ(s.requests, 10'000u);
  EXPECT_EQ(s.failures, 2'500u);
  EXPECT_EQ(w.Read(29'998).calls, 1u);
  // At the top of the range too.
  w.Reset(kMax - 5'000);
  for (int64_t t = kMax - 5'000; t < kMax; ++t) Call(w, t, kS);
  Call(w, kMax, kS);
  EXPECT_EQ(w.Read(kMax).calls, 5'001u);
}

TEST(TimeWindowTest, WidthAndBucketsOfZeroAreReadAsOne) {
  TimeWindow w(0, 0, 0);
  EXPECT_EQ(w.width_nanos(), 1);
  EXPECT_EQ(w.buckets(), 1u);
  Call(w, 7, kS);
  EXPECT_EQ(w.Read(7).calls, 1u);
  EXPECT_EQ(w.Read(8).calls, 0u);
}

// ---- Count window ----

// Reaching a rule's minimum on a success is the breaker's to count
// (BreakerCore::ReachedMinimum; RateRuleTest.* in
// circuit_breaker_policies_test): a count window asks for failures and
// slow calls only.
TEST(CountWindowTest, FastSuccessesNeverAskFailuresAndSlowCallsDo) {
  CountWindow w(4);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(w.Record(kS)) << i;
  EXPECT_TRUE(w.Record(kF));
  EXPECT_TRUE(w.Record(kSlowS));
  EXPECT_FALSE(w.Record(kS));
}

TEST(CountWindowTest, KeepsCallsFailuresAndSlowOnly) {
  CountWindow w(4);
  for (uint8_t o : {kF, kF, kSlowS, kS}) w.Record(o);
  EXPECT_FALSE(w.Record(kX)) << "an exclusion is not a call";
  EXPECT_FALSE(w.Record(static_cast<uint8_t>(kX | kOutcomeRecorded)));
  const WindowStats s = w.Read();
  EXPECT_EQ(s.calls, 4u) << "exclusions took no slot";
  EXPECT_EQ(s.failures, 2u);
  EXPECT_EQ(s.slow, 1u);
  EXPECT_EQ(s.requests, 0u);
  EXPECT_EQ(s.successes, 0u);
  EXPECT_EQ(s.exclusions, 0u);
  w.Record(kS);  // replaces the oldest failure
  EXPECT_EQ(w.Read().failures, 1u);
}

// ---- Window ----

TEST(WindowTest, TimeWindowStartsAtTheGivenOrigin) {
  Window w(SlidingWindow::Time(absl::Seconds(10), 10), 500 * kMs,
           kNeverDecides);
  EXPECT_TRUE(w.timed());
  w.RecordAdmission(500 * kMs);
  w.Record(500 * kMs, 500 * kMs, kS);
  EXPECT_EQ(w.Read(10'499 * kMs).requests, 1u);
  EXPECT_EQ(w.Read(10'500 * kMs).requests, 0u);
  w.Reset(20 * kSec);
  w.RecordAdmission(20'300 * kMs);
  EXPECT_EQ(w.Read(29'999 * kMs).requests, 1u);
  EXPECT_EQ(w.Read(30 * kSec).requests, 0u);
}

TEST(WindowTest, CountWindowAsksOnFailuresOnly) {
  Window w(SlidingWindow::Count(4), 0, 4);
  w.RecordAdmission(0);  // a count window counts no admissions
  EXPECT_TRUE(w.Record(0, 0, kF));
  EXPECT_FALSE(w.Record(0, 0, kS));
  EXPECT_TRUE(w.Record(0, 0, kSlowS));
  EXPECT_EQ(w.Read(0).calls, 3u);
  EXPECT_EQ(w.Read(0).requests, 0u);
}

TEST(WindowTest, NoWindowNeverAsks) {
  for (uint64_t minimum : {uint64_t{3}, kNeverDecides}) {
    Window w(SlidingWindow{}, 0, minimum);
    EXPECT_FALSE(w.active());
    for (uint8_t o : {kS, kF, kSlowS, kX}) EXPECT_FALSE(w.Record(0, 0, o));
  }
}

// ---- Concurrency ----

// What the writers have announced so far. Each writer announces a record,
// then a release fence, then makes it; the reader fences (acquire) after a
// read, so a read that saw a record's add also sees its announcement: every
// read is bounded by what had been announced.
struct Announced {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> failures{0};

  void Add(bool failed) {
    calls.fetch_add(1, std::memory_order_relaxed);
    if (failed) failures.fetch_add(1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
};

// Runs record(writer, i, failed) 20,000 times on each of 3 writers while
// this thread calls read(round) until they are done (the writers start
// after the first read, so the two overlap). Returns the rounds read, or 0
// as soon as read() returns false.
template <typename RecordFn, typename ReadFn>
uint64_t RaceWritersWithReader(Announced& announced, RecordFn record,
                               ReadFn read) {
  constexpr int kWriters = 3;
  constexpr int kCalls = 20'000;
  std::atomic<bool> go{false};
  std::atomic<int> running{kWriters};
  std::vector<std::thread> writers;
  for (int k = 0; k < kWriters; ++k) {
    writers.emplace_back([&, k] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < kCalls; ++i) {
        const bool failed = (i + k) % 4 == 0;
        announced.Add(failed);
        record(failed);
      }
      running.fetch_sub(1, std::memory_order_release);
    });
  }
  uint64_t rounds = 0;
  bool ok = true;
  do {
    ok = read(rounds);
    go.store(true, std::memory_order_release);
    ++rounds;
  } while (ok && running.load(std::memory_order_acquire) > 0);
  go.store(true, std::memory_order_release);
  for (std::thread& t : writers) t.join();
  return ok ? rounds : 0;
}

TEST(TimeWindowTest, ConcurrentRecordsResetsAndReadsNeverOvercount) {
  TimeWindow w(1'000, 10, 0, /*calls_to_decide=*/5);  // 1 us buckets
  std::atomic<int64_t> now{0};
  Announced announced;
  const uint64_t rounds = RaceWritersWithReader(
      announced,
      [&](bool failed) {
        const int64_t t = now.load(std::memory_order_relaxed);
        w.RecordAdmission(t);
        w.Record(t, t, failed ? kF : kS);
      },
      [&](uint64_t round) {
        // Time moves (buckets roll) and generations start under the writers.
        const int64_t t = now.fetch_add(137, std::memory_order_relaxed) + 137;
        if (round % 16 == 0) w.Reset(t);
        const WindowStats s = w.Read(t);
        std::atomic_thread_fence(std::memory_order_acquire);
        const uint64_t calls = announced.calls.load(std::memory_order_relaxed);
        EXPECT_LE(s.requests, calls);
        EXPECT_LE(s.calls, calls);
        EXPECT_LE(s.failures,
                  announced.failures.load(std::memory_order_relaxed));
        EXPECT_EQ(s.calls, s.successes + s.failures);
        EXPECT_EQ(s.exclusions, 0u);
        return !::testing::Test::HasFailure();
      });
  EXPECT_GT(rounds, 0u);
  // Quiescent: a fresh generation counts exactly.
  w.Reset(0);
  for (int i = 0; i < 7; ++i) Call(w, 5, i < 2 ? kF : kS);
  const WindowStats s = w.Read(5);
  EXPECT_EQ(s.requests, 7u);
  EXPECT_EQ(s.failures, 2u);
  EXPECT_EQ(s.successes, 5u);
}

TEST(CountWindowTest, ConcurrentRecordsResetsAndReadsNeverOvercount) {
  CountWindow w(64);
  Announced announced;
  const uint64_t rounds = RaceWritersWithReader(
      announced, [&](bool failed) { w.Record(failed ? kF : kS); },
      [&](uint64_t round) {
        if (round % 16 == 0) w.Reset();
        const WindowStats s = w.Read();
        std::atomic_thread_fence(std::memory_order_acquire);
        EXPECT_LE(s.calls, 64u);
        EXPECT_LE(s.calls, announced.calls.load(std::memory_order_relaxed));
        EXPECT_LE(s.failures,
                  announced.failures.load(std::memory_order_relaxed));
        EXPECT_LE(s.failures, s.calls);
        return !::testing::Test::HasFailure();
      });
  EXPECT_GT(rounds, 0u);
  w.Reset();
  for (int i = 0; i < 100; ++i) w.Record(i % 4 == 0 ? kF : kS);
  EXPECT_EQ(w.Read().calls, 64u);
  EXPECT_EQ(w.Read().failures, 16u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
