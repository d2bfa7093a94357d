// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of telemetry.hpp, against a spy telemetry: which components attach
// (explicit, default, NoTelemetry), what their views read, the events a
// breaker and a manager report (with causes and the counts behind them),
// per-call events only when asked for, listener lifetime, and a listener
// that throws. Every clock is a FakeClock.

#include "degrade/telemetry.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"
#include "support/process_defaults.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade_tests::DefaultTelemetryGuard;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Records what components report to it.
struct Spy : Telemetry {
  struct Breaker : BreakerListener {
    Breaker(Spy* spy, bool calls) : spy(spy), calls(calls) {}
    ~Breaker() override { ++spy->breakers_detached; }
    void OnStateChange(const BreakerStateChange& c) override {
      if (spy->throw_on_events) throw std::runtime_error("listener");
      spy->changes.push_back(c);
    }
    bool wants_calls() const override { return calls; }
    void OnCall(const BreakerCall& c) override {
      if (spy->throw_on_events) throw std::runtime_error("listener");
      spy->calls_by_outcome[static_cast<int>(c.outcome)].fetch_add(1);
      if (c.slow) spy->slow_calls.fetch_add(1);
    }
    Spy* spy;
    bool calls;
  };
  struct Manager : ManagerListener {
    explicit Manager(Spy* spy) : spy(spy) {}
    ~Manager() override { ++spy->managers_detached; }
    void OnLevelChange(const LevelChange& c) override {
      spy->level_changes.push_back(c);
    }
    void OnReload(const ReloadEvent& e) override {
      spy->reloads.push_back({e.applied, e.levels, e.level, e.error});
    }
    void OnOverrideExpired(const OverrideExpiredEvent& e) override {
      spy->expired.push_back(e.level);
    }
    void OnPollError(const PollErrorEvent& e) override {
      spy->poll_errors.push_back(e.error);
      if (spy->poll_error_seen != nullptr) spy->poll_error_seen->set_value();
      spy->poll_error_seen = nullptr;
    }
    Spy* spy;
  };
  struct Reload {
    bool applied;
    int levels;
    int level;
    absl::Status error;
  };

  std::unique_ptr<BreakerListener> AttachBreaker(
      const BreakerView& view) override {
    breaker_view = &view;
    attached_names.push_back(view.name());
    return std::make_unique<Breaker>(this, want_calls);
  }
  std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& view) override {
    manager_view = &view;
    attached_names.push_back(view.name());
    return std::make_unique<Manager>(this);
  }

  bool want_calls = false;
  bool throw_on_events = false;
  const BreakerView* breaker_view = nullptr;
  const ManagerView* manager_view = nullptr;
  std::vector<std::string> attached_names;
  int breakers_detached = 0;
  int managers_detached = 0;
  std::vector<BreakerStateChange> changes;
  std::atomic<uint64_t> calls_by_outcome[7] = {};
  std::atomic<uint64_t> slow_calls{0};
  std::vector<LevelChange> level_changes;
  std::vector<Reload> reloads;
  std::vector<int> expired;
  std::vector<absl::Status> poll_errors;
  std::promise<void>* poll_error_seen = nullptr;

  uint64_t calls(CallOutcome o) const {
    return calls_by_outcome[static_cast<int>(o)].load();
  }
};

BreakerSettings Settings(FakeClock* clock, Telemetry* t) {
  BreakerSettings s;
  s.name = "recall";
  s.clock = clock;
  s.metrics = t;
  s.timeout = absl::Seconds(10);
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  return s;
}

absl::StatusOr<int> Fail() { return absl::UnavailableError("down"); }
absl::StatusOr<int> Ok() { return 1; }

// ---- The guard every test that sets the default holds ----
// (tests/support/process_defaults.hpp)

Telemetry* AFailingTestsDefault() {
  static Spy spy;
  return &spy;
}

void SetTheDefaultAndFail() {
  DefaultTelemetryGuard guard(AFailingTestsDefault());
  ASSERT_EQ(DefaultTelemetry(), AFailingTestsDefault());
  FAIL() << "a test fails while it holds the default";
}

TEST(TelemetryTest, TheDefaultGuardPutsBackThePreviousDefault) {
  Telemetry* const before = DefaultTelemetry();
  Spy outer;
  Spy inner;
  {
    DefaultTelemetryGuard a(&outer);
    EXPECT_EQ(a.saved(), before);
    EXPECT_EQ(DefaultTelemetry(), &outer);
    {
      DefaultTelemetryGuard b(&inner);
      EXPECT_EQ(b.saved(), &outer);
      EXPECT_EQ(DefaultTelemetry(), &inner);
      SetDefaultTelemetry(nullptr);  // changed again by hand under the guard
    }
    EXPECT_EQ(DefaultTelemetry(), &outer);
    {
      DefaultTelemetryGuard c;  // saves only
      SetDefaultTelemetry(&inner);
    }
    EXPECT_EQ(DefaultTelemetry(), &outer);
  }
  EXPECT_EQ(DefaultTelemetry(), before);
}

TEST(TelemetryTest, TheDefaultGuardPutsItBackWhenATestFailsOrThrows) {
  Spy previous;
  DefaultTelemetryGuard guard(&previous);
  EXPECT_FATAL_FAILURE(SetTheDefaultAndFail(),
                       "a test fails while it holds the default");
  EXPECT_EQ(DefaultTelemetry(), &previous);
  try {
    DefaultTelemetryGuard thrown_through(AFailingTestsDefault());
    throw std::runtime_error("unwinding");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(DefaultTelemetry(), &previous);
}

// ---- Which components attach ----

TEST(TelemetryTest, NoTelemetryByDefaultSoNothingAttaches) {
  DefaultTelemetryGuard guard;
  SetDefaultTelemetry(nullptr);
  EXPECT_EQ(DefaultTelemetry(), nullptr);
  FakeClock clock;
  Spy spy;
  CircuitBreaker<int> b(Settings(&clock, nullptr));
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);
  EXPECT_EQ(b.state(), State::kOpen);
  EXPECT_THAT(spy.attached_names, IsEmpty());
}

TEST(TelemetryTest, TheDefaultIsUsedWhenTheOptionsNameNone) {
  DefaultTelemetryGuard guard;
  FakeClock clock;
  Spy by_default;
  Spy explicit_one;
  SetDefaultTelemetry(&by_default);
  CircuitBreaker<int> a(Settings(&clock, nullptr));
  CircuitBreaker<int> b(Settings(&clock, &explicit_one));
  CircuitBreaker<int> c(Settings(&clock, NoTelemetry()));
  EXPECT_THAT(by_default.attached_names, ElementsAre("recall"));
  EXPECT_THAT(explicit_one.attached_names, ElementsAre("recall"));
  // A component keeps what it attached to when the default changes later.
  SetDefaultTelemetry(nullptr);
  for (int i = 0; i < 3; ++i) (void)a.Execute(Fail);
  ASSERT_EQ(by_default.changes.size(), 1u);
  EXPECT_EQ(by_default.changes[0].to, State::kOpen);
}

TEST(TelemetryTest, NoTelemetryAttachesToNothing) {
  Telemetry* none = NoTelemetry();
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none, NoTelemetry());
  FakeClock clock;
  CircuitBreaker<int> b(Settings(&clock, none));
  EXPECT_EQ(detail::ResolveTelemetry(none), nullptr);
}

// ---- Breakers ----

TEST(BreakerTelemetryTest, EveryTransitionCarriesItsCauseAndCounts) {
  FakeClock clock;
  Spy spy;
  BreakerSettings s = Settings(&clock, &spy);
  s.max_requests = 2;
  s.half_open_max_wait = absl::Seconds(5);
  CircuitBreaker<int> b(s);

  (void)b.Execute(Ok);
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);  // trips
  clock.Advance(absl::Seconds(11));
  EXPECT_EQ(b.state(), State::kHalfOpen);  // open -> half-open
  (void)b.Execute(Fail);                   // a trial fails
  clock.Advance(absl::Seconds(11));
  (void)b.state();
  auto trial = b.Allow();  // a trial that never reports in time
  ASSERT_TRUE(trial.ok());
  clock.Advance(absl::Seconds(6));
  (void)b.state();  // half_open_max_wait passed
  clock.Advance(absl::Seconds(11));
  (void)b.Execute(Ok);
  (void)b.Execute(Ok);  // max_requests successes close it
  b.ForceOpen();
  b.Disable();
  b.ForceOpen();
  b.Reset();

  std::vector<std::pair<State, TransitionCause>> seen;
  for (const BreakerStateChange& c : spy.changes) {
    EXPECT_EQ(c.breaker, "recall");
    seen.emplace_back(c.to, c.cause);
  }
  using C = TransitionCause;
  EXPECT_THAT(seen, ElementsAre(std::pair(State::kOpen, C::kTripped),
                                std::pair(State::kHalfOpen, C::kOpenElapsed),
                                std::pair(State::kOpen, C::kTrialFailed),
                                std::pair(State::kHalfOpen, C::kOpenElapsed),
                                std::pair(State::kOpen, C::kTrialTimedOut),
                                std::pair(State::kHalfOpen, C::kOpenElapsed),
                                std::pair(State::kClosed, C::kTrialsSucceeded),
                                std::pair(State::kOpen, C::kForcedOpen),
                                std::pair(State::kClosed, C::kDisabled),
                                std::pair(State::kOpen, C::kForcedOpen),
                                std::pair(State::kClosed, C::kReset)));
  // The trip's event says why: the counts ready_to_trip saw, before the new
  // generation cleared them.
  const BreakerStateChange& trip = spy.changes[0];
  EXPECT_EQ(trip.from, State::kClosed);
  EXPECT_EQ(trip.counts.consecutive_failures, 3u);
  EXPECT_EQ(trip.counts.total_failures, 3u);
  EXPECT_EQ(trip.counts.total_successes, 1u);
  EXPECT_EQ(trip.time, clock.Now() - absl::Seconds(39));
  // The close reports the trials that succeeded.
  EXPECT_EQ(spy.changes[6].counts.total_successes, 2u);
}

TEST(BreakerTelemetryTest, TheViewReadsWithoutMovingTheBreaker) {
  FakeClock clock;
  Spy spy;
  CircuitBreaker<int> b(Settings(&clock, &spy));
  ASSERT_NE(spy.breaker_view, nullptr);
  const BreakerView& v = *spy.breaker_view;
  EXPECT_EQ(v.name(), "recall");
  EXPECT_EQ(v.degraded_since(), absl::InfiniteFuture());
  (void)b.Execute(Ok);
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);
  const absl::Time opened = clock.Now();
  EXPECT_EQ(v.observed_state(), State::kOpen);
  EXPECT_EQ(v.totals().successes, 1u);
  EXPECT_EQ(v.totals().failures, 3u);
  EXPECT_EQ(v.transitions(State::kClosed, State::kOpen), 1u);
  EXPECT_EQ(v.transitions(State::kOpen, State::kHalfOpen), 0u);
  EXPECT_EQ(v.degraded_since(), opened);
  clock.Advance(absl::Seconds(11));
  EXPECT_EQ(v.now(), clock.Now());
  // Past the timeout the view answers half-open, but only a call or state()
  // moves the breaker (and runs its callbacks).
  EXPECT_EQ(v.observed_state(), State::kHalfOpen);
  EXPECT_EQ(v.transitions(State::kOpen, State::kHalfOpen), 0u);
  EXPECT_EQ(spy.changes.size(), 1u);
  EXPECT_EQ(b.state(), State::kHalfOpen);
  EXPECT_EQ(v.transitions(State::kOpen, State::kHalfOpen), 1u);
  EXPECT_EQ(spy.changes.size(), 2u);
}

TEST(BreakerTelemetryTest, TheListenerDiesWithTheBreaker) {
  FakeClock clock;
  Spy spy;
  {
    CircuitBreaker<int> b(Settings(&clock, &spy));
    EXPECT_EQ(spy.breakers_detached, 0);
  }
  EXPECT_EQ(spy.breakers_detached, 1);
}

TEST(BreakerTelemetryTest, PerCallEventsOnlyForAListenerThatAsks) {
  FakeClock clock;
  Spy quiet;
  Spy loud;
  loud.want_calls = true;
  for (Spy* spy : {&quiet, &loud}) {
    BreakerSettings s = Settings(&clock, spy);
    s.max_requests = 1;
    s.slow_call_duration = absl::Milliseconds(100);
    s.is_excluded = [](const absl::Status& st) {
      return st.code() == absl::StatusCode::kInvalidArgument;
    };
    CircuitBreaker<int> b(s);
    (void)b.Execute(Ok);
    (void)b.Execute([&clock]() -> absl::StatusOr<int> {
      clock.Advance(absl::Milliseconds(150));
      return 1;
    });
    (void)b.Execute([]() -> absl::StatusOr<int> {
      return absl::InvalidArgumentError("x");
    });
    { auto p = b.Allow(); }  // abandoned
    auto stale = b.Allow();
    ASSERT_TRUE(stale.ok());
    for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);  // trips
    stale->Done(absl::OkStatus());                      // a generation ago
    (void)b.Execute(Ok);                                // rejected: open
    clock.Advance(absl::Seconds(11));
    auto trial = b.Allow();
    ASSERT_TRUE(trial.ok());
    (void)b.Execute(Ok);  // rejected: the one trial slot is taken
    trial->Done(absl::OkStatus());
  }
  for (int o = 0; o < 7; ++o) {
    EXPECT_EQ(quiet.calls(static_cast<CallOutcome>(o)), 0u) << o;
  }
  EXPECT_EQ(loud.calls(CallOutcome::kSuccess), 3u);  // incl. slow and trial
  EXPECT_EQ(loud.calls(CallOutcome::kFailure), 3u);
  EXPECT_EQ(loud.calls(CallOutcome::kExcluded), 1u);
  EXPECT_EQ(loud.calls(CallOutcome::kAbandoned), 1u);
  EXPECT_EQ(loud.calls(CallOutcome::kStale), 1u);
  EXPECT_EQ(loud.calls(CallOutcome::kRejectedOpen), 1u);
  EXPECT_EQ(loud.calls(CallOutcome::kRejectedTooMany), 1u);
  EXPECT_EQ(loud.slow_calls.load(), 1u);
}

TEST(BreakerTelemetryTest, AThrowingListenerCostsTheUserCallbackNothing) {
  FakeClock clock;
  Spy spy;
  spy.throw_on_events = true;
  spy.want_calls = true;
  BreakerSettings s = Settings(&clock, &spy);
  std::vector<State> user_saw;
  s.on_state_change = [&user_saw](const std::string&, State, State to) {
    user_saw.push_back(to);
  };
  CircuitBreaker<int> b(s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.Execute(Fail).status().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_TRUE(IsBreakerOpen(b.Execute(Ok).status()));
  EXPECT_THAT(user_saw, ElementsAre(State::kOpen));
}

TEST(BreakerTelemetryTest, PerCallEventsFromManyThreadsAreAllDelivered) {
  Spy spy;
  spy.want_calls = true;
  BreakerSettings s;
  s.name = "hot";
  s.metrics = &spy;
  s.ready_to_trip = [](const Counts&) { return false; };
  CircuitBreaker<int> b(s);
  constexpr int kThreads = 4;
  constexpr int kCalls = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&b, t] {
      for (int i = 0; i < kCalls; ++i) {
        (void)b.Execute([i, t]() -> absl::StatusOr<int> {
          if ((i + t) % 4 == 0) return absl::UnavailableError("x");
          return i;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(spy.calls(CallOutcome::kSuccess) + spy.calls(CallOutcome::kFailure),
            uint64_t{kThreads} * kCalls);
  EXPECT_EQ(spy.calls(CallOutcome::kSuccess), b.totals().successes);
  EXPECT_EQ(spy.calls(CallOutcome::kFailure), b.totals().failures);
}

// ---- Managers ----

DegradationConfig OneLevel() {
  DegradationConfig c;
  c.hold = absl::Seconds(10);
  LevelSpec l1;
  l1.enter = {{"queue_length", 20}};
  l1.recover = {{"queue_length", 10}};
  l1.disable = {"debug_log"};
  c.levels = {l1};
  return c;
}

TEST(ManagerTelemetryTest, LevelChangesReloadsOverridesAndPollErrors) {
  FakeClock clock;
  Spy spy;
  ManagerOptions o;
  o.name = "inference";
  o.clock = &clock;
  o.metrics = &spy;
  auto m = std::make_unique<DegradationManager>(o);
  ASSERT_EQ(spy.attached_names, std::vector<std::string>{"inference"});
  ASSERT_NE(spy.manager_view, nullptr);
  EXPECT_FALSE(spy.manager_view->has_own_log());

  ASSERT_TRUE(m->Reload(OneLevel()).ok());
  EXPECT_FALSE(m->Reload(DegradationConfig{}).ok());  // no levels: refused
  ASSERT_TRUE(m->Observe("queue_length", 25).ok());
  ASSERT_TRUE(m->ForceLevel(0, absl::Seconds(5)).ok());
  clock.Advance(absl::Seconds(6));
  m->Evaluate();  // the override expires; the signal takes over at once
  m->AddSource("queue_length",
               []() -> double { throw std::runtime_error("x"); });
  EXPECT_FALSE(m->PollOnce().ok());  // PollOnce returns errors; no event
  EXPECT_THAT(spy.poll_errors, IsEmpty());
  // The monitor reports a failing source as an event, once per error. Its
  // first tick runs at once; wait for the event it sends (no sleep).
  std::promise<void> seen;
  std::future<void> seen_future = seen.get_future();
  spy.poll_error_seen = &seen;
  ASSERT_TRUE(m->Start(absl::Hours(1)).ok());
  ASSERT_EQ(seen_future.wait_for(std::chrono::seconds(60)),
            std::future_status::ready);
  m->Stop();

  ASSERT_EQ(spy.reloads.size(), 2u);
  EXPECT_TRUE(spy.reloads[0].applied);
  EXPECT_EQ(spy.reloads[0].levels, 1);
  EXPECT_FALSE(spy.reloads[1].applied);
  EXPECT_EQ(spy.reloads[1].error.code(), absl::StatusCode::kInvalidArgument);

  std::vector<std::pair<int, LevelChangeReason>> levels;
  for (const LevelChange& c : spy.level_changes) {
    EXPECT_EQ(c.manager, "inference");
    levels.emplace_back(c.to, c.reason);
  }
  EXPECT_THAT(levels, ElementsAre(std::pair(1, LevelChangeReason::kSignal),
                                  std::pair(0, LevelChangeReason::kOverride),
                                  std::pair(1, LevelChangeReason::kSignal)));
  EXPECT_EQ(spy.level_changes[0].signal, "queue_length");
  EXPECT_EQ(spy.level_changes[0].value, 25);
  EXPECT_EQ(spy.level_changes[0].threshold, 20);
  EXPECT_EQ(spy.level_changes[1].until, clock.Now() - absl::Seconds(1));
  EXPECT_THAT(spy.expired, ElementsAre(0));
  ASSERT_EQ(spy.poll_errors.size(), 1u);
  EXPECT_TRUE(IsCallableException(spy.poll_errors[0]));

  const ManagerStats st = spy.manager_view->stats();
  EXPECT_EQ(st.level, 1);
  EXPECT_EQ(st.num_levels, 1);
  EXPECT_EQ(st.reloads, 1u);
  EXPECT_EQ(st.rejected_reloads, 1u);
  ASSERT_EQ(st.at_or_above_since.size(), 1u);
  EXPECT_EQ(st.at_or_above_since[0], clock.Now());
  m.reset();
  EXPECT_EQ(spy.managers_detached, 1);
}

TEST(ManagerTelemetryTest, WithoutTelemetryOrSinkLevelChangesGoToStderr) {
  DefaultTelemetryGuard guard;
  SetDefaultTelemetry(nullptr);
  FakeClock clock;
  ManagerOptions o;
  o.name = "lonely";
  o.clock = &clock;
  DegradationManager m(o);
  ASSERT_TRUE(m.Reload(OneLevel()).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(m.Observe("queue_length", 30).ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr(R"("manager":"lonely","event":"level_change")"));
}

TEST(ManagerTelemetryTest, AnOwnSinkTakesTheLinesAndTheTelemetryIsTold) {
  FakeClock clock;
  Spy spy;
  std::vector<std::string> lines;
  ManagerOptions o;
  o.clock = &clock;
  o.metrics = &spy;
  o.log_sink = [&lines](absl::string_view l) { lines.emplace_back(l); };
  DegradationManager m(o);
  EXPECT_TRUE(spy.manager_view->has_own_log());
  ASSERT_TRUE(m.Reload(OneLevel()).ok());
  ASSERT_TRUE(m.Observe("queue_length", 30).ok());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr(R"("event":"config_reloaded")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("event":"level_change")"));
  EXPECT_EQ(spy.level_changes.size(), 1u);  // and the listener still hears
}

// ---- Found by review ----

// A Telemetry whose every Attach* throws.
struct ThrowingTelemetry : Telemetry {
  std::unique_ptr<BreakerListener> AttachBreaker(const BreakerView&) override {
    throw std::runtime_error("exporter down");
  }
  std::unique_ptr<ManagerListener> AttachManager(const ManagerView&) override {
    throw std::runtime_error("exporter down");
  }
};

TEST(TelemetryTest, AThrowingAttachLeavesTheComponentUnobserved) {
  FakeClock clock;
  ThrowingTelemetry t;
  CircuitBreaker<int> b(Settings(&clock, &t));
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);
  EXPECT_EQ(b.state(), State::kOpen);
  ManagerOptions o;
  o.clock = &clock;
  o.metrics = &t;
  o.log_sink = [](absl::string_view) {};
  DegradationManager m(o);
  ASSERT_TRUE(m.Reload(OneLevel()).ok());
  ASSERT_TRUE(m.Observe("queue_length", 30).ok());
  EXPECT_EQ(m.level(), 1);
}

// A telemetry that attaches to managers without writing their lines (a
// metrics bridge): the level changes still reach a log.
TEST(ManagerTelemetryTest, ATelemetryThatWritesNoLinesLeavesThemOnStderr) {
  FakeClock clock;
  Spy spy;
  ManagerOptions o;
  o.name = "bridged";
  o.clock = &clock;
  o.metrics = &spy;
  DegradationManager m(o);
  ASSERT_TRUE(m.Reload(OneLevel()).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(m.Observe("queue_length", 30).ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr(R"("manager":"bridged","event":"level_change")"));
  EXPECT_EQ(spy.level_changes.size(), 1u);
}

// Successes on other threads reset the failure streak between the rule's
// decision and the event: the event must carry what the rule saw.
TEST(BreakerTelemetryTest, TrippedEventsCarryTheCountsTheRuleSaw) {
  struct Checker : Telemetry {
    struct L : BreakerListener {
      explicit L(Checker* c) : c(c) {}
      void OnStateChange(const BreakerStateChange& e) override {
        if (e.cause != TransitionCause::kTripped) return;
        ++c->trips;
        if (e.counts.consecutive_failures < 3) ++c->inconsistent;
      }
      Checker* c;
    };
    std::unique_ptr<BreakerListener> AttachBreaker(const BreakerView&) override {
      return std::make_unique<L>(this);
    }
    std::atomic<int> trips{0};
    std::atomic<int> inconsistent{0};
  };
  Checker checker;
  BreakerSettings s;
  s.name = "racy";
  s.metrics = &checker;
  s.ready_to_trip = trip::ConsecutiveFailures(3);
  s.timeout = absl::Nanoseconds(1);  // half-open again at once
  CircuitBreaker<int> b(s);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&b, t] {
      for (int i = 0; i < 20000; ++i) {
        (void)b.Execute([t, i]() -> absl::StatusOr<int> {
          if (t == 0 && i % 8 != 0) return absl::UnavailableError("x");
          return i;
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(checker.trips.load(), 0);
  EXPECT_EQ(checker.inconsistent.load(), 0);
}

TEST(BreakerTelemetryTest, AFailedTrialShowsInTheEventsCounts) {
  FakeClock clock;
  Spy spy;
  BreakerSettings s = Settings(&clock, &spy);
  s.max_requests = 2;
  CircuitBreaker<int> b(s);
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);
  clock.Advance(absl::Seconds(11));
  (void)b.Execute(Ok);
  (void)b.Execute(Fail);
  ASSERT_EQ(spy.changes.size(), 3u);
  const BreakerStateChange& e = spy.changes[2];
  EXPECT_EQ(e.cause, TransitionCause::kTrialFailed);
  EXPECT_EQ(e.counts.requests, 2u);
  EXPECT_EQ(e.counts.total_successes, 1u);
  EXPECT_EQ(e.counts.total_failures, 1u);
  EXPECT_EQ(e.counts.consecutive_failures, 1u);
  EXPECT_EQ(e.counts.consecutive_successes, 0u);
}

TEST(BreakerTelemetryTest, SlowIsReportedForSuccessesAndFailuresOnly) {
  FakeClock clock;
  Spy spy;
  spy.want_calls = true;
  BreakerSettings s = Settings(&clock, &spy);
  s.slow_call_duration = absl::Milliseconds(10);
  s.is_excluded = [](const absl::Status& st) {
    return st.code() == absl::StatusCode::kInvalidArgument;
  };
  CircuitBreaker<int> b(s);
  (void)b.Execute([&clock]() -> absl::StatusOr<int> {
    clock.Advance(absl::Milliseconds(20));
    return absl::InvalidArgumentError("client");
  });
  EXPECT_EQ(spy.calls(CallOutcome::kExcluded), 1u);
  EXPECT_EQ(spy.slow_calls.load(), 0u);
  EXPECT_EQ(b.totals().slow_calls, 0u);
  (void)b.Execute([&clock]() -> absl::StatusOr<int> {
    clock.Advance(absl::Milliseconds(20));
    return 1;
  });
  EXPECT_EQ(spy.slow_calls.load(), 1u);
  EXPECT_EQ(b.totals().slow_calls, 1u);
}

// Readings at the extremes must neither overflow (UBSan runs this) nor
// make a tripped breaker look closed.
TEST(BreakerTelemetryTest, ClocksAtTheExtremesNeitherOverflowNorHideATrip) {
  FakeClock clock;
  clock.Set(absl::InfinitePast());
  Spy spy;
  BreakerSettings s = Settings(&clock, &spy);
  s.window = SlidingWindow::Time(absl::Seconds(10));
  s.slow_call_duration = absl::Milliseconds(1);
  CircuitBreaker<int> b(s);
  (void)b.Execute([&clock]() -> absl::StatusOr<int> {
    clock.Set(absl::InfiniteFuture());  // started at -inf, ended at +inf
    return 1;
  });
  EXPECT_EQ(b.totals().slow_calls, 1u);
  clock.Set(absl::InfinitePast());
  EXPECT_EQ(b.counts().window_calls, 1u);  // read at -inf, admitted at -inf
  clock.Advance(absl::InfiniteDuration());
  for (int i = 0; i < 3; ++i) (void)b.Execute(Fail);
  ASSERT_EQ(b.state(), State::kOpen);
  EXPECT_NE(spy.breaker_view->degraded_since(), absl::InfiniteFuture());
}

// Found by TSan in CI (MetricsConcurrencyTest): the breaker offered its view
// from a base class's constructor, and a scrape on another thread could
// call the view while the derived constructor was still rewriting the
// object's vtable. A telemetry that reads the view from a thread of its own
// the moment it is offered it must race with nothing (TSan checks; the
// reader and the constructor are otherwise unordered).
TEST(TelemetryTest, AViewReadFromAnotherThreadAtAttachRacesWithNothing) {
  struct Scraper final : Telemetry {
    std::unique_ptr<BreakerListener> AttachBreaker(
        const BreakerView& view) override {
      reader = std::thread([&view, this] {
        for (int i = 0; i < 200; ++i) {
          if (view.observed_state() != State::kClosed) ++odd;
          (void)view.totals();
        }
      });
      return nullptr;
    }
    std::thread reader;
    int odd = 0;
  };
  for (int round = 0; round < 20; ++round) {
    Scraper scraper;
    {
      BreakerSettings s;
      s.name = "scraped";
      s.metrics = &scraper;
      CircuitBreaker<int> b(s);
      EXPECT_TRUE(b.Execute([] { return 1; }).ok());
      scraper.reader.join();  // before the breaker goes
    }
    EXPECT_EQ(scraper.odd, 0);
  }
}

// ---- The hub: the default's scope and the one attach helper ----

TEST(TelemetryTest, AScopedDefaultRestoresWhatItFound) {
  DefaultTelemetryGuard guard;
  Spy outer_spy;
  Spy inner_spy;
  SetDefaultTelemetry(&outer_spy);
  {
    const ScopedDefaultTelemetry outer(nullptr);
    EXPECT_EQ(outer.saved(), &outer_spy);
    EXPECT_EQ(DefaultTelemetry(), nullptr);
    {
      const ScopedDefaultTelemetry inner(&inner_spy);
      EXPECT_EQ(inner.saved(), nullptr);
      EXPECT_EQ(DefaultTelemetry(), &inner_spy);
    }
    EXPECT_EQ(DefaultTelemetry(), nullptr);
  }
  EXPECT_EQ(DefaultTelemetry(), &outer_spy);
}

// A component of a kind of its own, wired as the real ones are.
struct HedgeLike {
  const std::string& name() const { return name_; }
  HedgeStats stats() const {
    HedgeStats st;
    st.calls = calls;
    return st;
  }
  std::string name_ = "ann";
  uint64_t calls = 7;
  const detail::OwnerView<HedgeLike, HedgeStats> view{this};
};

struct HedgeSpy : Telemetry {
  struct Token : TelemetryAttachment {};
  std::unique_ptr<TelemetryAttachment> AttachHedge(
      const HedgeView& view) override {
    ++attached;
    seen_calls = view.stats().calls;
    if (throws) throw std::runtime_error("attach failed");
    return std::make_unique<Token>();
  }
  int attached = 0;
  uint64_t seen_calls = 0;
  bool throws = false;
};

TEST(TelemetryTest, AttachResolvesExplicitDefaultAndNone) {
  DefaultTelemetryGuard guard;
  SetDefaultTelemetry(nullptr);
  HedgeLike component;
  HedgeSpy spy;
  // Explicit.
  EXPECT_NE(detail::Attach(&spy, &Telemetry::AttachHedge, component.view),
            nullptr);
  EXPECT_EQ(spy.attached, 1);
  EXPECT_EQ(spy.seen_calls, 7u);  // the view was complete and readable
  // Neither explicit nor a default: nothing is asked.
  EXPECT_EQ(detail::Attach(nullptr, &Telemetry::AttachHedge, component.view),
            nullptr);
  EXPECT_EQ(spy.attached, 1);
  // The default.
  const ScopedDefaultTelemetry scope(&spy);
  EXPECT_NE(detail::Attach(nullptr, &Telemetry::AttachHedge, component.view),
            nullptr);
  EXPECT_EQ(spy.attached, 2);
  // NoTelemetry() even with a default.
  EXPECT_EQ(
      detail::Attach(NoTelemetry(), &Telemetry::AttachHedge, component.view),
      nullptr);
  EXPECT_EQ(spy.attached, 2);
}

TEST(TelemetryTest, AnAttachThatThrowsAttachesNothing) {
  HedgeLike component;
  HedgeSpy spy;
  spy.throws = true;
  EXPECT_EQ(detail::Attach(&spy, &Telemetry::AttachHedge, component.view),
            nullptr);
  EXPECT_EQ(spy.attached, 1);
}

TEST(TelemetryTest, OnlyARegistryAnswersAsOne) {
  HedgeSpy spy;
  EXPECT_EQ(spy.AsMetricsRegistry(), nullptr);
  EXPECT_EQ(NoTelemetry()->AsMetricsRegistry(), nullptr);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
