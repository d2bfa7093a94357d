// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// redis::ClusterQuota on a FakeClock against a scripted leaser: the modes
// (leasing -> grace -> fair share -> leasing), what requests get in each,
// the demand the refresher reports, the refresh cadence, the settings, a
// store that lies, the metrics; and the Redis leaser against a real
// redis-server (one process) and a server that never answers. The fleet
// (several processes) is in redis_quota_fleet_test.cpp.

#include <atomic>
#include <cmath>
#include <deque>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/redis/quota.hpp"
#include "degrade/status.hpp"
#include "degrade/with_fallback.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "redis/redis_server.hpp"
#include "redis/silent_server.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using redis::ClusterQuota;
using redis::ClusterQuotaOptions;
using redis::QuotaLease;
using redis::QuotaLeaseRequest;
using ::testing::HasSubstr;

// A store that answers from a script: each call pops the next answer (the
// last one repeats) and records the request.
struct ScriptedStore {
  std::deque<absl::StatusOr<QuotaLease>> answers;
  std::vector<QuotaLeaseRequest> requests;
  redis::QuotaLeaser Leaser() {
    return [this](const QuotaLeaseRequest& r) -> absl::StatusOr<QuotaLease> {
      requests.push_back(r);
      if (answers.empty()) return absl::UnavailableError("no script");
      absl::StatusOr<QuotaLease> a = answers.front();
      if (answers.size() > 1) answers.pop_front();
      return a;
    };
  }
};

ClusterQuotaOptions QuotaOptions(const Clock* clock) {
  ClusterQuotaOptions o;
  o.name = "fs";
  o.limit_per_second = 100;
  o.expected_members = 4;
  o.member_id = "me";
  o.clock = clock;
  o.metrics = NoTelemetry();
  o.pace_leases = false;  // grants counted exactly; pacing has its own test
  return o;
}

QuotaLease Lease(int64_t granted, int64_t members, double share) {
  return QuotaLease{granted, members, share};
}

int64_t Admitted(ClusterQuota& q, int64_t tries) {
  int64_t n = 0;
  for (int64_t i = 0; i < tries; ++i) n += q.TryAcquire().ok() ? 1 : 0;
  return n;
}

TEST(RedisQuotaTest, InFrontOfABreakerARefusalIsPlanBTaggedRateLimited) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok()) << q.status();
  BreakerSettings bs;
  bs.name = "features";
  bs.clock = &clock;
  bs.metrics = NoTelemetry();
  CircuitBreaker<int> breaker(bs);
  ASSERT_EQ(Admitted(**q, 100), 12);  // the fair share's burst, spent
  int calls = 0;
  const StageResult<int> r = WithFallback(
      **q, breaker, "features",
      [&calls] {
        ++calls;
        return 7;
      },
      -1);
  EXPECT_EQ(r.value(), -1);
  EXPECT_EQ(r.trace().Encode(), "v1;features=rate_limited");
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(breaker.counts().requests, 0u);
}

TEST(RedisQuotaTest, BeforeAnyLeaseTheFairShareIsTheLimitOverExpectedMembers) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ((*q)->mode(), QuotaMode::kFairShare);
  EXPECT_DOUBLE_EQ((*q)->stats().share_per_second, 25.0);  // 100 / 4
  // A burst of rate x refresh_period (12.5: 12 whole tokens), then 25/s.
  EXPECT_EQ(Admitted(**q, 100), 12);
  absl::Status refused = (*q)->TryAcquire();
  EXPECT_TRUE(IsShed(refused)) << refused;
  EXPECT_TRUE(IsRateLimited(refused)) << "WithFallback tags it rate_limited";
  EXPECT_THAT(refused.message(), HasSubstr("fair share"));
  ASSERT_TRUE(ShedRetryAfter(refused).has_value());
  EXPECT_GT(*ShedRetryAfter(refused), absl::ZeroDuration());
  EXPECT_LE(*ShedRetryAfter(refused), absl::Milliseconds(40));
  // Then 25/s: 10 tokens in 400 ms; idle time refills no more than the
  // burst.
  clock.Advance(absl::Milliseconds(400));
  EXPECT_EQ(Admitted(**q, 100), 10);
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(Admitted(**q, 100), 12);
  EXPECT_TRUE(store.requests.empty()) << "TryAcquire never calls the store";
}

TEST(RedisQuotaTest, LeasingGraceFairShareAndBackToLeasing) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(40, 2, 40.0)};
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok());
  ClusterQuota& quota = **q;

  // Leasing: exactly the 40 granted tokens, then a refusal until the next
  // refresh (at most 1.2 periods away).
  ASSERT_TRUE(quota.RefreshNow().ok());
  EXPECT_EQ(quota.mode(), QuotaMode::kLeasing);
  EXPECT_EQ(quota.stats().held, 40);
  EXPECT_EQ(Admitted(quota, 100), 40);
  absl::Status refused = quota.TryAcquire();
  EXPECT_THAT(refused.message(), HasSubstr("lease is spent"));
  ASSERT_TRUE(ShedRetryAfter(refused).has_value());
  EXPECT_GE(*ShedRetryAfter(refused), absl::Milliseconds(500));
  EXPECT_LE(*ShedRetryAfter(refused), absl::Milliseconds(600));

  // Redis stops answering: grace. What is held first, then the last share
  // (40/s) through the local bucket.
  store.answers = {Lease(10, 2, 40.0)};
  ASSERT_TRUE(quota.RefreshNow().ok());
  store.answers = {absl::UnavailableError("redis down")};
  clock.Advance(absl::Milliseconds(500));
  EXPECT_FALSE(quota.RefreshNow().ok());
  EXPECT_EQ(quota.mode(), QuotaMode::kGrace);
  EXPECT_EQ(Admitted(quota, 10), 10);  // the lease
  // then 40/s with a burst of 20 (40 x 500 ms)
  EXPECT_EQ(Admitted(quota, 100), 20);
  clock.Advance(absl::Milliseconds(250));
  EXPECT_EQ(Admitted(quota, 100), 10);

  // Still grace at lease_horizon + grace (1 s + 2 s) after the last lease.
  clock.Advance(absl::Milliseconds(2250));  // 3 s since the lease
  EXPECT_FALSE(quota.RefreshNow().ok());
  EXPECT_EQ(quota.mode(), QuotaMode::kGrace);
  // Past it: the fair share, the limit over the members the last lease
  // counted (2), never the whole limit.
  clock.Advance(absl::Milliseconds(1));
  EXPECT_FALSE(quota.RefreshNow().ok());
  EXPECT_EQ(quota.mode(), QuotaMode::kFairShare);
  EXPECT_DOUBLE_EQ(quota.stats().share_per_second, 50.0);
  EXPECT_EQ(quota.stats().held, 0);
  clock.Advance(absl::Seconds(10));
  EXPECT_EQ(Admitted(quota, 1000), 25);  // burst: 50 x 500 ms
  clock.Advance(absl::Milliseconds(200));
  EXPECT_EQ(Admitted(quota, 1000), 10);

  // Redis answers again: leasing, at once.
  store.answers = {Lease(30, 3, 33.0)};
  clock.Advance(absl::Seconds(3));  // the breaker's 2 s have passed
  ASSERT_TRUE(quota.RefreshNow().ok()) << quota.last_status();
  EXPECT_EQ(quota.mode(), QuotaMode::kLeasing);
  EXPECT_EQ(quota.stats().members, 3);
  EXPECT_EQ(Admitted(quota, 100), 30);
  const ClusterQuotaStats s = quota.stats();
  EXPECT_EQ(s.leased, 80u);
  EXPECT_GE(s.errors, 3u);
}

TEST(RedisQuotaTest, ALeaseIsSpentEvenlyNotAtOnce) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(50, 1, 100.0)};
  ClusterQuotaOptions o = QuotaOptions(&clock);
  o.pace_leases = true;
  auto q = ClusterQuota::CreateWithLeaser(o, store.Leaser());
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->RefreshNow().ok());
  // 1.1 x the share (110/s) with 20 ms of burst: 2 tokens now, then about
  // 11 per 100 ms, all from the lease.
  EXPECT_EQ(Admitted(**q, 100), 2);
  absl::Status paced = (*q)->TryAcquire();
  EXPECT_TRUE(IsShed(paced));
  EXPECT_THAT(paced.message(), HasSubstr("paced"));
  int64_t total = 2;
  for (int i = 0; i < 10; ++i) {
    clock.Advance(absl::Milliseconds(10));
    total += Admitted(**q, 10);
  }
  EXPECT_GE(total, 2 + 10);
  EXPECT_LE(total, 2 + 12);
  EXPECT_EQ((*q)->stats().held, 50 - total);
  // The lease still caps it, however long the wait.
  for (int i = 0; i < 200; ++i) {
    clock.Advance(absl::Milliseconds(10));
    total += Admitted(**q, 10);
  }
  EXPECT_EQ(total, 50);
}

TEST(RedisQuotaTest, TheBreakerStopsLeaseCallsToADeadStore) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {absl::DeadlineExceededError("slow")};
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok());
  for (int i = 0; i < 10; ++i) {
    (*q)->Poll();
    clock.Advance(absl::Milliseconds(100));
  }
  // 1 s of polling: refreshes at most every 500 ms x 1.2, and after 3
  // failures the breaker holds the store off for 2 s.
  EXPECT_EQ(store.requests.size(), 2u);
  for (int i = 0; i < 100; ++i) {
    (*q)->Poll();
    clock.Advance(absl::Milliseconds(100));
  }
  // 10 s more: the third failure, then one trial every 2 s or so.
  EXPECT_GE(store.requests.size(), 5u);
  EXPECT_LE(store.requests.size(), 9u);
  EXPECT_EQ((*q)->mode(), QuotaMode::kFairShare);
}

TEST(RedisQuotaTest, RefreshesComeEveryPeriodStretchedByJitterNeverMore) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(1, 1, 100.0)};
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok());
  std::vector<absl::Time> calls;
  for (int i = 0; i < 100'000; ++i) {  // 100 s at 1 ms
    const std::size_t before = store.requests.size();
    (*q)->Poll();
    if (store.requests.size() != before) calls.push_back(clock.Now());
    clock.Advance(absl::Milliseconds(1));
  }
  ASSERT_GE(calls.size(), 2u);
  for (std::size_t i = 1; i < calls.size(); ++i) {
    const absl::Duration gap = calls[i] - calls[i - 1];
    EXPECT_GE(gap, absl::Milliseconds(500));
    EXPECT_LE(gap, absl::Milliseconds(601));
  }
  // Round trips per second <= 1 / refresh period, whatever the requests.
  EXPECT_LE(calls.size(), 200u);
  EXPECT_GE(calls.size(), 166u);
}

TEST(RedisQuotaTest, TheRequestCarriesTheDemandAndWhatIsHeld) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(50, 2, 50.0)};
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->RefreshNow().ok());
  EXPECT_EQ(store.requests[0].member, "me");
  EXPECT_EQ(store.requests[0].demand_per_second, 0);
  EXPECT_EQ(store.requests[0].held, 0);
  // 300 asked in 500 ms (250 refused count too): 600/s.
  for (int i = 0; i < 300; ++i) (void)(*q)->TryAcquire();
  clock.Advance(absl::Milliseconds(500));
  store.answers = {Lease(0, 2, 50.0)};
  ASSERT_TRUE((*q)->RefreshNow().ok());
  EXPECT_DOUBLE_EQ(store.requests[1].demand_per_second, 600.0);
  EXPECT_EQ(store.requests[1].held, 0);
  // 10 asked in the next 500 ms: smoothed to (600 + 20) / 2.
  EXPECT_FALSE((*q)->TryAcquire(10).ok());
  clock.Advance(absl::Milliseconds(500));
  ASSERT_TRUE((*q)->RefreshNow().ok());
  EXPECT_DOUBLE_EQ(store.requests[2].demand_per_second, 310.0);
  // A multi-token take is all or nothing.
  store.answers = {Lease(5, 2, 50.0)};
  ASSERT_TRUE((*q)->RefreshNow().ok());
  EXPECT_FALSE((*q)->TryAcquire(6).ok());
  EXPECT_TRUE((*q)->TryAcquire(5).ok());
  EXPECT_TRUE((*q)->TryAcquire(0).ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*q)->TryAcquire(-1)));
}

TEST(RedisQuotaTest, AStoreThatLiesIsRefusedAndGrantsNothing) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  auto q = ClusterQuota::CreateWithLeaser(QuotaOptions(&clock), store.Leaser());
  ASSERT_TRUE(q.ok());
  const QuotaLease lies[] = {
      Lease(-5, 2, 10),            // a negative grant
      Lease(1'000'000, 2, 10),     // more than limit x horizon
      Lease(10, 0, 10),            // no members
      Lease(10, 2, std::nan("")),  // a share that is not a number
      Lease(10, 2, -1),            // a negative share
      Lease(10, 2, 1e9),           // a share above the limit
  };
  for (const QuotaLease& lie : lies) {
    store.answers = {lie};
    absl::Status s = (*q)->RefreshNow();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr("makes no sense"));
    EXPECT_EQ((*q)->stats().held, 0);
    EXPECT_EQ((*q)->mode(), QuotaMode::kFairShare);
  }
  EXPECT_EQ((*q)->stats().leased, 0u);
  EXPECT_EQ((*q)->stats().errors, 6u);
}

TEST(RedisQuotaTest, BadSettingsAreRefusedNamingTheField) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  struct Case {
    const char* field;
    void (*edit)(ClusterQuotaOptions&);
  };
  const Case cases[] = {
      {"name", [](ClusterQuotaOptions& o) { o.name = ""; }},
      {"name", [](ClusterQuotaOptions& o) { o.name = std::string("a\0b", 3); }},
      {"limit_per_second",
       [](ClusterQuotaOptions& o) { o.limit_per_second = 0; }},
      {"limit_per_second",
       [](ClusterQuotaOptions& o) { o.limit_per_second = INFINITY; }},
      {"limit_per_second",
       [](ClusterQuotaOptions& o) { o.limit_per_second = std::nan(""); }},
      {"burst", [](ClusterQuotaOptions& o) { o.burst = -1; }},
      {"expected_members",
       [](ClusterQuotaOptions& o) { o.expected_members = 0; }},
      {"refresh_period",
       [](ClusterQuotaOptions& o) { o.refresh_period = absl::Nanoseconds(1); }},
      {"refresh_period",
       [](ClusterQuotaOptions& o) {
         o.refresh_period = absl::InfiniteDuration();
       }},
      {"lease_horizon",
       [](ClusterQuotaOptions& o) {
         o.lease_horizon = absl::Milliseconds(100);
       }},
      {"grace", [](ClusterQuotaOptions& o) { o.grace = -absl::Seconds(1); }},
      {"member_ttl",
       [](ClusterQuotaOptions& o) { o.member_ttl = absl::Milliseconds(600); }},
      {"member_id",
       [](ClusterQuotaOptions& o) { o.member_id = std::string(300, 'x'); }},
      {"port", [](ClusterQuotaOptions& o) { o.port = 0; }},
      {"command_timeout",
       [](ClusterQuotaOptions& o) {
         o.command_timeout = absl::ZeroDuration();
       }},
      {"command_timeout",
       [](ClusterQuotaOptions& o) { o.command_timeout = absl::Seconds(1); }},
  };
  for (const Case& c : cases) {
    ClusterQuotaOptions o = QuotaOptions(&clock);
    c.edit(o);
    auto q = ClusterQuota::Create(o);
    ASSERT_FALSE(q.ok()) << c.field;
    EXPECT_TRUE(absl::IsInvalidArgument(q.status())) << q.status();
    EXPECT_THAT(q.status().message(), HasSubstr(c.field));
  }
  EXPECT_TRUE(ClusterQuota::Create(QuotaOptions(&clock)).ok());
}

TEST(RedisQuotaTest, MetricsExportModeLeasedDecisionsAndRoundTrips) {
  EventLogOptions quiet;
  quiet.sink = [](absl::string_view) {};
  MetricsRegistry registry(quiet);
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(3, 2, 40.0)};
  ClusterQuotaOptions o = QuotaOptions(&clock);
  o.metrics = &registry;
  auto q = ClusterQuota::CreateWithLeaser(o, store.Leaser());
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->RefreshNow().ok());
  EXPECT_EQ(Admitted(**q, 5), 3);
  const std::string text = registry.RenderPrometheus();
  for (const char* line : {
           "degrade_quota_mode{quota=\"fs\",mode=\"leasing\"} 1",
           "degrade_quota_mode{quota=\"fs\",mode=\"grace\"} 0",
           "degrade_quota_mode{quota=\"fs\",mode=\"fair_share\"} 0",
           "degrade_quota_limit{quota=\"fs\"} 100",
           "degrade_quota_share{quota=\"fs\"} 40",
           "degrade_quota_members{quota=\"fs\"} 2",
           "degrade_quota_held_tokens{quota=\"fs\"} 0",
           "degrade_quota_leased_tokens_total{quota=\"fs\"} 3",
           "degrade_quota_decisions_total{quota=\"fs\",result=\"admitted\"} 3",
           "degrade_quota_decisions_total{quota=\"fs\",result=\"refused\"} 2",
           "degrade_quota_round_trips_total{quota=\"fs\"} 1",
           "degrade_quota_errors_total{quota=\"fs\"} 0",
           "degrade_quota_limit_conflicts_total{quota=\"fs\"} 0",
           "degrade_quota_fleet_limit{quota=\"fs\"} 100",
       }) {
    EXPECT_THAT(text, HasSubstr(line));
  }
  q->reset();
  EXPECT_THAT(registry.RenderPrometheus(),
              ::testing::Not(HasSubstr("degrade_quota_")));
}

// docs/metrics.md lists exactly the degrade_quota_* series the registry
// exports.
TEST(RedisQuotaTest, TheMetricsReferenceListsEveryQuotaSeries) {
  EventLogOptions quiet;
  quiet.sink = [](absl::string_view) {};
  MetricsRegistry registry(quiet);
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ClusterQuotaOptions o = QuotaOptions(&clock);
  o.metrics = &registry;
  ScriptedStore store;
  auto q = ClusterQuota::CreateWithLeaser(o, store.Leaser());
  ASSERT_TRUE(q.ok());
  std::set<std::string> exported;
  std::istringstream text(registry.RenderPrometheus());
  for (std::string line; std::getline(text, line);) {
    if (absl::StartsWith(line, "# TYPE degrade_quota_")) {
      exported.insert(std::string(absl::StripPrefix(line, "# TYPE "))
                          .substr(0, line.find(' ', 7) - 7));
    }
  }
  std::set<std::string> documented;
  std::ifstream doc(DEGRADE_METRICS_DOC);
  ASSERT_TRUE(doc.good()) << DEGRADE_METRICS_DOC;
  for (std::string line; std::getline(doc, line);) {
    if (absl::StartsWith(line, "| `degrade_quota_")) {
      documented.insert(line.substr(3, line.find('`', 3) - 3));
    }
  }
  EXPECT_FALSE(exported.empty());
  EXPECT_EQ(exported, documented);
}

// Threads spending one lease while the refresher adds to it: never more
// admitted than granted.
TEST(RedisQuotaConcurrencyTest, ThreadsNeverSpendMoreThanTheLease) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  ScriptedStore store;
  store.answers = {Lease(100, 1, 100.0)};
  ClusterQuotaOptions o = QuotaOptions(&clock);
  o.limit_per_second = 1000;
  auto q = ClusterQuota::CreateWithLeaser(o, store.Leaser());
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->RefreshNow().ok());
  std::atomic<int64_t> admitted{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 20'000; ++i) {
        if ((*q)->TryAcquire().ok()) admitted.fetch_add(1);
      }
    });
  }
  go.store(true);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*q)->RefreshNow().ok());
  for (std::thread& t : threads) t.join();
  const ClusterQuotaStats s = (*q)->stats();
  EXPECT_EQ(s.leased, 51u * 100u);
  EXPECT_EQ(static_cast<uint64_t>(admitted.load()) + s.held, s.leased);
  EXPECT_EQ(s.admitted, static_cast<uint64_t>(admitted.load()));
  EXPECT_EQ(s.admitted + s.refused, 80'000u);
}

// The background refresher adding leases while threads spend them, on the
// real clock: every admitted token was leased, none twice.
TEST(RedisQuotaConcurrencyTest, TheRefresherThreadAndRequestsShareTheLease) {
  std::atomic<int> calls{0};
  ClusterQuotaOptions o = QuotaOptions(nullptr);
  o.refresh_period = absl::Milliseconds(10);
  o.lease_horizon = absl::Milliseconds(20);
  o.member_ttl = absl::Milliseconds(30);
  o.command_timeout = absl::Milliseconds(5);
  o.pace_leases = true;
  auto q = ClusterQuota::CreateWithLeaser(
      o, [&calls](const QuotaLeaseRequest&) -> absl::StatusOr<QuotaLease> {
        calls.fetch_add(1);
        return Lease(1, 1, 100.0);
      });
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->Start().ok());
  // From the first lease on (before it the fair share admits, unleased).
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((*q)->mode() != QuotaMode::kLeasing && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ((*q)->mode(), QuotaMode::kLeasing);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      while (!done.load()) {
        (void)(*q)->TryAcquire();
        (void)(*q)->stats();
      }
    });
  }
  while (calls.load() < 10 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  done.store(true);
  for (std::thread& t : threads) t.join();
  (*q)->Stop();
  const ClusterQuotaStats s = (*q)->stats();
  EXPECT_GE(calls.load(), 10);
  EXPECT_EQ(s.round_trips, static_cast<uint64_t>(calls.load()));
  EXPECT_EQ(s.admitted + static_cast<uint64_t>(s.held), s.leased);
}

// The Redis leaser against one real redis-server: the script's grant, its
// members, its share; NOSCRIPT after SCRIPT FLUSH falls back to EVAL.
TEST(RedisQuotaTest, TheScriptLeasesFromTheBucketOnARealRedis) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  ClusterQuotaOptions o = QuotaOptions(nullptr);
  o.port = server.port();
  o.limit_per_second = 1000;
  o.expected_members = 1;
  auto q = ClusterQuota::Create(o);
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->RefreshNow().ok()) << (*q)->last_status();
  ClusterQuotaStats s = (*q)->stats();
  EXPECT_EQ(s.mode, QuotaMode::kLeasing);
  EXPECT_EQ(s.members, 1);
  // Alone, no demand yet: the whole limit. It accrued a first period's
  // worth (500 tokens), but a new bucket holds only its reserve, a quarter
  // period's refill: the grant never exceeds what the bucket has.
  EXPECT_DOUBLE_EQ(s.share_per_second, 1000.0);
  EXPECT_EQ(s.held, 125);
  EXPECT_EQ(s.leased, 125u);
  absl::StatusOr<std::string> left =
      server.Command({"HGET", "{dq:fs}:bucket", "tokens"});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, "0");
  absl::StatusOr<std::string> members =
      server.Command({"ZRANGE", "{dq:fs}:members", "0", "-1"});
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(*members, "me");
  // The script cache flushed (a restart, a failover): EVAL, and on.
  ASSERT_TRUE(server.Command({"SCRIPT", "FLUSH"}).ok());
  ASSERT_TRUE((*q)->RefreshNow().ok()) << (*q)->last_status();
  ASSERT_TRUE((*q)->RefreshNow().ok()) << (*q)->last_status();
  // A second member halves the share (both without demand).
  ClusterQuotaOptions o2 = o;
  o2.member_id = "other";
  auto q2 = ClusterQuota::Create(o2);
  ASSERT_TRUE(q2.ok());
  ASSERT_TRUE((*q2)->RefreshNow().ok()) << (*q2)->last_status();
  EXPECT_EQ((*q2)->stats().members, 2);
  EXPECT_DOUBLE_EQ((*q2)->stats().share_per_second, 500.0);
  // Redis restarted empty (FLUSHALL): the next lease re-registers the
  // member and starts a fresh bucket at its reserve (a quarter period's
  // refill), so a wiped Redis hands out no more than that at once.
  ASSERT_TRUE(server.Command({"FLUSHALL"}).ok());
  const uint64_t before = (*q)->stats().leased;
  ASSERT_TRUE((*q)->RefreshNow().ok()) << (*q)->last_status();
  EXPECT_LE((*q)->stats().leased - before, 125u);
  EXPECT_EQ((*q)->stats().members, 1);
  // A key of the wrong type is an answer about data, not a transport
  // failure: FAILED_PRECONDITION.
  ASSERT_TRUE(server.Command({"DEL", "{dq:fs}:members"}).ok());
  ASSERT_TRUE(server.Command({"SET", "{dq:fs}:members", "x"}).ok());
  absl::Status wrong = (*q)->RefreshNow();
  EXPECT_TRUE(absl::IsFailedPrecondition(wrong)) << wrong;
}

TEST(RedisQuotaTest, ASilentRedisCostsTheRefresherOneCommandTimeout) {
  degrade_tests::SilentServer silent;
  ASSERT_TRUE(silent.ok());
  ClusterQuotaOptions o = QuotaOptions(nullptr);
  o.port = silent.port();
  o.command_timeout = absl::Milliseconds(30);
  auto q = ClusterQuota::Create(o);
  ASSERT_TRUE(q.ok());
  const absl::Time start = absl::Now();
  absl::Status s = (*q)->RefreshNow();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(took, absl::Seconds(2));
  // Meanwhile requests were never waiting: the fair share serves.
  EXPECT_EQ((*q)->mode(), QuotaMode::kFairShare);
  EXPECT_TRUE((*q)->TryAcquire().ok());
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
