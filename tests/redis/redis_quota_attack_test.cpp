// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// An adversarial review of redis::ClusterQuota: clocks that step back or
// sit at an infinity (FakeClock, scripted leaser), and against a real
// redis-server started here: a Redis frozen while the quota is destroyed,
// an instance clock far from Redis's, instances configured with different
// limits, many instances leasing at once. Each test's comment states the
// condition and what holds.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/redis/quota.hpp"
#include "degrade/status.hpp"
#include "gtest/gtest.h"
#include "redis/quota_stores.hpp"
#include "redis/redis_server.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using redis::ClusterQuota;
using redis::ClusterQuotaOptions;
using redis::QuotaLease;
using redis::QuotaLeaseRequest;

using CountingStore = degrade_tests::FixedLeaseStore;

ClusterQuotaOptions AttackQuotaOptions(const Clock* clock) {
  ClusterQuotaOptions o;
  o.name = "attack";
  o.limit_per_second = 100;
  o.expected_members = 4;
  o.member_id = "me";
  o.clock = clock;
  o.metrics = NoTelemetry();
  o.pace_leases = false;
  return o;
}

int64_t Spend(ClusterQuota& q, int64_t tries) {
  int64_t n = 0;
  for (int64_t i = 0; i < tries; ++i) n += q.TryAcquire().ok() ? 1 : 0;
  return n;
}

// A clock stepped back by an hour after a refresh is no time passing for
// the refresher (it schedules on a steady line, detail::SteadyTime): lease
// calls go on every refresh period, and requests spend what they bring,
// instead of nothing for the hour while Redis answers.
TEST(RedisQuotaAttackTest, AClockSteppedBackKeepsTheLeasesComing) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  store.answer = QuotaLease{50, 1, 100};
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  q->Poll();
  ASSERT_EQ(store.calls, 1);
  ASSERT_EQ(q->mode(), QuotaMode::kLeasing);
  clock.Set(clock.Now() - absl::Hours(1));
  for (int i = 0; i < 10; ++i) {
    clock.Advance(absl::Milliseconds(600));
    q->Poll();
  }
  EXPECT_GE(store.calls, 5) << "no lease call for an hour";
  EXPECT_GT(Spend(*q, 1000), 50) << "refused for an hour once 50 are spent";
}

// A clock at an infinity is no time passing, on the request path (it
// reads as the last good reading, so the local bucket hands out at most
// the burst it held: 12 here) and for the refresher (its steady line
// stands still). Once the clock is back the fair share serves again and
// lease calls resume; at InfinitePast nothing overflows (UBSan) and
// nothing beyond the burst is admitted.
TEST(RedisQuotaAttackTest, AClockAtAnInfinityNeitherOpensNorClosesTheQuota) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  q->Poll();
  ASSERT_EQ(q->mode(), QuotaMode::kFairShare);
  const absl::Time good = clock.Now();
  clock.Set(absl::InfiniteFuture());
  EXPECT_LE(Spend(*q, 1000), 12) << "fair share of 25/s, burst 12";
  q->Poll();
  clock.Set(good + absl::Seconds(10));
  EXPECT_GE(Spend(*q, 1000), 1) << "refused for good after the clock is back";
  const int calls = store.calls;
  clock.Advance(absl::Seconds(2));
  q->Poll();
  EXPECT_GT(store.calls, calls) << "the refresher never runs again";
  clock.Set(absl::InfinitePast());
  EXPECT_LE(Spend(*q, 1000), 12);
}

// A lease that says the fleet runs below this instance's limit (another
// live instance is configured lower: a rollout of a new limit) is counted
// as a conflict, is still a lease (leasing, no error), and the fleet's
// limit is what the fair share divides once Redis is lost: an instance of
// the old, higher limit cut off from Redis keeps to the lower one. A store
// that does not say (0) means this instance's own limit.
TEST(RedisQuotaAttackTest, AFleetBelowOurLimitIsCountedAndBoundsTheFairShare) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  QuotaLease lower{50, 2, 20};
  lower.fleet_limit_per_second = 40;  // ours is 100
  store.answer = lower;
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  ASSERT_TRUE(q->RefreshNow().ok());
  EXPECT_EQ(q->mode(), QuotaMode::kLeasing);
  EXPECT_EQ(q->stats().limit_conflicts, 1u);
  EXPECT_DOUBLE_EQ(q->stats().fleet_limit_per_second, 40);
  EXPECT_EQ(q->stats().errors, 0u);
  // Redis gone for longer than lease + grace: the fair share is the
  // fleet's limit over the members, 40 / 2, not 100 / 2.
  store.answer = absl::UnavailableError("down");
  clock.Advance(q->options().lease_horizon + q->options().grace +
                absl::Seconds(1));
  (void)q->RefreshNow();
  ASSERT_EQ(q->mode(), QuotaMode::kFairShare);
  EXPECT_DOUBLE_EQ(q->stats().share_per_second, 20);
  // Back, and the fleet's limit is ours again (a store that does not say).
  store.answer = QuotaLease{50, 2, 50};
  ASSERT_TRUE(q->RefreshNow().ok());
  EXPECT_EQ(q->stats().limit_conflicts, 1u);
  EXPECT_DOUBLE_EQ(q->stats().fleet_limit_per_second, 100);
  // A store that claims a fleet limit above ours lies: refused whole.
  QuotaLease lie{50, 2, 50};
  lie.fleet_limit_per_second = 1000;
  store.answer = lie;
  const absl::Status refused = q->RefreshNow();
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_DOUBLE_EQ(q->stats().fleet_limit_per_second, 100);
}

// A finite clock reading just inside the int64 range (1677, a FakeClock
// set there) after a good one: the local bucket's wait is computed without
// overflow (UBSan), nothing beyond the burst is admitted, and a refusal
// still carries a positive retry-after.
TEST(RedisQuotaAttackTest, AClockNearTheEndOfTheRangeNeverOverflows) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  EXPECT_EQ(Spend(*q, 1000), 12);
  clock.Set(
      absl::FromUnixNanos(std::numeric_limits<int64_t>::min() + 1'000'000'000));
  EXPECT_EQ(Spend(*q, 1000), 0);
  absl::Status refused = q->TryAcquire();
  ASSERT_TRUE(IsShed(refused)) << refused;
  ASSERT_TRUE(ShedRetryAfter(refused).has_value());
  EXPECT_GT(*ShedRetryAfter(refused), absl::ZeroDuration());
}

// What holds on a clock stepped back an hour: the local bucket's debt
// stands, never more than the fair share's burst at once, and the refusal
// still carries a positive retry-after.
TEST(RedisQuotaAttackTest, TheFairShareNeverOpensOnAClockSteppedBack) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  EXPECT_EQ(Spend(*q, 1000), 12);
  clock.Set(clock.Now() - absl::Hours(1));
  EXPECT_EQ(Spend(*q, 1000), 0);
  absl::Status refused = q->TryAcquire();
  ASSERT_TRUE(IsShed(refused)) << refused;
  ASSERT_TRUE(ShedRetryAfter(refused).has_value());
  EXPECT_GT(*ShedRetryAfter(refused), absl::ZeroDuration());
}

// A store that lies (a grant above share x horizon, a negative one, no
// members, a share above the limit or NaN) is refused whole: nothing it
// claimed is added to what is held, and the quota falls to grace.
TEST(RedisQuotaAttackTest, ALyingLeaseNeverAdmitsMoreThanItGrants) {
  FakeClock clock(absl::FromUnixSeconds(1'700'000'000));
  CountingStore store;
  store.answer = QuotaLease{30, 1, 100};
  auto q =
      ClusterQuota::CreateWithLeaser(AttackQuotaOptions(&clock), store.Leaser())
          .value();
  ASSERT_TRUE(q->RefreshNow().ok());
  EXPECT_EQ(Spend(*q, 1000), 30);
  for (QuotaLease bad : {QuotaLease{1'000'000, 1, 100}, QuotaLease{-5, 1, 100},
                         QuotaLease{5, 0, 100}, QuotaLease{5, 1, 1e9},
                         QuotaLease{5, 1, std::nan("")}}) {
    store.answer = bad;
    EXPECT_TRUE(absl::IsInvalidArgument(q->RefreshNow()));
    EXPECT_EQ(q->stats().leased, 30u);
    EXPECT_EQ(q->stats().held, 0);
    EXPECT_EQ(q->mode(), QuotaMode::kGrace);
  }
}

ClusterQuotaOptions RealQuota(int port, std::string member, double limit) {
  ClusterQuotaOptions o = AttackQuotaOptions(nullptr);
  o.port = port;
  o.member_id = std::move(member);
  o.limit_per_second = limit;
  o.expected_members = 1;
  return o;
}

// A loopback proxy in front of a real Redis that passes requests at once
// and hands replies back one byte every `per_byte`: a Redis behind a
// congested link. Stops (closing every socket, joining its threads) when
// destroyed. One connection at a time is enough for one quota.
class DribblingProxy {
 public:
  DribblingProxy(int redis_port, absl::Duration per_byte)
      : redis_port_(redis_port), per_byte_(per_byte) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) !=
            0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) !=
            0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    accepter_ = std::thread([this] { Accept(); });
  }
  ~DribblingProxy() {
    stop_.store(true);
    if (accepter_.joinable()) accepter_.join();
    for (std::thread& t : pumps_) t.join();
    for (int fd : fds_) ::close(fd);
    if (listener_ >= 0) ::close(listener_);
  }
  int port() const { return port_; }

 private:
  bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 10) > 0;
  }
  void Accept() {
    while (!stop_.load()) {
      if (!Readable(listener_)) continue;
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(redis_port_));
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) !=
          0) {
        ::close(client);
        ::close(server);
        continue;
      }
      fds_.push_back(client);
      fds_.push_back(server);
      pumps_.emplace_back([this, client, server] {
        Pump(client, server, absl::ZeroDuration());
      });
      pumps_.emplace_back(
          [this, client, server] { Pump(server, client, per_byte_); });
    }
  }
  void Pump(int from, int to, absl::Duration per_byte) {
    char buf[4096];
    while (!stop_.load()) {
      if (!Readable(from)) continue;
      const ssize_t n = ::recv(
          from, buf, per_byte > absl::ZeroDuration() ? 1 : sizeof buf, 0);
      if (n <= 0) return;
      if (per_byte > absl::ZeroDuration()) absl::SleepFor(per_byte);
      if (::send(to, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) {
        return;
      }
    }
  }

  const int redis_port_;
  const absl::Duration per_byte_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accepter_;
  std::vector<std::thread> pumps_;  // the accepter's; joined after it
  std::vector<int> fds_;
};

// A Redis that answers one byte at a time (20 ms a byte, a reply of tens
// of bytes): the lease call gives up within its command timeouts, not the
// reply's second, and requests meanwhile are served by the fair share.
TEST(RedisQuotaAttackTest, ARedisAnsweringOneByteAtATimeCostsOnlyTheTimeout) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  DribblingProxy proxy(server.port(), absl::Milliseconds(20));
  ASSERT_NE(proxy.port(), 0);
  ClusterQuotaOptions o = RealQuota(proxy.port(), "dribble", 1000);
  o.command_timeout = absl::Milliseconds(50);
  auto q = ClusterQuota::Create(o).value();
  const absl::Time start = absl::Now();
  absl::Status s = q->RefreshNow();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(took, absl::Milliseconds(400));
  EXPECT_EQ(q->mode(), QuotaMode::kFairShare);
  EXPECT_EQ(q->stats().leased, 0u);
  EXPECT_TRUE(q->TryAcquire().ok());
}

// A Redis look-alike on loopback that answers every command `delay` after
// it arrived: SCRIPT LOAD with a digest, EVALSHA with a valid lease (5
// tokens, 1 member, a share of 1000/s). One connection; stopped (socket
// closed, thread joined) when destroyed.
class SlowRedis {
 public:
  explicit SlowRedis(absl::Duration delay) : delay_(delay) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener_ < 0 ||
        ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) !=
            0 ||
        ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) !=
            0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~SlowRedis() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    if (listener_ >= 0) ::close(listener_);
  }
  int port() const { return port_; }
  int commands() const { return commands_.load(); }

 private:
  static bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 10) > 0;
  }
  // The length of the first whole RESP array of bulk strings in `b`, or 0.
  static std::size_t Whole(const std::string& b) {
    std::size_t at = 0;
    const auto line = [&](long* v) {
      const std::size_t end = b.find("\r\n", at);
      if (end == std::string::npos || end == at) return false;
      *v = std::strtol(b.c_str() + at + 1, nullptr, 10);
      at = end + 2;
      return true;
    };
    long n = 0;
    if (b.empty() || b[0] != '*' || !line(&n)) return 0;
    for (long i = 0; i < n; ++i) {
      long len = 0;
      if (at >= b.size() || !line(&len)) return 0;
      if (b.size() < at + static_cast<std::size_t>(len) + 2) return 0;
      at += static_cast<std::size_t>(len) + 2;
    }
    return at;
  }
  void Serve() {
    int c = -1;
    std::string in;
    while (!stop_.load()) {
      if (c < 0) {
        if (!Readable(listener_)) continue;
        c = ::accept(listener_, nullptr, nullptr);
        continue;
      }
      if (!Readable(c)) continue;
      char buf[8192];
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) {
        ::close(c);
        c = -1;
        in.clear();
        continue;
      }
      in.append(buf, static_cast<std::size_t>(n));
      while (std::size_t used = Whole(in)) {
        const bool load =
            in.find("SCRIPT") != std::string::npos && in.find("SCRIPT") < used;
        in.erase(0, used);
        ++commands_;
        absl::SleepFor(delay_);
        const std::string reply =
            load ? "$40\r\n0123456789012345678901234567890123456789\r\n"
                 : "*5\r\n:5\r\n:1\r\n$4\r\n1000\r\n$1\r\n0\r\n"
                   "$4\r\n1000\r\n";
        ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
    }
    if (c >= 0) ::close(c);
  }

  const absl::Duration delay_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> commands_{0};
  std::thread thread_;
};

// A lease call is bounded by command_timeout as a whole: the first call on
// a connection sends SCRIPT LOAD and then EVALSHA (a flushed script cache
// adds EVAL, a closed connection a second run), and all of them share one
// deadline (detail/quota_script.hpp LeaseConnection::Lease). A Redis that
// answers each command just inside the timeout (40 ms of 50) ends the
// call at 50 ms, not 80 and more, which Stop() and the destructor would
// wait for.
TEST(RedisQuotaAttackTest, ALeaseCallIsBoundedByTheCommandTimeoutAsAWhole) {
  SlowRedis slow(absl::Milliseconds(40));
  ASSERT_NE(slow.port(), 0);
  ClusterQuotaOptions o = RealQuota(slow.port(), "slow", 1000);
  o.command_timeout = absl::Milliseconds(50);
  auto q = ClusterQuota::Create(o).value();
  const absl::Time start = absl::Now();
  absl::Status s = q->RefreshNow();
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(slow.commands(), 2) << s;
  // Each command alone is answered inside its timeout (40 ms of 50), so
  // only a deadline shared by the whole call fails it: the failure is the
  // proof, with no wall-clock bound to flake on a loaded machine.
  EXPECT_FALSE(s.ok()) << "took " << absl::FormatDuration(took);
  // The control: the same server answering at once leases.
  SlowRedis quick(absl::Milliseconds(1));
  ASSERT_NE(quick.port(), 0);
  ClusterQuotaOptions qo = RealQuota(quick.port(), "quick", 1000);
  qo.command_timeout = absl::Milliseconds(50);
  auto fast = ClusterQuota::Create(qo).value();
  EXPECT_TRUE(fast->RefreshNow().ok());
  EXPECT_EQ(quick.commands(), 2);
}

// Redis frozen (SIGSTOP) while a lease call is in flight: destroying the
// quota waits for that call, which its command timeout bounds, not for
// Redis to come back.
TEST(RedisQuotaAttackTest, DestroyingTheQuotaWhileRedisIsFrozenIsBounded) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  ClusterQuotaOptions o = RealQuota(server.port(), "frozen", 1000);
  o.refresh_period = absl::Milliseconds(20);
  o.lease_horizon = absl::Milliseconds(100);
  o.member_ttl = absl::Milliseconds(200);
  o.command_timeout = absl::Milliseconds(20);
  auto q = ClusterQuota::Create(o).value();
  ASSERT_TRUE(q->Start().ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (q->mode() != QuotaMode::kLeasing && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(q->mode(), QuotaMode::kLeasing);
  server.Freeze();
  // Wait for a call to be in flight against the frozen server.
  const uint64_t trips = q->stats().round_trips;
  while (q->stats().round_trips == trips && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const absl::Time start = absl::Now();
  q.reset();
  const absl::Duration took = absl::Now() - start;
  server.Thaw();
  // A lease call is bounded by the command timeout as a whole, plus a
  // connect; far below a second.
  EXPECT_LT(took, absl::Seconds(1));
}

// The instance's clock far from Redis's (ten years ahead, then an hour
// further): the script runs on Redis TIME, so the grant is what Redis's
// own time allows, no more.
TEST(RedisQuotaAttackTest, AnInstanceClockFarOffGetsNoMoreTokens) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  FakeClock clock(absl::Now() + absl::Hours(24 * 3650));
  ClusterQuotaOptions o = RealQuota(server.port(), "skewed", 1000);
  o.clock = &clock;
  auto q = ClusterQuota::Create(o).value();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(q->RefreshNow().ok()) << q->last_status();
  EXPECT_LE(q->stats().leased, 125u) << "a new bucket's reserve";
  clock.Advance(absl::Hours(1));
  ASSERT_TRUE(q->RefreshNow().ok()) << q->last_status();
  clock.Set(clock.Now() - absl::Hours(2));
  ASSERT_TRUE(q->RefreshNow().ok()) << q->last_status();
  const double real = absl::ToDoubleSeconds(absl::Now() - start);
  EXPECT_LE(static_cast<double>(q->stats().leased), 125 + 1000 * real + 1);
}

// Instances of one quota configured with different limits (a rolling
// deploy that changes limit_per_second) share one bucket at the lower
// limit: the fleet is never granted more than the lower, whichever way the
// limit moves; the instance above it counts the conflict
// (stats().limit_conflicts, degrade_quota_limit_conflicts_total). Once the
// lower instance's membership lapses, the bucket runs at the higher limit
// by itself.
TEST(RedisQuotaAttackTest, InstancesWithDifferentLimitsShareTheLowerOne) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  // Memberships lapse 2 s after the last lease: long enough for a slow
  // (sanitized) build's rounds below, short enough to wait out at the end.
  ClusterQuotaOptions low_options = RealQuota(server.port(), "low", 1000);
  low_options.member_ttl = absl::Seconds(2);
  auto low = ClusterQuota::Create(low_options).value();
  ClusterQuotaOptions high_options = RealQuota(server.port(), "high", 1000);
  high_options.limit_per_second = 1'000'000;
  high_options.member_ttl = absl::Seconds(2);
  auto high = ClusterQuota::Create(high_options).value();
  ASSERT_TRUE(low->RefreshNow().ok()) << low->last_status();
  ASSERT_TRUE(high->RefreshNow().ok()) << high->last_status();
  EXPECT_EQ(high->mode(), QuotaMode::kLeasing);
  EXPECT_EQ(high->stats().limit_conflicts, 1u);
  EXPECT_EQ(low->stats().limit_conflicts, 0u);
  EXPECT_DOUBLE_EQ(high->stats().fleet_limit_per_second, 1000);
  EXPECT_LE(high->stats().share_per_second, 1000 * (1 + 1e-9));
  // The two together lease no more than the lower limit allows, however
  // fast the high one asks.
  const absl::Time start = absl::Now();
  for (int i = 0; i < 50; ++i) {
    high->RefreshNow().IgnoreError();
    low->RefreshNow().IgnoreError();
    // More than either can hold (a share x lease_horizon, at most 1,000).
    Spend(*high, 5000);
    Spend(*low, 5000);
  }
  const double real = absl::ToDoubleSeconds(absl::Now() - start);
  EXPECT_LE(static_cast<double>(high->stats().leased + low->stats().leased),
            250 + 1000 * (real + 0.01));
  // The low instance stops; once its membership lapses (2 s) the high one
  // finds the fleet at its own limit.
  low.reset();
  absl::SleepFor(absl::Milliseconds(2200));  // real Redis TIME must pass
  ASSERT_TRUE(high->RefreshNow().ok()) << high->last_status();
  EXPECT_DOUBLE_EQ(high->stats().fleet_limit_per_second, 1'000'000);
}

// A rollout that changes only lease_horizon (a tuning of each instance,
// not the fleet's limit) with the burst left derived: old and new
// instances share the bucket, no lease call is a limit conflict; nor is an
// instance with the same rate and a burst of its own (the bucket holds the
// lowest burst).
TEST(RedisQuotaAttackTest, ChangingOnlyTheLeaseHorizonSharesTheBucket) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  const ClusterQuotaOptions before = RealQuota(server.port(), "old", 1000);
  ClusterQuotaOptions after = RealQuota(server.port(), "new", 1000);
  after.lease_horizon = 2 * before.lease_horizon;
  auto old_one = ClusterQuota::Create(before).value();
  auto new_one = ClusterQuota::Create(after).value();
  ASSERT_TRUE(old_one->RefreshNow().ok()) << old_one->last_status();
  ASSERT_TRUE(new_one->RefreshNow().ok()) << new_one->last_status();
  ASSERT_TRUE(old_one->RefreshNow().ok()) << old_one->last_status();
  EXPECT_EQ(new_one->mode(), QuotaMode::kLeasing);
  EXPECT_EQ(old_one->stats().limit_conflicts, 0u);
  EXPECT_EQ(new_one->stats().limit_conflicts, 0u);
  EXPECT_EQ(new_one->stats().members, 2);
  ClusterQuotaOptions set_burst = RealQuota(server.port(), "burst", 1000);
  set_burst.burst = 3000;
  auto third = ClusterQuota::Create(set_burst).value();
  ASSERT_TRUE(third->RefreshNow().ok()) << third->last_status();
  EXPECT_EQ(third->stats().limit_conflicts, 0u) << "the same rate";
  EXPECT_DOUBLE_EQ(third->stats().fleet_limit_per_second, 1000);
  EXPECT_EQ(third->stats().members, 3);
}

// Many instances joining at once and leasing as fast as they can: the
// fleet is never granted more than the bucket released (its reserve plus
// the limit times the time that passed), however the calls interleave.
TEST(RedisQuotaAttackConcurrencyTest,
     ManyInstancesJoiningAtOnceNeverExceedTheLimit) {
  degrade_tests::RedisServer server;
  absl::Status started = server.Start();
  if (absl::IsNotFound(started)) GTEST_SKIP() << started;
  ASSERT_TRUE(started.ok()) << started;
  constexpr int kInstances = 16;
  constexpr double kLimit = 2000;
  std::vector<std::unique_ptr<ClusterQuota>> fleet;
  for (int i = 0; i < kInstances; ++i) {
    fleet.push_back(ClusterQuota::Create(
                        RealQuota(server.port(), absl::StrCat("m", i), kLimit))
                        .value());
  }
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kInstances; ++i) {
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      for (int r = 0; r < 30; ++r) {
        // Demand far above the limit, so each asks for a large share.
        Spend(*fleet[i], 2000);
        fleet[i]->RefreshNow().IgnoreError();
      }
    });
  }
  go.store(true);
  for (std::thread& t : threads) t.join();
  const double real = absl::ToDoubleSeconds(absl::Now() - start);
  uint64_t leased = 0;
  for (const auto& q : fleet) leased += q->stats().leased;
  // The reserve of a new bucket: limit x refresh_period / 4.
  const double reserve = kLimit * 0.5 / 4;
  EXPECT_LE(static_cast<double>(leased), reserve + kLimit * real + 1)
      << "over " << real << " s";
  EXPECT_GT(leased, 0u);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
