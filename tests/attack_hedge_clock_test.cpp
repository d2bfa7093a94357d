// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Hedge() on a clock stepped back: the review of issue 32's time rule found
// it while fixing the breaker's timers. It runs a thread pool, so it is
// labelled concurrency (ThreadSanitizer runs it).

#include <atomic>
#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/hedge.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

const absl::Time kHedgeStart = absl::FromUnixSeconds(1'700'000'000);

// A sibling found while fixing the breaker's timers: Hedge() waited for
// RemainingUntil(next_hedge_at(), clock.Now()) of real time, with
// next_hedge_at() on the policy's clock as it read at the start. A clock
// stepped back an hour between the two (a custom clock, a FakeClock set
// back) made the wait an hour: no hedge was sent while the first attempt
// hung. The wait is now at most one delay (the next hedge is never more
// than one delay away). The executor steps the clock as the first attempt
// is queued, so the step always falls between the start and the wait.
class SteppingExecutor : public Executor {
 public:
  SteppingExecutor(Executor* inner, FakeClock* clock)
      : inner_(inner), clock_(clock) {}
  bool Submit(std::function<void()> task) override {
    if (!stepped_.exchange(true)) clock_->Set(kHedgeStart - absl::Hours(1));
    return inner_->Submit(std::move(task));
  }

 private:
  Executor* const inner_;
  FakeClock* const clock_;
  std::atomic<bool> stepped_{false};
};

TEST(HedgeClockAttack, AClockSteppedBackDoesNotHoldTheHedgeBack) {
  FakeClock clock(kHedgeStart);
  HedgeSettings s;
  s.name = "stepped";
  s.clock = &clock;
  s.delay = absl::Milliseconds(1);
  s.max_hedges = 1;
  s.max_extra_load = 1.0;
  s.metrics = NoTelemetry();
  auto policy = HedgePolicy::Create(s);
  ASSERT_TRUE(policy.ok()) << policy.status();
  // Declared before the pool, so that they outlive the losing attempt: the
  // pool's destructor joins it while it may still be returning from its wait.
  absl::Notification hedged;
  std::atomic<int> attempts{0};
  ThreadPool pool(2);
  SteppingExecutor executor(&pool, &clock);
  const absl::StatusOr<int> r =
      Hedge(**policy, executor, [&](const CancelToken&) -> absl::StatusOr<int> {
        if (attempts.fetch_add(1) == 0) {
          // The first attempt hangs until the hedge comes (a safety bound
          // of a minute: without the fix it answers first, then).
          hedged.WaitForNotificationWithTimeout(absl::Minutes(1));
          return 1;
        }
        hedged.Notify();
        return 2;
      });
  ASSERT_TRUE(r.ok()) << r.status();
  // Either attempt may answer first once the hedge is sent (the hedge wakes
  // the first before it returns), so what shows the hedge came is that it
  // ran: without the fix the first answers alone after its minute.
  EXPECT_EQ(attempts.load(), 2) << "no hedge within the hung attempt's minute";
  EXPECT_TRUE(hedged.HasBeenNotified());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
