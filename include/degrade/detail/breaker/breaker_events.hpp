// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a breaker publishes about itself: the transitions it made (counted
// per from/to pair, and since when it has been out of the closed state, for
// its telemetry view), and the events it reports to its telemetry's listener
// and to the user's on_state_change. Transitions are recorded under the
// breaker's lock and queued; Dispatch() delivers them after the lock is
// released, in transition order, never concurrently (serial_dispatcher.hpp),
// so a callback may call the breaker.
//
// Thread-safe. RecordTransition must be called under the breaker's lock (it
// is what orders the queue); everything else from any thread.

#ifndef DEGRADE_DETAIL_BREAKER_BREAKER_EVENTS_HPP_
#define DEGRADE_DETAIL_BREAKER_BREAKER_EVENTS_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// One change of state or mode, as recorded under the breaker's lock.
struct BreakerTransition {
  State from = State::kClosed;
  State to = State::kClosed;
  BreakerMode from_mode = BreakerMode::kNormal;
  BreakerMode to_mode = BreakerMode::kNormal;
  TransitionCause cause = TransitionCause::kTripped;
  int64_t at = 0;
  // A timed forced-open state's end; INT64_MAX: none.
  int64_t until = std::numeric_limits<int64_t>::max();
  Counts counts;
  // kTripped: the rule that decided and what it saw.
  TripReason trip;
};

class BreakerEvents {
 public:
  using Callback = std::function<void(const std::string&, State, State)>;

  // `name` and `on_state_change` must outlive this (the breaker's settings).
  BreakerEvents(const std::string* name, const Callback* on_state_change)
      : name_(name), on_state_change_(on_state_change) {}

  BreakerEvents(const BreakerEvents&) = delete;
  BreakerEvents& operator=(const BreakerEvents&) = delete;

  // Offers `view` to the telemetry `chosen` names (the settings' `metrics`:
  // nullptr means the process default; see detail::Attach). Called once,
  // last in the breaker's constructor; Detach() first in its destructor.
  void Attach(Telemetry* chosen, const BreakerView& view) {
    listener_ = detail::Attach(chosen, &Telemetry::AttachBreaker, view);
    if (listener_ != nullptr &&
        SafePredicate([this] { return listener_->wants_calls(); }, false)) {
      call_listener_ = listener_.get();
      wants_durations_ =
          SafePredicate([this] { return listener_->wants_durations(); }, false);
    }
  }
  void Detach() {
    call_listener_ = nullptr;
    listener_.reset();
  }

  // Whether a listener wants every call: the one test on the hot path.
  bool wants_calls() const { return call_listener_ != nullptr; }
  // Whether that listener wants each call's duration too.
  bool wants_durations() const { return wants_durations_; }

  // Reports one call. REQUIRES: wants_calls().
  void NotifyCall(CallOutcome outcome, bool slow = false,
                  absl::Duration duration = absl::ZeroDuration()) {
    BreakerCall call;
    call.breaker = *name_;
    call.outcome = outcome;
    call.slow = slow;
    call.duration = duration;
    CallQuietly([this, &call] { call_listener_->OnCall(call); });
  }

  // A change of state or mode (from == to for a manual change that keeps
  // the state). REQUIRES: the breaker's lock held.
  void RecordTransition(const BreakerTransition& t) {
    if (t.from != t.to) {
      transitions_[Index(t.from, t.to)].fetch_add(1, std::memory_order_relaxed);
      if (t.from == State::kClosed) {
        // A clock saturated at InfiniteFuture must not read as "closed".
        degraded_since_.store(std::min(t.at, kNever - 1),
                              std::memory_order_relaxed);
      } else if (t.to == State::kClosed) {
        degraded_since_.store(kNever, std::memory_order_relaxed);
      }
    }
    Event e;
    e.transition = t;
    queue_.Push(std::move(e));
  }

  // A rate threshold reached. REQUIRES: the breaker's lock held.
  void RecordThreshold(BreakerThreshold which, double rate, double limit,
                       uint64_t calls, int64_t now_nanos) {
    if (listener_ == nullptr) return;
    Event e;
    e.is_threshold = true;
    e.threshold = BreakerThresholdEvent{
        {}, which, rate, limit, calls, absl::FromUnixNanos(now_nanos)};
    queue_.Push(std::move(e));
  }

  // Delivers the queued events: the listener, then on_state_change, each on
  // its own so that one that throws costs the other nothing.
  void Dispatch() {
    queue_.Drain([this](const Event& e) {
      if (e.is_threshold) return DeliverThreshold(e);
      const BreakerTransition& t = e.transition;
      if (listener_ != nullptr) {
        BreakerStateChange change;
        change.breaker = *name_;
        change.from = t.from;
        change.to = t.to;
        change.from_mode = t.from_mode;
        change.to_mode = t.to_mode;
        change.cause = t.cause;
        change.time = absl::FromUnixNanos(t.at);
        if (t.until != kNever)
          change.forced_until = absl::FromUnixNanos(t.until);
        change.counts = t.counts;
        change.trip = t.trip;
        CallQuietly([this, &change] { listener_->OnStateChange(change); });
      }
      if (*on_state_change_) {
        CallQuietly(*on_state_change_, *name_, t.from, t.to);
      }
    });
  }

  uint64_t transitions(State from, State to) const {
    return transitions_[Index(from, to)].load(std::memory_order_relaxed);
  }
  // InfiniteFuture() while closed.
  absl::Time degraded_since() const {
    const int64_t since = degraded_since_.load(std::memory_order_relaxed);
    return since == kNever ? absl::InfiniteFuture()
                           : absl::FromUnixNanos(since);
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  struct Event {
    BreakerTransition transition;
    bool is_threshold = false;
    // As the listener gets it, but for `breaker`, filled in on delivery.
    BreakerThresholdEvent threshold;
  };

  void DeliverThreshold(const Event& e) {
    if (listener_ == nullptr) return;
    BreakerThresholdEvent t = e.threshold;
    t.breaker = *name_;
    CallQuietly([this, &t] { listener_->OnThreshold(t); });
  }

  static std::size_t Index(State from, State to) {
    return static_cast<std::size_t>(from) * 3 + static_cast<std::size_t>(to);
  }

  const std::string* const name_;
  const Callback* const on_state_change_;
  // Written on transitions, read by scrapes.
  std::array<std::atomic<uint64_t>, 9> transitions_{};
  std::atomic<int64_t> degraded_since_{kNever};
  SerialDispatcher<Event> queue_;
  // What the telemetry attached (nullptr: none). `call_listener_` is the same
  // object when it asked for every call, else nullptr.
  std::unique_ptr<BreakerListener> listener_;
  BreakerListener* call_listener_ = nullptr;
  bool wants_durations_ = false;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_BREAKER_EVENTS_HPP_
