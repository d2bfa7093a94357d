// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The one rule for time arithmetic (detail/saturating.hpp): every
// elapsed-time computation saturates and treats a clock going backwards as
// no time passing. One test per site that once subtracted times raw, each on
// a FakeClock stepped back, or set to InfinitePast or InfiniteFuture.

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/hedge.hpp"
#include "degrade/hedge_settings.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A clock that reads any absl::Time, the infinite ones included (a FakeClock
// keeps int64 nanoseconds, so its "InfiniteFuture" is year 2262). Set from
// the test's thread only.
class InstantClock final : public Clock {
 public:
  explicit InstantClock(absl::Time t = kT0) : now_(t) {}
  absl::Time Now() const override { return now_; }
  void Set(absl::Time t) { now_ = t; }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_;
};

// ---- Deadline and CallWithDeadline (deadline.hpp) ----

TEST(TimeArithmeticDeadline, InfiniteBudgetNeverExpiresAtTheInfiniteFuture) {
  InstantClock clock(absl::InfiniteFuture());
  const Deadline d = Deadline::In(absl::InfiniteDuration(), &clock);
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(d.remaining(), absl::InfiniteDuration());
}

TEST(TimeArithmeticDeadline, InfiniteBudgetNeverExpiresAtTheInfinitePast) {
  InstantClock clock(absl::InfinitePast());
  const Deadline d = Deadline::In(absl::InfiniteDuration(), &clock);
  EXPECT_EQ(d.when(), absl::InfiniteFuture());
  EXPECT_FALSE(d.expired());
  EXPECT_EQ(d.remaining(), absl::InfiniteDuration());
}

TEST(TimeArithmeticDeadline, ExpiredExactlyWhenNothingRemains) {
  InstantClock clock(kT0);
  const Deadline finite = Deadline::In(absl::Seconds(1), &clock);
  const Deadline none = Deadline::At(absl::InfiniteFuture(), &clock);
  const Deadline past = Deadline::At(absl::InfinitePast(), &clock);
  for (const absl::Time now :
       {absl::InfinitePast(), kT0 - absl::Hours(1), kT0, kT0 + absl::Seconds(1),
        absl::InfiniteFuture()}) {
    clock.Set(now);
    for (const Deadline* d : {&finite, &none, &past}) {
      EXPECT_EQ(d->expired(), d->remaining() == absl::ZeroDuration())
          << "deadline " << d->when() << " at " << now;
      EXPECT_GE(d->remaining(), absl::ZeroDuration());
    }
    EXPECT_FALSE(none.expired()) << now;
    EXPECT_TRUE(past.expired()) << now;
  }
}

TEST(TimeArithmeticDeadline, CallWithInfiniteBudgetKeepsTheAnswer) {
  for (const absl::Time now : {absl::InfinitePast(), absl::InfiniteFuture()}) {
    InstantClock clock(now);
    const absl::StatusOr<int> r = CallWithDeadline(
        absl::InfiniteDuration(), [](const Deadline&) { return 7; }, &clock);
    ASSERT_TRUE(r.ok()) << now << ": " << r.status();
    EXPECT_EQ(*r, 7);
  }
}

// ---- The degradation manager's holds (hysteresis.hpp, holds.hpp) ----

DegradationConfig OneLevel(absl::Duration hold, absl::Duration enter_after) {
  DegradationConfig c;
  c.name = "time";
  c.recover_ratio = 0.5;
  c.hold = hold;
  c.enter_after = enter_after;
  LevelSpec l1;
  l1.name = "level1";
  l1.enter = {{"gpu", 70.0}};
  l1.disable = {"extra"};
  c.levels = {l1};
  return c;
}

// The manager on an InstantClock (clock_), and the same tests' FakeClock
// variant where a FakeClock can play the part (fake_).
class TimeArithmeticManager : public ::testing::Test {
 protected:
  std::unique_ptr<DegradationManager> Make(DegradationConfig config,
                                           const Clock* clock = nullptr) {
    ManagerOptions o;
    o.name = "time";
    o.clock = clock != nullptr ? clock : &clock_;
    o.log_sink = [](absl::string_view) {};
    auto m = std::make_unique<DegradationManager>(o);
    const absl::Status s = m->Reload(std::move(config));
    EXPECT_TRUE(s.ok()) << s;
    return m;
  }
  void ObserveOk(DegradationManager& m, absl::string_view signal,
                 double value) {
    const absl::Status s = m.Observe(signal, value);
    ASSERT_TRUE(s.ok()) << s;
  }

  InstantClock clock_;
  FakeClock fake_{kT0};
};

TEST_F(TimeArithmeticManager, ClockSteppedBackDoesNotStretchTheRecoveryHold) {
  clock_.Set(kT0);
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ObserveOk(*m, "gpu", 95.0);
  ASSERT_EQ(m->level(), 1);
  ObserveOk(*m, "gpu", 10.0);  // the hold starts
  clock_.Advance(absl::Seconds(30));
  m->Evaluate();
  clock_.Set(clock_.Now() - absl::Hours(1));  // NTP steps the clock back
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Seconds(30));  // 60 s of the hold have now run
  m->Evaluate();
  EXPECT_EQ(m->level(), 0) << "the step back stretched the hold";
}

TEST_F(TimeArithmeticManager, ClockAtInfiniteFutureDoesNotSkipTheHold) {
  clock_.Set(kT0);
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 10.0);
  clock_.Set(absl::InfiniteFuture());
  m->Evaluate();
  EXPECT_EQ(m->level(), 1) << "a jump to InfiniteFuture skipped the hold";
  clock_.Set(kT0 + absl::Seconds(10));
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Seconds(50));
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
}

TEST_F(TimeArithmeticManager, FakeClockAtItsEndDoesNotSkipTheHold) {
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()), &fake_);
  ObserveOk(*m, "gpu", 95.0);
  ObserveOk(*m, "gpu", 10.0);
  fake_.Set(absl::InfiniteFuture());  // reads FromUnixNanos(INT64_MAX)
  m->Evaluate();
  EXPECT_EQ(m->level(), 1) << "a jump to the clock's end skipped the hold";
  fake_.Set(absl::InfinitePast());
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
}

TEST_F(TimeArithmeticManager, ClockAtInfinitePastHoldsWithoutOverflow) {
  clock_.Set(absl::InfinitePast());
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ObserveOk(*m, "gpu", 95.0);
  ASSERT_EQ(m->level(), 1);
  ObserveOk(*m, "gpu", 10.0);
  clock_.Set(kT0);  // from InfinitePast to a real reading: no time passed
  m->Evaluate();
  EXPECT_EQ(m->level(), 1);
  clock_.Advance(absl::Seconds(60));
  m->Evaluate();
  EXPECT_EQ(m->level(), 0);
}

TEST_F(TimeArithmeticManager, ClockSteppedBackDoesNotStretchEnterAfter) {
  clock_.Set(kT0);
  auto m = Make(OneLevel(absl::Seconds(60), absl::Seconds(10)));
  ObserveOk(*m, "gpu", 95.0);
  clock_.Advance(absl::Seconds(5));
  ObserveOk(*m, "gpu", 95.0);
  clock_.Set(clock_.Now() - absl::Hours(1));
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 0);
  clock_.Advance(absl::Seconds(5));
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 1) << "the step back stretched enter_after";
}

TEST_F(TimeArithmeticManager, ClockAtInfiniteFutureDoesNotSkipEnterAfter) {
  clock_.Set(kT0);
  auto m = Make(OneLevel(absl::Seconds(60), absl::Seconds(10)));
  ObserveOk(*m, "gpu", 95.0);
  clock_.Set(absl::InfiniteFuture());
  ObserveOk(*m, "gpu", 95.0);
  EXPECT_EQ(m->level(), 0);
}

TEST_F(TimeArithmeticManager, InfiniteForceLevelHoldsAtTheInfiniteFuture) {
  clock_.Set(absl::InfiniteFuture());
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ASSERT_TRUE(m->ForceLevel(1, absl::InfiniteDuration()).ok());
  EXPECT_EQ(m->ForcedLevel(), std::optional<int>(1));
  EXPECT_EQ(m->level(), 1);
}

TEST_F(TimeArithmeticManager, ClockSteppedBackDoesNotStretchAForceLevel) {
  clock_.Set(kT0);
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ASSERT_TRUE(m->ForceLevel(1, absl::Minutes(10)).ok());
  clock_.Advance(absl::Minutes(5));
  EXPECT_EQ(m->ForcedLevel(), std::optional<int>(1));
  clock_.Set(clock_.Now() - absl::Hours(1));
  EXPECT_EQ(m->ForcedLevel(), std::optional<int>(1));
  clock_.Advance(absl::Minutes(5));  // ten minutes have run
  EXPECT_EQ(m->ForcedLevel(), std::nullopt)
      << "the step back stretched the override";
}

TEST_F(TimeArithmeticManager, ForceLevelAtInfinitePastThenRealClock) {
  clock_.Set(absl::InfinitePast());
  auto m = Make(OneLevel(absl::Seconds(60), absl::ZeroDuration()));
  ASSERT_TRUE(m->ForceLevel(1, absl::Minutes(10)).ok());
  clock_.Set(kT0);
  EXPECT_EQ(m->ForcedLevel(), std::optional<int>(1));
  clock_.Advance(absl::Minutes(10));
  EXPECT_EQ(m->ForcedLevel(), std::nullopt);
}

// ---- The hedge delay's cache (detail/retry/hedge_book.hpp) ----

TEST(TimeArithmeticHedge, DelayCacheAtInfinitePastAndSteppedBack) {
  FakeClock clock(kT0);
  HedgeSettings s;
  s.name = "time";
  s.min_samples = 1;
  s.clock = &clock;
  s.metrics = NoTelemetry();
  auto p = HedgePolicy::Create(std::move(s));
  ASSERT_TRUE(p.ok()) << p.status();
  HedgePolicy& policy = **p;
  policy.RecordLatency(absl::Milliseconds(20));
  const absl::Duration at_t0 = policy.delay();
  EXPECT_NE(at_t0, absl::InfiniteDuration());
  // Once `now_ns - at` overflowed here (signed overflow, UB).
  clock.Set(absl::InfinitePast());
  EXPECT_GE(policy.delay(), absl::ZeroDuration());
  clock.Set(kT0 - absl::Hours(1));
  EXPECT_GE(policy.delay(), absl::ZeroDuration());
  clock.Set(absl::InfiniteFuture());
  EXPECT_GE(policy.delay(), absl::ZeroDuration());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
