// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: circuit_breaker.hpp
// -----------------------------------------------------------------------------
//
// A circuit breaker stops calling a dependency that keeps failing, so that a
// sick feature/recall/rank service costs the caller a fast rejection (and a
// fallback) instead of a timeout, and gets room to recover.
//
// The semantics are gobreaker's, so a gobreaker user finds no surprise:
//
//   closed --ready_to_trip(counts) on a failure--> open
//   open   --`timeout` has passed, seen by the next call or state()-->
//   half-open half-open --`max_requests` consecutive successes--> closed
//   half-open --any failure--> open
//
// Every transition starts a new generation and clears `Counts`; in the closed
// state `Counts` is also cleared every `interval`. The outcome of a call that
// was admitted in an earlier generation is ignored. Expiry is strict, as in
// gobreaker: at exactly `timeout` after opening the breaker is still open.
//
// Beyond gobreaker: count- and time-based sliding windows feeding a failure
// rate and a slow-call rate, composable trip rules (`trip::`), exponential
// backoff of the open duration, a maximum wait in half-open, `ForceOpen()`,
// `Disable()` and `Reset()`, and exceptions thrown by the callable counted as
// failures and returned as a status.
//
//   degrade::BreakerSettings settings;
//   settings.name = "feature-service";
//   settings.timeout = absl::Seconds(10);
//   settings.ready_to_trip = degrade::trip::ConsecutiveFailures(5);
//   degrade::CircuitBreaker<Features> breaker(settings);
//
//   absl::StatusOr<Features> f = breaker.Execute([&] { return client.Get(); });
//   if (degrade::IsBreakerOpen(f.status())) { /* serve the default vector */ }
//
// Thread safety: every member of `CircuitBreaker` is thread-safe. A closed
// breaker's success path takes no lock, allocates nothing and, with default
// settings, reads no clock; failures, transitions and half-open calls take an
// internal lock. `on_state_change` runs after that lock is released, in
// transition order, never concurrently with itself, so it may query or even
// call the breaker.
//
// Under concurrency a call that races a transition may be attributed to
// either closed generation's `requests`; its outcome is counted only if it
// reports in the generation that admitted it. Half-open decisions use an
// exact per-generation ledger kept under the lock. Lifetime totals
// (`totals()`) are exact.

#ifndef DEGRADE_CIRCUIT_BREAKER_HPP_
#define DEGRADE_CIRCUIT_BREAKER_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/windows.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Trip rules: ready-made `ready_to_trip` predicates. They are evaluated on
// every failure and every slow call in the closed state.
namespace trip {

using Rule = std::function<bool(const Counts&)>;

// Trips when `n` failures in a row have been seen. gobreaker's default is
// "more than 5", that is `ConsecutiveFailures(6)`.
inline Rule ConsecutiveFailures(uint64_t n) {
  return [n](const Counts& c) { return c.consecutive_failures >= n; };
}

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` (0..1] of them failed.
inline Rule FailureRate(double rate, uint64_t minimum_calls) {
  return [rate, minimum_calls](const Counts& c) {
    return c.window_calls >= std::max<uint64_t>(minimum_calls, 1) &&
           c.failure_rate() >= rate;
  };
}

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` (0..1] of them were slower than `slow_call_duration`.
inline Rule SlowCallRate(double rate, uint64_t minimum_calls) {
  return [rate, minimum_calls](const Counts& c) {
    return c.window_calls >= std::max<uint64_t>(minimum_calls, 1) &&
           c.slow_call_rate() >= rate;
  };
}

// Trips when any of `rules` trips.
inline Rule AnyOf(std::vector<Rule> rules) {
  return [rules = std::move(rules)](const Counts& c) {
    for (const Rule& r : rules) {
      if (r && r(c)) return true;
    }
    return false;
  };
}

template <typename... Rules>
Rule AnyOf(Rule first, Rules... rest) {
  return AnyOf(std::vector<Rule>{std::move(first), Rule(std::move(rest))...});
}

}  // namespace trip

// BreakerSettings
//
// Configuration of one breaker; copied into it at construction and immutable
// afterwards. Zero values mean what they mean in gobreaker. Invalid values
// (negative durations, a non-finite or < 1 multiplier, a jitter outside
// [0, 1]) are reported by `ValidateBreakerSettings()`; the constructor, which
// cannot fail, replaces them with the defaults instead.
struct BreakerSettings {
  // Names the breaker in statuses, logs and callbacks.
  std::string name;
  // Calls admitted in half-open, and consecutive successes needed there to
  // close. 0 means 1.
  uint32_t max_requests = 0;
  // Closed-state period after which `Counts` are cleared. 0 means never.
  absl::Duration interval = absl::ZeroDuration();
  // How long the breaker stays open before trying half-open. 0 means 60 s;
  // `absl::InfiniteDuration()` keeps it open until `Reset()`.
  absl::Duration timeout = absl::ZeroDuration();
  // Called with the counts after each closed-state failure (and slow call);
  // returning true opens the breaker. Unset means "more than 5 consecutive
  // failures". Must not call back into this breaker. A throw means false.
  std::function<bool(const Counts&)> ready_to_trip;
  // Called once per state change, outside the breaker's lock (see the file
  // comment). A throw is swallowed.
  std::function<void(const std::string& name, State from, State to)>
      on_state_change;
  // The telemetry the breaker reports to (see telemetry.hpp): with a
  // MetricsRegistry, the degrade_breaker_* series and a rate-limited
  // `breaker_state_change` line per transition. nullptr means
  // DefaultTelemetry() (none unless SetDefaultTelemetry() was called);
  // NoTelemetry() means none even then. REQUIRES: outlives the breaker.
  Telemetry* metrics = nullptr;
  // Whether a callable's status is a success. Unset means `status.ok()`.
  // A throw means failure.
  std::function<bool(const absl::Status&)> is_successful;
  // Whether a status counts as neither success nor failure (a client-side
  // error such as INVALID_ARGUMENT, say). Checked first. Unset means never.
  // A throw means not excluded.
  std::function<bool(const absl::Status&)> is_excluded;
  // The time source; must outlive the breaker. nullptr means
  // `RealClock::Instance()`.
  const Clock* clock = nullptr;

  // Beyond gobreaker.

  // Where failure_rate()/slow_call_rate() are computed. Default: the whole
  // generation.
  SlidingWindow window;
  // A call (success or failure) that takes longer than this is slow.
  // 0 disables slow-call tracking (and its clock reads).
  absl::Duration slow_call_duration = absl::ZeroDuration();
  // Each failed half-open trial multiplies the open duration by this factor;
  // a close resets it to `timeout`. 1 means no backoff.
  double backoff_multiplier = 1.0;
  // Cap on the backed-off open duration. 0 means no cap; otherwise at least
  // `timeout`.
  absl::Duration max_timeout = absl::ZeroDuration();
  // Each open duration is multiplied by a factor drawn uniformly from
  // [1 - jitter, 1 + jitter], so that many instances don't retry in step.
  double backoff_jitter = 0.0;
  // If a half-open trial has been outstanding this long (the clock starts
  // when a trial is admitted while none is outstanding, and stops when the
  // last one reports), the breaker reopens as if a trial had failed instead
  // of waiting forever. A quiet half-open breaker with no trial out never
  // times out. 0 means no limit.
  absl::Duration half_open_max_wait = absl::ZeroDuration();
};

// Returns OK, or INVALID_ARGUMENT naming the first bad field and its value.
inline absl::Status ValidateBreakerSettings(const BreakerSettings& s) {
  const auto bad = [&s](absl::string_view field, auto value,
                        absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("circuit breaker '", s.name, "': setting '", field,
                     "' = ", value, " is invalid: ", why));
  };
  if (s.interval < absl::ZeroDuration()) {
    return bad("interval", absl::FormatDuration(s.interval),
               "must be >= 0 (0 means never clear)");
  }
  if (s.timeout < absl::ZeroDuration()) {
    return bad("timeout", absl::FormatDuration(s.timeout),
               "must be >= 0 (0 means 60s)");
  }
  if (s.slow_call_duration < absl::ZeroDuration()) {
    return bad("slow_call_duration", absl::FormatDuration(s.slow_call_duration),
               "must be >= 0 (0 disables slow calls)");
  }
  if (s.max_timeout < absl::ZeroDuration()) {
    return bad("max_timeout", absl::FormatDuration(s.max_timeout),
               "must be >= 0 (0 means no cap)");
  }
  if (s.max_timeout > absl::ZeroDuration() &&
      s.max_timeout <
          (s.timeout == absl::ZeroDuration() ? absl::Seconds(60) : s.timeout)) {
    return bad("max_timeout", absl::FormatDuration(s.max_timeout),
               "must be 0 (no cap) or at least the timeout");
  }
  if (s.half_open_max_wait < absl::ZeroDuration()) {
    return bad("half_open_max_wait", absl::FormatDuration(s.half_open_max_wait),
               "must be >= 0 (0 means no limit)");
  }
  if (!std::isfinite(s.backoff_multiplier) || s.backoff_multiplier < 1.0) {
    return bad("backoff_multiplier", s.backoff_multiplier,
               "must be finite and >= 1");
  }
  if (!std::isfinite(s.backoff_jitter) || s.backoff_jitter < 0.0 ||
      s.backoff_jitter > 1.0) {
    return bad("backoff_jitter", s.backoff_jitter, "must be in [0, 1]");
  }
  if (s.window.kind == SlidingWindow::Kind::kCount && s.window.size == 0) {
    return bad("window.size", s.window.size, "a count window needs size > 0");
  }
  if (s.window.kind == SlidingWindow::Kind::kTime) {
    if (s.window.size == 0) {
      return bad("window.size", s.window.size,
                 "a time window needs at least one bucket");
    }
    if (s.window.length <= absl::ZeroDuration() ||
        s.window.length == absl::InfiniteDuration()) {
      return bad("window.length", absl::FormatDuration(s.window.length),
                 "a time window needs a finite length > 0");
    }
    if (s.window.length / s.window.size < absl::Nanoseconds(1)) {
      return bad("window.size", s.window.size,
                 "buckets would be shorter than 1ns");
    }
  }
  return absl::OkStatus();
}

namespace detail {
class BreakerCore;

// What a permit remembers about its admission.
struct Ticket {
  uint64_t generation = 0;
  int64_t start_nanos = 0;
  State state = State::kClosed;
};
}  // namespace detail

// Permit
//
// The two-step form of a call: `Allow()` admits, the caller runs the call
// however it likes (async, batched), and the permit reports the outcome once
// with `Done()`. A permit destroyed without `Done()` gives its slot back
// without counting an outcome (counted in `totals().abandoned`), so a
// forgotten report can never hold a half-open slot forever.
//
// Movable, not copyable. Not thread-safe itself: one permit belongs to one
// call. REQUIRES: the breaker outlives its permits.
class [[nodiscard]] Permit {
 public:
  Permit(Permit&& other) noexcept
      : core_(std::exchange(other.core_, nullptr)), ticket_(other.ticket_) {}
  Permit& operator=(Permit&& other) noexcept {
    if (this != &other) {
      Release();
      core_ = std::exchange(other.core_, nullptr);
      ticket_ = other.ticket_;
    }
    return *this;
  }
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;
  ~Permit() { Release(); }

  // Reports the call's outcome, classified by the breaker's `is_excluded` and
  // `is_successful`. A second `Done()` (or one on a moved-from permit) does
  // nothing.
  void Done(const absl::Status& outcome);

  // The generation the call was admitted in.
  uint64_t generation() const { return ticket_.generation; }
  // The state the call was admitted in (closed, or half-open for a trial).
  State admitted_state() const { return ticket_.state; }
  // Whether this permit still owes a report.
  bool pending() const { return core_ != nullptr; }

 private:
  friend class detail::BreakerCore;
  template <typename T>
  friend class CircuitBreaker;
  Permit(detail::BreakerCore* core, const detail::Ticket& ticket)
      : core_(core), ticket_(ticket) {}
  void Release();

  detail::BreakerCore* core_;
  detail::Ticket ticket_;
};

namespace detail {

// Shard slots of live threads, one bit each. A thread claims the lowest free
// slot on first use and frees it when it exits, so threads alive at the same
// time never share a shard while there are no more of them than shards
// (sequential numbering would eventually pair a long-lived thread, such as
// main, with a newly spawned one).
inline std::atomic<uint64_t> g_shard_slots{0};
inline std::atomic<std::size_t> g_shard_overflow{0};

struct ShardSlotReleaser {
  int bit = -1;
  ~ShardSlotReleaser() {
    if (bit >= 0) {
      g_shard_slots.fetch_and(~(uint64_t{1} << bit), std::memory_order_acq_rel);
    }
  }
};

inline std::size_t AcquireShardSlot() {
  uint64_t used = g_shard_slots.load(std::memory_order_relaxed);
  while (used != ~uint64_t{0}) {
    int bit = 0;
    while ((used >> bit) & 1u) ++bit;
    if (g_shard_slots.compare_exchange_weak(used, used | (uint64_t{1} << bit),
                                            std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
      thread_local ShardSlotReleaser releaser;
      releaser.bit = bit;
      return static_cast<std::size_t>(bit);
    }
  }
  // More than 64 live threads: share, spread round-robin.
  return g_shard_overflow.fetch_add(1, std::memory_order_relaxed);
}

// The calling thread's shard slot. Stored plus one so that zero means "not
// assigned yet", which keeps the thread_local constant-initialised (no guard
// check on the hot path).
inline std::size_t ThreadShardIndex() {
  thread_local std::size_t index_plus_one = 0;
  if (DEGRADE_UNLIKELY(index_plus_one == 0)) {
    index_plus_one = AcquireShardSlot() + 1;
  }
  return index_plus_one - 1;
}

// The type-independent machinery behind CircuitBreaker<T>.
//
// The state, mode and generation live in one atomic word, so the fast paths
// decide with one load. Outcome counters are cumulative and sharded per
// thread (each shard on its own cache lines), so concurrent successes never
// write a shared line; a generation's `Counts` are the shard sums minus a
// base snapshot taken at the generation's start. Everything else is guarded
// by `mu_`.
class BreakerCore final : private BreakerView {
 public:
  explicit BreakerCore(BreakerSettings settings)
      : settings_(Normalize(std::move(settings))),
        clock_(settings_.clock != nullptr ? settings_.clock
                                          : &RealClock::Instance()),
        real_clock_(clock_ == &RealClock::Instance() ? &RealClock::Instance()
                                                     : nullptr),
        max_requests_(settings_.max_requests == 0 ? 1 : settings_.max_requests),
        interval_nanos_(absl::ToInt64Nanoseconds(settings_.interval)),
        timeout_(settings_.timeout == absl::ZeroDuration() ? absl::Seconds(60)
                                                           : settings_.timeout),
        slow_nanos_(absl::ToInt64Nanoseconds(settings_.slow_call_duration)),
        half_open_wait_nanos_(
            absl::ToInt64Nanoseconds(settings_.half_open_max_wait)),
        window_kind_(settings_.window.kind),
        needs_clock_(interval_nanos_ > 0 || slow_nanos_ > 0 ||
                     window_kind_ == SlidingWindow::Kind::kTime),
        precise_clock_(slow_nanos_ > 0),
        has_is_successful_(static_cast<bool>(settings_.is_successful)),
        has_is_excluded_(static_cast<bool>(settings_.is_excluded)),
        shard_mask_(ShardCount() - 1),
        shards_(new Shard[ShardCount()]),
        current_open_(timeout_),
        rng_(StableHash(settings_.name)) {
    // One copy of each rejection per shard: returning a status bumps its
    // reference count, and a single shared one would make every rejecting
    // thread write the same cache line.
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
      shards_[i].open_status =
          WithReason(absl::UnavailableError(absl::StrCat(
                         "circuit breaker '", settings_.name, "' is open")),
                     kReasonOpen);
      shards_[i].too_many_status =
          WithReason(absl::UnavailableError(absl::StrCat(
                         "circuit breaker '", settings_.name,
                         "' is half-open and its trial calls are all taken")),
                     kReasonTooMany);
    }
    if (window_kind_ == SlidingWindow::Kind::kCount) {
      count_window_ = std::make_unique<CountWindow>(settings_.window.size);
    } else if (window_kind_ == SlidingWindow::Kind::kTime) {
      time_window_ = std::make_unique<TimeWindow>(
          absl::ToInt64Nanoseconds(settings_.window.length /
                                   settings_.window.size),
          settings_.window.size);
    }
    {
      MutexLock lock(&mu_);
      StartGenerationLocked(State::kClosed, NowNanos());
    }
    // Last: the view must be complete before a telemetry may read it.
    if (Telemetry* t = ResolveTelemetry(settings_.metrics)) {
      listener_ = t->AttachBreaker(*this);
      if (listener_ != nullptr && listener_->wants_calls()) {
        call_listener_ = listener_.get();
      }
    }
  }

  BreakerCore(const BreakerCore&) = delete;
  BreakerCore& operator=(const BreakerCore&) = delete;
  // The listener goes first, while everything its view reads still exists.
  ~BreakerCore() { listener_.reset(); }

  const std::string& name() const override { return settings_.name; }
  const BreakerSettings& settings() const { return settings_; }

  // Admits a call (fills `t`, returns nullptr) or returns the rejection.
  const absl::Status* Acquire(Ticket* t) {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      int64_t now = 0;
      if (needs_clock_) {
        now = NowNanos();
        if (DEGRADE_UNLIKELY(
                now > interval_expiry_.load(std::memory_order_acquire))) {
          return AcquireSlow(t);
        }
      }
      LocalShard().admitted.fetch_add(1, std::memory_order_relaxed);
      t->generation = GenOf(w);
      t->start_nanos = now;
      t->state = State::kClosed;
      return nullptr;
    }
    if (StateOf(w) == State::kOpen) {
      if (ModeOf(w) == kForcedOpen ||
          NowNanos() <= open_expiry_.load(std::memory_order_acquire)) {
        Shard& shard = LocalShard();
        shard.rejected_open.fetch_add(1, std::memory_order_relaxed);
        if (DEGRADE_UNLIKELY(call_listener_ != nullptr)) {
          NotifyCall(CallOutcome::kRejectedOpen);
        }
        return &shard.open_status;
      }
    }
    return AcquireSlow(t);
  }

  void Complete(const Ticket& t, const absl::Status& outcome) {
    bool slow = false;
    const CallOutcome o = Record(t, outcome, &slow);
    if (DEGRADE_UNLIKELY(call_listener_ != nullptr)) NotifyCall(o, slow);
  }

  void Abandon(const Ticket& t) {
    const CallOutcome o = RecordAbandon(t);
    if (DEGRADE_UNLIKELY(call_listener_ != nullptr)) NotifyCall(o);
  }

  BreakerTotals totals() const override { return SumShards(); }

 private:
  // Counts one outcome; returns what it was counted as.
  CallOutcome Record(const Ticket& t, const absl::Status& outcome,
                     bool* slow_out) {
    const bool excluded = has_is_excluded_ &&
                          SafePredicate(settings_.is_excluded, false, outcome);
    const bool success =
        !excluded &&
        (has_is_successful_
             ? SafePredicate(settings_.is_successful, false, outcome)
             : outcome.ok());
    const bool slow =
        slow_nanos_ > 0 && NowNanos() - t.start_nanos > slow_nanos_;
    *slow_out = slow;
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (DEGRADE_UNLIKELY(GenOf(w) != t.generation)) {
      LocalShard().stale.fetch_add(1, std::memory_order_relaxed);
      return CallOutcome::kStale;
    }
    if (DEGRADE_LIKELY(StateOf(w) == State::kClosed)) {
      if (excluded) {
        LocalShard().exclusions.fetch_add(1, std::memory_order_relaxed);
        return CallOutcome::kExcluded;
      }
      if (DEGRADE_LIKELY(success && !slow)) {
        LocalShard().successes.fetch_add(1, std::memory_order_relaxed);
        // Read before writing: in a healthy breaker the line stays shared.
        if (consecutive_failures_.load(std::memory_order_relaxed) != 0) {
          consecutive_failures_.store(0, std::memory_order_relaxed);
        }
        RecordWindow(t.start_nanos, kOutcomeRecorded);
        return CallOutcome::kSuccess;
      }
    }
    return CompleteSlow(t, success, excluded, slow);
  }

  CallOutcome RecordAbandon(const Ticket& t) {
    if (t.state == State::kHalfOpen) return AbandonTrial(t);
    const uint64_t w = word_.load(std::memory_order_acquire);
    Shard& s = LocalShard();
    if (GenOf(w) != t.generation) {
      s.stale.fetch_add(1, std::memory_order_relaxed);
      return CallOutcome::kStale;
    }
    s.abandoned.fetch_add(1, std::memory_order_relaxed);
    return CallOutcome::kAbandoned;
  }

 public:

  State state() {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (TimeMayHaveMoved(w)) {
      {
        MutexLock lock(&mu_);
        AdvanceLocked(NowNanos());
      }
      DispatchEvents();
      return StateOf(word_.load(std::memory_order_acquire));
    }
    return StateOf(w);
  }

  uint64_t generation() const {
    return GenOf(word_.load(std::memory_order_acquire));
  }

  Counts counts() {
    MutexLock lock(&mu_);
    return CountsLocked(window_kind_ == SlidingWindow::Kind::kTime ? NowNanos()
                                                                   : 0);
  }

  void ForceOpen() {
    ManualTransition(State::kOpen, kForcedOpen, TransitionCause::kForcedOpen);
  }
  void Disable() {
    ManualTransition(State::kClosed, kDisabled, TransitionCause::kDisabled);
  }
  void Reset() {
    ManualTransition(State::kClosed, kNormal, TransitionCause::kReset);
  }

  bool forced_open() const {
    return ModeOf(word_.load(std::memory_order_acquire)) == kForcedOpen;
  }
  bool disabled() const {
    return ModeOf(word_.load(std::memory_order_acquire)) == kDisabled;
  }

  // The open duration the next trip will use, before jitter.
  absl::Duration current_open_duration() {
    MutexLock lock(&mu_);
    return current_open_;
  }

 private:
  // Modes layered on the state.
  enum Mode : uint64_t { kNormal = 0, kForcedOpen = 1, kDisabled = 2 };

  static constexpr uint64_t kStateMask = 0x3;
  static constexpr int kModeShift = 2;
  static constexpr uint64_t kModeMask = 0x3;
  static constexpr int kGenShift = 4;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  static State StateOf(uint64_t w) {
    return static_cast<State>(w & kStateMask);
  }
  static Mode ModeOf(uint64_t w) {
    return static_cast<Mode>((w >> kModeShift) & kModeMask);
  }
  static uint64_t GenOf(uint64_t w) { return w >> kGenShift; }
  static uint64_t Pack(State s, Mode m, uint64_t gen) {
    return static_cast<uint64_t>(s) | (static_cast<uint64_t>(m) << kModeShift) |
           (gen << kGenShift);
  }

  struct alignas(kCacheLine) Shard {
    std::atomic<uint64_t> admitted{0};
    std::atomic<uint64_t> successes{0};
    std::atomic<uint64_t> failures{0};
    std::atomic<uint64_t> exclusions{0};
    std::atomic<uint64_t> slow_calls{0};
    std::atomic<uint64_t> abandoned{0};
    std::atomic<uint64_t> stale{0};
    std::atomic<uint64_t> rejected_open{0};
    std::atomic<uint64_t> rejected_too_many{0};
    absl::Status open_status;
    absl::Status too_many_status;
  };

  struct Event {
    State from;
    State to;
    TransitionCause cause;
    int64_t at;
    Counts counts;  // of the generation that ended
  };

  // What happened to the trials of the current half-open generation.
  struct TrialLedger {
    uint64_t admitted = 0;
    uint64_t abandoned = 0;
    uint64_t excluded = 0;
    uint64_t succeeded = 0;
    uint64_t slots_used() const { return admitted - abandoned - excluded; }
    uint64_t outstanding() const { return slots_used() - succeeded; }
  };

  static std::size_t ShardCount() {
    // A power of two at least the core count (8..64): threads rarely share.
    std::size_t want =
        std::max<unsigned>(8, std::thread::hardware_concurrency());
    std::size_t n = 1;
    while (n < want && n < 64) n <<= 1;
    return n;
  }

  static BreakerSettings Normalize(BreakerSettings s) {
    if (s.interval < absl::ZeroDuration() ||
        s.interval == absl::InfiniteDuration()) {
      s.interval = absl::ZeroDuration();
    }
    // An infinite timeout is kept: the breaker then stays open until Reset().
    if (s.timeout < absl::ZeroDuration()) s.timeout = absl::ZeroDuration();
    if (s.slow_call_duration < absl::ZeroDuration() ||
        s.slow_call_duration == absl::InfiniteDuration()) {
      s.slow_call_duration = absl::ZeroDuration();
    }
    if (s.max_timeout < absl::ZeroDuration())
      s.max_timeout = absl::ZeroDuration();
    const absl::Duration base =
        s.timeout == absl::ZeroDuration() ? absl::Seconds(60) : s.timeout;
    if (s.max_timeout > absl::ZeroDuration() && s.max_timeout < base) {
      s.max_timeout = base;  // a cap below the base would shorten the backoff
    }
    if (s.half_open_max_wait < absl::ZeroDuration() ||
        s.half_open_max_wait == absl::InfiniteDuration()) {
      s.half_open_max_wait = absl::ZeroDuration();
    }
    if (!std::isfinite(s.backoff_multiplier) || s.backoff_multiplier < 1.0) {
      s.backoff_multiplier = 1.0;
    }
    if (!std::isfinite(s.backoff_jitter) || s.backoff_jitter < 0.0 ||
        s.backoff_jitter > 1.0) {
      s.backoff_jitter = 0.0;
    }
    if (s.window.kind != SlidingWindow::Kind::kNone &&
        !ValidateWindow(s.window)) {
      s.window = SlidingWindow{};
    }
    return s;
  }

  static bool ValidateWindow(const SlidingWindow& w) {
    if (w.size == 0) return false;
    if (w.kind == SlidingWindow::Kind::kTime) {
      return w.length > absl::ZeroDuration() &&
             w.length != absl::InfiniteDuration() &&
             w.length / w.size >= absl::Nanoseconds(1);
    }
    return true;
  }

  // One time source per breaker, so expiries set and checked never mix
  // resolutions: the coarse clock, unless slow calls need precise durations.
  int64_t NowNanos() const {
    if (real_clock_ != nullptr) {
      return precise_clock_ ? real_clock_->UnixNanos()
                            : real_clock_->CoarseUnixNanos();
    }
    return absl::ToUnixNanos(precise_clock_ ? clock_->Now()
                                            : clock_->CoarseNow());
  }

  Shard& LocalShard() { return shards_[ThreadShardIndex() & shard_mask_]; }

  BreakerTotals SumShards() const {
    BreakerTotals t;
    for (std::size_t i = 0; i <= shard_mask_; ++i) {
      const Shard& s = shards_[i];
      t.admitted += s.admitted.load(std::memory_order_relaxed);
      t.successes += s.successes.load(std::memory_order_relaxed);
      t.failures += s.failures.load(std::memory_order_relaxed);
      t.exclusions += s.exclusions.load(std::memory_order_relaxed);
      t.slow_calls += s.slow_calls.load(std::memory_order_relaxed);
      t.abandoned += s.abandoned.load(std::memory_order_relaxed);
      t.stale += s.stale.load(std::memory_order_relaxed);
      t.rejected_open += s.rejected_open.load(std::memory_order_relaxed);
      t.rejected_too_many +=
          s.rejected_too_many.load(std::memory_order_relaxed);
    }
    return t;
  }

  void RecordWindow(int64_t start_nanos, uint8_t outcome) {
    if (window_kind_ == SlidingWindow::Kind::kNone) return;
    if (window_kind_ == SlidingWindow::Kind::kCount) {
      count_window_->Record(outcome);
    } else {
      time_window_->Record(start_nanos, outcome);
    }
  }

  // True when reading the clock might change the state (a timed expiry).
  bool TimeMayHaveMoved(uint64_t w) const {
    switch (StateOf(w)) {
      case State::kClosed:
        return interval_nanos_ > 0 &&
               NowNanos() > interval_expiry_.load(std::memory_order_acquire);
      case State::kOpen:
        return ModeOf(w) != kForcedOpen &&
               NowNanos() > open_expiry_.load(std::memory_order_acquire);
      case State::kHalfOpen:
        return half_open_wait_nanos_ > 0 &&
               NowNanos() > half_open_deadline_.load(std::memory_order_acquire);
    }
    return false;
  }

  Counts CountsLocked(int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The shards are summed field by field while other threads add to them,
    // so a difference can momentarily come out negative: clamp at zero.
    const auto diff = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    const BreakerTotals t = SumShards();
    Counts c;
    c.requests = diff(diff(t.admitted, base_.admitted),
                      diff(t.abandoned, base_.abandoned));
    c.total_successes = diff(t.successes, base_.successes);
    c.total_failures = diff(t.failures, base_.failures);
    c.total_exclusions = diff(t.exclusions, base_.exclusions);
    c.consecutive_failures =
        consecutive_failures_.load(std::memory_order_relaxed);
    c.consecutive_successes = diff(
        t.successes, std::max(successes_at_last_failure_, base_.successes));
    if (StateOf(word_.load(std::memory_order_relaxed)) == State::kHalfOpen) {
      // Half-open figures come from the exact per-generation trial ledger,
      // which a straggling call from an earlier generation cannot touch.
      c.requests = trials_.admitted - trials_.abandoned;
      c.total_successes = trials_.succeeded;
      c.consecutive_successes = trials_.succeeded;
      c.total_failures = 0;  // the first failure ends half-open
      c.consecutive_failures = 0;
      c.total_exclusions = trials_.excluded;
    }
    if (window_kind_ == SlidingWindow::Kind::kCount) {
      const WindowStats ws = count_window_->Read();
      c.window_calls = ws.calls;
      c.window_failures = ws.failures;
      c.window_slow_calls = ws.slow;
    } else if (window_kind_ == SlidingWindow::Kind::kTime) {
      const WindowStats ws = time_window_->Read(now);
      c.window_calls = ws.calls;
      c.window_failures = ws.failures;
      c.window_slow_calls = ws.slow;
    } else {
      c.window_calls = c.total_successes + c.total_failures;
      c.window_failures = c.total_failures;
      c.window_slow_calls = diff(t.slow_calls, base_.slow_calls);
    }
    return c;
  }

  // Begins a new generation in `to`: the base snapshot is taken before the
  // new word is published, so a call that sees the new generation is always
  // counted in it.
  void StartGenerationLocked(State to, int64_t now, Mode mode = kNormal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    base_ = SumShards();
    trials_ = TrialLedger{};
    successes_at_last_failure_ = base_.successes;
    consecutive_failures_.store(0, std::memory_order_relaxed);
    if (count_window_) count_window_->Reset();
    if (time_window_) time_window_->Reset();
    interval_expiry_.store(to == State::kClosed && interval_nanos_ > 0
                               ? SaturatingAdd(now, interval_nanos_)
                               : kNever,
                           std::memory_order_release);
    if (to == State::kOpen) {
      open_expiry_.store(
          mode == kForcedOpen
              ? kNever
              : SaturatingAdd(now, absl::ToInt64Nanoseconds(
                                       JitteredLocked(current_open_))),
          std::memory_order_release);
    }
    // Armed when a trial is admitted and none was outstanding, disarmed
    // when the last outstanding trial reports (see UpdateDeadlineLocked).
    half_open_deadline_.store(kNever, std::memory_order_release);
    const uint64_t old = word_.load(std::memory_order_relaxed);
    word_.store(Pack(to, mode, GenOf(old) + 1), std::memory_order_release);
  }

  static int64_t SaturatingAdd(int64_t a, int64_t b) {
    if (b > 0 && a > kNever - b) return kNever;
    return a + b;
  }

  absl::Duration JitteredLocked(absl::Duration d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const double j = settings_.backoff_jitter;
    if (j <= 0.0) return d;
    // Deterministic per breaker name, so tests are repeatable.
    const double u = rng_.NextUnit();  // [0, 1)
    return d * (1.0 - j + 2.0 * j * u);
  }

  void TransitionLocked(State to, int64_t now, TransitionCause cause,
                        Mode mode = kNormal) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const State from = StateOf(word_.load(std::memory_order_relaxed));
    if (from == to) {
      StartGenerationLocked(to, now, mode);
      return;
    }
    // Read before the new generation clears them: why the state changed.
    const Counts ended = CountsLocked(now);
    StartGenerationLocked(to, now, mode);
    transitions_[TransitionIndex(from, to)].fetch_add(
        1, std::memory_order_relaxed);
    if (from == State::kClosed) {
      degraded_since_.store(now, std::memory_order_relaxed);
    } else if (to == State::kClosed) {
      degraded_since_.store(kNever, std::memory_order_relaxed);
    }
    events_.Push(Event{from, to, cause, now, ended});
  }

  // A half-open trial failed (or timed out): back off, then reopen.
  void ReopenLocked(int64_t now, TransitionCause cause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (settings_.backoff_multiplier > 1.0) {
      absl::Duration next = current_open_ * settings_.backoff_multiplier;
      if (settings_.max_timeout > absl::ZeroDuration()) {
        next = std::min(next, settings_.max_timeout);
      }
      current_open_ = next;
    }
    TransitionLocked(State::kOpen, now, cause);
  }

  // Applies the transitions that the passage of time alone causes.
  void AdvanceLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t w = word_.load(std::memory_order_relaxed);
    switch (StateOf(w)) {
      case State::kClosed:
        if (now > interval_expiry_.load(std::memory_order_relaxed)) {
          StartGenerationLocked(State::kClosed, now, ModeOf(w));
        }
        break;
      case State::kOpen:
        if (ModeOf(w) != kForcedOpen &&
            now > open_expiry_.load(std::memory_order_relaxed)) {
          TransitionLocked(State::kHalfOpen, now, TransitionCause::kOpenElapsed);
        }
        break;
      case State::kHalfOpen:
        if (now > half_open_deadline_.load(std::memory_order_relaxed) &&
            trials_.outstanding() > 0) {
          ReopenLocked(now, TransitionCause::kTrialTimedOut);
        }
        break;
    }
  }

  const absl::Status* AcquireSlow(Ticket* t) {
    const absl::Status* rejection = nullptr;
    CallOutcome rejected = CallOutcome::kRejectedOpen;
    {
      MutexLock lock(&mu_);
      const int64_t now = NowNanos();
      AdvanceLocked(now);
      const uint64_t w = word_.load(std::memory_order_relaxed);
      Shard& shard = LocalShard();
      switch (StateOf(w)) {
        case State::kOpen:
          shard.rejected_open.fetch_add(1, std::memory_order_relaxed);
          rejection = &shard.open_status;
          break;
        case State::kHalfOpen: {
          // As gobreaker: excluded trials give their slot back; successful
          // ones keep it (only max_requests trials per half-open period).
          if (trials_.slots_used() >= max_requests_) {
            shard.rejected_too_many.fetch_add(1, std::memory_order_relaxed);
            rejection = &shard.too_many_status;
            rejected = CallOutcome::kRejectedTooMany;
            break;
          }
          ++trials_.admitted;
          UpdateDeadlineLocked(now);
          [[fallthrough]];
        }
        case State::kClosed:
          shard.admitted.fetch_add(1, std::memory_order_relaxed);
          t->generation = GenOf(w);
          t->start_nanos = now;
          t->state = StateOf(w);
          break;
      }
    }
    DispatchEvents();
    if (rejection != nullptr && call_listener_ != nullptr) NotifyCall(rejected);
    return rejection;
  }

  // A half-open trial's slot is given back under the lock, and only to the
  // generation that issued it.
  CallOutcome AbandonTrial(const Ticket& t) {
    MutexLock lock(&mu_);
    const uint64_t w = word_.load(std::memory_order_relaxed);
    Shard& shard = LocalShard();
    if (GenOf(w) != t.generation) {
      shard.stale.fetch_add(1, std::memory_order_relaxed);
      return CallOutcome::kStale;
    }
    shard.abandoned.fetch_add(1, std::memory_order_relaxed);
    ++trials_.abandoned;
    UpdateDeadlineLocked(NowNanos());
    return CallOutcome::kAbandoned;
  }

  // Keeps the half-open deadline running exactly while a trial is
  // outstanding: it starts when the first one is admitted.
  void UpdateDeadlineLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (half_open_wait_nanos_ <= 0) return;
    const uint64_t outstanding = trials_.outstanding();
    const int64_t current = half_open_deadline_.load(std::memory_order_relaxed);
    if (outstanding == 0) {
      half_open_deadline_.store(kNever, std::memory_order_release);
    } else if (current == kNever) {
      half_open_deadline_.store(SaturatingAdd(now, half_open_wait_nanos_),
                                std::memory_order_release);
    }
  }

  CallOutcome CompleteSlow(const Ticket& t, bool success, bool excluded,
                           bool slow) {
    CallOutcome counted = success ? CallOutcome::kSuccess : CallOutcome::kFailure;
    {
      MutexLock lock(&mu_);
      const int64_t now = NowNanos();
      // As gobreaker's afterRequest: expiries due by now happen first, so a
      // trial reporting after the half-open wait, or a failure reporting
      // after its interval ended, belongs to a generation that is over.
      AdvanceLocked(now);
      const uint64_t w = word_.load(std::memory_order_relaxed);
      Shard& shard = LocalShard();
      if (GenOf(w) != t.generation || StateOf(w) == State::kOpen) {
        shard.stale.fetch_add(1, std::memory_order_relaxed);
        counted = CallOutcome::kStale;
      } else if (excluded) {
        shard.exclusions.fetch_add(1, std::memory_order_relaxed);
        counted = CallOutcome::kExcluded;
        if (StateOf(w) == State::kHalfOpen) {
          ++trials_.excluded;
          UpdateDeadlineLocked(now);
        }
      } else {
        if (slow) shard.slow_calls.fetch_add(1, std::memory_order_relaxed);
        RecordWindow(t.start_nanos,
                     static_cast<uint8_t>(kOutcomeRecorded |
                                          (success ? 0 : kOutcomeFailed) |
                                          (slow ? kOutcomeSlow : 0)));
        if (success) {
          shard.successes.fetch_add(1, std::memory_order_relaxed);
          consecutive_failures_.store(0, std::memory_order_relaxed);
        } else {
          shard.failures.fetch_add(1, std::memory_order_relaxed);
          consecutive_failures_.fetch_add(1, std::memory_order_relaxed);
          successes_at_last_failure_ = SumShards().successes;
        }
        if (StateOf(w) == State::kHalfOpen) {
          if (!success) {
            ReopenLocked(now, TransitionCause::kTrialFailed);
          } else if (++trials_.succeeded >= max_requests_) {
            current_open_ = timeout_;
            TransitionLocked(State::kClosed, now,
                             TransitionCause::kTrialsSucceeded);
          } else {
            UpdateDeadlineLocked(now);
          }
        } else if (ModeOf(w) != kDisabled) {
          const Counts c = CountsLocked(now);
          const bool trip =
              settings_.ready_to_trip
                  ? SafePredicate(settings_.ready_to_trip, false, c)
                  : c.consecutive_failures > 5;
          if (trip) TransitionLocked(State::kOpen, now, TransitionCause::kTripped);
        }
      }
    }
    DispatchEvents();
    return counted;
  }

  void ManualTransition(State to, Mode mode, TransitionCause cause) {
    {
      MutexLock lock(&mu_);
      current_open_ = timeout_;
      TransitionLocked(to, NowNanos(), cause, mode);
    }
    DispatchEvents();
  }

  // Runs queued events outside `mu_` (see detail/serial_dispatcher.hpp for
  // the ordering guarantees): the telemetry's listener, then the user's
  // on_state_change, each on its own so that one that throws costs the
  // other nothing.
  void DispatchEvents() {
    events_.Drain([this](const Event& e) {
      if (listener_ != nullptr) {
        BreakerStateChange change;
        change.breaker = settings_.name;
        change.from = e.from;
        change.to = e.to;
        change.cause = e.cause;
        change.time = absl::FromUnixNanos(e.at);
        change.counts = e.counts;
        CallQuietly([this, &change] { listener_->OnStateChange(change); });
      }
      if (settings_.on_state_change) {
        CallQuietly(settings_.on_state_change, settings_.name, e.from, e.to);
      }
    });
  }

  // Reports one call to a listener that asked for every call.
  void NotifyCall(CallOutcome outcome, bool slow = false) {
    BreakerCall call;
    call.breaker = settings_.name;
    call.outcome = outcome;
    call.slow = slow;
    CallQuietly([this, &call] { call_listener_->OnCall(call); });
  }

  static std::size_t TransitionIndex(State from, State to) {
    return static_cast<std::size_t>(from) * 3 + static_cast<std::size_t>(to);
  }

  // ---- BreakerView (for telemetry; read-only, thread-safe) ----

  State observed_state() const override {
    const uint64_t w = word_.load(std::memory_order_acquire);
    if (StateOf(w) == State::kOpen && ModeOf(w) != kForcedOpen &&
        NowNanos() > open_expiry_.load(std::memory_order_acquire)) {
      return State::kHalfOpen;
    }
    return StateOf(w);
  }
  uint64_t transitions(State from, State to) const override {
    return transitions_[TransitionIndex(from, to)].load(
        std::memory_order_relaxed);
  }
  absl::Time degraded_since() const override {
    const int64_t since = degraded_since_.load(std::memory_order_relaxed);
    return since == kNever ? absl::InfiniteFuture() : absl::FromUnixNanos(since);
  }
  absl::Time now() const override { return absl::FromUnixNanos(NowNanos()); }

  const BreakerSettings settings_;
  const Clock* const clock_;
  // Set when `clock_` is the default clock, to read it without a virtual
  // call or absl::Time arithmetic (a third of an open rejection's cost).
  const RealClock* const real_clock_;
  const uint64_t max_requests_;
  const int64_t interval_nanos_;
  const absl::Duration timeout_;
  const int64_t slow_nanos_;
  const int64_t half_open_wait_nanos_;
  const SlidingWindow::Kind window_kind_;
  const bool needs_clock_;
  const bool precise_clock_;
  const bool has_is_successful_;
  const bool has_is_excluded_;
  const std::size_t shard_mask_;
  std::unique_ptr<Shard[]> shards_;
  std::unique_ptr<CountWindow> count_window_;
  std::unique_ptr<TimeWindow> time_window_;

  // Read on every call: kept apart from the counters the slow path writes.
  alignas(kCacheLine) std::atomic<uint64_t> word_{0};
  std::atomic<int64_t> interval_expiry_{kNever};
  std::atomic<int64_t> open_expiry_{kNever};
  std::atomic<int64_t> half_open_deadline_{kNever};
  // Written by successes only when non-zero, so healthy traffic only reads it.
  std::atomic<uint64_t> consecutive_failures_{0};
  // Slow path only: written on transitions, read by scrapes.
  std::array<std::atomic<uint64_t>, 9> transitions_{};
  // When the breaker left the closed state; kNever while closed.
  std::atomic<int64_t> degraded_since_{kNever};

  alignas(kCacheLine) Mutex mu_;
  BreakerTotals base_ ABSL_GUARDED_BY(mu_);
  TrialLedger trials_ ABSL_GUARDED_BY(mu_);
  uint64_t successes_at_last_failure_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration current_open_ ABSL_GUARDED_BY(mu_);
  SplitMix64 rng_ ABSL_GUARDED_BY(mu_);
  SerialDispatcher<Event> events_;
  // What the telemetry attached (nullptr: none); reset first in the
  // destructor. `call_listener_` is the same object when it asked for every
  // call, else nullptr: the one pointer the hot path tests.
  std::unique_ptr<BreakerListener> listener_;
  BreakerListener* call_listener_ = nullptr;
};

}  // namespace detail

// CircuitBreaker<T>
//
// A breaker in front of calls producing `T` (`void` for calls producing only
// a status). Thread-safe; neither copyable nor movable (permits and callers
// hold its address). See the file comment for semantics.
template <typename T>
class CircuitBreaker {
 public:
  // `absl::StatusOr<T>`, or `absl::Status` for `CircuitBreaker<void>`.
  using Result = detail::ResultOf<T>;

  explicit CircuitBreaker(BreakerSettings settings = {})
      : core_(std::move(settings)) {}

  // Like the constructor, but refuses invalid settings with the status from
  // `ValidateBreakerSettings()` instead of replacing them with defaults.
  static absl::StatusOr<std::unique_ptr<CircuitBreaker>> Create(
      BreakerSettings settings) {
    absl::Status valid = ValidateBreakerSettings(settings);
    if (!valid.ok()) return valid;
    return std::make_unique<CircuitBreaker>(std::move(settings));
  }

  CircuitBreaker(const CircuitBreaker&) = delete;
  CircuitBreaker& operator=(const CircuitBreaker&) = delete;

  // Runs `f` if the breaker admits the call and records its outcome.
  // `f` takes no arguments and returns `T` or `absl::StatusOr<T>` (for
  // `CircuitBreaker<void>`: `void` or `absl::Status`). Returns the breaker's
  // rejection (see `IsBreakerOpen`, `IsTooManyRequests`) without running `f`,
  // or `f`'s result. If `f` throws, the call counts as a failure and the
  // result is a status recognised by `IsCallableException`.
  template <typename F>
  Result Execute(F&& f) {
    detail::Ticket ticket;
    if (const absl::Status* rejected = core_.Acquire(&ticket)) {
      return Result(*rejected);
    }
    Result result =
        detail::InvokeCatching<T>(f, "circuit breaker", core_.name());
    core_.Complete(ticket, detail::StatusOf(result));
    return result;
  }

  // The two-step form: admits a call or returns the rejection. The permit
  // must report with `Done()`; see `Permit`.
  absl::StatusOr<Permit> Allow() {
    detail::Ticket ticket;
    if (const absl::Status* rejected = core_.Acquire(&ticket)) {
      return *rejected;
    }
    return Permit(&core_, ticket);
  }

  // The current state, applying any expiry that is due (open -> half-open
  // after `timeout`, the closed `interval`, the half-open maximum wait).
  State state() { return core_.state(); }
  // A snapshot of the current generation's counts.
  Counts counts() { return core_.counts(); }
  // Lifetime counters.
  BreakerTotals totals() const { return core_.totals(); }
  const std::string& name() const { return core_.name(); }
  // Changes on every transition and closed-state interval.
  uint64_t generation() const { return core_.generation(); }
  const BreakerSettings& settings() const { return core_.settings(); }

  // Opens the breaker until `Reset()` or `Disable()`; every call is rejected
  // as open.
  void ForceOpen() { core_.ForceOpen(); }
  // Admits every call and keeps counting, but never trips; until `Reset()`
  // or `ForceOpen()`.
  void Disable() { core_.Disable(); }
  // Back to closed and normal operation, in a new generation, with the open
  // duration back at `timeout`.
  void Reset() { core_.Reset(); }
  bool forced_open() const { return core_.forced_open(); }
  bool disabled() const { return core_.disabled(); }
  // The open duration the next trip will use, before jitter: `timeout`, grown
  // by `backoff_multiplier` for each failed half-open trial since the last
  // close.
  absl::Duration current_open_duration() {
    return core_.current_open_duration();
  }

 private:
  detail::BreakerCore core_;
};

// ---- Implementation details ----

inline void Permit::Done(const absl::Status& outcome) {
  if (core_ == nullptr) return;
  detail::BreakerCore* core = std::exchange(core_, nullptr);
  core->Complete(ticket_, outcome);
}

inline void Permit::Release() {
  if (core_ == nullptr) return;
  detail::BreakerCore* core = std::exchange(core_, nullptr);
  core->Abandon(ticket_);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CIRCUIT_BREAKER_HPP_
