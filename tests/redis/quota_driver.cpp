// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// One instance of a fleet sharing a redis::ClusterQuota, as a process of
// its own: the real-Redis fleet tests (redis_quota_fleet_test.cpp) and the
// fleet benchmark (benchmarks/quota_fleet.sh) start several of these
// against one redis-server. It offers `demand` requests a second (paced in
// 1 ms steps), each a TryAcquire(1), for `seconds`, and every 50 ms prints
// one line of cumulative counts:
//
//   S <unix ns> <admitted> <refused> <round trips> <mode> <held> <share>
//     <members> <slowest TryAcquire ns so far>
//
// then "END" with the same fields. At the end of each whole second of the
// run it prints the request path's latency over that second (TryAcquire
// alone, as the caller sees it):
//
//   P <unix ns at the second's start> <calls> <p50 ns> <p99 ns> <max ns>
//
// Usage:
//
//   quota_driver port=6379 name=q limit=600 demand=400 seconds=8 member=a
//                [refresh_ms=500] [timeout_ms=50] [expected=3]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/redis/quota.hpp"

namespace {

void Print(const char* tag, degrade::redis::ClusterQuota& q,
           int64_t slowest_ns) {
  const degrade::ClusterQuotaStats s = q.stats();
  std::printf("%s %lld %llu %llu %llu %d %lld %.3f %lld %lld\n", tag,
              static_cast<long long>(absl::ToUnixNanos(absl::Now())),
              static_cast<unsigned long long>(s.admitted),
              static_cast<unsigned long long>(s.refused),
              static_cast<unsigned long long>(s.round_trips),
              static_cast<int>(s.mode), static_cast<long long>(s.held),
              s.share_per_second, static_cast<long long>(s.members),
              static_cast<long long>(slowest_ns));
  std::fflush(stdout);
}

// Prints one "P" line for the calls of a second and forgets them.
void PrintSecond(absl::Time second_start, std::vector<int64_t>* took) {
  if (took->empty()) return;
  std::sort(took->begin(), took->end());
  const auto at = [&](double q) {
    const std::size_t i =
        static_cast<std::size_t>(q * static_cast<double>(took->size() - 1));
    return static_cast<long long>((*took)[i]);
  };
  std::printf("P %lld %zu %lld %lld %lld\n",
              static_cast<long long>(absl::ToUnixNanos(second_start)),
              took->size(), at(0.5), at(0.99), at(1.0));
  std::fflush(stdout);
  took->clear();
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    args[kv.first] = kv.second;
  }
  const auto num = [&](const char* key, double fallback) {
    double v = fallback;
    auto it = args.find(key);
    if (it != args.end() && !absl::SimpleAtod(it->second, &v)) {
      std::fprintf(stderr, "quota_driver: %s=%s is not a number\n", key,
                   it->second.c_str());
      std::exit(2);
    }
    return v;
  };
  degrade::redis::ClusterQuotaOptions o;
  o.name = args.count("name") ? args["name"] : "fleet";
  o.member_id = args.count("member") ? args["member"] : "";
  o.port = static_cast<int>(num("port", 6379));
  o.limit_per_second = num("limit", 600);
  o.expected_members = static_cast<int64_t>(num("expected", 3));
  o.refresh_period = absl::Milliseconds(num("refresh_ms", 500));
  o.lease_horizon = 2 * o.refresh_period;
  o.member_ttl = 3 * o.refresh_period;
  o.command_timeout = absl::Milliseconds(num("timeout_ms", 50));
  const double demand = num("demand", 400);
  const absl::Duration run = absl::Seconds(num("seconds", 8));
  auto quota = degrade::redis::ClusterQuota::Create(o);
  if (!quota.ok()) {
    std::fprintf(stderr, "quota_driver: %s\n",
                 std::string(quota.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = (*quota)->Start(); !s.ok()) {
    std::fprintf(stderr, "quota_driver: %s\n",
                 std::string(s.message()).c_str());
    return 2;
  }
  const absl::Time start = absl::Now();
  absl::Time next_print = start;
  double owed = 0;
  absl::Time last = start;
  int64_t slowest = 0;
  std::vector<int64_t> second;
  second.reserve(1 << 16);
  absl::Time second_start = start;
  while (true) {
    const absl::Time now = absl::Now();
    if (now - start >= run) break;
    if (now - second_start >= absl::Seconds(1)) {
      PrintSecond(second_start, &second);
      second_start += absl::Seconds(1);
    }
    owed += demand * absl::ToDoubleSeconds(now - last);
    last = now;
    while (owed >= 1) {
      owed -= 1;
      const absl::Time t0 = absl::Now();
      (void)(*quota)->TryAcquire();
      const int64_t took = absl::ToInt64Nanoseconds(absl::Now() - t0);
      if (took > slowest) slowest = took;
      second.push_back(took);
    }
    if (now >= next_print) {
      Print("S", **quota, slowest);
      next_print = now + absl::Milliseconds(50);
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  (*quota)->Stop();
  Print("END", **quota, slowest);
  return 0;
}
