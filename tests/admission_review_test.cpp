// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Review of issue 15's admission controller: failing tests, each with a
// REVIEW: comment saying what it shows. Not a fix.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/config_parse.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "manager_test_util.hpp"

namespace degrade {
namespace {

RequestClass Class(Criticality c, int cohort) {
  RequestClass rc;
  rc.criticality = c;
  rc.cohort = static_cast<uint8_t>(cohort);
  return rc;
}

AdmissionOptions Adaptive(const Clock* clock) {
  AdmissionOptions o;
  o.name = "review";
  o.adaptive = true;
  o.clock = clock;
  o.metrics = NoTelemetry();
  return o;
}

std::unique_ptr<AdmissionController> MakeController(AdmissionOptions o) {
  auto c = AdmissionController::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

// REVIEW: the adaptive window only ever closes inside RecordQueuingDelay(),
// i.e. when an admitted item leaves the queue. Once the threshold sheds every
// request that is being sent, nothing is enqueued, nothing reports a delay,
// and the window never closes: the threshold is stuck for ever, although
// the queue is empty (zero queuing delay, the calmest state there is).
// Reaching that state takes ONE overloaded window when the traffic is
// unlabelled: the default RequestClass is CRITICAL:0, so all of it is one
// rank, and the tighten walk (admission_window.hpp:73-77) removes that whole
// rank for "about 5% fewer" (it sheds 100%). admission.hpp:383-397 (window
// closes only on a recorded delay) + admission.hpp:93-98 ("a window with no
// delay reported never ends").
TEST(AdmissionReviewTest, AdaptiveModeThatShedsEverythingRecoversOnceTheQueueIsEmpty) {
  FakeClock clock;
  auto c = MakeController(Adaptive(&clock));
  const RequestClass unlabelled;  // CRITICAL:0, what most callers send
  // One overloaded second: 1000 requests admitted, each waited 50 ms.
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(c->Admitted(unlabelled));
  clock.Advance(absl::Seconds(1));
  c->RecordQueuingDelay(absl::Milliseconds(50));
  const int after_one_window = c->threshold();
  // The next ten minutes: the same 1000 requests a second arrive. Whatever
  // is admitted goes through the queue, which is now idle: 0 ms each.
  int admitted_last_second = 0;
  for (int s = 0; s < 600; ++s) {
    admitted_last_second = 0;
    for (int i = 0; i < 1000; ++i) {
      if (c->Admitted(unlabelled)) {
        ++admitted_last_second;
        c->RecordQueuingDelay(absl::ZeroDuration());
      }
    }
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_GT(admitted_last_second, 0)
      << "after one overloaded window the threshold went to " << after_one_window
      << " and ten calm minutes later CRITICAL:0 is still refused 100% (threshold "
      << c->threshold() << ")";
}

// REVIEW: the same stuck state, reached with well-spread cohorts: a
// sustained overload of CRITICAL-only traffic (no CRITICAL_PLUS) walks the
// threshold to min_threshold (128), which then refuses every request sent;
// no delay is ever reported again and the service stays 100% refused.
TEST(AdmissionReviewTest, SustainedOverloadOfCriticalTrafficDoesNotRefuseItForever) {
  FakeClock clock;
  auto c = MakeController(Adaptive(&clock));
  for (int w = 0; w < 500 && c->threshold() > FloorRank(Criticality::kCriticalPlus); ++w) {
    for (int u = 0; u < kNumCohorts; ++u) {
      for (int k = 0; k < 10; ++k) c->Admitted(Class(Criticality::kCritical, u));
    }
    clock.Advance(absl::Seconds(1));
    c->RecordQueuingDelay(absl::Seconds(2));
  }
  ASSERT_EQ(c->threshold(), FloorRank(Criticality::kCriticalPlus));
  // The overload is over; the same traffic keeps arriving for ten minutes and
  // whatever is admitted sees an empty queue.
  int admitted = 0;
  for (int s = 0; s < 600; ++s) {
    for (int u = 0; u < kNumCohorts; ++u) {
      if (c->Admitted(Class(Criticality::kCritical, u))) {
        ++admitted;
        c->RecordQueuingDelay(absl::ZeroDuration());
      }
    }
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_GT(admitted, 0) << "threshold stuck at " << c->threshold();
}

constexpr absl::string_view kTightFloor = R"({
  "degradation": {
    "hold": "10s",
    "level1": {"trigger": {"queue_delay_ms": 10},
               "admit": {"min": "CRITICAL_PLUS", "cohorts_at_min": 0}}
  }
})";

class AdmissionReviewManagerTest : public ManagerTestBase {};

// REVIEW: min_threshold is documented (admission.hpp:109-113) as "Adaptive
// mode never sheds a rank below this: the default admits every
// CRITICAL_PLUS request whatever the delay. The manager's floor is not bound
// by it." But when the manager's floor is below min_threshold during an
// overloaded window, NextAdmissionThreshold returns min(threshold, from) =
// the manager's floor (admission_window.hpp:70), so the ADAPTIVE threshold
// itself drops below min_threshold and keeps shedding after the manager has
// recovered. With a floor of 0 ("CRITICAL_PLUS", cohorts_at_min 0, which
// Validate accepts) the controller then admits nothing at all, CRITICAL_PLUS
// included, and (no admissions, no delays, no window end) never recovers.
TEST_F(AdmissionReviewManagerTest, AManagerFloorBelowMinThresholdDoesNotDragTheAdaptiveThresholdUnderIt) {
  absl::StatusOr<DegradationConfig> config = ParseDegradationConfig(kTightFloor);
  ASSERT_TRUE(config.ok()) << config.status();
  auto m = Make(*config);
  AdmissionOptions o = Adaptive(&clock_);
  o.manager = m.get();
  auto c = MakeController(o);
  ASSERT_EQ(c->threshold(), kAdmitAllRank);
  // Some requests admitted while the server was still at level 0...
  for (int u = 0; u < kNumCohorts; ++u) c->Admitted(Class(Criticality::kCriticalPlus, u));
  // ... then the operator sheds everything for a moment, and the queue still
  // holds the overloaded items admitted before.
  ASSERT_TRUE(m->ForceLevel(1, absl::Hours(1)).ok());
  ASSERT_EQ(c->threshold(), 0);
  clock_.Advance(absl::Seconds(1));
  c->RecordQueuingDelay(absl::Milliseconds(100));
  // The manager recovers.
  ASSERT_TRUE(m->ForceLevel(0, absl::Hours(1)).ok());
  EXPECT_GE(c->adaptive_threshold(), FloorRank(Criticality::kCriticalPlus))
      << "the adaptive threshold went below min_threshold";
  EXPECT_TRUE(c->Admitted(Class(Criticality::kCriticalPlus, 0)))
      << "CRITICAL_PLUS refused by the adaptive mode at level 0";
}

// REVIEW: ShedError documents the hint as "whole milliseconds (rounded up)"
// (status.hpp:78-83, 94) but computes ToInt64Milliseconds(d + 1ms - 1ns), which
// only rounds up on whole nanoseconds. absl::Duration has quarter-nanosecond
// ticks: 1ms + 0.5ns rounds DOWN to 1 ms, and 0.25ns to 0 ("retry now").
TEST(AdmissionReviewTest, ShedRetryAfterRoundsUpSubNanosecondDurations) {
  const absl::Duration a = absl::Milliseconds(1) + absl::Nanoseconds(0.5);
  ASSERT_GT(a, absl::Milliseconds(1));
  std::optional<absl::Duration> got = ShedRetryAfter(ShedError("x", "y", a));
  ASSERT_TRUE(got.has_value());
  EXPECT_GE(*got, a) << "rounded down to " << absl::FormatDuration(*got);

  const absl::Duration b = absl::Nanoseconds(0.25);
  ASSERT_GT(b, absl::ZeroDuration());
  got = ShedRetryAfter(ShedError("x", "y", b));
  ASSERT_TRUE(got.has_value());
  EXPECT_GE(*got, b) << "a positive hint became " << absl::FormatDuration(*got);
}

}  // namespace
}  // namespace degrade
