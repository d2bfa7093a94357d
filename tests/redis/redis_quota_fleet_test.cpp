// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A fleet of real processes sharing one redis::ClusterQuota through one
// real redis-server, both started here on loopback and stopped on every
// exit path (a Fleet's destructor kills and reaps its drivers; the
// RedisServer's stops the server, continuing it first if frozen). Each
// process is quota_driver (quota_driver.cpp): it offers a steady demand and
// prints its cumulative counts every 50 ms, which the tests read back.
//
// Windows are scaled down from the targets' 10 s and 30 s to keep CI
// short: accuracy over 5 s (a shorter window makes the ratio harder to
// hold, not easier: the same boundary error weighs twice as much), a 6 s
// Redis pause.

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "redis/redis_server.hpp"
#include "support/child_process.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

struct Sample {
  absl::Time t;
  int64_t admitted = 0, refused = 0, round_trips = 0;
  int mode = 0;
  int64_t held = 0;
  double share = 0;
  int64_t members = 0;
  int64_t slowest_ns = 0;
};

// Driver processes, killed and reaped on every exit path.
class Fleet {
 public:
  explicit Fleet(std::string dir) : dir_(std::move(dir)) {}
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;
  ~Fleet() {
    for (pid_t pid : pids_) {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        degrade_tests::ReapWithin(pid, absl::Seconds(5), /*group=*/false);
      }
    }
  }

  // Starts a driver; returns its index.
  int Start(std::vector<std::string> args) {
    args.insert(args.begin(), DEGRADE_QUOTA_DRIVER);
    const std::string log = absl::StrCat(dir_, "/driver", pids_.size(), ".log");
    absl::StatusOr<pid_t> pid =
        degrade_tests::SpawnLogged(std::move(args), log, /*own_group=*/false);
    EXPECT_TRUE(pid.ok()) << pid.status();
    pids_.push_back(pid.ok() ? *pid : -1);
    logs_.push_back(log);
    return static_cast<int>(pids_.size()) - 1;
  }
  void Kill(int i) {
    ::kill(pids_[i], SIGKILL);
    degrade_tests::ReapWithin(pids_[i], absl::Seconds(5), false);
    pids_[i] = -1;
  }
  // Waits for every driver to exit on its own (bounded).
  void Wait(absl::Duration bound) {
    for (pid_t& pid : pids_) {
      if (pid > 0) degrade_tests::ReapWithin(pid, bound, false);
      pid = -1;
    }
  }
  std::vector<Sample> Samples(int i) const {
    std::vector<Sample> out;
    std::ifstream in(logs_[i]);
    std::string tag;
    while (in >> tag) {
      if (tag != "S" && tag != "END") {
        std::string rest;
        std::getline(in, rest);
        continue;
      }
      Sample s;
      int64_t ns = 0;
      in >> ns >> s.admitted >> s.refused >> s.round_trips >> s.mode >>
          s.held >> s.share >> s.members >> s.slowest_ns;
      s.t = absl::FromUnixNanos(ns);
      out.push_back(s);
    }
    return out;
  }
  std::string Log(int i) const {
    std::ifstream in(logs_[i]);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int size() const { return static_cast<int>(pids_.size()); }

 private:
  std::string dir_;
  std::vector<pid_t> pids_;
  std::vector<std::string> logs_;
};

// The last sample at or before `t` (a zero sample before the first).
Sample At(const std::vector<Sample>& v, absl::Time t) {
  Sample last;
  for (const Sample& s : v) {
    if (s.t > t) break;
    last = s;
  }
  return last;
}

int64_t FleetAdmitted(const Fleet& f, absl::Time from, absl::Time to) {
  int64_t n = 0;
  for (int i = 0; i < f.size(); ++i) {
    const std::vector<Sample> v = f.Samples(i);
    n += At(v, to).admitted - At(v, from).admitted;
  }
  return n;
}

std::vector<std::string> DriverArgs(int port, const std::string& member,
                                    double demand, double seconds) {
  return {absl::StrCat("port=", port),
          "name=fleet",
          "limit=600",
          absl::StrCat("demand=", demand),
          absl::StrCat("seconds=", seconds),
          absl::StrCat("member=", member),
          "expected=3"};
}

class RedisQuotaFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status started = server_.Start();
    if (absl::IsNotFound(started)) GTEST_SKIP() << started;
    ASSERT_TRUE(started.ok()) << started;
  }
  degrade_tests::RedisServer server_;
};

// 3 processes at 2x demand: admitted over 5 s of steady state within
// [0.95, 1.02] x limit x 5 s; round trips <= instances / refresh period.
void CheckAccuracy(degrade_tests::RedisServer& server,
                   const std::vector<double>& demands) {
  Fleet fleet(server.dir());
  const absl::Time t0 = absl::Now();
  for (std::size_t i = 0; i < demands.size(); ++i) {
    fleet.Start(DriverArgs(server.port(), absl::StrCat("m", i), demands[i], 9));
  }
  fleet.Wait(absl::Seconds(30));
  for (int i = 0; i < fleet.size(); ++i) {
    ASSERT_FALSE(fleet.Samples(i).empty()) << "driver " << i << ":\n"
                                           << fleet.Log(i);
  }
  const absl::Time from = t0 + absl::Seconds(3);
  const absl::Time to = t0 + absl::Seconds(8);
  const double ratio =
      static_cast<double>(FleetAdmitted(fleet, from, to)) / (600.0 * 5);
  EXPECT_GE(ratio, 0.95) << fleet.Log(0);
  EXPECT_LE(ratio, 1.02) << fleet.Log(0);
  int64_t trips = 0;
  for (int i = 0; i < fleet.size(); ++i) {
    const std::vector<Sample> v = fleet.Samples(i);
    trips += At(v, to).round_trips - At(v, from).round_trips;
  }
  // 3 instances / 500 ms = 6 per second, 30 in 5 s (+1 each at the edges).
  EXPECT_LE(trips, 33);
  std::printf("admitted/limit %.4f, round trips %lld in 5 s\n", ratio,
              static_cast<long long>(trips));
}

TEST_F(RedisQuotaFleetTest, UniformDemandAdmitsTheLimit) {
  CheckAccuracy(server_, {400, 400, 400});
}

TEST_F(RedisQuotaFleetTest, SkewedDemandAdmitsTheLimit) {
  CheckAccuracy(server_, {960, 120, 120});  // 80/20
}

TEST_F(RedisQuotaFleetTest, SharesAdjustWhenAnInstanceJoinsOrIsKilled) {
  Fleet fleet(server_.dir());
  fleet.Start(DriverArgs(server_.port(), "a", 400, 14));
  fleet.Start(DriverArgs(server_.port(), "b", 400, 14));
  absl::SleepFor(absl::Seconds(3));
  const absl::Time join = absl::Now();
  fleet.Start(DriverArgs(server_.port(), "c", 400, 11));
  absl::SleepFor(absl::Seconds(4));
  const absl::Time kill = absl::Now();
  fleet.Kill(0);
  fleet.Wait(absl::Seconds(30));
  for (int i = 0; i < fleet.size(); ++i) {
    ASSERT_FALSE(fleet.Samples(i).empty()) << fleet.Log(i);
  }

  // Join: within two refresh periods the newcomer holds its share (a
  // third, all demands being equal) and the shares still add up to the
  // limit, not more.
  const absl::Time joined = join + absl::Seconds(1) + absl::Milliseconds(200);
  const double c_share = At(fleet.Samples(2), joined).share;
  EXPECT_GE(c_share, 0.9 * 200) << fleet.Log(2);
  double sum = 0;
  for (int i = 0; i < 3; ++i) sum += At(fleet.Samples(i), joined).share;
  EXPECT_LE(sum, 600 * 1.05);

  // Kill: within member_ttl (1.5 s) + two periods the survivors' shares
  // cover the limit again, and they admit it.
  const absl::Time settled = kill + absl::Milliseconds(2500 + 200);
  const double survivors =
      At(fleet.Samples(1), settled).share + At(fleet.Samples(2), settled).share;
  EXPECT_GE(survivors, 0.95 * 600) << fleet.Log(1);
  const int64_t after =
      FleetAdmitted(fleet, settled, settled + absl::Seconds(3));
  EXPECT_GE(after, static_cast<int64_t>(0.9 * 600 * 3));
}

TEST_F(RedisQuotaFleetTest,
       APausedRedisFallsToTheFairShareAndBackWithoutAStampede) {
  Fleet fleet(server_.dir());
  for (const char* m : {"a", "b", "c"}) {
    fleet.Start(DriverArgs(server_.port(), m, 400, 16));
  }
  absl::SleepFor(absl::Seconds(3));
  const absl::Time freeze = absl::Now();
  server_.Freeze();
  absl::SleepFor(absl::Seconds(6));
  const absl::Time thaw = absl::Now();
  server_.Thaw();
  fleet.Wait(absl::Seconds(40));

  for (int i = 0; i < 3; ++i) {
    const std::vector<Sample> v = fleet.Samples(i);
    ASSERT_FALSE(v.empty()) << fleet.Log(i);
    // Fair share after lease (1 s) + grace (2 s), plus a refresh period
    // and the breaker's bounded waits: the limit over the 3 instances.
    const Sample fair = At(v, freeze + absl::Seconds(4));
    EXPECT_EQ(fair.mode, 2) << fleet.Log(i);
    EXPECT_NEAR(fair.share, 200, 0.01);
    // No request ever waited on Redis (a command timeout is 50 ms).
    EXPECT_LT(v.back().slowest_ns,
              absl::ToInt64Nanoseconds(absl::Milliseconds(50)));
    // At most 2 lease calls in the first second after Redis resumed.
    const int64_t calls =
        At(v, thaw + absl::Seconds(1)).round_trips - At(v, thaw).round_trips;
    EXPECT_LE(calls, 2) << fleet.Log(i);
    // Leasing again within the breaker's 2 s + two periods.
    EXPECT_EQ(At(v, thaw + absl::Seconds(3) + absl::Milliseconds(500)).mode, 0)
        << fleet.Log(i);
  }
  // The fleet held the limit within 15% while Redis was paused.
  const double ratio = static_cast<double>(FleetAdmitted(fleet, freeze, thaw)) /
                       (600.0 * absl::ToDoubleSeconds(thaw - freeze));
  EXPECT_GE(ratio, 0.85);
  EXPECT_LE(ratio, 1.15);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
