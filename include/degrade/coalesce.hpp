// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: coalesce.hpp
// -----------------------------------------------------------------------------
//
// Request coalescing: concurrent requests for one key share one backend
// call. When a user's features miss the cache on fifty requests at once, or
// a background refresh races the live path, the feature store should see
// one read for that user, not fifty; when the store is slow, fifty identical
// reads queued behind each other are what turns slow into down.
//
// The well-known form (Go's singleflight, nginx's proxy_cache_lock) has
// three traps, which this one avoids:
//
//  * One caller's deadline decides for all. Here the shared call runs on
//    the coalescer's executor, under no caller's budget; every caller, the
//    one that started the call included, waits only its own budget and then
//    returns DEADLINE_EXCEEDED, free to serve its fallback. The call goes
//    on, and its result still reaches the callers waiting when it ends and
//    the `on_complete` hook (which a fallback ladder uses to refresh its
//    last-good cache).
//  * Errors cached as values. Nothing is kept: the outcome goes to the
//    callers present when the call ends, then the key is forgotten, so the
//    next request after a failure starts a new call.
//  * Waiters handed the wrong outcome. Every waiter gets exactly the call's
//    outcome: its value, or its error (a throw becomes an UNKNOWN status,
//    detail/invoke.hpp), never a default value and never OK for a failure.
//
// The table of calls in flight is sharded and bounded (`max_inflight`): a
// request for a new key while it is full gets a call of its own, counted as
// uncoalesced, rather than waiting for room.
//
//   degrade::ThreadPool pool(8);
//   degrade::CoalescerSettings s;
//   s.name = "features";
//   s.executor = &pool;                         // nullptr: run inline
//   auto features = degrade::Coalescer<UserId, Features>::Create(
//       s, [cache](const UserId& u, const absl::StatusOr<Features>& r) {
//         if (r.ok()) cache->Put(u, *r);        // even after callers left
//       }).value();
//
//   auto read = [store, user] { return store->Get(user); };  // by value!
//   absl::StatusOr<Features> f =
//       features->Do(user, absl::Milliseconds(30), read);
//   if (!f.ok()) return StaleOrDefaults(user);  // DEADLINE_EXCEEDED included
//
// The call may run after every caller (and the coalescer) is gone, so it
// must own what it uses: capture by value or shared_ptr, never references
// to a caller's stack. Without an executor the first caller runs the call
// on its own thread, so its budget is the call's own timeout; later callers
// still wait only their own budgets.
//
// Lifetime: a call in flight owns the shared state it needs (shared_ptr),
// so destroying the coalescer never waits for a call and a late call ends
// harmlessly. The destructor does wait for an `on_complete` hook running
// at that moment, and no hook starts after it returns: a hook may use what
// the coalescer's owner destroys after the coalescer.
//
// Keys are hashed with std::hash by default, as BreakerFamily and
// KeyedRateLimiter do (the library links no Abseil hash); any hash whose
// result converts to uint64_t will do, since the shard is picked from a
// mixed copy of it.
//
// Metrics (docs/metrics.md): degrade_coalesce_total{coalescer, role},
// degrade_coalesce_timed_out_total, degrade_coalesce_failed_total,
// degrade_coalesce_completed_total, degrade_coalesce_call_seconds_total,
// degrade_coalesce_inflight, degrade_coalesce_max_inflight.

#ifndef DEGRADE_COALESCE_HPP_
#define DEGRADE_COALESCE_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/coalesce_stats.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/coalesce/coalesce_core.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The bounds CoalescerSettings are validated against.
inline constexpr std::size_t kMaxCoalesceInflight = std::size_t{1} << 24;
inline constexpr std::size_t kMaxCoalesceShards = 4096;
inline constexpr std::size_t kDefaultCoalesceShards =
    detail::kCoalesceDefaultShards;

// CoalescerSettings
//
// Thread-compatible: a plain value. `executor`, `clock` and `metrics` are
// not owned and must outlive the coalescer; the executor must also outlive
// every call it was given (a ThreadPool destroyed after the coalescer
// runs or drops them). Validate with ValidateCoalescerSettings().
struct CoalescerSettings {
  std::string name = "coalescer";
  // Keys with a shared call in flight at most: a request for another key
  // gets a call of its own (uncoalesced). In [1, 2^24].
  std::size_t max_inflight = 10000;
  // Locks the table is split over; 0 is kDefaultCoalesceShards. In
  // [0, 4096].
  std::size_t shards = 0;
  // Where shared calls run. nullptr: on the thread of the request that
  // starts them (inline).
  Executor* executor = nullptr;
  // Times the calls for stats (call_seconds); nullptr: RealClock. The
  // waits themselves are real time, on a condition variable.
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// ValidateCoalescerSettings(s)
//
// OK, or INVALID_ARGUMENT naming the coalescer, the setting at fault and
// its value. Pure; thread-safe.
inline absl::Status ValidateCoalescerSettings(const CoalescerSettings& s) {
  const detail::SettingOwner who("coalescer", s.name);
  if (s.max_inflight < 1 || s.max_inflight > kMaxCoalesceInflight) {
    return who.Invalid("max_inflight", s.max_inflight,
                       "must be in [1, 16777216] (2^24)");
  }
  if (s.shards > kMaxCoalesceShards) {
    return who.Invalid("shards", s.shards,
                       "must be in [0, 4096] (0 for the default, 64)");
  }
  return absl::OkStatus();
}

// CoalesceRole
//
// How a request took part: it started the shared call (kLeader), waited
// for one already running (kJoined), got a call of its own because the
// table was full (kUncoalesced), or was refused by the executor (kRefused:
// RESOURCE_EXHAUSTED, nothing run).
enum class CoalesceRole { kLeader, kJoined, kUncoalesced, kRefused };

inline absl::string_view CoalesceRoleName(CoalesceRole r) {
  switch (r) {
    case CoalesceRole::kLeader:
      return "leader";
    case CoalesceRole::kJoined:
      return "joined";
    case CoalesceRole::kUncoalesced:
      return "uncoalesced";
    case CoalesceRole::kRefused:
      return "refused";
  }
  return "unknown";
}

// CoalesceWaits
//
// How long a request waits, by the part it takes: the request that starts
// the shared call (or runs one of its own) and one that joins a call in
// flight may have different budgets, e.g. a fallback ladder's stage
// deadline for the first and a short wait for the rest. `run_if_full`:
// when the table is full, whether a request still runs a call of its own
// (a live miss should) or runs nothing (a background refresh need not:
// kUncoalesced with UNAVAILABLE). A plain value.
struct CoalesceWaits {
  absl::Duration leader = absl::ZeroDuration();
  absl::Duration joined = absl::ZeroDuration();
  bool run_if_full = true;
};

// Coalesced<V>
//
// What DoWithRole() returns: the request's result, its role, and whether
// it gave up at its own budget (`result` is then DEADLINE_EXCEEDED from
// the coalescer, as opposed to a DEADLINE_EXCEEDED the call returned).
// A plain value.
template <typename V>
struct Coalesced {
  absl::StatusOr<V> result;
  CoalesceRole role = CoalesceRole::kLeader;
  bool timed_out = false;
};

// Coalescer<K, V, Hash, Eq>
//
// One shared call per key in flight. K must be copyable (a call keeps its
// key) and V copy-constructible (every waiter gets its own copy); Hash and
// Eq must not throw. A call is a callable returning V or
// absl::StatusOr<V>; it may throw (the outcome is then an UNKNOWN status
// that IsCallableException recognises).
//
// Thread-safe: Do() and the readers may be called from any thread at once.
// Neither copyable nor movable. REQUIRES for destruction: no Do() in
// progress, and not from inside its own on_complete hook.
template <typename K, typename V, typename Hash = std::hash<K>,
          typename Eq = std::equal_to<K>>
class Coalescer final {
  static_assert(!std::is_void_v<V>, "degrade: Coalescer needs a value type");
  static_assert(std::is_copy_constructible_v<V>,
                "degrade: every waiter gets a copy of the value");
  static_assert(std::is_copy_constructible_v<K>,
                "degrade: a call keeps a copy of its key");

 public:
  using Result = absl::StatusOr<V>;
  // Called once per call that ran (shared or uncoalesced) with its key and
  // outcome, on the thread that ran it, after the waiters have it and with
  // no lock held: it may call Do(), for this key too. Not called for a call
  // the executor refused. Anything it throws is swallowed.
  using OnComplete = std::function<void(const K&, const Result&)>;

  // Create(settings, on_complete)
  //
  // The coalescer, or INVALID_ARGUMENT (ValidateCoalescerSettings).
  // Thread-safe.
  static absl::StatusOr<std::unique_ptr<Coalescer>> Create(
      CoalescerSettings settings, OnComplete on_complete = nullptr) {
    absl::Status st = ValidateCoalescerSettings(settings);
    if (!st.ok()) return st;
    return std::unique_ptr<Coalescer>(
        new Coalescer(std::move(settings), std::move(on_complete)));
  }

  Coalescer(const Coalescer&) = delete;
  Coalescer& operator=(const Coalescer&) = delete;

  // Detaches from the telemetry, then waits for an on_complete hook that is
  // running; calls still in flight end later without running the hook.
  ~Coalescer() {
    telemetry_.reset();
    core_->Close();
  }

  // Do(key, wait, call)
  //
  // `call()`'s outcome, shared with every concurrent request for `key`:
  // if a call for `key` is in flight, waits for it; otherwise starts one
  // (on the executor, or inline without one). Waits at most `wait` (zero
  // or negative: not at all; InfiniteDuration: until the call ends) and
  // then returns DEADLINE_EXCEEDED, leaving the call running; a request
  // that starts the call inline waits for it whatever `wait` is. With an
  // executor, a zero wait starts the call (a background refresh whose
  // result reaches on_complete) and returns at once. RESOURCE_EXHAUSTED if
  // the executor refuses the call. `call` is not run unless this request
  // starts it. With an executor `call` must be copyable (it travels in a
  // std::function) and own what it uses. Thread-safe. REQUIRES: `call`
  // must not wait for `key` on this coalescer (it would wait for itself
  // until its budget runs out).
  template <typename F>
  Result Do(const K& key, absl::Duration wait, F call) {
    return DoWithRole(key, wait, std::move(call)).result;
  }

  // Do(key, deadline, call): the same, waiting until `deadline` at most
  // (its remaining() when the request starts to wait).
  template <typename F>
  Result Do(const K& key, const Deadline& deadline, F call) {
    return DoWithRole(key, deadline.remaining(), std::move(call)).result;
  }

  // DoWithRole(key, wait, call): Do() that also says how the request took
  // part and whether it gave up waiting.
  template <typename F>
  Coalesced<V> DoWithRole(const K& key, absl::Duration wait, F call) {
    return DoWithRole(key, CoalesceWaits{wait, wait, true}, std::move(call));
  }
  // DoWithRole(key, waits, call): the same, waiting by role (see
  // CoalesceWaits).
  template <typename F>
  Coalesced<V> DoWithRole(const K& key, const CoalesceWaits& waits, F call);

  // Join(key, wait)
  //
  // Waits up to `wait` for the call in flight for `key`, if there is one,
  // and returns its outcome (role kJoined, or timed out); nullopt, with
  // nothing registered or run, when no call for `key` is in flight.
  // Thread-safe.
  std::optional<Coalesced<V>> Join(const K& key, absl::Duration wait) {
    std::shared_ptr<Call> shared;
    if (core_->Register(key, &shared, /*join_only=*/true) !=
        Core::Registration::kJoined) {
      return std::nullopt;
    }
    core_->Count(Core::Counter::kJoined);
    return Wait(shared, wait, CoalesceRole::kJoined);
  }

  // Keys with a shared call in flight now. Thread-safe.
  std::size_t inflight() const { return core_->inflight(); }
  // Whether shared calls run on an executor (else inline, on the thread
  // of the request that starts them). Thread-safe.
  bool has_executor() const { return executor_ != nullptr; }
  // Totals since creation, and what is in flight now. Thread-safe.
  CoalesceStats stats() const { return core_->stats(); }
  const std::string& name() const { return core_->name(); }

 private:
  using Core = detail::CoalesceCore<K, V, Hash, Eq>;
  using Call = typename Core::Call;

  Coalescer(CoalescerSettings s, OnComplete on_complete)
      : executor_(s.executor),
        core_(std::make_shared<Core>(s, std::move(on_complete))) {
    telemetry_ = detail::Attach(s.metrics, &Telemetry::AttachComponent, view_);
  }

  Coalesced<V> Wait(const std::shared_ptr<Call>& call, absl::Duration wait,
                    CoalesceRole role);

  Executor* const executor_;
  const std::shared_ptr<Core> core_;
  const detail::OwnerView<Coalescer, CoalesceStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last
};

// ---- Implementation details ----

template <typename K, typename V, typename Hash, typename Eq>
template <typename F>
Coalesced<V> Coalescer<K, V, Hash, Eq>::DoWithRole(const K& key,
                                                   const CoalesceWaits& waits,
                                                   F call) {
  using Counter = typename Core::Counter;
  std::shared_ptr<Call> shared;
  CoalesceRole role = CoalesceRole::kUncoalesced;
  switch (core_->Register(key, &shared)) {
    case Core::Registration::kJoined:
      core_->Count(Counter::kJoined);
      return Wait(shared, waits.joined, CoalesceRole::kJoined);
    case Core::Registration::kLeader:
      role = CoalesceRole::kLeader;
      break;
    case Core::Registration::kFull:
      if (!waits.run_if_full) {
        core_->Count(Counter::kUncoalesced);
        return Coalesced<V>{
            Result(absl::UnavailableError(absl::StrCat(
                "coalescer '", core_->name(), "': the table of calls in ",
                "flight is full; this request runs no call of its own"))),
            CoalesceRole::kUncoalesced, false};
      }
      shared = std::make_shared<Call>();
      break;
  }
  const absl::Duration wait = waits.leader;
  const bool registered = role == CoalesceRole::kLeader;
  if (executor_ == nullptr) {
    core_->Count(registered ? Counter::kLeaders : Counter::kUncoalesced);
    return Coalesced<V>{core_->Run(key, call, shared, registered, true), role,
                        false};
  }
  // A Submit() that throws is a refusal with its cause, as in
  // CallWithTimeout: the call is not run on this thread instead, since the
  // executor is there to keep a call that may hang off the caller's budget.
  std::optional<std::string> thrown;
  const bool queued = detail::InvokeOr(
      [&] {
        return executor_->Submit([core = core_, shared, key,
                                  call = std::move(call),
                                  registered]() mutable {
          (void)core->Run(key, call, shared, registered, false);
        });
      },
      [&thrown](absl::string_view what) {
        thrown.emplace(what);
        return false;
      });
  if (!queued) {
    Result refusal = core_->Refuse(key, shared, registered, thrown);
    return Coalesced<V>{std::move(refusal), CoalesceRole::kRefused, false};
  }
  core_->Count(registered ? Counter::kLeaders : Counter::kUncoalesced);
  return Wait(shared, wait, role);
}

template <typename K, typename V, typename Hash, typename Eq>
Coalesced<V> Coalescer<K, V, Hash, Eq>::Wait(const std::shared_ptr<Call>& call,
                                             absl::Duration wait,
                                             CoalesceRole role) {
  std::optional<Result> outcome = call->Await(wait);
  if (outcome.has_value())
    return Coalesced<V>{*std::move(outcome), role, false};
  core_->Count(Core::Counter::kTimedOut);
  return Coalesced<V>{
      Result(absl::DeadlineExceededError(absl::StrCat(
          "coalescer '", core_->name(), "': no result within this request's ",
          "wait of ", absl::FormatDuration(wait),
          "; the shared call goes on and its result reaches the requests ",
          "then waiting and on_complete"))),
      role, true};
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_COALESCE_HPP_
