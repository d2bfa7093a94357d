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

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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
#include "degrade/deadline.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/status_payload.hpp"
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
  // With a coalescer that runs calls on an executor: how long the request
  // that starts a call waits for it (the stage's budget; a `Get` given a
  // deadline waits at most until it). Inline, that request runs the call
  // itself. In [0, 1h].
  absl::Duration call_wait = absl::Seconds(1);
  // How long a request waits for a call another request for the same key
  // already made (only with a coalescer; never past a `Get`'s deadline).
  // In [0, 1h]; 0 = never wait, go down the ladder at once.
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

// True for the status a ladder gives a call whose value its `validate`
// rung refused (the value is neither cached nor served; the trace says
// `invalid`).
inline bool IsInvalidValue(const absl::Status& status) {
  return detail::HasReason(status, "ladder_invalid_value");
}

// Ladder<K, V>
//
// See the file comment. Built by `Create`; thread-safe.
template <typename K, typename V, typename Hash = absl::Hash<K>>
class Ladder {
 public:
  using Value = std::shared_ptr<const V>;
  using Cache = LastGoodCache<K, V, Hash>;
  using Shared = Coalescer<K, Value, Hash>;

  // What the ladder composes. Each must outlive the ladder; calls still
  // queued on a coalescer's executor when the ladder is destroyed do
  // nothing (the destructor waits for one running).
  struct Rungs {
    // Required: the dependency's breaker, and the cache of last good values.
    CircuitBreaker<V>* breaker = nullptr;
    Cache* cache = nullptr;
    // Optional: concurrent calls for one key share one (and the background
    // refreshes of stale-while-revalidate run on its executor).
    Shared* coalescer = nullptr;
    // Optional: after an outage, live calls come back at a rising rate.
    RecoveryRamp* ramp = nullptr;
    // Optional: a limit on the live calls, asked before each one, e.g. a
    // fleet-wide quota on the store (`[&] { return quota->Admit(); }` with
    // a `redis::ClusterQuota`, or a local `RateLimiter`). A refusal serves
    // the key's stale value, else its segment's or the global default,
    // tagged by the refusal (`rate_limited`); a call already in flight for
    // the key is joined instead. Must not throw.
    std::function<absl::Status()> admit;
    // Optional: the segment's default (null when there is none for it),
    // and the global default (null when none is loaded). Must not throw.
    std::function<Value(absl::string_view segment)> segment;
    std::function<Value()> global;
    // Optional: whether a value the call returned is fit to serve and keep
    // (not an empty vector, not NaNs). A refused value is a failure of the
    // call (the breaker counts it), is neither cached nor served, and the
    // request walks down the ladder tagged `invalid`. Must not throw.
    std::function<absl::Status(const V&)> validate;
  };

  static absl::StatusOr<std::unique_ptr<Ladder>> Create(LadderSettings settings,
                                                        Rungs rungs);

  Ladder(const Ladder&) = delete;
  Ladder& operator=(const Ladder&) = delete;
  // Waits for a call of this ladder that is running (on an executor); calls
  // that start later do nothing.
  ~Ladder();

  using Result = absl::StatusOr<StageResult<Value>>;

  // The value for `key`: fresh from `call` (no arguments, returns `V` or
  // `absl::StatusOr<V>`), else the highest rung that has one. The result
  // is an error only when every rung is empty (the call failed, nothing is
  // cached, no segment or global default): then the call's error.
  // `segment` picks the segment default; "" means none. With a coalescer
  // whose calls run on an executor, `call` runs there, possibly after this
  // request has gone down the ladder: it must own what it uses (capture by
  // value). `deadline`: no wait for a call goes past it.
  template <typename F>
  Result Get(const K& key, absl::string_view segment, const Deadline& deadline,
             F call);
  template <typename F>
  Result Get(const K& key, absl::string_view segment, F call) {
    return Get(key, segment, Deadline::In(absl::InfiniteDuration()),
               std::move(call));
  }
  template <typename F>
  Result Get(const K& key, F call) {
    return Get(key, absl::string_view(), Deadline::In(absl::InfiniteDuration()),
               std::move(call));
  }

  const std::string& name() const { return core_->settings.name; }
  LadderStats stats() const;

 private:
  // What a call running on an executor uses: shared with it, so a call
  // that outlives the ladder finds `alive` false and touches nothing else.
  struct Core {
    Core(LadderSettings s, Rungs r) : settings(std::move(s)), rungs(r) {}
    const LadderSettings settings;
    const Rungs rungs;
    detail::SharedMutex mu;
    bool alive ABSL_GUARDED_BY(mu) = true;

    std::atomic<uint64_t> fresh{0};
    std::array<std::atomic<uint64_t>, 4> stale{};
    std::atomic<uint64_t> segment{0};
    std::atomic<uint64_t> global{0};
    std::atomic<uint64_t> failed{0};
    std::atomic<uint64_t> store_calls{0};
    std::atomic<uint64_t> ramp_refused{0};
    std::atomic<uint64_t> limit_refused{0};
    std::atomic<uint64_t> cached_fresh{0};
    std::atomic<uint64_t> revalidations{0};
    std::array<std::atomic<uint64_t>, kStaleAgeBounds.size() + 1> age_buckets{};
    std::atomic<int64_t> age_sum_ms{0};
  };

  Ladder(LadderSettings settings, Rungs rungs);

  template <typename F>
  static auto Through(std::shared_ptr<Core> core, const K& key, F call);
  template <typename F>
  absl::StatusOr<Value> CallStore(const K& key, const Deadline& deadline,
                                  F call);
  template <typename F>
  void Revalidate(const K& key, F call);
  Result Stale(typename Cache::Lookup hit, DegradeReason reason);
  Result Down(const K& key, absl::string_view segment, DegradeReason reason,
              const absl::Status& failure);
  static void Add(std::atomic<uint64_t>& c) {
    c.fetch_add(1, std::memory_order_relaxed);
  }

  const std::shared_ptr<Core> core_;
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
  if (!in(s.call_wait, absl::Hours(1))) {
    return who.Invalid("call_wait", absl::FormatDuration(s.call_wait),
                       "must be in [0, 1h]");
  }
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
    : core_(std::make_shared<Core>(std::move(settings), std::move(rungs))) {
  telemetry_ = detail::Attach(core_->settings.metrics,
                              &Telemetry::AttachComponent, view_);
}

template <typename K, typename V, typename Hash>
Ladder<K, V, Hash>::~Ladder() {
  telemetry_.reset();
  detail::WriterLock l(&core_->mu);  // a running call holds a reader lock
  core_->alive = false;
}

template <typename K, typename V, typename Hash>
template <typename F>
auto Ladder<K, V, Hash>::Through(std::shared_ptr<Core> core, const K& key,
                                 F call) {
  // The store call as the coalescer shares it: through the breaker,
  // validated, written through to the cache on success, so even a call
  // whose waiters all left fills the cache for the next request. Errors are
  // never cached. It holds the core, not the ladder: run after the ladder
  // is gone, it does nothing.
  return [core = std::move(core), key,
          call = std::move(call)]() mutable -> absl::StatusOr<Value> {
    detail::ReaderLock l(&core->mu);
    if (!core->alive) {
      return absl::CancelledError(absl::StrCat(
          "ladder '", core->settings.name, "' was destroyed before the call"));
    }
    const Rungs& rungs = core->rungs;
    absl::StatusOr<V> r = rungs.breaker->Execute([&]() -> absl::StatusOr<V> {
      Add(core->store_calls);  // only the calls the breaker lets through
      absl::StatusOr<V> v = call();
      if (v.ok() && rungs.validate) {
        absl::Status fit = rungs.validate(*v);
        if (!fit.ok()) {
          return detail::WithReason(
              absl::Status(fit.code() == absl::StatusCode::kOk
                               ? absl::StatusCode::kInvalidArgument
                               : fit.code(),
                           absl::StrCat("ladder '", core->settings.name,
                                        "': the call's value is refused: ",
                                        fit.message())),
              "ladder_invalid_value");
        }
      }
      return v;
    });
    if (!r.ok()) return r.status();
    Value v = std::make_shared<const V>(*std::move(r));
    rungs.cache->Put(key, v);
    return v;
  };
}

template <typename K, typename V, typename Hash>
template <typename F>
absl::StatusOr<typename Ladder<K, V, Hash>::Value>
Ladder<K, V, Hash>::CallStore(const K& key, const Deadline& deadline, F call) {
  auto through = Through(core_, key, std::move(call));
  Shared* coalescer = core_->rungs.coalescer;
  if (coalescer == nullptr) return through();
  const absl::Duration left = deadline.remaining();
  CoalesceWaits waits;
  waits.leader = std::min(core_->settings.call_wait, left);
  waits.joined = std::min(core_->settings.coalesce_wait, left);
  return coalescer->DoWithRole(key, waits, std::move(through)).result;
}

template <typename K, typename V, typename Hash>
template <typename F>
void Ladder<K, V, Hash>::Revalidate(const K& key, F call) {
  // Waits for nothing: the call runs on the coalescer's executor (one per
  // key however many requests ask: a full table runs none rather than one
  // per request) and lands in the cache.
  CoalesceWaits waits;
  waits.run_if_full = false;
  const Coalesced<Value> c = core_->rungs.coalescer->DoWithRole(
      key, waits, Through(core_, key, std::move(call)));
  if (c.role == CoalesceRole::kLeader) Add(core_->revalidations);
}

template <typename K, typename V, typename Hash>
typename Ladder<K, V, Hash>::Result Ladder<K, V, Hash>::Stale(
    typename Cache::Lookup hit, DegradeReason reason) {
  auto r = StageResult<Value>::Stale(std::move(hit.value), core_->settings.name,
                                     reason, hit.age);
  Add(core_->stale[static_cast<std::size_t>(r.tier()) -
                   static_cast<std::size_t>(FallbackTier::kStale1m)]);
  const double seconds = absl::ToDoubleSeconds(hit.age);
  std::size_t b = 0;
  while (b < kStaleAgeBounds.size() && seconds > kStaleAgeBounds[b]) ++b;
  Add(core_->age_buckets[b]);
  const int64_t ms = absl::ToInt64Milliseconds(hit.age);
  core_->age_sum_ms.fetch_add(ms > 0 ? ms : 0, std::memory_order_relaxed);
  return r;
}

template <typename K, typename V, typename Hash>
typename Ladder<K, V, Hash>::Result Ladder<K, V, Hash>::Down(
    const K& key, absl::string_view segment, DegradeReason reason,
    const absl::Status& failure) {
  const Rungs& rungs = core_->rungs;
  auto hit = rungs.cache->FindStale(key);
  if (hit.value != nullptr) return Stale(std::move(hit), reason);
  const std::string& name = core_->settings.name;
  if (rungs.segment && !segment.empty()) {
    Value v = rungs.segment(segment);
    if (v != nullptr) {
      Add(core_->segment);
      return StageResult<Value>::Fallback(std::move(v), name, reason,
                                          FallbackTier::kSegment);
    }
  }
  if (rungs.global) {
    Value v = rungs.global();
    if (v != nullptr) {
      Add(core_->global);
      return StageResult<Value>::Fallback(std::move(v), name, reason,
                                          FallbackTier::kGlobal);
    }
  }
  Add(core_->failed);
  return failure.ok()
             ? absl::UnavailableError(absl::StrCat(
                   "ladder '", name, "': no rung has a value for this key"))
             : failure;
}

template <typename K, typename V, typename Hash>
template <typename F>
typename Ladder<K, V, Hash>::Result Ladder<K, V, Hash>::Get(
    const K& key, absl::string_view segment, const Deadline& deadline, F call) {
  const LadderSettings& settings = core_->settings;
  const Rungs& rungs = core_->rungs;
  // Asks the ramp, reading the breaker only then (no ramp, no reads). The
  // generation first: a ramp told "not closed" with a generation older
  // than a closed one it saw knows the reading is stale.
  const auto ramp_admits = [&rungs] {
    const uint64_t generation = rungs.breaker->generation();
    const bool closed = rungs.breaker->state() == State::kClosed;
    return rungs.ramp->Admit(closed, generation);
  };
  if (settings.fresh_for > absl::ZeroDuration()) {
    auto hit =
        rungs.cache->Find(key, settings.fresh_for + settings.revalidate_for);
    if (hit.value != nullptr) {
      if (hit.age <= settings.fresh_for) {
        Add(core_->cached_fresh);
        Add(core_->fresh);
        return StageResult<Value>::Fresh(std::move(hit.value));
      }
      // Stale while revalidating: served now, refreshed behind, unless the
      // recovery ramp or the admit rung has no room (then only served).
      // Tagged stale with no reason: nothing failed.
      if ((rungs.ramp == nullptr || ramp_admits()) &&
          (!rungs.admit || rungs.admit().ok())) {
        Revalidate(key, std::move(call));
      }
      return Stale(std::move(hit), DegradeReason::kNone);
    }
  }
  if (rungs.ramp != nullptr && !ramp_admits()) {
    // No room yet. A call for this key already in flight costs the store
    // nothing more: wait for it. Otherwise a key with its own value waits
    // on it, and a key with nothing cached calls anyway (charged to the
    // ramp), since a default would cost it more than the call costs the
    // store.
    if (rungs.coalescer != nullptr) {
      const absl::Duration wait =
          std::min(settings.coalesce_wait, deadline.remaining());
      if (std::optional<Coalesced<Value>> joined =
              rungs.coalescer->Join(key, wait)) {
        if (joined->result.ok() && *joined->result != nullptr) {
          Add(core_->fresh);
          return StageResult<Value>::Fresh(*std::move(joined->result));
        }
        const absl::Status failure = joined->result.status();
        return Down(key, segment,
                    IsInvalidValue(failure) ? DegradeReason::kInvalid
                                            : ReasonFromStatus(failure),
                    failure);
      }
    }
    auto hit = rungs.cache->FindStale(key);
    if (hit.value != nullptr) {
      Add(core_->ramp_refused);
      return Stale(std::move(hit), DegradeReason::kRateLimited);
    }
    rungs.ramp->Force();
  }
  if (rungs.admit) {
    const absl::Status refused = rungs.admit();
    if (!refused.ok()) {
      if (rungs.coalescer != nullptr) {
        const absl::Duration wait =
            std::min(settings.coalesce_wait, deadline.remaining());
        if (std::optional<Coalesced<Value>> joined =
                rungs.coalescer->Join(key, wait)) {
          if (joined->result.ok() && *joined->result != nullptr) {
            Add(core_->fresh);
            return StageResult<Value>::Fresh(*std::move(joined->result));
          }
        }
      }
      Add(core_->limit_refused);
      return Down(key, segment, ReasonFromStatus(refused), refused);
    }
  }
  absl::StatusOr<Value> live = CallStore(key, deadline, std::move(call));
  if (live.ok() && *live != nullptr) {
    Add(core_->fresh);
    return StageResult<Value>::Fresh(*std::move(live));
  }
  const absl::Status failure =
      live.ok() ? absl::InternalError("the call returned no value")
                : live.status();
  return Down(key, segment,
              IsInvalidValue(failure) ? DegradeReason::kInvalid
                                      : ReasonFromStatus(failure),
              failure);
}

template <typename K, typename V, typename Hash>
LadderStats Ladder<K, V, Hash>::stats() const {
  const auto get = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  const Core& c = *core_;
  LadderStats st;
  st.fresh = get(c.fresh);
  for (std::size_t i = 0; i < st.stale.size(); ++i)
    st.stale[i] = get(c.stale[i]);
  st.segment = get(c.segment);
  st.global = get(c.global);
  st.failed = get(c.failed);
  st.store_calls = get(c.store_calls);
  st.ramp_refused = get(c.ramp_refused);
  st.limit_refused = get(c.limit_refused);
  st.cached_fresh = get(c.cached_fresh);
  st.revalidations = get(c.revalidations);
  for (std::size_t i = 0; i < st.stale_age_buckets.size(); ++i) {
    st.stale_age_buckets[i] = get(c.age_buckets[i]);
  }
  st.stale_age_sum_seconds =
      static_cast<double>(c.age_sum_ms.load(std::memory_order_relaxed)) / 1000;
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_LADDER_HPP_
