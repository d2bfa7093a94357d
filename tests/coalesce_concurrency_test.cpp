// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Concurrency tests of coalesce.hpp (run under TSan): the conditions a
// feature stage meets in production.
//
//  * A hot user's cache entry expires and 1,000 requests miss it at once:
//    exactly one backend call, every request gets its value (executor and
//    inline modes, 1,000 threads).
//  * The store hangs far past every request's budget: every request returns
//    DEADLINE_EXCEEDED while the call goes on, and its late value still
//    reaches on_complete.
//  * Many users at once, with short, zero and infinite budgets, failing
//    calls and a table small enough to fill: every result is the one of its
//    key, and the stats add up once the calls have ended.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/coalesce.hpp"
#include "degrade/coalesce_stats.hpp"
#include "degrade/deadline.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"
#include "support/notification.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using UserFeatures = Coalescer<uint64_t, std::string>;

CoalescerSettings ConcurrencySettings(Executor* executor) {
  CoalescerSettings s;
  s.name = "features";
  s.executor = executor;
  s.metrics = NoTelemetry();
  return s;
}

template <typename Pred>
void SpinUntil(Pred done) {
  while (!done()) std::this_thread::yield();
}

constexpr int kCallers = 1000;

// 1,000 threads ask for one key whose call blocks until all of them are
// in: one call, one value for all.
void ThousandCallersShareOneCall(Executor* executor) {
  auto c = UserFeatures::Create(ConcurrencySettings(executor)).value();
  degrade_tests::Notification release;
  std::atomic<int> calls{0};
  std::vector<absl::StatusOr<std::string>> got(kCallers);
  std::vector<std::thread> threads;
  threads.reserve(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      got[static_cast<std::size_t>(i)] =
          c->Do(42, absl::InfiniteDuration(), [&calls, &release] {
            calls.fetch_add(1);
            release.WaitForNotification();
            return std::string("embedding-of-42");
          });
    });
  }
  SpinUntil([&] {
    const CoalesceStats st = c->stats();
    return st.leaders + st.joined == uint64_t{kCallers};
  });
  release.Notify();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const auto& r : got) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, "embedding-of-42");
  }
  const CoalesceStats st = c->stats();
  EXPECT_EQ(st.leaders, 1u);
  EXPECT_EQ(st.joined, uint64_t{kCallers - 1});
  EXPECT_EQ(st.timed_out, 0u);
  EXPECT_EQ(c->inflight(), 0u);
}

TEST(CoalesceConcurrencyTest, AThousandCallersMissingOneKeyMakeOneCall) {
  ThreadPool pool(2);
  ThousandCallersShareOneCall(&pool);
}

TEST(CoalesceConcurrencyTest, AThousandCallersInlineMakeOneCall) {
  ThousandCallersShareOneCall(nullptr);
}

TEST(CoalesceConcurrencyTest, ACallSlowPastEveryBudgetStillReachesTheHook) {
  ThreadPool pool(1);
  degrade_tests::Notification release;
  degrade_tests::Notification hooked;
  absl::StatusOr<std::string> late = absl::UnknownError("not yet");
  auto c = UserFeatures::Create(
               ConcurrencySettings(&pool),
               [&](const uint64_t&, const absl::StatusOr<std::string>& r) {
                 late = r;
                 hooked.Notify();
               })
               .value();
  constexpr int kWaiters = 200;
  std::atomic<int> timed_out{0};
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      // Budgets from 0 to ~2 ms; the call ends only after every one of
      // them has given up.
      const absl::Duration budget = absl::Microseconds(10 * (i % 200));
      Coalesced<std::string> r = c->DoWithRole(7, budget, [&] {
        calls.fetch_add(1);
        release.WaitForNotification();
        return std::string("late");
      });
      if (r.timed_out &&
          r.result.status().code() == absl::StatusCode::kDeadlineExceeded) {
        timed_out.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(timed_out.load(), kWaiters);
  EXPECT_EQ(c->inflight(), 1u);  // the call goes on
  release.Notify();
  hooked.WaitForNotification();
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(*late, "late");
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c->stats().timed_out, uint64_t{kWaiters});
}

// A request's result must be its key's: "v<key>", or the key's error.
TEST(CoalesceConcurrencyTest, ManyKeysEachResultIsItsKeysAndStatsAddUp) {
  ThreadPool pool(2, /*max_queue=*/64);
  CoalescerSettings s = ConcurrencySettings(&pool);
  s.max_inflight = 8;  // small enough to fill with 32 keys
  s.shards = 4;
  auto c = UserFeatures::Create(s).value();
  constexpr int kThreads = 8;
  constexpr int kRounds = 1500;
  constexpr uint64_t kKeys = 32;
  std::atomic<uint64_t> backend{0};
  std::atomic<uint64_t> errors_seen{0};
  std::atomic<uint64_t> timeouts_seen{0};
  std::atomic<uint64_t> refusals_seen{0};
  std::atomic<uint64_t> wrong{0};
  std::atomic<uint64_t> failing_calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t key = static_cast<uint64_t>(t * 7 + i) % kKeys;
        const absl::Duration budget = i % 3 == 0   ? absl::ZeroDuration()
                                      : i % 3 == 1 ? absl::Microseconds(50)
                                                   : absl::InfiniteDuration();
        Coalesced<std::string> r =
            c->DoWithRole(key, budget, [&backend, &failing_calls, key]() {
              const uint64_t n = backend.fetch_add(1);
              if (n % 5 == 0) {
                failing_calls.fetch_add(1);
                return absl::StatusOr<std::string>(
                    absl::UnavailableError(absl::StrCat("down ", key)));
              }
              return absl::StatusOr<std::string>(absl::StrCat("v", key));
            });
        if (r.result.ok()) {
          if (*r.result != absl::StrCat("v", key)) wrong.fetch_add(1);
        } else if (r.timed_out) {
          timeouts_seen.fetch_add(1);
        } else if (r.result.status().code() ==
                   absl::StatusCode::kResourceExhausted) {
          // Refused by the full pool: this request's call, or the one it
          // joined.
          if (r.role == CoalesceRole::kRefused) refusals_seen.fetch_add(1);
        } else if (r.result.status().message() != absl::StrCat("down ", key)) {
          wrong.fetch_add(1);
        } else {
          errors_seen.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Calls whose requests all left may still be running: wait for them.
  SpinUntil([&] {
    const CoalesceStats st = c->stats();
    return st.completed == st.leaders + st.uncoalesced && st.inflight == 0;
  });
  EXPECT_EQ(wrong.load(), 0u);
  const CoalesceStats st = c->stats();
  EXPECT_EQ(st.leaders + st.joined + st.uncoalesced + st.refused,
            uint64_t{kThreads} * kRounds);
  EXPECT_EQ(st.completed, backend.load());
  EXPECT_EQ(st.failed, failing_calls.load());
  EXPECT_EQ(st.timed_out, timeouts_seen.load());
  EXPECT_EQ(st.refused, refusals_seen.load());
  EXPECT_EQ(st.inflight, 0u);
  EXPECT_GT(errors_seen.load(), 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
