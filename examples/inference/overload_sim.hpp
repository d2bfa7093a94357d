// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/overload_sim.hpp
// -----------------------------------------------------------------------------
//
// simulation.hpp's batched inference server (one GPU, batches of up to 32,
// 180 ms of core work a full batch plus the non-core features still on)
// under four request classes (overload_traffic.hpp), run on a FakeClock in
// four modes on the same requests:
//
//   kAlwaysOn      no control: every feature on, every request queued FIFO.
//   kStatic        today's config (examples/config/inference_degradation.json):
//                  the manager switches features off by level and level 3
//                  refuses both sheddable classes; FIFO, unbounded.
//   kAdmitByLevel  the same levels carrying "admit" floors
//                  (examples/config/inference_overload.json), enforced by an
//                  AdmissionController driven by the manager alone.
//   kFull          the whole discipline, nothing tuned to the load:
//                  AdmissionController (the manager's floor and DAGOR's
//                  adaptive threshold) -> ConcurrencyLimiter -> AdmissionQueue
//                  (CoDel, adaptive LIFO, deadline-aware), PopBatch(32).
//
// The limiter counts requests in flight (waiting in the queue or in a
// batch), not batch slots: the 32 slots are fixed by the model, what must
// adapt is how much work may wait for them, and a request's whole latency
// (queue + batch) is what decides whether it was answered in time. Its
// bounds come from the server's shape (DisciplineSettings): at least the
// batches that can all be answered within the deadline, at most the queue.
//
// Every request's fate is recorded (answered, or refused/dropped with its
// reason); overload_report.hpp turns a run into the per-class tables and
// charts. Definitions:
//
//   capacity   the GPU-seconds physically available over a window: its
//              length (one GPU), whatever the GPU's speed.
//   goodput    the GPU-seconds spent on requests answered within their 1 s
//              deadline, over the capacity. A batch of n requests that took
//              d charges d/n to each of them (its overhead included: it is
//              spent on them); a request is counted in the window its answer
//              falls in.
//   available  of a class: answered within the deadline / offered.

#ifndef DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_SIM_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_SIM_HPP_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/request_class.hpp"
#include "degrade/signals.hpp"
#include "inference/overload_traffic.hpp"
#include "inference/simulation.hpp"

#include "degrade/admission.hpp"
#include "degrade/admission_queue.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/status.hpp"

namespace inference {
namespace overload {

enum class Mode { kAlwaysOn, kStatic, kAdmitByLevel, kFull };
inline constexpr std::array<Mode, 4> kModes = {
    Mode::kAlwaysOn, Mode::kStatic, Mode::kAdmitByLevel, Mode::kFull};

inline absl::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kAlwaysOn:
      return "always on";
    case Mode::kStatic:
      return "static config";
    case Mode::kAdmitByLevel:
      return "admit by level";
    case Mode::kFull:
      return "full discipline";
  }
  return "?";
}

// What became of a request.
enum class Fate : uint8_t {
  kAnswered,   // answered (in time or not: see latency)
  kShed,       // refused at the door by its class (manager level or DAGOR)
  kLimit,      // refused by the concurrency limiter
  kCapacity,   // refused or dropped by the queue: at its hard capacity
  kCodel,      // dropped by the queue: a standing queue (CoDel)
  kDeadline,   // dropped by the queue: its deadline could not be met
  kQueueShed,  // dropped by the queue: below the admission threshold
  kUnserved,   // still waiting or in service when the run ended
};
inline constexpr std::size_t kNumFates = 8;

inline absl::string_view FateName(Fate f) {
  switch (f) {
    case Fate::kAnswered:
      return "answered";
    case Fate::kShed:
      return "shed";
    case Fate::kLimit:
      return "limit";
    case Fate::kCapacity:
      return "capacity";
    case Fate::kCodel:
      return "codel";
    case Fate::kDeadline:
      return "deadline";
    case Fate::kQueueShed:
      return "queue shed";
    case Fate::kUnserved:
      return "unserved";
  }
  return "?";
}

struct Request {
  absl::Duration arrival;
  absl::Duration done = absl::InfiniteDuration();  // answered or refused
  absl::Duration gpu = absl::ZeroDuration();       // its share of its batch
  uint8_t klass = 0;
  uint8_t cohort = 0;
  Fate fate = Fate::kUnserved;

  absl::Duration latency() const { return done - arrival; }
  bool good() const { return fate == Fate::kAnswered && latency() <= kDeadline; }
};

// Once per sample period, after the manager's poll.
struct Sample {
  absl::Duration t;
  int level = 0;
  int threshold = degrade::kAdmitAllRank;  // admission in force (kAdmitAllRank: none)
  int limit = 0;                           // 0: no limiter
  int in_flight = 0;
  std::size_t queued = 0;
  double speed = 1.0;
};

// The settings of the full discipline: from the server's shape (batch size,
// batch time, deadline, the classes' order), never from the load. The
// defaults are the ones docs/overload/sim.md explains; the fields exist so
// a test or an experiment can run the same scenario with one changed.
struct DisciplineSettings {
  // Sixteen full batches: nearly three deadlines of work at the GPU's best
  // rate, so once admission has converged the queue never fills.
  std::size_t queue_capacity = 16 * kBatchSize;
  // AIMD, counting requests in flight (see the file comment). Gradient2
  // and Vegas read latency above the unloaded one as queueing, and a
  // batching server's latency rises by a whole batch as soon as a second
  // batch's worth is in flight. Measured (docs/overload/sim.md): Vegas sits
  // at its floor; Gradient2 moves but takes minutes to settle after the GPU
  // halves, and refuses critical requests at its limit. AIMD moves on what
  // does mean overload here: drops (CoDel, deadline) and answers slower
  // than the deadline.
  degrade::LimitAlgorithm algorithm = degrade::LimitAlgorithm::kAimd;
  // The floor: five batches, the most in flight that can all still be
  // answered within the deadline at the best batch time (5 x 180 ms =
  // 900 ms < 1 s). The ceiling: the queue's capacity.
  int min_limit = 5 * kBatchSize;
  int max_limit = 16 * kBatchSize;
  // At the global limit the critical classes still enter (half the limit
  // each, the sheddable classes none): the limiter cannot order the classes
  // below its limit, so at it it must never refuse a critical request to
  // make room for a sheddable one.
  std::array<double, degrade::kNumCriticalities> guaranteed_share = {0.5, 0.5, 0.0, 0.0};
  // CoDel's slough timeout (2 x target, 900 ms) is past the deadline less
  // one full batch (1 s - 180 ms): it only ever drops what could no longer
  // be answered in time, and never before the deadline-aware drop would.
  // Its remaining job is to switch the queue to LIFO while one stands.
  absl::Duration codel_target = absl::Milliseconds(450);
  absl::Duration codel_interval = absl::Seconds(1);
  // DAGOR. A saturated batching server with no standing queue shows a mean
  // wait of half a batch (90 ms with the features off); one standing batch
  // adds a whole one (270 ms). The target, two thirds of a batch (120 ms),
  // sits just above the first. DAGOR's 1 s windows, but a tighten step of
  // 2% instead of 5%: the delay is read when a request leaves the queue, up
  // to a deadline (one window) after it was admitted, so every step acts on
  // a window-old measurement and DAGOR's 5% overshoots into CRITICAL. The
  // loosen step is the smallest there is, one rank per calm window.
  absl::Duration target_queuing_delay = absl::Milliseconds(120);
  absl::Duration dagor_interval = absl::Seconds(1);
  double tighten_fraction = 0.02;
  double loosen_fraction = 0.001;
  // DAGOR's threshold stops at SHEDDABLE_PLUS:0: the door sheds only the
  // sheddable classes. When the critical classes alone are past capacity
  // (the GPU halved) the limiter's guaranteed shares and the queue's
  // deadline check choose among them; left to walk into CRITICAL, the
  // threshold's noise cost 0.3-0.6% of CRITICAL on the plateau (99.43% on
  // seed 2) while sheddable traffic was still being served.
  int min_threshold = 2 * degrade::kNumCohorts;
  // A request the limiter refuses tells the door (RecordRefusal: nothing
  // less important is admitted until calm windows loosen it again) and
  // takes the permit of a queued request of a lower class (Preempt). Off,
  // the door keeps admitting SHEDDABLE_PLUS for up to a window while the
  // limiter refuses CRITICAL: strict order breaks when the GPU halves.
  bool preempt_lower_classes = true;
  // The queue re-checks each item's class against the admission threshold
  // at push and pop (kShed): when DAGOR tightens, the queued requests of the
  // classes it now refuses give their batch slots to the ones it admits, in
  // class order, instead of being served late or dropped by age.
  bool queue_enforces_admission = true;
};

struct SimOptions {
  Mode mode = Mode::kFull;
  uint64_t seed = 1;
  Scenario scenario = DefaultScenario();
  degrade::DegradationConfig static_config;  // kStatic
  degrade::DegradationConfig admit_config;   // kAdmitByLevel
  degrade::DegradationConfig discipline_config;  // kFull
  absl::Duration sample_period = absl::Seconds(1);
  DisciplineSettings discipline;  // kFull
};

struct RunResult {
  Mode mode = Mode::kFull;
  absl::Duration length;
  std::vector<Request> requests;  // in arrival order
  std::vector<Sample> samples;
  std::vector<std::string> log_lines;  // the manager's
};

namespace internal {

struct Item {
  std::size_t id = 0;
  std::optional<degrade::LimiterPermit> permit;
};

inline Fate FateOf(degrade::DropReason why) {
  switch (why) {
    case degrade::DropReason::kCapacity:
      return Fate::kCapacity;
    case degrade::DropReason::kCodel:
      return Fate::kCodel;
    case degrade::DropReason::kDeadline:
      return Fate::kDeadline;
    case degrade::DropReason::kShed:
      return Fate::kQueueShed;
  }
  return Fate::kCapacity;
}

// Which drop counter moved between two snapshots of the queue's stats: the
// reason of a refused Push.
inline Fate RefusalReason(const degrade::QueueStats& before,
                          const degrade::QueueStats& after) {
  for (std::size_t i = 0; i < degrade::kNumDropReasons; ++i) {
    if (after.drops[i] != before.drops[i]) {
      return FateOf(static_cast<degrade::DropReason>(i));
    }
  }
  return Fate::kCapacity;
}

}  // namespace internal

// Runs the scenario once in `options.mode`. INVALID_ARGUMENT when a config
// or a component's settings are refused.
inline absl::StatusOr<RunResult> Run(const SimOptions& options) {
  RunResult r;
  r.mode = options.mode;
  r.length = options.scenario.pattern.length();
  const Mode mode = options.mode;
  const DisciplineSettings& ds = options.discipline;

  degrade::FakeClock clock;
  const absl::Time t0 = clock.Now();
  absl::Duration now = absl::ZeroDuration();
  const degrade::CohortRotation cohorts = *degrade::CohortRotation::Create();
  const std::vector<std::string> keys = UserKeys();

  std::deque<std::size_t> fifo;  // the queue of every mode but kFull
  internal::Gpu gpu;
  degrade::LatencyTracker latency;
  std::function<std::size_t()> queued = [&fifo] { return fifo.size(); };

  std::unique_ptr<degrade::DegradationManager> manager;
  std::array<degrade::FeatureGate, kNumNonCore> gates;  // default: always on
  degrade::FeatureGate best_effort;
  if (mode != Mode::kAlwaysOn) {
    const degrade::DegradationConfig& config =
        mode == Mode::kStatic         ? options.static_config
        : mode == Mode::kAdmitByLevel ? options.admit_config
                                      : options.discipline_config;
    degrade::ManagerOptions mo;
    mo.name = config.name;
    mo.clock = &clock;
    mo.log_sink = [&r](absl::string_view line) {
      r.log_lines.emplace_back(line);
    };
    auto created = degrade::DegradationManager::Create(config, mo);
    if (!created.ok()) return created.status();
    manager = std::move(*created);
    for (std::size_t i = 0; i < kNumNonCore; ++i) {
      gates[i] = manager->Feature(kNonCoreFeatures[i].name);
    }
    if (mode == Mode::kStatic) best_effort = manager->Feature(kBestEffortTraffic);
    manager->AddSource("queue_length",
                       [&queued] { return static_cast<double>(queued()); });
    manager->AddSource("gpu_util", [&gpu, &now] { return gpu.Utilisation(now); });
    manager->AddSource("avg_latency_ms", latency.Source());
  }

  std::unique_ptr<degrade::AdmissionController> admission;
  std::unique_ptr<degrade::ConcurrencyLimiter> limiter;
  std::unique_ptr<degrade::AdmissionQueue<internal::Item>> queue;
  std::vector<internal::Item> in_service, popped;  // after the limiter: permits die first
  bool ended = false;
  if (mode == Mode::kAdmitByLevel || mode == Mode::kFull) {
    degrade::AdmissionOptions ao;
    ao.manager = manager.get();
    ao.adaptive = mode == Mode::kFull;
    if (mode == Mode::kFull) {
      ao.target_queuing_delay = ds.target_queuing_delay;
      ao.interval = ds.dagor_interval;
      ao.tighten_fraction = ds.tighten_fraction;
      ao.loosen_fraction = ds.loosen_fraction;
      ao.min_threshold = ds.min_threshold;
    }
    ao.clock = &clock;
    auto created = degrade::AdmissionController::Create(ao);
    if (!created.ok()) return created.status();
    admission = std::move(*created);
  }
  // shed_rate: the share of the requests the admission controller refused
  // since the last poll. The full discipline's levels follow it: features
  // come back only once nothing is being shed for them.
  uint64_t shed_seen = 0, admitted_seen = 0;
  if (mode == Mode::kFull) {
    manager->AddSource("shed_rate", [&admission, &shed_seen, &admitted_seen] {
      const degrade::AdmissionStats st = admission->stats();
      uint64_t shed = 0, admitted = 0;
      for (std::size_t c = 0; c < degrade::kNumCriticalities; ++c) {
        shed += st.shed[c];
        admitted += st.admitted[c];
      }
      const uint64_t d_shed = shed - shed_seen, d_all = d_shed + admitted - admitted_seen;
      shed_seen = shed;
      admitted_seen = admitted;
      return d_all == 0 ? 0.0 : static_cast<double>(d_shed) / static_cast<double>(d_all);
    });
  }
  if (mode == Mode::kFull) {
    degrade::LimiterSettings ls;
    ls.algorithm = ds.algorithm;
    ls.min_limit = ds.min_limit;
    ls.initial_limit = ds.min_limit;
    ls.max_limit = ds.max_limit;
    ls.max_healthy_latency = kDeadline;
    ls.aimd_timeout = kDeadline;
    ls.guaranteed_share = ds.guaranteed_share;
    ls.seed = options.seed;
    ls.clock = &clock;
    auto created_limiter = degrade::ConcurrencyLimiter::Create(ls);
    if (!created_limiter.ok()) return created_limiter.status();
    limiter = std::move(*created_limiter);

    degrade::QueueSettings qs;
    qs.capacity = ds.queue_capacity;
    qs.codel_target = ds.codel_target;
    qs.codel_interval = ds.codel_interval;
    if (ds.queue_enforces_admission) {
      // Only the threshold: the simulation reports the sojourns itself, the
      // dropped ones included (see on_drop).
      qs.admission_threshold = [&admission] { return admission->threshold(); };
    }
    qs.clock = &clock;
    auto created_queue = degrade::AdmissionQueue<internal::Item>::Create(
        qs, [&r, &now, &ended, &admission](internal::Item&& item, degrade::DropReason why) {
          if (ended) return;
          Request& q = r.requests[item.id];
          q.fate = internal::FateOf(why);
          q.done = now;
          // Under adaptive LIFO the served items are the newest; the ones
          // that waited longest are these. DAGOR must see their wait too,
          // or it would call a standing queue calm.
          if (why != degrade::DropReason::kShed) {
            admission->RecordQueuingDelay(now - q.arrival);
          }
          if (item.permit.has_value()) {
            if (why == degrade::DropReason::kShed) {
              item.permit->Ignore();
            } else {
              item.permit->Dropped();
            }
          }
        });
    if (!created_queue.ok()) return created_queue.status();
    queue = std::move(*created_queue);
    queued = [&queue] { return queue->size(); };
  }

  const auto non_core = [&gates] {
    absl::Duration d = absl::ZeroDuration();
    for (std::size_t f = 0; f < kNumNonCore; ++f) {
      if (gates[f].enabled()) d += kNonCoreFeatures[f].cost;
    }
    return d;
  };

  const auto start_batch = [&] {
    std::vector<std::size_t> ids;
    if (queue != nullptr) {
      while (in_service.empty() && queue->size() > 0) {
        popped.clear();
        queue->PopBatch(&popped, kBatchSize);
        for (internal::Item& item : popped) {
          admission->RecordQueuingDelay(now - r.requests[item.id].arrival);
          in_service.push_back(std::move(item));
        }
      }
      for (const internal::Item& item : in_service) ids.push_back(item.id);
    }
    while (ids.size() < static_cast<std::size_t>(kBatchSize) && !fifo.empty()) {
      ids.push_back(fifo.front());
      fifo.pop_front();
    }
    if (ids.empty()) return;
    const std::size_t n = ids.size();
    const absl::Duration d = gpu.Start(
        std::move(ids), now, non_core(),
        SpeedAt(options.scenario.speed, now));
    for (const std::size_t id : gpu.batch()) {
      r.requests[id].gpu = d / static_cast<int64_t>(n);
    }
  };

  const auto finish_batch = [&] {
    for (const std::size_t id : gpu.batch()) {
      Request& q = r.requests[id];
      q.fate = Fate::kAnswered;
      q.done = now;
      latency.Record(q.latency());
    }
    if (queue != nullptr) {
      queue->RecordServiceTime(now - gpu.start());
      for (internal::Item& item : in_service) {
        item.permit->Success(r.requests[item.id].latency());
      }
      in_service.clear();
    }
    gpu.Finish(now);
  };

  const auto arrive = [&](const Arrival& a) {
    Request q;
    q.arrival = now;
    q.klass = a.klass;
    q.cohort = cohorts.CohortOf(keys[static_cast<std::size_t>(a.user)], t0 + now);
    const std::size_t id = r.requests.size();
    r.requests.push_back(q);
    const degrade::RequestClass rc{kClasses[a.klass].criticality, q.cohort};
    const auto refuse = [&](Fate why) {
      r.requests[id].fate = why;
      r.requests[id].done = now;
    };
    if (mode == Mode::kStatic && IsSheddable(rc.criticality) &&
        !best_effort.enabled()) {
      return refuse(Fate::kShed);
    }
    if (admission != nullptr && !admission->Admitted(rc)) {
      return refuse(Fate::kShed);
    }
    if (queue != nullptr) {
      std::optional<degrade::LimiterPermit> permit = limiter->TryAcquire(rc);
      if (!permit.has_value()) {
        // Strict order: the door now refuses what is less important, and a
        // queued request of a lower class gives its permit to this one.
        if (ds.preempt_lower_classes) {
          admission->RecordRefusal(rc);
          // As many permits back as the limiter needs (it may have just cut
          // its limit below what is in flight), and only if the queue has
          // that many below rc: dropping fewer would lose both requests.
          const int need = limiter->in_flight() - limiter->limit() + 1;
          if (need > 0 &&
              queue->queued_below(rc) >= static_cast<std::size_t>(need)) {
            for (int i = 0; i < need; ++i) queue->Preempt(rc);
            permit = limiter->TryAcquire(rc);
          }
        }
        if (!permit.has_value()) return refuse(Fate::kLimit);
      }
      internal::Item item{id, std::move(permit)};
      const degrade::QueueStats before = queue->stats();
      if (!queue->Push(std::move(item), t0 + now + kDeadline, rc).ok()) {
        refuse(internal::RefusalReason(before, queue->stats()));
        item.permit->Dropped();
      }
      return;
    }
    fifo.push_back(id);
  };

  const auto sample = [&] {
    Sample s;
    s.t = now;
    if (manager != nullptr) {
      (void)manager->PollOnce();  // every source is valid for both configs
      s.level = manager->level();
    } else {
      (void)gpu.Utilisation(now);
    }
    if (mode == Mode::kStatic && !best_effort.enabled()) {
      s.threshold = degrade::FloorRank(degrade::Criticality::kSheddablePlus, 0);
    }
    if (mode == Mode::kAdmitByLevel) s.threshold = manager->admission_threshold();
    if (admission != nullptr) s.threshold = admission->threshold();
    if (limiter != nullptr) {
      s.limit = limiter->limit();
      s.in_flight = limiter->in_flight();
    }
    s.queued = queued();
    s.speed = SpeedAt(options.scenario.speed, now);
    r.samples.push_back(s);
  };

  ClassedArrivals arrivals(options.scenario.pattern, options.seed);
  Arrival next_arrival = arrivals.Next();
  absl::Duration next_sample = options.sample_period;
  while (true) {
    const absl::Duration t = std::min({gpu.end(), next_arrival.at, next_sample});
    if (t >= r.length) break;
    now = t;
    clock.Set(t0 + now);
    if (t == gpu.end()) {
      finish_batch();
    } else if (t == next_arrival.at) {
      arrive(next_arrival);
      next_arrival = arrivals.Next();
    } else {
      sample();
      next_sample += options.sample_period;
    }
    if (!gpu.busy() && queued() > 0) start_batch();
  }

  ended = true;  // what the queue still holds stays kUnserved
  in_service.clear();
  queue.reset();
  limiter.reset();
  admission.reset();
  manager.reset();  // its sink writes into r
  return r;
}

}  // namespace overload
}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_SIM_HPP_
