// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The four-stage recommendation pipeline of examples/recsys_pipeline.cpp
// (examples/recsys/pipeline.hpp), driven through every phase of its outage
// script on a FakeClock. For each phase: every result is non-empty, and once
// the breakers have had time to settle, a request's trace names exactly the
// stages whose backends are failing, with a reason that fits how they fail.
//
// The demo's second part (examples/recsys/ladder_sim.hpp), scaled down so
// that it runs in a Debug build in seconds: the Zipf sampler draws the law
// it claims, every cached user is served stale through the outage and never
// a default, the feature store's call rate follows the recovery ramp and
// stays within 1.2x its pre-outage rate, and the quality of what each rung
// serves falls in the ladder's order. Behaviour, not the demo's figures:
// those change with the seed and the scale.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/stage_result.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "recsys/ladder_sim.hpp"
#include "recsys/pipeline.hpp"

namespace DEGRADE_TEST_UNIT {

using degrade::DegradeReason;
using ::testing::IsSubsetOf;
using ::testing::UnorderedElementsAreArray;

// What the test keeps of one request.
struct Record {
  std::size_t phase = 0;
  absl::Duration offset;  // into the phase
  degrade::DegradationTrace trace;
  bool non_empty = false;
  bool is_default = false;
  bool ranked_on_default_features = false;
  absl::Duration latency;
};

struct ScriptRun {
  std::vector<Record> records;
  // Breaker states at the end of each phase, by stage.
  std::vector<std::array<degrade::State, recsys::kStages>> states;
};

ScriptRun RunWholeScript(uint64_t seed = 42) {
  degrade::FakeClock clock;
  recsys::Pipeline pipeline(&clock);
  ScriptRun run;
  recsys::RunScript(
      clock, pipeline,
      [&](std::size_t p, absl::Duration offset, uint64_t,
          const recsys::Response& r) {
        Record rec;
        rec.phase = p;
        rec.offset = offset;
        rec.trace = r.result.trace();
        rec.non_empty = !r.result.value().empty();
        rec.is_default = r.result.is_default();
        rec.ranked_on_default_features = r.ranked_on_default_features;
        rec.latency = r.latency;
        run.records.push_back(rec);
      },
      [&](std::size_t) {
        std::array<degrade::State, recsys::kStages> s{};
        for (std::size_t i = 0; i < recsys::kStages; ++i) {
          s[i] = pipeline.BreakerState(i);
        }
        run.states.push_back(s);
      },
      seed);
  return run;
}

// The script is deterministic, so one run serves every test that only reads.
const ScriptRun& SharedRun() {
  static const ScriptRun* const run = new ScriptRun(RunWholeScript());
  return *run;
}

// The steady part of a phase: late enough that a breaker left open by the
// previous phase has gone half-open and closed (its timeout plus a margin),
// and early enough that no request straddles into the next phase.
bool Steady(const Record& r) {
  return r.offset >= recsys::kBreakerTimeout + absl::Seconds(1) &&
         r.offset < recsys::kPhaseLength - absl::Seconds(1);
}

// The reasons a stage failing in `mode` may show: the failure itself (on
// the calls the breaker admits, including half-open trials), or the open
// breaker it caused.
std::set<DegradeReason> PlausibleReasons(recsys::Mode mode) {
  switch (mode) {
    case recsys::Mode::kDown:
      return {DegradeReason::kError, DegradeReason::kBreakerOpen};
    case recsys::Mode::kHanging:
      return {DegradeReason::kTimeout, DegradeReason::kBreakerOpen};
    case recsys::Mode::kThrowing:
      return {DegradeReason::kException, DegradeReason::kBreakerOpen};
    case recsys::Mode::kHealthy:
      break;
  }
  return {};
}

DegradeReason RootCause(recsys::Mode mode) {
  switch (mode) {
    case recsys::Mode::kDown:
      return DegradeReason::kError;
    case recsys::Mode::kHanging:
      return DegradeReason::kTimeout;
    case recsys::Mode::kThrowing:
      return DegradeReason::kException;
    case recsys::Mode::kHealthy:
      break;
  }
  return DegradeReason::kNone;
}

std::vector<std::string> FailedStages(const recsys::Phase& phase) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    if (phase.modes[s] != recsys::Mode::kHealthy) {
      out.emplace_back(recsys::kStageNames[s]);
    }
  }
  return out;
}

std::vector<std::string> TracedStages(const degrade::DegradationTrace& t) {
  std::vector<std::string> out;
  for (const degrade::TraceEntry& e : t) out.emplace_back(e.stage());
  return out;
}

class RecsysPhaseTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RecsysPhaseTest, NonEmptyAndTraceNamesExactlyTheFailedStages) {
  const std::size_t p = GetParam();
  const recsys::Phase& phase = recsys::OutageScript()[p];
  const std::vector<std::string> failed = FailedStages(phase);
  const ScriptRun& run = SharedRun();

  std::size_t in_phase = 0;
  std::size_t steady = 0;
  std::array<std::set<DegradeReason>, recsys::kStages> seen;
  for (const Record& r : run.records) {
    if (r.phase != p) continue;
    ++in_phase;
    EXPECT_TRUE(r.non_empty)
        << phase.name << " at +" << absl::FormatDuration(r.offset);
    EXPECT_EQ(r.trace.dropped(), 0u);
    if (!Steady(r)) continue;
    ++steady;
    EXPECT_THAT(TracedStages(r.trace), UnorderedElementsAreArray(failed))
        << phase.name << " at +" << absl::FormatDuration(r.offset) << ": "
        << r.trace.Encode();
    for (std::size_t s = 0; s < recsys::kStages; ++s) {
      const DegradeReason why = r.trace.ReasonFor(recsys::kStageNames[s]);
      if (why != DegradeReason::kNone) seen[s].insert(why);
    }
  }
  // 20 s of one request per 100 ms, give or take a request pushed back by a
  // slow one.
  EXPECT_GE(in_phase, 190u);
  EXPECT_GE(steady, 100u);

  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    const recsys::Mode mode = phase.modes[s];
    SCOPED_TRACE(std::string(recsys::kStageNames[s]));
    if (mode == recsys::Mode::kHealthy) {
      EXPECT_TRUE(seen[s].empty());
      continue;
    }
    const std::set<DegradeReason> plausible = PlausibleReasons(mode);
    EXPECT_THAT(seen[s], IsSubsetOf(plausible));
    // Mostly the breaker is open, but its half-open trials reach the sick
    // backend and show the failure itself.
    EXPECT_EQ(seen[s].count(DegradeReason::kBreakerOpen), 1u);
    EXPECT_EQ(seen[s].count(RootCause(mode)), 1u);
  }
}

TEST_P(RecsysPhaseTest, BreakersAtPhaseEndMatchTheOutage) {
  const std::size_t p = GetParam();
  const recsys::Phase& phase = recsys::OutageScript()[p];
  const ScriptRun& run = SharedRun();
  ASSERT_EQ(run.states.size(), recsys::OutageScript().size());
  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    SCOPED_TRACE(std::string(recsys::kStageNames[s]));
    if (phase.modes[s] == recsys::Mode::kHealthy) {
      EXPECT_EQ(run.states[p][s], degrade::State::kClosed);
    } else {
      // Open, or half-open if its timeout ran out right at the end.
      EXPECT_NE(run.states[p][s], degrade::State::kClosed);
    }
  }
}

std::string PhaseTestName(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = recsys::OutageScript()[info.param].name;
  for (char& c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9'))) {
      c = '_';
    }
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllPhases, RecsysPhaseTest,
                         ::testing::Range(std::size_t{0},
                                          recsys::OutageScript().size()),
                         PhaseTestName);

TEST(RecsysPipelineTest, ScriptCoversTheOutagesOfTheIssue) {
  const std::vector<recsys::Phase>& script = recsys::OutageScript();
  ASSERT_EQ(script.size(), 7u);
  EXPECT_THAT(FailedStages(script[0]), ::testing::IsEmpty());
  EXPECT_THAT(FailedStages(script[1]), ::testing::ElementsAre("features"));
  EXPECT_THAT(FailedStages(script[2]), ::testing::ElementsAre("recall"));
  EXPECT_EQ(script[3].modes[recsys::kRank], recsys::Mode::kHanging);
  EXPECT_EQ(script[4].modes[recsys::kRerank], recsys::Mode::kThrowing);
  EXPECT_EQ(FailedStages(script[5]).size(), recsys::kStages);
  EXPECT_THAT(FailedStages(script[6]), ::testing::IsEmpty());
  // Long enough phases for a breaker to open, probe and close within one.
  EXPECT_GT(recsys::kPhaseLength, 2 * recsys::kBreakerTimeout);
}

TEST(RecsysPipelineTest, RankerSeesDefaultFeaturesAndDownWeightsThem) {
  const ScriptRun& run = SharedRun();
  std::size_t checked = 0;
  for (const Record& r : run.records) {
    if (!Steady(r)) continue;
    const std::string& name = recsys::OutageScript()[r.phase].name;
    if (name == "feature service down") {
      // Features degraded, ranking fresh: the ranker ran on the defaults,
      // knew it, and used the lower weight.
      EXPECT_TRUE(r.trace.Contains("features"));
      EXPECT_TRUE(r.ranked_on_default_features);
      ++checked;
    } else if (name == "healthy" || name == "recovery") {
      EXPECT_FALSE(r.ranked_on_default_features);
    } else if (name == "everything down") {
      // The ranker's breaker is open: nothing ranked on anything.
      EXPECT_FALSE(r.ranked_on_default_features);
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(RecsysPipelineTest, TraceFlowsInRequestOrderWhenEverythingIsDown) {
  const ScriptRun& run = SharedRun();
  std::size_t checked = 0;
  for (const Record& r : run.records) {
    if (!Steady(r) ||
        recsys::OutageScript()[r.phase].name != "everything down") {
      continue;
    }
    EXPECT_THAT(TracedStages(r.trace),
                ::testing::ElementsAre("features", "recall", "rank", "rerank"));
    EXPECT_EQ(r.trace.depth(), 4u);
    EXPECT_TRUE(r.is_default);
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(RecsysPipelineTest, HangingRankerCostsAtMostItsBudget) {
  const ScriptRun& run = SharedRun();
  // A request pays each stage's round trip, and the hanging ranker no more
  // than its budget: it never waits out the 5 s hang.
  absl::Duration worst_case = recsys::kStageBudget;
  for (std::size_t s = 0; s < recsys::kStages; ++s) {
    if (s != recsys::kRank) worst_case += recsys::kStageCost[s];
  }
  absl::Duration slowest = absl::ZeroDuration();
  std::size_t timeouts = 0;
  for (const Record& r : run.records) {
    if (recsys::OutageScript()[r.phase].name != "ranking hanging") continue;
    EXPECT_LE(r.latency, worst_case) << absl::FormatDuration(r.offset);
    slowest = std::max(slowest, r.latency);
    if (r.trace.ReasonFor("rank") == DegradeReason::kTimeout) ++timeouts;
  }
  EXPECT_EQ(slowest, worst_case);
  // The breaker trips after kTripAfterFailures timeouts; later ones are
  // half-open probes, one per breaker timeout.
  EXPECT_GE(timeouts, recsys::kTripAfterFailures);
  EXPECT_LT(timeouts, recsys::kTripAfterFailures + 5);
}

TEST(RecsysPipelineTest, RecoveryEndsHealthy) {
  const ScriptRun& run = SharedRun();
  ASSERT_FALSE(run.records.empty());
  const Record& last = run.records.back();
  EXPECT_EQ(recsys::OutageScript()[last.phase].name, "recovery");
  EXPECT_TRUE(last.trace.empty());
  EXPECT_FALSE(last.is_default);
  for (degrade::State s : run.states.back()) {
    EXPECT_EQ(s, degrade::State::kClosed);
  }
}

TEST(RecsysPipelineTest, Deterministic) {
  const ScriptRun a = RunWholeScript();
  const ScriptRun& b = SharedRun();
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    EXPECT_EQ(a.records[i].trace, b.records[i].trace) << i;
    EXPECT_EQ(a.records[i].offset, b.records[i].offset) << i;
    EXPECT_EQ(a.records[i].latency, b.records[i].latency) << i;
  }
}

TEST(RecsysPipelineTest, RankerWeightFollowsTheRung) {
  using degrade::FallbackTier;
  const auto w = [](FallbackTier t, bool is_default = false) {
    return recsys::PersonalWeight(t, is_default);
  };
  // Fresh and off-ladder defaults keep the weights the ranker always had.
  EXPECT_FLOAT_EQ(w(FallbackTier::kUnspecified), 0.8f);
  EXPECT_FLOAT_EQ(w(FallbackTier::kUnspecified, true), 0.2f);
  // Down the ladder, never more say than the rung above.
  const std::array<FallbackTier, 6> ladder = {
      FallbackTier::kStale1m,  FallbackTier::kStale10m, FallbackTier::kStale1h,
      FallbackTier::kStaleOld, FallbackTier::kSegment,  FallbackTier::kGlobal};
  float above = w(FallbackTier::kUnspecified);
  for (FallbackTier t : ladder) {
    EXPECT_LE(w(t, !degrade::IsStaleTier(t)), above) << degrade::TierName(t);
    above = w(t, !degrade::IsStaleTier(t));
  }
  EXPECT_GT(w(FallbackTier::kStale10m), w(FallbackTier::kSegment, true));
  EXPECT_GT(w(FallbackTier::kSegment, true), w(FallbackTier::kGlobal, true));
  EXPECT_FLOAT_EQ(w(FallbackTier::kGlobal, true), 0.2f);
}

TEST(RecsysPipelineTest, ZipfSamplerDrawsTheLaw) {
  for (const double s : {0.9, 1.3}) {
    constexpr uint64_t kN = 1000;
    constexpr int kDraws = 200'000;
    recsys::ladder_sim::ZipfSampler zipf(kN, s);
    degrade::detail::SplitMix64 rng(11);
    std::vector<int> seen(kN + 1, 0);
    for (int i = 0; i < kDraws; ++i) {
      const uint64_t k = zipf.Sample([&] { return rng.NextUnit(); });
      ASSERT_GE(k, 1u);
      ASSERT_LE(k, kN);
      ++seen[k];
    }
    // The head rank by rank, and the tail beyond rank 100 as a whole, each
    // within five standard deviations of the exact law.
    double tail = 0;
    for (uint64_t k = 101; k <= kN; ++k) tail += zipf.Probability(k);
    int tail_seen = 0;
    for (uint64_t k = 101; k <= kN; ++k) tail_seen += seen[k];
    const auto near = [&](int got, double p) {
      const double mean = p * kDraws;
      return std::abs(got - mean) <= 5 * std::sqrt(mean * (1 - p)) + 1;
    };
    for (uint64_t k = 1; k <= 10; ++k) {
      EXPECT_TRUE(near(seen[k], zipf.Probability(k)))
          << "s " << s << " rank " << k << ": " << seen[k] << " draws, "
          << zipf.Probability(k) * kDraws << " expected";
    }
    EXPECT_TRUE(near(tail_seen, tail)) << "s " << s << ": " << tail_seen;
  }
  // One rank: always it.
  recsys::ladder_sim::ZipfSampler one(1, 0.9);
  degrade::detail::SplitMix64 rng(3);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(one.Sample([&] { return rng.NextUnit(); }), 1u);
  }
}

// The demo's ladder part at a fifth of a percent of its scale: 200,000
// users, a cache of 20,000, 1,000 requests per second.
const recsys::ladder_sim::Report& SharedLadderRun() {
  static const recsys::ladder_sim::Report* const report = [] {
    recsys::ladder_sim::Config c;
    c.users = 200'000;
    c.cache_entries = 20'000;
    c.cache_max_bytes = 16 << 20;
    c.rate = 1000;
    c.warm = absl::Seconds(120);
    auto r = recsys::ladder_sim::Run(c);
    EXPECT_TRUE(r.ok()) << r.status();
    return new recsys::ladder_sim::Report(
        r.ok() ? *std::move(r) : recsys::ladder_sim::Report{});
  }();
  return *report;
}

TEST(RecsysPipelineTest, LadderServesCachedUsersTheirOwnFeaturesInTheOutage) {
  const recsys::ladder_sim::Report& r = SharedLadderRun();
  ASSERT_EQ(r.phases.size(), 3u);
  EXPECT_THAT(recsys::ladder_sim::MissedTargets(r), ::testing::IsEmpty());
  const recsys::ladder_sim::PhaseReport& warm = r.phases[0];
  const recsys::ladder_sim::PhaseReport& out = r.phases[1];
  // The warm phase is all fresh and fills the cache.
  EXPECT_EQ(warm.rungs[0].requests, warm.requests);
  EXPECT_GT(r.cache_after_warm.entries, 0u);
  EXPECT_LE(r.cache_after_warm.entries, r.config.cache_entries);
  // Store down: nothing fresh; every request of a cached user is served its
  // own stale features, and only the others get a segment's or the global
  // mean (the new market has no segment default, so global happens).
  EXPECT_EQ(out.rungs[0].requests, 0u);
  EXPECT_GT(out.cached, out.requests / 4);
  EXPECT_EQ(out.cached_stale, out.cached);
  EXPECT_EQ(out.own, out.cached);
  EXPECT_GT(out.rungs[5].requests, 0u);
  EXPECT_GT(out.rungs[6].requests, 0u);
  for (std::size_t p = 1; p < 3; ++p) {
    EXPECT_EQ(r.phases[p].cached_segment, 0u) << r.phases[p].name;
    EXPECT_EQ(r.phases[p].cached_global, 0u) << r.phases[p].name;
    EXPECT_EQ(r.phases[p].rungs[recsys::ladder_sim::kFailedRung].requests, 0u);
  }
  // The ladder's own counts agree with what the requests saw.
  EXPECT_EQ(out.ladder.stale_total(),
            out.rungs[1].requests + out.rungs[2].requests +
                out.rungs[3].requests + out.rungs[4].requests);
  EXPECT_EQ(out.ladder.global, out.rungs[6].requests);
  // With the breaker open, the store sees only its half-open trials.
  EXPECT_LT(out.store_calls, 30u);
}

TEST(RecsysPipelineTest, LadderRecoveryFollowsTheRamp) {
  const recsys::ladder_sim::Report& r = SharedLadderRun();
  ASSERT_EQ(r.phases.size(), 3u);
  ASSERT_FALSE(r.recovery_ratio.empty());
  EXPECT_NEAR(r.pre_outage_rate, r.config.rate, 1);
  EXPECT_EQ(r.ramp.ramps, 1u);
  EXPECT_GT(r.phases[2].ladder.ramp_refused, 0u);
  EXPECT_LE(r.max_recovery_ratio, 1.2);
  std::size_t ramping = 0;
  for (std::size_t s = 0; s + 1 < r.recovery_ratio.size(); ++s) {
    EXPECT_LE(r.recovery_ratio[s], 1.2) << "second " << s;
    // While the ramp runs, a second's calls stay within the share it
    // admits by the second's end (and a burst of 50 ms), but for the users
    // with nothing cached, who call anyway rather than get a default.
    if (r.recovery_cap[s] >= 0 && r.recovery_cap[s + 1] >= 0) {
      ASSERT_LT(s, r.recovery_forced_ratio.size());
      EXPECT_LE(r.recovery_ratio[s] - r.recovery_forced_ratio[s],
                r.recovery_cap[s + 1] + 0.06)
          << "second " << s;
      ++ramping;
    }
  }
  // A 20 s ramp, seen from whole seconds.
  EXPECT_GE(ramping, 15u);
  // After it, every request calls the store again, as before the outage.
  for (std::size_t s = r.recovery_ratio.size() - 5; s < r.recovery_ratio.size();
       ++s) {
    EXPECT_GE(r.recovery_ratio[s], 0.9) << "second " << s;
  }
}

TEST(RecsysPipelineTest, LadderRungsServeInOrderOfQuality) {
  const recsys::ladder_sim::Report& r = SharedLadderRun();
  std::array<recsys::ladder_sim::RungTally, recsys::ladder_sim::kRungs> all{};
  for (const recsys::ladder_sim::PhaseReport& ph : r.phases) {
    for (std::size_t k = 0; k < all.size(); ++k) {
      all[k].requests += ph.rungs[k].requests;
      all[k].cosine_sum += ph.rungs[k].cosine_sum;
    }
  }
  ASSERT_GT(all[1].requests, 0u);                // stale-1m
  ASSERT_GT(all[5].requests, 0u);                // segment
  ASSERT_GT(all[6].requests, 0u);                // global
  EXPECT_NEAR(all[0].mean_cosine(), 1.0, 1e-6);  // fresh is the truth
  EXPECT_GE(all[0].mean_cosine(), all[1].mean_cosine());
  EXPECT_GT(all[1].mean_cosine(), all[5].mean_cosine());
  EXPECT_GT(all[5].mean_cosine(), all[6].mean_cosine());
}

}  // namespace DEGRADE_TEST_UNIT
