// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: testing/failing_backend.hpp
// -----------------------------------------------------------------------------
//
// A stand-in for a dependency (feature service, recall, ranking model) that
// misbehaves on cue, so a service's degradation paths can be unit-tested
// without a network, without sleeping and without flakiness. It is meant for
// degrade's own tests and for users testing their own services.
//
// A `FailingBackend<T>` follows a script: a list of phases laid out back to
// back on a clock, starting when `Script()` is called. The phase active at
// `clock->Now()` when a call starts decides what that call does:
//
//   Healthy(d)                   returns the healthy value
//   Failing(status, d)           returns `status`
//   FailingAtRate(r, seed, d)    fails a fraction `r` of calls, decided by a
//                                seeded generator (same seed, same sequence)
//   Throwing(d)                  throws std::runtime_error
//   Slow(latency, d)             returns the healthy value after `latency`
//                                (simulated: advances the FakeClock)
//   Hanging(d)                   blocks until `ReleaseHung()`, then fails
//   Flapping(up, down, d)        healthy for `up`, failing for `down`, repeat
//
// Every duration defaults to forever. Once the last phase has ended (and
// before the script starts, or before any script is set) the backend is
// healthy, so a finite outage script ends in recovery on its own.
//
//   degrade::FakeClock clock;
//   degrade::testing::FailingBackend<Features> backend(&clock, kFeatures);
//   backend.Script()
//       .Healthy(absl::Seconds(10))
//       .Failing(absl::UnavailableError("feature service down"),
//                absl::Seconds(5))
//       .Healthy();
//   clock.Advance(absl::Seconds(12));
//   absl::StatusOr<Features> f = backend.Call();   // UNAVAILABLE
//   EXPECT_EQ(backend.failures(), 1u);
//
// To make a gMock mock follow the script, forward to it from the mock's
// default action (see tests/failing_backend_test.cpp):
//
//   ON_CALL(mock, Fetch(_)).WillByDefault([&](int) { return backend.Call(); });
//
// Unlike the rest of degrade, this header throws on purpose, but only in the
// Throwing phase and only when exceptions are enabled; with -fno-exceptions
// that phase returns the status a breaker would have made of the exception
// (`degrade::IsCallableException` recognises it) instead.
//
// Thread safety: every member is thread-safe; calls may come from any number
// of threads. Counters are updated under one internal lock, so a snapshot
// from `counts()` is consistent. That lock is never held while a call is
// slow or hung, nor while the healthy value is produced.

#ifndef DEGRADE_TESTING_FAILING_BACKEND_HPP_
#define DEGRADE_TESTING_FAILING_BACKEND_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
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
#include "degrade/clock.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/status.hpp"
#include "degrade/testing/backend_script.hpp"  // IWYU pragma: export
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace testing {

// FailingBackendOptions
//
// Construction-time settings of a backend. A plain value.
struct FailingBackendOptions {
  // Names the backend in the statuses and exception messages it makes.
  std::string name = "backend";
  // See `SlowMode`.
  SlowMode slow_mode = SlowMode::kAuto;
  // A safety net, in real time: a hung call that nobody releases gives up
  // after this long and returns DEADLINE_EXCEEDED, so a test that forgets
  // `ReleaseHung()` fails instead of hanging the test runner.
  // `absl::InfiniteDuration()` waits forever.
  absl::Duration hang_timeout = absl::Seconds(60);
};

// BackendCounts
//
// What a backend has seen since construction (or `ResetCounts()`). A plain
// value: copies are snapshots. Once every call has returned,
// `calls == successes + failures + throws`.
struct BackendCounts {
  // Calls started.
  uint64_t calls = 0;
  // Calls that returned the healthy value (slow ones included).
  uint64_t successes = 0;
  // Calls that returned a non-OK status (released or timed-out hangs
  // included).
  uint64_t failures = 0;
  // Calls in a Throwing phase: they threw, or, under -fno-exceptions,
  // returned the stand-in status. Not counted in `failures`.
  uint64_t throws = 0;
  // Calls that were given latency by a Slow phase.
  uint64_t slow_calls = 0;
  // Calls that hung, in total, and how many are hung right now.
  uint64_t hangs = 0;
  uint64_t hangs_in_progress = 0;
  // Calls decided by each phase, in script order (the current script only).
  std::vector<uint64_t> phase_calls;
  // Calls made outside the script: before it started, after it ended, or
  // with no script set. They behave as healthy.
  uint64_t unscripted_calls = 0;
};

// FailingBackendCore
//
// The type-independent part of `FailingBackend<T>`: the script, the
// counters and the hang control. Usable on its own as a backend that
// produces only a status (`CallStatus()`). Thread-safe; neither copyable nor
// movable (hung calls and script builders hold its address).
class FailingBackendCore {
 public:
  // `clock` must outlive the backend. A `FakeClock` given as non-const is
  // advanced by Slow phases (see `SlowMode`); any other clock makes them
  // sleep. REQUIRES: clock != nullptr.
  explicit FailingBackendCore(FakeClock* clock,
                              FailingBackendOptions options = {})
      : FailingBackendCore(clock, clock, std::move(options)) {}
  explicit FailingBackendCore(const Clock* clock,
                              FailingBackendOptions options = {})
      : FailingBackendCore(clock, nullptr, std::move(options)) {}

  FailingBackendCore(const FailingBackendCore&) = delete;
  FailingBackendCore& operator=(const FailingBackendCore&) = delete;

  // REQUIRES: no call is in progress. Release hung calls (`ReleaseHung()`)
  // and join the threads that made them before destroying the backend.
  // Virtual so that a FailingBackend<T> owned through a core pointer is
  // destroyed whole.
  virtual ~FailingBackendCore() = default;

  // Replaces the script with an empty one starting at `clock->Now()` (or at
  // `start`) and returns its builder. Per-phase counts restart; the other
  // counters do not. Calls already past their phase decision are unaffected.
  BackendScript Script() { return Script(clock_->Now()); }
  BackendScript Script(absl::Time start);

  // Makes one call and returns only its status: OK when healthy. Blocks in
  // a Hanging phase; throws in a Throwing phase (see the file comment).
  absl::Status CallStatus();

  // Releases every call hung right now; they return DEADLINE_EXCEEDED.
  // Calls that start hanging afterwards hang again (while a Hanging phase is
  // active).
  void ReleaseHung();

  // Blocks until at least `n` calls are hung at once, so a test can tell that
  // its other thread has reached the hang without sleeping. Gives up after
  // `timeout` of real time (a safety net) and returns false.
  bool WaitForHungCalls(uint64_t n, absl::Duration timeout = absl::Seconds(30));

  // The kind of phase active at `clock->Now()` (kHealthy outside the script).
  PhaseKind CurrentPhase() const;

  // When the script's last phase ends (`absl::InfiniteFuture()` if it ends
  // with a forever phase; the start if it is empty).
  absl::Time ScriptEnd() const;

  // Counters; see `BackendCounts`. Each accessor reads under the lock, so
  // use `counts()` for several consistent values.
  BackendCounts counts() const;
  uint64_t calls() const { return counts().calls; }
  uint64_t successes() const { return counts().successes; }
  uint64_t failures() const { return counts().failures; }
  uint64_t throws() const { return counts().throws; }
  uint64_t slow_calls() const { return counts().slow_calls; }
  uint64_t hangs() const { return counts().hangs; }
  uint64_t hangs_in_progress() const { return counts().hangs_in_progress; }
  // Calls decided by phase `index` of the current script; 0 when out of
  // range.
  uint64_t phase_calls(std::size_t index) const;

  // Zeroes every counter except `hangs_in_progress` (those calls are still
  // hung). The rate phases' generators keep their position.
  void ResetCounts();

  const std::string& name() const { return options_.name; }
  const Clock* clock() const { return clock_; }

 private:
  FailingBackendCore(const Clock* clock, FakeClock* fake,
                     FailingBackendOptions options)
      : clock_(clock),
        fake_(fake),
        options_(std::move(options)),
        timeline_(clock_->Now()) {}

  detail::script::Decision DecideLocked(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SpendLatency(absl::Duration latency) const;
  absl::Status Hang(uint64_t generation) ABSL_LOCKS_EXCLUDED(mu_);

  const Clock* const clock_;
  FakeClock* const fake_;  // nullptr unless constructed with a FakeClock*
  const FailingBackendOptions options_;

  mutable detail::Mutex mu_;
  // Signalled when a hang is released and when the hung-call count changes.
  detail::CondVar cv_;
  // The script; its builders append to it under `mu_`.
  detail::script::Timeline timeline_ ABSL_GUARDED_BY(mu_);
  // Every counter but `phase_calls`, which the timeline's phases keep.
  BackendCounts counts_ ABSL_GUARDED_BY(mu_);
  // Bumped by ReleaseHung(); a hung call waits for it to move.
  uint64_t release_generation_ ABSL_GUARDED_BY(mu_) = 0;
};

// FailingBackend<T>
//
// A scripted backend whose healthy calls produce a `T`: a fixed value, or a
// fresh one from a factory on each healthy call. Everything else is
// `FailingBackendCore`'s. Thread-safe; the factory may run concurrently on
// several threads, outside the backend's lock. REQUIRES: `T` is copyable
// when given as a value.
template <typename T>
class FailingBackend : public FailingBackendCore {
 public:
  static_assert(!std::is_void_v<T> && !std::is_reference_v<T>,
                "FailingBackend<T>: T must be an object type; for a backend "
                "that returns only a status use FailingBackendCore and "
                "CallStatus()");

  // Produces the healthy answer.
  using Factory = std::function<T()>;

  // Healthy calls return a copy of `healthy`.
  FailingBackend(FakeClock* clock, T healthy,
                 FailingBackendOptions options = {})
      : FailingBackendCore(clock, std::move(options)),
        factory_(ValueFactory(std::move(healthy))) {}
  FailingBackend(const Clock* clock, T healthy,
                 FailingBackendOptions options = {})
      : FailingBackendCore(clock, std::move(options)),
        factory_(ValueFactory(std::move(healthy))) {}

  // Healthy calls return `factory()`. REQUIRES: `factory` is callable. It
  // is run outside the backend's lock, so it may call the backend's
  // accessors (to number its answers by `calls()`, say).
  FailingBackend(FakeClock* clock, Factory factory,
                 FailingBackendOptions options = {})
      : FailingBackendCore(clock, std::move(options)),
        factory_(std::move(factory)) {}
  FailingBackend(const Clock* clock, Factory factory,
                 FailingBackendOptions options = {})
      : FailingBackendCore(clock, std::move(options)),
        factory_(std::move(factory)) {}

  // Makes one call: the healthy value, or what the active phase says (see
  // the file comment). Blocks in a Hanging phase; throws std::runtime_error
  // in a Throwing phase when exceptions are enabled.
  absl::StatusOr<T> Call() {
    absl::Status status = CallStatus();
    if (!status.ok()) return status;
    return factory_();
  }

 private:
  static Factory ValueFactory(T value) {
    return [value = std::move(value)]() -> T { return value; };
  }

  const Factory factory_;
};

// ---- Implementation details -------------------------------------------------

inline BackendScript FailingBackendCore::Script(absl::Time start) {
  detail::MutexLock lock(&mu_);
  timeline_.Reset(start);
  return BackendScript(&mu_, &timeline_, options_.name);
}

inline detail::script::Decision FailingBackendCore::DecideLocked(
    absl::Time now) {
  ++counts_.calls;
  detail::script::Decision d = timeline_.Decide(now);
  if (!d.scripted) ++counts_.unscripted_calls;
  return d;
}

inline absl::Status FailingBackendCore::CallStatus() {
  using detail::script::Action;
  detail::script::Decision d;
  uint64_t generation = 0;
  {
    detail::MutexLock lock(&mu_);
    d = DecideLocked(clock_->Now());
    if (d.action == Action::kHang) {
      // Counted as hung, and the release generation taken, before the lock
      // is dropped: once WaitForHungCalls() has seen this call, a
      // ReleaseHung() releases it even if it has not started waiting yet.
      ++counts_.hangs;
      ++counts_.hangs_in_progress;
      generation = release_generation_;
      cv_.SignalAll();
    }
  }
  switch (d.action) {
    case Action::kSucceed:
      break;
    case Action::kSlow:
      SpendLatency(d.latency);
      break;
    case Action::kHang:
      d.status = Hang(generation);
      break;
    case Action::kFail:
    case Action::kThrow:
      break;
  }
  {
    detail::MutexLock lock(&mu_);
    switch (d.action) {
      case Action::kSucceed:
        ++counts_.successes;
        return absl::OkStatus();
      case Action::kSlow:
        ++counts_.slow_calls;
        ++counts_.successes;
        return absl::OkStatus();
      case Action::kHang:
      case Action::kFail:
        ++counts_.failures;
        return d.status;
      case Action::kThrow:
        ++counts_.throws;
        break;
    }
  }
  // Thrown (or returned) with the lock released.
  const std::string what =
      absl::StrCat(options_.name, ": scripted exception (Throwing phase)");
#if DEGRADE_HAS_EXCEPTIONS
  throw std::runtime_error(what);
#else
  // No exceptions: return what a breaker would have made of the throw, so a
  // breaker in front sees the same failure either way.
  return CallableExceptionError(
      absl::StrCat("backend '", options_.name, "' (exceptions disabled)"),
      what);
#endif
}

inline void FailingBackendCore::SpendLatency(absl::Duration latency) const {
  if (latency <= absl::ZeroDuration()) return;
  const bool advance =
      fake_ != nullptr && (options_.slow_mode == SlowMode::kAuto ||
                           options_.slow_mode == SlowMode::kAdvanceFakeClock);
  if (advance) {
    fake_->Advance(latency);
  } else {
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(latency));
  }
}

// Waits for a release after `generation` (the one current when the call
// decided to hang), or for the hang timeout. CondVar::WaitFor takes any
// duration, InfiniteDuration (wait forever) included.
inline absl::Status FailingBackendCore::Hang(uint64_t generation) {
  bool released = false;
  {
    detail::MutexLock lock(&mu_);
    released =
        cv_.WaitFor(&mu_, options_.hang_timeout,
                    [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                      return release_generation_ != generation;
                    });
    --counts_.hangs_in_progress;
    cv_.SignalAll();
  }
  return absl::DeadlineExceededError(
      released
          ? absl::StrCat(options_.name, ": hung call released by ReleaseHung()")
          : absl::StrCat(options_.name, ": hung call gave up after ",
                         absl::FormatDuration(options_.hang_timeout),
                         " (hang_timeout) without ReleaseHung()"));
}

inline void FailingBackendCore::ReleaseHung() {
  detail::MutexLock lock(&mu_);
  ++release_generation_;
  cv_.SignalAll();
}

inline bool FailingBackendCore::WaitForHungCalls(uint64_t n,
                                                 absl::Duration timeout) {
  detail::MutexLock lock(&mu_);
  return cv_.WaitFor(&mu_, timeout,
                     [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                       return counts_.hangs_in_progress >= n;
                     });
}

inline PhaseKind FailingBackendCore::CurrentPhase() const {
  const absl::Time now = clock_->Now();
  detail::MutexLock lock(&mu_);
  const detail::script::Phase* p = timeline_.At(now);
  return p == nullptr ? PhaseKind::kHealthy : p->kind;
}

inline absl::Time FailingBackendCore::ScriptEnd() const {
  detail::MutexLock lock(&mu_);
  return timeline_.end();
}

inline BackendCounts FailingBackendCore::counts() const {
  detail::MutexLock lock(&mu_);
  BackendCounts c = counts_;
  c.phase_calls.reserve(timeline_.phases().size());
  for (const detail::script::Phase& p : timeline_.phases()) {
    c.phase_calls.push_back(p.calls);
  }
  return c;
}

inline uint64_t FailingBackendCore::phase_calls(std::size_t index) const {
  detail::MutexLock lock(&mu_);
  const std::vector<detail::script::Phase>& phases = timeline_.phases();
  return index < phases.size() ? phases[index].calls : 0;
}

inline void FailingBackendCore::ResetCounts() {
  detail::MutexLock lock(&mu_);
  BackendCounts fresh;
  fresh.hangs_in_progress = counts_.hangs_in_progress;
  counts_ = std::move(fresh);
  timeline_.ResetCalls();
}

}  // namespace testing
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TESTING_FAILING_BACKEND_HPP_
