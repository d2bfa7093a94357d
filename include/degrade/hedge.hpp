// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: hedge.hpp
// -----------------------------------------------------------------------------
//
// Hedged requests ("The Tail at Scale", Dean and Barroso): when a route has
// not answered by the time most of its calls have (its p95), send a second
// copy of the call and take whichever answers first. A fan-out stage waits
// for its slowest route, so one straggler in a hundred calls sets the
// stage's p99; a hedge after the p95 turns that straggler into "p95 plus a
// normal call" for about 5% more calls. gRPC C++ accepts a hedgingPolicy
// and ignores it, so this is the C++ user's way to hedge.
//
// A `HedgePolicy` is one route's hedging: the delay (fixed, or a quantile
// of the route's recent attempt latency), how many extra attempts one call
// may send (`max_hedges`), and a cap on the extra load (`max_extra_load`,
// hedges as a fraction of calls over a sliding window: an outage of the
// route can never turn into a storm of hedges). `Hedge()` runs one call
// under it:
//
//   degrade::HedgeSettings hs;
//   hs.name = "ann";                    // p95 delay, 1 hedge, <= 5% extra
//   auto policy = *degrade::HedgePolicy::Create(hs);
//   degrade::ThreadPool pool(8);        // built last: destroyed first
//   absl::StatusOr<Items> items = degrade::Hedge(
//       breaker, *policy, pool,
//       [client, req](const degrade::CancelToken& cancel) {  // by value!
//         return client->Search(req, cancel);  // polls cancel.cancelled()
//       });
//   // The first success is the answer; the other attempt is cancelled and
//   // counts at `breaker` as neither success nor failure.
//
// How a call goes. The first attempt runs on the executor; the caller's
// thread waits. If no attempt has answered after `delay`, a hedge is sent
// (if the cap, the breaker and the executor allow it), and so on up to
// `max_hedges`, one delay apart. The first success wins: the caller gets it
// at once, and every other attempt's `CancelToken` turns cancelled. A
// failure while another attempt is running waits for that one; a failure
// with none left running is the answer (hedging is not retrying: put a
// retry policy around `Hedge()` for errors). See detail/retry/hedge_race.hpp
// for the rules and how outcomes reach the breaker.
//
// The attempts outlive the caller. A loser keeps running on the executor
// after `Hedge()` has returned, so the call must own what it uses (capture
// by value or shared_ptr, never the caller's stack, as for CallWithTimeout),
// and the policy, the breaker and the executor's other users must outlive
// the executor's tasks: build the executor last, so it is destroyed (and
// joined) first. The call may run on several threads at once, one per
// attempt, so it must be safe to call concurrently.
//
// The executor refusing. A refused hedge is not sent (counted in
// `hedges_refused`); a refused first attempt runs on the caller's thread,
// unhedged: a full pool costs the call its hedge, never its answer.
//
// Time. Delays, latencies and the windows use the policy's clock. The
// caller waits on a condition variable, in real time, for the delay the
// clock gives; tests that need virtual time drive a `HedgedCall` by hand
// (`StartHedge`, `next_hedge_at()`, `SendHedge()`), as
// tests/hedge_simulation_test.cpp does with a manual executor.
//
// Nothing here throws. A call that throws counts as a failed attempt whose
// status IsCallableException() recognises.
//
// Thread safety: HedgePolicy, Hedge() and StartHedge() are thread-safe. A
// HedgedCall belongs to one caller.

#ifndef DEGRADE_HEDGE_HPP_
#define DEGRADE_HEDGE_HPP_

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/retry/hedge_book.hpp"
#include "degrade/detail/retry/hedge_race.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/hedge_settings.hpp"  // IWYU pragma: export
#include "degrade/hedge_stats.hpp"     // IWYU pragma: export
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {
struct HedgeAccess;
}  // namespace detail

// HedgePolicy
//
// One route's hedging, kept between calls: its settings, the latency
// histogram its delay is read from, the sliding window of the extra-load
// cap, and its statistics. One per route (a shared policy would mix the
// routes' latencies). Thread-safe; neither copyable nor movable.
class HedgePolicy final {
 public:
  // INVALID_ARGUMENT (ValidateHedgeSettings) or a policy that has seen no
  // call yet (with a quantile delay, it hedges once `min_samples`
  // latencies are in its window).
  static absl::StatusOr<std::unique_ptr<HedgePolicy>> Create(
      HedgeSettings s) {
    absl::Status valid = ValidateHedgeSettings(s);
    if (!valid.ok()) return valid;
    return std::unique_ptr<HedgePolicy>(new HedgePolicy(std::move(s)));
  }

  HedgePolicy(const HedgePolicy&) = delete;
  HedgePolicy& operator=(const HedgePolicy&) = delete;
  ~HedgePolicy() { telemetry_.reset(); }  // first: its view reads us

  const std::string& name() const { return book_.settings().name; }
  const HedgeSettings& settings() const { return book_.settings(); }

  // The delay a call starting now would get: the fixed delay, the latency
  // quantile (refreshed a few times per window), or InfiniteDuration()
  // while too few latencies are known.
  absl::Duration delay() const { return book_.Delay(book_.clock().Now()); }

  // Totals and current readings (hedge_stats.hpp).
  HedgeStats stats() const { return book_.stats(); }

  // Adds a latency of this route measured elsewhere (an unhedged call, a
  // warm-up), so the quantile can be known before the first hedged call.
  void RecordLatency(absl::Duration latency) {
    book_.RecordLatency(book_.clock().Now(), latency);
  }

 private:
  friend struct detail::HedgeAccess;

  explicit HedgePolicy(HedgeSettings s) : book_(std::move(s)) {
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ = detail::Attach(book_.settings().metrics,
                                &Telemetry::AttachHedge, view_);
  }

  // Counters and caches change under const reads (delay(), stats()).
  mutable detail::HedgeBook book_;
  const detail::OwnerView<HedgePolicy, HedgeStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// HedgedCall<T>
//
// One hedged call in progress, for callers that drive it themselves: an
// event loop with its own timers, or a test on a FakeClock. `Hedge()` is
// this plus a loop that waits for `next_hedge_at()` and calls
// `SendHedge()`. Destroying it before `Take()` cancels the call (its
// attempts' tokens turn cancelled and their outcomes count as excluded).
//
// Movable, not copyable, not thread-safe itself (one caller); the attempts
// it started run wherever the executor runs them.
template <typename T>
class [[nodiscard]] HedgedCall {
 public:
  using Result = detail::ResultOf<T>;

  HedgedCall(HedgedCall&&) noexcept = default;
  HedgedCall& operator=(HedgedCall&& other) noexcept {
    if (this != &other) {
      if (race_ != nullptr) race_->Abandon();
      race_ = std::move(other.race_);
    }
    return *this;
  }
  HedgedCall(const HedgedCall&) = delete;
  HedgedCall& operator=(const HedgedCall&) = delete;
  ~HedgedCall() {
    if (race_ != nullptr) race_->Abandon();
  }

  // When the next hedge is due, on the policy's clock: the start plus k
  // delays for the k-th. InfiniteFuture() when no more will be sent
  // (answered, all sent, one refused, or the delay not yet known).
  absl::Time next_hedge_at() const { return race_->next_hedge_at(); }
  // The delay between this call's attempts (InfiniteDuration() when none
  // will be sent). The next hedge is never more than one delay away,
  // whatever the clock says: a driver that waits for `next_hedge_at()` caps
  // its wait at this, so a clock stepped back cannot hold hedges back.
  absl::Duration hedge_delay() const { return race_->delay(); }
  // Sends the next attempt now, whatever the time, if the call is
  // unanswered and the cap, the breaker and the executor allow it. True if
  // sent. A refused hedge ends hedging for this call.
  bool SendHedge() { return race_->SendHedge(); }
  // Whether the answer is there (Take() would not block).
  bool done() const { return race_->done(); }
  // Waits up to `timeout` of real time for the answer. True if it is there.
  bool WaitFor(absl::Duration timeout) { return race_->WaitFor(timeout); }
  // Waits for the answer and returns it. REQUIRES: not called before on
  // this call (the answer is moved out).
  Result Take() { return race_->Take(); }
  // Attempts started so far (the first included).
  int attempts() const { return race_->attempts(); }
  // Which attempt answered: 0 the first, k the k-th hedge; -1 for none yet
  // or a call that failed.
  int winner() const { return race_->winner(); }

 private:
  friend struct detail::HedgeAccess;
  explicit HedgedCall(std::shared_ptr<detail::HedgeRace<T>> race)
      : race_(std::move(race)) {}

  std::shared_ptr<detail::HedgeRace<T>> race_;
};

namespace detail {

// What a hedged call's `call` returns: it takes a `const CancelToken&` or
// nothing.
template <typename F, bool = std::is_invocable_v<F&, const CancelToken&>>
struct HedgeCallTraits {
  using R = std::decay_t<std::invoke_result_t<F&, const CancelToken&>>;
  static constexpr bool kTakesToken = true;
};
template <typename F>
struct HedgeCallTraits<F, false> {
  using R = std::decay_t<std::invoke_result_t<F&>>;
  static constexpr bool kTakesToken = false;
};
template <typename F>
using HedgeValueOf = typename Unwrapped<typename HedgeCallTraits<F>::R>::type;

struct HedgeAccess {
  template <typename T, typename F>
  static HedgedCall<T> Start(CircuitBreaker<T>* breaker, HedgePolicy& policy,
                             Executor& executor, F call) {
    using Traits = HedgeCallTraits<F>;
    // Shared by the attempts, so a move-only call works too.
    auto f = std::make_shared<F>(std::move(call));
    typename HedgeRace<T>::Call erased =
        [f](const CancelToken& token) -> ResultOf<T> {
      if constexpr (Traits::kTakesToken) {
        auto bound = [&] { return (*f)(token); };
        return InvokeToResult<T>(bound);
      } else {
        (void)token;
        return InvokeToResult<T>(*f);
      }
    };
    auto race = std::make_shared<HedgeRace<T>>(&policy.book_, &executor,
                                               breaker, std::move(erased));
    race->Start();
    return HedgedCall<T>(std::move(race));
  }
};

// The caller's side of Hedge(): wait for each hedge's time, send it, then
// wait for the answer.
template <typename T>
ResultOf<T> RunHedged(HedgedCall<T> call, const Clock& clock) {
  for (;;) {
    const absl::Time at = call.next_hedge_at();
    if (at == absl::InfiniteFuture()) break;
    // The k-th hedge is due k delays after the start and the (k-1)-th was
    // sent at or after its time, so the wait is at most one delay: a clock
    // stepped back (at is on the clock as it read before) waits no longer.
    if (call.WaitFor(
            std::min(RemainingUntil(at, clock.Now()), call.hedge_delay()))) {
      break;
    }
    call.SendHedge();  // false: refused or answered; the loop then ends
  }
  return call.Take();
}

}  // namespace detail

// StartHedge(policy, executor, call)
// StartHedge(breaker, policy, executor, call)
//
// Starts a hedged call and returns it for the caller to drive (see
// HedgedCall); the first attempt is on the executor (or has run on this
// thread, if the executor refused it) when it returns. `call` is
// `(const CancelToken&)` or `()`, returning T or absl::StatusOr<T>
// (absl::Status or void for T = void). With a breaker, every attempt is
// admitted by it; a rejected first attempt is the answer, a rejected hedge
// is not sent. REQUIRES: as for Hedge().
template <typename F>
auto StartHedge(HedgePolicy& policy, Executor& executor, F call) {
  using T = detail::HedgeValueOf<F>;
  return detail::HedgeAccess::Start<T>(nullptr, policy, executor,
                                       std::move(call));
}

template <typename T, typename F>
HedgedCall<T> StartHedge(CircuitBreaker<T>& breaker, HedgePolicy& policy,
                         Executor& executor, F call) {
  static_assert(std::is_same_v<detail::HedgeValueOf<F>, T>,
                "degrade: the hedged call must return the breaker's T or "
                "absl::StatusOr<T>");
  return detail::HedgeAccess::Start<T>(&breaker, policy, executor,
                                       std::move(call));
}

// Hedge(policy, executor, call)
// Hedge(breaker, policy, executor, call)
//
// Runs `call` hedged under `policy` (see the file comment) and returns the
// first success, or the failure that ended the call: an attempt's error,
// the breaker's rejection of the first attempt, or a status recognised by
// IsCallableException if the call threw. Blocks the caller until then (a
// loser is not waited for). `call` as for StartHedge.
//
// REQUIRES: `call` owns what it uses and is safe to call concurrently;
// `policy` and `breaker` outlive every task the call puts on `executor`.
// Thread-safe.
template <typename F>
auto Hedge(HedgePolicy& policy, Executor& executor, F call) {
  return detail::RunHedged(StartHedge(policy, executor, std::move(call)),
                           policy.settings().clock != nullptr
                               ? *policy.settings().clock
                               : RealClock::Instance());
}

template <typename T, typename F>
detail::ResultOf<T> Hedge(CircuitBreaker<T>& breaker, HedgePolicy& policy,
                          Executor& executor, F call) {
  return detail::RunHedged(
      StartHedge(breaker, policy, executor, std::move(call)),
      policy.settings().clock != nullptr ? *policy.settings().clock
                                         : RealClock::Instance());
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_HEDGE_HPP_
