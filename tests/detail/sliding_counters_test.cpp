// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/sliding_counters.hpp: what a sum covers as time slides
// (slice by slice, never a whole window at once), stale adds, a clock set
// back, and concurrent adds racing slice restarts and sums (label
// concurrency, run under TSan).

#include "degrade/detail/sliding_counters.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(SlidingCountersTest, ASumForgetsOneSliceAtATime) {
  SlidingCounters<2> c(absl::Seconds(10), 10, kT0);
  for (int s = 0; s < 10; ++s) c.Add(kT0 + absl::Seconds(s), 0, 10);
  c.Add(kT0, 1, 3);
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(9))[0], 100u);
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(9))[1], 3u);
  // One slice old: the first second drops out, the rest stays.
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(10))[0], 90u);
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(10))[1], 0u);
  EXPECT_EQ(c.Sum(kT0 + absl::Milliseconds(14500))[0], 50u);
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(19))[0], 0u);
  EXPECT_EQ(c.slice_width(), absl::Seconds(1));
}

TEST(SlidingCountersTest, ARecycledSliceStartsFromZero) {
  SlidingCounters<1> c(absl::Seconds(10), 10, kT0);
  c.Add(kT0, 0, 7);
  c.Add(kT0 + absl::Seconds(10), 0, 1);  // the same slice, a window later
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(10))[0], 1u);
  // An add for the older age is dropped, not mixed into the newer one.
  c.Add(kT0, 0, 5);
  EXPECT_EQ(c.Sum(kT0 + absl::Seconds(10))[0], 1u);
}

TEST(SlidingCountersTest, TimesBeforeTheOriginCountInTheFirstSlice) {
  SlidingCounters<1> c(absl::Seconds(10), 10, kT0);
  c.Add(kT0 - absl::Hours(1), 0);
  EXPECT_EQ(c.Sum(kT0)[0], 1u);
  EXPECT_EQ(c.Sum(kT0 - absl::Hours(1))[0], 1u);
}

TEST(SlidingCountersTest, ConcurrentAddsAndSumsLoseNothingWithinASlice) {
  SlidingCounters<2> c(absl::Seconds(10), 10, kT0);
  constexpr int kThreads = 4, kAdds = 20000;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) (void)c.Sum(kT0 + absl::Seconds(5));
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&c, t] {
      for (int i = 0; i < kAdds; ++i) {
        // Every thread walks the same seconds, so slices are restarted
        // while the others add.
        c.Add(kT0 + absl::Milliseconds(i / 4), static_cast<std::size_t>(t % 2));
      }
    });
  }
  for (auto& w : writers) w.join();
  stop.store(true);
  reader.join();
  const auto sums = c.Sum(kT0 + absl::Milliseconds(kAdds / 4));
  // Restarts happen once per slice, before any add of that slice's age
  // counts: all adds land.
  EXPECT_EQ(sums[0] + sums[1], uint64_t{kThreads * kAdds});
}

}  // namespace
}  // namespace detail
}  // namespace degrade
