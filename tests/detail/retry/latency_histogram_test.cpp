// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/retry/latency_histogram.hpp: the bucket layout (monotonic,
// contiguous, a quarter octave wide), quantiles within a bucket's width of
// the truth on known distributions, min_samples, and the sliding window.

#include "degrade/detail/retry/latency_histogram.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(LatencyHistogramTest, BucketsAreContiguousMonotonicAndAQuarterOctave) {
  for (std::size_t i = 0; i + 1 < LatencyHistogram::kBuckets; ++i) {
    const uint64_t lo = LatencyHistogram::LowerBound(i);
    const uint64_t hi = LatencyHistogram::LowerBound(i + 1);
    ASSERT_LT(lo, hi) << i;
    if (i >= 4) {
      EXPECT_LE(4 * (hi - lo), lo) << i;
    }
    // The bucket of its own bounds: lo in i, hi - 1 still in i.
    const auto at = [](uint64_t units) {
      return LatencyHistogram::BucketOf(
          absl::Nanoseconds(static_cast<int64_t>(units) << 10));
    };
    EXPECT_EQ(at(lo), i);
    EXPECT_EQ(at(hi - 1), i);
  }
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::ZeroDuration()), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(-absl::Seconds(1)), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(absl::Hours(10)),
            LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogramTest, QuantilesOfAUniformSpreadAreWithinABucket) {
  LatencyHistogram h(absl::Seconds(10), kT0);
  for (int us = 1; us <= 100000; us += 10) {
    h.Record(kT0, absl::Microseconds(us));
  }
  for (double q : {0.5, 0.9, 0.95, 0.99}) {
    const std::optional<absl::Duration> got = h.Quantile(kT0, q, 1);
    ASSERT_TRUE(got.has_value());
    const double want_ms = 100 * q;
    EXPECT_NEAR(absl::ToDoubleMilliseconds(*got), want_ms, 0.1 * want_ms)
        << "q=" << q;
  }
}

TEST(LatencyHistogramTest, TheTailIsSeenNotAveragedAway) {
  LatencyHistogram h(absl::Seconds(10), kT0);
  for (int i = 0; i < 980; ++i) h.Record(kT0, absl::Milliseconds(10));
  for (int i = 0; i < 20; ++i) h.Record(kT0, absl::Milliseconds(100));
  EXPECT_LT(*h.Quantile(kT0, 0.95, 1), absl::Milliseconds(13));
  EXPECT_GT(*h.Quantile(kT0, 0.99, 1), absl::Milliseconds(80));
}

TEST(LatencyHistogramTest, TooFewSamplesGiveNoQuantile) {
  LatencyHistogram h(absl::Seconds(10), kT0);
  EXPECT_FALSE(h.Quantile(kT0, 0.5, 1).has_value());
  for (int i = 0; i < 9; ++i) h.Record(kT0, absl::Milliseconds(1));
  EXPECT_FALSE(h.Quantile(kT0, 0.5, 10).has_value());
  h.Record(kT0, absl::Milliseconds(1));
  EXPECT_TRUE(h.Quantile(kT0, 0.5, 10).has_value());
  EXPECT_EQ(h.count(kT0), 10u);
}

TEST(LatencyHistogramTest, TheEstimateFollowsTheRouteAsTheWindowSlides) {
  LatencyHistogram h(absl::Seconds(10), kT0);
  for (int i = 0; i < 100; ++i) h.Record(kT0, absl::Milliseconds(50));
  const absl::Time later = kT0 + absl::Seconds(10);
  for (int i = 0; i < 100; ++i) h.Record(later, absl::Milliseconds(5));
  const absl::Duration p50 = *h.Quantile(later, 0.5, 1);
  EXPECT_LT(p50, absl::Milliseconds(7));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
