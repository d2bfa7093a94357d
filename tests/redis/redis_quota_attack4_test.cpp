// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fourth adversarial review of redis::ClusterQuota, after the fleet
// bucket came to run at the lowest limit among its live members: members
// configured with different bursts (a small burst set by hand, a small
// limit whose burst is derived from lease_horizon), two instances that
// share a member id but not a limit, and the lease pacer admitting a
// request larger than its burst. Against a real redis-server started
// here (skipped when there is none).
//
// Tests whose comment says "What happened (fixed since)" failed on the
// code they were written against and pass since the fixes. A test named
// DISABLED_ shows a defect that is still open: its comment
// states the condition, what should happen, what happens, and the line at
// fault. The others are characterisations of a bound that holds and could
// break.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/redis/detail/token_bucket.hpp"
#include "degrade/redis/quota.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"
#include "redis/redis_server.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using redis::ClusterQuota;
using redis::ClusterQuotaOptions;

ClusterQuotaOptions Fourth(const Clock* clock, int port, std::string member,
                           double limit, double burst) {
  ClusterQuotaOptions o;
  o.name = "attack4";
  o.limit_per_second = limit;
  o.burst = burst;
  o.expected_members = 1;
  o.member_id = std::move(member);
  o.port = port;
  o.clock = clock;
  o.metrics = NoTelemetry();
  o.pace_leases = false;
  return o;
}

// ---- Mixed bursts ----

// Condition: a fleet of instances at 1000 tokens/s (burst 0: 1000 x a 1 s
// lease_horizon); one more instance joins with the same limit and burst
// 0.5 (valid: "finite and >= 0"), e.g. a config typo, or a limit of
// 0.5/s whose derived burst is 0.5.
// Expected: one member's setting cannot silently stop the fleet: either a
// burst below one token is refused by ValidateClusterQuotaOptions, or the
// fleet's bucket keeps room for at least one token, or the other
// instances see the conflict (limit_conflicts, the fleet limit gauge).
// What happened (fixed since): the script takes the lowest burst on its own
// (include/degrade/redis/detail/quota_script.hpp:126), the bucket is then
// capped below one token (:144, :147) and every grant is
// floor(min(want, tokens)) = 0 (:162): no member is granted anything again
// while that instance is live. The others' limit_conflicts stays 0 and
// their fleet limit reads 1000 (quota.hpp:405-411 compares the rate only;
// the reply carries no burst), so nothing tells an operator why the fleet
// sheds everything. Severity: high (one instance's setting stops the
// whole fleet, invisibly).
TEST(RedisQuotaAttack4Test, OneMembersSubTokenBurstStopsTheFleet) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  // A burst below a refresh period's refill is refused at validation.
  const auto typo =
      ClusterQuota::Create(Fourth(&clock, server.port(), "b", 1000, 0.5));
  ASSERT_FALSE(typo.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(typo.status())) << typo.status();
  EXPECT_NE(typo.status().message().find("burst"), absl::string_view::npos);
  // A limit of 0.5/s (its derived burst half a token) is a lower limit the
  // fleet then runs at, seen by the others as a conflict, not a silent
  // stop; the bucket keeps room for a whole token.
  auto a =
      ClusterQuota::Create(Fourth(&clock, server.port(), "a", 1000, 0)).value();
  auto b =
      ClusterQuota::Create(Fourth(&clock, server.port(), "b", 0.5, 0)).value();
  ASSERT_TRUE(b->RefreshNow().ok()) << b->last_status();
  ASSERT_TRUE(a->RefreshNow().ok()) << a->last_status();
  const ClusterQuotaStats s = a->stats();
  EXPECT_GT(s.limit_conflicts, 0u);
  EXPECT_DOUBLE_EQ(s.fleet_limit_per_second, 0.5);
  const std::string bucket_burst =
      server.Command({"HGET", "{dq:attack4}:bucket", "burst"}).value();
  EXPECT_GE(std::stod(bucket_burst), 1.0) << bucket_burst;
}

// Condition: as above, but the joining instance's burst is a valid and
// plausible 1 (tight smoothing chosen for that instance alone).
// Expected: the fleet, now capped at one token per lease call, is seen to
// run below its own configuration: limit_conflicts counts it (the doc
// says an instance can "tell (and count) that the fleet runs below its
// own").
// What happened (fixed since): the bucket holds at most 1 token, so each lease
// grants at most 1 token (quota_script.hpp:126, :144, :162): at a 100 ms
// refresh the instance configured for 1000/s gets about 10/s; its
// limit_conflicts is 0 and its fleet limit gauge 1000, because only the rate is
// compared (quota.hpp:408) and the reply has no burst (quota_script.hpp:170).
// Severity: medium (a two-orders-of-magnitude cut with no signal).
TEST(RedisQuotaAttack4Test, ALowerBurstElsewhereIsCountedAsAConflict) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  // Validation refuses the tiny burst outright...
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterQuota::Create(Fourth(&clock, server.port(), "b", 1000, 1))
          .status()));
  // ...and a member record that holds one anyway (written by hand here, as
  // another version of the script might) cannot shrink the bucket below a
  // refresh period's refill: the instance still gets its share.
  const std::string until =
      absl::StrCat(absl::ToUnixMicros(absl::Now() + absl::Minutes(1)));
  ASSERT_TRUE(
      server.Command({"ZADD", "{dq:attack4}:members", until, "ghost"}).ok());
  ASSERT_TRUE(server
                  .Command({"HSET", "{dq:attack4}:state", "d:ghost", "0",
                            "r:ghost", "1000", "b:ghost", "1"})
                  .ok());
  auto a =
      ClusterQuota::Create(Fourth(&clock, server.port(), "a", 1000, 0)).value();
  ASSERT_TRUE(a->RefreshNow().ok()) << a->last_status();
  const std::string bucket_burst =
      server.Command({"HGET", "{dq:attack4}:bucket", "burst"}).value();
  EXPECT_GE(std::stod(bucket_burst), 1000 * 0.5) << bucket_burst;
  EXPECT_GT(a->stats().leased, 1u);
}

// ---- A member id shared by two limits ----

// Condition: two instances with the same member_id (one id per host or
// per pod name, and an old and a new process overlapping during a
// rollout), one configured at 100/s and the other at 1000/s.
// Expected: the fleet never runs above the lower limit while both are
// live (the documented rollout promise), or the collision is reported.
// What happens: each lease overwrites r:<m> with the caller's own rate
// before the minimum is taken (quota_script.hpp:113), so the 1000/s
// process's leases see no 100/s member at all: the bucket refills at
// 1000/s on its calls (:145-149) and it is told a fleet limit of 1000 with
// no conflict. Severity: low-medium (needs an id collision, but then the
// lower limit is silently not enforced).
// Left as a known limitation (redis.md's settings table says member ids
// must be unique): the script cannot tell two processes with one id from
// one process that restarted with a new limit, which must take effect.
TEST(RedisQuotaAttack4Test, DISABLED_ASharedMemberIdKeepsTheLowerLimit) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  auto low =
      ClusterQuota::Create(Fourth(&clock, server.port(), "x", 100, 0)).value();
  auto high =
      ClusterQuota::Create(Fourth(&clock, server.port(), "x", 1000, 0)).value();
  ASSERT_TRUE(low->RefreshNow().ok()) << low->last_status();
  ASSERT_TRUE(high->RefreshNow().ok()) << high->last_status();
  const ClusterQuotaStats s = high->stats();
  EXPECT_TRUE(s.fleet_limit_per_second <= 100 || s.limit_conflicts > 0)
      << "fleet limit " << s.fleet_limit_per_second;
}

// ---- The lease pacer ----

// Condition: the lease pacer (LocalTokenBucket, Oversize::kWhenFull) at
// 100 tokens/s with a burst of 2; a caller asks for 50 tokens at a time
// (a batch), and a trickle of single-token calls runs alongside.
// Expected: a request larger than the burst is admitted when the bucket is
// full "running up the debt" (token_bucket.hpp:47): after 50 tokens the
// bucket pays them off at 100/s, so the next 50 come about 0.5 s later.
// What happened (fixed since): the debt puts the stored time more than the
// tolerance ahead, and the very next call takes that for a clock step back and
// re-anchors it to now + tolerance (token_bucket.hpp:81-89): the debt is
// forgiven, and a batch of 50 is admitted every 20 ms, 25 x the pace.
// Severity: medium (the pacer stops smoothing exactly the large requests
// it admits; the held lease still caps the total).
TEST(RedisQuotaAttack4Test, PacerKeepsTheDebtOfAnOversizedRequest) {
  detail::redis::LocalTokenBucket pacer;
  pacer.SetRate(100, 2);
  using Oversize = detail::redis::LocalTokenBucket::Oversize;
  int64_t now = 1'000'000'000'000;
  int64_t wait = 0;
  int64_t batches = 0;
  for (int step = 0; step < 25; ++step) {  // 25 x 20 ms = 0.5 s
    if (pacer.TryTake(50, now, &wait, Oversize::kWhenFull)) ++batches;
    int64_t w = 0;
    pacer.TryTake(1, now, &w, Oversize::kWhenFull);  // the trickle
    now += 20'000'000;
  }
  // 0.5 s at 100/s pays for one batch of 50 (and at most one more).
  EXPECT_LE(batches, 2) << "batches of 50 admitted in 0.5 s";
}

// Condition: the same pacer (100/s, burst 2) under a steady trickle at
// half its pace (one token every 20 ms), and a batch of 50 asked right
// after each trickle call, retrying at once when refused (its retry-after
// is 10 ms, less than the next tick).
// Expected: a request larger than the burst is admitted within a bounded
// time while the pacer runs below its pace (it waits for the bucket to
// be full, and at half the pace it is full again every 20 ms).
// What happened (fixed since): kWhenFull admits only when the stored time is at
// or before now (token_bucket.hpp:91-95); the trickle's call just before leaves
// it 10 ms ahead every time, so the batch is refused for as long as the trickle
// lasts, however long it waits, with a retry-after of 10 ms that is never true.
// Severity: medium (in ClusterQuota's leasing mode a large request is starved
// by light traffic on the same instance, while the lease holds the tokens it
// needs).
TEST(RedisQuotaAttack4Test, PacerAdmitsAnOversizedRequestUnderATrickle) {
  detail::redis::LocalTokenBucket pacer;
  pacer.SetRate(100, 2);
  using Oversize = detail::redis::LocalTokenBucket::Oversize;
  int64_t now = 1'000'000'000'000;
  int64_t batches = 0;
  for (int step = 0; step < 100; ++step) {  // 2 s
    int64_t w = 0;
    // Refused for a while after a batch (its debt), admitted otherwise.
    (void)pacer.TryTake(1, now, &w, Oversize::kWhenFull);
    int64_t wait = 0;
    if (pacer.TryTake(50, now, &wait, Oversize::kWhenFull)) ++batches;
    now += 20'000'000;
  }
  // A batch of 50 at 100/s pays for itself in 0.5 s: three or four in 2 s.
  EXPECT_GE(batches, 3) << "batches of 50 in 2 s at half the pace";
  EXPECT_LE(batches, 5);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
