// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: retry.hpp
// -----------------------------------------------------------------------------
//
// Retries that cannot turn a brownout into an outage. A `Retrier` runs an
// attempt, and on a failure worth retrying waits a backoff and runs it
// again, up to `max_attempts`, but only while three things allow it:
//
//   * the status: by default UNAVAILABLE and DEADLINE_EXCEEDED (a per-try
//     timeout), and RESOURCE_EXHAUSTED only when the server said when to
//     come back (a retry-after hint, ShedRetryAfter()/RetryAfterHint()).
//     Whatever the predicate says, a breaker's rejection (IsRejected), a
//     shed or throttled request without a hint, a hint of "do not retry"
//     (negative) and a hint longer than `max_retry_after` are never
//     retried;
//   * the caller's `Deadline`: no attempt starts once it has passed (not
//     even the first), and a retry starts only if its backoff ends before
//     it, so no call outlives its budget for a retry;
//   * the downstream's `RetryBudget` (retry_budget.hpp): each call deposits,
//     each retry sent withdraws (after its backoff, so a retry the deadline
//     stops after a late wake-up spends nothing), and an empty budget ends
//     the call with the error it had. A policy without a budget must say so
//     (`unbudgeted`).
//
// The backoff is gRPC's (A6) with full jitter: before retry n (n >= 1) it
// waits random(0, min(initial_backoff * multiplier^(n-1), max_backoff)),
// or the server's retry-after if that is longer. Waiting goes through the
// policy's `sleep`, so a test gives it a FakeClock's Advance() and never
// sleeps. The error returned keeps the last attempt's code and payloads
// (IsBreakerOpen() and friends still hold) and says in its message how many
// attempts were made and why the loop stopped.
//
//   degrade::RetrySettings p;
//   p.name = "recall";
//   p.budget = budget.get();  // one RetryBudget per downstream
//   auto retrier = degrade::Retrier::Create(p).value();
//   degrade::RetryRecord record;
//   absl::StatusOr<Items> items = degrade::Retry(
//       *retrier, breaker, degrade::Deadline::In(absl::Milliseconds(100)),
//       [&](const degrade::RetryAttempt& a) {
//         return client.Recall(request, a.deadline, a.number);
//       },
//       &record);               // record.attempts, record.stop
//
// The attempt callable receives a `RetryAttempt` (its number, for a
// grpc-previous-rpc-attempts header, and the deadline, to pass on to the
// RPC client so the attempt itself gives up in time), or nothing. It
// returns T or absl::StatusOr<T>; a throw becomes IsCallableException()
// and, UNKNOWN, is not retried by default.
//
// Composition, outermost first: fallback > Retry > throttler > breaker >
// per-attempt timeout > the call (docs/retries-and-hedging.md). Each
// attempt is one call at the breaker; an open breaker stops the loop.
//
// Cost of a call that succeeds first time: one plain add on a per-thread
// counter line and, with a budget, its Deposit(); the clock is read once
// before the first attempt when the deadline is finite (none for no
// deadline), and otherwise only to decide a retry. In the breaker form the
// breaker's Execute() is the exception boundary (it turns the callable's throw
// into a status), so the retrier adds none of its own there: what Execute()
// itself might throw, an allocation failing, reaches the caller as it would
// from any other call. Call() and Retry() are forced inline and the retry loop
// is out of line, so a first success costs little more than the attempt
// (docs/performance.md).
//
// Thread safety: `Retrier` is thread-safe; the attempt, the predicate and
// `sleep` are called on the calling thread.

#ifndef DEGRADE_RETRY_HPP_
#define DEGRADE_RETRY_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/backoff.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/retry_budget.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// RetryAttempt
//
// What an attempt callable may take: which attempt this is (1 for the
// first) and the caller's deadline.
struct RetryAttempt {
  int number = 1;
  const Deadline& deadline;
};

// RetryRecord
//
// What became of one call, filled in by Retry() when given one.
struct RetryRecord {
  int attempts = 0;
  RetryStop stop = RetryStop::kSucceeded;
  // True when the budget refused a retry (then stop is kBudgetExhausted).
  bool budget_refused = false;
  // The backoffs waited, in total.
  absl::Duration waited = absl::ZeroDuration();
};

// DefaultRetryable(status)
//
// The default predicate: UNAVAILABLE, DEADLINE_EXCEEDED, and
// RESOURCE_EXHAUSTED with a retry-after hint that is not "do not retry".
// (The deadline's room is checked for every status by the loop itself.)
inline bool DefaultRetryable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    case absl::StatusCode::kResourceExhausted: {
      const auto hint = RetryAfterHint(status);
      return hint.has_value() && *hint >= absl::ZeroDuration();
    }
    default:
      return false;
  }
}

// RetrySettings
//
// Settings for Retrier::Create(), which refuses a value out of range with
// INVALID_ARGUMENT naming the setting and the value.
struct RetrySettings {
  // Names the retrier in its errors and metrics. Non-empty.
  std::string name = "retry";
  // Attempts in all, the first included, in [1, 10] (gRPC caps it at 5).
  int max_attempts = 3;
  // The backoff before retry n is random(0, min(initial_backoff *
  // multiplier^(n-1), max_backoff)). initial_backoff and max_backoff are
  // finite and >= 0, max_backoff >= initial_backoff; multiplier is finite
  // and in [1, 100].
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  double multiplier = 2.0;
  // Which failures are worth another attempt; nullptr means
  // DefaultRetryable. Never asked about the statuses that are never retried
  // (see the file comment). A throw counts as false.
  std::function<bool(const absl::Status&)> retryable;
  // The longest retry-after hint the retrier waits for. A longer one (a
  // unit mix-up, a bug, a hostile peer: a century would hold a caller
  // without a deadline for that century) is read as "do not retry": the
  // call ends at once with the error it had (stop kDoNotRetry). Finite
  // and >= 0; zero honours only a hint of zero. Five minutes is Envoy's
  // default for its rate-limited retry back-off (a longer reset header is
  // not waited for): long enough for a per-minute rate-limit window to
  // roll over, short enough that no thread is lost. The gRPC adapter
  // already reads pushback above an hour as "do not retry" (status.hpp).
  absl::Duration max_retry_after = absl::Minutes(5);
  // The downstream's budget, shared with everything that retries against
  // it. REQUIRES: outlives the retrier. Mandatory unless `unbudgeted`.
  RetryBudget* budget = nullptr;
  // Set to retry without a budget, knowingly (a test, a leaf that nothing
  // retries above). Create() refuses a null budget without it.
  bool unbudgeted = false;
  // For a server that retries its own downstream: when a call ends on a
  // failure this retrier would have retried but did not (attempts, budget
  // or deadline ran out), the error returned carries a retry-after of "do
  // not retry" (RetryAfterHint() < 0), so that a Retrier in the caller,
  // reading the reply, stops instead of multiplying the retries (SRE
  // book, ch. 22: retry at one layer only). The gRPC adapter sends it as
  // grpc-retry-pushback-ms = -1.
  bool tell_callers_not_to_retry = false;
  // Waits a backoff; nullptr means absl::SleepFor. A test passes
  // [&clock](absl::Duration d) { clock.Advance(d); }. Called on the
  // calling thread; must not throw.
  std::function<void(absl::Duration)> sleep;
  // Seeds the jitter: the k-th backoff drawn by a retrier is a pure
  // function of (seed, k), so a single-threaded test repeats exactly.
  uint64_t seed = 1;
  // Where it reports (a RetrierView through Telemetry::AttachRetrier).
  // nullptr means DefaultTelemetry(); NoTelemetry() means none.
  Telemetry* metrics = nullptr;
};

// RetryPolicy
//
// The name RetrySettings had before the naming rule (HACKING.md, "Names"):
// kept so that code written against it compiles.
using RetryPolicy = RetrySettings;

// ValidateRetrySettings(p)
//
// OK, or INVALID_ARGUMENT naming the retrier, the setting and its value.
// Pure; thread-safe.
inline absl::Status ValidateRetrySettings(const RetrySettings& p);

class Retrier;

namespace detail {
// An attempt the retrier runs without an exception boundary of its own:
// the breaker form's, whose callable Execute() already guards. A try
// around it cost a third of a first-time call (docs/performance.md), and
// declaring it noexcept would turn a bad_alloc inside Execute() into
// std::terminate.
template <typename F>
struct UnguardedAttempt {
  F f;
  decltype(auto) operator()(const RetryAttempt& a) { return f(a); }
};
template <typename F>
inline constexpr bool kIsUnguardedAttempt = false;
template <typename F>
inline constexpr bool kIsUnguardedAttempt<UnguardedAttempt<F>> = true;
}  // namespace detail

// Retry(retrier, deadline, attempt[, record])
//
// Runs `attempt` under `retrier`'s policy (see the file comment): its
// first success, or its last error reworded to say how many attempts were
// made and why it stopped. `record`, when not null, receives the same.
// Thread-safe.
template <typename F>
auto Retry(Retrier& retrier, const Deadline& deadline, F&& attempt,
           RetryRecord* record = nullptr);

// Retry(retrier, breaker, deadline, attempt[, record])
//
// The same with each attempt run through `breaker.Execute()`: every
// attempt is one call at the breaker, and its rejection ends the loop
// (kBreakerRejected) with the rejection, so a fallback sees IsRejected().
template <typename T, typename F>
typename CircuitBreaker<T>::Result Retry(Retrier& retrier,
                                         CircuitBreaker<T>& breaker,
                                         const Deadline& deadline, F&& attempt,
                                         RetryRecord* record = nullptr);

// Retrier
//
// One per downstream and call site, like a breaker: it holds the validated
// policy, the jitter's stream and the counts the telemetry reads. The
// policy is fixed at creation. Thread-safe; neither copyable nor movable.
class Retrier final {
 public:
  static absl::StatusOr<std::unique_ptr<Retrier>> Create(RetrySettings policy);

  Retrier(const Retrier&) = delete;
  Retrier& operator=(const Retrier&) = delete;
  ~Retrier() { telemetry_.reset(); }

  // See Retry(retrier, deadline, attempt, record).
  template <typename F>
  auto Call(const Deadline& deadline, F&& attempt,
            RetryRecord* record = nullptr);

  const RetrySettings& policy() const { return policy_; }
  const std::string& name() const { return name_; }

  // Totals since construction; exact once the calls have returned.
  RetrierStats stats() const;

 private:
  struct alignas(detail::kCacheLine) Shard {
    // Calls whose first attempt succeeded: one add instead of an attempts
    // bucket and a stop, which stats() adds back.
    detail::ShardCounter first_time_ok;
    detail::ShardCounter attempts[kAttemptBuckets];
    detail::ShardCounter stops[kNumRetryStops];
  };

  explicit Retrier(RetrySettings policy);

  // One attempt. A callable the user declared noexcept needs no exception
  // boundary of ours, nor one that is guarded already (`kGuarded`).
  template <typename T, bool kGuarded, typename Bound>
  DEGRADE_ALWAYS_INLINE detail::ResultOf<T> RunAttempt(Bound& bound,
                                                       int number) const {
    auto numbered = [&bound, number]() noexcept(
                        std::is_nothrow_invocable_v<Bound&, int>)
        -> decltype(auto) { return bound(number); };
    if constexpr (kGuarded || std::is_nothrow_invocable_v<Bound&, int>) {
      return detail::InvokeToResult<T>(numbered);
    } else {
      return detail::InvokeCatching<T>(numbered, "retry", name_);
    }
  }
  // Call() after its first attempt failed: the retry loop, the record,
  // the counts and the reworded error. Out of line, to keep the first
  // attempt's path short.
  template <typename T, bool kGuarded, typename Bound>
  void AfterFirstFailure(detail::ResultOf<T>& result, Bound& bound,
                         const Deadline& deadline, RetryRecord* record);
  // What to do after attempt `n` failed with `s`: stop (and why), or retry
  // after `*wait`. Only failures come here.
  bool ShouldRetry(const absl::Status& s, int n, const Deadline& deadline,
                   absl::Duration* wait, RetryRecord* rec);
  absl::Duration Backoff(int retry);
  // A call whose deadline had passed before its first attempt: counted,
  // recorded (no attempt, stop kDeadline) and answered DEADLINE_EXCEEDED.
  absl::Status SpentBeforeStart(RetryRecord* record);
  void Wait(absl::Duration d) const;
  void Count(const RetryRecord& rec);
  // The last error, reworded to say how the call ended.
  absl::Status Final(const absl::Status& s, const RetryRecord& rec) const;

  const RetrySettings policy_;
  const std::string name_;
  alignas(detail::kCacheLine) detail::CounterStream jitter_;
  const std::size_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
  const detail::OwnerView<Retrier, RetrierStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation details ----

inline absl::Status ValidateRetrySettings(const RetrySettings& p) {
  const detail::SettingOwner who("retry", p.name);
  auto finite = [](absl::Duration d) {
    return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
  };
  if (p.name.empty()) return who.Invalid("name", "\"\"", "must not be empty");
  if (p.max_attempts < 1 || p.max_attempts > 10) {
    return who.Invalid("max_attempts", p.max_attempts, "must be in [1, 10]");
  }
  if (!finite(p.initial_backoff)) {
    return who.Invalid("initial_backoff",
                       absl::FormatDuration(p.initial_backoff),
                       "must be finite and not negative");
  }
  if (!finite(p.max_backoff) || p.max_backoff < p.initial_backoff) {
    return who.Invalid(
        "max_backoff", absl::FormatDuration(p.max_backoff),
        absl::StrCat("must be finite and at least initial_backoff (",
                     absl::FormatDuration(p.initial_backoff), ")"));
  }
  if (!finite(p.max_retry_after)) {
    return who.Invalid("max_retry_after",
                       absl::FormatDuration(p.max_retry_after),
                       "must be finite and not negative");
  }
  if (!(std::isfinite(p.multiplier) && p.multiplier >= 1.0 &&
        p.multiplier <= 100.0)) {
    return who.Invalid("multiplier", p.multiplier,
                       "must be a finite number in [1, 100]");
  }
  if (p.budget == nullptr && !p.unbudgeted) {
    return who.Invalid(
        "budget", "null",
        "a retry needs a RetryBudget; set unbudgeted = true to retry "
        "without one on purpose");
  }
  return absl::OkStatus();
}

// The name ValidateRetrySettings() had before; kept for the same reason.
inline absl::Status ValidateRetryPolicy(const RetrySettings& p) {
  return ValidateRetrySettings(p);
}

inline absl::StatusOr<std::unique_ptr<Retrier>> Retrier::Create(
    RetrySettings policy) {
  if (absl::Status v = ValidateRetrySettings(policy); !v.ok()) return v;
  return std::unique_ptr<Retrier>(new Retrier(std::move(policy)));
}

inline Retrier::Retrier(RetrySettings policy)
    : policy_(std::move(policy)),
      name_(detail::Printable(policy_.name)),
      jitter_(policy_.seed),
      shard_count_(detail::ShardArraySize()),
      shards_(new Shard[shard_count_]) {
  telemetry_ =
      detail::Attach(policy_.metrics, &Telemetry::AttachRetrier, view_);
}

template <typename F>
DEGRADE_ALWAYS_INLINE auto Retrier::Call(const Deadline& deadline, F&& attempt,
                                         RetryRecord* record) {
  // The attempt with its RetryAttempt bound, whichever form it takes.
  constexpr bool kNoThrow =
      std::is_invocable_v<F&, const RetryAttempt&>
          ? std::is_nothrow_invocable_v<F&, const RetryAttempt&>
          : std::is_nothrow_invocable_v<F&>;
  // The number is an argument, not a captured local, so that the first
  // attempt's path keeps it in a register.
  auto bound = [&](int number) noexcept(kNoThrow) -> decltype(auto) {
    if constexpr (std::is_invocable_v<F&, const RetryAttempt&>) {
      return std::invoke(attempt, RetryAttempt{number, deadline});
    } else {
      return std::invoke(attempt);
    }
  };
  using R = std::decay_t<std::invoke_result_t<decltype(bound)&, int>>;
  using T = typename detail::Unwrapped<R>::type;
  using Result = detail::ResultOf<T>;

  // A spent deadline makes no attempt (the attempt would hand the expired
  // deadline to its RPC client, and its answer would come too late), and
  // deposits nothing: no request is made. No deadline reads no clock.
  if (DEGRADE_UNLIKELY(deadline.expired())) {
    return Result(SpentBeforeStart(record));
  }
  if (policy_.budget != nullptr) policy_.budget->Deposit();
  // The first attempt is all most calls make: nothing a retry needs (the
  // record, the loop) is built before it fails, and the one `result` is
  // returned on every path so that it is constructed in place.
  constexpr bool kGuarded = detail::kIsUnguardedAttempt<std::decay_t<F>>;
  Result result = RunAttempt<T, kGuarded>(bound, 1);
  if (DEGRADE_LIKELY(detail::StatusOf(result).ok())) {
    shards_[detail::ThreadShardIndex()].first_time_ok.Add(1);
    if (record != nullptr) *record = RetryRecord{1};
  } else {
    AfterFirstFailure<T, kGuarded>(result, bound, deadline, record);
  }
  return result;
}

template <typename T, bool kGuarded, typename Bound>
DEGRADE_NOINLINE void Retrier::AfterFirstFailure(detail::ResultOf<T>& result,
                                                 Bound& bound,
                                                 const Deadline& deadline,
                                                 RetryRecord* record) {
  RetryRecord rec;
  for (int number = 1;; ++number) {
    rec.attempts = number;
    absl::Duration wait;
    if (detail::StatusOf(result).ok() ||
        !ShouldRetry(detail::StatusOf(result), number, deadline, &wait,
                     &rec)) {
      break;
    }
    Wait(wait);
    rec.waited += wait;
    // ShouldRetry saw the wait end before the deadline, but a sleep may
    // overrun it (a loaded machine wakes the thread late; a policy's own
    // sleep may take longer): read the clock again, so that no attempt
    // starts after the caller's deadline.
    if (deadline.expired()) {
      rec.stop = RetryStop::kDeadline;
      break;
    }
    // Withdrawn only now, when the retry is sure to be sent: a retry the
    // deadline stopped above spends nothing. The withdrawal is the atomic
    // grant, so callers racing for the last retry cannot overspend; the
    // check before the sleep (ShouldRetry) only spared a pointless wait.
    if (policy_.budget != nullptr && !policy_.budget->TryWithdraw()) {
      rec.budget_refused = true;
      rec.stop = RetryStop::kBudgetExhausted;
      break;
    }
    result = RunAttempt<T, kGuarded>(bound, number + 1);
  }
  Count(rec);
  if (record != nullptr) *record = rec;
  if (!detail::StatusOf(result).ok()) {
    result = detail::ResultOf<T>(Final(detail::StatusOf(result), rec));
  }
}

inline bool Retrier::ShouldRetry(const absl::Status& s, int n,
                                 const Deadline& deadline, absl::Duration* wait,
                                 RetryRecord* rec) {
  const std::optional<absl::Duration> hint = RetryAfterHint(s);
  auto stop = [rec](RetryStop why) {
    rec->stop = why;
    return false;
  };
  // The rules no predicate overrides.
  if (IsRejected(s)) return stop(RetryStop::kBreakerRejected);
  if (hint.has_value() &&
      (*hint < absl::ZeroDuration() || *hint > policy_.max_retry_after)) {
    return stop(RetryStop::kDoNotRetry);
  }
  if (IsShed(s) && !hint.has_value()) return stop(RetryStop::kShed);
  const bool retryable =
      policy_.retryable ? detail::SafePredicate(policy_.retryable, false, s)
                        : DefaultRetryable(s);
  if (!retryable) return stop(RetryStop::kNotRetryable);
  if (n >= policy_.max_attempts) return stop(RetryStop::kAttemptsExhausted);
  *wait = Backoff(n);
  if (hint.has_value()) *wait = std::max(*wait, *hint);
  // The retry must start before the deadline: read the clock only now.
  if (deadline.remaining() <= *wait) return stop(RetryStop::kDeadline);
  // Not a withdrawal (that is made after the wait, when the retry is sent):
  // a budget already empty ends the call without waiting for nothing.
  if (policy_.budget != nullptr && !policy_.budget->HasRoom()) {
    rec->budget_refused = true;
    return stop(RetryStop::kBudgetExhausted);
  }
  return true;
}

inline absl::Status Retrier::SpentBeforeStart(RetryRecord* record) {
  RetryRecord rec;
  rec.attempts = 0;
  rec.stop = RetryStop::kDeadline;
  Count(rec);
  if (record != nullptr) *record = rec;
  absl::Status out = absl::DeadlineExceededError(
      absl::StrCat("retry '", name_,
                   "': 0 attempts, stopped: deadline; the deadline had "
                   "passed before the first attempt, which was not made"));
  if (policy_.tell_callers_not_to_retry) {
    out.SetPayload(kRetryAfterPayloadUrl, absl::Cord("-1"));
  }
  return out;
}

inline absl::Duration Retrier::Backoff(int retry) {
  return detail::FullJitter(policy_.initial_backoff, policy_.multiplier,
                            policy_.max_backoff, retry - 1, jitter_.NextUnit());
}

inline void Retrier::Wait(absl::Duration d) const {
  if (d <= absl::ZeroDuration()) return;
  if (policy_.sleep) {
    detail::CallQuietly(policy_.sleep, d);
  } else {
    absl::SleepFor(d);
  }
}

inline void Retrier::Count(const RetryRecord& rec) {
  Shard& shard = shards_[detail::ThreadShardIndex()];
  // A call that made no attempt (its deadline had passed) has no bucket.
  if (rec.attempts > 0) {
    const auto bucket = static_cast<std::size_t>(
        std::min<int>(rec.attempts, static_cast<int>(kAttemptBuckets)) - 1);
    shard.attempts[bucket].Add(1);
  }
  shard.stops[static_cast<std::size_t>(rec.stop)].Add(1);
}

inline absl::Status Retrier::Final(const absl::Status& s,
                                   const RetryRecord& rec) const {
  absl::Status out = detail::Reworded(
      s, absl::StrCat("retry '", name_, "': ", rec.attempts,
                      rec.attempts == 1 ? " attempt" : " attempts",
                      ", stopped: ", RetryStopName(rec.stop),
                      "; last error: ", s.message()));
  if (policy_.tell_callers_not_to_retry &&
      (rec.stop == RetryStop::kAttemptsExhausted ||
       rec.stop == RetryStop::kBudgetExhausted ||
       rec.stop == RetryStop::kDeadline)) {
    out.SetPayload(kRetryAfterPayloadUrl, absl::Cord("-1"));
  }
  return out;
}

inline RetrierStats Retrier::stats() const {
  RetrierStats st;
  for (std::size_t i = 0; i < shard_count_; ++i) {
    const uint64_t first_time_ok = shards_[i].first_time_ok.Load();
    st.attempts[0] += first_time_ok;
    st.stops[static_cast<std::size_t>(RetryStop::kSucceeded)] += first_time_ok;
    for (std::size_t a = 0; a < kAttemptBuckets; ++a) {
      st.attempts[a] += shards_[i].attempts[a].Load();
    }
    for (std::size_t r = 0; r < kNumRetryStops; ++r) {
      st.stops[r] += shards_[i].stops[r].Load();
    }
  }
  for (const uint64_t n : st.stops) st.calls += n;
  return st;
}

template <typename F>
DEGRADE_ALWAYS_INLINE auto Retry(Retrier& retrier, const Deadline& deadline,
                                 F&& attempt, RetryRecord* record) {
  return retrier.Call(deadline, std::forward<F>(attempt), record);
}

template <typename T, typename F>
DEGRADE_ALWAYS_INLINE typename CircuitBreaker<T>::Result Retry(
    Retrier& retrier, CircuitBreaker<T>& breaker, const Deadline& deadline,
    F&& attempt, RetryRecord* record) {
  auto guarded = [&](const RetryAttempt& a) {
    return breaker.Execute([&]() -> decltype(auto) {
      if constexpr (std::is_invocable_v<F&, const RetryAttempt&>) {
        return std::invoke(attempt, a);
      } else {
        return std::invoke(attempt);
      }
    });
  };
  return retrier.Call(
      deadline, detail::UnguardedAttempt<decltype(guarded)>{guarded},
      record);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RETRY_HPP_
