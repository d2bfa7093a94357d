// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: admission.hpp
// -----------------------------------------------------------------------------
//
// Criticality-aware admission: which requests a server refuses, in order,
// when it cannot serve them all. Every request carries a `RequestClass`
// (request_class.hpp), folded into a rank from 0 (CRITICAL_PLUS, cohort 0)
// to 511 (SHEDDABLE, cohort 127); the controller holds a threshold and
// admits exactly the ranks below it. Shedding therefore goes strictly
// lowest class first (Google SRE, chapter 21: a criticality is refused only
// once every lower one is), and inside a criticality by cohort, so the same
// users are refused at every hop of a fan-out (WeChat DAGOR).
//
// Two drivers move the threshold, and the lower one wins:
//
//   (a) the `DegradationManager`: each level of its config may name the
//       lowest class it admits ("admit": {"min": "SHEDDABLE_PLUS",
//       "cohorts_at_min": 64}); staged recovery loosens it a level at a time;
//   (b) DAGOR's continuous mode (`adaptive`): the queue reports each item's
//       queuing delay; after each window (1 s or 2,000 requests) whose mean
//       delay reached the target (20 ms) the threshold drops so that about
//       5% fewer requests pass, and after each calm window it rises so that
//       about 1% more do. When one rank carries more than twice the step
//       (all unlabelled traffic is CRITICAL:0), only a part of that rank is
//       shed, so a step never turns "5% fewer" into "all of them".
//
//   degrade::AdmissionOptions o;
//   o.name = "ranker";
//   o.manager = &manager;  // the config's "admit" floors
//   o.adaptive = true;     // and DAGOR inside them
//   auto admission = degrade::AdmissionController::Create(o).value();
//   ...
//   absl::Status s = admission->Admit(request_class);
//   if (!s.ok()) return s;  // RESOURCE_EXHAUSTED; IsShed(s); ShedRetryAfter(s)
//   queue.Push(std::move(request));  // its pops call RecordQueuingDelay()
//
// Cost: `Admitted()` is a relaxed load (the manager's floor), a compare and
// a per-thread counter (a plain load and store on a line the thread owns);
// in adaptive mode a relaxed load and two relaxed fetch_adds more (the
// level, the window's histogram), and one call in 64 reads the clock to see
// whether the window is over. No lock, no allocation: the call that ends a
// window closes it if it wins a try-lock.
// `Admit()` allocates only to build the ShedError.
//
// Thread safety: `AdmissionController` is thread-safe.

#ifndef DEGRADE_ADMISSION_HPP_
#define DEGRADE_ADMISSION_HPP_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/overload/admission_window.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// AdmissionOptions
//
// Settings for `AdmissionController::Create()`, which refuses any out of
// range (ValidateAdmissionOptions).
struct AdmissionOptions {
  // Names the controller in shed statuses, errors and metrics. Non-empty.
  std::string name = "admission";
  // Driver (a): the manager whose current level's "admit" floor applies
  // (DegradationManager::admission_threshold(), one relaxed load). nullptr:
  // no floor. REQUIRES: outlives the controller.
  const DegradationManager* manager = nullptr;
  // Driver (b): DAGOR's continuous threshold, moved by the queuing delays
  // that RecordQueuingDelay() reports. Off by default: a controller is then
  // exactly the manager's floor.
  bool adaptive = false;
  // A window whose mean queuing delay is at or above this is overloaded
  // (DAGOR's 20 ms). The delay meant is each item's wait in the queue
  // (enqueue to start of service, or to its drop): a queue serving newest
  // first (adaptive LIFO) that reports only what it serves shows short
  // waits while CoDel drops its old items, and the controller loosens.
  // > 0 and finite.
  absl::Duration target_queuing_delay = absl::Milliseconds(20);
  // A window ends when this much time has passed since it began or after
  // `interval_requests` requests, whichever comes first (DAGOR: 1 s or
  // 2,000). Checked when a delay is recorded, by the request that reaches
  // `interval_requests`, and every 64th request for the time, so a window
  // also ends when nothing reports a delay (within 64 requests of its end).
  // A window with no delay reported is calm: nothing left the queue, so
  // nothing waited in it; a service that sheds everything recovers.
  // interval > 0 and finite; interval_requests >= 1.
  absl::Duration interval = absl::Seconds(1);
  uint32_t interval_requests = 2000;
  // After an overloaded window the threshold drops so that about this
  // fraction fewer of the window's requests would have been admitted
  // (DAGOR's alpha); after a calm one it rises so that about
  // `loosen_fraction` more would have been (beta), by at least one request.
  // A rank worth more than twice the step is shed or restored in part (a
  // share of its requests, in 1/1024, chosen per request by a counter);
  // a part restored is at least loosen_fraction of that rank, so a rank
  // refused whole comes back within about 1/loosen_fraction calm windows.
  // Each finite, in (0, 1].
  double tighten_fraction = 0.05;
  double loosen_fraction = 0.01;
  // Adaptive mode never sheds a rank below this: the default admits every
  // CRITICAL_PLUS request whatever the delay. In [0, kAdmitAllRank] (512:
  // the adaptive mode never sheds; 0: it may shed everything). The
  // manager's floor is not bound by it, and does not pull the adaptive
  // threshold below it either.
  int min_threshold = FloorRank(Criticality::kCriticalPlus);
  // The retry-after hint in every ShedError (ShedRetryAfter()). >= 0;
  // InfiniteDuration() sends "do not retry".
  absl::Duration retry_after = absl::Seconds(1);
  // The clock that times the adaptive windows; nullptr means
  // RealClock::Instance(). REQUIRES: outlives the controller.
  const Clock* clock = nullptr;
  // Where the controller reports (an AdmissionView through
  // Telemetry::AttachAdmission). nullptr means DefaultTelemetry();
  // NoTelemetry() means none. REQUIRES: outlives the controller.
  Telemetry* metrics = nullptr;
};

// ValidateAdmissionOptions(o)
//
// OK, or INVALID_ARGUMENT naming the controller, the first bad setting (in
// declaration order, name first) and its value. No preconditions: any
// value of `o`, NaN and infinities included, may be passed. Pure;
// thread-safe.
inline absl::Status ValidateAdmissionOptions(const AdmissionOptions& o);

// AdmissionController
//
// Admits exactly the request classes whose Rank() is below threshold(),
// counting every decision per criticality.
//
// Thread-safe. `Admitted()` and `Admit()` are lock-free (relaxed atomics:
// the threshold is a hint that other threads publish, not a guard for
// other memory; the call that ends a window try-locks and never waits).
// `RecordQueuingDelay()` takes a mutex when adaptive.
// Neither copyable nor movable (the telemetry holds its address).
class AdmissionController final {
 public:
  static absl::StatusOr<std::unique_ptr<AdmissionController>> Create(
      AdmissionOptions options);

  AdmissionController(const AdmissionController&) = delete;
  AdmissionController& operator=(const AdmissionController&) = delete;
  ~AdmissionController();

  // Whether `rc` passes the threshold now in force, counted as admitted or
  // shed under its criticality (and, in adaptive mode, in the window's
  // histogram). A cohort out of range counts as 127 (Rank() clamps). In
  // adaptive mode rank threshold() - 1 may be admitted only in part.
  // Hot path: no lock, no allocation.
  DEGRADE_ALWAYS_INLINE bool Admitted(RequestClass rc);

  // OK when Admitted(rc); otherwise a ShedError naming the controller, the
  // class, and the threshold, with `retry_after` (allocates only then).
  DEGRADE_ALWAYS_INLINE absl::Status Admit(RequestClass rc);

  // Reports one item's queuing delay (time from enqueue to the start of
  // its service), and closes the adaptive window when it is due. A negative
  // delay counts as zero. Does nothing when not adaptive. An item dropped
  // from the queue (CoDel, deadline) may be reported with its wait too: it
  // did wait, and it tells the controller the queue is not calm.
  void RecordQueuingDelay(absl::Duration delay);

  // Reports that a later stage (a concurrency limiter at its limit, a full
  // queue) refused `rc` after this controller admitted it. In adaptive mode,
  // for the rest of the current window, nothing less important than rc's
  // criticality is admitted. Why: the threshold moves once a window, and
  // within that window the later stage would go on refusing CRITICAL
  // requests while this one still admits SHEDDABLE ones, the inversion
  // strict shed order forbids.
  //   * It shuts out sheddable classes only: a refused CRITICAL_PLUS or
  //     CRITICAL request caps the threshold at SHEDDABLE_PLUS:0 (256), a
  //     refused SHEDDABLE_PLUS one at SHEDDABLE:0 (384), a refused SHEDDABLE
  //     one changes nothing. One refused CRITICAL_PLUS request must not
  //     refuse every CRITICAL (that is, every unlabelled) request; among
  //     the critical classes the later stage decides (a limiter's
  //     guaranteed shares).
  //   * It is a cap beside DAGOR's threshold, not a step of it: the window's
  //     end lifts it, and the window's own step starts from where DAGOR
  //     was, so one overload is not punished twice.
  // Report refusals that mean overload only (not, say, a limiter holding
  // admissions to re-measure). Does nothing when not adaptive. Thread-safe
  // and lock-free; a relaxed load when the cap is already that tight.
  void RecordRefusal(RequestClass rc);

  // The threshold in force: the lowest of the manager's floor, the adaptive
  // one and a refusal's cap (RecordRefusal). Every rank at or above it is
  // refused; kAdmitAllRank admits everything.
  int threshold() const {
    return std::min({ManagerFloor(manager_), adaptive_threshold(),
                     refusal_cap_.load(std::memory_order_relaxed)});
  }

  // The adaptive threshold alone (kAdmitAllRank when not adaptive), in
  // [min_threshold, kAdmitAllRank].
  int adaptive_threshold() const {
    return detail::LevelThreshold(own_level_.load(std::memory_order_relaxed));
  }

  // Totals since construction. Exact once every Admitted() call has
  // returned (writers joined or synchronised with the reader).
  AdmissionStats stats() const;

  const std::string& name() const { return name_; }

 private:
  // What the telemetry reads: a member, so the controller needs no virtual
  // functions of its own.
  // Decisions by criticality and outcome: [2 * criticality + shed], so the
  // hot path picks its counter without a branch.
  struct alignas(detail::kCacheLine) Shard {
    detail::ShardCounter counts[2 * kNumCriticalities];
  };

  AdmissionController(AdmissionOptions options, std::string name);

  static int ManagerFloor(const DegradationManager* m) {
    return m != nullptr ? m->admission_threshold() : kAdmitAllRank;
  }

  struct Decision {
    int rank;
    int threshold;  // the one that decided
    int part;       // > 0: rank is the boundary, admitted in part/1024
    bool admitted;
  };
  // Inlined into both entry points, and both into their callers: left to
  // the compiler, each was a call, together about half of Admitted()'s
  // cost, and Admit()'s OK path twice its inlined cost (admission_benchmark).
  DEGRADE_ALWAYS_INLINE Decision Decide(RequestClass rc);
  // Out of line: only a refusal builds a status.
  DEGRADE_NOINLINE absl::Status ShedStatus(Decision d) const {
    RequestClass clamped;
    clamped.criticality = static_cast<Criticality>(d.rank / kNumCohorts);
    clamped.cohort = static_cast<uint8_t>(d.rank % kNumCohorts);
    const std::string why =
        d.part > 0
            ? absl::StrCat(EncodeRequestClass(clamped), " (rank ", d.rank,
                           ") is the boundary of the threshold ",
                           detail::DescribeAdmissionThreshold(d.threshold),
                           ", admitted only in part (",
                           d.part * 100 / detail::kLevelSteps, "%)")
            : absl::StrCat(EncodeRequestClass(clamped), " (rank ", d.rank,
                           ") is not below the threshold ",
                           detail::DescribeAdmissionThreshold(d.threshold));
    return ShedError(absl::StrCat("admission \"", name_, "\""), why,
                     retry_after_);
  }
  // Called by the admitting thread whose request may end the window (the
  // n-th of it): closes it when due and the lock is free, else leaves it to
  // whoever holds the lock or comes next.
  DEGRADE_NOINLINE void EndWindowFromAdmission(uint64_t n) {
    // Coarse: a window is a second; a few ms late is nothing, and the
    // request path should not pay for a precise read.
    const int64_t now = absl::ToUnixNanos(clock_->CoarseNow());
    if (n < interval_requests_) {
      const int64_t start = window_start_ns_.load(std::memory_order_relaxed);
      // A coarse read may trail the window's precise start by a few ms:
      // not due. A clock set backwards is left to RecordQueuingDelay() or
      // the request count.
      if (!TimeUp(now, start)) return;
    }
    if (!mu_.TryLock()) return;
    CloseIfDueLocked(now);
    mu_.Unlock();
  }
  // Times are Unix ns (saturated at the infinities, so a clock stuck at
  // InfiniteFuture never times a window out: only the request count does).
  bool TimeUp(int64_t now, int64_t start) const {
    return now > start && static_cast<uint64_t>(detail::ElapsedNanosSince(
                              now, start)) >= interval_ns_;
  }
  void CloseIfDueLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseWindowLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const DegradationManager* const manager_;
  const bool adaptive_;
  const absl::Duration target_;
  const uint64_t interval_ns_;
  const uint32_t interval_requests_;
  const detail::AdmissionStep step_;
  const absl::Duration retry_after_;
  const Clock* const clock_;

  // LevelRank * 1024 + part (detail::NextAdmissionLevel).
  alignas(detail::kCacheLine) std::atomic<int> own_level_{
      detail::kAdmitAllLevel};
  // A rank threshold set by RecordRefusal until the window ends.
  std::atomic<int> refusal_cap_{kAdmitAllRank};
  // The current window's requests: in total, and per rank. Written by
  // every admitting thread (adaptive mode only), emptied at the window's end.
  alignas(detail::kCacheLine) std::atomic<uint64_t> window_requests_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> window_hist_;

  // When the window began (Unix ns): written under mu_, read without it by
  // the admitting thread that checks the time.
  std::atomic<int64_t> window_start_ns_{0};

  mutable detail::Mutex mu_;
  absl::Duration delay_sum_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  uint64_t delays_ ABSL_GUARDED_BY(mu_) = 0;

  const std::size_t shard_count_;
  std::unique_ptr<Shard[]> shards_;

  const detail::OwnerView<AdmissionController, AdmissionStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation details ----

namespace detail {

inline bool FiniteFraction(double f) {
  return std::isfinite(f) && f > 0.0 && f <= 1.0;
}

inline bool PositiveFinite(absl::Duration d) {
  return d > absl::ZeroDuration() && d != absl::InfiniteDuration();
}

}  // namespace detail

inline absl::Status ValidateAdmissionOptions(const AdmissionOptions& o) {
  const detail::SettingOwner who("admission", o.name);
  if (o.name.empty()) {
    return who.Invalid("name", "\"\"",
                       "must not be empty (it names the controller in shed "
                       "statuses and metrics)");
  }
  if (!detail::FiniteFraction(o.tighten_fraction)) {
    return who.Invalid("tighten_fraction", o.tighten_fraction,
                       "must be a finite number in (0, 1]");
  }
  if (!detail::FiniteFraction(o.loosen_fraction)) {
    return who.Invalid("loosen_fraction", o.loosen_fraction,
                       "must be a finite number in (0, 1]");
  }
  if (!detail::PositiveFinite(o.target_queuing_delay)) {
    return who.Invalid("target_queuing_delay",
                       absl::FormatDuration(o.target_queuing_delay),
                       "must be positive and finite");
  }
  if (!detail::PositiveFinite(o.interval)) {
    return who.Invalid("interval", absl::FormatDuration(o.interval),
                       "must be positive and finite");
  }
  if (o.interval_requests < 1) {
    return who.Invalid("interval_requests", o.interval_requests,
                       "must be at least 1");
  }
  if (o.min_threshold < 0 || o.min_threshold > kAdmitAllRank) {
    return who.Invalid("min_threshold", o.min_threshold,
                       absl::StrCat("must be in [0, ", kAdmitAllRank, "]"));
  }
  if (o.retry_after < absl::ZeroDuration()) {
    return who.Invalid("retry_after", absl::FormatDuration(o.retry_after),
                       "must not be negative");
  }
  return absl::OkStatus();
}

inline absl::StatusOr<std::unique_ptr<AdmissionController>>
AdmissionController::Create(AdmissionOptions o) {
  if (absl::Status v = ValidateAdmissionOptions(o); !v.ok()) return v;
  std::string name = detail::Printable(o.name);
  return std::unique_ptr<AdmissionController>(
      new AdmissionController(std::move(o), std::move(name)));
}

inline AdmissionController::AdmissionController(AdmissionOptions o,
                                                std::string name)
    : name_(std::move(name)),
      manager_(o.manager),
      adaptive_(o.adaptive),
      target_(o.target_queuing_delay),
      interval_ns_(static_cast<uint64_t>(absl::ToInt64Nanoseconds(o.interval))),
      interval_requests_(o.interval_requests),
      step_{o.tighten_fraction, o.loosen_fraction, o.min_threshold},
      retry_after_(o.retry_after),
      clock_(o.clock != nullptr ? o.clock : &RealClock::Instance()),
      window_hist_(adaptive_ ? new std::atomic<uint64_t>[kAdmitAllRank]
                             : nullptr),
      shard_count_(detail::ShardArraySize()),
      shards_(new Shard[shard_count_]) {
  if (window_hist_ != nullptr) {
    for (int r = 0; r < kAdmitAllRank; ++r) {
      window_hist_[static_cast<std::size_t>(r)].store(0,
                                                      std::memory_order_relaxed);
    }
  }
  window_start_ns_.store(absl::ToUnixNanos(clock_->Now()),
                         std::memory_order_relaxed);
  // Last: the view must be complete before a telemetry may read it.
  telemetry_ = detail::Attach(o.metrics, &Telemetry::AttachAdmission, view_);
}

inline AdmissionController::~AdmissionController() {
  telemetry_.reset();  // before anything its view reads
}

DEGRADE_ALWAYS_INLINE AdmissionController::Decision
AdmissionController::Decide(RequestClass rc) {
  const int rank = Rank(rc);
  const int floor = ManagerFloor(manager_);
  Decision d{rank, floor, 0, rank < floor};
  uint64_t n = 0;  // this request's place in the window
  if (adaptive_) {
    window_hist_[static_cast<unsigned>(rank)].fetch_add(
        1, std::memory_order_relaxed);
    n = window_requests_.fetch_add(1, std::memory_order_relaxed) + 1;
    const int hard =
        std::min(floor, refusal_cap_.load(std::memory_order_relaxed));
    const int level = own_level_.load(std::memory_order_relaxed);
    const int own = detail::LevelRank(level);
    const int part = detail::LevelPart(level);
    if (rank == own && part != 0 && own < hard) {
      d.part = part;
      d.admitted = detail::AdmitsPart(n, part);
    } else {
      d.admitted = rank < std::min(own, hard);
    }
    d.threshold = std::min(hard, own + (part != 0 ? 1 : 0));
  }
  const auto slot = (static_cast<unsigned>(rank) / kNumCohorts) * 2u +
                    (d.admitted ? 0u : 1u);
  shards_[detail::ThreadShardIndex()].counts[slot].Add(1);
  // The request that fills the window, and every 64th for the clock: the
  // window must end even when nothing is admitted and no delay comes.
  if (adaptive_ && DEGRADE_UNLIKELY(n >= interval_requests_ || n % 64 == 0)) {
    EndWindowFromAdmission(n);
  }
  return d;
}

DEGRADE_ALWAYS_INLINE bool AdmissionController::Admitted(RequestClass rc) {
  return Decide(rc).admitted;
}

DEGRADE_ALWAYS_INLINE absl::Status AdmissionController::Admit(RequestClass rc) {
  const Decision d = Decide(rc);
  if (DEGRADE_LIKELY(d.admitted)) return absl::OkStatus();
  return ShedStatus(d);
}

inline void AdmissionController::RecordQueuingDelay(absl::Duration delay) {
  if (!adaptive_) return;
  const int64_t now = absl::ToUnixNanos(clock_->Now());
  detail::MutexLock lock(&mu_);
  delay_sum_ += delay > absl::ZeroDuration() ? delay : absl::ZeroDuration();
  ++delays_;
  CloseIfDueLocked(now);
}

inline void AdmissionController::RecordRefusal(RequestClass rc) {
  if (!adaptive_) return;
  // The first rank of the next criticality (everything less important than
  // rc's class), never into the critical classes.
  const int end = (Rank(rc) / kNumCohorts + 1) * kNumCohorts;
  const int cap = std::max({end, FloorRank(Criticality::kCritical),
                            step_.min_threshold});
  int cur = refusal_cap_.load(std::memory_order_relaxed);
  while (cap < cur && !refusal_cap_.compare_exchange_weak(
                          cur, cap, std::memory_order_relaxed)) {
  }
}

inline void AdmissionController::CloseIfDueLocked(int64_t now) {
  int64_t start = window_start_ns_.load(std::memory_order_relaxed);
  // A clock set backwards starts the window again rather than waiting for
  // it to come back.
  if (now < start) {
    start = now;
    window_start_ns_.store(now, std::memory_order_relaxed);
  }
  if (TimeUp(now, start) ||
      window_requests_.load(std::memory_order_relaxed) >= interval_requests_) {
    CloseWindowLocked(now);
  }
}

inline void AdmissionController::CloseWindowLocked(int64_t now) {
  detail::RankHistogram hist;
  for (std::size_t r = 0; r < hist.size(); ++r) {
    hist[r] = window_hist_[r].exchange(0, std::memory_order_relaxed);
  }
  window_requests_.store(0, std::memory_order_relaxed);
  // No delay reported: nothing left the queue to wait in it. Calm.
  const bool overloaded =
      delays_ > 0 && delay_sum_ / static_cast<int64_t>(delays_) >= target_;
  const int own = own_level_.load(std::memory_order_relaxed);
  const int in_force =
      std::min(own, ManagerFloor(manager_) * detail::kLevelSteps);
  own_level_.store(
      detail::NextAdmissionLevel(hist, own, in_force, overloaded, step_),
      std::memory_order_relaxed);
  delay_sum_ = absl::ZeroDuration();
  delays_ = 0;
  // A refusal's cap lasts the window it came in; refusals in the next one
  // set it again.
  refusal_cap_.store(kAdmitAllRank, std::memory_order_relaxed);
  window_start_ns_.store(now, std::memory_order_relaxed);
}

inline AdmissionStats AdmissionController::stats() const {
  AdmissionStats st;
  st.threshold = threshold();
  for (std::size_t i = 0; i < shard_count_; ++i) {
    for (std::size_t c = 0; c < kNumCriticalities; ++c) {
      st.admitted[c] += shards_[i].counts[2 * c].Load();
      st.shed[c] += shards_[i].counts[2 * c + 1].Load();
    }
  }
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ADMISSION_HPP_
