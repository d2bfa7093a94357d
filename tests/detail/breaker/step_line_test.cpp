// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of detail/breaker/step_line.hpp: the line a breaker on a clock other
// than RealClock runs its timers on. A step back below the last arming is
// no time passing; forward steps count; the infinite readings pass through;
// readers racing over one step absorb it once (a Concurrency test, for
// TSan).

#include "degrade/detail/breaker/step_line.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "degrade/detail/saturating.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using detail::kSatMaxNanos;
using detail::kSatMinNanos;
using detail::StepLine;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSecond;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

TEST(StepLineTest, ReadingsPassThroughUntilTheClockStepsBelowTheFloor) {
  StepLine line;
  EXPECT_EQ(line.Read(kT0), kT0);
  line.ArmedAt(kT0);
  EXPECT_EQ(line.Read(kT0 + kSecond), kT0 + kSecond);
  EXPECT_EQ(line.Read(kT0), kT0);  // back, but not below the floor
}

TEST(StepLineTest, AStepBackBelowTheFloorIsNoTimeAndTheLineRunsOnFromIt) {
  StepLine line;
  line.ArmedAt(kT0);
  EXPECT_EQ(line.Read(kT0 - kHour), kT0);  // the step: no time passing
  EXPECT_EQ(line.Read(kT0 - kHour + 10 * kSecond), kT0 + 10 * kSecond);
  EXPECT_EQ(line.FromClock(kT0 - kHour + kSecond), kT0 + kSecond);
  EXPECT_EQ(line.ToClock(kT0 + kSecond), kT0 - kHour + kSecond);
  // A second step is absorbed on top of the first.
  line.ArmedAt(kT0 + 10 * kSecond);
  EXPECT_EQ(line.Read(kT0 - 2 * kHour), kT0 + 10 * kSecond);
  EXPECT_EQ(line.Read(kT0 - 2 * kHour + kSecond), kT0 + 11 * kSecond);
}

TEST(StepLineTest, ForwardStepsCountAndTheInfiniteReadingsPassThrough) {
  StepLine line;
  line.ArmedAt(kT0);
  const int64_t far = kT0 + 100 * 365 * 24 * kHour;
  EXPECT_EQ(line.Read(far), far);
  EXPECT_EQ(line.Read(kSatMaxNanos), kSatMaxNanos);
  EXPECT_EQ(line.Read(kSatMinNanos), kSatMinNanos);
  line.ArmedAt(kSatMaxNanos);  // not a real time: not a floor
  EXPECT_EQ(line.Read(kT0), kT0);
  EXPECT_EQ(line.FromClock(kSatMaxNanos), kSatMaxNanos);
  EXPECT_EQ(line.ToClock(kSatMaxNanos), kSatMaxNanos);
  // A step back from near the bottom of the range saturates, never wraps.
  line.ArmedAt(kSatMaxNanos - 1);
  EXPECT_EQ(line.Read(kSatMinNanos + 1), kSatMaxNanos - 1);
}

TEST(StepLineConcurrencyTest, ReadersMeetingOneStepAbsorbItOnce) {
  for (int round = 0; round < 50; ++round) {
    StepLine line;
    line.ArmedAt(kT0);
    std::atomic<bool> go{false};
    std::vector<std::thread> readers;
    std::vector<int64_t> seen(4);
    for (int t = 0; t < 4; ++t) {
      readers.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) {
        }
        seen[static_cast<std::size_t>(t)] = line.Read(kT0 - kHour);
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& r : readers) r.join();
    for (int64_t s : seen) EXPECT_EQ(s, kT0);
    EXPECT_EQ(line.Read(kT0 - kHour + kSecond), kT0 + kSecond)
        << "the step was absorbed more than once";
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
