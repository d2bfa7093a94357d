// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Tests of coalesce.hpp: settings validation; inline and executor modes;
// every waiter gets exactly the call's outcome (an error included) and
// nothing is kept after it (the next request starts a new call); each
// request waits only its own budget (0, 1 ns, short, infinite, a Deadline)
// while the call goes on and still reaches on_complete; the first request
// leaving does not fail the others; a refusing or throwing executor; the
// table bound; a call or hook that throws; a hook that asks for the same
// key again; destruction with calls in flight; the stats (the
// degrade_coalesce_* series are in coalesce_stats_test.cpp). Waits are on
// notifications and counters, never on sleeps; the 1,000-caller and many-key
// stress runs are in coalesce_concurrency_test.cpp.

#include "degrade/coalesce.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/coalesce_stats.hpp"
#include "degrade/deadline.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/testing/manual_executor.hpp"
#include "degrade/testing/status_matchers.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/notification.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::testing::IsOkAndHolds;
using ::degrade::testing::ManualExecutor;
using ::degrade::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

using Features = Coalescer<std::string, int>;

CoalescerSettings CoalesceSettings(Executor* executor) {
  CoalescerSettings s;
  s.name = "features";
  s.executor = executor;
  s.metrics = NoTelemetry();
  return s;
}

// Spins (yielding) until `done()`: the condition is what the test waits
// for, so no timing is assumed.
template <typename Pred>
void AwaitCondition(Pred done) {
  while (!done()) std::this_thread::yield();
}

TEST(CoalesceTest, RefusesBadSettingsByName) {
  CoalescerSettings s = CoalesceSettings(nullptr);
  s.max_inflight = 0;
  EXPECT_THAT(Features::Create(s).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("coalescer 'features': setting "
                                 "'max_inflight' = 0 is invalid")));
  s.max_inflight = kMaxCoalesceInflight + 1;
  EXPECT_THAT(Features::Create(s).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'max_inflight' = 16777217")));
  s.max_inflight = kMaxCoalesceInflight;
  s.shards = kMaxCoalesceShards + 1;
  EXPECT_THAT(Features::Create(s).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("setting 'shards' = 4097 is invalid")));
  s.shards = 1;
  s.name = "bad\nname";
  EXPECT_TRUE(Features::Create(s).ok());
  EXPECT_TRUE(ValidateCoalescerSettings(CoalescerSettings()).ok());
}

TEST(CoalesceTest, InlineTheFirstRequestRunsTheCallOnItsOwnThread) {
  auto c = Features::Create(CoalesceSettings(nullptr)).value();
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id ran_on;
  // A zero wait does not stop an inline leader: the call's own timeout is
  // its budget.
  Coalesced<int> r = c->DoWithRole("u1", absl::ZeroDuration(), [&] {
    ran_on = std::this_thread::get_id();
    return 7;
  });
  EXPECT_THAT(r.result, IsOkAndHolds(7));
  EXPECT_EQ(r.role, CoalesceRole::kLeader);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(ran_on, me);
  EXPECT_EQ(c->inflight(), 0u);
  const CoalesceStats st = c->stats();
  EXPECT_EQ(st.leaders, 1u);
  EXPECT_EQ(st.completed, 1u);
  EXPECT_EQ(st.joined + st.timed_out + st.failed, 0u);
}

TEST(CoalesceTest, AFailureIsNotKeptTheNextRequestStartsANewCall) {
  auto c = Features::Create(CoalesceSettings(nullptr)).value();
  int calls = 0;
  auto call = [&]() -> absl::StatusOr<int> {
    if (++calls == 1) return absl::UnavailableError("store down");
    return 42;
  };
  EXPECT_THAT(c->Do("u1", absl::Seconds(1), call),
              StatusIs(absl::StatusCode::kUnavailable, "store down"));
  EXPECT_THAT(c->Do("u1", absl::Seconds(1), call), IsOkAndHolds(42));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(c->stats().failed, 1u);
  EXPECT_EQ(c->stats().leaders, 2u);
}

// Joins `n` requests with an infinite wait to the call in flight for `key`
// and returns their threads; each stores its result in `out`.
std::vector<std::thread> JoinWaiters(Features& c, const std::string& key, int n,
                                     std::vector<Coalesced<int>>* out) {
  out->resize(static_cast<std::size_t>(n));
  const uint64_t before = c.stats().joined;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&c, key, out, i] {
      (*out)[static_cast<std::size_t>(i)] = c.DoWithRole(
          key, absl::InfiniteDuration(), []() -> absl::StatusOr<int> {
            ADD_FAILURE() << "a joined request ran its own call";
            return -1;
          });
    });
  }
  AwaitCondition([&] { return c.stats().joined == before + uint64_t(n); });
  return threads;
}

TEST(CoalesceTest, EveryWaiterGetsTheCallsExactErrorAndNothingIsKept) {
  ManualExecutor executor;
  std::vector<absl::Status> hooked;
  auto c =
      Features::Create(CoalesceSettings(&executor),
                       [&](const std::string&, const absl::StatusOr<int>& r) {
                         hooked.push_back(r.status());
                       })
          .value();
  // With a payload, which every waiter must get too (a retry-after, the
  // mark of a callable exception).
  absl::Status down = absl::UnavailableError("store down");
  down.SetPayload("type.example/retry-after", absl::Cord("250ms"));
  // The first request leaves at once (its budget is 0); the others wait.
  Coalesced<int> first = c->DoWithRole(
      "u1", absl::ZeroDuration(), [down] { return absl::StatusOr<int>(down); });
  EXPECT_EQ(first.role, CoalesceRole::kLeader);
  EXPECT_TRUE(first.timed_out);
  EXPECT_EQ(c->inflight(), 1u);
  std::vector<Coalesced<int>> waiters;
  std::vector<std::thread> threads = JoinWaiters(*c, "u1", 3, &waiters);
  ASSERT_EQ(executor.RunAll(), 1u);
  for (std::thread& t : threads) t.join();
  for (const Coalesced<int>& w : waiters) {
    EXPECT_EQ(w.role, CoalesceRole::kJoined);
    EXPECT_FALSE(w.timed_out);
    EXPECT_EQ(w.result.status(), down);  // code, message and payload
  }
  ASSERT_EQ(hooked.size(), 1u);
  EXPECT_EQ(hooked[0], down);
  EXPECT_EQ(c->inflight(), 0u);
  // Not cached: the next request starts a new call.
  (void)c->Do("u1", absl::ZeroDuration(), [] { return 1; });
  EXPECT_EQ(executor.submitted(), 2u);
  EXPECT_EQ(c->stats().leaders, 2u);
}

TEST(CoalesceTest, TheFirstRequestLeavingEarlyDoesNotFailTheOthers) {
  ManualExecutor executor;
  auto c = Features::Create(CoalesceSettings(&executor)).value();
  EXPECT_THAT(c->Do("u1", absl::Nanoseconds(1), [] { return 5; }),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  std::vector<Coalesced<int>> waiters;
  std::vector<std::thread> threads = JoinWaiters(*c, "u1", 2, &waiters);
  executor.RunAll();
  for (std::thread& t : threads) t.join();
  for (const Coalesced<int>& w : waiters)
    EXPECT_THAT(w.result, IsOkAndHolds(5));
}

TEST(CoalesceTest, WaitersGiveUpAtTheirOwnBudgetAndTheCallGoesOn) {
  ThreadPool pool(1);
  degrade_tests::Notification release;
  degrade_tests::Notification hooked;
  std::atomic<int> calls{0};
  absl::StatusOr<int> seen = absl::UnknownError("not yet");
  auto c =
      Features::Create(CoalesceSettings(&pool),
                       [&](const std::string&, const absl::StatusOr<int>& r) {
                         seen = r;
                         hooked.Notify();
                       })
          .value();
  auto slow = [&calls, &release] {
    calls.fetch_add(1);
    release.WaitForNotification();
    return 99;
  };
  const std::string key = "user-4242";
  const absl::Duration budgets[] = {absl::ZeroDuration(), absl::Nanoseconds(1),
                                    -absl::Seconds(1), absl::Milliseconds(1),
                                    -absl::InfiniteDuration()};
  for (absl::Duration budget : budgets) {
    Coalesced<int> r = c->DoWithRole(key, budget, slow);
    EXPECT_TRUE(r.timed_out);
    EXPECT_THAT(r.result, StatusIs(absl::StatusCode::kDeadlineExceeded,
                                   HasSubstr("coalescer 'features'")));
    // The status names the place and cause, never the key (which may be a
    // user id, and would split log aggregation per user).
    EXPECT_THAT(r.result.status().message(), Not(HasSubstr(key)));
  }
  EXPECT_EQ(c->inflight(), 1u);
  const CoalesceStats st = c->stats();
  EXPECT_EQ(st.leaders, 1u);
  EXPECT_EQ(st.joined, 4u);
  EXPECT_EQ(st.timed_out, 5u);
  release.Notify();
  hooked.WaitForNotification();
  EXPECT_THAT(seen, IsOkAndHolds(99));
  EXPECT_EQ(calls.load(), 1);
}

TEST(CoalesceTest, AnInfiniteBudgetWaitsForTheEnd) {
  ThreadPool pool(1);
  degrade_tests::Notification release;
  auto c = Features::Create(CoalesceSettings(&pool)).value();
  absl::StatusOr<int> got = absl::UnknownError("not yet");
  std::thread waiter([&] {
    got = c->Do("u1", absl::InfiniteDuration(), [&release] {
      release.WaitForNotification();
      return 3;
    });
  });
  AwaitCondition([&] { return c->stats().leaders == 1; });
  release.Notify();
  waiter.join();
  EXPECT_THAT(got, IsOkAndHolds(3));
}

TEST(CoalesceTest, TheDeadlineOverloadWaitsWhatRemains) {
  FakeClock clock;
  ManualExecutor executor;
  auto c = Features::Create(CoalesceSettings(&executor)).value();
  const Deadline spent = Deadline::In(absl::ZeroDuration(), &clock);
  EXPECT_THAT(
      c->Do("u1", spent, [] { return 1; }),
      StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("wait of 0")));
  absl::StatusOr<int> got = absl::UnknownError("not yet");
  std::thread waiter([&] {
    got = c->Do("u1", Deadline::In(absl::InfiniteDuration(), &clock),
                [] { return 2; });
  });
  AwaitCondition([&] { return c->stats().joined == 1; });
  executor.RunAll();
  waiter.join();
  EXPECT_THAT(got, IsOkAndHolds(1));
}

TEST(CoalesceTest, ARefusingExecutorLeavesNothingRegistered) {
  ManualExecutor executor;
  executor.set_refusing(true);
  bool hooked = false;
  auto c = Features::Create(CoalesceSettings(&executor),
                            [&](const std::string&,
                                const absl::StatusOr<int>&) { hooked = true; })
               .value();
  Coalesced<int> r = c->DoWithRole("u1", absl::Seconds(1), [] { return 1; });
  EXPECT_EQ(r.role, CoalesceRole::kRefused);
  EXPECT_THAT(r.result, StatusIs(absl::StatusCode::kResourceExhausted,
                                 HasSubstr("coalescer 'features': the "
                                           "executor refused the call")));
  EXPECT_EQ(c->inflight(), 0u);
  EXPECT_FALSE(hooked);
  CoalesceStats st = c->stats();
  EXPECT_EQ(st.refused, 1u);
  EXPECT_EQ(st.leaders, 0u);
  executor.set_refusing(false);
  EXPECT_EQ(c->DoWithRole("u1", absl::ZeroDuration(), [] { return 1; }).role,
            CoalesceRole::kLeader);
  executor.RunAll();
  EXPECT_EQ(c->inflight(), 0u);
}

TEST(CoalesceTest, AFullThreadPoolRefusesAndTheKeyIsFreeAgain) {
  ThreadPool pool(1, /*max_queue=*/1);
  degrade_tests::Notification started;
  degrade_tests::Notification release;
  auto c = Features::Create(CoalesceSettings(&pool)).value();
  // One call holds the only thread, the next fills the queue.
  (void)c->Do("running", absl::ZeroDuration(), [&started, &release] {
    started.Notify();
    release.WaitForNotification();
    return 1;
  });
  started.WaitForNotification();
  (void)c->Do("queued", absl::ZeroDuration(), [] { return 2; });
  Coalesced<int> third =
      c->DoWithRole("third", absl::InfiniteDuration(), [] { return 3; });
  EXPECT_EQ(third.role, CoalesceRole::kRefused);
  EXPECT_THAT(third.result, StatusIs(absl::StatusCode::kResourceExhausted,
                                     HasSubstr("coalescer 'features'")));
  EXPECT_EQ(c->inflight(), 2u);  // "third" left nothing behind
  EXPECT_EQ(c->stats().refused, 1u);
  release.Notify();
  AwaitCondition([&] { return c->inflight() == 0; });
  EXPECT_THAT(c->Do("third", absl::InfiniteDuration(), [] { return 3; }),
              IsOkAndHolds(3));
}

TEST(CoalesceTest, RolesHaveTheirMetricNames) {
  EXPECT_EQ(CoalesceRoleName(CoalesceRole::kLeader), "leader");
  EXPECT_EQ(CoalesceRoleName(CoalesceRole::kJoined), "joined");
  EXPECT_EQ(CoalesceRoleName(CoalesceRole::kUncoalesced), "uncoalesced");
  EXPECT_EQ(CoalesceRoleName(CoalesceRole::kRefused), "refused");
}

// Refuses every task, but only once a request has joined the call it was
// given: that request must get the refusal, not wait forever.
class RefusingAfterAJoin final : public Executor {
 public:
  bool Submit(std::function<void()>) override {
    joiner = std::thread([this] {
      joined = coalescer->Do("u1", absl::InfiniteDuration(), [] { return 0; });
    });
    AwaitCondition([this] { return coalescer->stats().joined == 1; });
    return false;
  }
  Features* coalescer = nullptr;
  std::thread joiner;
  absl::StatusOr<int> joined = 0;
};

TEST(CoalesceTest, ARequestThatJoinedARefusedCallGetsTheRefusal) {
  RefusingAfterAJoin executor;
  auto c = Features::Create(CoalesceSettings(&executor)).value();
  executor.coalescer = c.get();
  EXPECT_THAT(c->Do("u1", absl::Seconds(1), [] { return 1; }),
              StatusIs(absl::StatusCode::kResourceExhausted));
  executor.joiner.join();
  EXPECT_THAT(executor.joined, StatusIs(absl::StatusCode::kResourceExhausted,
                                        HasSubstr("refused")));
  EXPECT_EQ(c->inflight(), 0u);
}

TEST(CoalesceTest, BeyondMaxInflightANewKeyRunsUncoalesced) {
  ManualExecutor executor;
  CoalescerSettings s = CoalesceSettings(&executor);
  s.max_inflight = 2;
  s.shards = 1;
  auto c = Features::Create(s).value();
  EXPECT_EQ(c->DoWithRole("a", absl::ZeroDuration(), [] { return 1; }).role,
            CoalesceRole::kLeader);
  EXPECT_EQ(c->DoWithRole("b", absl::ZeroDuration(), [] { return 2; }).role,
            CoalesceRole::kLeader);
  EXPECT_EQ(c->DoWithRole("c", absl::ZeroDuration(), [] { return 3; }).role,
            CoalesceRole::kUncoalesced);
  EXPECT_EQ(c->DoWithRole("c", absl::ZeroDuration(), [] { return 3; }).role,
            CoalesceRole::kUncoalesced);
  // A key in flight is still joined while the table is full.
  EXPECT_EQ(c->DoWithRole("a", absl::ZeroDuration(), [] { return 1; }).role,
            CoalesceRole::kJoined);
  EXPECT_EQ(c->inflight(), 2u);
  EXPECT_EQ(executor.submitted(), 4u);
  EXPECT_EQ(c->stats().uncoalesced, 2u);
  EXPECT_EQ(executor.RunAll(), 4u);
  EXPECT_EQ(c->inflight(), 0u);
  EXPECT_EQ(c->stats().completed, 4u);
  EXPECT_EQ(c->DoWithRole("c", absl::ZeroDuration(), [] { return 3; }).role,
            CoalesceRole::kLeader);
}

TEST(CoalesceTest, InlineATableFullRequestRunsItsOwnCallOnItsThread) {
  CoalescerSettings s = CoalesceSettings(nullptr);
  s.max_inflight = 1;
  std::atomic<int> hooks{0};
  auto c = Features::Create(s, [&hooks](const std::string&,
                                        const absl::StatusOr<int>&) {
             hooks.fetch_add(1);
           }).value();
  degrade_tests::Notification release;
  std::thread leader([&] {
    EXPECT_THAT(c->Do("a", absl::InfiniteDuration(),
                      [&release] {
                        release.WaitForNotification();
                        return 1;
                      }),
                IsOkAndHolds(1));
  });
  AwaitCondition([&] { return c->inflight() == 1; });
  Coalesced<int> own =
      c->DoWithRole("b", absl::ZeroDuration(), [] { return 2; });
  EXPECT_EQ(own.role, CoalesceRole::kUncoalesced);
  EXPECT_THAT(own.result, IsOkAndHolds(2));
  EXPECT_EQ(hooks.load(), 1);
  EXPECT_EQ(c->inflight(), 1u);  // "b" never took a slot
  release.Notify();
  leader.join();
  EXPECT_EQ(c->inflight(), 0u);
  EXPECT_EQ(c->stats().completed, 2u);
}

TEST(CoalesceTest, ACallOrHookThatThrowsFailsOnlyThatCall) {
#if DEGRADE_HAS_EXCEPTIONS
  int hooks = 0;
  auto c =
      Features::Create(CoalesceSettings(nullptr),
                       [&](const std::string&, const absl::StatusOr<int>&) {
                         ++hooks;
                         throw std::runtime_error("hook broke");
                       })
          .value();
  absl::StatusOr<int> r = c->Do("u1", absl::Seconds(1), []() -> int {
    throw std::runtime_error("store client broke");
  });
  EXPECT_TRUE(IsCallableException(r.status()));
  EXPECT_THAT(
      r, StatusIs(absl::StatusCode::kUnknown, HasSubstr("store client broke")));
  EXPECT_THAT(r.status().message(), HasSubstr("coalescer 'features'"));
  EXPECT_EQ(c->inflight(), 0u);
  EXPECT_THAT(c->Do("u1", absl::Seconds(1), [] { return 8; }), IsOkAndHolds(8));
  EXPECT_EQ(hooks, 2);
  EXPECT_EQ(c->stats().failed, 1u);
#else
  GTEST_SKIP() << "built without exceptions";
#endif
}

class ThrowingExecutor final : public Executor {
 public:
  bool Submit(std::function<void()>) override {
#if DEGRADE_HAS_EXCEPTIONS
    throw std::runtime_error("queue allocation failed");
#else
    return false;
#endif
  }
};

TEST(CoalesceTest, AnExecutorThatThrowsIsARefusalWithItsCause) {
  ThrowingExecutor executor;
  auto c = Features::Create(CoalesceSettings(&executor)).value();
  absl::StatusOr<int> r = c->Do("u1", absl::Seconds(1), [] { return 1; });
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted));
#if DEGRADE_HAS_EXCEPTIONS
  EXPECT_THAT(r.status().message(), HasSubstr("queue allocation failed"));
#endif
  EXPECT_EQ(c->inflight(), 0u);
}

TEST(CoalesceTest, AHookMayAskForTheSameKeyAgain) {
  // Inline: the hook runs on the request's thread after the key has left
  // the table, so its request starts a new call rather than joining (and
  // waiting for) the one that has ended.
  std::unique_ptr<Features> c;
  int calls = 0;
  absl::StatusOr<int> again = absl::UnknownError("not called");
  c = Features::Create(
          CoalesceSettings(nullptr),
          [&](const std::string& key, const absl::StatusOr<int>& r) {
            if (*r != 1) return;
            again =
                c->Do(key, absl::InfiniteDuration(), [&] { return ++calls; });
          })
          .value();
  EXPECT_THAT(c->Do("u1", absl::InfiniteDuration(), [&] { return ++calls; }),
              IsOkAndHolds(1));
  EXPECT_THAT(again, IsOkAndHolds(2));
  EXPECT_EQ(c->inflight(), 0u);
}

TEST(CoalesceTest, AHookMayAskForTheSameKeyAgainOnTheExecutor) {
  ThreadPool pool(1);
  std::unique_ptr<Features> c;
  degrade_tests::Notification second_done;
  std::atomic<int> calls{0};
  c = Features::Create(
          CoalesceSettings(&pool),
          [&](const std::string& key, const absl::StatusOr<int>& r) {
            if (*r == 1) {
              // A refresh from inside the hook: queued behind
              // this task on the one thread, so it must not
              // wait for it.
              (void)c->Do(key, absl::ZeroDuration(),
                          [&] { return calls.fetch_add(1) + 1; });
            } else {
              second_done.Notify();
            }
          })
          .value();
  EXPECT_THAT(c->Do("u1", absl::InfiniteDuration(),
                    [&] { return calls.fetch_add(1) + 1; }),
              IsOkAndHolds(1));
  second_done.WaitForNotification();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(c->stats().leaders, 2u);
}

TEST(CoalesceTest, DestroyedWithCallsInFlightTheLateCallsEndHarmlessly) {
  ManualExecutor executor;  // outlives the coalescer, as the rule says
  ThreadPool pool(1);
  degrade_tests::Notification release;
  std::atomic<int> hooks{0};
  auto hook = [&hooks](const std::string&, const absl::StatusOr<int>&) {
    hooks.fetch_add(1);
  };
  auto queued = Features::Create(CoalesceSettings(&executor), hook).value();
  auto running = Features::Create(CoalesceSettings(&pool), hook).value();
  (void)queued->Do("u1", absl::ZeroDuration(), [] { return 1; });
  std::atomic<bool> ran{false};
  (void)running->Do("u1", absl::ZeroDuration(), [&release, &ran] {
    release.WaitForNotification();
    ran = true;
    return 2;
  });
  queued.reset();
  running.reset();
  EXPECT_EQ(executor.RunAll(), 1u);  // unregisters from the gone coalescer
  release.Notify();
  AwaitCondition([&] { return ran.load(); });
  // No hook starts once its coalescer is destroyed.
  EXPECT_EQ(hooks.load(), 0);
}

TEST(CoalesceTest, StatsTimeCallsOnTheCoalescersClock) {
  FakeClock clock;
  CoalescerSettings s = CoalesceSettings(nullptr);
  s.clock = &clock;
  auto c = Features::Create(s).value();
  (void)c->Do("u1", absl::Seconds(1), [&clock] {
    clock.Advance(absl::Milliseconds(250));
    return 1;
  });
  // A clock stepping back is no time passing.
  (void)c->Do("u1", absl::Seconds(1), [&clock] {
    clock.Set(clock.Now() - absl::Seconds(5));
    return 1;
  });
  EXPECT_NEAR(c->stats().call_seconds, 0.25, 1e-9);
  EXPECT_EQ(c->stats().completed, 2u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
