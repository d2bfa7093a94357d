// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Review of issue 15's admission controller: failing tests, each with a
// REVIEW: comment saying what it shows. Not a fix.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/admission_queue.hpp"
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

// REVIEW: the stuck threshold end to end, wired exactly as admission.hpp's
// and admission_queue.hpp's docs say (Admit() before Push(); the queue's
// on_sojourn feeds RecordQueuingDelay; its admission_threshold reads the
// controller). One backlog of unlabelled requests that waited a second
// closes an overloaded window; from then on every request is refused at
// Admit(), the queue stays empty, on_sojourn is never called, and the
// service answers nothing for the rest of the run, although its queue is
// empty and its server idle.
TEST(AdmissionReviewTest, QueuePlusAdaptiveAdmissionServesAgainOnceTheBacklogIsGone) {
  FakeClock clock;
  auto c = MakeController(Adaptive(&clock));
  QueueSettings qs;
  qs.name = "review";
  qs.capacity = 10000;
  qs.codel_target = absl::Seconds(5);  // CoDel out of the way: this is about admission
  qs.codel_interval = absl::Seconds(10);
  qs.deadline_aware = false;
  qs.admission_threshold = [&c] { return c->threshold(); };
  qs.on_sojourn = [&c](absl::Duration d) { c->RecordQueuingDelay(d); };
  qs.clock = &clock;
  qs.metrics = NoTelemetry();
  auto q = AdmissionQueue<int>::Create(std::move(qs)).value();
  std::vector<int> batch;
  batch.reserve(64);
  // A burst the server takes a second to reach.
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(c->Admit(RequestClass{}).ok());
    ASSERT_TRUE(q->Push(int{i}).ok());
  }
  clock.Advance(absl::Seconds(1));
  while (q->PopBatch(&batch, 64) > 0) batch.clear();
  // Ten minutes at 100 requests a second, well inside capacity: each second
  // the server drains whatever was queued (instantly: zero queuing delay).
  uint64_t served_last_minute = 0;
  for (int s = 0; s < 600; ++s) {
    for (int i = 0; i < 100; ++i) {
      if (c->Admit(RequestClass{}).ok()) (void)q->Push(int{i});
    }
    batch.clear();
    while (q->PopBatch(&batch, 64) > 0) {
      if (s >= 540) served_last_minute += batch.size();
      batch.clear();
    }
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_GT(served_last_minute, 0u)
      << "threshold " << c->threshold() << " ten minutes after the burst";
}

// REVIEW: DecodeRequestClass() reads RPC metadata, i.e. text a client
// controls, and quotes it raw into the INVALID_ARGUMENT message
// (request_class.hpp:177-180, and ParseCriticality's message nested inside
// it, :101-103): a newline, a NUL or an ANSI escape in the header reaches
// whoever logs the status (log-line forgery), and the 64-byte cut can split
// a UTF-8 sequence. Elsewhere the library passes such text through
// detail::Printable() (the controller's own name, config errors).
TEST(AdmissionReviewTest, DecodeRequestClassDoesNotEchoControlBytesIntoItsError) {
  static constexpr char kHostile[] = "CRITICAL\n2026-12-01 ERROR forged line\x1b[2J\0:1";
  const std::string hostile(kHostile, sizeof(kHostile) - 1);
  absl::StatusOr<RequestClass> got = DecodeRequestClass(hostile);
  ASSERT_FALSE(got.ok());
  for (const char ch : got.status().message()) {
    const auto u = static_cast<unsigned char>(ch);
    EXPECT_FALSE(u < 0x20 || u == 0x7f)
        << "raw control byte " << static_cast<int>(u) << " in: " << got.status().message();
  }
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
