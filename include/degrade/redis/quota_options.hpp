// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: redis/quota_options.hpp
// -----------------------------------------------------------------------------
//
// What a fleet quota (redis/quota.hpp) is configured with and what it asks
// its store: ClusterQuotaOptions and its validation, and the leaser seam
// (QuotaLeaseRequest in, QuotaLease out) through which ClusterQuota reaches
// Redis, or a scripted store in tests. Kept apart from the quota itself so
// that a service can check a configuration (a config push, a flag) without
// the quota's machinery, and so that each header stays readable.
//
//   degrade::redis::ClusterQuotaOptions o;
//   o.name = "feature_store";
//   o.limit_per_second = 2000;
//   o.expected_members = 20;
//   if (absl::Status s = degrade::redis::ValidateClusterQuotaOptions(o);
//       !s.ok()) {
//     return s;  // INVALID_ARGUMENT naming the field, its value, the rule
//   }
//
// Every instance of one quota uses the same name; instances configured with
// different limits share the fleet's bucket at the lowest among the live
// ones (docs/redis.md says how to change a limit).
//
// Thread safety: plain values and a pure function; thread-compatible.

#ifndef DEGRADE_REDIS_QUOTA_OPTIONS_HPP_
#define DEGRADE_REDIS_QUOTA_OPTIONS_HPP_

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/redis/hot_list_source.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace redis {

// What an instance asks for at each refresh, and what it gets: the seam
// between ClusterQuota and its store (Redis by default; a scripted fake in
// tests, another store if one wants).
struct QuotaLeaseRequest {
  std::string member;            // this instance's id
  double demand_per_second = 0;  // tokens asked per second lately
  int64_t held = 0;              // leased tokens not yet spent
};
struct QuotaLease {
  int64_t granted = 0;          // tokens taken from the fleet's bucket
  int64_t members = 0;          // live instances, this one included
  double share_per_second = 0;  // this instance's share of the limit
  // The limit the fleet's bucket ran at: the lowest any live instance is
  // configured with. 0: a store that does not say (this instance's own).
  double fleet_limit_per_second = 0;
};
// Called on the refresher thread only, one call at a time. Must return
// within a bound of its own (the Redis leaser: command_timeout).
using QuotaLeaser =
    std::function<absl::StatusOr<QuotaLease>(const QuotaLeaseRequest&)>;

// DefaultQuotaBreakerSettings()
//
// Open after 3 consecutive transport failures, for 2 s (not the hot list's
// 30 s: a quota wants its lease back soon), then one trial; only transport
// failures count.
inline BreakerSettings DefaultQuotaBreakerSettings() {
  BreakerSettings s = DefaultHotListBreakerSettings();
  s.timeout = absl::Seconds(2);
  return s;
}

// ClusterQuotaOptions
//
// Checked by ValidateClusterQuotaOptions (and ClusterQuota::Create).
// Every instance of a quota uses the same name. Instances configured with
// different limits (a rollout that changes limit_per_second or burst)
// share the fleet's bucket at the lowest limit among the live ones; a burst
// left at 0 is each instance's limit x its own lease_horizon.
struct ClusterQuotaOptions {
  // The quota's name: its Redis keys ({dq:<name>}:bucket, :members, :state)
  // and its metrics label. 1..200 bytes, no NUL.
  std::string name;
  // The fleet-wide limit, tokens per second. Finite, > 0.
  double limit_per_second = 0;
  // The fleet's bucket holds at most this many tokens; 0 means
  // limit_per_second x lease_horizon. Finite; 0 or at least
  // limit_per_second x refresh_period.
  double burst = 0;
  // How many instances to assume before Redis has answered once: the fair
  // share is then limit / expected_members. >= 1 (required).
  int64_t expected_members = 0;
  // A lease call every refresh_period x [1, 1.2]. In [10 ms, 1 h].
  absl::Duration refresh_period = absl::Milliseconds(500);
  // An instance holds at most share x lease_horizon tokens, and a lease
  // counts as current for this long. In [refresh_period, 1 h].
  absl::Duration lease_horizon = absl::Seconds(1);
  // How long after the lease horizon a failing instance keeps spending its
  // lease and its last share before the fair share. In [0, 1 h].
  absl::Duration grace = absl::Seconds(2);
  // An instance that made no lease call for this long is no longer
  // counted. In [2 x refresh_period, 1 h].
  absl::Duration member_ttl = absl::Milliseconds(1500);
  // This instance's id in Redis; empty: "<hostname>/<pid>/<random>".
  // At most 256 bytes, no NUL.
  std::string member_id;
  // Redis: as HotListSourceOptions (same rules). command_timeout bounds a
  // whole lease call and may not exceed refresh_period.
  std::string host = "127.0.0.1";
  int port = 6379;
  absl::Duration connect_timeout = absl::Milliseconds(250);
  absl::Duration command_timeout = absl::Milliseconds(50);
  std::optional<std::string> username;
  std::optional<std::string> password;
  int database = 0;
  BreakerSettings breaker = DefaultQuotaBreakerSettings();
  // Times the modes, the refreshes and the local bucket (FakeClock in
  // tests); socket timeouts are real. Null: RealClock::Instance().
  const Clock* clock = nullptr;
  // The telemetry (telemetry.hpp); null: the process default.
  Telemetry* metrics = nullptr;
  // Seeds the refresh jitter; 0: from the member id.
  uint64_t jitter_seed = 0;
  // Spend a lease evenly rather than at once: while leasing, requests also
  // pass a local bucket at 1.1 x the share (or what is held over one
  // refresh period, when more) with 20 ms of burst (Doorman
  // splits a grant into sub-intervals for the same reason). Without it an
  // instance under heavy demand admits each grant in a burst just after it
  // arrives and nothing until the next, which is what a protected backend
  // sees. Turn it off only to count grants exactly (tests).
  bool pace_leases = true;
};

// ValidateClusterQuotaOptions()
//
// OK, or INVALID_ARGUMENT naming the first bad field, its value and the
// rule; then the breaker's settings.
inline absl::Status ValidateClusterQuotaOptions(const ClusterQuotaOptions& o) {
  const auto who = detail::SettingOwner::Described(
      absl::StrCat("redis cluster quota '", detail::Printable(o.name), "'"));
  const auto in = [](absl::Duration d, absl::Duration lo, absl::Duration hi) {
    return d >= lo && d <= hi;
  };
  const auto fmt = [](absl::Duration d) { return absl::FormatDuration(d); };
  const absl::Duration hour = absl::Hours(1);
  if (o.name.empty() || o.name.size() > 200 ||
      o.name.find('\0') != std::string::npos) {
    return who.Invalid("name", detail::Printable(o.name),
                       "must be 1..200 bytes without a NUL");
  }
  if (!std::isfinite(o.limit_per_second) || o.limit_per_second <= 0) {
    return who.Invalid("limit_per_second", o.limit_per_second,
                       "must be finite and > 0");
  }
  if (!std::isfinite(o.burst) || o.burst < 0) {
    return who.Invalid("burst", o.burst,
                       "must be finite and >= 0 (0: limit x lease_horizon)");
  }
  if (o.expected_members < 1 || o.expected_members > 1000000) {
    return who.Invalid("expected_members", o.expected_members,
                       "must be in 1..1000000 (the fair share before Redis "
                       "answers is limit / expected_members)");
  }
  if (!in(o.refresh_period, absl::Milliseconds(10), hour)) {
    return who.Invalid("refresh_period", fmt(o.refresh_period),
                       "must be in [10ms, 1h]");
  }
  if (!in(o.lease_horizon, o.refresh_period, hour)) {
    return who.Invalid("lease_horizon", fmt(o.lease_horizon),
                       absl::StrCat("must be in [refresh_period (",
                                    fmt(o.refresh_period), "), 1h]"));
  }
  // A bucket smaller than a refresh period's refill loses tokens between
  // one lease call and the next: the fleet would be granted less than its
  // limit (with less than one token, nothing at all).
  const double period_refill =
      o.limit_per_second * absl::ToDoubleSeconds(o.refresh_period);
  if (o.burst != 0 && o.burst < period_refill) {
    return who.Invalid("burst", o.burst,
                       absl::StrCat("must be 0 (limit x lease_horizon) or at "
                                    "least limit x refresh_period (",
                                    period_refill, ")"));
  }
  if (!in(o.grace, absl::ZeroDuration(), hour)) {
    return who.Invalid("grace", fmt(o.grace), "must be in [0, 1h]");
  }
  if (!in(o.member_ttl, 2 * o.refresh_period, hour)) {
    return who.Invalid("member_ttl", fmt(o.member_ttl),
                       "must be in [2 x refresh_period, 1h]: a live instance "
                       "must renew before it lapses");
  }
  if (o.member_id.size() > 256 || o.member_id.find('\0') != std::string::npos) {
    return who.Invalid("member_id", detail::Printable(o.member_id),
                       "must be at most 256 bytes without a NUL");
  }
  HotListSourceOptions conn;
  conn.host = o.host;
  conn.port = o.port;
  conn.key = o.name;
  conn.connect_timeout = o.connect_timeout;
  conn.command_timeout = o.command_timeout;
  conn.username = o.username;
  conn.password = o.password;
  conn.database = o.database;
  conn.breaker = o.breaker;
  if (absl::Status s = ValidateHotListSourceOptions(conn); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("redis cluster quota '",
                                                   detail::Printable(o.name),
                                                   "': ", s.message()));
  }
  if (o.command_timeout > o.refresh_period) {
    return who.Invalid("command_timeout", fmt(o.command_timeout),
                       absl::StrCat("must not exceed refresh_period (",
                                    fmt(o.refresh_period), ")"));
  }
  return absl::OkStatus();
}

}  // namespace redis
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_QUOTA_OPTIONS_HPP_
