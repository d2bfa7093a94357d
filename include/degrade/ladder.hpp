// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: ladder.hpp
// -----------------------------------------------------------------------------
//
// The last-known-good tier. When the feature store fails, the global
// average vector is the same for everyone: every user loses personalisation
// at once, including the ones whose features the store returned a minute
// ago. A `Ladder` keeps each key's last good value and walks down, rung by
// rung, only as far as it must:
//
//   fresh    the live call succeeded (through the breaker); the value is
//            written through to the cache. No tag.
//   stale    the call failed or was refused, or the recovery ramp had no
//            room (a key with nothing cached calls even then), and the
//            key's cached value is at most `stale_if_error` old (RFC 5861).
//            `is_stale()`; tag "features=open/stale-10m".
//   segment  nothing usable cached: the request's segment's average
//            (segment_defaults.hpp). `is_default()`; "features=open/segment".
//   global   no segment default: the global one (default_features.hpp).
//            `is_default()`; "features=open/global".
//
// and tells the ranker which rung it got (`StageResult::tier()`, and the
// trace's third part), so it can trust a ten-minute-old copy of a user's own
// features more than a population's average, and impression logs can tell
// them apart.
//
// The parts are separate components, each usable alone: `LastGoodCache`
// (stale_cache.hpp: bounded, sharded, scan-resistant), `Coalescer`
// (coalesce.hpp: concurrent misses share one call, each waiter keeps its
// own deadline), `RecoveryRamp` (recovery_ramp.hpp: after the breaker
// closes, live calls come back at a rising rate, the rest are served
// stale), the segment and global defaults. The ladder only composes them.
//
//   degrade::Ladder<UserId, Features>::Rungs rungs;
//   rungs.breaker = &feature_cb;              // CircuitBreaker<Features>
//   rungs.cache = cache.get();                // LastGoodCache<UserId, ...>
//   rungs.ramp = ramp.get();                  // optional
//   rungs.segment = [&](absl::string_view s) { return segments->Find(s); };
//   rungs.global = [&] { return defaults->snapshot(); };
//   auto ladder = degrade::Ladder<UserId, Features>::Create(settings, rungs);
//
//   absl::StatusOr<degrade::StageResult<std::shared_ptr<const Features>>> f =
//       (*ladder)->Get(user, SegmentOf(request),
//                      [&] { return feature_client.Get(user); });
//   ranker.Rank(*f->value(), f->tier());      // weight by rung
//
// Optional, off by default because features should be fresh whenever the
// store is up: `fresh_for` serves a cached value younger than it without a
// call (RFC 5861's max-age, Caffeine's refreshAfterWrite), and
// `revalidate_for` serves one older by at most that much while one
// background call per key refreshes it (stale-while-revalidate; needs a
// coalescer with an executor).
//
// Thread safety: `Ladder` is thread-safe when the callables given to it
// are. Nothing here throws; exceptions from the call are the breaker's.

#ifndef DEGRADE_LADDER_HPP_
#define DEGRADE_LADDER_HPP_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/coalesce.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/ladder_stats.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/stats_view.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// LadderSettings
//
// Validated by `Ladder::Create`; a bad field is INVALID_ARGUMENT naming the
// ladder, the field and the rule.
struct LadderSettings {
  // The stage's name: in the trace ("features=open/stale-10m") and in
  // metrics. Must be a valid stage name (`IsValidStageName`).
  std::string name = "features";
  // How long a request waits for a call another request for the same key
  // already made (only with a coalescer). In [0, 1h]; 0 = never wait, go
  // down the ladder at once.
  absl::Duration coalesce_wait = absl::Milliseconds(100);
  // Serve a cached value younger than this without calling (max-age). 0 =
  // off: every request calls while the store is up. In [0, 24h].
  absl::Duration fresh_for = absl::ZeroDuration();
  // Serve a cached value at most this much older than `fresh_for` without
  // waiting, and refresh it in the background, one call per key
  // (stale-while-revalidate). 0 = off; needs `fresh_for` > 0 and a
  // coalescer with an executor. In [0, 24h].
  absl::Duration revalidate_for = absl::ZeroDuration();
  // Time source; null means `RealClock`. Must outlive the ladder.
  const Clock* clock = nullptr;
  // Where it reports (`degrade_ladder_*`); null means the process default.
  Telemetry* metrics = nullptr;
};

// Ladder<K, V>
//
// See the file comment. Built by `Create`; thread-safe.
template <typename K, typename V, typename Hash = absl::Hash<K>>
class Ladder {
 public:
  using Value = std::shared_ptr<const V>;
  using Cache = LastGoodCache<K, V, Hash>;
  using Shared = Coalescer<K, Value, Hash>;

  // What the ladder composes. Each must outlive it.
  struct Rungs {
    // Required: the dependency's breaker, and the cache of last good values.
    CircuitBreaker<V>* breaker = nullptr;
    Cache* cache = nullptr;
    // Optional: concurrent calls for one key share one (and the background
    // refreshes of stale-while-revalidate run on its executor). Its calls
    // use the ladder and the rungs: an executor must have finished them
    // (a ThreadPool destroyed) before the ladder is destroyed.
    Shared* coalescer = nullptr;
    // Optional: after an outage, live calls come back at a rising rate.
    RecoveryRamp* ramp = nullptr;
    // Optional: the segment's default (null when there is none for it),
    // and the global default (null when none is loaded). Must not throw.
    std::function<Value(absl::string_view segment)> segment;
    std::function<Value()> global;
  };

  static absl::StatusOr<std::unique_ptr<Ladder>> Create(LadderSettings settings,
                                                        Rungs rungs);

  Ladder(const Ladder&) = delete;
  Ladder& operator=(const Ladder&) = delete;
  ~Ladder() { telemetry_.reset(); }

  using Result = absl::StatusOr<StageResult<Value>>;

  // The value for `key`: fresh from `call` (no arguments, returns `V` or
  // `absl::StatusOr<V>`), else the highest rung that has one. The result
  // is an error only when every rung is empty (the call failed, nothing is
  // cached, no segment or global default): then the call's error.
  // `segment` picks the segment default; "" means none. With a coalescer
  // whose calls run on an executor, `call` runs there, possibly after this
  // request has gone down the ladder: it must own what it uses (capture by
  // value).
  template <typename F>
  Result Get(const K& key, absl::string_view segment, F call);
  template <typename F>
  Result Get(const K& key, F call) {
    return Get(key, absl::string_view(), std::move(call));
  }

  const std::string& name() const { return settings_.name; }
  LadderStats stats() const;

 private:
  Ladder(LadderSettings settings, Rungs rungs);

  template <typename F>
  auto Through(const K& key, F call);
  template <typename F>
  absl::StatusOr<Value> CallStore(const K& key, F call);
  template <typename F>
  void Revalidate(const K& key, F call);
  Result Down(const K& key, absl::string_view segment, DegradeReason reason,
              const absl::Status& failure);
  void CountStale(absl::Duration age, FallbackTier tier);
  static void Add(std::atomic<uint64_t>& c) {
    c.fetch_add(1, std::memory_order_relaxed);
  }

  const LadderSettings settings_;
  const Rungs rungs_;
  const Clock* const clock_;

  std::atomic<uint64_t> fresh_{0};
  std::array<std::atomic<uint64_t>, 4> stale_{};
  std::atomic<uint64_t> segment_{0};
  std::atomic<uint64_t> global_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> store_calls_{0};
  std::atomic<uint64_t> ramp_refused_{0};
  std::atomic<uint64_t> cached_fresh_{0};
  std::atomic<uint64_t> revalidations_{0};
  std::array<std::atomic<uint64_t>, kStaleAgeBounds.size() + 1> age_buckets_{};
  std::atomic<int64_t> age_sum_ms_{0};

  const detail::OwnerView<Ladder, LadderStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation --------------------------------------------------------

template <typename K, typename V, typename Hash>
absl::StatusOr<std::unique_ptr<Ladder<K, V, Hash>>> Ladder<K, V, Hash>::Create(
    LadderSettings s, Rungs rungs) {
  const detail::SettingOwner who("ladder", s.name);
  if (absl::Status v = ValidateStageName(s.name); !v.ok()) {
    return who.Invalid("name", v.message());
  }
  const auto in = [](absl::Duration d, absl::Duration hi) {
    return d >= absl::ZeroDuration() && d <= hi;
  };
  if (!in(s.coalesce_wait, absl::Hours(1))) {
    return who.Invalid("coalesce_wait", absl::FormatDuration(s.coalesce_wait),
                       "must be in [0, 1h]");
  }
  if (!in(s.fresh_for, absl::Hours(24))) {
    return who.Invalid("fresh_for", absl::FormatDuration(s.fresh_for),
                       "must be in [0, 24h]");
  }
  if (!in(s.revalidate_for, absl::Hours(24))) {
    return who.Invalid("revalidate_for", absl::FormatDuration(s.revalidate_for),
                       "must be in [0, 24h]");
  }
  if (rungs.breaker == nullptr) {
    return who.Invalid("rungs.breaker", "is required");
  }
  if (rungs.cache == nullptr) return who.Invalid("rungs.cache", "is required");
  if (s.revalidate_for > absl::ZeroDuration()) {
    if (s.fresh_for == absl::ZeroDuration()) {
      return who.Invalid("revalidate_for",
                         "needs fresh_for > 0 (what is stale is what is "
                         "older than fresh_for)");
    }
    if (rungs.coalescer == nullptr || !rungs.coalescer->has_executor()) {
      return who.Invalid("revalidate_for",
                         "needs a coalescer with an executor to refresh in "
                         "the background");
    }
  }
  return std::unique_ptr<Ladder>(new Ladder(std::move(s), std::move(rungs)));
}

template <typename K, typename V, typename Hash>
Ladder<K, V, Hash>::Ladder(LadderSettings settings, Rungs rungs)
    : settings_(std::move(settings)),
      rungs_(std::move(rungs)),
      clock_(settings_.clock != nullptr ? settings_.clock
                                        : &RealClock::Instance()) {
  telemetry_ =
      detail::Attach(settings_.metrics, &Telemetry::AttachComponent, view_);
}

template <typename K, typename V, typename Hash>
template <typename F>
auto Ladder<K, V, Hash>::Through(const K& key, F call) {
  // The store call as the coalescer shares it: through the breaker, written
  // through to the cache on success, so even a call whose waiters all left
  // fills the cache for the next request. Errors are never cached.
  return
      [this, key, call = std::move(call)]() mutable -> absl::StatusOr<Value> {
        absl::StatusOr<V> r = rungs_.breaker->Execute([&]() {
          Add(store_calls_);  // only the calls the breaker lets through
          return call();
        });
        if (!r.ok()) return r.status();
        Value v = std::make_shared<const V>(*std::move(r));
        rungs_.cache->Put(key, v);
        return v;
      };
}

template <typename K, typename V, typename Hash>
template <typename F>
absl::StatusOr<typename Ladder<K, V, Hash>::Value>
Ladder<K, V, Hash>::CallStore(const K& key, F call) {
  auto through = Through(key, std::move(call));
  if (rungs_.coalescer == nullptr) return through();
  return rungs_.coalescer->Do(key, settings_.coalesce_wait, std::move(through));
}

template <typename K, typename V, typename Hash>
template <typename F>
void Ladder<K, V, Hash>::Revalidate(const K& key, F call) {
  Add(revalidations_);
  // Waits for nothing: the call runs on the coalescer's executor (one per
  // key however many requests ask) and lands in the cache.
  (void)rungs_.coalescer->Do(key, absl::ZeroDuration(),
                             Through(key, std::move(call)));
}

template <typename K, typename V, typename Hash>
void Ladder<K, V, Hash>::CountStale(absl::Duration age, FallbackTier tier) {
  Add(stale_[static_cast<std::size_t>(tier) -
             static_cast<std::size_t>(FallbackTier::kStale1m)]);
  const double seconds = absl::ToDoubleSeconds(age);
  std::size_t b = 0;
  while (b < kStaleAgeBounds.size() && seconds > kStaleAgeBounds[b]) ++b;
  Add(age_buckets_[b]);
  const int64_t ms = absl::ToInt64Milliseconds(age);
  age_sum_ms_.fetch_add(ms > 0 ? ms : 0, std::memory_order_relaxed);
}

template <typename K, typename V, typename Hash>
typename Ladder<K, V, Hash>::Result Ladder<K, V, Hash>::Down(
    const K& key, absl::string_view segment, DegradeReason reason,
    const absl::Status& failure) {
  auto hit = rungs_.cache->FindStale(key);
  if (hit.value != nullptr) {
    auto r = StageResult<Value>::Stale(std::move(hit.value), settings_.name,
                                       reason, hit.age);
    CountStale(hit.age, r.tier());
    return r;
  }
  if (rungs_.segment && !segment.empty()) {
    Value v = rungs_.segment(segment);
    if (v != nullptr) {
      Add(segment_);
      return StageResult<Value>::Fallback(std::move(v), settings_.name, reason,
                                          FallbackTier::kSegment);
    }
  }
  if (rungs_.global) {
    Value v = rungs_.global();
    if (v != nullptr) {
      Add(global_);
      return StageResult<Value>::Fallback(std::move(v), settings_.name, reason,
                                          FallbackTier::kGlobal);
    }
  }
  Add(failed_);
  return failure.ok() ? absl::UnavailableError(
                            absl::StrCat("ladder '", settings_.name,
                                         "': no rung has a value for this key"))
                      : failure;
}

template <typename K, typename V, typename Hash>
template <typename F>
typename Ladder<K, V, Hash>::Result Ladder<K, V, Hash>::Get(
    const K& key, absl::string_view segment, F call) {
  if (settings_.fresh_for > absl::ZeroDuration()) {
    auto hit =
        rungs_.cache->Find(key, settings_.fresh_for + settings_.revalidate_for);
    if (hit.value != nullptr) {
      if (hit.age <= settings_.fresh_for) {
        Add(cached_fresh_);
        Add(fresh_);
        return StageResult<Value>::Fresh(std::move(hit.value));
      }
      // Stale while revalidating: served now, refreshed behind. Tagged
      // stale with no reason: nothing failed.
      Revalidate(key, std::move(call));
      auto r = StageResult<Value>::Stale(std::move(hit.value), settings_.name,
                                         DegradeReason::kNone, hit.age);
      CountStale(hit.age, r.tier());
      return r;
    }
  }
  if (rungs_.ramp != nullptr) {
    const bool closed = rungs_.breaker->state() == State::kClosed;
    if (!rungs_.ramp->Admit(closed)) {
      // No room yet: a key with its own value waits on it; a key with
      // nothing cached calls anyway (charged to the ramp), since a default
      // would cost it more than the call costs the store.
      auto hit = rungs_.cache->FindStale(key);
      if (hit.value != nullptr) {
        Add(ramp_refused_);
        auto r =
            StageResult<Value>::Stale(std::move(hit.value), settings_.name,
                                      DegradeReason::kRateLimited, hit.age);
        CountStale(hit.age, r.tier());
        return r;
      }
      rungs_.ramp->Force();
    }
  }
  absl::StatusOr<Value> live = CallStore(key, std::move(call));
  if (live.ok() && *live != nullptr) {
    Add(fresh_);
    return StageResult<Value>::Fresh(*std::move(live));
  }
  const absl::Status failure =
      live.ok() ? absl::InternalError("the call returned no value")
                : live.status();
  return Down(key, segment, ReasonFromStatus(failure), failure);
}

template <typename K, typename V, typename Hash>
LadderStats Ladder<K, V, Hash>::stats() const {
  const auto get = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  LadderStats st;
  st.fresh = get(fresh_);
  for (std::size_t i = 0; i < st.stale.size(); ++i)
    st.stale[i] = get(stale_[i]);
  st.segment = get(segment_);
  st.global = get(global_);
  st.failed = get(failed_);
  st.store_calls = get(store_calls_);
  st.ramp_refused = get(ramp_refused_);
  st.cached_fresh = get(cached_fresh_);
  st.revalidations = get(revalidations_);
  for (std::size_t i = 0; i < st.stale_age_buckets.size(); ++i) {
    st.stale_age_buckets[i] = get(age_buckets_[i]);
  }
  st.stale_age_sum_seconds =
      static_cast<double>(age_sum_ms_.load(std::memory_order_relaxed)) / 1000;
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_LADDER_HPP_
