// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The script of a FailingBackend on its own: phase names, the timeline's
// layout and lookup (table-driven), the pure per-phase decision (a table of
// kinds, times and draws), and the builder's normalisation of its
// arguments, including appends racing from several threads. What a backend
// does with the decisions is in failing_backend_test.cpp.

#include "degrade/testing/backend_script.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/testing/failing_backend.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using ::degrade::FakeClock;
using ::degrade::detail::script::Action;
using ::degrade::detail::script::DecideInPhase;
using ::degrade::detail::script::Decision;
using ::degrade::detail::script::Phase;
using ::degrade::detail::script::Timeline;
using ::degrade::testing::FailingBackendCore;
using ::degrade::testing::PhaseKind;
using ::degrade::testing::PhaseKindName;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

Phase PhaseOf(PhaseKind kind, absl::Duration length) {
  Phase p;
  p.kind = kind;
  p.length = length;
  return p;
}

// ---- Phase names ------------------------------------------------------------

TEST(PhaseKindNameTest, NamesEveryKind) {
  const std::vector<std::pair<PhaseKind, absl::string_view>> table = {
      {PhaseKind::kHealthy, "healthy"},
      {PhaseKind::kFailing, "failing"},
      {PhaseKind::kFailingAtRate, "failing-at-rate"},
      {PhaseKind::kThrowing, "throwing"},
      {PhaseKind::kSlow, "slow"},
      {PhaseKind::kHanging, "hanging"},
      {PhaseKind::kFlapping, "flapping"},
  };
  for (const auto& [kind, name] : table) EXPECT_EQ(PhaseKindName(kind), name);
  EXPECT_EQ(PhaseKindName(static_cast<PhaseKind>(200)), "unknown");
  static_assert(PhaseKindName(PhaseKind::kSlow) == "slow", "constexpr");
}

// ---- Timeline ---------------------------------------------------------------

TEST(ScriptTimelineTest, LaysPhasesOutBackToBackTable) {
  struct Row {
    absl::Duration length;
    absl::Time start;
    absl::Time end;
  };
  const absl::Time forever = absl::InfiniteFuture();
  const std::vector<Row> rows = {
      {absl::Seconds(10), kT0, kT0 + absl::Seconds(10)},
      {absl::ZeroDuration(), kT0 + absl::Seconds(10),
       kT0 + absl::Seconds(10)},  // empty
      {-absl::Seconds(3), kT0 + absl::Seconds(10),
       kT0 + absl::Seconds(10)},  // empty
      {absl::Milliseconds(1), kT0 + absl::Seconds(10),
       kT0 + absl::Seconds(10) + absl::Milliseconds(1)},
      {absl::InfiniteDuration(),
       kT0 + absl::Seconds(10) + absl::Milliseconds(1), forever},
      {absl::Seconds(5), forever, forever},  // after a forever phase: never
  };
  Timeline t(kT0);
  EXPECT_EQ(t.end(), kT0);  // empty: ends where it starts
  for (const Row& r : rows) t.Append(PhaseOf(PhaseKind::kFailing, r.length));
  ASSERT_EQ(t.phases().size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(t.phases()[i].start, rows[i].start) << "phase " << i;
    EXPECT_EQ(t.phases()[i].end, rows[i].end) << "phase " << i;
  }
  EXPECT_EQ(t.end(), forever);
}

TEST(ScriptTimelineTest, AtFindsTheActivePhaseTable) {
  Timeline t(kT0);
  t.Append(PhaseOf(PhaseKind::kHealthy, absl::Seconds(10)));     // 0
  t.Append(PhaseOf(PhaseKind::kFailing, absl::ZeroDuration()));  // 1: empty
  t.Append(PhaseOf(PhaseKind::kSlow, absl::Seconds(5)));         // 2
  t.Append(PhaseOf(PhaseKind::kHanging, absl::Seconds(1)));      // 3
  struct Row {
    absl::Duration at;  // from kT0
    int phase;          // -1: outside the script
  };
  const std::vector<Row> rows = {
      {-absl::Nanoseconds(1), -1},
      {absl::ZeroDuration(), 0},
      {absl::Seconds(10) - absl::Nanoseconds(1), 0},
      {absl::Seconds(10), 2},  // the empty phase is never active
      {absl::Seconds(15) - absl::Nanoseconds(1), 2},
      {absl::Seconds(15), 3},
      {absl::Seconds(16), -1},  // ends are exclusive
      {absl::Hours(1), -1},
  };
  for (const Row& r : rows) {
    const Phase* p = t.At(kT0 + r.at);
    const int index =
        p == nullptr ? -1 : static_cast<int>(p - t.phases().data());
    EXPECT_EQ(index, r.phase) << absl::FormatDuration(r.at);
  }
}

TEST(ScriptTimelineTest, DecideCountsCallsPerPhaseAndResetKeepsTheDraws) {
  Timeline t(kT0);
  t.Append(PhaseOf(PhaseKind::kHealthy, absl::Seconds(1)));
  t.Append(PhaseOf(PhaseKind::kThrowing, absl::Seconds(1)));
  EXPECT_FALSE(t.Decide(kT0 - absl::Seconds(1)).scripted);
  EXPECT_FALSE(t.Decide(kT0 + absl::Seconds(2)).scripted);
  const Decision healthy = t.Decide(kT0);
  EXPECT_TRUE(healthy.scripted);
  EXPECT_EQ(healthy.action, Action::kSucceed);
  EXPECT_EQ(t.Decide(kT0 + absl::Seconds(1)).action, Action::kThrow);
  EXPECT_EQ(t.Decide(kT0 + absl::Milliseconds(1500)).action, Action::kThrow);
  EXPECT_EQ(t.phases()[0].calls, 1u);
  EXPECT_EQ(t.phases()[1].calls, 2u);
  t.ResetCalls();
  EXPECT_EQ(t.phases()[1].calls, 0u);
  EXPECT_EQ(t.phases()[1].draws, 2u);  // a rate phase's sequence goes on
  t.Reset(kT0 + absl::Hours(1));
  EXPECT_TRUE(t.phases().empty());
  EXPECT_EQ(t.start(), kT0 + absl::Hours(1));
  EXPECT_EQ(t.end(), kT0 + absl::Hours(1));
}

// ---- One decision -----------------------------------------------------------

TEST(DecideInPhaseTest, KindsTable) {
  const absl::Status down = absl::UnavailableError("down");
  struct Row {
    std::string name;
    Phase phase;
    absl::Duration into;  // from the phase's start
    Action action;
  };
  const auto make = [&](PhaseKind kind) {
    Phase p = PhaseOf(kind, absl::InfiniteDuration());
    p.start = kT0;
    p.end = absl::InfiniteFuture();
    p.status = down;
    p.latency = absl::Milliseconds(250);
    return p;
  };
  const auto flapping = [&](absl::Duration up, absl::Duration down_for) {
    Phase p = make(PhaseKind::kFlapping);
    p.up = up;
    p.down = down_for;
    return p;
  };
  const absl::Duration s = absl::Seconds(1);
  const absl::Duration ns = absl::Nanoseconds(1);
  const std::vector<Row> rows = {
      {"healthy", make(PhaseKind::kHealthy), s, Action::kSucceed},
      {"failing", make(PhaseKind::kFailing), s, Action::kFail},
      {"throwing", make(PhaseKind::kThrowing), s, Action::kThrow},
      {"slow", make(PhaseKind::kSlow), s, Action::kSlow},
      {"hanging", make(PhaseKind::kHanging), s, Action::kHang},
      // Flapping 1 s up, 2 s down, from the phase's start.
      {"flap start", flapping(s, 2 * s), absl::ZeroDuration(),
       Action::kSucceed},
      {"flap end of up", flapping(s, 2 * s), s - ns, Action::kSucceed},
      {"flap down", flapping(s, 2 * s), s, Action::kFail},
      {"flap end of down", flapping(s, 2 * s), 3 * s - ns, Action::kFail},
      {"flap next cycle", flapping(s, 2 * s), 3 * s, Action::kSucceed},
      {"flap cycle 1000", flapping(s, 2 * s), 3000 * s + s, Action::kFail},
      {"flap never down", flapping(s, absl::ZeroDuration()), 5 * s,
       Action::kSucceed},
      {"flap never up", flapping(absl::ZeroDuration(), s), absl::ZeroDuration(),
       Action::kFail},
      {"flap negative up", flapping(-s, s), absl::ZeroDuration(),
       Action::kFail},
  };
  for (const Row& r : rows) {
    const Decision d = DecideInPhase(r.phase, kT0 + r.into, /*draw=*/0);
    EXPECT_TRUE(d.scripted) << r.name;
    EXPECT_EQ(d.action, r.action) << r.name;
    if (d.action == Action::kFail) {
      EXPECT_EQ(d.status, down) << r.name;
    }
    if (d.action == Action::kSlow) {
      EXPECT_EQ(d.latency, absl::Milliseconds(250)) << r.name;
    }
  }
}

TEST(DecideInPhaseTest, FailingAtRateIsAPureFunctionOfSeedAndDraw) {
  Phase p = PhaseOf(PhaseKind::kFailingAtRate, absl::InfiniteDuration());
  p.start = kT0;
  p.end = absl::InfiniteFuture();
  p.status = absl::UnavailableError("sometimes");
  const auto fails = [&p](double rate, uint64_t seed, uint64_t draw) {
    p.rate = rate;
    p.seed = seed;
    return DecideInPhase(p, kT0, draw).action == Action::kFail;
  };
  std::vector<bool> first;
  std::vector<bool> other_seed;
  int failed = 0;
  for (uint64_t k = 0; k < 10000; ++k) {
    const bool f = fails(0.3, 42, k);
    EXPECT_EQ(fails(0.3, 42, k), f) << "draw " << k;  // same in, same out
    if (k < 64) {
      first.push_back(f);
      other_seed.push_back(fails(0.3, 43, k));
    }
    failed += f ? 1 : 0;
    EXPECT_FALSE(fails(0.0, 42, k));
    EXPECT_TRUE(fails(1.0, 42, k));
  }
  EXPECT_NE(first, other_seed);
  // 3000 expected; 5 standard deviations is about +-230.
  EXPECT_GT(failed, 2700);
  EXPECT_LT(failed, 3300);
}

// ---- The builder ------------------------------------------------------------

TEST(BackendScriptTest, RateIsClampedAndNanNeverFails) {
  FakeClock clock;
  struct Row {
    double rate;
    uint64_t expected_failures;  // of 100 calls
  };
  const std::vector<Row> rows = {
      {std::numeric_limits<double>::quiet_NaN(), 0},
      {-1.0, 0},
      {0.0, 0},
      {1.0, 100},
      {7.5, 100},
      {std::numeric_limits<double>::infinity(), 100},
  };
  for (const Row& r : rows) {
    FailingBackendCore core(&clock);
    core.Script().FailingAtRate(r.rate, /*seed=*/1);
    for (int i = 0; i < 100; ++i) (void)core.CallStatus();
    EXPECT_EQ(core.failures(), r.expected_failures) << r.rate;
  }
}

TEST(BackendScriptTest, DefaultStatusesNameTheBackend) {
  FakeClock clock;
  degrade::testing::FailingBackendOptions options;
  options.name = "ranker";
  FailingBackendCore core(&clock, options);
  core.Script()
      .Failing(absl::OkStatus(), absl::Seconds(1))
      .FailingAtRate(1.0, 7, absl::Seconds(1))
      .Flapping(absl::Seconds(1), absl::Seconds(1));
  const absl::Status typo = core.CallStatus();
  EXPECT_EQ(typo.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(typo.message(), HasSubstr("ranker: scripted failure (Failing() "
                                        "was given an OK status)"));
  clock.Advance(absl::Seconds(1));
  const absl::Status rate = core.CallStatus();
  EXPECT_EQ(rate.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(rate.message(), "ranker: scripted failure at rate 1");
  clock.Advance(absl::Milliseconds(2500));  // 1.5 s in: the down half
  const absl::Status flap = core.CallStatus();
  EXPECT_EQ(flap.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(flap.message(), "ranker: scripted flapping, down");
}

TEST(BackendScriptTest, AppendsRacingFromThreadsStillTileTheTimeline) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  FailingBackendCore core(&clock);
  degrade::testing::BackendScript script = core.Script();
  constexpr int kThreads = 4;
  constexpr int kPhasesEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&script] {
      for (int i = 0; i < kPhasesEach; ++i) script.Healthy(absl::Seconds(1));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(core.ScriptEnd(), start + absl::Seconds(kThreads * kPhasesEach));
  EXPECT_EQ(core.counts().phase_calls.size(),
            static_cast<std::size_t>(kThreads * kPhasesEach));
}

}  // namespace DEGRADE_TEST_UNIT
