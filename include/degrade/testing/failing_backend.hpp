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

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace testing {

// PhaseKind
//
// What a phase of the script does to the calls made during it.
enum class PhaseKind : uint8_t {
  kHealthy,
  kFailing,
  kFailingAtRate,
  kThrowing,
  kSlow,
  kHanging,
  kFlapping,
};

// Returns "healthy", "failing", "failing-at-rate", "throwing", "slow",
// "hanging" or "flapping". Thread-safe.
inline absl::string_view PhaseKindName(PhaseKind kind) {
  switch (kind) {
    case PhaseKind::kHealthy:
      return "healthy";
    case PhaseKind::kFailing:
      return "failing";
    case PhaseKind::kFailingAtRate:
      return "failing-at-rate";
    case PhaseKind::kThrowing:
      return "throwing";
    case PhaseKind::kSlow:
      return "slow";
    case PhaseKind::kHanging:
      return "hanging";
    case PhaseKind::kFlapping:
      return "flapping";
  }
  return "unknown";
}

// SlowMode
//
// How a Slow phase spends its latency.
enum class SlowMode : uint8_t {
  // Advance the FakeClock if the backend was given one, otherwise sleep.
  kAuto,
  // Simulated latency: advance the backend's FakeClock by the latency inside
  // the call, so the caller (a breaker's slow-call tracking, a deadline
  // check) sees the call take that long while the test takes no time. The
  // clock is shared: concurrent slow calls each advance it, so their
  // latencies add up. Without a FakeClock this mode sleeps, as kSleep.
  kAdvanceFakeClock,
  // Real latency: sleep for it. For tests on the real clock.
  kSleep,
};

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

class FailingBackendCore;

// BackendScript
//
// Builds the script of a backend; returned by `FailingBackendCore::Script()`.
// Each method appends a phase starting where the previous one ends and
// returns the builder, so a script reads as one chained expression. A phase
// is live as soon as it is appended. A phase after a forever phase is never
// reached. Durations must be positive; a zero or negative one makes the phase
// empty (it is skipped).
//
// Thread-safe (each append takes the backend's lock), but a script meant to
// be read whole should be built before the calls it governs. The builder
// holds a pointer to its backend and must not outlive it.
class BackendScript {
 public:
  // Calls return the healthy value.
  BackendScript& Healthy(absl::Duration d = absl::InfiniteDuration());

  // Calls return `status`. REQUIRES: `!status.ok()`; an OK status is
  // replaced by UNKNOWN, because a "failing" phase that succeeds is a typo.
  BackendScript& Failing(absl::Status status,
                         absl::Duration d = absl::InfiniteDuration());

  // Each call fails with probability `rate` (clamped to [0, 1]), with
  // `status` (default UNAVAILABLE naming the backend). The k-th call in the
  // phase draws the k-th number of a generator seeded with `seed`, so a
  // given seed gives the same success/failure sequence on every run, and
  // the same number of failures over N calls however they are spread over
  // threads.
  BackendScript& FailingAtRate(double rate, uint64_t seed,
                               absl::Duration d = absl::InfiniteDuration(),
                               absl::Status status = absl::Status());

  // Calls throw `std::runtime_error` (with -fno-exceptions: return a status
  // recognised by `degrade::IsCallableException`).
  BackendScript& Throwing(absl::Duration d = absl::InfiniteDuration());

  // Calls take `latency` (see `SlowMode`) and then return the healthy value.
  BackendScript& Slow(absl::Duration latency,
                      absl::Duration d = absl::InfiniteDuration());

  // Calls block until `ReleaseHung()` (or the options' `hang_timeout`), then
  // return DEADLINE_EXCEEDED. The hang is not bounded by the phase's end: a
  // call that started hanging stays hung until released.
  BackendScript& Hanging(absl::Duration d = absl::InfiniteDuration());

  // Alternates, starting healthy: calls in the first `up` of each
  // `up + down` cycle (counted from the phase's start) succeed, the rest
  // fail with `down_status` (default UNAVAILABLE naming the backend).
  // REQUIRES: up > 0, down > 0; otherwise the phase is plain healthy
  // (down <= 0) or plain failing (up <= 0).
  BackendScript& Flapping(absl::Duration up, absl::Duration down,
                          absl::Duration d = absl::InfiniteDuration(),
                          absl::Status down_status = absl::Status());

 private:
  friend class FailingBackendCore;
  explicit BackendScript(FailingBackendCore* backend) : backend_(backend) {}

  FailingBackendCore* backend_;
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
  friend class BackendScript;

  struct Phase {
    PhaseKind kind = PhaseKind::kHealthy;
    absl::Duration length = absl::ZeroDuration();  // as given to the builder
    absl::Time start;                              // laid out by Append()
    absl::Time end;                                // exclusive
    absl::Status status;
    double rate = 0;
    uint64_t seed = 0;
    uint64_t draws = 0;  // calls this phase has decided; feeds the generator
    absl::Duration latency = absl::ZeroDuration();
    absl::Duration up = absl::ZeroDuration();
    absl::Duration down = absl::ZeroDuration();
  };

  // What one call does, decided under the lock and carried out without it.
  enum class Action : uint8_t { kSucceed, kFail, kThrow, kSlow, kHang };
  struct Decision {
    Action action = Action::kSucceed;
    absl::Status status;
    absl::Duration latency = absl::ZeroDuration();
  };

  FailingBackendCore(const Clock* clock, FakeClock* fake,
                     FailingBackendOptions options)
      : clock_(clock), fake_(fake), options_(std::move(options)) {
    script_start_ = clock_->Now();
  }

  void Append(Phase phase);
  Decision DecideLocked(absl::Time now);
  const Phase* PhaseAtLocked(absl::Time now) const;
  void SpendLatency(absl::Duration latency);
  absl::Status Hang(uint64_t generation);
  absl::Status DefaultFailure(absl::string_view why) const;

  // The k-th draw of a seed is a pure function of (seed, k).
  static uint64_t Mix(uint64_t x) { return detail::SplitMix64Step(x); }

  const Clock* const clock_;
  FakeClock* const fake_;  // nullptr unless constructed with a FakeClock*
  const FailingBackendOptions options_;

  // std::mutex rather than detail::Mutex: the hang needs a
  // std::condition_variable, which only waits on a std::mutex.
  mutable std::mutex mu_;
  std::condition_variable cv_;       // hang released, hung-call count changed
  absl::Time script_start_;          // guarded by mu_
  std::vector<Phase> phases_;        // guarded by mu_
  BackendCounts counts_;             // guarded by mu_
  uint64_t release_generation_ = 0;  // guarded by mu_; bumped by ReleaseHung
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

inline BackendScript& BackendScript::Healthy(absl::Duration d) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kHealthy;
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::Failing(absl::Status status,
                                             absl::Duration d) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kFailing;
  p.status = status.ok()
                 ? absl::UnknownError(absl::StrCat(
                       backend_->name(),
                       ": scripted failure (Failing() was given an OK status)"))
                 : std::move(status);
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::FailingAtRate(double rate, uint64_t seed,
                                                   absl::Duration d,
                                                   absl::Status status) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kFailingAtRate;
  // `!(rate > 0)` also catches NaN.
  p.rate = !(rate > 0.0) ? 0.0 : (rate > 1.0 ? 1.0 : rate);
  p.seed = seed;
  p.status = status.ok() ? backend_->DefaultFailure(absl::StrCat(
                               "scripted failure at rate ", p.rate))
                         : std::move(status);
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::Throwing(absl::Duration d) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kThrowing;
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::Slow(absl::Duration latency,
                                          absl::Duration d) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kSlow;
  p.latency = latency;
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::Hanging(absl::Duration d) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kHanging;
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript& BackendScript::Flapping(absl::Duration up,
                                              absl::Duration down,
                                              absl::Duration d,
                                              absl::Status down_status) {
  FailingBackendCore::Phase p;
  p.kind = PhaseKind::kFlapping;
  p.up = up;
  p.down = down;
  p.status = down_status.ok()
                 ? backend_->DefaultFailure("scripted flapping, down")
                 : std::move(down_status);
  p.length = d;
  backend_->Append(std::move(p));
  return *this;
}

inline BackendScript FailingBackendCore::Script(absl::Time start) {
  std::lock_guard<std::mutex> lock(mu_);
  script_start_ = start;
  phases_.clear();
  counts_.phase_calls.clear();
  return BackendScript(this);
}

inline void FailingBackendCore::Append(Phase phase) {
  // Laid out under the lock, after the previous phase, so that appends
  // racing each other still tile the timeline. A forever phase ends at
  // absl::InfiniteFuture() (Time + InfiniteDuration saturates).
  std::lock_guard<std::mutex> lock(mu_);
  phase.start = phases_.empty() ? script_start_ : phases_.back().end;
  phase.end = phase.length > absl::ZeroDuration() ? phase.start + phase.length
                                                  : phase.start;
  phases_.push_back(std::move(phase));
  counts_.phase_calls.push_back(0);
}

inline const FailingBackendCore::Phase* FailingBackendCore::PhaseAtLocked(
    absl::Time now) const {
  // Scripts are a handful of phases: a linear scan is clearer than a search.
  for (const Phase& p : phases_) {
    if (p.start <= now && now < p.end) return &p;
  }
  return nullptr;
}

inline absl::Status FailingBackendCore::DefaultFailure(
    absl::string_view why) const {
  return absl::UnavailableError(absl::StrCat(options_.name, ": ", why));
}

inline FailingBackendCore::Decision FailingBackendCore::DecideLocked(
    absl::Time now) {
  Decision d;
  ++counts_.calls;
  const Phase* found = PhaseAtLocked(now);
  if (found == nullptr) {
    ++counts_.unscripted_calls;
    return d;
  }
  Phase& p = phases_[static_cast<std::size_t>(found - phases_.data())];
  ++counts_.phase_calls[static_cast<std::size_t>(found - phases_.data())];
  const uint64_t draw = p.draws++;
  switch (p.kind) {
    case PhaseKind::kHealthy:
      break;
    case PhaseKind::kFailing:
      d.action = Action::kFail;
      d.status = p.status;
      break;
    case PhaseKind::kFailingAtRate: {
      // The top 53 bits as a double in [0, 1): exact, and rate 1 always
      // fails while rate 0 never does.
      const uint64_t bits = Mix(p.seed ^ Mix(draw));
      const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
      if (u < p.rate) {
        d.action = Action::kFail;
        d.status = p.status;
      }
      break;
    }
    case PhaseKind::kThrowing:
      d.action = Action::kThrow;
      break;
    case PhaseKind::kSlow:
      d.action = Action::kSlow;
      d.latency = p.latency;
      break;
    case PhaseKind::kHanging:
      d.action = Action::kHang;
      break;
    case PhaseKind::kFlapping: {
      if (p.down <= absl::ZeroDuration()) break;  // never down
      if (p.up > absl::ZeroDuration()) {
        // `now >= p.start` here, so the remainder is in [0, up + down).
        const absl::Duration into = (now - p.start) % (p.up + p.down);
        if (into < p.up) break;  // the up part of the cycle
      }
      d.action = Action::kFail;
      d.status = p.status;
      break;
    }
  }
  return d;
}

inline absl::Status FailingBackendCore::CallStatus() {
  Decision d;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d = DecideLocked(clock_->Now());
    if (d.action == Action::kHang) {
      // Counted as hung, and the release generation taken, before the lock
      // is dropped: once WaitForHungCalls() has seen this call, a
      // ReleaseHung() releases it even if it has not started waiting yet.
      ++counts_.hangs;
      ++counts_.hangs_in_progress;
      generation = release_generation_;
      cv_.notify_all();
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
  std::lock_guard<std::mutex> lock(mu_);
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
  const std::string what =
      absl::StrCat(options_.name, ": scripted exception (Throwing phase)");
#if DEGRADE_HAS_EXCEPTIONS
  // Thrown with the lock released (the guard's destructor runs during
  // unwinding, before any handler).
  throw std::runtime_error(what);
#else
  // No exceptions: return what a breaker would have made of the throw, so a
  // breaker in front sees the same failure either way.
  return CallableExceptionError(
      absl::StrCat("backend '", options_.name, "' (exceptions disabled)"),
      what);
#endif
}

inline void FailingBackendCore::SpendLatency(absl::Duration latency) {
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
// decided to hang).
inline absl::Status FailingBackendCore::Hang(uint64_t generation) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto released = [&] { return release_generation_ != generation; };
  bool was_released = true;
  if (options_.hang_timeout == absl::InfiniteDuration()) {
    cv_.wait(lock, released);
  } else {
    was_released = cv_.wait_for(
        lock, absl::ToChronoNanoseconds(options_.hang_timeout), released);
  }
  --counts_.hangs_in_progress;
  cv_.notify_all();
  return absl::DeadlineExceededError(
      was_released
          ? absl::StrCat(options_.name, ": hung call released by ReleaseHung()")
          : absl::StrCat(options_.name, ": hung call gave up after ",
                         absl::FormatDuration(options_.hang_timeout),
                         " (hang_timeout) without ReleaseHung()"));
}

inline void FailingBackendCore::ReleaseHung() {
  std::lock_guard<std::mutex> lock(mu_);
  ++release_generation_;
  cv_.notify_all();
}

inline bool FailingBackendCore::WaitForHungCalls(uint64_t n,
                                                 absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto enough = [&] { return counts_.hangs_in_progress >= n; };
  if (timeout == absl::InfiniteDuration()) {
    cv_.wait(lock, enough);
    return true;
  }
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), enough);
}

inline PhaseKind FailingBackendCore::CurrentPhase() const {
  const absl::Time now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  const Phase* p = PhaseAtLocked(now);
  return p == nullptr ? PhaseKind::kHealthy : p->kind;
}

inline absl::Time FailingBackendCore::ScriptEnd() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phases_.empty() ? script_start_ : phases_.back().end;
}

inline BackendCounts FailingBackendCore::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

inline uint64_t FailingBackendCore::phase_calls(std::size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index < counts_.phase_calls.size() ? counts_.phase_calls[index] : 0;
}

inline void FailingBackendCore::ResetCounts() {
  std::lock_guard<std::mutex> lock(mu_);
  BackendCounts fresh;
  fresh.hangs_in_progress = counts_.hangs_in_progress;
  fresh.phase_calls.assign(counts_.phase_calls.size(), 0);
  counts_ = std::move(fresh);
}

}  // namespace testing
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TESTING_FAILING_BACKEND_HPP_
