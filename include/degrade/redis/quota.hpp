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
// lease call is bounded by command_timeout as a whole (every command of
// it shares one deadline; a reconnect adds connect_timeout) behind a
// breaker (3 transport failures open it for 2 s). Refreshes run on a
// steady line: a clock stepped back or at an infinity is no time passing,
// and the request path then spends at most what was held at the last good
// reading. Instances configured with different limits (a rollout of a new
// limit) share the bucket at the lowest one among the live instances, so
// the fleet never gets more than the lower; an instance that finds the
// fleet below its own limit counts it (limit_conflicts) and uses the
// fleet's limit for its fair share too. The share is
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
#include <random>
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
#include "degrade/redis/quota_options.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace redis {

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
    if (n > MaxGrant()) {
      // More than any lease can hold: never, and not demand either (one
      // such call would otherwise shrink every other instance's share).
      refused_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      return RateLimitedError(
          where_,
          absl::StrCat(n, " tokens is more than a lease can ever hold (",
                       MaxGrant(), ")"),
          absl::Milliseconds(-1));
    }
    asked_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    const QuotaMode m = mode_.load(std::memory_order_acquire);
    const int64_t now = RequestNanos();
    int64_t wait = 0;
    if (m == QuotaMode::kLeasing && options_.pace_leases &&
        !pacer_.TryTake(n, now, &wait,
                        detail::redis::LocalTokenBucket::Oversize::kWhenFull)) {
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
  //
  // Refreshes are scheduled on a steady line (detail::SteadyTime): a clock
  // stepped back, or at an infinity, is no time passing, so it neither
  // stalls the refresher for the length of the step nor ends it.
  void Poll() {
    detail::MutexLock lock(&refresh_mu_);
    const absl::Time reading = clock_->Now();
    const absl::Time now = steady_.Advance(reading);
    if (started_ && now < next_refresh_) return;
    RefreshLocked(now, reading).IgnoreError();  // kept in last_status()
  }
  // A lease call now, whether due or not; its status. Serialised.
  absl::Status RefreshNow() {
    detail::MutexLock lock(&refresh_mu_);
    const absl::Time reading = clock_->Now();
    return RefreshLocked(steady_.Advance(reading), reading);
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
    s.limit_conflicts = limit_conflicts_.load(std::memory_order_relaxed);
    s.fleet_limit_per_second = fleet_limit_.load(std::memory_order_relaxed);
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
    fleet_limit_.store(options_.limit_per_second, std::memory_order_relaxed);
    RequestNanos();  // the first good reading
    EnterFairShare();
    telemetry_ =
        detail::Attach(options_.metrics, &Telemetry::AttachComponent, view_);
  }

  static std::string DefaultMember() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    // A seed, not a deadline: the random device, mixed with the pid.
    std::random_device device;
    const uint64_t r =
        detail::SplitMix64((static_cast<uint64_t>(device()) << 32 | device()) ^
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
  // The clock for the request path, in Unix ns. A reading at an infinity
  // is no time passing: it reads as the last good one, and the buckets
  // then hand out at most what they held then. Kept to within a
  // millisecond ahead (the hot path writes about once a millisecond) and
  // exactly behind: a good reading above the latest one (a clock stepped
  // back since) would hand out the credit of the later time again.
  int64_t RequestNanos() {
    const absl::Time t = clock_->Now();
    const int64_t good = good_ns_.load(std::memory_order_relaxed);
    if (detail::SteadyTime::AtAnInfinity(t)) return good;
    const int64_t now = absl::ToUnixNanos(t);
    if (now < good || detail::SatSubNanos(now, good) > 1'000'000) {
      good_ns_.store(now, std::memory_order_relaxed);
    }
    return now;
  }
  // The shed status; a wait that may never end (a share of 0) becomes the
  // time to the next refresh, which may bring a share (at most a period
  // and its jitter away, whatever the clock did since it was scheduled).
  absl::Status Refuse(int64_t n, absl::string_view why, int64_t now,
                      int64_t wait) {
    refused_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    if (wait < 0) {
      // More than the local bucket can ever hold at this rate: do not
      // retry (a lease, once Redis answers, may still admit it).
      return RateLimitedError(
          where_, absl::StrCat(why, "; ", n, " tokens never fit it at once"),
          absl::Milliseconds(-1));
    }
    if (wait == Never()) {
      wait =
          std::min(detail::ElapsedNanosSince(
                       next_refresh_ns_.load(std::memory_order_relaxed), now),
                   absl::ToInt64Nanoseconds(options_.refresh_period * 1.2));
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
    // The fleet's limit as last seen: during a rollout of a lower limit an
    // old instance cut off from Redis keeps to the lower one.
    SetMode(
        QuotaMode::kFairShare,
        fleet_limit_.load(std::memory_order_relaxed) / static_cast<double>(n));
  }

  // `now` on the steady line; `reading` the clock's (for the request path's
  // retry-after hint).
  absl::Status RefreshLocked(absl::Time now, absl::Time reading)
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
    const absl::Duration wait = options_.refresh_period * jitter;
    next_refresh_ = detail::SatAdd(now, wait);
    if (!detail::SteadyTime::AtAnInfinity(reading)) {
      next_refresh_ns_.store(absl::ToUnixNanos(reading + wait),
                             std::memory_order_relaxed);
    }

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
      const double own = options_.limit_per_second;
      const double fleet = lease->fleet_limit_per_second > 0
                               ? lease->fleet_limit_per_second
                               : own;
      if (fleet < own * (1 - 1e-9)) {
        limit_conflicts_.fetch_add(1, std::memory_order_relaxed);
      }
      fleet_limit_.store(fleet, std::memory_order_relaxed);
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
    const double most = options_.limit_per_second * (1 + 1e-9);
    if (l.granted < 0 || l.granted > MaxGrant() || l.members < 1 ||
        !std::isfinite(l.share_per_second) || l.share_per_second < 0 ||
        l.share_per_second > most || !std::isfinite(l.fleet_limit_per_second) ||
        l.fleet_limit_per_second < 0 || l.fleet_limit_per_second > most) {
      return absl::InvalidArgumentError(absl::StrCat(
          where_, ": the lease makes no sense (granted ", l.granted,
          " of at most ", MaxGrant(), ", members ", l.members, ", share ",
          l.share_per_second, " and fleet limit ", l.fleet_limit_per_second,
          " of a limit of ", options_.limit_per_second, "); ignored"));
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
      return QuotaLease{got->granted, got->members, got->share,
                        got->fleet_limit};
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
  std::atomic<uint64_t> limit_conflicts_{0};
  std::atomic<double> fleet_limit_;  // the latest lease's, else our own
  std::atomic<int64_t> good_ns_{0};  // the last good reading, Unix ns
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
  detail::SteadyTime steady_ ABSL_GUARDED_BY(refresh_mu_);
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
