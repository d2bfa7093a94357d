// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: testing/backend_script.hpp
// -----------------------------------------------------------------------------
//
// The script a scripted backend (testing/failing_backend.hpp) follows: a list
// of phases laid out back to back on a clock, each saying what the calls
// made during it do. A `BackendScript` is the builder a backend's `Script()`
// returns; each of its methods appends one phase and returns the builder, so
// a script reads as one chained expression:
//
//   backend.Script()                                   // starts now
//       .Healthy(absl::Seconds(10))                    // [0 s, 10 s)
//       .Failing(absl::UnavailableError("down"),       // [10 s, 15 s)
//                absl::Seconds(5))
//       .FailingAtRate(0.2, /*seed=*/7, absl::Seconds(30))
//       .Flapping(absl::Seconds(1), absl::Seconds(2))  // from 45 s on
//       ;
//   // Outside the phases (before the start, after a finite last phase) the
//   // backend is healthy.
//
// The phase kinds are named by `PhaseKind` (`PhaseKindName` spells them for
// messages), and how a Slow phase spends its latency by `SlowMode`. What a
// call does in a phase is a pure function of the phase, the time and the
// call's position in the phase (`detail::script::DecideInPhase`), so a
// script replays exactly under a FakeClock.
//
// Thread safety: `PhaseKindName` is thread-safe. A `BackendScript` may be
// used from any thread (each append takes its backend's lock), but a script
// meant to be read whole should be built before the calls it governs. The
// builder points into its backend and must not outlive it.

#ifndef DEGRADE_TESTING_BACKEND_SCRIPT_HPP_
#define DEGRADE_TESTING_BACKEND_SCRIPT_HPP_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/splitmix.hpp"
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
// "hanging" or "flapping"; "unknown" for a value outside the enumeration.
// Thread-safe.
constexpr absl::string_view PhaseKindName(PhaseKind kind);

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

}  // namespace testing

namespace detail {
namespace script {

// One phase as the builder lays it down.
struct Phase {
  testing::PhaseKind kind = testing::PhaseKind::kHealthy;
  absl::Duration length = absl::ZeroDuration();   // as given to the builder
  absl::Time start;                               // laid out by Append()
  absl::Time end;                                 // exclusive
  absl::Status status;                            // Failing, rate, Flapping
  double rate = 0;                                // FailingAtRate, in [0, 1]
  uint64_t seed = 0;                              // FailingAtRate
  absl::Duration latency = absl::ZeroDuration();  // Slow
  absl::Duration up = absl::ZeroDuration();       // Flapping
  absl::Duration down = absl::ZeroDuration();     // Flapping
  uint64_t draws = 0;  // calls this phase has decided; feeds the generator
  uint64_t calls = 0;  // the same, but zeroed by ResetCalls()
};

// What one call does. Decided under the backend's lock, carried out without.
enum class Action : uint8_t { kSucceed, kFail, kThrow, kSlow, kHang };
struct Decision {
  Action action = Action::kSucceed;
  absl::Status status;                            // kFail
  absl::Duration latency = absl::ZeroDuration();  // kSlow
  bool scripted = false;  // a phase decided it (not outside the script)
};

// What a call in `phase` started at `now`, the `draw`-th call the phase has
// decided (from 0), does. Pure: FailingAtRate's k-th draw is a function of
// (seed, k), Flapping's state a function of the time into the phase.
// REQUIRES: `phase.start <= now < phase.end`.
inline Decision DecideInPhase(const Phase& phase, absl::Time now,
                              uint64_t draw);

// Timeline
//
// The phases of one script, back to back from a start time. A value; not
// thread-safe (the backend guards it with its lock).
class Timeline {
 public:
  explicit Timeline(absl::Time start) : start_(start) {}

  // Forgets every phase; the next one starts at `start`.
  void Reset(absl::Time start) {
    start_ = start;
    phases_.clear();
  }

  // Lays `phase` out where the last one ends (at the start for the first):
  // it lasts `phase.length`, forever for InfiniteDuration (Time +
  // InfiniteDuration saturates to InfiniteFuture), and is empty, never
  // active, for a zero or negative length.
  void Append(Phase phase);

  // The phase active at `now`, or nullptr outside the script.
  const Phase* At(absl::Time now) const;

  // Decides a call started at `now`: the active phase's decision, counted
  // in its `calls` and `draws`; a healthy, unscripted decision outside.
  Decision Decide(absl::Time now);

  // Zeroes every phase's `calls`; the draws keep their position.
  void ResetCalls();

  absl::Time start() const { return start_; }
  // Where the last phase ends: the start if there is none, InfiniteFuture
  // after a forever phase.
  absl::Time end() const {
    return phases_.empty() ? start_ : phases_.back().end;
  }
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  absl::Time start_;
  std::vector<Phase> phases_;
};

}  // namespace script
}  // namespace detail

namespace testing {

class FailingBackendCore;

// BackendScript
//
// Builds the script of a backend; returned by `FailingBackendCore::Script()`.
// Each method appends a phase starting where the previous one ends and
// returns the builder. A phase is live as soon as it is appended. A phase
// after a forever phase is never reached. Durations must be positive; a zero
// or negative one makes the phase empty (it is skipped).
//
// Thread-safe (each append takes the backend's lock); see the file comment.
class BackendScript {
 public:
  // Calls return the healthy value.
  BackendScript& Healthy(absl::Duration d = absl::InfiniteDuration());

  // Calls return `status`. REQUIRES: `!status.ok()`; an OK status is
  // replaced by UNKNOWN, because a "failing" phase that succeeds is a typo.
  BackendScript& Failing(absl::Status status,
                         absl::Duration d = absl::InfiniteDuration());

  // Each call fails with probability `rate` (clamped to [0, 1]; NaN is 0),
  // with `status` (default UNAVAILABLE naming the backend). The k-th call in
  // the phase draws the k-th number of a generator seeded with `seed`, so a
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

  // `mu` guards `timeline`; `backend_name` names the backend in the default
  // statuses. All three belong to the backend and outlive the builder.
  BackendScript(detail::Mutex* mu, detail::script::Timeline* timeline,
                absl::string_view backend_name)
      : mu_(mu), timeline_(timeline), backend_name_(backend_name) {}

  // Every builder is this: the phase's own fields, then its kind and length
  // set and the phase appended under the backend's lock.
  BackendScript& AppendPhase(PhaseKind kind, absl::Duration length,
                             detail::script::Phase phase = {});

  // UNAVAILABLE "<backend>: <why>", for a phase given no status of its own.
  absl::Status DefaultFailure(absl::string_view why) const {
    return absl::UnavailableError(absl::StrCat(backend_name_, ": ", why));
  }

  detail::Mutex* const mu_;
  detail::script::Timeline* const timeline_ ABSL_PT_GUARDED_BY(mu_);
  const absl::string_view backend_name_;
};

// ---- Implementation details -------------------------------------------------

constexpr absl::string_view PhaseKindName(PhaseKind kind) {
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

inline BackendScript& BackendScript::AppendPhase(PhaseKind kind,
                                                 absl::Duration length,
                                                 detail::script::Phase phase) {
  phase.kind = kind;
  phase.length = length;
  detail::MutexLock lock(mu_);
  timeline_->Append(std::move(phase));
  return *this;
}

inline BackendScript& BackendScript::Healthy(absl::Duration d) {
  return AppendPhase(PhaseKind::kHealthy, d);
}

inline BackendScript& BackendScript::Failing(absl::Status status,
                                             absl::Duration d) {
  detail::script::Phase p;
  p.status = status.ok()
                 ? absl::UnknownError(absl::StrCat(
                       backend_name_,
                       ": scripted failure (Failing() was given an OK status)"))
                 : std::move(status);
  return AppendPhase(PhaseKind::kFailing, d, std::move(p));
}

inline BackendScript& BackendScript::FailingAtRate(double rate, uint64_t seed,
                                                   absl::Duration d,
                                                   absl::Status status) {
  detail::script::Phase p;
  // `!(rate > 0)` also catches NaN.
  p.rate = !(rate > 0.0) ? 0.0 : (rate > 1.0 ? 1.0 : rate);
  p.seed = seed;
  p.status =
      status.ok()
          ? DefaultFailure(absl::StrCat("scripted failure at rate ", p.rate))
          : std::move(status);
  return AppendPhase(PhaseKind::kFailingAtRate, d, std::move(p));
}

inline BackendScript& BackendScript::Throwing(absl::Duration d) {
  return AppendPhase(PhaseKind::kThrowing, d);
}

inline BackendScript& BackendScript::Slow(absl::Duration latency,
                                          absl::Duration d) {
  detail::script::Phase p;
  p.latency = latency;
  return AppendPhase(PhaseKind::kSlow, d, std::move(p));
}

inline BackendScript& BackendScript::Hanging(absl::Duration d) {
  return AppendPhase(PhaseKind::kHanging, d);
}

inline BackendScript& BackendScript::Flapping(absl::Duration up,
                                              absl::Duration down,
                                              absl::Duration d,
                                              absl::Status down_status) {
  detail::script::Phase p;
  p.up = up;
  p.down = down;
  p.status = down_status.ok() ? DefaultFailure("scripted flapping, down")
                              : std::move(down_status);
  return AppendPhase(PhaseKind::kFlapping, d, std::move(p));
}

}  // namespace testing

namespace detail {
namespace script {

inline Decision DecideInPhase(const Phase& phase, absl::Time now,
                              uint64_t draw) {
  Decision d;
  d.scripted = true;
  const auto fail = [&d, &phase] {
    d.action = Action::kFail;
    d.status = phase.status;
  };
  switch (phase.kind) {
    case testing::PhaseKind::kHealthy:
      break;
    case testing::PhaseKind::kFailing:
      fail();
      break;
    case testing::PhaseKind::kFailingAtRate: {
      // UnitFromBits never reaches 1: rate 1 always fails, rate 0 never.
      const double u =
          UnitFromBits(SplitMix64Step(phase.seed ^ SplitMix64Step(draw)));
      if (u < phase.rate) fail();
      break;
    }
    case testing::PhaseKind::kThrowing:
      d.action = Action::kThrow;
      break;
    case testing::PhaseKind::kSlow:
      d.action = Action::kSlow;
      d.latency = phase.latency;
      break;
    case testing::PhaseKind::kHanging:
      d.action = Action::kHang;
      break;
    case testing::PhaseKind::kFlapping: {
      if (phase.down <= absl::ZeroDuration()) break;  // never down
      if (phase.up > absl::ZeroDuration()) {
        // `now >= phase.start` here, so the remainder is in [0, up + down).
        const absl::Duration into =
            ElapsedSince(now, phase.start) % (phase.up + phase.down);
        if (into < phase.up) break;  // the up part of the cycle
      }
      fail();
      break;
    }
  }
  return d;
}

inline void Timeline::Append(Phase phase) {
  phase.start = end();
  phase.end = phase.length > absl::ZeroDuration() ? phase.start + phase.length
                                                  : phase.start;
  phase.draws = 0;
  phase.calls = 0;
  phases_.push_back(std::move(phase));
}

inline const Phase* Timeline::At(absl::Time now) const {
  // Scripts are a handful of phases: a linear scan is clearer than a search.
  for (const Phase& p : phases_) {
    if (p.start <= now && now < p.end) return &p;
  }
  return nullptr;
}

inline Decision Timeline::Decide(absl::Time now) {
  const Phase* found = At(now);
  if (found == nullptr) return Decision();
  Phase& p = phases_[static_cast<std::size_t>(found - phases_.data())];
  ++p.calls;
  return DecideInPhase(p, now, p.draws++);
}

inline void Timeline::ResetCalls() {
  for (Phase& p : phases_) p.calls = 0;
}

}  // namespace script
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TESTING_BACKEND_SCRIPT_HPP_
