// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/overload/codel.hpp alone, without a queue, a lock or a clock: each
// case is a script of head-age observations (and drains) at explicit nanosecond
// times, each step stating whether the queue must be overloaded after it.
// The CoDel here is the request-server one of docs/overload/queue.md
// (folly's, "Fail at Scale"): an interval whose minimum head age stayed
// above the target makes the next interval overloaded, a head older than
// target + interval does so at once, and an overloaded queue sloughs
// whatever is older than 2 x target. It has no drop count and no
// interval/sqrt(count) control law, so nothing here looks for one.
//
// Also the rest of the header: the batch service-time estimate and its
// probe, the sojourn histogram's bucket, the wait arithmetic at the
// infinities, and the queue-shape checks.

#include "degrade/detail/overload/codel.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMs = 1000 * 1000;
// The queue's defaults: target 5 ms, interval 100 ms; the slough timeout is
// then 10 ms and a head older than 105 ms is a stall.
constexpr int64_t kTarget = 5 * kMs;
constexpr int64_t kInterval = 100 * kMs;
constexpr int64_t kStall = kTarget + kInterval;

enum class Op { kObserve, kDrained };

struct Step {
  Op op;
  int64_t now;
  int64_t head_age;  // unused for kDrained
  bool overloaded;   // after the step
};

Step Obs(int64_t now, int64_t age, bool overloaded) {
  return {Op::kObserve, now, age, overloaded};
}
Step Drain(int64_t now) { return {Op::kDrained, now, 0, false}; }

struct CodelCase {
  const char* name;
  std::vector<Step> steps;
};

TEST(CodelStateTest, IntervalAndTargetTransitions) {
  const std::vector<CodelCase> cases = {
      {"nothing observed yet is not overloaded", {}},
      {"the first observation above target is not overload",
       {Obs(0, 50 * kMs, false), Obs(50 * kMs, 50 * kMs, false),
        Obs(kInterval - 1, 50 * kMs, false)}},
      {"a whole interval above target: overloaded exactly at its end",
       {Obs(0, kTarget + 1, false), Obs(kInterval - 1, kTarget + 1, false),
        Obs(kInterval, kTarget + 1, true)}},
      {"a minimum exactly at the target is not above it",
       {Obs(0, kTarget, false), Obs(50 * kMs, 80 * kMs, false),
        Obs(kInterval, 80 * kMs, false)}},
      {"one dip to the target within the interval keeps it calm",
       {Obs(0, 50 * kMs, false), Obs(40 * kMs, kTarget, false),
        Obs(60 * kMs, 50 * kMs, false), Obs(kInterval, 50 * kMs, false)}},
      {"an observation below target never clears mid-interval",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true),
        Obs(150 * kMs, 0, true), Obs(2 * kInterval - 1, 0, true)}},
      {"leaving: the next interval whose minimum is at or below target",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true),
        Obs(150 * kMs, 3 * kMs, true), Obs(2 * kInterval, 6 * kMs, false)}},
      {"staying: each interval above target keeps it overloaded",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true),
        Obs(2 * kInterval, 7 * kMs, true), Obs(3 * kInterval, 8 * kMs, true),
        Obs(4 * kInterval, 1 * kMs, true), Obs(5 * kInterval, 1 * kMs, false)}},
      {"re-entry after leaving takes a whole interval above target again",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true),
        Obs(150 * kMs, 1 * kMs, true), Obs(2 * kInterval, 6 * kMs, false),
        Obs(3 * kInterval - 1, 6 * kMs, false),
        Obs(3 * kInterval, 6 * kMs, true)}},
      {"an interval is closed by the first observation after its end, and the "
       "next one starts there",
       {Obs(0, 6 * kMs, false), Obs(150 * kMs, 6 * kMs, true),
        Obs(250 * kMs - 1, 1 * kMs, true), Obs(250 * kMs, 6 * kMs, false)}},
      {"a head at target + interval is not yet a stall",
       {Obs(0, kStall, false), Obs(1, kStall, false)}},
      {"a head older than target + interval is overloaded at once",
       {Obs(0, kStall + 1, true)}},
      {"a stall holds for the rest of its interval, then the minimum decides",
       {Obs(0, 1 * kMs, false), Obs(10 * kMs, kStall + 1, true),
        Obs(20 * kMs, 1 * kMs, true), Obs(kInterval, 1 * kMs, false)}},
      {"a stall whose interval stayed above target stays overloaded",
       {Obs(0, 200 * kMs, true), Obs(kInterval, 6 * kMs, true)}},
      {"emptying clears the overload at once",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true),
        Drain(120 * kMs)}},
      {"after emptying, a full interval above target again (from the drain)",
       {Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true), Drain(120 * kMs),
        Obs(150 * kMs, 50 * kMs, false), Obs(220 * kMs - 1, 50 * kMs, false),
        Obs(220 * kMs, 50 * kMs, true)}},
      {"an interval that ended with no observation (drained) is calm",
       {Obs(0, 6 * kMs, false), Drain(10 * kMs),
        Obs(kInterval + 10 * kMs, 6 * kMs, false)}},
      {"a drain before any observation: the interval starts with the first",
       {Drain(0), Obs(50 * kMs, 6 * kMs, false),
        Obs(kInterval + 49 * kMs, 6 * kMs, false),
        Obs(kInterval + 50 * kMs, 6 * kMs, true)}},
      {"a clock set back restarts the interval and clears the overload",
       {Obs(1000 * kMs, 6 * kMs, false), Obs(1100 * kMs, 6 * kMs, true),
        Obs(900 * kMs, 6 * kMs, false), Obs(999 * kMs, 6 * kMs, false),
        Obs(1000 * kMs, 6 * kMs, true)}},
      {"at the infinite future every observation closes an interval",
       {Obs(0, 6 * kMs, false), Obs(kMax, 6 * kMs, true),
        Obs(kMax, 1 * kMs, true), Obs(kMax, 6 * kMs, false),
        Obs(kMax, 6 * kMs, true)}},
      {"coming back from the infinite future restarts the interval",
       {Obs(0, 6 * kMs, false), Obs(kMax, 6 * kMs, true),
        Obs(0, 6 * kMs, false), Obs(kInterval, 6 * kMs, true)}},
      {"a clock at the infinite past still measures intervals",
       {Obs(kMin, 6 * kMs, false), Obs(kMin + kInterval - 1, 6 * kMs, false),
        Obs(kMin + kInterval, 6 * kMs, true)}},
  };
  for (const CodelCase& c : cases) {
    SCOPED_TRACE(c.name);
    CodelState codel(absl::Nanoseconds(kTarget), absl::Nanoseconds(kInterval));
    EXPECT_FALSE(codel.overloaded());
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      const Step& s = c.steps[i];
      SCOPED_TRACE(::testing::Message() << "step " << i << " at " << s.now);
      if (s.op == Op::kObserve) {
        codel.Observe(s.now, s.head_age);
      } else {
        codel.Drained(s.now);
      }
      EXPECT_EQ(codel.overloaded(), s.overloaded);
    }
  }
}

struct SloughRow {
  const char* name;
  int64_t target;
  int64_t interval;
  bool overload;  // make it overloaded first
  int64_t age;
  bool slough;
};

TEST(CodelStateTest, SloughsOnlyWhileOverloadedAndPastTwiceTheTarget) {
  // Two centuries' target: 2 x target saturates at kMax.
  constexpr int64_t kYear = int64_t{365} * 24 * 3600 * 1000 * kMs;
  constexpr int64_t kHugeTarget = 200 * kYear;
  constexpr int64_t kHugeInterval = 250 * kYear;
  const std::vector<SloughRow> rows = {
      {"calm: nothing is sloughed, however old", kTarget, kInterval, false,
       1000 * kMs, false},
      {"calm: not even a saturated age", kTarget, kInterval, false, kMax,
       false},
      {"overloaded: zero age stays", kTarget, kInterval, true, 0, false},
      {"overloaded: exactly 2 x target stays", kTarget, kInterval, true,
       2 * kTarget, false},
      {"overloaded: 1 ns past 2 x target goes", kTarget, kInterval, true,
       2 * kTarget + 1, true},
      {"overloaded: between target and 2 x target stays", kTarget, kInterval,
       true, kTarget + 1, false},
      {"a saturated slough timeout: one below it stays", kHugeTarget,
       kHugeInterval, true, kMax - 1, false},
      {"a saturated slough timeout: a saturated age goes", kHugeTarget,
       kHugeInterval, true, kMax, true},
  };
  for (const SloughRow& r : rows) {
    SCOPED_TRACE(r.name);
    CodelState codel(absl::Nanoseconds(r.target),
                     absl::Nanoseconds(r.interval));
    if (r.overload) {
      codel.Observe(0, r.target + 1);
      codel.Observe(r.interval, r.target + 1);
      ASSERT_TRUE(codel.overloaded());
    }
    EXPECT_EQ(codel.Slough(r.age), r.slough);
  }
}

// ---- The batch service-time estimate ----

enum class EstOp { kRecord, kProbed, kHandedOut };

struct EstStep {
  EstOp op;
  int64_t ns;   // kRecord: the batch time
  int64_t now;  // kRecord, kHandedOut
};

EstStep Rec(int64_t ns, int64_t now) { return {EstOp::kRecord, ns, now}; }
EstStep Probed() { return {EstOp::kProbed, 0, 0}; }
EstStep Out(int64_t now) { return {EstOp::kHandedOut, 0, now}; }

struct EstimateCase {
  const char* name;
  std::vector<EstStep> steps;
  int64_t estimate;
  // ProbeDue at each of these times (after the steps).
  std::vector<std::pair<int64_t, bool>> probe_due;
};

TEST(ServiceEstimateTest, AverageAndProbe) {
  const std::vector<EstimateCase> cases = {
      {"no sample: estimate 0, never a probe",
       {},
       0,
       {{0, false}, {kMax, false}}},
      {"the first sample is taken as is", {Rec(100, 0)}, 100, {}},
      {"then a quarter of each difference",
       {Rec(100, 0), Rec(200, 10)},
       125,
       {}},
      {"downwards too (truncated toward zero)",
       {Rec(100, 0), Rec(200, 10), Rec(0, 20)},
       94,
       {}},
      {"after a probe the next sample is taken as is",
       {Rec(100, 0), Probed(), Rec(1000, 5)},
       1000,
       {}},
      {"and averaged again after that",
       {Rec(100, 0), Probed(), Rec(1000, 5), Rec(0, 6)},
       750,
       {}},
      {"a saturated sample does not wrap",
       {Rec(kMax, 0), Rec(kMax, 1)},
       kMax,
       {}},
      {"due once nothing was handed out for 2 x the estimate",
       {Rec(100, 0)},
       100,
       {{199, false}, {200, true}}},
      {"a later sample does not restart the probe clock",
       {Rec(100, 0), Rec(100, 150)},
       100,
       {{200, true}}},
      {"a hand-out restarts it",
       {Rec(100, 0), Out(150)},
       100,
       {{349, false}, {350, true}}},
      {"a clock set back before the last hand-out makes it due",
       {Rec(100, 1000)},
       100,
       {{999, true}, {1000, false}}},
      {"a zero estimate is due at once", {Rec(0, 50)}, 0, {{50, true}}},
      // Once due only at a saturated elapsed time: one absurd sample
      // refused every finite deadline for good.
      {"a huge estimate's probe waits at most a minute",
       {Rec(kMax, 0)},
       kMax,
       {{ServiceEstimate::kMaxProbeWait - 1, false},
        {ServiceEstimate::kMaxProbeWait, true}}},
      {"under a minute, twice the estimate still rules",
       {Rec(20'000'000'000, 0)},
       20'000'000'000,
       {{39'999'999'999, false}, {40'000'000'000, true}}},
  };
  for (const EstimateCase& c : cases) {
    SCOPED_TRACE(c.name);
    ServiceEstimate e;
    for (const EstStep& s : c.steps) {
      switch (s.op) {
        case EstOp::kRecord:
          e.Record(s.ns, s.now);
          break;
        case EstOp::kProbed:
          e.Probed();
          break;
        case EstOp::kHandedOut:
          e.HandedOut(s.now);
          break;
      }
    }
    EXPECT_EQ(e.estimate(), c.estimate);
    for (const auto& [now, due] : c.probe_due) {
      EXPECT_EQ(e.ProbeDue(now), due) << "at " << now;
    }
  }
}

struct MeetRow {
  int64_t estimate;
  int64_t now;
  int64_t deadline;
  bool can;
};

TEST(ServiceEstimateTest, CanMeetIsStrictAndSaturates) {
  const std::vector<MeetRow> rows = {
      {100, 0, 101, true},   // done at 100, before 101
      {100, 0, 100, false},  // done exactly at the deadline: too late
      {100, 0, kMax, true},  // kMax is no deadline
      {0, 0, 1, true},
      {0, 5, 5, false},
      {kMax, 1, kMax - 1, false},  // now + estimate saturates
      {kMax, 1, kMax, true},
      {100, kMax - 50, kMax - 1, false},
  };
  for (const MeetRow& r : rows) {
    SCOPED_TRACE(::testing::Message() << "estimate " << r.estimate << " now "
                                      << r.now << " deadline " << r.deadline);
    ServiceEstimate e;
    e.Record(r.estimate, 0);
    EXPECT_EQ(e.CanMeet(r.deadline, r.now), r.can);
  }
}

// ---- Wait arithmetic ----

TEST(CodelWaitTest, SojournBucketUpperBoundsAreInclusive) {
  const std::array<double, 3> bounds = {1, 10, 100};  // ms
  struct Row {
    int64_t ns;
    std::size_t bucket;
  };
  const std::vector<Row> rows = {
      {kMin, 0},         {-1, 0},          {0, 0},
      {1 * kMs, 0},      {1 * kMs + 1, 1}, {10 * kMs, 1},
      {10 * kMs + 1, 2}, {100 * kMs, 2},   {100 * kMs + 1, 3},  // overflow
      {kMax, 3},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << r.ns << " ns");
    EXPECT_EQ(SojournBucket(bounds, r.ns), r.bucket);
  }
  const std::array<double, 0> none = {};
  EXPECT_EQ(SojournBucket(none, 5), 0u);
}

TEST(CodelWaitTest, WaitNanosIsZeroAtTheInfinitiesAndWhenReversed) {
  static_assert(WaitNanos(10, 3) == 7, "constexpr");
  struct Row {
    int64_t now;
    int64_t since;
    int64_t want;
  };
  const std::vector<Row> rows = {
      {10, 3, 7},
      {3, 3, 0},
      {3, 10, 0},  // reversed
      {kMax, 0, 0},
      {0, kMax, 0},
      {kMin, 0, 0},
      {0, kMin, 0},
      {kMax, kMax, 0},
      {kMax - 1, kMin + 1, kMax},
      {kMax - 1, 0, kMax - 1},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << r.now << " since " << r.since);
    EXPECT_EQ(WaitNanos(r.now, r.since), r.want);
  }
}

// ---- The queue's shape checks ----

TEST(CodelSettingsTest, ValidateQueueShapeNamesTheBadSetting) {
  constexpr std::size_t kCap = 1000;
  const absl::Duration ms = absl::Milliseconds(1);
  const absl::Duration inf = absl::InfiniteDuration();
  struct Row {
    const char* name;
    std::size_t capacity;
    absl::Duration target;
    absl::Duration interval;
    std::string error;  // empty: OK
  };
  const std::vector<Row> rows = {
      {"q", 1, 5 * ms, 100 * ms, ""},
      {"q", kCap, absl::Nanoseconds(1), absl::Nanoseconds(2), ""},
      {"", 1, 5 * ms, 100 * ms,
       "admission queue '': setting 'name' = \"\" is invalid: must not be "
       "empty"},
      {"q", 0, 5 * ms, 100 * ms,
       "admission queue 'q': setting 'capacity' = 0 is invalid: must be in "
       "[1, 1000] (a hard bound is mandatory)"},
      {"q", kCap + 1, 5 * ms, 100 * ms,
       "admission queue 'q': setting 'capacity' = 1001 is invalid: must be in "
       "[1, 1000] (a hard bound is mandatory)"},
      {"q", 1, 5 * ms, absl::ZeroDuration(),
       "admission queue 'q': setting 'codel_interval' = 0 is invalid: must be "
       "> 0 and finite"},
      {"q", 1, 5 * ms, -ms,
       "admission queue 'q': setting 'codel_interval' = -1ms is invalid: must "
       "be > 0 and finite"},
      {"q", 1, 5 * ms, inf,
       "admission queue 'q': setting 'codel_interval' = inf is invalid: must "
       "be > 0 and finite"},
      {"q", 1, absl::ZeroDuration(), 100 * ms,
       "admission queue 'q': setting 'codel_target' = 0 is invalid: must be > "
       "0 and < codel_interval (100ms)"},
      {"q", 1, -ms, 100 * ms,
       "admission queue 'q': setting 'codel_target' = -1ms is invalid: must be "
       "> 0 and < codel_interval (100ms)"},
      {"q", 1, 100 * ms, 100 * ms,
       "admission queue 'q': setting 'codel_target' = 100ms is invalid: must "
       "be > 0 and < codel_interval (100ms)"},
      {"q", 1, inf, 100 * ms,
       "admission queue 'q': setting 'codel_target' = inf is invalid: must be "
       "> 0 and < codel_interval (100ms)"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.error.empty() ? "valid" : r.error);
    const absl::Status st =
        ValidateQueueShape(r.name, r.capacity, kCap, r.target, r.interval);
    if (r.error.empty()) {
      EXPECT_TRUE(st.ok()) << st;
    } else {
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(st.message(), r.error);
    }
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
