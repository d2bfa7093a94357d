// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests for testing/failing_backend.hpp, and the worked example of wiring a
// FailingBackend into a gMock mock. Nothing here sleeps: time is a FakeClock, and the hanging case is synchronised
// with WaitForHungCalls()/ReleaseHung() (condition variables).

#include "degrade/testing/failing_backend.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/status.hpp"
#include "degrade/testing/status_matchers.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using ::degrade::FakeClock;
using ::degrade::testing::BackendCounts;
using ::degrade::testing::FailingBackend;
using ::degrade::testing::FailingBackendCore;
using ::degrade::testing::FailingBackendOptions;
using ::degrade::testing::IsBreakerOpenStatus;
using ::degrade::testing::IsCallableExceptionStatus;
using ::degrade::testing::IsOk;
using ::degrade::testing::IsOkAndHolds;
using ::degrade::testing::PhaseKind;
using ::degrade::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::StatusCode kUnavailable = absl::StatusCode::kUnavailable;

// ---- FailingBackend: each phase kind ----------------------------------------

TEST(FailingBackendTest, IsHealthyWithoutAScript) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 42);
  EXPECT_THAT(backend.Call(), IsOkAndHolds(42));
  EXPECT_EQ(backend.CurrentPhase(), PhaseKind::kHealthy);
  EXPECT_EQ(backend.counts().unscripted_calls, 1u);
}

TEST(FailingBackendTest, FactoryProducesAFreshValuePerHealthyCall) {
  FakeClock clock;
  int next = 0;
  FailingBackend<int> backend(&clock, [&next] { return ++next; });
  EXPECT_THAT(backend.Call(), IsOkAndHolds(1));
  EXPECT_THAT(backend.Call(), IsOkAndHolds(2));
  backend.Script().Failing(absl::UnavailableError("down"));
  EXPECT_THAT(backend.Call(), StatusIs(kUnavailable, "down"));
  EXPECT_EQ(next, 2) << "the factory must not run for failed calls";
}

TEST(FailingBackendTest, FailingPhaseReturnsItsStatus) {
  FakeClock clock;
  FailingBackend<std::string> backend(&clock, "ok");
  backend.Script().Failing(absl::ResourceExhaustedError("quota"));
  EXPECT_THAT(backend.Call(),
              StatusIs(absl::StatusCode::kResourceExhausted, "quota"));
  EXPECT_EQ(backend.CurrentPhase(), PhaseKind::kFailing);
}

TEST(FailingBackendTest, FailingWithAnOkStatusFailsAnyway) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Failing(absl::OkStatus());
  EXPECT_THAT(backend.Call(),
              StatusIs(absl::StatusCode::kUnknown, HasSubstr("OK status")));
}

TEST(FailingBackendTest, StatusOnlyCoreReturnsOkWhenHealthy) {
  FakeClock clock;
  FailingBackendCore backend(&clock);
  backend.Script()
      .Healthy(absl::Seconds(1))
      .Failing(absl::UnavailableError("down"));
  EXPECT_THAT(backend.CallStatus(), IsOk());
  clock.Advance(absl::Seconds(1));
  EXPECT_THAT(backend.CallStatus(), StatusIs(kUnavailable));
}

TEST(FailingBackendTest, PhaseBoundariesAreExact) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  FailingBackend<int> backend(&clock, 7);
  backend.Script()
      .Healthy(absl::Seconds(10))
      .Failing(absl::UnavailableError("down"), absl::Seconds(5))
      .Healthy();

  clock.Set(t0 + absl::Seconds(10) - absl::Nanoseconds(1));
  EXPECT_THAT(backend.Call(), IsOkAndHolds(7)) << "last instant of phase 0";
  clock.Set(t0 + absl::Seconds(10));
  EXPECT_THAT(backend.Call(), StatusIs(kUnavailable))
      << "a phase starts exactly where the previous one ends";
  clock.Set(t0 + absl::Seconds(15) - absl::Nanoseconds(1));
  EXPECT_THAT(backend.Call(), StatusIs(kUnavailable));
  clock.Set(t0 + absl::Seconds(15));
  EXPECT_THAT(backend.Call(), IsOkAndHolds(7)) << "the end is exclusive";

  EXPECT_EQ(backend.phase_calls(0), 1u);
  EXPECT_EQ(backend.phase_calls(1), 2u);
  EXPECT_EQ(backend.phase_calls(2), 1u);
  EXPECT_EQ(backend.phase_calls(3), 0u) << "out of range reads as 0";
  EXPECT_EQ(backend.ScriptEnd(), absl::InfiniteFuture());
}

TEST(FailingBackendTest, IsHealthyBeforeTheScriptStartsAndAfterItEnds) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  FailingBackend<int> backend(&clock, 1);
  backend.Script(t0 + absl::Seconds(5))
      .Failing(absl::UnavailableError("down"), absl::Seconds(2));
  EXPECT_EQ(backend.ScriptEnd(), t0 + absl::Seconds(7));

  EXPECT_THAT(backend.Call(), IsOk()) << "before the start";
  clock.Set(t0 + absl::Seconds(5));
  EXPECT_THAT(backend.Call(), Not(IsOk()));
  clock.Set(t0 + absl::Seconds(7));
  EXPECT_THAT(backend.Call(), IsOk()) << "after the last phase";
  EXPECT_EQ(backend.counts().unscripted_calls, 2u);
}

TEST(FailingBackendTest, ZeroLengthPhaseIsSkipped) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script()
      .Failing(absl::InternalError("never seen"), absl::ZeroDuration())
      .Failing(absl::UnavailableError("seen"));
  EXPECT_THAT(backend.Call(), StatusIs(kUnavailable, "seen"));
}

TEST(FailingBackendTest, ScriptReplacesThePreviousOneFromNow) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Failing(absl::UnavailableError("down"));
  EXPECT_THAT(backend.Call(), Not(IsOk()));
  clock.Advance(absl::Minutes(3));
  backend.Script()
      .Healthy(absl::Seconds(1))
      .Failing(absl::UnavailableError("again"));
  EXPECT_THAT(backend.Call(), IsOk());
  clock.Advance(absl::Seconds(1));
  EXPECT_THAT(backend.Call(), StatusIs(kUnavailable, "again"));
  EXPECT_EQ(backend.phase_calls(0), 1u) << "per-phase counts restart";
  EXPECT_EQ(backend.calls(), 3u) << "totals do not";
}

TEST(FailingBackendTest, FailingAtRateIsDeterministicForASeed) {
  FakeClock clock;
  FailingBackend<int> a(&clock, 1);
  FailingBackend<int> b(&clock, 1);
  FailingBackend<int> c(&clock, 1);
  a.Script().FailingAtRate(0.5, 1234);
  b.Script().FailingAtRate(0.5, 1234);
  c.Script().FailingAtRate(0.5, 99);
  std::vector<bool> seq_a, seq_b, seq_c;
  for (int i = 0; i < 200; ++i) {
    seq_a.push_back(a.Call().ok());
    seq_b.push_back(b.Call().ok());
    seq_c.push_back(c.Call().ok());
  }
  EXPECT_EQ(seq_a, seq_b) << "same seed, same sequence";
  EXPECT_NE(seq_a, seq_c) << "another seed, another sequence";
}

TEST(FailingBackendTest, FailingAtRateIsRoughlyRightOver10kCalls) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().FailingAtRate(0.3, 42);
  for (int i = 0; i < 10000; ++i) (void)backend.Call();
  const BackendCounts c = backend.counts();
  EXPECT_EQ(c.calls, 10000u);
  EXPECT_EQ(c.successes + c.failures, 10000u);
  // Binomial(10000, 0.3): sd ~ 46, so +-200 is over 4 sd.
  EXPECT_GT(c.failures, 2800u);
  EXPECT_LT(c.failures, 3200u);
}

TEST(FailingBackendTest, FailingAtRateExtremesAndDefaultStatus) {
  FakeClock clock;
  FailingBackend<int> never(&clock, 1, FailingBackendOptions{"recall", {}, {}});
  FailingBackend<int> always(&clock, 1,
                             FailingBackendOptions{"recall", {}, {}});
  never.Script().FailingAtRate(0.0, 7);
  always.Script().FailingAtRate(1.5, 7);  // clamped to 1
  for (int i = 0; i < 100; ++i) {
    EXPECT_THAT(never.Call(), IsOk());
    EXPECT_THAT(always.Call(), StatusIs(kUnavailable, HasSubstr("recall")));
  }
}

#if DEGRADE_HAS_EXCEPTIONS
TEST(FailingBackendTest, ThrowingPhaseThrowsRuntimeError) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1,
                              FailingBackendOptions{"ranker", {}, {}});
  backend.Script().Throwing(absl::Seconds(1)).Healthy();
  try {
    (void)backend.Call();
    ADD_FAILURE() << "expected a std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ranker"));
  }
  EXPECT_EQ(backend.throws(), 1u);
  EXPECT_EQ(backend.failures(), 0u) << "throws are counted apart";
  clock.Advance(absl::Seconds(1));
  EXPECT_NO_THROW((void)backend.Call());
}
#endif

TEST(FailingBackendTest, SlowPhaseAdvancesTheFakeClockInsideTheCall) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 5);
  backend.Script().Slow(absl::Milliseconds(250), absl::Seconds(1)).Healthy();
  const absl::Time before = clock.Now();
  EXPECT_THAT(backend.Call(), IsOkAndHolds(5));
  EXPECT_EQ(clock.Now() - before, absl::Milliseconds(250));
  EXPECT_EQ(backend.slow_calls(), 1u);
  EXPECT_EQ(backend.successes(), 1u);

  // Four slow calls take the clock to 1 s: the fifth call is past the phase.
  for (int i = 0; i < 3; ++i) (void)backend.Call();
  EXPECT_EQ(clock.Now() - before, absl::Seconds(1));
  EXPECT_THAT(backend.Call(), IsOk());
  EXPECT_EQ(clock.Now() - before, absl::Seconds(1));
  EXPECT_EQ(backend.slow_calls(), 4u);
}

TEST(FailingBackendTest, SlowPhaseOnAConstClockDoesNotAdvanceIt) {
  // A FakeClock passed as `const Clock*` cannot be advanced; with a zero
  // latency nothing sleeps, and the call is still counted as slow.
  FakeClock clock;
  const degrade::Clock* read_only = &clock;
  FailingBackend<int> backend(read_only, 5);
  backend.Script().Slow(absl::ZeroDuration());
  const absl::Time before = clock.Now();
  EXPECT_THAT(backend.Call(), IsOkAndHolds(5));
  EXPECT_EQ(clock.Now(), before);
  EXPECT_EQ(backend.slow_calls(), 1u);
}

TEST(FailingBackendTest, HangingPhaseBlocksUntilReleased) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Hanging();
  absl::StatusOr<int> result;
  std::thread caller([&] { result = backend.Call(); });

  ASSERT_TRUE(backend.WaitForHungCalls(1));
  EXPECT_EQ(backend.hangs_in_progress(), 1u);
  EXPECT_EQ(backend.CurrentPhase(), PhaseKind::kHanging);
  backend.ReleaseHung();
  caller.join();

  EXPECT_THAT(result, StatusIs(absl::StatusCode::kDeadlineExceeded,
                               HasSubstr("ReleaseHung")));
  const BackendCounts c = backend.counts();
  EXPECT_EQ(c.hangs_in_progress, 0u);
  EXPECT_EQ(c.hangs, 1u);
  EXPECT_EQ(c.failures, 1u);
}

TEST(FailingBackendTest, ReleaseHungReleasesEveryHungCall) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Hanging();
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&] { (void)backend.Call(); });
  }
  ASSERT_TRUE(backend.WaitForHungCalls(3));
  backend.ReleaseHung();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(backend.hangs(), 3u);
  EXPECT_EQ(backend.hangs_in_progress(), 0u);
}

TEST(FailingBackendTest, HangTimeoutIsASafetyNet) {
  FakeClock clock;
  FailingBackendOptions options;
  options.hang_timeout = absl::ZeroDuration();  // give up at once
  FailingBackend<int> backend(&clock, 1, options);
  backend.Script().Hanging();
  EXPECT_THAT(backend.Call(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                       HasSubstr("hang_timeout")));
  EXPECT_EQ(backend.hangs_in_progress(), 0u);
}

// Issue 13, defect 1: a 1000-year hang_timeout and WaitForHungCalls(1,
// 1000 years) overflowed steady_clock inside wait_for and gave up at once.
// The hung call must stay hung until released, and the wait must see it.
TEST(FailingBackendTest, HangTimeoutsOfCenturiesWaitForReal) {
  const absl::Duration kMillennium = absl::Hours(24 * 365 * 1000);
  for (const absl::Duration hang : {kMillennium, absl::InfiniteDuration()}) {
    SCOPED_TRACE(absl::FormatDuration(hang));
    FakeClock clock;
    FailingBackendOptions options;
    options.hang_timeout = hang;
    FailingBackend<int> backend(&clock, 1, options);
    backend.Script().Hanging();
    absl::StatusOr<int> result;
    std::thread caller([&] { result = backend.Call(); });
    ASSERT_TRUE(backend.WaitForHungCalls(1, kMillennium));
    EXPECT_EQ(backend.hangs_in_progress(), 1u) << "gave up at once";
    backend.ReleaseHung();
    caller.join();
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                 HasSubstr("ReleaseHung")));
  }
}

TEST(FailingBackendTest, FlappingAlternatesUpThenDown) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Flapping(absl::Seconds(2), absl::Seconds(1),
                            absl::Seconds(6));
  const auto ok_at = [&](absl::Duration at) {
    clock.Set(t0 + at);
    return backend.Call().ok();
  };
  EXPECT_TRUE(ok_at(absl::ZeroDuration()));
  EXPECT_TRUE(ok_at(absl::Seconds(2) - absl::Nanoseconds(1)));
  EXPECT_FALSE(ok_at(absl::Seconds(2)));
  EXPECT_FALSE(ok_at(absl::Seconds(3) - absl::Nanoseconds(1)));
  EXPECT_TRUE(ok_at(absl::Seconds(3)));
  EXPECT_FALSE(ok_at(absl::Seconds(5)));
  EXPECT_TRUE(ok_at(absl::Seconds(6))) << "past the phase: healthy";
  EXPECT_EQ(backend.phase_calls(0), 6u);
}

TEST(FailingBackendTest, FlappingUsesTheGivenDownStatus) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Flapping(absl::Seconds(1), absl::Seconds(1),
                            absl::InfiniteDuration(),
                            absl::InternalError("blip"));
  clock.Advance(absl::Milliseconds(1500));
  EXPECT_THAT(backend.Call(), StatusIs(absl::StatusCode::kInternal, "blip"));
}

// ---- FailingBackend: counters and threads
// ------------------------------------

TEST(FailingBackendTest, CountersAddUpAcrossPhases) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script()
      .Healthy(absl::Seconds(1))
      .Failing(absl::UnavailableError("down"), absl::Seconds(1))
      .Slow(absl::Milliseconds(100), absl::Seconds(1))
#if DEGRADE_HAS_EXCEPTIONS
      .Throwing(absl::Seconds(1))
#endif
      ;
  for (int i = 0; i < 3; ++i) (void)backend.Call();
  clock.Advance(absl::Seconds(1));
  for (int i = 0; i < 2; ++i) (void)backend.Call();
  clock.Advance(absl::Seconds(1));
  (void)backend.Call();  // slow: moves the clock 100 ms
#if DEGRADE_HAS_EXCEPTIONS
  clock.Advance(absl::Milliseconds(900));
  EXPECT_THROW((void)backend.Call(), std::runtime_error);
#endif

  BackendCounts c = backend.counts();
  EXPECT_EQ(c.successes, 4u);
  EXPECT_EQ(c.failures, 2u);
  EXPECT_EQ(c.slow_calls, 1u);
  EXPECT_EQ(c.calls, c.successes + c.failures + c.throws);
  EXPECT_THAT(c.phase_calls, ::testing::SizeIs(DEGRADE_HAS_EXCEPTIONS ? 4 : 3));
  EXPECT_EQ(c.phase_calls[0], 3u);
  EXPECT_EQ(c.phase_calls[1], 2u);
  EXPECT_EQ(c.phase_calls[2], 1u);

  backend.ResetCounts();
  c = backend.counts();
  EXPECT_EQ(c.calls, 0u);
  EXPECT_EQ(c.successes, 0u);
  EXPECT_EQ(c.phase_calls[0], 0u);
}

TEST(FailingBackendTest, ConcurrentCallsAddUp) {
  // 4 threads share one backend. The rate phase draws by per-phase call
  // index, so its failure total over N calls is the same however the calls
  // interleave: compare against a single-threaded twin.
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 2000;
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  FailingBackend<int> twin(&clock, 1);
  backend.Script().FailingAtRate(0.25, 2026);
  twin.Script().FailingAtRate(0.25, 2026);
  for (int i = 0; i < kThreads * kCallsPerThread; ++i) (void)twin.Call();

  std::vector<std::thread> threads;
  std::vector<uint64_t> ok_per_thread(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        if (backend.Call().ok()) ++ok_per_thread[static_cast<std::size_t>(t)];
      }
    });
  }
  for (std::thread& t : threads) t.join();

  uint64_t ok = 0;
  for (uint64_t n : ok_per_thread) ok += n;
  const BackendCounts c = backend.counts();
  EXPECT_EQ(c.calls, static_cast<uint64_t>(kThreads * kCallsPerThread));
  EXPECT_EQ(c.successes, ok);
  EXPECT_EQ(c.successes + c.failures, c.calls);
  EXPECT_EQ(c.failures, twin.failures());
}

// ---- FailingBackend behind a CircuitBreaker
// ----------------------------------

degrade::BreakerSettings TripAfterFive(const degrade::Clock* clock) {
  degrade::BreakerSettings settings;
  settings.name = "feature-service";
  settings.clock = clock;
  settings.timeout = absl::Seconds(10);
  settings.ready_to_trip = degrade::trip::ConsecutiveFailures(5);
  return settings;
}

TEST(FailingBackendBreakerTest, TripsDuringTheOutageAndClosesAfterRecovery) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  FailingBackend<int> backend(&clock, 1);
  backend.Script()
      .Healthy(absl::Seconds(10))
      .Failing(absl::UnavailableError("down"), absl::Seconds(30))
      .Healthy();
  degrade::CircuitBreaker<int> breaker(TripAfterFive(&clock));
  const auto call = [&] {
    return breaker.Execute([&] { return backend.Call(); });
  };

  EXPECT_THAT(call(), IsOkAndHolds(1));
  EXPECT_EQ(breaker.state(), degrade::State::kClosed);

  clock.Set(t0 + absl::Seconds(10));  // the outage starts
  for (int i = 0; i < 5; ++i) EXPECT_THAT(call(), StatusIs(kUnavailable));
  EXPECT_EQ(breaker.state(), degrade::State::kOpen);
  for (int i = 0; i < 5; ++i) EXPECT_THAT(call(), IsBreakerOpenStatus());
  EXPECT_EQ(backend.calls(), 6u) << "rejected calls never reach the backend";

  // Half-open at 20 s, but the backend is still down: the trial reopens it.
  clock.Set(t0 + absl::Seconds(20) + absl::Milliseconds(1));
  EXPECT_THAT(call(), StatusIs(kUnavailable));
  EXPECT_EQ(breaker.state(), degrade::State::kOpen);

  // The outage ends at 40 s; the next half-open trial succeeds and closes.
  clock.Set(t0 + absl::Seconds(41));
  EXPECT_EQ(breaker.state(), degrade::State::kHalfOpen);
  EXPECT_THAT(call(), IsOkAndHolds(1));
  EXPECT_EQ(breaker.state(), degrade::State::kClosed);
  EXPECT_EQ(backend.calls(), 8u);
  EXPECT_EQ(backend.failures(), 6u);
}

TEST(FailingBackendBreakerTest, ThrowingBackendIsAFailureForTheBreaker) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Throwing();
  degrade::CircuitBreaker<int> breaker(TripAfterFive(&clock));
  // With exceptions the breaker catches the throw; without them the backend
  // returns the same kind of status itself.
  EXPECT_THAT(breaker.Execute([&] { return backend.Call(); }),
              IsCallableExceptionStatus());
  EXPECT_EQ(breaker.counts().total_failures, 1u);
  EXPECT_EQ(backend.throws(), 1u);
}

TEST(FailingBackendBreakerTest, SlowBackendIsASlowCallForTheBreaker) {
  FakeClock clock;
  FailingBackend<int> backend(&clock, 1);
  backend.Script().Slow(absl::Milliseconds(250));
  degrade::BreakerSettings settings = TripAfterFive(&clock);
  settings.slow_call_duration = absl::Milliseconds(100);
  degrade::CircuitBreaker<int> breaker(settings);
  EXPECT_THAT(breaker.Execute([&] { return backend.Call(); }), IsOk());
  const degrade::Counts c = breaker.counts();
  EXPECT_EQ(c.total_successes, 1u);
  EXPECT_EQ(c.window_slow_calls, 1u)
      << "the simulated latency moved the clock the breaker reads";
}

// ---- How a user wires a FailingBackend into a gMock mock
// ---------------------

// The user's client interface, as their service sees it.
class FeatureClient {
 public:
  virtual ~FeatureClient() = default;
  virtual absl::StatusOr<std::vector<float>> Fetch(int user) = 0;
};

class MockFeatureClient : public FeatureClient {
 public:
  MOCK_METHOD(absl::StatusOr<std::vector<float>>, Fetch, (int user),
              (override));
};

// The code under test: features through a breaker, the global average on
// any error (never zeros; see DESIGN.md).
std::vector<float> FeaturesOrDefault(
    FeatureClient& client, degrade::CircuitBreaker<std::vector<float>>& breaker,
    int user) {
  absl::StatusOr<std::vector<float>> f =
      breaker.Execute([&] { return client.Fetch(user); });
  return f.ok() ? *std::move(f) : std::vector<float>{0.5f, 0.5f};
}

TEST(FeatureClientMockTest, MockFollowsTheBackendScript) {
  FakeClock clock;
  FailingBackend<std::vector<float>> backend(
      &clock, std::vector<float>{1.0f, 2.0f},
      FailingBackendOptions{"feature-service", {}, {}});
  backend.Script()
      .Healthy(absl::Seconds(10))
      .Failing(absl::UnavailableError("feature service down"));

  MockFeatureClient client;
  // The mock's behaviour is whatever the script says at the current time.
  ON_CALL(client, Fetch(_)).WillByDefault([&](int) { return backend.Call(); });
  // 2 healthy calls + 5 failures that trip the breaker; the 5 calls after
  // that are rejected by the breaker and never reach the client.
  EXPECT_CALL(client, Fetch(7)).Times(7);

  degrade::CircuitBreaker<std::vector<float>> breaker(TripAfterFive(&clock));
  EXPECT_THAT(FeaturesOrDefault(client, breaker, 7), ElementsAre(1.0f, 2.0f));
  EXPECT_THAT(FeaturesOrDefault(client, breaker, 7), ElementsAre(1.0f, 2.0f));

  clock.Advance(absl::Seconds(10));
  for (int i = 0; i < 10; ++i) {
    EXPECT_THAT(FeaturesOrDefault(client, breaker, 7), ElementsAre(0.5f, 0.5f));
  }
  EXPECT_EQ(breaker.state(), degrade::State::kOpen);
  EXPECT_EQ(backend.calls(), 7u);
  EXPECT_EQ(backend.failures(), 5u);
}

}  // namespace DEGRADE_TEST_UNIT
