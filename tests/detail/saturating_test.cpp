// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/saturating.hpp: tables of every operation at the ends of its range
// (the int64 limits, the infinite instants and durations, zero, 1 ns and
// steps backwards), each row the exact result, so that the library can lean
// on these helpers wherever it adds, subtracts or scales time.

#include "degrade/detail/saturating.hpp"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct NanosRow {
  int64_t a;
  int64_t b;
  int64_t want;
};

TEST(SaturatingTest, AddNanosClampsAtBothEnds) {
  static_assert(SatAddNanos(kMax, 1) == kMax, "constexpr");
  const std::vector<NanosRow> rows = {
      {0, 0, 0},           {1, 2, 3},          {-1, -2, -3},
      {kMax, 1, kMax},     {kMax, kMax, kMax}, {kMax - 1, 1, kMax},
      {kMin, -1, kMin},    {kMin, kMin, kMin}, {kMin + 1, -1, kMin},
      {kMax, kMin, -1},    {kMin, kMax, -1},   {kMax, -1, kMax - 1},
      {kMin, 1, kMin + 1}, {kMax - 5, 3, kMax - 2},
  };
  for (const NanosRow& r : rows) {
    EXPECT_EQ(SatAddNanos(r.a, r.b), r.want) << r.a << " + " << r.b;
    EXPECT_EQ(SatAddNanos(r.b, r.a), r.want) << r.b << " + " << r.a;
  }
}

TEST(SaturatingTest, SubNanosClampsAtBothEnds) {
  const std::vector<NanosRow> rows = {
      {0, 0, 0},        {3, 2, 1},           {2, 3, -1},
      {kMax, -1, kMax}, {kMax, kMin, kMax},  {kMin, 1, kMin},
      {kMin, kMax, kMin}, {0, kMin, kMax},   {-1, kMin, kMax},
      {0, kMax, -kMax}, {kMin, kMin, 0},     {kMax, kMax, 0},
      {kMax - 1, -1, kMax}, {kMin + 1, 1, kMin}, {kMin + 1, 2, kMin},
  };
  for (const NanosRow& r : rows) {
    EXPECT_EQ(SatSubNanos(r.a, r.b), r.want) << r.a << " - " << r.b;
  }
}

TEST(SaturatingTest, MulNanosClampsWithTheProductsSign) {
  const std::vector<NanosRow> rows = {
      {0, kMax, 0},
      {kMin, 0, 0},
      {7, 6, 42},
      {-7, 6, -42},
      {7, -6, -42},
      {-7, -6, 42},
      {kMax, 1, kMax},
      {kMax, -1, -kMax},
      {kMin, 1, kMin},
      {kMin, -1, kMax},  // |INT64_MIN| does not fit: clamped
      {kMax, 2, kMax},
      {kMax, -2, kMin},
      {kMin, 2, kMin},
      {kMin, -2, kMax},
      {kMin / 2, 2, kMin},       // exactly INT64_MIN, not clamped
      {kMin / 2, -2, kMax},      // 2^63: one past the top
      {(kMax / 2) + 1, 2, kMax}, // 2^63 again
      {kMax / 2, 2, kMax - 1},
      {1'000'000'000, 9'223'372'037, kMax},  // ~292 years in seconds
      {1'000'000'000, 9'223'372'036, 9'223'372'036'000'000'000},
      {-1'000'000'000, 9'223'372'037, kMin},
  };
  for (const NanosRow& r : rows) {
    EXPECT_EQ(SatMulNanos(r.a, r.b), r.want) << r.a << " * " << r.b;
    EXPECT_EQ(SatMulNanos(r.b, r.a), r.want) << r.b << " * " << r.a;
  }
}

TEST(SaturatingTest, ElapsedNanosIsNeverNegativeAndClampsAtTheTop) {
  const std::vector<NanosRow> rows = {
      {5, 3, 2},           {3, 5, 0},       {3, 3, 0},
      {kMax, kMin, kMax},  {kMin, kMax, 0}, {kMax, kMax, 0},
      {kMin, kMin, 0},     {0, kMin, kMax}, {-1, kMin, kMax},
      {kMax, 0, kMax},     {kMax, -1, kMax},
      {kMin + 1, kMin, 1}, {kMax, kMax - 1, 1},
  };
  for (const NanosRow& r : rows) {
    EXPECT_EQ(ElapsedNanosSince(r.a, r.b), r.want)
        << "since " << r.b << " at " << r.a;
  }
}

struct TimeRow {
  absl::Time t;
  absl::Duration d;
  absl::Time want;
};

TEST(SaturatingTest, AddTimeBecomesInfiniteBeyondTheRange) {
  const absl::Time epoch = absl::UnixEpoch();
  const absl::Time past = absl::InfinitePast();
  const absl::Time future = absl::InfiniteFuture();
  const absl::Duration inf = absl::InfiniteDuration();
  const absl::Duration max_d = absl::Seconds(kMax);  // the largest finite
  const std::vector<TimeRow> rows = {
      {epoch, absl::ZeroDuration(), epoch},
      {epoch, absl::Nanoseconds(1), absl::FromUnixNanos(1)},
      {epoch, -absl::Nanoseconds(1), absl::FromUnixNanos(-1)},
      {epoch, inf, future},
      {epoch, -inf, past},
      {future, -inf, future},  // an infinite instant absorbs
      {past, inf, past},
      {future, -absl::Hours(24 * 365 * 300), future},
      {past, absl::Hours(24 * 365 * 300), past},
      {epoch + max_d, max_d, future},
      {epoch - max_d, -max_d, past},
  };
  for (const TimeRow& r : rows) {
    EXPECT_EQ(SatAdd(r.t, r.d), r.want) << r.t << " + " << r.d;
  }
}

TEST(SaturatingTest, SubAndElapsedBetweenInstants) {
  const absl::Time epoch = absl::UnixEpoch();
  const absl::Time past = absl::InfinitePast();
  const absl::Time future = absl::InfiniteFuture();
  const absl::Duration inf = absl::InfiniteDuration();
  const absl::Time far = epoch + absl::Seconds(kMax);
  const absl::Time far_back = epoch - absl::Seconds(kMax);
  struct Row {
    absl::Time a;
    absl::Time b;
    absl::Duration sub;      // a - b
    absl::Duration elapsed;  // since b at a
  };
  const std::vector<Row> rows = {
      {epoch, epoch, absl::ZeroDuration(), absl::ZeroDuration()},
      {epoch + absl::Nanoseconds(1), epoch, absl::Nanoseconds(1),
       absl::Nanoseconds(1)},
      // A clock stepped back one nanosecond: no time has passed.
      {epoch, epoch + absl::Nanoseconds(1), -absl::Nanoseconds(1),
       absl::ZeroDuration()},
      {future, epoch, inf, inf},
      {epoch, future, -inf, absl::ZeroDuration()},
      {epoch, past, inf, inf},
      {past, epoch, -inf, absl::ZeroDuration()},
      {future, past, inf, inf},
      {past, future, -inf, absl::ZeroDuration()},
      // The same infinite instant twice: absl says infinite, elapsed says 0.
      {future, future, inf, absl::ZeroDuration()},
      {past, past, -inf, absl::ZeroDuration()},
      // Two finite instants further apart than any finite duration.
      {far, far_back, inf, inf},
      {far_back, far, -inf, absl::ZeroDuration()},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(SatSub(r.a, r.b), r.sub) << r.a << " - " << r.b;
    EXPECT_EQ(ElapsedSince(r.a, r.b), r.elapsed) << "since " << r.b << " at "
                                                 << r.a;
    EXPECT_GE(ElapsedSince(r.a, r.b), absl::ZeroDuration());
  }
}

TEST(SaturatingTest, MulDurationBecomesInfiniteBeyondTheRange) {
  const absl::Duration inf = absl::InfiniteDuration();
  struct Row {
    absl::Duration d;
    int64_t k;
    absl::Duration want;
  };
  const std::vector<Row> rows = {
      {absl::Seconds(3), 0, absl::ZeroDuration()},
      {absl::Seconds(3), 4, absl::Seconds(12)},
      {absl::Seconds(3), -4, absl::Seconds(-12)},
      {absl::Nanoseconds(1), kMax, absl::Nanoseconds(kMax)},
      {absl::Hours(24 * 365), kMax, inf},
      {absl::Hours(24 * 365), kMin, -inf},
      {-absl::Hours(24 * 365), kMin, inf},
      {inf, 2, inf},
      {inf, -2, -inf},
      {-inf, -2, inf},
      {inf, 0, inf},  // infinity stays infinite, even times zero
      {absl::Seconds(kMax), 2, inf},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(SatMul(r.d, r.k), r.want) << r.d << " * " << r.k;
  }
}

TEST(SaturatingTest, RemainingUntilAndDeadlineReachedAgree) {
  const absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  const absl::Time past = absl::InfinitePast();
  const absl::Time future = absl::InfiniteFuture();
  const absl::Duration inf = absl::InfiniteDuration();
  struct Row {
    absl::Time deadline;
    absl::Time now;
    absl::Duration remaining;
  };
  const std::vector<Row> rows = {
      {t, t - absl::Seconds(2), absl::Seconds(2)},
      {t, t, absl::ZeroDuration()},
      {t, t + absl::Hours(1), absl::ZeroDuration()},
      {t, past, inf},
      {t, future, absl::ZeroDuration()},
      {future, t, inf},
      {future, future, inf},  // no deadline, whatever the clock reads
      {future, past, inf},
      {past, t, absl::ZeroDuration()},
      {past, past, absl::ZeroDuration()},
      {past, future, absl::ZeroDuration()},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(RemainingUntil(r.deadline, r.now), r.remaining)
        << r.deadline << " at " << r.now;
    EXPECT_EQ(DeadlineReached(r.deadline, r.now),
              r.remaining == absl::ZeroDuration())
        << r.deadline << " at " << r.now;
  }
}

TEST(SaturatingTest, SteadyTimeCountsOnlyForwardFiniteSteps) {
  const absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  SteadyTime s;
  EXPECT_EQ(s.Advance(t), t);
  EXPECT_EQ(s.Advance(t + absl::Seconds(30)), t + absl::Seconds(30));
  // Stepped back an hour: no time passes, and what had run is kept.
  EXPECT_EQ(s.Advance(t - absl::Hours(1)), t + absl::Seconds(30));
  EXPECT_EQ(s.Advance(t - absl::Hours(1) + absl::Seconds(30)),
            t + absl::Seconds(60));
  // Infinite readings are no time passing, and neither is the way back.
  EXPECT_EQ(s.Advance(absl::InfiniteFuture()), t + absl::Seconds(60));
  EXPECT_EQ(s.Advance(absl::InfinitePast()), t + absl::Seconds(60));
  EXPECT_EQ(s.Advance(t - absl::Hours(1) + absl::Seconds(40)),
            t + absl::Seconds(70));
  EXPECT_EQ(s.now(), t + absl::Seconds(70));
}

TEST(SaturatingTest, SteadyTimeStartingAtAnInfiniteReading) {
  const absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  SteadyTime s;
  EXPECT_EQ(s.Advance(absl::InfinitePast()), absl::UnixEpoch());
  EXPECT_EQ(s.Advance(t), absl::UnixEpoch());  // no time passed
  EXPECT_EQ(s.Advance(t + absl::Seconds(5)),
            absl::UnixEpoch() + absl::Seconds(5));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
