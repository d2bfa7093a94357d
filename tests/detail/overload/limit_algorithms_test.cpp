// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/overload/limit_algorithms.hpp alone, without a limiter: each row is a
// script of closed windows fed to a fresh LimitCore and the limit (and
// no-load latency) that must follow, worked out by hand from the rules in
// docs/overload/limiter.md ("Algorithms", "Drift guards"). The rows cover
// each algorithm's answer to a latency step up and down, to drops, at
// min_limit and max_limit, and to inputs the limiter never passes on (zero,
// negative and non-finite latencies, empty windows); a second table drives
// the re-measurement of the no-load latency.
//
// The numbers, at the defaults (smoothing 0.2, queue_size 4, tolerance 1.5,
// Vegas smoothing 1) and a limit of 100:
//   Gradient2, flat latency, in use:  0.8 x 100 + 0.2 x (100 + 4) = 100.8
//   Gradient2, any drop:              0.8 x L + 0.2 x L / 2 = 0.9 x L
//   Vegas: log10 L = 2, alpha = 6, beta = 12, queue = ceil(n (1 - no_load/rtt))

#include "degrade/detail/overload/limit_algorithms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "degrade/detail/splitmix.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-9;

// A full, unsaturated window of `samples` reports, `drops` of them drops.
LimitWindow W(uint32_t samples, uint32_t drops, double latency_us,
              int in_flight) {
  LimitWindow w;
  w.samples = samples;
  w.drops = drops;
  w.average_latency_us = latency_us;
  w.max_in_flight = in_flight;
  return w;
}
// Ten successes at `latency_us` with `in_flight` out.
LimitWindow Ok(double latency_us, int in_flight) {
  return W(10, 0, latency_us, in_flight);
}
LimitWindow Drop(int in_flight) { return W(10, 1, 1000, in_flight); }

struct P {
  LimitAlgorithm algorithm;
  double min_limit = 1;
  double max_limit = 1000;
  double initial_limit = 100;
  absl::Duration max_healthy_latency = absl::ZeroDuration();
  double aimd_backoff = 0.9;
  double vegas_smoothing = 1.0;
};

LimitParams Params(const P& p) {
  LimitParams out;
  out.algorithm = p.algorithm;
  out.min_limit = p.min_limit;
  out.max_limit = p.max_limit;
  out.initial_limit = p.initial_limit;
  out.max_healthy_latency = p.max_healthy_latency;
  out.aimd_backoff = p.aimd_backoff;
  out.vegas_smoothing = p.vegas_smoothing;
  out.probe_multiplier = 1e6;  // no re-measurement in these rows
  return out;
}

struct Row {
  const char* name;
  P params;
  std::vector<LimitWindow> windows;
  double limit;
  std::optional<double> no_load_us;  // unset: not checked
};

void RunRows(const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << LimitAlgorithmName(r.params.algorithm) << ": " << r.name);
    LimitCore core(Params(r.params));
    EXPECT_EQ(core.limit(), r.params.initial_limit);
    for (const LimitWindow& w : r.windows) {
      EXPECT_FALSE(core.Update(w)) << "no re-measurement may begin here";
    }
    EXPECT_NEAR(core.limit(), r.limit, kEps);
    EXPECT_EQ(core.published_limit(), static_cast<int>(r.limit));
    EXPECT_EQ(core.admission_limit(), core.published_limit());
    EXPECT_FALSE(core.probing());
    if (r.no_load_us) {
      EXPECT_EQ(core.no_load_latency(), absl::Microseconds(*r.no_load_us));
    }
  }
}

constexpr LimitAlgorithm kG = LimitAlgorithm::kGradient2;
constexpr LimitAlgorithm kV = LimitAlgorithm::kVegas;
constexpr LimitAlgorithm kA = LimitAlgorithm::kAimd;
constexpr LimitAlgorithm kF = LimitAlgorithm::kFixed;

TEST(LimitCoreTest, Gradient2) {
  const absl::Duration kHealthy = absl::Milliseconds(10);
  RunRows({
      {"flat latency in use: + smoothing x queue_size",
       {kG},
       {Ok(1000, 100)},
       100.8,
       1000},
      {"fewer than half the limit in flight: app-limited, no growth",
       {kG},
       {Ok(1000, 49)},
       100,
       1000},
      {"exactly half the limit in flight is in use",
       {kG},
       {Ok(1000, 50)},
       100.8,
       1000},
      {"latency step up x2: gradient 1.5 x 0.5 = 0.75",
       {kG},
       {Ok(1000, 100), Ok(2000, 100)},
       96.56,
       1000},
      {"latency step up x4: gradient floored at 0.5",
       {kG},
       {Ok(1000, 100), Ok(4000, 100)},
       91.52,
       1000},
      {"a sustained step: the long RTT does not follow latency up",
       {kG},
       {Ok(1000, 100), Ok(2000, 100), Ok(2000, 100), Ok(2000, 100)},
       88.7054,
       1000},
      {"a latency step up while app-limited holds the limit",
       {kG},
       {Ok(1000, 10), Ok(4000, 10)},
       100,
       1000},
      {"latency step down: the long RTT follows by 1/long_window, gradient "
       "capped at 1",
       {kG},
       {Ok(1000, 100), Ok(500, 100)},
       101.6,
       1000 - 500.0 / 600},
      {"latency below half the long RTT: the long RTT also decays by 0.95",
       {kG},
       {Ok(1000, 100), Ok(400, 100)},
       101.6,
       999 * 0.95},
      {"a drop: 0.9 x, nothing learnt", {kG}, {Drop(100)}, 90, 0},
      {"a drop while app-limited still cuts", {kG}, {Drop(1)}, 90, 0},
      {"a window of drops only", {kG}, {W(10, 10, 0, 100)}, 90, 0},
      {"drops twice", {kG}, {Drop(100), Drop(100)}, 81, 0},
      {"at min_limit a drop stays there",
       {kG, 95},
       {Drop(100), Drop(100)},
       95,
       0},
      {"at max_limit growth stops there",
       {kG, 1, 100},
       {Ok(1000, 100), Ok(1000, 100)},
       100,
       1000},
      {"never below 1, even with a min_limit under it",
       {kG, 0.5, 10, 1},
       {Drop(1)},
       1,
       0},
      {"above max_healthy_latency: overload",
       {kG, 1, 1000, 100, kHealthy},
       {Ok(10001, 100)},
       90,
       0},
      {"at max_healthy_latency: not overload",
       {kG, 1, 1000, 100, kHealthy},
       {Ok(10000, 100)},
       100.8,
       10000},
      {"zero latency counts as 1 us", {kG}, {Ok(0, 100)}, 100.8, 1},
      {"a negative latency counts as 1 us", {kG}, {Ok(-5000, 100)}, 100.8, 1},
      {"a NaN latency keeps the limit",
       {kG},
       {Ok(kNaN, 100)},
       100,
       std::nullopt},
      {"an infinite latency after a baseline: gradient floor",
       {kG},
       {Ok(1000, 100), Ok(kInf, 100)},
       91.52,
       1000},
      {"an empty window changes nothing", {kG}, {W(0, 0, 0, 100)}, 100, 0},
  });
}

TEST(LimitCoreTest, Vegas) {
  const absl::Duration kHealthy = absl::Milliseconds(10);
  // Sets the no-load latency (1000 us) without moving the limit: 10 in
  // flight of 100 is not "in use".
  const LimitWindow base = Ok(1000, 10);
  RunRows({
      {"the baseline window alone", {kV}, {base}, 100, 1000},
      {"no queue at the limit: + beta", {kV}, {Ok(1000, 100)}, 112, 1000},
      {"growth is capped at beta above what was in flight",
       {kV},
       {Ok(1000, 95)},
       107,
       1000},
      {"fewer than half the limit in flight: no growth",
       {kV},
       {Ok(1000, 49)},
       100,
       1000},
      {"queue <= log10 L: + beta", {kV}, {base, Ok(1000, 100)}, 112, 1000},
      {"queue (2) at log10 L: + beta", {kV}, {base, Ok(1015, 100)}, 112, 1000},
      {"queue (3) just above log10 L: + log10 L",
       {kV},
       {base, Ok(1025, 100)},
       102,
       1000},
      {"log10 L < queue (5) < alpha: + log10 L",
       {kV},
       {base, Ok(1050, 100)},
       102,
       1000},
      {"queue (6) at alpha: hold", {kV}, {base, Ok(1060, 100)}, 100, 1000},
      {"queue (12) at beta: hold", {kV}, {base, Ok(1130, 100)}, 100, 1000},
      {"queue (13) above beta: cut to beta above the unqueued concurrency",
       {kV},
       {base, Ok(1140, 100)},
       98,
       1000},
      {"latency step up x2: cut in one step",
       {kV},
       {base, Ok(2000, 100)},
       62,
       1000},
      {"the cut is from the window's in flight, not the limit",
       {kV},
       {base, Ok(2000, 40)},
       32,
       1000},
      {"a second window of the same stale samples cuts log10 L more, not by "
       "half again",
       {kV},
       {base, Ok(2000, 100), Ok(2000, 100)},
       62 - std::log10(62.0),
       1000},
      {"latency step down: the minimum follows over long_window (a run of "
       "cache hits is not a faster server), no queue, + beta",
       {kV},
       {base, Ok(500, 100)},
       112,
       1000 - 500.0 / 600},
      {"a drop: - log10 L, nothing learnt", {kV}, {Drop(100)}, 98, 0},
      {"a drop at a small limit: log10 floored at 1",
       {kV, 1, 1000, 5},
       {Drop(5)},
       4,
       0},
      {"at min_limit a drop stays there",
       {kV, 99},
       {Drop(100), Drop(100)},
       99,
       0},
      {"at max_limit growth stops there",
       {kV, 1, 105},
       {Ok(1000, 100)},
       105,
       1000},
      {"smoothing 0.5 takes half the step",
       {kV, 1, 1000, 100, absl::ZeroDuration(), 0.9, 0.5},
       {Ok(1000, 100)},
       106,
       1000},
      {"above max_healthy_latency: overload",
       {kV, 1, 1000, 100, kHealthy},
       {base, Ok(10001, 100)},
       98,
       1000},
      // The limiter drops latencies under 1 us before they get here
      // (ANegativeLatencyIsNotTheNoLoadLatency); the core itself trusts them.
      {"a negative latency becomes a 1 us no-load latency",
       {kV},
       {Ok(-5, 10)},
       100,
       1},
      {"a NaN latency keeps the limit", {kV}, {base, Ok(kNaN, 100)}, 100, 1000},
      {"an infinite latency: everything queued, cut to beta",
       {kV},
       {base, Ok(kInf, 100)},
       12,
       1000},
      {"an empty window changes nothing", {kV}, {W(0, 0, 0, 100)}, 100, 0},
  });
}

TEST(LimitCoreTest, Aimd) {
  const absl::Duration kHealthy = absl::Milliseconds(10);
  RunRows({
      {"a drop: x backoff", {kA}, {Drop(100)}, 90, 0},
      {"a window of drops only", {kA}, {W(10, 10, 0, 100)}, 90, 0},
      {"backoff 0.5",
       {kA, 1, 1000, 100, absl::ZeroDuration(), 0.5},
       {Drop(100)},
       50,
       0},
      {"no drop, in use: + 1", {kA}, {Ok(1000, 100)}, 101, 0},
      {"exactly half in flight is in use", {kA}, {Ok(1000, 50)}, 101, 0},
      {"no drop, app-limited: hold", {kA}, {Ok(1000, 49)}, 100, 0},
      {"a latency step up alone is not a drop: + 1 a window",
       {kA},
       {Ok(1000, 100), Ok(50000, 100)},
       102,
       0},
      {"at min_limit a drop stays there", {kA, 95}, {Drop(100)}, 95, 0},
      {"at max_limit growth stops there",
       {kA, 1, 100},
       {Ok(1000, 100)},
       100,
       0},
      {"never below 1", {kA, 0.5, 10, 1}, {Drop(1)}, 1, 0},
      {"above max_healthy_latency: a drop",
       {kA, 1, 1000, 100, kHealthy},
       {Ok(10001, 100)},
       90,
       0},
      {"at max_healthy_latency: growth",
       {kA, 1, 1000, 100, kHealthy},
       {Ok(10000, 100)},
       101,
       0},
      {"zero latency is not a drop", {kA}, {Ok(0, 100)}, 101, 0},
      {"NaN latency is not overload",
       {kA, 1, 1000, 100, kHealthy},
       {Ok(kNaN, 100)},
       101,
       0},
      {"an empty window changes nothing", {kA}, {W(0, 0, 0, 100)}, 100, 0},
  });
}

TEST(LimitCoreTest, Fixed) {
  RunRows({
      {"drops change nothing", {kF}, {Drop(100), Drop(100)}, 100, 0},
      {"latency changes nothing", {kF}, {Ok(1000, 100), Ok(9000, 100)}, 100, 0},
  });
}

// ---- The re-measurement of the no-load latency ----

struct ProbeRow {
  const char* name;
  LimitAlgorithm algorithm;
  bool hold_admissions;
  LimitWindow window;  // the window after the re-measurement began
  bool probing;        // after it
  double no_load_us;   // after it
  double limit = 10;   // after it
};

LimitWindow Partial(LimitWindow w) {
  w.full = false;
  return w;
}
LimitWindow Saturated(LimitWindow w) {
  w.saturated = true;
  return w;
}

TEST(LimitCoreTest, ReMeasurement) {
  // A limit of 10, probe_multiplier 1: the re-measurement is due after
  // 5 to 10 samples, so the first window (10 samples at 1 in flight: not in
  // use, the limit stays 10) sets a no-load latency of 1000 us and begins
  // it.
  const std::vector<ProbeRow> rows = {
      {"a partial window does not end it", kG, false, Partial(Ok(3000, 1)),
       true, 1000},
      {"a full window becomes the no-load latency, even a higher one", kG,
       false, Ok(3000, 10), false, 3000},
      {"and a lower one", kG, false, Ok(400, 10), false, 400},
      {"a saturated window above probe_limit measured the queue: kept", kG,
       false, Saturated(Ok(3000, 4)), false, 1000},
      {"a saturated window at probe_limit is a measurement", kG, false,
       Saturated(Ok(3000, 3)), false, 3000},
      {"a window of drops only ends it without a measurement, and cuts", kG,
       false, W(10, 10, 0, 10), false, 1000, 9},
      {"a window mostly of drops is overload, not a no-load latency", kV, false,
       W(10, 9, 50, 10), false, 1000, 9},
      {"holding admissions: the same rules", kG, true, Ok(3000, 3), false,
       3000},
      {"Vegas: a full window becomes the no-load latency", kV, false,
       Ok(3000, 10), false, 3000},
      {"Vegas: a saturated window above probe_limit: kept", kV, false,
       Saturated(Ok(3000, 10)), false, 1000},
      {"Vegas: a partial window does not end it", kV, true,
       Partial(Ok(3000, 1)), true, 1000},
  };
  for (const ProbeRow& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << LimitAlgorithmName(r.algorithm) << ": " << r.name);
    LimitParams p;
    p.algorithm = r.algorithm;
    p.min_limit = 1;
    p.max_limit = 1000;
    p.initial_limit = 10;
    p.probe_multiplier = 1;
    p.probe_limit = 3;
    p.window_samples = 10;
    p.hold_admissions = r.hold_admissions;
    LimitCore core(p);
    EXPECT_FALSE(core.probing());
    ASSERT_TRUE(core.Update(Ok(1000, 1))) << "the re-measurement begins";
    EXPECT_TRUE(core.probing());
    EXPECT_EQ(core.holding(), r.hold_admissions);
    EXPECT_EQ(core.admission_limit(), r.hold_admissions ? 3 : 10);
    // 10 x (1 + 10 / 3) x 10 = 433.3
    EXPECT_EQ(core.probe_refusal_budget(), 433u);
    EXPECT_EQ(core.no_load_latency(), absl::Microseconds(1000));

    EXPECT_FALSE(core.Update(r.window)) << "its own window begins none";
    EXPECT_EQ(core.probing(), r.probing);
    EXPECT_EQ(core.no_load_latency(), absl::Microseconds(r.no_load_us));
    EXPECT_EQ(core.limit(), r.limit)
        << "a re-measurement window moves no limit, unless it is overload";
    EXPECT_EQ(core.admission_limit(),
              r.probing && r.hold_admissions ? 3 : static_cast<int>(r.limit));
  }
}

TEST(LimitCoreTest, ReMeasurementsAreJitteredBetweenHalfAndAllOfTheirPeriod) {
  // probe_multiplier 2 x limit 10 x a jitter in [0.5, 1): due after 10 to
  // 20 samples. One-sample windows at 1 in flight leave the limit at 10.
  struct Row {
    LimitAlgorithm algorithm;
    uint64_t seed;
  };
  std::vector<Row> rows;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    rows.push_back({seed % 2 == 0 ? kG : kV, seed});
  }
  int lowest = 1000;
  int highest = 0;
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message()
                 << LimitAlgorithmName(r.algorithm) << " seed " << r.seed);
    LimitParams p;
    p.algorithm = r.algorithm;
    p.min_limit = 1;
    p.max_limit = 1000;
    p.initial_limit = 10;
    p.probe_multiplier = 2;
    p.seed = r.seed;
    LimitCore core(p);
    int samples = 0;
    while (samples < 100 && !core.Update(W(1, 0, 1000, 1))) ++samples;
    ++samples;  // the one that began it
    EXPECT_GE(samples, 10);
    EXPECT_LE(samples, 20);
    EXPECT_EQ(core.limit(), 10);
    lowest = std::min(lowest, samples);
    highest = std::max(highest, samples);
  }
  EXPECT_LT(lowest, highest) << "the seeds must not all re-measure in step";
}

TEST(LimitCoreTest, NoReMeasurementWithoutANoLoadLatencyOrForAimdAndFixed) {
  struct Row {
    const char* name;
    LimitAlgorithm algorithm;
    LimitWindow window;
  };
  const std::vector<Row> rows = {
      {"Gradient2 before any latency (drops only)", kG, W(10, 10, 0, 1)},
      {"Vegas before any latency (drops only)", kV, W(10, 10, 0, 1)},
      {"AIMD never", kA, Ok(1000, 1)},
      {"fixed never", kF, Ok(1000, 1)},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    LimitParams p;
    p.algorithm = r.algorithm;
    p.min_limit = 1;
    p.max_limit = 1000;
    p.initial_limit = 10;
    p.probe_multiplier = 1;
    LimitCore core(p);
    for (int i = 0; i < 50; ++i) EXPECT_FALSE(core.Update(r.window));
    EXPECT_FALSE(core.probing());
  }
}

// Issue 32, item 1: the limit got stuck far below capacity (Gradient2 at
// 16, Vegas at a handful) after a permanent latency step or a run of fast
// cache hits. Each window is what a limiter saturated at its limit
// reports: in flight at what it admits (probe_limit while a
// re-measurement holds admissions), something refused meanwhile, the
// offered load 15 times what it lets in.
struct StuckRow {
  const char* name;
  LimitAlgorithm algorithm;
  double before_us;  // the server's latency at first
  int fast_windows;  // then this many windows of 20 us cache hits
  double after_us;   // then this latency, for good
};
void PrintTo(const StuckRow& r, std::ostream* os) {
  *os << LimitAlgorithmName(r.algorithm) << ": " << r.name;
}

class StuckLimitTest : public ::testing::TestWithParam<StuckRow> {};

TEST_P(StuckLimitTest, RecoversOnceTheServerIsHealthyAtItsLatency) {
  const StuckRow& r = GetParam();
  LimitParams p;
  p.algorithm = r.algorithm;
  p.min_limit = 1;
  p.max_limit = 1000;
  p.initial_limit = 60;
  LimitCore core(p);
  int windows = 0;
  const auto window = [&](double us) {
    LimitWindow w = Ok(us, core.admission_limit());
    w.saturated = true;
    w.refusals = 15 * w.samples;
    core.Update(w);
    ++windows;
  };
  for (int i = 0; i < 20; ++i) window(r.before_us);
  const double settled = core.limit();
  for (int i = 0; i < r.fast_windows; ++i) window(20);
  double lowest = core.limit();
  int recovered_after = -1;
  for (int i = 0; i < 20000; ++i) {
    window(r.after_us);
    lowest = std::min(lowest, core.limit());
    if (recovered_after < 0 && core.limit() >= settled) recovered_after = i;
  }
  // The server is no slower under load than idle: the limit must come
  // back to where it was, and within a few re-measurement intervals.
  EXPECT_GE(core.limit(), settled) << "lowest " << lowest;
  EXPECT_GE(recovered_after, 0);
  EXPECT_LT(recovered_after, 2000) << "lowest " << lowest;
}

INSTANTIATE_TEST_SUITE_P(
    Triggers, StuckLimitTest,
    ::testing::Values(
        StuckRow{"a permanent step 10 ms -> 20 ms", kG, 10000, 0, 20000},
        StuckRow{"a permanent step 10 ms -> 20 ms", kV, 10000, 0, 20000},
        StuckRow{"twenty windows of cache hits", kG, 10000, 20, 10000},
        StuckRow{"twenty windows of cache hits", kV, 10000, 20, 10000},
        StuckRow{"two hundred windows of cache hits", kV, 10000, 200, 10000}),
    [](const ::testing::TestParamInfo<StuckRow>& i) {
      return std::string(LimitAlgorithmName(i.param.algorithm)) + "_" +
             std::to_string(i.index);
    });

// Cache hits interleaved with ordinary calls (30% of calls, 20 us against
// 10 ms): each window's average is a mixture, sometimes mostly hits. The
// no-load estimate must not follow the low tail down into a collapse.
TEST(LimitCoreTest, InterleavedCacheHitsDoNotCollapseVegasOrGradient2) {
  for (LimitAlgorithm a : {kV, kG}) {
    SCOPED_TRACE(LimitAlgorithmName(a));
    LimitParams p;
    p.algorithm = a;
    p.min_limit = 1;
    p.max_limit = 1000;
    p.initial_limit = 60;
    LimitCore core(p);
    SplitMix64 rng(7);
    double sum = 0;
    int below = 0;
    int longest_below = 0;
    for (int i = 0; i < 20000; ++i) {
      int hits = 0;
      for (int k = 0; k < 10; ++k) hits += rng.NextUnit() < 0.3 ? 1 : 0;
      const double avg = (hits * 20.0 + (10 - hits) * 10000.0) / 10;
      // The server has room for 100: no queue below that.
      LimitWindow w = Ok(avg, std::min(core.admission_limit(), 100));
      w.saturated = true;
      w.refusals = 5 * w.samples;
      core.Update(w);
      if (i < 2000) continue;
      sum += core.limit();
      below = core.limit() < 30 ? below + 1 : 0;
      longest_below = std::max(longest_below, below);
    }
    // Vegas's queue estimate is noisy over mixtures (a window without a hit
    // reads as a queue), so it dips; what must hold is that it comes back,
    // and soon, instead of staying at a handful.
    EXPECT_GE(sum / 18000, 60) << "the mean limit";
    EXPECT_LT(longest_below, 200) << "windows in a row below 30";
  }
}

// A saturated re-measurement measured the queue: the next one holds
// admissions to probe_limit even though hold_admissions is off.
TEST(LimitCoreTest, ASaturatedReMeasurementMakesTheNextOneHold) {
  LimitParams p;
  p.algorithm = kG;
  p.min_limit = 1;
  p.max_limit = 1000;
  p.initial_limit = 20;
  p.probe_multiplier = 1;
  LimitCore core(p);
  ASSERT_FALSE(p.hold_admissions);
  int probes = 0;
  for (int i = 0; i < 200 && probes < 2; ++i) {
    LimitWindow w = Ok(10000, core.admission_limit());
    w.saturated = true;
    if (core.Update(w)) {
      ++probes;
      if (probes == 1) {
        EXPECT_FALSE(core.holding()) << "the first one holds nothing back";
      } else {
        EXPECT_TRUE(core.holding()) << "after a saturated one, it holds";
        EXPECT_EQ(core.admission_limit(), p.probe_limit);
      }
    }
  }
  EXPECT_EQ(probes, 2);
  // The held window measures at probe_limit: the estimate is taken and the
  // next re-measurement holds nothing back again.
  LimitWindow held = Ok(20000, core.admission_limit());
  held.saturated = true;
  core.Update(held);
  EXPECT_FALSE(core.starved());
  EXPECT_EQ(core.no_load_latency(), absl::Microseconds(20000));
}

// The refusal budget of a holding re-measurement grows with the offered
// load: a stuck limit facing 15 times its load must still measure.
TEST(LimitCoreTest, TheRefusalBudgetScalesWithTheOfferedLoad) {
  LimitParams p;
  p.algorithm = kV;
  p.min_limit = 1;
  p.max_limit = 1000;
  p.initial_limit = 4;
  LimitCore quiet(p);
  LimitCore loaded(p);
  LimitWindow w = Ok(10000, 4);
  quiet.Update(w);
  w.refusals = 15 * w.samples;
  loaded.Update(w);
  EXPECT_NEAR(static_cast<double>(loaded.probe_refusal_budget()),
              15.0 * static_cast<double>(quiet.probe_refusal_budget()), 15);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
