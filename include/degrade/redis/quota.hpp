// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: redis/quota.hpp
// -----------------------------------------------------------------------------
//
// A fleet-wide rate limit shared through Redis, without Redis on the request
// path. "No more than 2,000 feature-store reads a second from the whole
// fleet": every instance holds a `ClusterQuota`; a background thread leases
// tokens in batches from the fleet's token bucket in Redis (one Lua script
// run per refresh period per instance), and requests spend the lease from
// an atomic counter. `TryAcquire` never blocks and never touches Redis.
//
//   degrade::redis::ClusterQuotaOptions o;
//   o.name = "feature_store";          // keys {dq:feature_store}:*
//   o.limit_per_second = 2000;         // for the whole fleet
//   o.expected_members = 20;           // fair share before Redis answers
//   o.host = "10.0.0.7";
//   auto quota = degrade::redis::ClusterQuota::Create(o);
//   if (!quota.ok()) return quota.status();     // INVALID_ARGUMENT
//   if (absl::Status s = (*quota)->Start(); !s.ok()) return s;
//   ...
//   absl::Status admit = (*quota)->TryAcquire();  // RateLimitedError
//   if (!admit.ok()) return admit;     // retry-after: degrade::ShedRetryAfter
//
// Why "ClusterQuota": it is the fleet-wide sibling of a local rate limiter
// (the name says the budget belongs to the cluster, not the process), and
// Sentinel calls the same idea cluster flow control.
//
// Modes (the `degrade_quota_mode` gauge; stats().mode):
//
//   leasing     the latest refresh got a lease: requests spend what Redis
//               granted (tokens left the fleet's bucket when granted, so the
//               fleet is never granted more than the limit)
//   grace       refreshes are failing and the last lease is younger than
//               lease_horizon + grace: requests spend what is held, then the
//               last share's rate through a local token bucket
//   fair_share  no lease for longer than that (or none yet): the limit
//               divided by the last known number of instances
//               (`expected_members` before any lease), through the local
//               bucket. Never the global number on each instance.
//
// Back to leasing at the first refresh that works. Refreshes come every
// `refresh_period` stretched by 0..20% jitter, never shortened: at most 2
// lease calls in any second at the default 500 ms, after an outage too. A
// lease call is bounded by command_timeout as a whole (detail/command.hpp)
// behind a breaker (3 transport failures open it for 2 s). The share is
// proportional to each instance's demand (detail/quota_script.hpp says
// why); docs/redis.md has the whole story and the failure table.

// Needs hiredis and the CMake target `degrade::redis`; the core never
// includes this header. Nothing here throws.
//
// Thread safety: TryAcquire, stats(), mode() and the accessors are
// thread-safe and lock-free or take no lock held across I/O; Start/Stop are
// thread-safe; Poll/RefreshNow are serialised with the refresher.

#ifndef DEGRADE_REDIS_QUOTA_HPP_
#define DEGRADE_REDIS_QUOTA_HPP_

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/quota_stats.hpp"
#include "degrade/redis/detail/quota_script.hpp"
#include "degrade/redis/detail/token_bucket.hpp"
#include "degrade/redis/hot_list_source.hpp"
#include "degrade/status.hpp"
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
// Every instance of a quota must use the same name, limit and durations.
struct ClusterQuotaOptions {
  // The quota's name: its Redis keys ({dq:<name>}:bucket, :members, :state)
  // and its metrics label. 1..200 bytes, no NUL.
  std::string name;
  // The fleet-wide limit, tokens per second. Finite, > 0.
  double limit_per_second = 0;
  // The fleet's bucket holds at most this many tokens; 0 means
  // limit_per_second x lease_horizon. Finite, >= 0.
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

// ClusterQuota
//
// One instance's side of a fleet-wide quota; see the file comment. Made by
// Create (Redis) or CreateWithLeaser (any store). Neither copyable nor
// movable. Stop() (or the destructor) ends the refresher.
class ClusterQuota {
 public:
  static absl::StatusOr<std::unique_ptr<ClusterQuota>> Create(
      ClusterQuotaOptions options) {
    return CreateWithLeaser(std::move(options), nullptr);
  }
  // With `leaser` instead of Redis (null: Redis per the options).
  static absl::StatusOr<std::unique_ptr<ClusterQuota>> CreateWithLeaser(
      ClusterQuotaOptions options, QuotaLeaser leaser) {
    if (absl::Status s = ValidateClusterQuotaOptions(options); !s.ok()) {
      return s;
    }
    return std::unique_ptr<ClusterQuota>(
        new ClusterQuota(std::move(options), std::move(leaser)));
  }

  ClusterQuota(const ClusterQuota&) = delete;
  ClusterQuota& operator=(const ClusterQuota&) = delete;
  ~ClusterQuota() { Stop(); }

  // Starts the refresher (a lease call at once, then every period).
  // RESOURCE_EXHAUSTED when no thread could start. Thread-safe.
  absl::Status Start() {
    const absl::Duration tick =
        std::max(absl::Milliseconds(1), options_.refresh_period / 20);
    return worker_.TryRestart(tick, [this] { Poll(); });
  }
  // Stops the refresher, waiting at most for a lease call in progress.
  void Stop() { worker_.Stop(); }

  // TryAcquire(n)
  //
  // Takes `n` tokens: OK, or the RateLimitedError (IsShed, IsRateLimited;
  // WithFallback tags it rate_limited) naming the quota and
  // the mode, with a retry-after hint (the next refresh when leasing; when
  // the local bucket has them otherwise). Never blocks, never touches
  // Redis. n == 0 is OK; n < 0 is INVALID_ARGUMENT. Thread-safe.
  absl::Status TryAcquire(int64_t n = 1) {
    if (n <= 0) {
      if (n == 0) return absl::OkStatus();
      return absl::InvalidArgumentError(
          absl::StrCat(where_, ": TryAcquire(", n, "): n must be >= 0"));
    }
    asked_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    const QuotaMode m = mode_.load(std::memory_order_acquire);
    const int64_t now = absl::ToUnixNanos(clock_->Now());
    int64_t wait = 0;
    if (m == QuotaMode::kLeasing && options_.pace_leases &&
        !pacer_.TryTake(n, now, &wait)) {
      return Refuse(n, "the lease is paced over its period", now, wait);
    }
    if (m != QuotaMode::kFairShare && TakeLease(n)) return Admit(n);
    if (m == QuotaMode::kLeasing) {
      return Refuse(n, "the fleet lease is spent", now, Never());
    }
    if (local_.TryTake(n, now, &wait)) return Admit(n);
    return Refuse(n,
                  m == QuotaMode::kGrace
                      ? "Redis is not answering and the last share is spent"
                      : "the fair share (limit / instances) is spent",
                  now, wait);
  }

  // Poll()
  //
  // One turn of the refresher: a lease call if one is due. What the
  // background thread runs; call it yourself (with a FakeClock) instead of
  // Start(). Serialised with RefreshNow.
  void Poll() {
    detail::MutexLock lock(&refresh_mu_);
    const absl::Time now = clock_->Now();
    if (started_ && now < next_refresh_) return;
    RefreshLocked(now).IgnoreError();  // kept in last_status()
  }
  // A lease call now, whether due or not; its status. Serialised.
  absl::Status RefreshNow() {
    detail::MutexLock lock(&refresh_mu_);
    return RefreshLocked(clock_->Now());
  }

  QuotaMode mode() const { return mode_.load(std::memory_order_acquire); }
  ClusterQuotaStats stats() const {
    ClusterQuotaStats s;
    s.mode = mode();
    s.limit_per_second = options_.limit_per_second;
    s.share_per_second = rate_.load(std::memory_order_relaxed);
    s.members = members_.load(std::memory_order_relaxed);
    s.held = held_.load(std::memory_order_relaxed);
    s.leased = leased_.load(std::memory_order_relaxed);
    s.admitted = admitted_.load(std::memory_order_relaxed);
    s.refused = refused_.load(std::memory_order_relaxed);
    s.round_trips = round_trips_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    return s;
  }
  // The status of the latest refresh (OK before any). Thread-safe.
  absl::Status last_status() const {
    detail::MutexLock lock(&status_mu_);
    return last_status_;
  }
  const std::string& name() const { return options_.name; }
  const std::string& member() const { return member_; }
  const ClusterQuotaOptions& options() const { return options_; }

 private:
  ClusterQuota(ClusterQuotaOptions options, QuotaLeaser leaser)
      : options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock
                                         : &RealClock::Instance()),
        member_(options_.member_id.empty() ? DefaultMember()
                                           : options_.member_id),
        where_(absl::StrCat("redis cluster quota '",
                            detail::redis::Excerpt(options_.name), "'")),
        breaker_(BreakerFor(options_, clock_)),
        leaser_(leaser != nullptr ? std::move(leaser) : RedisLeaser()),
        rng_(options_.jitter_seed != 0 ? options_.jitter_seed
                                       : detail::StableHash(member_)) {
    members_.store(options_.expected_members, std::memory_order_relaxed);
    EnterFairShare();
    telemetry_ =
        detail::Attach(options_.metrics, &Telemetry::AttachComponent, view_);
  }

  static std::string DefaultMember() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    const uint64_t r =
        detail::SplitMix64(
            static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^
            (static_cast<uint64_t>(getpid()) << 32))
            .Next();
    return absl::StrCat(host, "/", getpid(), "/", absl::Hex(r));
  }
  static BreakerSettings BreakerFor(const ClusterQuotaOptions& o,
                                    const Clock* clock) {
    BreakerSettings s = o.breaker;
    if (s.name.empty()) s.name = absl::StrCat("redis quota ", o.name);
    if (s.clock == nullptr) s.clock = clock;
    return s;
  }

  static int64_t Never() { return detail::redis::LocalTokenBucket::kNever; }
  // The shed status; a wait that may never end (a share of 0) becomes the
  // time to the next refresh, which may bring a share.
  absl::Status Refuse(int64_t n, absl::string_view why, int64_t now,
                      int64_t wait) {
    refused_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    if (wait == Never()) {
      wait = detail::ElapsedNanosSince(
          next_refresh_ns_.load(std::memory_order_relaxed), now);
    }
    return RateLimitedError(
        where_, why, std::max(absl::Milliseconds(1), absl::Nanoseconds(wait)));
  }
  absl::Status Admit(int64_t n) {
    admitted_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    return absl::OkStatus();
  }
  bool TakeLease(int64_t n) {
    int64_t held = held_.load(std::memory_order_relaxed);
    while (held >= n) {
      if (held_.compare_exchange_weak(held, held - n,
                                      std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  double Seconds(absl::Duration d) const { return absl::ToDoubleSeconds(d); }
  int64_t MaxGrant() const {
    const double cap =
        options_.limit_per_second * Seconds(options_.lease_horizon);
    return static_cast<int64_t>(std::ceil(std::min(cap, 9e15))) + 1;
  }

  void SetMode(QuotaMode m, double rate) {
    // The rate before the mode: a request that sees the new mode finds
    // the bucket already at the new rate.
    local_.SetRate(rate,
                   std::max(1.0, rate * Seconds(options_.refresh_period)));
    if (options_.pace_leases) {
      // Spend what is held over about one period, and never slower than
      // the share: a lease that piled up (a demand that fell, a start
      // alone) drains instead of lingering as a reserve.
      const double held = static_cast<double>(held_.load());
      const double pace =
          1.1 * std::max(rate, held / Seconds(options_.refresh_period));
      pacer_.SetRate(pace, std::max(1.0, pace * 0.02));
    }
    rate_.store(rate, std::memory_order_relaxed);
    mode_.store(m, std::memory_order_release);
  }
  void EnterFairShare() {
    held_.store(0, std::memory_order_relaxed);  // the lease has lapsed
    const int64_t n = std::max<int64_t>(1, members_.load());
    SetMode(QuotaMode::kFairShare,
            options_.limit_per_second / static_cast<double>(n));
  }

  absl::Status RefreshLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(refresh_mu_) {
    // Demand: tokens asked since the last refresh, smoothed over two.
    const uint64_t asked = asked_.exchange(0, std::memory_order_relaxed);
    const double span =
        started_ ? Seconds(detail::ElapsedSince(now, last_refresh_)) : 0.0;
    if (span > 0) {
      const double rate = static_cast<double>(asked) / span;
      demand_ = demand_measured_ ? 0.5 * demand_ + 0.5 * rate : rate;
      demand_measured_ = true;
    }
    last_refresh_ = now;
    started_ = true;
    const double jitter = 1.0 + 0.2 * rng_.NextUnit();
    next_refresh_ = detail::SatAdd(now, options_.refresh_period * jitter);
    next_refresh_ns_.store(absl::ToUnixNanos(next_refresh_),
                           std::memory_order_relaxed);

    QuotaLeaseRequest req{member_, demand_,
                          held_.load(std::memory_order_relaxed)};
    absl::StatusOr<QuotaLease> lease = breaker_.Execute([&] {
      round_trips_.fetch_add(1, std::memory_order_relaxed);
      absl::StatusOr<QuotaLease> got = leaser_(req);
      if (got.ok()) {
        absl::Status bad = Check(*got);
        if (!bad.ok()) return absl::StatusOr<QuotaLease>(bad);
      }
      return got;
    });
    absl::Status status = lease.status();
    if (lease.ok()) {
      held_.fetch_add(lease->granted, std::memory_order_relaxed);
      leased_.fetch_add(static_cast<uint64_t>(lease->granted),
                        std::memory_order_relaxed);
      members_.store(lease->members, std::memory_order_relaxed);
      last_lease_ = now;
      leased_once_ = true;
      SetMode(QuotaMode::kLeasing, lease->share_per_second);
    } else {
      errors_.fetch_add(1, std::memory_order_relaxed);
      const bool young =
          leased_once_ && detail::ElapsedSince(now, last_lease_) <=
                              options_.lease_horizon + options_.grace;
      if (young) {
        if (mode() == QuotaMode::kLeasing) {
          SetMode(QuotaMode::kGrace, rate_.load(std::memory_order_relaxed));
        }
      } else if (mode() != QuotaMode::kFairShare) {
        EnterFairShare();
      }
    }
    detail::MutexLock lock(&status_mu_);
    last_status_ = status;
    return status;
  }

  // A lease that cannot be true is refused whole.
  absl::Status Check(const QuotaLease& l) const {
    if (l.granted < 0 || l.granted > MaxGrant() || l.members < 1 ||
        !std::isfinite(l.share_per_second) || l.share_per_second < 0 ||
        l.share_per_second > options_.limit_per_second * (1 + 1e-9)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where_, ": the lease makes no sense (granted ", l.granted,
          " of at most ", MaxGrant(), ", members ", l.members, ", share ",
          l.share_per_second, " of a limit of ", options_.limit_per_second,
          "); ignored"));
    }
    return absl::OkStatus();
  }

  // The Redis leaser: one connection, kept between calls, reconnected
  // lazily; a call on a connection the server had closed is retried once.
  QuotaLeaser RedisLeaser() {
    auto conn = std::make_shared<detail::redis::LeaseConnection>(
        detail::redis::QuotaConnectParams(options_),
        detail::redis::QuotaLeaseArgs(options_),
        absl::StrCat(where_, " at redis ", options_.host, ":", options_.port,
                     "/", options_.database),
        MaxGrant());
    return [conn](const QuotaLeaseRequest& r) -> absl::StatusOr<QuotaLease> {
      absl::StatusOr<detail::redis::LeaseReply> got =
          conn->Lease(r.member, r.demand_per_second, r.held);
      if (!got.ok()) return got.status();
      return QuotaLease{got->granted, got->members, got->share};
    };
  }

  const ClusterQuotaOptions options_;
  const Clock* const clock_;
  const std::string member_;
  const std::string where_;
  CircuitBreaker<QuotaLease> breaker_;
  const QuotaLeaser leaser_;

  // The request path's state: lock-free.
  std::atomic<QuotaMode> mode_{QuotaMode::kFairShare};
  std::atomic<int64_t> held_{0};
  std::atomic<double> rate_{0};
  std::atomic<int64_t> members_{0};
  std::atomic<int64_t> next_refresh_ns_{0};
  std::atomic<uint64_t> asked_{0};
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> leased_{0};
  std::atomic<uint64_t> round_trips_{0};
  std::atomic<uint64_t> errors_{0};
  detail::redis::LocalTokenBucket local_;
  detail::redis::LocalTokenBucket pacer_;  // leasing, with pace_leases

  // The refresher's state.
  detail::Mutex refresh_mu_;
  bool started_ ABSL_GUARDED_BY(refresh_mu_) = false;
  bool leased_once_ ABSL_GUARDED_BY(refresh_mu_) = false;
  bool demand_measured_ ABSL_GUARDED_BY(refresh_mu_) = false;
  double demand_ ABSL_GUARDED_BY(refresh_mu_) = 0;
  absl::Time last_refresh_ ABSL_GUARDED_BY(refresh_mu_);
  absl::Time next_refresh_ ABSL_GUARDED_BY(refresh_mu_);
  absl::Time last_lease_ ABSL_GUARDED_BY(refresh_mu_);
  detail::SplitMix64 rng_ ABSL_GUARDED_BY(refresh_mu_);

  mutable detail::Mutex status_mu_;
  absl::Status last_status_ ABSL_GUARDED_BY(status_mu_);

  const detail::OwnerView<ClusterQuota, ClusterQuotaStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
  // Last: stops (in its destructor) before anything the tick touches goes.
  detail::PeriodicWorker worker_;
};

}  // namespace redis
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_REDIS_QUOTA_HPP_
