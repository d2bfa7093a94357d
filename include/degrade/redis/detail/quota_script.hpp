// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The Redis side of the fleet quota (quota.hpp): the one Lua script every
// lease runs, the reading of its reply, and the connection that sends it.
//
// The script keeps the fleet's token bucket and its members in three keys
// that share one hash slot ({dq:<name>}), all declared in KEYS[] (Redis
// Cluster and its look-alikes refuse undeclared keys):
//
//   KEYS[1] hash   tokens, ts,     the bucket: tokens left and when (Redis
//                  rate, burst     TIME, microseconds) it was last refilled,
//                                  and the limit it last ran at
//   KEYS[2] zset   member -> expiry the live instances, scored by when their
//                                  membership lapses (now + member_ttl)
//   KEYS[3] hash   d:<m> t:<m> c:<m> each member's demand (tokens/s), the
//                  r:<m> b:<m>     time of its last lease, its fractional
//                                  carry, and the limit it is configured
//                                  with (rate and burst)
//
// Time is Redis's own TIME, never an instance's clock, so instance clock
// skew cannot hand out tokens; Redis time stepping back (a failover to a
// replica behind) reads as no time passing at the step, and the bucket
// refills from there (its time moves back with TIME, rather than wait for
// TIME to catch up). One run: drops at most 16 lapsed members (the others
// on later runs; none is counted meanwhile), renews this one, sums the
// demands of the live ones,
// computes this member's share (below), refills the bucket, and grants what
// the member accrued at its share since its last lease, at most the room
// left under share x horizon (what it still holds counts) and at most what
// the bucket has. Accruing by time keeps the shares fair however the
// members' calls interleave. Shares are recomputed from smoothed demands
// at each run, so what the members accrue drifts a little from what the
// bucket refills; rather than let a surplus overflow a full bucket
// (capacity the fleet then never uses) or build a reserve to be spent in a
// burst later, a member also takes its share's part of whatever the bucket
// holds above a small reserve (a quarter of a refresh period's refill), and
// a new (or wiped) bucket starts at that reserve. The reserve bounds how
// far the fleet can run ahead of the limit in any window. Tokens leave the
// bucket when granted, before anyone spends them: the fleet can never be
// granted more than the bucket releases.
//
// The share is proportional: when the demands add up to more than the
// limit, each member gets limit x demand / sum (every request in the fleet
// then has the same chance of admission, whichever instance the load
// balancer sent it to); when they add up to less, each gets its demand plus
// an equal part of the spare (so a member whose load grows finds room at
// once). One sum, computed each run from the live members: nothing drifts.
//
// The bucket runs at the lowest limit any live member is configured with
// (rate and burst each, a burst of 0 being that member's rate x its lease
// horizon), computed at each run from the members' records; the burst is
// never below a refresh period's refill at that rate nor below one token
// (a smaller bucket would lose tokens between lease calls; one under a
// token would grant nothing). Instances configured with different limits, in a
// rollout that changes the limit, so share one bucket at the lower limit: the
// fleet is never granted more than the lower of the two, and the new limit
// takes over by itself once the last instance with the old one has stopped and
// its membership lapsed (member_ttl). The reply's fifth element is that limit,
// so an instance can tell (and count) that the fleet runs below its own.

// Not a public API. Thread-compatible (one connection, one caller).

#ifndef DEGRADE_REDIS_DETAIL_QUOTA_SCRIPT_HPP_
#define DEGRADE_REDIS_DETAIL_QUOTA_SCRIPT_HPP_

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/sigpipe.hpp"
#include "degrade/redis/detail/command.hpp"
#include "degrade/redis/detail/reply.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace redis {

inline constexpr absl::string_view kQuotaScript = R"lua(
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local t_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local member = ARGV[1]
local demand = tonumber(ARGV[2])
local held = tonumber(ARGV[3])
local own_rate = tonumber(ARGV[4])
local own_burst = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
local horizon = tonumber(ARGV[7])
local first = tonumber(ARGV[8])
local keep = tonumber(ARGV[9])
if own_burst <= 0 then own_burst = own_rate * horizon / 1e6 end
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', t_us), 'LIMIT', 0, 16)
for i = 1, #dead do
  local m = dead[i]
  redis.call('ZREM', KEYS[2], m)
  redis.call('HDEL', KEYS[3], 'd:' .. m, 't:' .. m, 'c:' .. m, 'r:' .. m, 'b:' .. m)
end
redis.call('ZADD', KEYS[2], string.format('%d', t_us + ttl), member)
redis.call('HSET', KEYS[3], 'd:' .. member, ARGV[2], 'r:' .. member, string.format('%.17g', own_rate), 'b:' .. member, string.format('%.17g', own_burst))
local members = redis.call('ZRANGEBYSCORE', KEYS[2], string.format('%d', t_us), '+inf')
local n = #members
local sum = 0
local rate = own_rate
local burst = own_burst
for i = 1, n do
  local m = members[i]
  local v = redis.call('HMGET', KEYS[3], 'd:' .. m, 'r:' .. m, 'b:' .. m)
  sum = sum + (tonumber(v[1]) or 0)
  local r = tonumber(v[2])
  local b = tonumber(v[3])
  if r ~= nil and r > 0 and r < rate then rate = r end
  if b ~= nil and b > 0 and b < burst then burst = b end
end
local floor_burst = math.max(1, rate * first / 1e6)
if burst < floor_burst then burst = floor_burst end
local share
if sum <= 0 then
  share = rate / n
elseif sum >= rate then
  share = rate * demand / sum
else
  share = demand + (rate - sum) / n
end
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1])
local ts = tonumber(b[2])
local reserve = math.min(burst, rate * first / 4e6)
if tokens == nil or ts == nil then
  tokens = reserve
  ts = t_us
end
if tokens > burst then tokens = burst end
if t_us < ts then ts = t_us end
if t_us > ts then
  tokens = math.min(burst, tokens + (t_us - ts) * rate / 1e6)
  ts = t_us
end
local prev_us = tonumber(redis.call('HGET', KEYS[3], 't:' .. member))
local carry = tonumber(redis.call('HGET', KEYS[3], 'c:' .. member)) or 0
local dt = first
if prev_us ~= nil then
  dt = 0
  if t_us > prev_us then dt = math.min(t_us - prev_us, horizon) end
end
local room = share * horizon / 1e6 - held
if room < 0 then room = 0 end
local spare = 0
if tokens > reserve then spare = (tokens - reserve) * share / rate end
local want = math.min(carry + share * dt / 1e6 + spare, room)
local g = math.floor(math.min(want, tokens))
if g < 0 then g = 0 end
carry = want - g
if carry < 0 then carry = 0 end
tokens = tokens - g
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%d', ts), 'rate', string.format('%.17g', rate), 'burst', string.format('%.17g', burst))
redis.call('HSET', KEYS[3], 't:' .. member, string.format('%d', t_us), 'c:' .. member, string.format('%.17g', carry))
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], keep) end
return {g, n, string.format('%.17g', share), string.format('%.17g', tokens), string.format('%.17g', rate)}
)lua";

// What the script answered, checked.
struct LeaseReply {
  int64_t granted = 0;
  int64_t members = 0;
  double share = 0;        // tokens per second
  double bucket = 0;       // tokens left in the fleet's bucket
  double fleet_limit = 0;  // tokens per second: the lowest member's limit
};

// The script's arguments (quota.hpp fills them from its options).
struct LeaseArgs {
  std::vector<std::string> keys;  // 3
  std::string member;
  double demand = 0;  // tokens/s
  int64_t held = 0;
  double limit = 0;  // tokens/s, this instance's configured fleet limit
  double burst = 0;  // as set: 0 is limit x horizon
  absl::Duration member_ttl;
  absl::Duration horizon;
  absl::Duration first_credit;
  absl::Duration key_expiry;
};

inline std::string Micros(absl::Duration d) {
  return absl::StrCat(absl::ToInt64Microseconds(d));
}
inline std::string Decimal(double v) { return absl::StrFormat("%.17g", v); }

// Checks the script's reply against what it can possibly be: an array of
// the grant (an integer in [0, max_grant]), the member count (an integer
// >= 1), the share (a finite number in [0, limit]), the bucket (a finite
// number) and the fleet's limit (a finite number in (0, limit]: the lowest
// member's, this one's included). Anything else is INVALID_ARGUMENT naming the
// element and what it held: a proxy or a look-alike that answers garbage must
// not hand out tokens. An error reply becomes ErrorReplyStatus's status.
inline absl::StatusOr<LeaseReply> ParseLeaseReply(const redisReply& r,
                                                  absl::string_view where,
                                                  absl::string_view command,
                                                  int64_t max_grant,
                                                  double limit) {
  if (r.type == REDIS_REPLY_ERROR) {
    return ErrorReplyStatus(where, command, ReplyText(r));
  }
  const auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", command, ": the lease script answered ", what,
                     "; the lease is ignored"));
  };
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 5) {
    return bad(absl::StrCat(ReplyTypeName(r.type),
                            r.type == REDIS_REPLY_ARRAY
                                ? absl::StrCat(" of ", r.elements, " elements")
                                : "",
                            ", expected an array of 5 (grant, members, share, "
                            "bucket, fleet limit)"));
  }
  const redisReply* e[5] = {r.element[0], r.element[1], r.element[2],
                            r.element[3], r.element[4]};
  const char* names[5] = {"grant", "members", "share", "bucket", "fleet limit"};
  for (int i = 0; i < 5; ++i) {
    const int want = i < 2 ? REDIS_REPLY_INTEGER : REDIS_REPLY_STRING;
    if (e[i] == nullptr || e[i]->type != want) {
      return bad(
          absl::StrCat(names[i], " [", i, "] as ",
                       e[i] == nullptr ? "nothing" : ReplyTypeName(e[i]->type),
                       ", expected ", ReplyTypeName(want)));
    }
  }
  LeaseReply out;
  out.granted = e[0]->integer;
  out.members = e[1]->integer;
  if (out.granted < 0 || out.granted > max_grant) {
    return bad(absl::StrCat("a grant of ", out.granted, " tokens, outside [0, ",
                            max_grant, "]"));
  }
  if (out.members < 1) {
    return bad(absl::StrCat(out.members, " members, expected at least 1"));
  }
  const absl::string_view share = ReplyText(*e[2]);
  const absl::string_view bucket = ReplyText(*e[3]);
  if (!absl::SimpleAtod(share, &out.share) || !std::isfinite(out.share) ||
      out.share < 0 || out.share > limit * (1 + 1e-9)) {
    return bad(absl::StrCat("a share of '", Excerpt(share),
                            "' tokens/s, outside [0, ", limit, "]"));
  }
  if (!absl::SimpleAtod(bucket, &out.bucket) || !std::isfinite(out.bucket)) {
    return bad(absl::StrCat("a bucket of '", Excerpt(bucket),
                            "' tokens, not a finite number"));
  }
  const absl::string_view fleet = ReplyText(*e[4]);
  if (!absl::SimpleAtod(fleet, &out.fleet_limit) ||
      !std::isfinite(out.fleet_limit) || out.fleet_limit <= 0 ||
      out.fleet_limit > limit * (1 + 1e-9)) {
    return bad(absl::StrCat("a fleet limit of '", Excerpt(fleet),
                            "' tokens/s, outside (0, ", limit, "]"));
  }
  return out;
}

// Runs the script on `c`: EVALSHA with `*sha` when known, EVAL with the
// text when Redis answers NOSCRIPT (its script cache was flushed: a restart
// or a failover) or before the digest is known (then SCRIPT LOAD learns
// it, once). All of its commands end by `deadline` (RealClock; `timeout`
// names the bound in messages). Transport failures: UNAVAILABLE or
// DEADLINE_EXCEEDED with `*stale` as RunCommand sets it (`c` is then
// unusable).
inline absl::StatusOr<LeaseReply> RunLease(
    const ContextPtr& c, absl::string_view where, const LeaseArgs& a,
    absl::Time deadline, absl::Duration timeout, std::string* sha,
    int64_t max_grant, bool* stale) {
  if (sha->empty()) {
    absl::StatusOr<ReplyPtr> loaded =
        RunCommandBy(c, where, "SCRIPT LOAD", {"SCRIPT", "LOAD", kQuotaScript},
                     deadline, timeout, stale);
    if (!loaded.ok()) return loaded.status();
    if ((*loaded)->type == REDIS_REPLY_STRING)
      *sha = std::string(ReplyText(**loaded));
    // Anything else (a server that forbids SCRIPT): EVAL every time.
  }
  const std::string demand = Decimal(a.demand);
  const std::string held = absl::StrCat(a.held);
  const std::string limit = Decimal(a.limit);
  const std::string burst = Decimal(a.burst);
  const std::string ttl = Micros(a.member_ttl);
  const std::string horizon = Micros(a.horizon);
  const std::string first = Micros(a.first_credit);
  const std::string keep =
      absl::StrCat(absl::ToInt64Milliseconds(a.key_expiry));
  const auto run = [&](absl::string_view verb, absl::string_view body) {
    std::vector<absl::string_view> argv = {verb, body, "3"};
    for (const std::string& k : a.keys) argv.push_back(k);
    for (absl::string_view v :
         {absl::string_view(a.member), absl::string_view(demand),
          absl::string_view(held), absl::string_view(limit),
          absl::string_view(burst), absl::string_view(ttl),
          absl::string_view(horizon), absl::string_view(first),
          absl::string_view(keep)}) {
      argv.push_back(v);
    }
    return RunCommandBy(c, where, verb, argv, deadline, timeout, stale);
  };
  if (!sha->empty()) {
    absl::StatusOr<ReplyPtr> r = run("EVALSHA", *sha);
    if (!r.ok()) return r.status();
    if (!((*r)->type == REDIS_REPLY_ERROR &&
          absl::StartsWith(ReplyText(**r), "NOSCRIPT"))) {
      return ParseLeaseReply(**r, where, "EVALSHA", max_grant, a.limit);
    }
  }
  absl::StatusOr<ReplyPtr> r = run("EVAL", kQuotaScript);
  if (!r.ok()) return r.status();
  return ParseLeaseReply(**r, where, "EVAL", max_grant, a.limit);
}

// One connection for lease calls: made lazily (Connect), kept between
// calls, dropped after a transport failure (a late reply must not be read
// as the next one's). A call on a kept connection the server had closed
// (Redis restarted since) reconnects and runs once more; a timeout is never
// retried. The whole call (a connect's AUTH and SELECT, SCRIPT LOAD,
// EVALSHA, EVAL, the second run) shares one deadline: command_timeout from
// its start, or from the end of the TCP connect when it opens with one
// (that connect is bounded by connect_timeout). SIGPIPE is blocked on the
// calling thread while it runs. Thread-compatible: the quota's refresher is its
// only caller.
class LeaseConnection {
 public:
  LeaseConnection(ConnectParams params, LeaseArgs base, std::string where,
                  int64_t max_grant)
      : params_(std::move(params)),
        base_(std::move(base)),
        where_(std::move(where)),
        max_grant_(max_grant) {}

  absl::StatusOr<LeaseReply> Lease(const std::string& member, double demand,
                                   int64_t held) {
    ScopedSigpipeBlock no_sigpipe;
    LeaseArgs args = base_;
    args.member = member;
    args.demand = demand;
    args.held = held;
    absl::StatusOr<LeaseReply> r;
    absl::Time deadline = absl::InfiniteFuture();  // Connect sets it
    if (context_ != nullptr) {
      deadline = ::degrade::detail::SatAdd(
          ::degrade::RealClock::Instance().Now(), params_.command_timeout);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = context_ != nullptr;
      if (!reused) {
        absl::StatusOr<ContextPtr> c = Connect(params_, where_, &deadline);
        if (!c.ok()) return c.status();
        context_ = *std::move(c);
      }
      bool stale = false;
      r = RunLease(context_, where_, args, deadline, params_.command_timeout,
                   &sha_, max_grant_, &stale);
      if (r.ok() || !(absl::IsUnavailable(r.status()) ||
                      absl::IsDeadlineExceeded(r.status()))) {
        break;
      }
      context_.reset();
      if (!(reused && stale)) break;
    }
    return r;
  }

 private:
  const ConnectParams params_;
  const LeaseArgs base_;
  const std::string where_;
  const int64_t max_grant_;
  ContextPtr context_;
  std::string sha_;  // the script's digest, once SCRIPT LOAD told it
};

// The connection and the script's fixed arguments for a quota's options
// (redis::ClusterQuotaOptions; a template, since that type is declared
// after this header): keys "{dq:<name>}:bucket|members|state", a burst of
// limit x lease_horizon unless set, keys kept 10 member TTLs (>= 1 min).
template <typename Options>
ConnectParams QuotaConnectParams(const Options& o) {
  ConnectParams p;
  p.host = o.host;
  p.port = o.port;
  p.connect_timeout = o.connect_timeout;
  p.command_timeout = o.command_timeout;
  p.username = o.username;
  p.password = o.password;
  p.database = o.database;
  return p;
}
template <typename Options>
LeaseArgs QuotaLeaseArgs(const Options& o) {
  LeaseArgs a;
  const std::string prefix = absl::StrCat("{dq:", o.name, "}:");
  a.keys = {prefix + "bucket", prefix + "members", prefix + "state"};
  a.limit = o.limit_per_second;
  // As set: 0 is derived by the script from this instance's lease_horizon.
  a.burst = o.burst;
  a.member_ttl = o.member_ttl;
  a.horizon = o.lease_horizon;
  a.first_credit = o.refresh_period;
  a.key_expiry = std::max(absl::Minutes(1), 10 * o.member_ttl);
  return a;
}

}  // namespace redis
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_DETAIL_QUOTA_SCRIPT_HPP_
