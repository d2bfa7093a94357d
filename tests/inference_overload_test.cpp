// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The overload simulation of examples/inference_overload.cpp
// (examples/inference/overload_*.hpp) on a FakeClock: four request classes
// at 3x the server's capacity for ten minutes, then the GPU at half speed
// for two, then restored.
//
//   * the traffic is what the report says (shares, cohorts, the same
//     requests in every mode);
//   * the baselines fail the way the issue says: always on answers nothing
//     in time; today's static config holds the plateau it was tuned for but
//     not a halved GPU; admission by level sheds lowest class first;
//   * the full discipline at 3x, against the targets: goodput >= 0.9
//     of capacity, CRITICAL_PLUS and CRITICAL available >= 99.5% with p99
//     <= 1 s, strict shed order per cohort and second, the limit settled
//     within 10 s of the GPU halving and goodput back, the limit drifting
//     <= 10% over the plateau, the same numbers for the same seed; the
//     order and the critical classes on four more seeds;
//   * the per-class charts are SVG.
//
// Each TEST runs in its own process under ctest, so each runs only the
// modes it reads, and the full discipline's targets come from one run.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "degrade/config.hpp"
#include "degrade/request_class.hpp"
#include "gtest/gtest.h"
#include "inference/overload_report.hpp"
#include "inference/overload_sim.hpp"
#include "inference/overload_traffic.hpp"

namespace DEGRADE_TEST_UNIT {

namespace ov = inference::overload;
using degrade::Criticality;

constexpr std::size_t kPlus = static_cast<std::size_t>(Criticality::kCriticalPlus);
constexpr std::size_t kCrit = static_cast<std::size_t>(Criticality::kCritical);
constexpr std::size_t kShedPlus = static_cast<std::size_t>(Criticality::kSheddablePlus);
constexpr std::size_t kShed = static_cast<std::size_t>(Criticality::kSheddable);

// The targets for the full discipline.
constexpr double kGoodputTarget = 0.9;
constexpr double kCriticalAvailability = 0.995;
constexpr double kCriticalP99Ms = 1000.0;
constexpr absl::Duration kSettleWithin = absl::Seconds(10);
constexpr double kSettleTolerance = 0.10;
constexpr double kMaxDrift = 0.10;

degrade::DegradationConfig Load(const char* path) {
  absl::StatusOr<degrade::DegradationConfig> c =
      degrade::LoadDegradationConfigFile(path);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : degrade::DegradationConfig{};
}

ov::SimOptions Base() {
  ov::SimOptions o;
  o.static_config = Load(INFERENCE_SHEDDING_CONFIG);
  o.admit_config = Load(INFERENCE_OVERLOAD_CONFIG);
  o.discipline_config = Load(INFERENCE_DISCIPLINE_CONFIG);
  return o;
}

absl::StatusOr<ov::RunResult> RunMode(ov::Mode mode, uint64_t seed = 1) {
  ov::SimOptions o = Base();
  o.mode = mode;
  o.seed = seed;
  return ov::Run(o);
}

ov::RunResult MustRun(ov::Mode mode, uint64_t seed = 1) {
  absl::StatusOr<ov::RunResult> r = RunMode(mode, seed);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : ov::RunResult{};
}

ov::WindowSummary Plateau(const ov::RunResult& r) {
  const ov::Scenario s = ov::DefaultScenario();
  return ov::Summarize(r, s.plateau_start, s.plateau_end);
}

// ---- The traffic ------------------------------------------------------------

TEST(InferenceOverloadTrafficTest, ClassSharesCohortsAndArrivalsAreWhatTheReportSays) {
  double total = 0.0;
  for (const ov::TrafficClass& c : ov::kClasses) total += c.share;
  EXPECT_NEAR(total, 1.0, 1e-12);
  // The two sheddable classes are simulation.hpp's best-effort share.
  EXPECT_NEAR(ov::kClasses[kShedPlus].share + ov::kClasses[kShed].share,
              inference::kBestEffortShare, 1e-12);

  const ov::RunResult r = MustRun(ov::Mode::kAlwaysOn);
  ASSERT_GT(r.requests.size(), 100000u);
  std::array<std::size_t, degrade::kNumCriticalities> n{};
  std::set<int> cohorts;
  for (const ov::Request& q : r.requests) {
    ++n[q.klass];
    cohorts.insert(q.cohort);
  }
  for (std::size_t k = 0; k < n.size(); ++k) {
    EXPECT_NEAR(static_cast<double>(n[k]) / r.requests.size(),
                ov::kClasses[k].share, 0.01)
        << degrade::CriticalityName(ov::kClasses[k].criticality);
  }
  EXPECT_EQ(cohorts.size(), static_cast<std::size_t>(degrade::kNumCohorts));
  // Arrivals on the plateau run at 3x the fully featured capacity.
  const ov::Scenario s = ov::DefaultScenario();
  const double rps = static_cast<double>(
                         std::count_if(r.requests.begin(), r.requests.end(),
                                       [&s](const ov::Request& q) {
                                         return q.arrival >= s.plateau_start &&
                                                q.arrival < s.plateau_end;
                                       })) /
                     absl::ToDoubleSeconds(s.plateau_end - s.plateau_start);
  EXPECT_NEAR(rps / inference::CapacityRps(0), 3.0, 0.05);
}

TEST(InferenceOverloadTrafficTest, EveryModeSeesTheSameRequests) {
  const ov::RunResult on = MustRun(ov::Mode::kAlwaysOn);
  const ov::RunResult fixed = MustRun(ov::Mode::kStatic);
  ASSERT_EQ(on.requests.size(), fixed.requests.size());
  for (std::size_t i = 0; i < on.requests.size(); ++i) {
    ASSERT_EQ(on.requests[i].arrival, fixed.requests[i].arrival) << i;
    ASSERT_EQ(on.requests[i].klass, fixed.requests[i].klass) << i;
    ASSERT_EQ(on.requests[i].cohort, fixed.requests[i].cohort) << i;
  }
}

// ---- The baselines ----------------------------------------------------------

TEST(InferenceOverloadBaselineTest, AlwaysOnAnswersAlmostNothingInTime) {
  const ov::RunResult r = MustRun(ov::Mode::kAlwaysOn);
  const ov::WindowSummary w = Plateau(r);
  EXPECT_LT(w.goodput, 0.05);
  EXPECT_LT(w.classes[kPlus].availability(), 0.05);
  EXPECT_GT(w.classes[kPlus].p99_ms, 60000.0);
}

TEST(InferenceOverloadBaselineTest, StaticConfigHoldsThePlateauButNotAHalvedGpu) {
  const ov::RunResult r = MustRun(ov::Mode::kStatic);
  const ov::Scenario s = ov::DefaultScenario();
  const ov::WindowSummary plateau = Plateau(r);
  EXPECT_GE(plateau.classes[kCrit].availability(), 0.99);
  EXPECT_EQ(plateau.classes[kShed].availability(), 0.0);  // counts: exact
  // Its one lever, refusing the sheddable classes, is spent: with the GPU at
  // half speed the critical traffic alone is past capacity and waits.
  const ov::WindowSummary halved = ov::Summarize(r, s.halved_start, s.halved_end);
  EXPECT_LT(halved.classes[kCrit].availability(), 0.5);
  EXPECT_LT(halved.goodput, 0.5);
}

TEST(InferenceOverloadBaselineTest, AdmitByLevelShedsTheLowestClassFirst) {
  const ov::RunResult r = MustRun(ov::Mode::kAdmitByLevel);
  const ov::WindowSummary w = Plateau(r);
  EXPECT_GE(w.classes[kPlus].availability(), w.classes[kShedPlus].availability());
  EXPECT_GE(w.classes[kCrit].availability(), w.classes[kShedPlus].availability());
  EXPECT_GE(w.classes[kShedPlus].availability(), w.classes[kShed].availability());
  EXPECT_TRUE(ov::ShedOrderViolations(r).empty());
}

// ---- The full discipline ----------------------------------------------------

// The reading (per cohort and second) and the stricter one across
// cohorts (no sheddable request let in within 100 ms of a critical refusal).
void ExpectStrictShedOrder(const ov::RunResult& r) {
  const std::vector<ov::OrderViolation> v = ov::ShedOrderViolations(r);
  EXPECT_TRUE(v.empty()) << v.size() << " violations, the first at "
                         << v[0].slice << " in cohort " << v[0].cohort;
  EXPECT_EQ(ov::SheddableAdmittedAfterCriticalRefusal(r, absl::Milliseconds(100)),
            0u);
}

// Before the limiter told the door about its refusals (RecordRefusal) and
// could preempt a queued lower class (Preempt), seeds 1 and 3 broke strict
// order in the seconds after the GPU halved, and DAGOR's threshold dipping
// into CRITICAL cost seed 2 0.6% of its CRITICAL requests (99.43%): the
// targets must hold on more than the one seed they were measured on.
TEST(InferenceOverloadFullTest, StrictOrderAndTheCriticalClassesHoldOnOtherSeeds) {
  for (const uint64_t seed : {2, 3, 4, 5}) {
    SCOPED_TRACE(seed);
    const ov::RunResult r = MustRun(ov::Mode::kFull, seed);
    const ov::WindowSummary w = Plateau(r);
    EXPECT_GE(w.goodput, kGoodputTarget);
    EXPECT_GE(w.classes[kPlus].availability(), kCriticalAvailability);
    EXPECT_GE(w.classes[kCrit].availability(), kCriticalAvailability);
    ExpectStrictShedOrder(r);
  }
}

TEST(InferenceOverloadFullTest, MeetsEveryTargetAt3xAndTheSameSeedGivesTheSameNumbers) {
  const ov::Scenario s = ov::DefaultScenario();
  const ov::RunResult r = MustRun(ov::Mode::kFull);
  ASSERT_FALSE(r.samples.empty());

  // Goodput and the critical classes on the plateau.
  const ov::WindowSummary w = Plateau(r);
  EXPECT_GE(w.goodput, kGoodputTarget);
  EXPECT_GE(w.classes[kPlus].availability(), kCriticalAvailability);
  EXPECT_GE(w.classes[kCrit].availability(), kCriticalAvailability);
  for (const std::size_t k : {kPlus, kCrit}) {
    SCOPED_TRACE(degrade::CriticalityName(ov::kClasses[k].criticality));
    EXPECT_LE(w.classes[k].p99_ms, kCriticalP99Ms);
  }

  // Strictly lowest class first, per cohort and second, over the whole run
  // (the GPU halving included).
  ExpectStrictShedOrder(r);

  // The GPU halves: the limit settles within 10 s, goodput comes back; and
  // again when it is restored.
  EXPECT_LE(ov::SettlingTime(r, s.halved_start, s.halved_end, kSettleTolerance),
            kSettleWithin);
  EXPECT_LE(ov::SettlingTime(r, s.halved_end, r.length, kSettleTolerance),
            kSettleWithin);
  EXPECT_GE(ov::Summarize(r, s.halved_start + kSettleWithin, s.halved_end).goodput,
            kGoodputTarget);
  EXPECT_GE(ov::Summarize(r, s.halved_end + kSettleWithin, r.length).goodput,
            kGoodputTarget);

  // The 10-minute plateau: the limit, once settled, drifts <= 10%.
  EXPECT_GT(ov::MedianLimit(r, s.plateau_start, s.plateau_end), 0.0);
  EXPECT_LE(ov::PlateauDrift(r, s), kMaxDrift);
  // ... and it moved at all: a limit pinned at its floor (Gradient2 on this
  // server) passes both checks above without saying anything.
  int highest = 0;
  for (const ov::Sample& x : r.samples) highest = std::max(highest, x.limit);
  // Since the queue serves the most important class first it drops little,
  // so AIMD backs off rarely and the limit stays near its floor (160..170 on
  // the plateau): the floor, five batches, is already the most that can be
  // answered within the deadline. The limit's own convergence is tested on
  // a simulated server in concurrency_limiter_test.cpp.
  EXPECT_GT(highest, ov::DisciplineSettings{}.min_limit);

  // The same seed, the same run: every request's fate and time.
  const ov::RunResult again = MustRun(ov::Mode::kFull);
  ASSERT_EQ(r.requests.size(), again.requests.size());
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    ASSERT_EQ(r.requests[i].fate, again.requests[i].fate) << i;
    ASSERT_EQ(r.requests[i].done, again.requests[i].done) << i;
  }
  ASSERT_EQ(r.samples.size(), again.samples.size());
  for (std::size_t i = 0; i < r.samples.size(); ++i) {
    ASSERT_EQ(r.samples[i].limit, again.samples[i].limit) << i;
    ASSERT_EQ(r.samples[i].threshold, again.samples[i].threshold) << i;
  }
}

TEST(InferenceOverloadFullTest, WithoutPreemptionTheLimiterBreaksStrictOrder) {
  // Across seeds 1-5 without it: 1, 2, 12, 1 and 0 sheddable requests let
  // in within 100 ms of a critical refusal (seeds 2 and 3 also break the
  // per-cohort check); with it, none (the other tests).
  std::size_t inversions = 0;
  for (const uint64_t seed : {1, 2, 3}) {
    ov::SimOptions o = Base();
    o.seed = seed;
    o.discipline.preempt_lower_classes = false;
    const absl::StatusOr<ov::RunResult> r = ov::Run(o);
    ASSERT_TRUE(r.ok()) << r.status();
    inversions +=
        ov::SheddableAdmittedAfterCriticalRefusal(*r, absl::Milliseconds(100));
  }
  EXPECT_GE(inversions, 5u);
}

// Found by review: the simulation preempted one queued lower-class request
// and retried once; when the limit has just dropped below what is in flight
// (AIMD backing off as the GPU halves) one permit is not enough, and the
// sheddable request was dropped AND the critical one refused (9 of 9
// preemptions on seed 1, 16 of 23 on seed 3). It now preempts as many as the
// limiter needs, and only when the queue holds that many. A preempted
// request is the sheddable one whose kQueueShed drop happened at the very
// instant a critical request was refused with kLimit (event times are exact
// on the FakeClock; a pop at an arrival only happens when the queue was
// empty, so it cannot be one of these).
TEST(InferenceOverloadFullTest, APreemptedSheddableRequestBuysTheCriticalOneItsPermit) {
  for (const uint64_t seed : {1, 3}) {
    SCOPED_TRACE(seed);
    const ov::RunResult r = MustRun(ov::Mode::kFull, seed);
    std::set<int64_t> critical_limited;  // arrival instants, ns
    for (const ov::Request& q : r.requests) {
      if (!ov::IsSheddable(ov::kClasses[q.klass].criticality) &&
          q.fate == ov::Fate::kLimit) {
        critical_limited.insert(absl::ToInt64Nanoseconds(q.arrival));
      }
    }
    std::size_t wasted = 0;
    for (const ov::Request& q : r.requests) {
      if (ov::IsSheddable(ov::kClasses[q.klass].criticality) &&
          q.fate == ov::Fate::kQueueShed && q.done != q.arrival &&
          critical_limited.count(absl::ToInt64Nanoseconds(q.done)) > 0) {
        ++wasted;
      }
    }
    EXPECT_EQ(wasted, 0u) << "sheddable requests preempted for a critical "
                             "request the limiter then refused anyway";
  }
}

// ---- The report and the charts ----------------------------------------------

TEST(InferenceOverloadReportTest, ShedOrderCheckFindsACriticalRefusalBesideAnAdmittedSheddable) {
  // The check itself can fail: a critical request refused at the door in
  // the same second and cohort as an admitted sheddable one.
  ov::RunResult r;
  ov::Request critical;
  critical.arrival = critical.done = absl::Milliseconds(100);
  critical.klass = kCrit;
  critical.cohort = 7;
  critical.fate = ov::Fate::kLimit;
  ov::Request sheddable;
  sheddable.arrival = absl::Milliseconds(900);
  sheddable.done = absl::Milliseconds(1200);
  sheddable.klass = kShed;
  sheddable.cohort = 7;
  sheddable.fate = ov::Fate::kAnswered;
  r.requests = {critical, sheddable};
  ASSERT_EQ(ov::ShedOrderViolations(r).size(), 1u);
  // Another cohort, or another second, is no violation.
  r.requests[1].cohort = 8;
  EXPECT_TRUE(ov::ShedOrderViolations(r).empty());
  r.requests[1].cohort = 7;
  r.requests[1].arrival = absl::Milliseconds(1000);
  EXPECT_TRUE(ov::ShedOrderViolations(r).empty());
}

TEST(InferenceOverloadReportTest, GoodputCountsOnlyGpuTimeOfTimelyAnswers) {
  ov::RunResult r;
  r.length = absl::Seconds(2);
  ov::Request timely;
  timely.arrival = absl::ZeroDuration();
  timely.done = absl::Milliseconds(500);
  timely.gpu = absl::Milliseconds(400);
  timely.fate = ov::Fate::kAnswered;
  ov::Request late = timely;
  late.done = absl::Milliseconds(1500);  // past the 1 s deadline
  r.requests = {timely, late};
  EXPECT_NEAR(ov::Summarize(r, absl::ZeroDuration(), absl::Seconds(2)).goodput,
              0.2, 1e-9);
  const std::vector<double> series = ov::GoodputSeries(r, absl::Seconds(1));
  ASSERT_EQ(series.size(), 2u);
  EXPECT_NEAR(series[0], 0.4, 1e-9);
  EXPECT_NEAR(series[1], 0.0, 1e-9);
}

TEST(InferenceOverloadReportTest, OneSvgChartPerClass) {
  absl::StatusOr<ov::Comparison> c = ov::RunComparison(Base(), 1);
  ASSERT_TRUE(c.ok()) << c.status();
  std::set<std::string> names;
  for (std::size_t k = 0; k < ov::kClasses.size(); ++k) {
    const std::string svg = ov::ClassChart(*c, k);
    EXPECT_TRUE(absl::StartsWith(svg, "<?xml")) << svg.substr(0, 80);
    EXPECT_TRUE(absl::StrContains(svg, "<svg xmlns="));
    EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
    EXPECT_TRUE(absl::StrContains(
        svg, degrade::CriticalityName(ov::kClasses[k].criticality)));
    names.insert(ov::ClassChartName(k));
  }
  EXPECT_EQ(names.size(), ov::kClasses.size());
  const std::string report = ov::Report(*c);
  for (const ov::Mode m : ov::kModes) {
    EXPECT_TRUE(absl::StrContains(report, ov::ModeName(m))) << ov::ModeName(m);
  }
}

}  // namespace DEGRADE_TEST_UNIT
