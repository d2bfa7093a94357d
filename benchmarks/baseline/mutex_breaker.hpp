// Baseline circuit breaker for the benchmarks: gobreaker's algorithm,
// translated to C++ the straightforward way.
//
// One std::mutex guards all state. Every call takes the lock twice: once
// before the protected function runs (to check the state and count the
// request) and once after (to record the outcome). Each of those critical
// sections reads std::chrono::steady_clock::now(), because that is where
// gobreaker calls time.Now(). The state machine, the generation check and
// the Counts bookkeeping follow gobreaker's behaviour:
//
//   * closed    -> open       when ready_to_trip(counts) is true after a
//   failure;
//   * open      -> half-open  once `timeout` has elapsed;
//   * half-open -> closed     after `max_requests` consecutive successes;
//   * half-open -> open       on any failure;
//   * in the closed state the counts are cleared every `interval` (if > 0);
//   * every state change (and every interval reset) starts a new generation,
//     and outcomes of requests admitted in an older generation are ignored.
//
// Like gobreaker v2, `bucket_period` turns the closed-state interval into a
// rolling window: `interval / bucket_period` buckets of `bucket_period` each,
// the oldest bucket dropping out of the counts when a new one starts. It is
// kept under the same mutex.
//
// This file is benchmark-only code; it is not part of the degrade library.
#ifndef DEGRADE_BENCHMARKS_BASELINE_MUTEX_BREAKER_HPP_
#define DEGRADE_BENCHMARKS_BASELINE_MUTEX_BREAKER_HPP_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace degrade_baseline {

enum class State { kClosed, kHalfOpen, kOpen };

// The numbers of requests and their outcomes, cleared on every state change
// and at every closed-state interval (or, with a rolling window, covering only
// the buckets still in the window).
struct Counts {
  std::uint32_t requests = 0;
  std::uint32_t total_successes = 0;
  std::uint32_t total_failures = 0;
  std::uint32_t consecutive_successes = 0;
  std::uint32_t consecutive_failures = 0;

  void OnRequest() { ++requests; }
  void OnSuccess() {
    ++total_successes;
    ++consecutive_successes;
    consecutive_failures = 0;
  }
  void OnFailure() {
    ++total_failures;
    ++consecutive_failures;
    consecutive_successes = 0;
  }
  void Clear() { *this = Counts{}; }
};

struct Settings {
  std::string name;
  // Requests let through while half-open; 0 means 1.
  std::uint32_t max_requests = 0;
  // Closed-state period after which the counts are cleared; <= 0: never.
  std::chrono::nanoseconds interval{0};
  // If > 0 and different from `interval`: rolling window of
  // interval / bucket_period buckets instead of a fixed interval.
  std::chrono::nanoseconds bucket_period{0};
  // Time spent open before going half-open; <= 0 means 60 s.
  std::chrono::nanoseconds timeout{0};
  // Called after each failure in the closed state; empty: more than 5
  // consecutive failures.
  std::function<bool(const Counts&)> ready_to_trip;
  // Called (under the lock) on every state change; may be empty.
  std::function<void(const std::string&, State, State)> on_state_change;
  // Classifies an outcome; empty: ok() is a success.
  std::function<bool(const absl::Status&)> is_successful;
};

// The errors gobreaker returns are package-level values created once; these
// are the same: copying them only bumps a reference count.
inline const absl::Status& OpenStateError() {
  static const absl::Status* const kError =
      new absl::Status(absl::UnavailableError("circuit breaker is open"));
  return *kError;
}

inline const absl::Status& TooManyRequestsError() {
  static const absl::Status* const kError =
      new absl::Status(absl::ResourceExhaustedError("too many requests"));
  return *kError;
}

template <typename T>
class MutexBreaker {
 public:
  using Clock = std::chrono::steady_clock;

  explicit MutexBreaker(Settings settings = {})
      : name_(std::move(settings.name)),
        max_requests_(settings.max_requests == 0 ? 1 : settings.max_requests),
        timeout_(settings.timeout.count() <= 0
                     ? std::chrono::nanoseconds(std::chrono::seconds(60))
                     : settings.timeout),
        ready_to_trip_(std::move(settings.ready_to_trip)),
        on_state_change_(std::move(settings.on_state_change)),
        is_successful_(std::move(settings.is_successful)) {
    if (!ready_to_trip_) {
      ready_to_trip_ = [](const Counts& c) {
        return c.consecutive_failures > 5;
      };
    }
    std::size_t num_buckets = 1;
    if (settings.interval.count() > 0) {
      if (settings.bucket_period.count() <= 0 ||
          settings.bucket_period == settings.interval) {
        interval_ = settings.interval;
      } else {
        interval_ = settings.bucket_period;
        num_buckets = static_cast<std::size_t>(std::max<std::int64_t>(
            1, settings.interval / settings.bucket_period));
      }
    }
    if (num_buckets > 1) buckets_.resize(num_buckets);
    ToNewGeneration(Clock::now());
  }

  MutexBreaker(const MutexBreaker&) = delete;
  MutexBreaker& operator=(const MutexBreaker&) = delete;

  const std::string& name() const { return name_; }

  State state() {
    std::lock_guard<std::mutex> lock(mu_);
    return CurrentState(Clock::now());
  }

  Counts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

  // Runs `f` (returning T or absl::StatusOr<T>) if the breaker admits the
  // request; otherwise returns the open-state / too-many-requests error
  // without calling it. An exception thrown by `f` counts as a failure and
  // is rethrown.
  template <typename F>
  absl::StatusOr<T> Execute(F&& f) {
    Ticket ticket;
    if (absl::Status admitted = BeforeRequest(ticket); !admitted.ok()) {
      return admitted;
    }
    absl::StatusOr<T> result = Invoke(std::forward<F>(f), ticket);
    AfterRequest(ticket, IsSuccessful(result.status()));
    return result;
  }

 private:
  // What beforeRequest hands to afterRequest: the generation the request was
  // admitted in and, with a rolling window, the bucket it was counted in.
  struct Ticket {
    std::uint64_t generation = 0;
    std::uint64_t bucket = 0;
  };

  template <typename F>
  absl::StatusOr<T> Invoke(F&& f, const Ticket& ticket) {
    try {
      return std::forward<F>(f)();
    } catch (...) {
      AfterRequest(ticket, false);
      throw;
    }
  }

  bool IsSuccessful(const absl::Status& status) const {
    return is_successful_ ? is_successful_(status) : status.ok();
  }

  bool Rolling() const { return !buckets_.empty(); }

  absl::Status BeforeRequest(Ticket& ticket) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    const State state = CurrentState(now);
    if (state == State::kOpen) return OpenStateError();
    if (state == State::kHalfOpen && counts_.requests >= max_requests_) {
      return TooManyRequestsError();
    }
    counts_.OnRequest();
    if (Rolling()) buckets_[bucket_ % buckets_.size()].OnRequest();
    ticket.generation = generation_;
    ticket.bucket = bucket_;
    return absl::OkStatus();
  }

  void AfterRequest(const Ticket& ticket, bool success) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    const State state = CurrentState(now);
    if (generation_ != ticket.generation) return;
    if (success) {
      OnSuccess(state, now, ticket.bucket);
    } else {
      OnFailure(state, now, ticket.bucket);
    }
  }

  // Records an outcome in the counts and, with a rolling window, in the
  // bucket the request was admitted in, unless that bucket has left the
  // window meanwhile.
  template <typename Record>
  void Count(std::uint64_t bucket, Record record) {
    if (Rolling()) {
      if (bucket_ - bucket >= buckets_.size()) return;
      record(buckets_[bucket % buckets_.size()]);
    }
    record(counts_);
  }

  void OnSuccess(State state, Clock::time_point now, std::uint64_t bucket) {
    switch (state) {
      case State::kClosed:
        Count(bucket, [](Counts& c) { c.OnSuccess(); });
        break;
      case State::kHalfOpen:
        counts_.OnSuccess();
        if (counts_.consecutive_successes >= max_requests_) {
          SetState(State::kClosed, now);
        }
        break;
      case State::kOpen:
        break;
    }
  }

  void OnFailure(State state, Clock::time_point now, std::uint64_t bucket) {
    switch (state) {
      case State::kClosed:
        Count(bucket, [](Counts& c) { c.OnFailure(); });
        if (ready_to_trip_(counts_)) SetState(State::kOpen, now);
        break;
      case State::kHalfOpen:
        SetState(State::kOpen, now);
        break;
      case State::kOpen:
        break;
    }
  }

  // The state at `now`, applying the closed-state interval (or advancing the
  // rolling window) and the open-state timeout if they have expired.
  State CurrentState(Clock::time_point now) {
    switch (state_) {
      case State::kClosed:
        if (expiry_ != Clock::time_point{} && expiry_ < now) {
          if (Rolling()) {
            const auto periods =
                static_cast<std::uint64_t>((now - expiry_) / interval_) + 1;
            Roll(periods);
            expiry_ += interval_ * static_cast<std::int64_t>(periods);
          } else {
            ToNewGeneration(now);
          }
        }
        break;
      case State::kOpen:
        if (expiry_ < now) SetState(State::kHalfOpen, now);
        break;
      case State::kHalfOpen:
        break;
    }
    return state_;
  }

  // Starts `periods` new buckets, dropping the oldest ones from the counts.
  void Roll(std::uint64_t periods) {
    const std::size_t n = buckets_.size();
    if (periods >= n) {
      for (Counts& b : buckets_) b.Clear();
      counts_.Clear();
      bucket_ += periods;
      return;
    }
    for (std::uint64_t i = 0; i < periods; ++i) {
      ++bucket_;
      Counts& oldest = buckets_[bucket_ % n];
      counts_.requests -= oldest.requests;
      counts_.total_successes -= oldest.total_successes;
      counts_.total_failures -= oldest.total_failures;
      oldest.Clear();
    }
    // A run of consecutive outcomes that reached into a dropped bucket now
    // covers every outcome of its kind left in the window.
    counts_.consecutive_successes =
        std::min(counts_.consecutive_successes, counts_.total_successes);
    counts_.consecutive_failures =
        std::min(counts_.consecutive_failures, counts_.total_failures);
  }

  void SetState(State state, Clock::time_point now) {
    if (state_ == state) return;
    const State previous = state_;
    state_ = state;
    ToNewGeneration(now);
    if (on_state_change_) on_state_change_(name_, previous, state);
  }

  void ToNewGeneration(Clock::time_point now) {
    ++generation_;
    counts_.Clear();
    for (Counts& b : buckets_) b.Clear();
    bucket_ = 0;
    switch (state_) {
      case State::kClosed:
        expiry_ = interval_.count() > 0 ? now + interval_ : Clock::time_point{};
        break;
      case State::kOpen:
        expiry_ = now + timeout_;
        break;
      case State::kHalfOpen:
        expiry_ = Clock::time_point{};
        break;
    }
  }

  const std::string name_;
  const std::uint32_t max_requests_;
  std::chrono::nanoseconds interval_{0};  // bucket period when rolling
  const std::chrono::nanoseconds timeout_;
  std::function<bool(const Counts&)> ready_to_trip_;
  const std::function<void(const std::string&, State, State)> on_state_change_;
  const std::function<bool(const absl::Status&)> is_successful_;

  std::mutex mu_;
  State state_ = State::kClosed;
  std::uint64_t generation_ = 0;
  Counts counts_;
  Clock::time_point expiry_{};   // zero: none
  std::vector<Counts> buckets_;  // empty unless rolling
  std::uint64_t bucket_ = 0;     // index of the current bucket (not modulo)
};

}  // namespace degrade_baseline

#endif  // DEGRADE_BENCHMARKS_BASELINE_MUTEX_BREAKER_HPP_
