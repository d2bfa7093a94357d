// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: rate_limit.hpp
// -----------------------------------------------------------------------------
//
// A local rate limit: no more than `rate` permits per second through this
// process, with `burst` allowed at once after a quiet spell. It protects a
// dependency that cannot protect itself (a feature store, a GPU pool) or
// keeps a caller inside its quota; for a limit per user or per item see
// keyed_rate_limit.hpp.
//
// The state is one atomic word, the theoretical arrival time of the generic
// cell rate algorithm (detail/rate_limit/gcra.hpp): an admission is one
// compare-and-swap, a refusal only reads it (it writes nothing, so a flood
// of refused callers does not take the line from the admitted ones), and
// nothing on the request path locks, sleeps or allocates. A refusal says
// exactly when the same request would be admitted: `RateLimitedError` (a
// `ShedError`) with that retry-after, which retries respect; put in front
// of a breaker (`WithFallback(limiter, breaker, ...)`, with_fallback.hpp)
// a refusal never reaches it and is served by Plan B tagged
// `rate_limited`. The limiter never sleeps for the caller: `Reserve()`
// returns how long to wait, and the caller waits, schedules, or gives up
// by its own deadline.
//
//   degrade::RateLimitSettings s;
//   s.name = "feature_store";
//   s.rate = 500;                      // permits per second
//   s.burst = 50;                      // at once, after a quiet spell
//   auto limiter = degrade::RateLimiter::Create(s).value();
//
//   if (!limiter->TryAcquire()) return ServeDefaults();
//   absl::Status st = limiter->Admit(4);  // 4 permits, or ShedError with
//   if (degrade::IsShed(st)) ...          // the exact retry-after
//
// Options: warm-up (after a quiet spell the rate ramps from rate /
// cold_factor to rate over `warm_up`, Guava's warming-up and Sentinel's cold
// factor), pacing (`max_wait`: `Reserve()` admits a request that would wait
// at most that long, and returns the wait, Sentinel's rate-limiter
// behaviour), per-thread credit (`credit_per_thread`: threads take permits
// in batches and spend them without touching shared memory, for limiters
// many threads call at once). docs/rate-limits.md maps Sentinel's,
// resilience4j's, Guava's and Envoy's settings to these.

#ifndef DEGRADE_RATE_LIMIT_HPP_
#define DEGRADE_RATE_LIMIT_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/rate_limit/gcra.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/rate_limit_stats.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The bounds every rate limit is validated against: a rate between one an
// hour and 1e9 a second (beyond, one compare-and-swap per permit is the
// limit anyway); a burst of at most 1e9 permits and at most 30 days' worth
// of the rate; waits and warm-ups of at most an hour.
inline constexpr double kMinRateLimit = 1.0 / 3600.0;
inline constexpr double kMaxRateLimit = 1e9;
inline constexpr int64_t kMaxRateLimitBurst = 1'000'000'000;
inline constexpr absl::Duration kMaxRateLimitBurstTime = absl::Hours(24 * 30);
inline constexpr absl::Duration kMaxRateLimitWait = absl::Hours(1);
// The tolerance (burst / rate) at and above which the limiter reads the
// coarse clock (a few ns against about 25; its tick is at most ~10 ms):
// bunching at a tick is then at most half the burst.
inline constexpr absl::Duration kCoarseRateLimitTolerance =
    absl::Milliseconds(20);

// RateLimitSettings
//
// Thread-compatible: a plain value. `clock` and `metrics` are not owned and
// must outlive the limiter. Validate with ValidateRateLimitSettings().
struct RateLimitSettings {
  std::string name = "rate_limit";
  // Permits per second. Mandatory: in [1/3600, 1e9], finite.
  double rate = 0;
  // Permits admitted at once by a limiter that has been quiet for
  // burst / rate; a request of more than `burst` permits is never admitted
  // without a wait (TryAcquire, Admit) and is refused as "do not retry".
  // In [1, 1e9], and burst / rate at most 30 days. 1 spaces requests
  // evenly (no burst).
  int64_t burst = 1;
  // 0 (the default) is off. Otherwise, after a quiet spell of at least
  // `warm_up` the rate starts at rate / cold_factor and rises linearly with
  // the time since the first admission after the spell, reaching `rate`
  // after `warm_up`. A new limiter starts cold. In [1ms, 1h]: a shorter
  // warm-up is a mistake (Guava #2730: it limited nothing).
  absl::Duration warm_up = absl::ZeroDuration();
  // How much slower the cold rate is: in (1, 100]. Read only with warm_up;
  // 3 as Guava and Sentinel.
  double cold_factor = 3;
  // Pacing: the longest wait `Reserve()` hands out; 0 (the default)
  // refuses anything that would wait. In [0, 1h]. With burst = 1 this is
  // Sentinel's rate-limiter behaviour (evenly spaced, queued up to
  // max_wait), without the sleep.
  absl::Duration max_wait = absl::ZeroDuration();
  // Per-thread credit, for limiters many threads call at once: 0 (the
  // default) is off. Otherwise a thread that runs out takes
  // `credit_per_thread` permits from the shared state at once, when they
  // are there, and spends them from a word only it writes: TryAcquire and
  // Admit of at most that many permits cost a few ns and the shared word
  // is written once per batch. The price: permits a thread holds are not
  // available to the others (the limiter may admit up to threads x
  // credit_per_thread fewer at a time), and a thread spends them when it
  // calls again, possibly later than taken (over any window it may admit up
  // to that many more than rate x window + burst). A refusal's retry-after
  // stays exact for the shared state. Reserve() never uses credit. In
  // [0, burst].
  int64_t credit_per_thread = 0;
  // true: always read the precise clock. By default the coarse one is read
  // when burst / rate >= 20 ms (kCoarseRateLimitTolerance): the average
  // rate stays exact, and admissions may bunch at the clock's tick.
  bool precise_clock = false;
  // The clock (nullptr: RealClock); must not read an infinite time when the
  // limiter is created. Later, a reading at an infinity is no time passing
  // (the limiter decides at its latest good reading), and a step back is
  // absorbed (detail/rate_limit/gcra.hpp). A custom clock stepped back and
  // then forward again reads as the forward step passing, by design: a
  // correction cannot be told from a quiet spell, so a limiter in debt may
  // find its bucket full, forgiving at most one burst plus max_wait.
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// ValidateRateLimitSettings(s)
//
// OK, or INVALID_ARGUMENT naming the limiter, the first setting at fault
// and its value ("rate limiter 'x': setting 'rate' = 0 is invalid: ...").
// Any value may be passed, NaN and infinities included. Pure; thread-safe.
inline absl::Status ValidateRateLimitSettings(const RateLimitSettings& s);

// RateLimiter
//
// Thread-safe; neither copyable nor movable. Every function may be called
// from any thread at any time; none blocks, sleeps, throws, or allocates
// except to build a refusal's status.
class RateLimiter final {
 public:
  // Create(settings)
  //
  // INVALID_ARGUMENT (ValidateRateLimitSettings), FAILED_PRECONDITION when
  // the clock reads an infinite time, or a limiter with its full burst
  // (cold, when warming up).
  static absl::StatusOr<std::unique_ptr<RateLimiter>> Create(
      RateLimitSettings s);

  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;
  ~RateLimiter() { telemetry_.reset(); }  // first: its view reads us

  // TryAcquire(n)
  //
  // Takes `n` permits if they are there now, without waiting, and returns
  // true; else changes nothing and returns false (n < 1 included). The
  // second form also sets `*retry_after` on a refusal: how long until the
  // same request would be admitted if nothing else came (exact, rounded up
  // to the nanosecond; while warming up an upper bound), or a negative
  // duration when it never would (n > burst). With credit_per_thread, a
  // request of at most that many permits is served from the calling
  // thread's credit first (a refusal's retry-after is then the shared
  // state's). REQUIRES: retry_after is not null.
  bool TryAcquire(int64_t n = 1) { return Take(n, nullptr) >= 0; }
  bool TryAcquire(int64_t n, absl::Duration* retry_after);

  // Admit(n)
  //
  // TryAcquire(n) as a status: OK, or RateLimitedError (RESOURCE_EXHAUSTED,
  // IsShed, IsRateLimited) with the retry-after above ("do not retry" when it
  // never would be), or INVALID_ARGUMENT for n < 1.
  absl::Status Admit(int64_t n = 1);

  // Reserve(n)
  //
  // Takes `n` permits now and returns how long the caller must wait before
  // using them (zero when they are there now), if that is at most
  // `max_wait`; else ShedError as Admit() words it (the retry-after is when
  // the wait would fit) and nothing changes. The limiter never sleeps:
  // waiting, scheduling or abandoning is the caller's. With max_wait = 0 it
  // is Admit() returning zero.
  absl::StatusOr<absl::Duration> Reserve(int64_t n = 1);

  // GiveBack(n)
  //
  // Returns `n` permits taken and not used (a reservation abandoned), at
  // the stable rate's price, so a caller that gave up does not spend the
  // limit. The returned credit never exceeds a full bucket; giving back
  // more than was taken admits more than the rate. No-op for n < 1.
  void GiveBack(int64_t n);

  const std::string& name() const { return name_; }
  const RateLimitSettings& settings() const { return settings_; }

  // A snapshot of the totals and the current rate. Thread-safe; exact once
  // the callers are done.
  RateLimitStats stats() const;

  // The rate allowed now, in permits per second (below the configured rate
  // while warming up).
  double current_rate() const;

 private:
  explicit RateLimiter(RateLimitSettings s);

  // Admitted requests, refused ones, and the permits admitted requests took
  // beyond one each (a request of one permit, the usual, adds one count).
  // and a thread's credit: on a cache line per thread shard.
  struct alignas(detail::kCacheLine) Shard {
    std::atomic<int64_t> credit{0};
    detail::ShardCounter admitted;
    detail::ShardCounter refused;
    detail::ShardCounter extra_permits;
  };

  // The decision for n permits accepting a wait up to `max_wait` ticks:
  // the wait (>= 0) when admitted, kNever when refused; then `*retry`
  // (unless null) is the retry-after in ticks, or -1 for "never".
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  int64_t Decide(int64_t n, int64_t max_wait, int64_t* retry);
  // Decide, counted; with credit for TryAcquire and Admit (no wait).
  int64_t Take(int64_t n, int64_t* retry, int64_t max_wait = 0);
  bool TakeCredit(int64_t n, int64_t* retry);
  void Count(int64_t admitted_permits) {
    Shard& s = shards_[detail::ThreadShardIndex()];
    if (admitted_permits == 0) {
      s.refused.Add(1);
      return;
    }
    s.admitted.Add(1);
    if (admitted_permits > 1) {
      s.extra_permits.Add(static_cast<uint64_t>(admitted_permits - 1));
    }
  }
  int64_t Interval(int64_t now, int64_t ramp_start) const;
  absl::Status Refusal(int64_t n, int64_t retry) const;

  const std::string name_;
  const RateLimitSettings settings_;
  const int64_t interval_;   // ticks per permit at the stable rate
  const int64_t tolerance_;  // burst x interval
  const int64_t floor_gap_;  // the coldest tolerance + max_wait
  const int64_t max_wait_;   // settings' max_wait in ticks
  const int64_t warm_up_;    // ticks; 0 = off
  const double cold_factor_;
  const detail::GcraRamp ramp_;
  const int64_t credit_;  // credit_per_thread
  const detail::GcraLine line_;
  // The TAT and the start of the current warm-up ramp, together on a line
  // of their own: the only words a call writes.
  alignas(detail::kCacheLine) std::atomic<int64_t> tat_;
  std::atomic<int64_t> ramp_start_;
  const std::unique_ptr<Shard[]> shards_;
  const detail::OwnerView<RateLimiter, RateLimitStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last
};

// ---- Implementation details ----

namespace detail {

// The rate and burst rules every rate limit shares (a keyed limiter's
// default and its overrides too), worded for `who`.
inline absl::Status ValidateRateAndBurst(const SettingOwner& who, double rate,
                                         int64_t burst) {
  if (!(rate >= kMinRateLimit && rate <= kMaxRateLimit)) {
    return who.Invalid("rate", rate,
                       "must be a number of permits per second in [1/3600 "
                       "(one an hour), 1e9]");
  }
  if (burst < 1 || burst > kMaxRateLimitBurst) {
    return who.Invalid("burst", burst, "must be in [1, 1e9]");
  }
  if (static_cast<double>(burst) / rate >
      absl::ToDoubleSeconds(kMaxRateLimitBurstTime)) {
    return who.Invalid("burst", burst,
                       absl::StrCat("must take at most 30 days to replenish "
                                    "at the rate (",
                                    rate, "/s)"));
  }
  return absl::OkStatus();
}

}  // namespace detail

inline absl::Status ValidateRateLimitSettings(const RateLimitSettings& s) {
  const detail::SettingOwner who("rate limiter", s.name);
  if (absl::Status v = detail::ValidateRateAndBurst(who, s.rate, s.burst);
      !v.ok()) {
    return v;
  }
  const auto bad_duration = [](absl::Duration d, absl::Duration hi) {
    return d < absl::ZeroDuration() || d > hi;
  };
  if (s.warm_up != absl::ZeroDuration() &&
      (s.warm_up < absl::Milliseconds(1) ||
       bad_duration(s.warm_up, kMaxRateLimitWait))) {
    return who.Invalid("warm_up", absl::FormatDuration(s.warm_up),
                       "must be 0 (off) or in [1ms, 1h]");
  }
  if (!(s.cold_factor > 1 && s.cold_factor <= 100)) {
    return who.Invalid("cold_factor", s.cold_factor, "must be in (1, 100]");
  }
  if (s.credit_per_thread < 0 || s.credit_per_thread > s.burst) {
    return who.Invalid(
        "credit_per_thread", s.credit_per_thread,
        absl::StrCat("must be in [0, burst] = [0, ", s.burst, "]"));
  }
  if (bad_duration(s.max_wait, kMaxRateLimitWait)) {
    return who.Invalid("max_wait", absl::FormatDuration(s.max_wait),
                       "must be in [0, 1h]");
  }
  return absl::OkStatus();
}

inline absl::StatusOr<std::unique_ptr<RateLimiter>> RateLimiter::Create(
    RateLimitSettings s) {
  if (absl::Status v = ValidateRateLimitSettings(s); !v.ok()) return v;
  const Clock* clock = s.clock != nullptr ? s.clock : &RealClock::Instance();
  if (detail::SteadyTime::AtAnInfinity(clock->Now())) {
    return absl::FailedPreconditionError(
        absl::StrCat("rate limiter '", detail::Printable(s.name),
                     "': the clock reads an infinite time"));
  }
  s.clock = clock;
  return std::unique_ptr<RateLimiter>(new RateLimiter(std::move(s)));
}

inline RateLimiter::RateLimiter(RateLimitSettings s)
    : name_(detail::Printable(s.name)),
      settings_(std::move(s)),
      interval_(detail::GcraInterval(settings_.rate)),
      tolerance_(detail::SatMulNanos(interval_, settings_.burst)),
      floor_gap_(detail::SatAddNanos(
          detail::SatMulNanos(settings_.warm_up == absl::ZeroDuration()
                                  ? interval_
                                  : static_cast<int64_t>(std::ceil(
                                        static_cast<double>(interval_) *
                                        settings_.cold_factor)),
                              settings_.burst),
          detail::GcraTicks(settings_.max_wait))),
      max_wait_(detail::GcraTicks(settings_.max_wait)),
      warm_up_(detail::GcraTicks(settings_.warm_up)),
      cold_factor_(settings_.cold_factor),
      ramp_{interval_, warm_up_, cold_factor_},
      credit_(settings_.credit_per_thread),
      line_(settings_.clock,
            !settings_.precise_clock &&
                settings_.burst >=
                    settings_.rate *
                        absl::ToDoubleSeconds(kCoarseRateLimitTolerance)),
      // A new limiter has its full burst; warming up, it has been quiet
      // for a warm-up, so its first admission starts the ramp.
      tat_(-warm_up_),
      ramp_start_(std::numeric_limits<int64_t>::min()),
      shards_(new Shard[detail::ShardArraySize()]) {
  telemetry_ =
      detail::Attach(settings_.metrics, &Telemetry::AttachComponent, view_);
}

inline int64_t RateLimiter::Interval(int64_t now, int64_t ramp_start) const {
  return ramp_.Interval(now, ramp_start);
}

inline int64_t RateLimiter::Decide(int64_t n, int64_t max_wait,
                                   int64_t* retry) {
  if (n < 1) {
    if (retry != nullptr) *retry = -1;
    return kNever;
  }
  const int64_t now = line_.Now(
      detail::SatSubNanos(tat_.load(std::memory_order_relaxed), floor_gap_));
  // Read again after the clock: under contention the word is then as fresh
  // as it can be when the compare-and-swap comes, which fails less often.
  int64_t tat = tat_.load(std::memory_order_relaxed);
  const int64_t cheapest =
      n == 1 ? interval_ : detail::SatMulNanos(interval_, n);
  for (;;) {
    // Another thread's admission may have moved the TAT past what our
    // reading allows; its reading was later than ours, so use the floor.
    const int64_t floor = detail::SatSubNanos(tat, floor_gap_);
    const int64_t t = now < floor ? floor : now;
    int64_t cost = cheapest;
    int64_t tolerance = tolerance_;
    bool new_ramp = false;
    if (warm_up_ != 0) {
      // Warming up, the interval is longer and the tolerance with it: the
      // burst is still `burst` permits, the rate is lower.
      new_ramp = detail::ElapsedNanosSince(t, tat) >= warm_up_;
      const int64_t interval = Interval(
          t, new_ramp ? t : ramp_start_.load(std::memory_order_relaxed));
      cost = detail::SatMulNanos(interval, n);
      tolerance = detail::SatMulNanos(interval, settings_.burst);
    }
    const detail::GcraStep step = detail::GcraDecide(
        tat, t, cost, cheapest > tolerance_ ? cheapest - tolerance_ : 0,
        tolerance, max_wait);
    if (!step.admit) {
      if (retry != nullptr) {
        *retry =
            warm_up_ != 0 && step.wait > 0
                ? ramp_.WarmingWait(tat, t, n, settings_.burst, tolerance_,
                                    max_wait, step.wait,
                                    ramp_start_.load(std::memory_order_relaxed),
                                    new_ramp)
                : step.wait;
      }
      return kNever;
    }
    if (tat_.compare_exchange_weak(tat, step.next, std::memory_order_relaxed,
                                   std::memory_order_relaxed)) {
      if (new_ramp) ramp_start_.store(t, std::memory_order_relaxed);
      return step.wait;
    }
    // Lost to another thread: let it finish with the line before trying
    // again, rather than pull the line back at once (two threads that
    // alternate on every call pay a transfer each; a short pause lets
    // the winner's next call find the line still its own).
    detail::CpuRelax(8);
  }
}

inline int64_t RateLimiter::Take(int64_t n, int64_t* retry, int64_t max_wait) {
  if (credit_ != 0 && max_wait == 0 && n >= 1 && n <= credit_) {
    return TakeCredit(n, retry) ? 0 : kNever;
  }
  const int64_t wait = Decide(n, max_wait, retry);
  Count(wait >= 0 ? n : 0);
  return wait;
}

inline bool RateLimiter::TakeCredit(int64_t n, int64_t* retry) {
  Shard& s = shards_[detail::ThreadShardIndex()];
  int64_t have = s.credit.load(std::memory_order_relaxed);
  if (detail::ThreadOwnsShard()) {
    if (have >= n) {
      s.credit.store(have - n, std::memory_order_relaxed);
      Count(n);
      return true;
    }
  } else {
    while (have >= n) {
      if (s.credit.compare_exchange_weak(have, have - n,
                                         std::memory_order_relaxed)) {
        Count(n);
        return true;
      }
    }
  }
  // Out of credit: this request and a new batch at once, if they are
  // there now; else this request alone, exactly as without credit.
  const int64_t batch = std::min(credit_, settings_.burst - n);
  if (batch > 0 && Decide(n + batch, 0, nullptr) >= 0) {
    s.credit.fetch_add(batch, std::memory_order_relaxed);
    Count(n);
    return true;
  }
  const bool admitted = Decide(n, 0, retry) >= 0;
  Count(admitted ? n : 0);
  return admitted;
}

inline bool RateLimiter::TryAcquire(int64_t n, absl::Duration* retry_after) {
  int64_t retry = 0;
  if (Take(n, &retry) >= 0) return true;
  *retry_after =
      retry < 0 ? absl::Milliseconds(-1) : detail::GcraDuration(retry);
  return false;
}

inline absl::Status RateLimiter::Refusal(int64_t n, int64_t retry) const {
  const std::string where = absl::StrCat("rate limiter '", name_, "'");
  if (n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": asked for ", n, " permits; must be >= 1"));
  }
  if (retry < 0) {
    return RateLimitedError(
        where,
        absl::StrCat(n,
                     " permits can never be admitted at once "
                     "(burst ",
                     settings_.burst, ")"),
        absl::Milliseconds(-1));
  }
  return RateLimitedError(where,
                          absl::StrCat("over ", settings_.rate, " permits/s"),
                          detail::GcraDuration(retry));
}

inline absl::Status RateLimiter::Admit(int64_t n) {
  int64_t retry = 0;
  if (Take(n, &retry) >= 0) return absl::OkStatus();
  return Refusal(n, retry);
}

inline absl::StatusOr<absl::Duration> RateLimiter::Reserve(int64_t n) {
  int64_t retry = 0;
  const int64_t wait = Take(n, &retry, max_wait_);
  if (wait >= 0) return detail::GcraDuration(wait);
  return Refusal(n, retry);
}

inline void RateLimiter::GiveBack(int64_t n) {
  if (n < 1) return;
  const int64_t credit = detail::SatMulNanos(interval_, n);
  int64_t tat = tat_.load(std::memory_order_relaxed);
  const int64_t now = line_.Now(detail::SatSubNanos(tat, floor_gap_));
  for (;;) {
    // Never below now: what is returned fills the bucket, not more.
    int64_t next = detail::SatSubNanos(tat, credit);
    if (next < now) next = now;
    if (next >= tat) return;
    if (tat_.compare_exchange_weak(tat, next, std::memory_order_relaxed)) {
      return;
    }
  }
}

inline double RateLimiter::current_rate() const {
  if (warm_up_ == 0) return settings_.rate;
  const int64_t tat = tat_.load(std::memory_order_relaxed);
  const int64_t now = line_.Peek();
  if (detail::ElapsedNanosSince(now, tat) >= warm_up_) {
    return settings_.rate / cold_factor_;  // the next admission starts cold
  }
  const int64_t interval =
      Interval(now, ramp_start_.load(std::memory_order_relaxed));
  return settings_.rate * static_cast<double>(interval_) /
         static_cast<double>(interval);
}

inline RateLimitStats RateLimiter::stats() const {
  RateLimitStats st;
  uint64_t extra = 0;
  for (std::size_t i = 0; i < detail::ShardArraySize(); ++i) {
    st.admitted += shards_[i].admitted.Load();
    st.refused += shards_[i].refused.Load();
    extra += shards_[i].extra_permits.Load();
  }
  st.admitted_permits = st.admitted + extra;
  st.rate = current_rate();
  st.configured_rate = settings_.rate;
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RATE_LIMIT_HPP_
