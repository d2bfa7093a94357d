// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// AdmissionController: the threshold's meaning (ranks below it pass, so
// shedding is strictly lowest class first), DAGOR's adaptive windows on a
// FakeClock (the alpha/beta steps, both window ends, the floor, a synthetic
// queue it must settle on), the fan-out consistency that cohorts buy, every
// bad setting, clocks at the extremes, and telemetry.

#include "degrade/admission.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "manager_test_util.hpp"

namespace degrade {
namespace {

using ::testing::HasSubstr;

RequestClass Class(Criticality c, int cohort) {
  RequestClass rc;
  rc.criticality = c;
  rc.cohort = static_cast<uint8_t>(cohort);
  return rc;
}

RequestClass OfRank(int rank) {
  return Class(static_cast<Criticality>(rank / kNumCohorts), rank % kNumCohorts);
}

AdmissionOptions Adaptive(const Clock* clock) {
  AdmissionOptions o;
  o.name = "ranker";
  o.adaptive = true;
  o.clock = clock;
  o.metrics = NoTelemetry();
  return o;
}

std::unique_ptr<AdmissionController> Make(AdmissionOptions o) {
  auto c = AdmissionController::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

// Ends the current window on `clock`: advance past the interval and record
// one delay.
void EndWindow(AdmissionController& c, FakeClock& clock, absl::Duration delay,
               absl::Duration interval = absl::Seconds(1)) {
  clock.Advance(interval);
  c.RecordQueuingDelay(delay);
}

// A controller whose adaptive threshold is exactly `t`: with min_threshold
// `t` and tighten_fraction 1, one overloaded window of traffic at every
// rank walks the threshold down to the floor.
std::unique_ptr<AdmissionController> AtThreshold(int t, FakeClock& clock) {
  AdmissionOptions o = Adaptive(&clock);
  o.min_threshold = t;
  o.tighten_fraction = 1.0;
  o.interval_requests = 1'000'000;
  auto c = Make(std::move(o));
  for (int r = 0; r < kAdmitAllRank; ++r) c->Admitted(OfRank(r));
  EndWindow(*c, clock, absl::Milliseconds(100));
  EXPECT_EQ(c->threshold(), t);
  return c;
}

// ---- The threshold ----------------------------------------------------------

TEST(AdmissionControllerTest, DefaultsAreDagorsAndAdmitEverything) {
  const AdmissionOptions o;
  EXPECT_EQ(o.name, "admission");
  EXPECT_FALSE(o.adaptive);
  EXPECT_EQ(o.target_queuing_delay, absl::Milliseconds(20));
  EXPECT_EQ(o.interval, absl::Seconds(1));
  EXPECT_EQ(o.interval_requests, 2000u);
  EXPECT_NEAR(o.tighten_fraction, 0.05, 1e-12);
  EXPECT_NEAR(o.loosen_fraction, 0.01, 1e-12);
  EXPECT_EQ(o.min_threshold, 128);
  EXPECT_EQ(o.retry_after, absl::Seconds(1));

  AdmissionOptions quiet;
  quiet.metrics = NoTelemetry();
  auto c = Make(quiet);
  EXPECT_EQ(c->threshold(), kAdmitAllRank);
  for (int r = 0; r < kAdmitAllRank; ++r) {
    EXPECT_TRUE(c->Admitted(OfRank(r))) << r;
    EXPECT_TRUE(c->Admit(OfRank(r)).ok()) << r;
  }
  const AdmissionStats st = c->stats();
  EXPECT_EQ(st.threshold, kAdmitAllRank);
  for (std::size_t i = 0; i < kNumCriticalities; ++i) {
    EXPECT_EQ(st.admitted[i], 2u * kNumCohorts);
    EXPECT_EQ(st.shed[i], 0u);
  }
}

TEST(AdmissionControllerTest, AThresholdAdmitsExactlyTheRanksBelowIt) {
  FakeClock clock;
  for (const int t : {128, 129, 200, 255, 256, 300, 384, 450, 511}) {
    auto c = AtThreshold(t, clock);
    for (int r = 0; r < kAdmitAllRank; ++r) {
      EXPECT_EQ(c->Admitted(OfRank(r)), r < t) << "threshold " << t << " rank " << r;
    }
  }
}

// SRE ch. 21: a criticality is refused only once every lower one is; DAGOR:
// inside one, the same cohorts go first. Over every threshold, no class is
// refused while a less important class of the same cohort is admitted.
TEST(AdmissionControllerTest, ShedOrderIsMonotoneOverEveryThreshold) {
  FakeClock clock;
  for (int t = 0; t <= kAdmitAllRank; t += 7) {
    auto c = AtThreshold(t, clock);
    for (int u = 0; u < kNumCohorts; ++u) {
      for (int hi = 0; hi < 3; ++hi) {
        for (int lo = hi + 1; lo < 4; ++lo) {
          const bool more = c->Admitted(Class(static_cast<Criticality>(hi), u));
          const bool less = c->Admitted(Class(static_cast<Criticality>(lo), u));
          EXPECT_FALSE(less && !more)
              << "threshold " << t << " cohort " << u << ": criticality " << lo
              << " admitted while " << hi << " refused";
        }
      }
      if (u + 1 < kNumCohorts) {
        // Inside a criticality the higher cohort goes first.
        for (int k = 0; k < 4; ++k) {
          const auto ck = static_cast<Criticality>(k);
          EXPECT_FALSE(c->Admitted(Class(ck, u + 1)) && !c->Admitted(Class(ck, u)));
        }
      }
    }
  }
}

TEST(AdmissionControllerTest, AdmitShedsWithAStatusNamingControllerClassAndThreshold) {
  FakeClock clock;
  auto c = AtThreshold(FloorRank(Criticality::kSheddablePlus, 64), clock);
  EXPECT_TRUE(c->Admit(Class(Criticality::kSheddablePlus, 63)).ok());
  const absl::Status s = c->Admit(Class(Criticality::kSheddable, 5));
  EXPECT_TRUE(IsShed(s)) << s;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("admission \"ranker\""));
  EXPECT_THAT(s.message(), HasSubstr("SHEDDABLE:5 (rank 389)"));
  EXPECT_THAT(s.message(), HasSubstr("threshold 320 (admits through SHEDDABLE_PLUS:63)"));
  EXPECT_EQ(ShedRetryAfter(s), absl::Seconds(1));
  const AdmissionStats st = c->stats();
  EXPECT_EQ(st.threshold, 320);
  // AtThreshold's window admitted every rank; this is the first refusal.
  EXPECT_EQ(st.admitted[static_cast<int>(Criticality::kSheddable)], 1u * kNumCohorts);
  EXPECT_EQ(st.shed[static_cast<int>(Criticality::kSheddable)], 1u);
}

TEST(AdmissionControllerTest, RetryAfterZeroSaysRetryNowAndInfiniteSaysDoNot) {
  FakeClock clock;
  for (const auto& [hint, want] :
       std::vector<std::pair<absl::Duration, absl::Duration>>{
           {absl::ZeroDuration(), absl::ZeroDuration()},
           {absl::Microseconds(1500), absl::Milliseconds(2)},
           {absl::InfiniteDuration(), absl::Milliseconds(-1)}}) {
    AdmissionOptions o = Adaptive(&clock);
    o.retry_after = hint;
    o.min_threshold = 0;
    o.tighten_fraction = 1;
    auto c = Make(o);
    c->Admitted(Class(Criticality::kCriticalPlus, 0));
    EndWindow(*c, clock, absl::Seconds(1));
    ASSERT_EQ(c->threshold(), 0);
    EXPECT_EQ(ShedRetryAfter(c->Admit({})), want) << hint;
  }
}

TEST(AdmissionControllerTest, AnOutOfRangeCohortIsShedAsTheLeastImportantOfItsClass) {
  FakeClock clock;
  auto c = AtThreshold(FloorRank(Criticality::kCritical, 127), clock);
  EXPECT_TRUE(c->Admitted(Class(Criticality::kCritical, 126)));
  EXPECT_FALSE(c->Admitted(Class(Criticality::kCritical, 200)));
  EXPECT_THAT(c->Admit(Class(Criticality::kCritical, 255)).message(),
              HasSubstr("CRITICAL:127 (rank 255)"));
}

// ---- DAGOR's adaptive mode ----------------------------------------------------

// 10 requests at each of the 512 ranks; an overloaded window must cut about
// 5% of the 5,120 admitted (256: 26 ranks of 10), a calm one then add about
// 1% of the 4,860 still admitted (49: 5 ranks).
TEST(AdmissionControllerTest, AnOverloadedWindowShedsAboutAlphaAndACalmOneAdmitsAboutBeta) {
  FakeClock clock;
  AdmissionOptions o = Adaptive(&clock);
  o.interval_requests = 1'000'000;
  auto c = Make(o);
  const auto window = [&](absl::Duration delay) {
    for (int r = 0; r < kAdmitAllRank; ++r) {
      for (int k = 0; k < 10; ++k) c->Admitted(OfRank(r));
    }
    EndWindow(*c, clock, delay);
  };
  window(absl::Milliseconds(20));  // at the target counts as overloaded
  EXPECT_EQ(c->threshold(), kAdmitAllRank - 26);
  window(absl::Milliseconds(19));
  EXPECT_EQ(c->threshold(), kAdmitAllRank - 26 + 5);
  window(absl::ZeroDuration());
  EXPECT_EQ(c->threshold(), kAdmitAllRank - 26 + 5 + 5);
}

TEST(AdmissionControllerTest, AWindowEndsAfterIntervalRequestsWithoutTheClockMoving) {
  FakeClock clock;
  AdmissionOptions o = Adaptive(&clock);
  o.interval_requests = 100;
  auto c = Make(o);
  for (int k = 0; k < 99; ++k) c->Admitted(Class(Criticality::kSheddable, k));
  c->RecordQueuingDelay(absl::Seconds(1));
  EXPECT_EQ(c->threshold(), kAdmitAllRank) << "99 requests is not a window";
  c->Admitted(Class(Criticality::kSheddable, 99));
  c->RecordQueuingDelay(absl::Seconds(1));
  EXPECT_LT(c->threshold(), kAdmitAllRank);
}

TEST(AdmissionControllerTest, AWindowEndsOnceTheIntervalHasPassedAndNotBefore) {
  FakeClock clock;
  auto c = Make(Adaptive(&clock));
  c->Admitted(Class(Criticality::kSheddable, 0));
  clock.Advance(absl::Seconds(1) - absl::Nanoseconds(1));
  c->RecordQueuingDelay(absl::Seconds(1));
  EXPECT_EQ(c->threshold(), kAdmitAllRank);
  clock.Advance(absl::Nanoseconds(1));
  c->RecordQueuingDelay(absl::Seconds(1));
  EXPECT_EQ(c->threshold(), FloorRank(Criticality::kSheddable, 0));
}

TEST(AdmissionControllerTest, AWindowWithoutRequestsChangesNothing) {
  FakeClock clock;
  auto c = AtThreshold(300, clock);
  for (int w = 0; w < 5; ++w) {
    EndWindow(*c, clock, absl::Seconds(5));
    EXPECT_EQ(c->threshold(), 300);
    EndWindow(*c, clock, absl::ZeroDuration());
    EXPECT_EQ(c->threshold(), 300);
  }
}

TEST(AdmissionControllerTest, SustainedOverloadStopsAtMinThresholdAndCalmReturnsToAdmitAll) {
  FakeClock clock;
  auto c = Make(Adaptive(&clock));
  for (int w = 0; w < 500; ++w) {
    for (int r = 0; r < kAdmitAllRank; r += 3) c->Admitted(OfRank(r));
    EndWindow(*c, clock, absl::Seconds(2));
    ASSERT_GE(c->threshold(), FloorRank(Criticality::kCriticalPlus));
  }
  EXPECT_EQ(c->threshold(), FloorRank(Criticality::kCriticalPlus));
  EXPECT_TRUE(c->Admitted(Class(Criticality::kCriticalPlus, 127)));
  EXPECT_FALSE(c->Admitted(Class(Criticality::kCritical, 0)));
  for (int w = 0; w < 2000 && c->threshold() < kAdmitAllRank; ++w) {
    for (int r = 0; r < kAdmitAllRank; r += 3) c->Admitted(OfRank(r));
    EndWindow(*c, clock, absl::ZeroDuration());
  }
  EXPECT_EQ(c->threshold(), kAdmitAllRank);
  for (int r = 0; r < kAdmitAllRank; r += 3) c->Admitted(OfRank(r));
  EndWindow(*c, clock, absl::ZeroDuration());
  EXPECT_EQ(c->threshold(), kAdmitAllRank) << "never above admit-all";
}

TEST(AdmissionControllerTest, NotAdaptiveIgnoresQueuingDelay) {
  FakeClock clock;
  AdmissionOptions o = Adaptive(&clock);
  o.adaptive = false;
  auto c = Make(o);
  for (int w = 0; w < 10; ++w) {
    for (int r = 0; r < kAdmitAllRank; ++r) c->Admitted(OfRank(r));
    EndWindow(*c, clock, absl::Hours(1));
  }
  EXPECT_EQ(c->threshold(), kAdmitAllRank);
}

TEST(AdmissionControllerTest, NegativeAndInfiniteDelaysAreZeroAndOverloaded) {
  FakeClock clock;
  auto c = Make(Adaptive(&clock));
  c->Admitted(Class(Criticality::kSheddable, 50));
  EndWindow(*c, clock, -absl::Hours(1));
  EXPECT_EQ(c->threshold(), kAdmitAllRank);
  c->Admitted(Class(Criticality::kSheddable, 50));
  EndWindow(*c, clock, absl::InfiniteDuration());
  EXPECT_EQ(c->threshold(), FloorRank(Criticality::kSheddable, 50));
}

// A synthetic queue whose delay grows with what was admitted: 40 ms at the
// full offered load, so the target (20 ms) sits at half of it. DAGOR must
// settle just under the target (a sawtooth: 5% down when over, 1% up when
// under), keep shedding strictly by class, and loosen back to admit-all
// when the load falls.
void SettleAndRecover(unsigned seed);

TEST(AdmissionControllerTest, DagorSettlesJustUnderTheTargetAndLoosensWhenLoadFalls) {
  for (const unsigned seed : {7u, 8u, 9u}) {
    SCOPED_TRACE(seed);
    SettleAndRecover(seed);
  }
}

void SettleAndRecover(unsigned seed) {
  FakeClock clock;
  AdmissionOptions o = Adaptive(&clock);
  auto c = Make(o);
  std::mt19937 rng(seed);
  // 25% CRITICAL_PLUS, 40% CRITICAL, 35% split between the sheddables.
  std::discrete_distribution<int> crit({25, 40, 20, 15});
  std::uniform_int_distribution<int> cohort(0, kNumCohorts - 1);
  constexpr int kOffered = 1800;  // per 1 s window, under interval_requests
  const auto run_window = [&](int offered, double full_ms) {
    int admitted = 0;
    // Per cohort, the least important criticality admitted and the most
    // important refused in this window.
    std::array<int, kNumCohorts> worst_admitted;
    std::array<int, kNumCohorts> best_refused;
    worst_admitted.fill(-1);
    best_refused.fill(4);
    for (int i = 0; i < offered; ++i) {
      const RequestClass rc = Class(static_cast<Criticality>(crit(rng)), cohort(rng));
      const int k = static_cast<int>(rc.criticality);
      if (c->Admitted(rc)) {
        ++admitted;
        worst_admitted[rc.cohort] = std::max(worst_admitted[rc.cohort], k);
      } else {
        best_refused[rc.cohort] = std::min(best_refused[rc.cohort], k);
      }
    }
    for (int u = 0; u < kNumCohorts; ++u) {
      EXPECT_FALSE(best_refused[u] < worst_admitted[u])
          << "cohort " << u << ": criticality " << best_refused[u]
          << " refused while " << worst_admitted[u] << " admitted";
    }
    const double delay_ms = full_ms * admitted / kOffered;
    EndWindow(*c, clock, absl::Microseconds(std::llround(delay_ms * 1000)));
    return delay_ms;
  };

  for (int w = 0; w < 300; ++w) run_window(kOffered, 40);
  double sum = 0;
  int over = 0;
  double max_ms = 0;
  for (int w = 0; w < 200; ++w) {
    const double d = run_window(kOffered, 40);
    sum += d;
    over += d >= 20 ? 1 : 0;
    max_ms = std::max(max_ms, d);
  }
  const double mean = sum / 200;
  std::printf("settled: mean %.2f ms, max %.2f ms, %d of 200 windows over, threshold %d\n",
              mean, max_ms, over, c->threshold());
  EXPECT_GT(mean, 17.0) << "sheds more than the target needs";
  EXPECT_LT(mean, 20.0) << "settles above the target";
  EXPECT_LT(max_ms, 22.5);
  EXPECT_LT(over, 70) << "most windows are calm once settled";
  EXPECT_LT(c->threshold(), FloorRank(Criticality::kSheddablePlus))
      << "the sheddables (35%) and some CRITICAL go to halve the load";
  EXPECT_GT(c->threshold(), FloorRank(Criticality::kCriticalPlus));

  // Load falls to a third: 13 ms at most even if everything is admitted.
  int w = 0;
  for (; w < 1000 && c->threshold() < kAdmitAllRank; ++w) {
    EXPECT_LT(run_window(kOffered / 3, 40), 20.0);
  }
  EXPECT_EQ(c->threshold(), kAdmitAllRank) << "after " << w << " windows";
}

// ---- Driver (a): the manager's floors -------------------------------------------

// The research note's three floors, and a fourth level that names none.
constexpr absl::string_view kFloors = R"({
  "degradation": {
    "hold": "10s",
    "level1": {"trigger": {"queue_delay_ms": 10}, "admit": {"min": "SHEDDABLE_PLUS"}},
    "level2": {"trigger": {"queue_delay_ms": 20},
               "admit": {"min": "SHEDDABLE_PLUS", "cohorts_at_min": 64}},
    "level3": {"trigger": {"queue_delay_ms": 50}, "admit": {"min": "CRITICAL"}},
    "level4": {"trigger": {"queue_delay_ms": 100}}
  }
})";

class AdmissionControllerManagerTest : public ManagerTestBase {
 protected:
  std::unique_ptr<DegradationManager> Floors() {
    absl::StatusOr<DegradationConfig> c = ParseDegradationConfig(kFloors);
    EXPECT_TRUE(c.ok()) << c.status();
    return Make(*c);
  }
  std::unique_ptr<AdmissionController> On(const DegradationManager& m,
                                          bool adaptive = false) {
    AdmissionOptions o = Adaptive(&clock_);
    o.adaptive = adaptive;
    o.manager = &m;
    return ::degrade::Make(o);
  }
  // Which criticalities of cohort `u` pass, as a 4-character string ("YYN-").
  static std::string Passing(AdmissionController& c, int u) {
    std::string out;
    for (int k = 0; k < 4; ++k) {
      out += c.Admitted(Class(static_cast<Criticality>(k), u)) ? 'Y' : 'N';
    }
    return out;
  }
};

TEST_F(AdmissionControllerManagerTest, EachLevelShedsItsFloorAndStagedRecoveryLoosensOneStepAtATime) {
  auto m = Floors();
  auto c = On(*m);
  EXPECT_EQ(Passing(*c, 0), "YYYY");
  ObserveOk(*m, "queue_delay_ms", 150);  // straight to level 4
  ASSERT_EQ(m->level(), 4);
  // Level 4 names no floor: level 3's applies, only CRITICAL and above.
  EXPECT_EQ(c->threshold(), FloorRank(Criticality::kCritical));
  EXPECT_EQ(Passing(*c, 0), "YYNN");
  EXPECT_EQ(Passing(*c, 127), "YYNN");
  const absl::Status s = c->Admit(Class(Criticality::kSheddablePlus, 0));
  EXPECT_TRUE(IsShed(s));
  EXPECT_THAT(s.message(), HasSubstr("threshold 256 (admits through CRITICAL:127)"));

  // One level per hold on the way down, the floor loosening with it.
  struct Step {
    int level;
    int threshold;
    const char* cohort0;
    const char* cohort64;
  };
  const Step steps[] = {
      {3, FloorRank(Criticality::kCritical), "YYNN", "YYNN"},
      {2, FloorRank(Criticality::kSheddablePlus, 64), "YYYN", "YYNN"},
      {1, FloorRank(Criticality::kSheddable, 0), "YYYN", "YYYN"},
      {0, kAdmitAllRank, "YYYY", "YYYY"},
  };
  for (const Step& step : steps) {
    ObserveOk(*m, "queue_delay_ms", 1);
    clock_.Advance(absl::Seconds(10));
    ObserveOk(*m, "queue_delay_ms", 1);
    ASSERT_EQ(m->level(), step.level);
    EXPECT_EQ(c->threshold(), step.threshold) << "level " << step.level;
    EXPECT_EQ(c->stats().threshold, step.threshold);
    EXPECT_EQ(Passing(*c, 0), step.cohort0) << "level " << step.level;
    EXPECT_EQ(Passing(*c, 64), step.cohort64) << "level " << step.level;
    EXPECT_EQ(Passing(*c, 63), step.cohort0) << "level " << step.level;
  }
}

// Inside the range a level allows, DAGOR tightens from the floor in force
// (not from its own admit-all), and the lower of the two always wins.
TEST_F(AdmissionControllerManagerTest, TheAdaptiveModeMovesInsideTheFloorAndTheLowerWins) {
  auto m = Floors();
  auto c = On(*m, /*adaptive=*/true);
  ASSERT_TRUE(m->ForceLevel(2, absl::Hours(1)).ok());
  const int floor = FloorRank(Criticality::kSheddablePlus, 64);
  ASSERT_EQ(c->threshold(), floor);
  for (int r = 0; r < kAdmitAllRank; ++r) {
    for (int k = 0; k < 10; ++k) c->Admitted(OfRank(r));
  }
  EndWindow(*c, clock_, absl::Seconds(1));
  // 5% of the 3,200 the floor admitted: 160, 16 ranks below the floor.
  EXPECT_EQ(c->adaptive_threshold(), floor - 16);
  EXPECT_EQ(c->threshold(), floor - 16);
  // The manager recovers to level 0: the adaptive threshold still holds.
  ASSERT_TRUE(m->ForceLevel(0, absl::Hours(1)).ok());
  EXPECT_EQ(c->threshold(), floor - 16);
  // And back at a tighter level the manager's floor is the lower one.
  ASSERT_TRUE(m->ForceLevel(3, absl::Hours(1)).ok());
  EXPECT_EQ(c->threshold(), FloorRank(Criticality::kCritical));
}

// Each user request fans out to 8 services, each with its own controller
// following the same manager level (the same threshold). With the user's
// cohort on every sub-call, a user is served whole or refused whole; with a
// random cohort per call most users get a partial answer. The research
// target: partial service at least 5x rarer with cohorts.
TEST_F(AdmissionControllerManagerTest, CohortAdmissionMakesPartialFanOutsAtLeastFiveTimesRarer) {
  auto m = Floors();
  ASSERT_TRUE(m->ForceLevel(2, absl::Hours(1)).ok());  // SHEDDABLE_PLUS, cohorts < 64
  std::vector<std::unique_ptr<AdmissionController>> hops;
  for (int h = 0; h < 8; ++h) hops.push_back(On(*m));
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> any_cohort(0, kNumCohorts - 1);
  const auto rotation = CohortRotation::Create(absl::Hours(1)).value();
  constexpr int kUsers = 5000;
  int partial_cohort = 0;
  int partial_random = 0;
  int whole_cohort = 0;
  for (int i = 0; i < kUsers; ++i) {
    const int user_cohort = rotation.CohortOf(absl::StrCat("user-", i), clock_.Now());
    int served_cohort = 0;
    int served_random = 0;
    for (auto& hop : hops) {
      served_cohort += hop->Admitted(Class(Criticality::kSheddablePlus, user_cohort));
      served_random += hop->Admitted(Class(Criticality::kSheddablePlus, any_cohort(rng)));
    }
    partial_cohort += served_cohort > 0 && served_cohort < 8;
    partial_random += served_random > 0 && served_random < 8;
    whole_cohort += served_cohort == 8;
  }
  EXPECT_GT(partial_random, kUsers / 2);
  EXPECT_LE(partial_cohort * 5, partial_random)
      << partial_cohort << " partial with cohorts, " << partial_random << " random";
  // About half the users (cohorts below 64) are served whole.
  EXPECT_GT(whole_cohort, kUsers * 4 / 10);
  EXPECT_LT(whole_cohort, kUsers * 6 / 10);
}

TEST_F(AdmissionControllerManagerTest, ARefusedReloadChangesNothingServing) {
  auto m = Floors();
  auto c = On(*m);
  ASSERT_TRUE(m->ForceLevel(2, absl::Hours(1)).ok());
  const int before = c->threshold();
  // A floor that loosens as the level rises is refused.
  absl::StatusOr<DegradationConfig> bad = ParseDegradationConfig(kFloors);
  ASSERT_TRUE(bad.ok());
  bad->levels[2].admit = AdmitFloor{Criticality::kSheddable, 0};
  EXPECT_EQ(m->Reload(*bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->threshold(), before);
  EXPECT_EQ(Passing(*c, 0), "YYYN");
}

// ---- Bad input -----------------------------------------------------------------

TEST(AdmissionControllerTest, CreateRefusesEachBadSettingNamingItAndTheValue) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, std::function<void(AdmissionOptions&)>>> cases = {
      {"admission: name \"\" must not be empty", [](auto& o) { o.name = ""; }},
      {"admission \"x\": tighten_fraction nan must be a finite number in (0, 1]",
       [nan](auto& o) { o.tighten_fraction = nan; }},
      {"tighten_fraction inf must be", [inf](auto& o) { o.tighten_fraction = inf; }},
      {"tighten_fraction 0 must be", [](auto& o) { o.tighten_fraction = 0; }},
      {"tighten_fraction -0.1 must be", [](auto& o) { o.tighten_fraction = -0.1; }},
      {"tighten_fraction 1.5 must be", [](auto& o) { o.tighten_fraction = 1.5; }},
      {"loosen_fraction nan must be", [nan](auto& o) { o.loosen_fraction = nan; }},
      {"loosen_fraction -inf must be", [inf](auto& o) { o.loosen_fraction = -inf; }},
      {"loosen_fraction 0 must be", [](auto& o) { o.loosen_fraction = 0; }},
      {"target_queuing_delay 0 must be positive and finite",
       [](auto& o) { o.target_queuing_delay = absl::ZeroDuration(); }},
      {"target_queuing_delay -1ms must be",
       [](auto& o) { o.target_queuing_delay = absl::Milliseconds(-1); }},
      {"target_queuing_delay inf must be",
       [](auto& o) { o.target_queuing_delay = absl::InfiniteDuration(); }},
      {"interval 0 must be positive and finite",
       [](auto& o) { o.interval = absl::ZeroDuration(); }},
      {"interval inf must be", [](auto& o) { o.interval = absl::InfiniteDuration(); }},
      {"interval -inf must be", [](auto& o) { o.interval = -absl::InfiniteDuration(); }},
      {"interval_requests 0 must be at least 1", [](auto& o) { o.interval_requests = 0; }},
      {"min_threshold -1 must be in [0, 512]", [](auto& o) { o.min_threshold = -1; }},
      {"min_threshold 513 must be in [0, 512]", [](auto& o) { o.min_threshold = 513; }},
      {"retry_after -1ns must not be negative",
       [](auto& o) { o.retry_after = -absl::Nanoseconds(1); }},
  };
  for (const auto& [want, set] : cases) {
    AdmissionOptions o;
    o.name = "x";
    o.metrics = NoTelemetry();
    set(o);
    const auto c = AdmissionController::Create(o);
    ASSERT_FALSE(c.ok()) << want;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << want;
    EXPECT_THAT(c.status().message(), HasSubstr(want));
  }
}

TEST(AdmissionControllerTest, CreateAcceptsTheEdgesOfEveryRange) {
  FakeClock clock;
  AdmissionOptions o = Adaptive(&clock);
  o.tighten_fraction = 1;
  o.loosen_fraction = 1;
  o.target_queuing_delay = absl::Nanoseconds(1);
  o.interval = absl::Nanoseconds(1);
  o.interval_requests = 1;
  o.retry_after = absl::ZeroDuration();
  for (const int min : {0, 512}) {
    o.min_threshold = min;
    EXPECT_TRUE(AdmissionController::Create(o).ok()) << min;
  }
  o.name = std::string("bad\nname\xff");
  auto c = Make(o);
  EXPECT_EQ(c->name(), "bad\\nname\xEF\xBF\xBD");
}

TEST(AdmissionControllerTest, ClocksAtTheExtremesNeitherCrashNorStickTheWindow) {
  for (const absl::Time start : {absl::InfinitePast(), absl::InfiniteFuture(),
                                 absl::UnixEpoch()}) {
    FakeClock clock(start);
    auto c = Make(Adaptive(&clock));
    c->Admitted(Class(Criticality::kSheddable, 0));
    c->RecordQueuingDelay(absl::Seconds(1));  // no time has passed
    for (const absl::Time t : {absl::InfinitePast(), absl::UnixEpoch(),
                               absl::InfiniteFuture(), absl::UnixEpoch()}) {
      clock.Set(t);
      c->Admitted(Class(Criticality::kSheddable, 0));
      c->RecordQueuingDelay(absl::Seconds(1));
      EXPECT_GE(c->threshold(), FloorRank(Criticality::kCriticalPlus));
    }
    // From a finite time the windows run normally again.
    clock.Set(absl::UnixEpoch());
    c->Admitted(Class(Criticality::kSheddable, 0));
    c->RecordQueuingDelay(absl::ZeroDuration());
    const int before = c->threshold();
    c->Admitted(Class(Criticality::kSheddable, 10));
    EndWindow(*c, clock, absl::Seconds(1));
    EXPECT_LE(c->threshold(), std::max(before, FloorRank(Criticality::kSheddable, 10)));
    EXPECT_LT(c->threshold(), kAdmitAllRank);
  }
}

// ---- Telemetry -------------------------------------------------------------------

struct AdmissionSpy : Telemetry {
  struct Detach : TelemetryAttachment {
    explicit Detach(AdmissionSpy* s) : spy(s) {}
    ~Detach() override { spy->view = nullptr; ++spy->detached; }
    AdmissionSpy* spy;
  };
  std::unique_ptr<TelemetryAttachment> AttachAdmission(const AdmissionView& v) override {
    if (throws) throw std::runtime_error("exporter down");
    view = &v;
    return std::make_unique<Detach>(this);
  }
  const AdmissionView* view = nullptr;
  int detached = 0;
  bool throws = false;
};

TEST(AdmissionControllerTest, OffersItsViewToTelemetryUntilDestroyed) {
  FakeClock clock;
  AdmissionSpy spy;
  AdmissionOptions o = Adaptive(&clock);
  o.metrics = &spy;
  auto c = Make(o);
  ASSERT_NE(spy.view, nullptr);
  EXPECT_EQ(spy.view->name(), "ranker");
  c->Admitted(Class(Criticality::kSheddable, 3));
  EndWindow(*c, clock, absl::Seconds(1));  // sheds SHEDDABLE:3 and above
  c->Admitted(Class(Criticality::kSheddable, 3));
  c->Admitted(Class(Criticality::kCritical, 3));
  const AdmissionStats st = spy.view->stats();
  EXPECT_EQ(st.threshold, FloorRank(Criticality::kSheddable, 3));
  EXPECT_EQ(st.admitted[static_cast<int>(Criticality::kSheddable)], 1u);
  EXPECT_EQ(st.shed[static_cast<int>(Criticality::kSheddable)], 1u);
  EXPECT_EQ(st.admitted[static_cast<int>(Criticality::kCritical)], 1u);
  c.reset();
  EXPECT_EQ(spy.view, nullptr);
  EXPECT_EQ(spy.detached, 1);
}

TEST(AdmissionControllerTest, AThrowingAttachLeavesTheControllerServingUnobserved) {
  AdmissionSpy spy;
  spy.throws = true;
  AdmissionOptions o;
  o.metrics = &spy;
  auto c = Make(o);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->Admit({}).ok());
  EXPECT_EQ(spy.view, nullptr);
}

// ---- The pure step ---------------------------------------------------------------

TEST(AdmissionControllerTest, TheWindowStepWalksPastRanksNobodySent) {
  detail::RankHistogram h{};
  h[100] = 50;
  h[300] = 50;
  h[450] = 50;
  detail::AdmissionStep step;
  step.min_threshold = 128;
  // Overloaded from 512: the first rank with requests below it is 450.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 512, 512, true, step), 450);
  // From 450: the next one down is 300.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 450, 450, true, step), 300);
  // From 300: nothing between 128 and 300, so the floor.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 300, 300, true, step), 128);
  // At the floor it stays.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 128, 128, true, step), 128);
  // Calm from 300: walks up past 300's requests (one rank is enough).
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 300, 300, false, step), 301);
  // Calm from 301: nobody sent 301..449, so up to and including 450.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 301, 301, false, step), 451);
  // A manager floor below the adaptive threshold: tightening starts there.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 512, 320, true, step), 300);
  // Loosening starts from the adaptive threshold itself.
  EXPECT_EQ(detail::NextAdmissionThreshold(h, 460, 320, false, step), 512);
  // An empty window changes nothing.
  EXPECT_EQ(detail::NextAdmissionThreshold(detail::RankHistogram{}, 300, 300, true, step), 300);
}

}  // namespace
}  // namespace degrade
