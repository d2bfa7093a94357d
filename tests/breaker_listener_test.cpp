// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of breaker_listener.hpp: the names of causes, thresholds and call
// outcomes (log fields and metric labels, so a rename is a breaking change),
// the events' defaults, a listener's defaults (no per-call cost unless
// asked), and a breaker delivering a trip to its listener with the counts
// and rule behind it.

#include "degrade/breaker_listener.hpp"

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

TEST(BreakerListenerTest, EveryTransitionCauseHasItsDocumentedName) {
  const std::vector<std::pair<TransitionCause, absl::string_view>> table = {
      {TransitionCause::kTripped, "tripped"},
      {TransitionCause::kOpenElapsed, "open_elapsed"},
      {TransitionCause::kTrialsSucceeded, "trials_succeeded"},
      {TransitionCause::kTrialFailed, "trial_failed"},
      {TransitionCause::kTrialTimedOut, "trial_timed_out"},
      {TransitionCause::kForcedOpen, "forced_open"},
      {TransitionCause::kDisabled, "disabled"},
      {TransitionCause::kReset, "reset"},
      {TransitionCause::kTrialsFailed, "trials_failed"},
      {TransitionCause::kForcedOpenElapsed, "forced_open_elapsed"},
      {TransitionCause::kBypassed, "bypassed"},
      {TransitionCause::kTrialWaitElapsed, "trial_wait_elapsed"},
  };
  std::set<absl::string_view> seen;
  for (const auto& [cause, name] : table) {
    EXPECT_EQ(TransitionCauseName(cause), name);
    seen.insert(TransitionCauseName(cause));
  }
  EXPECT_EQ(seen.size(), table.size());
  // Appended values keep their numbers (they are logged and compared).
  EXPECT_EQ(static_cast<int>(TransitionCause::kReset), 7);
  EXPECT_EQ(static_cast<int>(TransitionCause::kTrialWaitElapsed), 11);
  EXPECT_EQ(TransitionCauseName(static_cast<TransitionCause>(200)), "unknown");
}

TEST(BreakerListenerTest, OutcomeAndThresholdNames) {
  const std::vector<std::pair<CallOutcome, absl::string_view>> table = {
      {CallOutcome::kSuccess, "success"},
      {CallOutcome::kFailure, "failure"},
      {CallOutcome::kExcluded, "excluded"},
      {CallOutcome::kRejectedOpen, "rejected_open"},
      {CallOutcome::kRejectedTooMany, "rejected_too_many"},
      {CallOutcome::kAbandoned, "abandoned"},
      {CallOutcome::kStale, "stale"},
  };
  for (const auto& [outcome, name] : table) {
    EXPECT_EQ(CallOutcomeName(outcome), name);
  }
  EXPECT_EQ(CallOutcomeName(static_cast<CallOutcome>(99)), "unknown");
  EXPECT_EQ(BreakerThresholdName(BreakerThreshold::kFailureRate),
            "failure_rate");
  EXPECT_EQ(BreakerThresholdName(BreakerThreshold::kSlowCallRate),
            "slow_call_rate");
}

TEST(BreakerListenerTest, EventDefaults) {
  const BreakerStateChange change;
  EXPECT_EQ(change.from, State::kClosed);
  EXPECT_EQ(change.to, State::kClosed);
  EXPECT_EQ(change.forced_until, absl::InfiniteFuture());
  EXPECT_EQ(change.trip.rule, TripReason::Rule::kNone);
  const BreakerCall call;
  EXPECT_EQ(call.outcome, CallOutcome::kSuccess);
  EXPECT_FALSE(call.slow);
  EXPECT_EQ(call.duration, absl::ZeroDuration());
}

TEST(BreakerListenerTest, ADefaultListenerAsksForNoCalls) {
  BreakerListener listener;
  EXPECT_FALSE(listener.wants_calls());
  EXPECT_FALSE(listener.wants_durations());
  listener.OnStateChange(BreakerStateChange{});  // no-ops, callable
  listener.OnThreshold(BreakerThresholdEvent{});
  listener.OnCall(BreakerCall{});
}

struct Recorder : Telemetry {
  struct Listener : BreakerListener {
    explicit Listener(Recorder* r) : r(r) {}
    void OnStateChange(const BreakerStateChange& c) override {
      r->changes.push_back(c);
      r->names.emplace_back(c.breaker);
    }
    Recorder* r;
  };
  std::unique_ptr<BreakerListener> AttachBreaker(
      const BreakerView& view) override {
    attached = view.name();
    return std::make_unique<Listener>(this);
  }
  std::string attached;
  std::vector<BreakerStateChange> changes;
  std::vector<std::string> names;
};

TEST(BreakerListenerTest, ATripArrivesWithItsCauseCountsAndRule) {
  FakeClock clock;
  Recorder recorder;
  BreakerSettings s;
  s.name = "recall";
  s.clock = &clock;
  s.metrics = &recorder;
  s.ready_to_trip = trip::ConsecutiveFailures(2);
  CircuitBreaker<int> breaker(s);
  EXPECT_EQ(recorder.attached, "recall");
  for (int i = 0; i < 2; ++i) {
    (void)breaker.Execute(
        []() -> absl::StatusOr<int> { return absl::UnavailableError("x"); });
  }
  ASSERT_EQ(recorder.changes.size(), 1u);
  const BreakerStateChange& c = recorder.changes[0];
  EXPECT_EQ(c.from, State::kClosed);
  EXPECT_EQ(c.to, State::kOpen);
  EXPECT_EQ(c.cause, TransitionCause::kTripped);
  EXPECT_EQ(c.counts.consecutive_failures, 2u);
  EXPECT_EQ(c.trip.rule, TripReason::Rule::kConsecutiveFailures);
  EXPECT_EQ(recorder.names[0], "recall");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
