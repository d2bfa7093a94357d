// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// LatencyTracker and InFlightGauge, alone and as sources of a manager
// (ThreeLevels() on a FakeClock), and under threads: records racing polls
// and folds, tokens entered and released on many threads. Labelled
// `concurrency`, so it also runs under ThreadSanitizer. No timing is
// asserted.

#include "degrade/signals.hpp"

#include <atomic>
#include <cmath>
#include <functional>
#include <iomanip>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "degrade/degradation_manager.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "manager_test_util.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

class LatencyTrackerTest : public ManagerTestBase {};
class InFlightGaugeTest : public ManagerTestBase {};

// ---- LatencyTracker --------------------------------------------------------

TEST_F(LatencyTrackerTest, AverageIsTheMeanSinceLastPoll) {
  LatencyTracker t(LatencyTracker::Kind::kAverage);
  EXPECT_EQ(t.TakeMillis(), 0.0);
  t.Record(absl::Milliseconds(10));
  t.Record(absl::Milliseconds(20));
  t.Record(absl::Microseconds(31500));
  EXPECT_DOUBLE_EQ(t.TakeMillis(), 20.5);
  EXPECT_EQ(t.TakeMillis(), 0.0);    // nothing since the last poll
  t.Record(absl::Milliseconds(-5));  // negative counts as 0
  t.Record(absl::Milliseconds(4));
  std::function<double()> source = t.Source();
  EXPECT_DOUBLE_EQ(source(), 2.0);
}

TEST_F(LatencyTrackerTest, EwmaFoldsEachPollsMean) {
  LatencyTracker t(LatencyTracker::Kind::kEwma, 0.5);
  EXPECT_EQ(t.TakeMillis(), 0.0);  // no sample ever
  t.Record(absl::Milliseconds(10));
  EXPECT_DOUBLE_EQ(t.TakeMillis(), 10.0);  // the first mean seeds it
  t.Record(absl::Milliseconds(20));
  t.Record(absl::Milliseconds(40));
  EXPECT_DOUBLE_EQ(t.TakeMillis(), 0.5 * 30.0 + 0.5 * 10.0);
  EXPECT_DOUBLE_EQ(t.TakeMillis(), 20.0);  // unchanged with no samples
  t.Record(absl::Milliseconds(60));
  EXPECT_DOUBLE_EQ(t.TakeMillis(), 40.0);
}

TEST_F(LatencyTrackerTest, ReplacesAnOutOfRangeAlpha) {
  // alpha 1 keeps only the latest mean.
  LatencyTracker one(LatencyTracker::Kind::kEwma, 1.0);
  one.Record(absl::Milliseconds(10));
  (void)one.TakeMillis();
  one.Record(absl::Milliseconds(30));
  EXPECT_DOUBLE_EQ(one.TakeMillis(), 30.0);
  // Outside (0, 1]: replaced by 0.3.
  for (const double bad : {7.0, 0.0, -1.0, std::nan("")}) {
    LatencyTracker t(LatencyTracker::Kind::kEwma, bad);
    t.Record(absl::Milliseconds(10));
    (void)t.TakeMillis();
    t.Record(absl::Milliseconds(20));
    EXPECT_DOUBLE_EQ(t.TakeMillis(), 0.3 * 20.0 + 0.7 * 10.0) << bad;
  }
}

TEST_F(LatencyTrackerTest, NeverReportsANegativeMean) {
  // An "infinite" latency (e.g. a deadline of absl::InfiniteDuration() that
  // was measured) must not wrap the nanosecond sum around.
  LatencyTracker t;
  t.Record(absl::InfiniteDuration());
  t.Record(absl::Milliseconds(1));
  const double mean = t.TakeMillis();
  EXPECT_GT(mean, 1.0);
  LatencyTracker huge;
  huge.Record(absl::Hours(24 * 365 * 200));  // each fits in int64 ns
  huge.Record(absl::Hours(24 * 365 * 200));
  EXPECT_GT(huge.TakeMillis(), 0.0);
}

TEST_F(LatencyTrackerTest, FeedsTheManager) {
  auto m = Make();
  LatencyTracker t;
  m->AddSource("gpu", t.Source());
  t.Record(absl::Milliseconds(90));
  t.Record(absl::Milliseconds(100));
  ASSERT_TRUE(m->PollOnce().ok());
  EXPECT_EQ(m->signal_value("gpu"), 95.0);
  EXPECT_EQ(m->level(), 3);
}

// Every recorded duration is exactly 1 ms, so every poll must report either
// 0 (nothing recorded since the last poll) or exactly 1 ms: a mean of
// identical samples is that sample, whichever interval each one lands in.
TEST_F(LatencyTrackerTest, AverageOfEqualSamplesIsThatSampleWhilePolled) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  std::atomic<bool> done{false};
  std::vector<std::thread> recorders;
  for (int t = 0; t < 3; ++t) {
    recorders.emplace_back([&] {
      for (int i = 0; i < 1000000; ++i) tracker.Record(absl::Milliseconds(1));
    });
  }
  std::vector<double> odd;
  std::thread poller([&] {
    while (!done.load(std::memory_order_relaxed)) {
      const double v = tracker.TakeMillis();
      if (v != 0.0 && v != 1.0 && odd.size() < 5) odd.push_back(v);
    }
  });
  for (std::thread& r : recorders) r.join();
  done = true;
  poller.join();
  const double last = tracker.TakeMillis();
  if (last != 0.0 && last != 1.0 && odd.size() < 5) odd.push_back(last);
  EXPECT_TRUE(odd.empty()) << "means of 1 ms samples: "
                           << ::testing::PrintToString(odd);
}

// Recorders race the fold of the packed word into the wide totals (every
// 2^19 samples without a poll, so about twice here): an exchange that lost
// a concurrent add would shift the mean. 1, 2 and 3 ms in equal numbers
// average to exactly 2 ms.
TEST_F(LatencyTrackerTest, RecordsRacingAFoldLoseNothing) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  constexpr int kPerThread = 400000;
  std::vector<std::thread> recorders;
  for (int ms = 1; ms <= 3; ++ms) {
    recorders.emplace_back([&tracker, ms] {
      for (int i = 0; i < kPerThread; ++i) {
        tracker.Record(absl::Milliseconds(ms));
      }
    });
  }
  for (std::thread& r : recorders) r.join();
  EXPECT_EQ(tracker.TakeMillis(), 2.0);
  EXPECT_EQ(tracker.TakeMillis(), 0.0);  // all of it was consumed
}

// Issue 13 (packed counters): the word packing the count and the sum must
// never carry one into the other. Adding a sample that would reach either
// fold threshold is refused (0), so the caller folds instead.
TEST_F(LatencyTrackerTest, PackedAddNeverCrossesAFoldThreshold) {
  constexpr uint64_t kOneCount = uint64_t{1} << 44;
  constexpr uint64_t kMaxSample = uint64_t{1} << 40;
  struct Case {
    uint64_t word;
    uint64_t us;
    uint64_t want;
  };
  const Case cases[] = {
      {0, 0, kOneCount},
      {0, 1000, kOneCount | 1000},
      {0, kMaxSample, kOneCount | kMaxSample},
      // The sum one sample short of 2^43, then reaching it.
      {kOneCount * 7 | (7 * kMaxSample), kMaxSample - 1,
       kOneCount * 8 | (8 * kMaxSample - 1)},
      {kOneCount * 7 | (7 * kMaxSample), kMaxSample, 0},
      // The count one short of 2^19, then reaching it.
      {kOneCount * ((uint64_t{1} << 19) - 2), 5,
       kOneCount * ((uint64_t{1} << 19) - 1) | 5},
      {kOneCount * ((uint64_t{1} << 19) - 1), 5, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << std::hex << c.word << " + " << c.us);
    EXPECT_EQ(LatencyTracker::PackedAdd(c.word, c.us), c.want);
  }
}

// Sixteen threads record saturated samples (InfiniteDuration is clamped to
// 2^40 us): eight of them fill the packed sum to its fold threshold, so
// with a fetch_add, adds racing the fold could carry the sum into the
// count. Every sample is equal, so every poll must report exactly it.
TEST_F(LatencyTrackerTest, ConcurrentSaturatedSamplesNeverCarry) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  const double saturated_ms = static_cast<double>(uint64_t{1} << 40) / 1000.0;
  std::atomic<bool> go{false};
  std::vector<std::thread> recorders;
  for (int t = 0; t < 16; ++t) {
    recorders.emplace_back([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int i = 0; i < 100000; ++i) {
        tracker.Record(absl::InfiniteDuration());
      }
    });
  }
  // The mean is one correctly rounded division of exact operands, so it is
  // exactly the sample; a carry would move it by orders of magnitude (the
  // sum losing 2^44 us while the count gains one).
  const auto is_sample = [&](double v) { return v == saturated_ms; };
  std::vector<double> odd;
  go.store(true, std::memory_order_release);
  for (int i = 0; i < 200; ++i) {
    const double v = tracker.TakeMillis();
    if (v != 0.0 && !is_sample(v) && odd.size() < 5) odd.push_back(v);
  }
  for (std::thread& r : recorders) r.join();
  const double last = tracker.TakeMillis();
  if (!is_sample(last) && odd.size() < 5) odd.push_back(last);
  ::testing::Message shown;
  shown << std::setprecision(17);
  for (double v : odd) shown << v << " ";
  EXPECT_TRUE(odd.empty()) << "means other than the sample " << saturated_ms
                           << ": " << shown;
}

// The mean was sum / 1000 / count, rounded twice: three samples of 2^40 us
// averaged to 1099511627.7759998 ms. Equal samples must average to exactly
// the sample, through the packed word and through the fold (eight such
// samples reach the fold threshold).
TEST_F(LatencyTrackerTest, MeanOfEqualSaturatedSamplesIsExact) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  const absl::Duration sample = absl::Microseconds(int64_t{1} << 40);
  // Counts the two roundings got wrong (71, 141, 283, 563) and others.
  for (int n : {1, 2, 3, 7, 8, 9, 71, 141, 283, 563, 1000}) {
    for (int i = 0; i < n; ++i) tracker.Record(sample);
    const double mean = tracker.TakeMillis();
    EXPECT_EQ(mean, 1099511627.776)
        << n << " samples: " << std::setprecision(17) << mean;
  }
  for (int n = 1; n <= 40; ++n) {
    for (int i = 0; i < n; ++i) tracker.Record(absl::Microseconds(3));
    const double mean = tracker.TakeMillis();
    EXPECT_EQ(mean, 0.003) << n << " samples: " << std::setprecision(17)
                           << mean;
  }
}

// ---- InFlightGauge ---------------------------------------------------------

TEST_F(InFlightGaugeTest, TokensCountUntilDestroyed) {
  InFlightGauge g;
  EXPECT_EQ(g.current(), 0);
  {
    InFlightGauge::Token a = g.Enter();
    EXPECT_EQ(g.current(), 1);
    InFlightGauge::Token b = std::move(a);  // a move is not a new request
    EXPECT_EQ(g.current(), 1);
    InFlightGauge::Token c = g.Enter();
    EXPECT_EQ(g.current(), 2);
    c = std::move(b);  // c's own count is released
    EXPECT_EQ(g.current(), 1);
    InFlightGauge::Token& same = c;
    c = std::move(same);  // self-move keeps it
    EXPECT_EQ(g.current(), 1);
    EXPECT_EQ(g.Source()(), 1.0);
  }
  EXPECT_EQ(g.current(), 0);
}

TEST_F(InFlightGaugeTest, FeedsTheManager) {
  auto m = Make();
  InFlightGauge g;
  m->AddSource("queue", g.Source());
  std::vector<InFlightGauge::Token> tokens;
  for (int i = 0; i < 200; ++i) tokens.push_back(g.Enter());
  ASSERT_TRUE(m->PollOnce().ok());
  EXPECT_EQ(m->level(), 2);
  tokens.clear();
  ASSERT_TRUE(m->PollOnce().ok());
  EXPECT_EQ(m->signal_value("queue"), 0.0);
}

TEST_F(InFlightGaugeTest, TokensBalanceAcrossThreads) {
  InFlightGauge gauge;
  std::atomic<bool> done{false};
  std::atomic<int> negative{0};
  std::thread reader([&] {
    const std::function<double()> source = gauge.Source();
    while (!done.load(std::memory_order_relaxed)) {
      if (source() < 0.0) ++negative;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      std::vector<InFlightGauge::Token> held;
      for (int i = 0; i < 20000; ++i) {
        InFlightGauge::Token token = gauge.Enter();
        if (i % 3 == 0) {
          held.push_back(std::move(token));
        } else if (i % 3 == 1 && !held.empty()) {
          held.back() = std::move(token);  // releases the old one
        }
        if (held.size() > 16) held.clear();
      }
    });
  }
  for (std::thread& w : workers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(negative.load(), 0);
  EXPECT_EQ(gauge.current(), 0);
}
}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
