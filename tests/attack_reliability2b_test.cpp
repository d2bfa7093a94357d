// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A second hostile review of the issue 32 fixes, as a production user meets
// them: the one time rule (deadlines on clocks that read the infinite
// instants or step back, CallWithDeadline at the edges of a budget, a
// breaker's timers on a clock stepped back), a features-off control on a
// manager without a config, the retrier between its budget, its sleep and
// the caller's deadline, a peer whose retry-after hint is absurd, the
// AdmissionQueue's slot growth on a machine out of memory, the
// LatencyTracker's exact mean past 2^53 microseconds, the throttler's k at
// the edge of its range and the control document's version at 2^53. Every
// scenario runs on a clock the test moves (a FakeClock, or a clock that
// reads any absl::Time). This executable replaces operator new[] (below),
// so it is registered ALONE.
//
// Tests named DISABLED_ pin a defect found by this review: the comment above
// each says what goes wrong and what should happen instead.

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "degrade/admission_queue.hpp"
#include "degrade/breaker_settings.hpp"
#include "degrade/breaker_types.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/control_document.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_episode.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/escalation.hpp"
#include "degrade/feature_gate.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/hedge.hpp"
#include "degrade/limiter_settings.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/queue_settings.hpp"
#include "degrade/retry.hpp"
#include "degrade/retry_budget.hpp"
#include "degrade/signals.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/throttle.hpp"
#include "gtest/gtest.h"
#include "limiter_test_util.hpp"

// Array allocations of at least this many bytes fail while it is non-zero:
// how the review makes the queue's slot growth meet a full machine. Only
// this file's executable (registered ALONE) replaces operator new[].
std::atomic<std::size_t> g_fail_array_new_from{0};

void* operator new[](std::size_t n) {
  const std::size_t from = g_fail_array_new_from.load();
  if (from != 0 && n >= from) throw std::bad_alloc();
  return ::operator new(n);
}
// The queue grows with `new (std::nothrow) T[n]`: replaced too, so that it
// fails on the same terms and pairs with the delete[] below (a sanitizer's
// own nothrow new[] would not).
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  const std::size_t from = g_fail_array_new_from.load();
  if (from != 0 && n >= from) return nullptr;
  return ::operator new(n, std::nothrow);
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  ::operator delete(p);
}

namespace degrade {
namespace DEGRADE_TEST_UNIT {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// A clock that reads whatever absl::Time it is set to, the infinite
// instants included (a FakeClock keeps int64 nanoseconds, so it can not
// read InfiniteFuture). Set from the test's thread only.
class AnyTimeClock final : public Clock {
 public:
  explicit AnyTimeClock(absl::Time t = kStart) : now_(t) {}
  absl::Time Now() const override { return now_; }
  void Set(absl::Time t) { now_ = t; }

 private:
  absl::Time now_;
};

// ---- Deadline and CallWithDeadline ----------------------------------------

// Was a defect (fixed; see Deadline::In): a deadline with a finite budget,
// made while a clock reads InfiniteFuture
// (a user's clock adapter returning absl::InfiniteFuture() for an error),
// becomes "no deadline": when() is InfiniteFuture, remaining() is
// InfiniteDuration and it never expires, even once the clock reads a real
// time again. A call given that deadline (a Retry, a gRPC SetDeadline)
// then runs without any bound. Low: no real clock reads InfiniteFuture.
// Expected: a finite budget never yields an infinite deadline (treat the
// budget as already spent, as Deadline::In(ZeroDuration()) would be).
TEST(DeadlineAttack, AFiniteBudgetTakenAtTheInfiniteFutureIsStillFinite) {
  AnyTimeClock clock(absl::InfiniteFuture());
  const Deadline d = Deadline::In(absl::Seconds(1), &clock);
  clock.Set(kStart);
  EXPECT_NE(d.remaining(), absl::InfiniteDuration())
      << "a 1 s budget became no deadline at all: when() = " << d.when();
  clock.Set(kStart + absl::Hours(1));
  EXPECT_TRUE(d.expired());
}

// The same budget taken at InfinitePast is spent at once, and stays spent
// when the clock comes back: the safe side, pinned.
TEST(DeadlineAttack, AFiniteBudgetTakenAtTheInfinitePastIsSpent) {
  AnyTimeClock clock(absl::InfinitePast());
  const Deadline d = Deadline::In(absl::Seconds(1), &clock);
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.remaining(), absl::ZeroDuration());
  clock.Set(kStart);
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.remaining(), absl::ZeroDuration());
}

// A callable that steps the clock back (an NTP step during the call) has
// used no time: its answer, inside a 1 ns budget, is kept.
TEST(DeadlineAttack, AClockSteppedBackDuringTheCallKeepsTheAnswer) {
  FakeClock clock(kStart);
  const absl::StatusOr<int> r = CallWithDeadline(
      absl::Nanoseconds(1),
      [&clock](const Deadline& d) {
        clock.Set(kStart - absl::Hours(1));
        EXPECT_FALSE(d.expired());
        EXPECT_EQ(d.remaining(), absl::Hours(1) + absl::Nanoseconds(1));
        return 3;
      },
      &clock);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 3);
}

// A 1 ns budget and an answer that took exactly 1 ns: the deadline was
// reached, the answer is discarded; one that took nothing is kept.
TEST(DeadlineAttack, OneNanosecondIsTheEdgeOfTheBudget) {
  FakeClock clock(kStart);
  const absl::StatusOr<int> late = CallWithDeadline(
      absl::Nanoseconds(1),
      [&clock](const Deadline&) {
        clock.Advance(absl::Nanoseconds(1));
        return 1;
      },
      &clock);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded)
      << late.status();
  const absl::StatusOr<int> on_time = CallWithDeadline(
      absl::Nanoseconds(1), [](const Deadline&) { return 2; }, &clock);
  ASSERT_TRUE(on_time.ok()) << on_time.status();
}

// A callable that advances the clock past everything (FakeClock::Advance
// of InfiniteDuration saturates at the int64 end) under an infinite budget:
// no deadline, so the answer is kept.
TEST(DeadlineAttack, AnInfiniteBudgetSurvivesTheClockRunningToItsEnd) {
  FakeClock clock(kStart);
  const absl::StatusOr<int> r = CallWithDeadline(
      absl::InfiniteDuration(),
      [&clock](const Deadline& d) {
        clock.Advance(absl::InfiniteDuration());
        EXPECT_FALSE(d.expired());
        return 4;
      },
      &clock);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 4);
}

// Was a defect (fixed): CallWithDeadline with a budget already spent (zero
// or negative: what a
// caller computes as "what is left" after an earlier stage overran) still
// calls `f` with an expired deadline, then discards its answer. The work is
// done for nothing, and `f` hands the expired deadline to its RPC client:
// item 5's rule, "an expired deadline must never reach the network", holds
// for the gRPC adapter but not here. Low. Expected: DEADLINE_EXCEEDED at
// once, `f` not called (as Retrier starts no attempt after the deadline).
TEST(DeadlineAttack, ASpentBudgetNeverCallsTheCallable) {
  FakeClock clock(kStart);
  for (const absl::Duration budget :
       {absl::ZeroDuration(), -absl::Milliseconds(5),
        -absl::InfiniteDuration()}) {
    int calls = 0;
    const absl::StatusOr<int> r = CallWithDeadline(
        budget,
        [&calls](const Deadline&) {
          ++calls;
          return 1;
        },
        &clock);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded)
        << absl::FormatDuration(budget);
    EXPECT_EQ(calls, 0) << "budget " << absl::FormatDuration(budget)
                        << ": the callable ran with an expired deadline";
  }
}

// ---- A control's expiry on a manager without a config (item 3) -------------

ManagerOptions BareOptions(const Clock* clock) {
  ManagerOptions o;
  o.name = "bare";
  o.clock = clock;
  o.log_sink = [](absl::string_view) {};
  return o;
}

DegradationManager::Control FeaturesOff(absl::Time until) {
  DegradationManager::Control c;
  c.features_off = {"cache"};
  c.until = until;
  c.version = 1;
  return c;
}

// degradation_manager.hpp: "The control ends at the first evaluation at or
// after `until`: an Observe(), a poll of the manager's sources (Start()),
// Evaluate(), CurrentControl() or ForcedLevel()". On a manager without a
// config (its documented starting state, where item 3 lived) an Observe()
// returned FAILED_PRECONDITION before evaluating, so a service whose only
// traffic to the manager was Observe() and its gates kept the feature off
// past the document's expiry, for good, while FleetControl::in_force()
// said nothing was in force. Every Observe() now evaluates, whatever it
// rejects.
TEST(BareManagerAttack2, AnObserveAfterTheDeadlineEndsTheControl) {
  FakeClock clock(kStart);
  DegradationManager m(BareOptions(&clock));
  ASSERT_TRUE(m.SetControl(FeaturesOff(kStart + absl::Minutes(5))).ok());
  FeatureGate gate = m.Feature("cache");
  ASSERT_FALSE(gate.enabled());
  clock.Advance(absl::Minutes(5));
  EXPECT_EQ(m.Observe("gpu", 1.0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(gate.enabled())
      << "the control's deadline passed and an Observe() ran, but the "
         "feature is still off";
}

// The poll of a bare manager (Start() with no sources, or PollOnce())
// does end it, and the gate comes back.
TEST(BareManagerAttack2, APollOfABareManagerEndsTheControl) {
  FakeClock clock(kStart);
  DegradationManager m(BareOptions(&clock));
  ASSERT_TRUE(m.SetControl(FeaturesOff(kStart + absl::Minutes(5))).ok());
  FeatureGate gate = m.Feature("cache");
  clock.Advance(absl::Minutes(5) - absl::Nanoseconds(1));
  EXPECT_TRUE(m.PollOnce().ok());
  EXPECT_FALSE(gate.enabled());
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_TRUE(m.PollOnce().ok());
  EXPECT_TRUE(gate.enabled());
  EXPECT_TRUE(m.Enabled("cache"));
}

// A control is an instant on the clock, not a timer: a clock stepped back
// an hour after SetControl keeps it in force an hour longer (documented:
// expires_at is absolute), and a clock at the far end of its range ends it.
TEST(BareManagerAttack2, AControlFollowsTheClockBothWays) {
  FakeClock clock(kStart);
  DegradationManager m(BareOptions(&clock));
  ASSERT_TRUE(m.SetControl(FeaturesOff(kStart + absl::Minutes(5))).ok());
  FeatureGate gate = m.Feature("cache");
  clock.Set(kStart - absl::Hours(1));
  clock.Advance(absl::Minutes(5));
  m.Evaluate();
  EXPECT_FALSE(gate.enabled());
  clock.Advance(absl::InfiniteDuration());
  m.Evaluate();
  EXPECT_TRUE(gate.enabled());
}

// ---- A breaker's timers on a clock that steps
// --------------------------------

BreakerSettings TripsOnOneFailure(const Clock* clock) {
  BreakerSettings s;
  s.name = "stepped";
  s.clock = clock;
  s.timeout = absl::Seconds(10);
  s.ready_to_trip = [](const Counts& c) { return c.consecutive_failures >= 1; };
  s.metrics = NoTelemetry();
  return s;
}

// Item 9's rule, applied to the manager's holds with a SteadyTime, was not
// applied to the breaker: its open period (and a ForceOpenFor(d)) is an
// absolute expiry on the breaker's clock (breaker_machine.hpp:376, :446,
// :186), compared with `now > open_expiry_`. On a clock stepped back an hour
// (any BreakerSettings::clock other than RealClock: a wall-clock adapter,
// a FakeClock set back) a 10 s open state lasts an hour and 10 s, every
// call rejected; a 10 s ForceOpenFor likewise. This is the manager-hold
// defect of item 9 ("a clock stepped back an hour stretches a hold by an
// hour") in its sibling. Low with the default RealClock, which is
// monotonic. Expected: the breaker's open period, ForceOpenFor and
// half-open wait run on a time line that never steps back, as the manager's
// timers do. Fixed: a clock other than RealClock is read onto such a line
// (BreakerMachine::OnLine). Like the manager's holds, the breaker learns of
// a step when it next reads the clock (any call or state read does): the
// read just after the step stands for the calls a serving breaker sees.
TEST(BreakerClockAttack, AClockSteppedBackDoesNotStretchTheOpenPeriod) {
  FakeClock clock(kStart);
  CircuitBreaker<int> b(TripsOnOneFailure(&clock));
  (void)b.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Set(kStart - absl::Hours(1));
  EXPECT_EQ(b.state(), State::kOpen);  // a call meets the stepped clock
  clock.Advance(absl::Seconds(10) + absl::Nanoseconds(1));
  EXPECT_NE(b.state(), State::kOpen)
      << "10 s after the trip, on a clock stepped back an hour: still open";
}

TEST(BreakerClockAttack, AClockSteppedBackDoesNotStretchForceOpenFor) {
  FakeClock clock(kStart);
  CircuitBreaker<int> b(TripsOnOneFailure(&clock));
  ASSERT_TRUE(b.ForceOpenFor(absl::Seconds(10)).ok());
  clock.Set(kStart - absl::Hours(1));
  EXPECT_TRUE(b.forced_open());  // a call meets the stepped clock
  clock.Advance(absl::Seconds(10) + absl::Nanoseconds(1));
  EXPECT_FALSE(b.forced_open())
      << "ForceOpenFor(10s), 10 s later on a clock stepped back an hour";
}

// Forward, the breaker's periods end (the step is taken as time passed),
// and a clock at its far end neither crashes nor holds it open.
TEST(BreakerClockAttack, AClockAtItsFarEndEndsTheOpenPeriod) {
  FakeClock clock(kStart);
  CircuitBreaker<int> b(TripsOnOneFailure(&clock));
  (void)b.Execute(
      []() -> absl::StatusOr<int> { return absl::UnavailableError("down"); });
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Advance(absl::InfiniteDuration());
  EXPECT_EQ(b.state(), State::kHalfOpen);
  const auto r = b.Execute([]() -> absl::StatusOr<int> { return 1; });
  EXPECT_TRUE(r.ok()) << r.status();
}

// The same class in the paging path: an escalation is due when an episode
// has lasted `after`, measured as ElapsedSince(now, episode.since) on the
// components' clock (escalation.hpp:115). A clock stepped back an hour
// during an episode reads as no time passing until it catches up with
// `since`: a breaker open for 31 minutes of real time, `after` 30 minutes,
// pages an hour late. Low with RealClock. Expected: episodes aged on a
// SteadyTime, as the manager's holds are. Fixed: the watch ages each
// episode on a SteadyTime from its first check that saw it; it learns of a
// step at its next check (Start(period) checks every period).
TEST(BreakerClockAttack, AClockSteppedBackDoesNotDelayTheEscalation) {
  FakeClock clock(kStart);
  MetricsRegistry registry;
  BreakerSettings s = TripsOnOneFailure(&clock);
  s.metrics = &registry;
  CircuitBreaker<int> b(s);
  EscalationOptions o;
  o.after = absl::Minutes(30);
  o.clock = &clock;
  int fired = 0;
  o.on_escalate = [&fired](const DegradationEpisode&, absl::Duration) {
    ++fired;
  };
  EscalationWatch watch(registry, o);
  b.ForceOpen();
  EXPECT_EQ(watch.Check(), 0);
  clock.Set(kStart - absl::Hours(1));
  EXPECT_EQ(watch.Check(), 0);  // the watch's next period meets the step
  clock.Advance(absl::Minutes(31));
  EXPECT_EQ(watch.Check(), 1)
      << "open for 31 minutes of the clock's own passing, not escalated";
  EXPECT_EQ(fired, 1);
}

// Observation 5, decided: a clock that jumps to a finite far-future time
// (a custom clock's bug, an operator's typo) is a forward step, and a
// forward step counts in full: no reading can tell it from a process or VM
// that really was paused that long. Every timer on a SteadyTime (the
// manager's holds, the escalation's ages) and on the breaker's line ends at
// once; the line then stays ahead, and when the clock comes back the step
// back counts as no time passing, so timers run normally from there rather
// than stalling until the clock catches up. Readings at the infinite
// instants are the exception (they move a SteadyTime by nothing), and so is
// any instant past the int64 nanosecond range (after 2262), which stands for
// them: see saturating.hpp.
TEST(FarFutureClockDecision,
     AFiniteJumpEndsSteadyTimersAndTheLineRunsOnAfterIt) {
  degrade::detail::SteadyTime line;
  EXPECT_EQ(line.Advance(kStart), kStart);
  const absl::Time far = kStart + absl::Hours(24 * 365 * 100);
  EXPECT_EQ(line.Advance(far), far);     // a hold of any length has ended
  EXPECT_EQ(line.Advance(kStart), far);  // back: no time, no rewind
  EXPECT_EQ(line.Advance(kStart + absl::Seconds(5)), far + absl::Seconds(5));
}

TEST(FarFutureClockDecision,
     ABreakerAfterAFiniteJumpAndBackStillTimesItsPeriods) {
  FakeClock clock(kStart);
  CircuitBreaker<int> b(TripsOnOneFailure(&clock));
  const auto fail = []() -> absl::StatusOr<int> {
    return absl::UnavailableError("down");
  };
  (void)b.Execute(fail);
  ASSERT_EQ(b.state(), State::kOpen);
  clock.Set(kStart + absl::Hours(24 * 365 * 100));
  EXPECT_EQ(b.state(), State::kHalfOpen) << "the jump ends the open period";
  clock.Set(kStart);      // the clock is put right
  (void)b.Execute(fail);  // the trial fails: open again
  ASSERT_EQ(b.state(), State::kOpen) << "not stuck, not skipped";
  clock.Advance(absl::Seconds(5));  // of its 10 s open period
  EXPECT_EQ(b.state(), State::kOpen);
  clock.Advance(absl::Seconds(6));
  EXPECT_EQ(b.state(), State::kHalfOpen)
      << "the open period runs from where the line was, not from the jump";
}

// ---- AdmissionQueue slot growth under memory pressure (item 12)
// ---------------

// Item 12's fix allocates the queue's slots as it fills (slot_ring.hpp):
// a Push() that finds every allocated slot in use doubles them. That
// allocation happens at the worst moment (the queue is filling: overload);
// its failure escaped Push() as std::bad_alloc, with the caller's item
// already moved into the entry that was destroyed. A growth that cannot
// allocate now refuses the push (kCapacity) and the item is not moved from.
TEST(AdmissionQueueAttack, AGrowthThatCannotAllocateRefusesThePush) {
  FakeClock clock(kStart);
  QueueSettings s;
  s.capacity = 1024;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto q = AdmissionQueue<std::string>::Create(std::move(s)).value();
  for (int i = 0; i < 64; ++i) {  // the initial slots, all in use
    ASSERT_TRUE(q->Push(absl::StrCat("item ", i)).ok());
  }
  std::string item(100, 'x');
  absl::Status pushed = absl::UnknownError("not pushed");
  g_fail_array_new_from = 1024;  // the doubled slot array, not small strings
  bool threw = false;
  try {
    pushed = q->Push(std::move(item));
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  g_fail_array_new_from = 0;
  EXPECT_FALSE(threw) << "Push() threw std::bad_alloc";
  EXPECT_FALSE(pushed.ok());
  EXPECT_EQ(item, std::string(100, 'x')) << "the refused item was moved from";
  EXPECT_EQ(q->stats().depth, 64u);
  std::vector<std::string> out;
  EXPECT_EQ(q->PopBatch(&out, 100), 64u);
}

// The growth itself, with wrapped rings: order is kept across every
// doubling up to the capacity, and the capacity still refuses.
TEST(AdmissionQueueAttack, GrowthKeepsTheOrderOfAWrappedRing) {
  FakeClock clock(kStart);
  QueueSettings s;
  s.capacity = 300;  // not a power of two: the last growth is partial
  s.adaptive_lifo = false;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto q = AdmissionQueue<int>::Create(std::move(s)).value();
  int next_in = 0;
  int next_out = 0;
  std::vector<int> out;
  // Wrap the head first: push 50, pop 40, then fill to the capacity.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(q->Push(int{next_in++}).ok());
  ASSERT_EQ(q->PopBatch(&out, 40), 40u);
  while (q->stats().depth < 300) ASSERT_TRUE(q->Push(int{next_in++}).ok());
  EXPECT_FALSE(q->Push(int{-1}).ok());
  for (int v : out) EXPECT_EQ(v, next_out++);
  out.clear();
  while (q->PopBatch(&out, 64) > 0) {
  }
  ASSERT_EQ(out.size(), 300u);
  for (int v : out) ASSERT_EQ(v, next_out++);
}

// ---- The concurrency limiter and absurd latency samples ---------------------

// Item 12's absurd sample, met by the limiter: a VM paused for 30 s makes
// every call in flight report 30 s at once, and one timed across a suspend
// reports centuries (or InfiniteDuration). Each algorithm must be back to
// refusing (almost) nothing within a minute of normal traffic at 30% of
// capacity. Held for both algorithms.
class LimiterAbsurdSample : public ::testing::TestWithParam<LimitAlgorithm> {};

TEST_P(LimiterAbsurdSample, AFewAbsurdSamplesAreForgotten) {
  struct Case {
    const char* name;
    int count;
    absl::Duration latency;
    bool one_at_a_time;
  };
  const Case cases[] = {
      {"a 30 s pause of 30 calls", 30, absl::Seconds(30), false},
      {"one call of 400 years", 1, absl::Hours(24 * 365 * 400), false},
      {"one call of InfiniteDuration", 1, absl::InfiniteDuration(), false},
      {"1000 calls of 30 s in a row", 1000, absl::Seconds(30), true},
      {"1000 calls of 400 years in a row", 1000, absl::Hours(24 * 365 * 400),
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto limiter =
        limiter_test::Make(limiter_test::Base(GetParam(), 1, 50, 1000));
    ASSERT_NE(limiter, nullptr);
    FakeClock clock(kStart);
    limiter_test::Simulation sim(limiter.get(), &clock, 30 / 0.010);
    sim.latency = [](int n) {
      return n <= 100 ? absl::Milliseconds(10)
                      : absl::Milliseconds(10) * n / 100;
    };
    sim.Run(absl::Seconds(30));
    const int before = limiter->limit();
    if (c.one_at_a_time) {
      for (int i = 0; i < c.count; ++i) {
        std::optional<LimiterPermit> p = limiter->TryAcquire();
        if (p.has_value()) p->Success(c.latency);
      }
    } else {
      std::vector<LimiterPermit> paused;
      for (int i = 0; i < c.count; ++i) {
        std::optional<LimiterPermit> p = limiter->TryAcquire();
        if (p.has_value()) paused.push_back(std::move(*p));
      }
      for (LimiterPermit& p : paused) p.Success(c.latency);
    }
    (void)sim.Take();
    sim.Run(absl::Minutes(1));
    (void)sim.Take();
    sim.Run(absl::Seconds(30));
    const limiter_test::Simulation::Window w = sim.Take();
    EXPECT_LT(w.refused, 0.01)
        << "limit " << limiter->limit() << " (was " << before << "), no-load "
        << limiter->stats().no_load_latency;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LimiterAbsurdSample,
                         ::testing::Values(LimitAlgorithm::kGradient2,
                                           LimitAlgorithm::kVegas),
                         [](const auto& info) {
                           return std::string(LimitAlgorithmName(info.param));
                         });

// ---- Retrier: budget, sleep and deadline ------------------------------------

RetrySettings Unbudgeted(FakeClock* clock) {
  RetrySettings p;
  p.name = "r";
  p.unbudgeted = true;
  p.metrics = NoTelemetry();
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(100);
  p.max_attempts = 5;
  p.sleep = [clock](absl::Duration d) { clock->Advance(d); };
  return p;
}

// Was a defect (fixed: the retry is withdrawn after the sleep): the budget
// was withdrawn before the backoff sleep; when the sleep overruns
// the caller's deadline (a loaded machine wakes the thread late: issue 32
// saw 9-28 of ~770 retries wake late), the retry is not sent, but its
// withdrawal is kept. Each late wake-up spends a retry the downstream never
// saw: with a budget of one retry per window, the next call's legitimate
// retry is refused (kBudgetExhausted) though no retry was made. Low.
// Expected: a retry that is not sent gives its withdrawal back (or the
// budget is asked only after the post-sleep deadline check).
TEST(RetryAttack, ARetryNotSentForItsDeadlineKeepsNoBudget) {
  FakeClock clock(kStart);
  RetryBudgetSettings b;
  b.name = "down";
  b.percent_can_retry = 0.0;
  b.min_retries_per_sec = 1;  // one retry per second of ttl
  b.ttl = absl::Seconds(1);
  b.clock = &clock;
  b.metrics = NoTelemetry();
  auto budget = RetryBudget::Create(b).value();
  RetrySettings p = Unbudgeted(&clock);
  p.unbudgeted = false;
  p.budget = budget.get();
  bool late = true;  // the first call's sleep wakes past its deadline
  p.sleep = [&clock, &late](absl::Duration d) {
    clock.Advance(late ? d + absl::Milliseconds(400) : d);
  };
  auto r = Retrier::Create(p).value();
  int calls = 0;
  RetryRecord rec;
  (void)Retry(
      *r, Deadline::In(absl::Milliseconds(300), &clock),
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return absl::UnavailableError("down");
      },
      &rec);
  ASSERT_EQ(calls, 1);
  ASSERT_EQ(rec.stop, RetryStop::kDeadline);
  // Same window: the one retry the budget allows was never sent.
  late = false;
  calls = 0;
  (void)Retry(
      *r, Deadline::In(absl::Seconds(10), &clock),
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return calls == 1 ? absl::StatusOr<int>(absl::UnavailableError("down"))
                          : absl::StatusOr<int>(5);
      },
      &rec);
  EXPECT_EQ(calls, 2) << "stopped: " << RetryStopName(rec.stop) << "; granted "
                      << budget->stats().granted
                      << " retries, sent 0 before this call";
  EXPECT_EQ(budget->stats().granted, 1u) << "only the retry sent withdraws";
}

// Was a defect (fixed: RetrySettings::max_retry_after): a downstream that
// answers RESOURCE_EXHAUSTED with a retry-after of a
// century (a bug, a unit mix-up: seconds sent as milliseconds times 1e6, a
// hostile peer) holds a caller without a deadline in the retrier's sleep
// for that century: the hint is taken as it is, while the gRPC adapter
// reads any pushback above an hour as "do not retry" (kMaxPushback). Any
// adapter writing WithRetryAfter() (Redis, HTTP, an in-process shed) has
// no such cap. Medium for a caller without a deadline (a background job, a
// stream), as the thread is lost. Expected: a hint beyond a cap (the
// gRPC adapter's hour, or the policy's max_backoff scaled) ends the loop
// with kDoNotRetry, as a negative hint does.
TEST(RetryAttack, ACenturyRetryAfterDoesNotHoldTheCaller) {
  FakeClock clock(kStart);
  RetrySettings p = Unbudgeted(&clock);
  absl::Duration slept = absl::ZeroDuration();
  p.sleep = [&clock, &slept](absl::Duration d) {
    slept += d;
    clock.Advance(d);
  };
  auto r = Retrier::Create(p).value();
  int calls = 0;
  RetryRecord rec;
  (void)Retry(
      *r, Deadline::In(absl::InfiniteDuration(), &clock),
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return WithRetryAfter(absl::ResourceExhaustedError("busy"),
                              absl::Hours(24 * 365 * 100));
      },
      &rec);
  EXPECT_LE(slept, absl::Hours(1))
      << "the retrier slept " << absl::FormatDuration(slept) << " over "
      << calls << " attempts";
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rec.stop, RetryStop::kDoNotRetry);
}

// The cap's edge: a hint of exactly max_retry_after is waited for, one a
// nanosecond longer is "do not retry", and the setting is validated like
// the backoffs (finite, not negative).
TEST(RetryAttack, MaxRetryAfterIsTheLongestHintWaitedFor) {
  FakeClock clock(kStart);
  RetrySettings p = Unbudgeted(&clock);
  p.max_attempts = 2;
  p.max_retry_after = absl::Minutes(5);
  auto r = Retrier::Create(p).value();
  for (const absl::Duration hint :
       {absl::Minutes(5), absl::Minutes(5) + absl::Nanoseconds(1)}) {
    int calls = 0;
    RetryRecord rec;
    (void)Retry(
        *r, Deadline::In(absl::InfiniteDuration(), &clock),
        [&]() -> absl::StatusOr<int> {
          ++calls;
          return WithRetryAfter(absl::ResourceExhaustedError("busy"), hint);
        },
        &rec);
    const bool waited = hint <= p.max_retry_after;
    EXPECT_EQ(calls, waited ? 2 : 1) << absl::FormatDuration(hint);
    EXPECT_EQ(rec.stop,
              waited ? RetryStop::kAttemptsExhausted : RetryStop::kDoNotRetry);
  }
  for (const absl::Duration bad :
       {-absl::Nanoseconds(1), absl::InfiniteDuration()}) {
    RetrySettings q = Unbudgeted(&clock);
    q.max_retry_after = bad;
    const absl::Status s = ValidateRetrySettings(q);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("max_retry_after"), absl::string_view::npos)
        << s;
  }
}

// Was a defect (fixed): the sibling of
// DeadlineAttack.ASpentBudgetNeverCallsTheCallable
// in the retrier: its first attempt runs whatever the deadline (the clock
// is read only once an attempt has failed, retry.hpp:375-401), so a caller
// whose budget is spent still sends one request with an expired deadline.
// Low (one request). Expected: an expired deadline makes no attempt and
// ends with DEADLINE_EXCEEDED and stop kDeadline.
TEST(RetryAttack, ASpentDeadlineMakesNoAttempt) {
  FakeClock clock(kStart);
  auto r = Retrier::Create(Unbudgeted(&clock)).value();
  int calls = 0;
  RetryRecord rec;
  const absl::StatusOr<int> v = Retry(
      *r, Deadline::In(absl::ZeroDuration(), &clock),
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return 1;
      },
      &rec);
  EXPECT_EQ(calls, 0) << "an attempt ran with its deadline already passed";
  EXPECT_EQ(v.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(rec.attempts, 0);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  EXPECT_NE(v.status().message().find("retry 'r'"), absl::string_view::npos)
      << v.status();
  const RetrierStats st = r->stats();
  EXPECT_EQ(st.calls, 1u);
  EXPECT_EQ(st.stops[static_cast<std::size_t>(RetryStop::kDeadline)], 1u);
  for (const uint64_t n : st.attempts) EXPECT_EQ(n, 0u);
}

// The admission queue's sibling: a probe (the item let through whatever
// the service-time estimate says, to re-measure it) was any item, so one
// whose deadline had already passed could be queued and handed out as the
// probe, served for nothing. A spent deadline is refused at the push and
// dropped at the pop (kDeadline) even while a probe is due; a probe with
// time left still goes through.
TEST(AdmissionQueueAttack, ASpentDeadlineIsNeverTheProbe) {
  FakeClock clock(kStart);
  QueueSettings s;
  s.capacity = 16;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  std::vector<DropReason> drops;
  auto q = AdmissionQueue<int>::Create(std::move(s), [&drops](int&&,
                                                              DropReason why) {
             drops.push_back(why);
           }).value();
  q->RecordServiceTime(absl::Seconds(3));
  clock.Advance(absl::Seconds(6));  // a probe is due
  const absl::Status spent = q->Push(1, clock.Now());
  EXPECT_TRUE(IsShed(spent)) << spent;
  const absl::Status late = q->Push(2, clock.Now() - absl::Milliseconds(1));
  EXPECT_TRUE(IsShed(late)) << late;
  // One with time left is the probe.
  ASSERT_TRUE(q->Push(3, clock.Now() + absl::Seconds(1)).ok());
  std::vector<int> out;
  EXPECT_EQ(q->PopBatch(&out, 8), 1u);
  EXPECT_EQ(out, std::vector<int>{3});
  // Queued with time left, expired while it waited, while a probe is due:
  // dropped at the pop, not served as the probe.
  q->RecordServiceTime(absl::Seconds(3));
  clock.Advance(absl::Seconds(6));
  ASSERT_TRUE(q->Push(4, clock.Now() + absl::Milliseconds(5)).ok());
  clock.Advance(absl::Milliseconds(10));
  out.clear();
  EXPECT_EQ(q->PopBatch(&out, 8), 0u) << "served " << out.size();
  ASSERT_FALSE(drops.empty());
  EXPECT_EQ(drops.back(), DropReason::kDeadline);
}

// A sleep that throws (it "must not") is swallowed; the retry must still
// not start after the deadline, and the call still ends.
TEST(RetryAttack, AThrowingSleepStillStartsNothingAfterTheDeadline) {
  FakeClock clock(kStart);
  RetrySettings p = Unbudgeted(&clock);
  p.sleep = [&clock](absl::Duration d) {
    clock.Advance(d + absl::Milliseconds(250));
    throw std::runtime_error("timer wheel gone");
  };
  auto r = Retrier::Create(p).value();
  const Deadline d = Deadline::In(absl::Milliseconds(300), &clock);
  int calls = 0;
  RetryRecord rec;
  absl::StatusOr<int> v = absl::UnknownError("not run");
  EXPECT_NO_THROW(v = Retry(
                      *r, d,
                      [&]() -> absl::StatusOr<int> {
                        ++calls;
                        EXPECT_LT(clock.Now(), d.when());
                        return absl::UnavailableError("down");
                      },
                      &rec));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rec.stop, RetryStop::kDeadline);
  EXPECT_EQ(v.status().code(), absl::StatusCode::kUnavailable);
}

// A sleep that steps the clock back an hour: no time passed for the
// deadline, so retries continue to max_attempts, and none starts late.
TEST(RetryAttack, ASleepThatStepsTheClockBackIsNoTimePassing) {
  FakeClock clock(kStart);
  RetrySettings p = Unbudgeted(&clock);
  p.sleep = [&clock](absl::Duration) {
    clock.Set(clock.Now() - absl::Hours(1));
  };
  auto r = Retrier::Create(p).value();
  const Deadline d = Deadline::In(absl::Milliseconds(300), &clock);
  int calls = 0;
  RetryRecord rec;
  (void)Retry(
      *r, d,
      [&]() -> absl::StatusOr<int> {
        ++calls;
        return absl::UnavailableError("down");
      },
      &rec);
  EXPECT_EQ(calls, p.max_attempts);
  EXPECT_EQ(rec.stop, RetryStop::kAttemptsExhausted);
}

// ---- LatencyTracker's exact mean --------------------------------------------

// "An average of equal samples is exactly that sample" (signals.hpp), and
// the mean is "the exact mean, correctly rounded". The folded sum was a
// double: past 2^53 us between two polls it rounded as it grew, and 2^14
// samples of 2^40 - 1 us (each under the 12-day cap) gave
// 1099511627.7750554 ms for 1099511627.775. The sum is now whole
// microseconds in 64 bits, and the mean's whole part an integer division.
TEST(LatencyTrackerAttack,
     EqualSamplesSummingPastTwoToThe53StillAverageExactly) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  const int64_t us = (int64_t{1} << 40) - 1;
  const int n = 1 << 14;
  for (int i = 0; i < n; ++i) tracker.Record(absl::Microseconds(us));
  const double mean = tracker.TakeMillis();
  EXPECT_EQ(mean, static_cast<double>(us) / 1000.0)
      << std::setprecision(17) << mean;
}

// Past 2^64 us in one poll (2^24 + 1 samples at the cap) the exact sum
// would wrap: the mean falls back to a double sum, close but not exact,
// instead of a wrapped, tiny one. The next poll is exact again.
TEST(LatencyTrackerAttack, ASumPastTwoToThe64FallsBackToAnInexactMean) {
  LatencyTracker tracker(LatencyTracker::Kind::kAverage);
  const int64_t us = int64_t{1} << 40;
  for (int i = 0; i < (1 << 24) + 1; ++i)
    tracker.Record(absl::Microseconds(us));
  EXPECT_NEAR(tracker.TakeMillis(), static_cast<double>(us) / 1000.0, 1e-2);
  tracker.Record(absl::Microseconds(1500));
  EXPECT_EQ(tracker.TakeMillis(), 1.5);
}

// ---- Throttler k at the edges of its range
// -----------------------------------

TEST(ThrottleAttack, KIsRefusedJustBelowItsFloorAndWhenNotANumber) {
  ThrottleSettings s;
  s.metrics = NoTelemetry();
  s.k = kMinThrottleK;
  EXPECT_TRUE(ValidateThrottleSettings(s).ok());
  for (const double k : {std::nextafter(kMinThrottleK, 0.0), 1.0, 0.0, -2.0,
                         std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(),
                         std::nextafter(100.0, 200.0)}) {
    s.k = k;
    const absl::Status v = ValidateThrottleSettings(s);
    EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << k;
    EXPECT_NE(v.message().find("'k'"), absl::string_view::npos) << v;
    EXPECT_FALSE(AdaptiveThrottler::Create(s).ok()) << k;
  }
}

// ---- Control document versions at 2^53 --------------------------------------

std::string Rfc(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

std::string Doc(absl::string_view version, absl::Time expires) {
  return absl::StrCat(R"({"degrade_control": {"version": )", version,
                      R"(, "expires_at": ")", Rfc(expires),
                      R"(", "reason": "INC-1"}})");
}

// 2^53 is accepted and 2^53 + 1 refused, by the exact integer, not by a
// double that would round 2^53 + 1 down to 2^53; versions written as
// floats, negative, or past 2^64 are refused, naming the path.
TEST(ControlVersionAttack, TheVersionBoundIsExactAndNamed) {
  const absl::Time now = kStart;
  const absl::Time later = now + absl::Minutes(5);
  ASSERT_TRUE(
      ParseControlDocument(Doc("9007199254740992", later), "t", now).ok());
  for (const char* v :
       {"9007199254740993", "18446744073709551615", "18446744073709551616",
        "9007199254740992.0", "1e300", "-1", "0", "-9223372036854775808"}) {
    const absl::StatusOr<ControlDocument> d =
        ParseControlDocument(Doc(v, later), "t", now);
    EXPECT_FALSE(d.ok()) << v;
    EXPECT_NE(d.status().message().find("version"), absl::string_view::npos)
        << v << ": " << d.status();
  }
}

// The last version any instance accepts still ends at its expiry, and the
// floor it leaves is reported, not silent: a later document is refused
// with FAILED_PRECONDITION naming both versions.
TEST(ControlVersionAttack,
     AtTheLargestVersionLaterDocumentsAreRefusedSayingWhy) {
  FakeClock clock(kStart);
  FleetControl::Options o;
  o.clock = &clock;
  o.log_sink = [](absl::string_view) {};
  FleetControl control(std::move(o));
  ASSERT_TRUE(
      control
          .Apply(Doc("9007199254740992", clock.Now() + absl::Minutes(1)),
                 "test")
          .ok());
  clock.Advance(absl::Minutes(1));
  EXPECT_FALSE(control.in_force().has_value());
  const absl::Status s =
      control.Apply(Doc("2", clock.Now() + absl::Minutes(1)), "test");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("9007199254740992"), absl::string_view::npos) << s;
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
