// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/simulation.hpp
// -----------------------------------------------------------------------------
//
// A batched inference server under overload, as a deterministic
// discrete-event simulation on a FakeClock, shared by the inference_shedding
// demo and its test so that the test checks the very code the demo prints.
//
// The server (the seed article's text-generation service):
//
//   * One GPU runs one batch at a time, up to kBatchSize (32) requests, and
//     starts the next batch as soon as it is free (continuous batching).
//   * A batch of n requests takes kBatchOverhead + n * kCorePerRequest of core
//     work (180 ms for a full batch), plus, per request, the cost of every
//     non-core feature that is still on (kNonCoreFeatures: semantic-cache
//     write, debug log, fine-grained metrics, personalisation, A/B tagging,
//     feature statistics, optional pre- and post-processing). That work sits
//     on the batch's critical path: it competes with the model for the GPU,
//     the CPU feeding it and memory bandwidth, so a fully featured request
//     costs about twice a bare one.
//   * Requests arrive from a time-varying Poisson process (LoadPattern). A
//     share of them (kBestEffortShare) is best-effort traffic (background
//     jobs, prefetches), admitted while the `best_effort_traffic` feature is
//     on: level 3's `all_non_critical` refuses it at the door.
//
// Each non-core feature and the best-effort admission ask a
// `degrade::FeatureGate` of a `DegradationManager` configured from
// examples/config/inference_degradation.json (the article's config plus
// recover thresholds and holds). The manager's three signal sources are
// registered with `AddSource()` and polled with `PollOnce()` every sample
// period of simulated time, as its monitor thread would on the real clock:
//
//   queue_length    requests waiting (not counting the batch in service);
//   gpu_util        the stand-in for GPU utilisation: the share of the batch
//                   slots busy over the last period (a full batch running all
//                   the time is 1.0; a batch of 8 running all the time, 0.25);
//   avg_latency_ms  the mean latency of the requests answered in the last
//                   period (a degrade::LatencyTracker).
//
// The same pattern with the same seed gives the same arrivals in every run,
// whatever the server does, so runs in different modes (Mode) see exactly the
// same requests. Nothing sleeps: a whole run takes well under a second.

#ifndef DEGRADE_EXAMPLES_INFERENCE_SIMULATION_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_SIMULATION_HPP_

#include <algorithm>
#include <array>
#include <cmath>
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
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/degradation_manager.hpp"

namespace inference {

// ---- The server -------------------------------------------------------------

inline constexpr int kBatchSize = 32;
// Core work: the model's forward pass, input and output processing,
// authentication, result logging. A full batch: 60 + 32 * 3.75 = 180 ms.
inline constexpr absl::Duration kBatchOverhead = absl::Milliseconds(60);
inline constexpr absl::Duration kCorePerRequest = absl::Microseconds(3750);

// One piece of non-core work a request pays for while its feature is on.
struct NonCoreFeature {
  absl::string_view name;  // the feature's name in the config
  absl::Duration cost;     // per request, on the batch's critical path
  int level;               // the config level that switches it off
  absl::string_view what;
};

inline constexpr std::size_t kNumNonCore = 8;
inline constexpr std::array<NonCoreFeature, kNumNonCore> kNonCoreFeatures = {{
    {"semantic_cache", absl::Microseconds(1500), 1,
     "semantic-cache write: embed the answer, insert it in the index"},
    {"debug_log", absl::Microseconds(600), 1,
     "debug log: serialise the request and the answer to disk"},
    {"light_metrics", absl::Microseconds(400), 1,
     "fine-grained metrics: per-token and per-stage timings"},
    {"personalization", absl::Microseconds(1800), 2,
     "personalisation: fetch the user profile, adjust the prompt"},
    {"ab_test", absl::Microseconds(300), 2,
     "A/B tagging: assign and record the experiment arms"},
    {"feature_stats", absl::Microseconds(700), 2,
     "feature statistics: aggregate the input features"},
    {"preprocess_enhance", absl::Microseconds(800), 3,
     "optional pre-processing: prompt rewriting"},
    {"postprocess_enhance", absl::Microseconds(600), 3,
     "optional post-processing: output polishing"},
}};

// The admission gate of best-effort requests, and their share of the
// traffic. Level 3 (`all_non_critical`) switches the gate off.
inline constexpr absl::string_view kBestEffortTraffic = "best_effort_traffic";
inline constexpr int kBestEffortLevel = 3;
inline constexpr double kBestEffortShare = 0.35;

// The non-core work per request that is still on at `level`.
inline absl::Duration NonCoreCostAt(int level) {
  absl::Duration d = absl::ZeroDuration();
  for (const NonCoreFeature& f : kNonCoreFeatures) {
    if (f.level > level) d += f.cost;
  }
  return d;
}

// Service time of a batch of n requests, each paying `non_core`.
inline absl::Duration BatchTime(int n, absl::Duration non_core) {
  return kBatchOverhead + n * (kCorePerRequest + non_core);
}

// Requests per second the server sustains in full batches at `level`.
inline double CapacityRps(int level) {
  return kBatchSize /
         absl::ToDoubleSeconds(BatchTime(kBatchSize, NonCoreCostAt(level)));
}

// ---- The load ---------------------------------------------------------------

// One phase of the load pattern. Loads are multiples of the fully featured
// capacity, CapacityRps(0).
struct LoadPhase {
  std::string name;
  absl::Duration length;
  double from = 0.0;  // the load at the start of the phase...
  double to = 0.0;    // ...and at its end, linear in between
  // Per-second noise: each second's load is multiplied by 1 + noise * u, u
  // uniform in [-1, 1], drawn from the seed and the second.
  double noise = 0.0;
  // Bursts: the last `burst_length` of every `burst_every` runs at
  // `burst_load` instead (no bursts while burst_every is zero).
  absl::Duration burst_every = absl::ZeroDuration();
  absl::Duration burst_length = absl::ZeroDuration();
  double burst_load = 0.0;
};

struct LoadPattern {
  std::vector<LoadPhase> phases;

  absl::Duration length() const {
    absl::Duration d = absl::ZeroDuration();
    for (const LoadPhase& p : phases) d += p.length;
    return d;
  }

  // [start, end) of the phase named `name`; an empty interval if none.
  std::pair<absl::Duration, absl::Duration> Span(absl::string_view name) const {
    absl::Duration start = absl::ZeroDuration();
    for (const LoadPhase& p : phases) {
      if (p.name == name) return {start, start + p.length};
      start += p.length;
    }
    return {absl::ZeroDuration(), absl::ZeroDuration()};
  }

  // The highest load the pattern can offer, noise included.
  double Peak() const {
    double peak = 0.0;
    for (const LoadPhase& p : phases) {
      peak = std::max({peak, std::max(p.from, p.to) * (1.0 + p.noise),
                       p.burst_load * (1.0 + p.noise)});
    }
    return peak;
  }
};

// The demo's pattern: normal load, a ramp to 3x the fully featured
// capacity, a noisy plateau there, bursts to 3.5x over 1.5x, a ramp back
// down, and normal load long enough for a staged recovery.
inline LoadPattern DefaultPattern() {
  LoadPattern p;
  p.phases = {
      {"normal", absl::Seconds(90), 0.5, 0.5, 0.05},
      {"ramp up", absl::Seconds(120), 0.5, 3.0, 0.05},
      {"noisy plateau", absl::Seconds(180), 3.0, 3.0, 0.15},
      {"bursts", absl::Seconds(120), 1.5, 1.5, 0.05, absl::Seconds(30),
       absl::Seconds(5), 3.5},
      {"ramp down", absl::Seconds(120), 1.5, 0.5, 0.05},
      {"recovery", absl::Seconds(420), 0.5, 0.5, 0.05},
  };
  return p;
}

// The library's SplitMix64 (the standard library's distributions differ
// between implementations; this does not).
inline uint64_t SplitMix64(uint64_t& state) {
  const uint64_t out = degrade::detail::SplitMix64Step(state);
  state += 0x9E3779B97F4A7C15ull;
  return out;
}

// Uniform in [0, 1).
inline double NextUnit(uint64_t& state) {
  return static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;
}

// The load of a pattern as a function of time in seconds, with the
// pattern's durations converted once (the arrival process asks for it
// hundreds of thousands of times per run).
class LoadCurve {
 public:
  LoadCurve(const LoadPattern& pattern, uint64_t seed) : seed_(seed) {
    double start = 0.0;
    for (const LoadPhase& p : pattern.phases) {
      const double length = absl::ToDoubleSeconds(p.length);
      phases_.push_back({start, length, p.from, p.to, p.noise,
                         absl::ToDoubleSeconds(p.burst_every),
                         absl::ToDoubleSeconds(p.burst_length), p.burst_load});
      start += length;
    }
  }

  // The load offered at `t` seconds, in multiples of CapacityRps(0); 0 past
  // the end of the pattern.
  double operator()(double t) const {
    for (const Phase& p : phases_) {
      if (t >= p.start + p.length) continue;
      const double into = t - p.start;
      double load = p.from + (p.to - p.from) * into / p.length;
      if (p.burst_every > 0.0 &&
          std::fmod(into, p.burst_every) >= p.burst_every - p.burst_length) {
        load = p.burst_load;
      }
      uint64_t state =
          seed_ * 0x100000001B3ull +
          static_cast<uint64_t>(std::floor(t)) * 0x9E3779B97F4A7C15ull;
      return load * (1.0 + p.noise * (2.0 * NextUnit(state) - 1.0));
    }
    return 0.0;
  }

 private:
  struct Phase {
    double start, length, from, to, noise, burst_every, burst_length,
        burst_load;
  };
  uint64_t seed_;
  std::vector<Phase> phases_;
};

// The load offered at offset `t`, in multiples of CapacityRps(0).
inline double LoadAt(const LoadPattern& pattern, uint64_t seed,
                     absl::Duration t) {
  return LoadCurve(pattern, seed)(absl::ToDoubleSeconds(t));
}

// ---- The runs ---------------------------------------------------------------

enum class Mode {
  kShedding,      // the manager switches features and best-effort traffic off
  kFeaturesOnly,  // the manager switches features off; all traffic admitted
  kAlwaysOn,      // no manager: every feature always on
};

struct SimOptions {
  Mode mode = Mode::kShedding;
  uint64_t seed = 1;
  LoadPattern pattern = DefaultPattern();
  // The manager's config (unused in kAlwaysOn).
  degrade::DegradationConfig config;
  // How often the signals are sampled and the manager polled.
  absl::Duration sample_period = absl::Seconds(1);
};

// A request answered: when (offset from the start) and how long it took.
struct Answer {
  absl::Duration done;
  absl::Duration latency;
};

// One sample of the signals, taken every sample period, after the poll.
struct Sample {
  absl::Duration t;
  int level = 0;
  int features_on = 0;  // non-core features enabled (of kNumNonCore)
  double queue_length = 0.0;
  double gpu_util = 0.0;
  double avg_latency_ms = 0.0;
};

// A level change as an observer of the manager saw it, and when, as an
// offset from the start of the run.
struct Change : degrade::LevelChange {
  absl::Duration t;
};

struct RunResult {
  Mode mode = Mode::kShedding;
  absl::Duration length;                 // of the pattern
  std::vector<absl::Duration> arrivals;  // every request offered
  std::vector<absl::Duration> refused;   // refused at admission
  std::vector<Answer> answers;           // in completion order
  // Arrivals of the requests still in service or waiting when the pattern
  // ended, oldest first.
  std::vector<absl::Duration> unserved;
  std::vector<Sample> samples;
  std::vector<Change> changes;
  std::vector<std::string> log_lines;  // the manager's JSON log
};

namespace internal {

// A Poisson process whose rate follows the pattern, drawn by thinning one
// at the pattern's peak rate: each candidate takes two draws from the
// stream (the gap, the acceptance), then the caller draws what it attaches
// to every candidate, accepted or not, so that the stream, and with it every
// later arrival, depends only on the pattern and the seed.
class ThinnedPoisson {
 public:
  ThinnedPoisson(const LoadPattern& pattern, uint64_t seed, uint64_t salt)
      : load_(pattern, seed),
        state_(seed ^ salt),
        end_(absl::ToDoubleSeconds(pattern.length())),
        capacity_(CapacityRps(0)),
        peak_rps_(std::max(pattern.Peak() * capacity_, 1e-9)) {}

  // Advances to the next candidate; false once past the pattern's end, else
  // `*accepted` says whether the candidate is an arrival.
  bool NextCandidate(bool* accepted) {
    next_ += -std::log(1.0 - NextUnit(state_)) / peak_rps_;
    if (next_ >= end_) return false;
    *accepted = NextUnit(state_) * peak_rps_ < load_(next_) * capacity_;
    return true;
  }
  // The current candidate's offset, in seconds.
  double at() const { return next_; }
  // Uniform in [0, 1), from the same stream.
  double Unit() { return NextUnit(state_); }

 private:
  const LoadCurve load_;
  uint64_t state_;
  const double end_;
  const double capacity_;
  const double peak_rps_;
  double next_ = 0.0;  // seconds
};

// The arrival process of this simulation: a ThinnedPoisson, each arrival
// best-effort with probability kBestEffortShare.
class Arrivals {
 public:
  Arrivals(const LoadPattern& pattern, uint64_t seed)
      : poisson_(pattern, seed, 0x5DEECE66Dull) {}

  struct Arrival {
    // Offset from the start; InfiniteDuration() once the pattern has ended.
    absl::Duration at = absl::InfiniteDuration();
    bool best_effort = false;
  };

  // The next arrival. A plain value rather than an optional: g++ 12 cannot
  // prove an optional pair set on every path at -O2 (-Wmaybe-uninitialized).
  Arrival Next() {
    bool accept = false;
    while (poisson_.NextCandidate(&accept)) {
      const bool best_effort = poisson_.Unit() < kBestEffortShare;
      if (accept) return Arrival{absl::Seconds(poisson_.at()), best_effort};
    }
    return Arrival{};
  }

 private:
  ThinnedPoisson poisson_;
};

struct Request {
  absl::Duration arrival;
};

}  // namespace internal

// Runs the pattern once in `options.mode`. INVALID_ARGUMENT if the config is
// refused by the manager (in the modes that use one).
inline absl::StatusOr<RunResult> Run(const SimOptions& options) {
  RunResult r;
  r.mode = options.mode;
  r.length = options.pattern.length();

  degrade::FakeClock clock;
  const absl::Time t0 = clock.Now();
  absl::Duration now = absl::ZeroDuration();

  // Server state. Declared before the manager, whose sources read it.
  std::deque<internal::Request> queue;
  std::vector<internal::Request> batch;
  absl::Duration batch_start = absl::ZeroDuration();
  absl::Duration batch_end = absl::InfiniteDuration();
  // Slot-seconds the batches used since the last poll.
  double slot_seconds = 0.0;
  absl::Duration accrued_to = absl::ZeroDuration();
  absl::Duration last_poll = absl::ZeroDuration();
  degrade::LatencyTracker latency;

  const auto accrue = [&] {
    if (!batch.empty()) {
      const double fill = static_cast<double>(batch.size()) / kBatchSize;
      slot_seconds +=
          fill * absl::ToDoubleSeconds(now - std::max(batch_start, accrued_to));
    }
    accrued_to = now;
  };
  std::function<double()> queue_source = [&] {
    return static_cast<double>(queue.size());
  };
  std::function<double()> gpu_source = [&] {
    accrue();
    const double period = absl::ToDoubleSeconds(now - last_poll);
    const double util = period > 0.0 ? slot_seconds / period : 0.0;
    slot_seconds = 0.0;
    last_poll = now;
    return std::min(util, 1.0);
  };
  std::function<double()> latency_source = latency.Source();

  std::unique_ptr<degrade::DegradationManager> manager;
  std::array<degrade::FeatureGate, kNumNonCore> gates;  // default: always on
  degrade::FeatureGate best_effort;
  if (options.mode != Mode::kAlwaysOn) {
    degrade::ManagerOptions mo;
    mo.name = options.config.name;
    mo.clock = &clock;
    mo.log_sink = [&r](absl::string_view line) {
      r.log_lines.emplace_back(line);
    };
    auto created = degrade::DegradationManager::Create(options.config, mo);
    if (!created.ok()) return created.status();
    manager = std::move(*created);
    manager->AddObserver([&r, t0](const degrade::LevelChange& c) {
      Change change;
      static_cast<degrade::LevelChange&>(change) = c;
      change.t = c.time - t0;
      r.changes.push_back(std::move(change));
    });
    for (std::size_t i = 0; i < kNumNonCore; ++i) {
      gates[i] = manager->Feature(kNonCoreFeatures[i].name);
    }
    if (options.mode == Mode::kShedding) {
      best_effort = manager->Feature(kBestEffortTraffic);
    }
    manager->AddSource("queue_length", queue_source);
    manager->AddSource("gpu_util", gpu_source);
    manager->AddSource("avg_latency_ms", latency_source);
  }

  const auto features_on = [&gates] {
    return static_cast<int>(std::count_if(
        gates.begin(), gates.end(),
        [](const degrade::FeatureGate& g) { return g.enabled(); }));
  };

  const auto start_batch = [&] {
    const std::size_t n =
        std::min(queue.size(), static_cast<std::size_t>(kBatchSize));
    absl::Duration work = kBatchOverhead;
    for (std::size_t i = 0; i < n; ++i) {
      batch.push_back(queue.front());
      queue.pop_front();
      work += kCorePerRequest;
      for (std::size_t f = 0; f < kNumNonCore; ++f) {
        if (gates[f].enabled()) work += kNonCoreFeatures[f].cost;
      }
    }
    batch_start = now;
    batch_end = now + work;
  };

  const auto poll = [&] {
    Sample s;
    s.t = now;
    if (manager != nullptr) {
      // Every source here is valid for this config, or the sample says so.
      (void)manager->PollOnce();
      s.level = manager->level();
      s.queue_length = manager->signal_value("queue_length").value_or(-1.0);
      s.gpu_util = manager->signal_value("gpu_util").value_or(-1.0);
      s.avg_latency_ms = manager->signal_value("avg_latency_ms").value_or(-1.0);
    } else {
      s.queue_length = queue_source();
      s.gpu_util = gpu_source();
      s.avg_latency_ms = latency_source();
    }
    s.features_on = features_on();
    r.samples.push_back(s);
  };

  internal::Arrivals arrivals(options.pattern, options.seed);
  internal::Arrivals::Arrival next_arrival = arrivals.Next();
  absl::Duration next_poll = options.sample_period;

  while (true) {
    const absl::Duration arrival_at = next_arrival.at;
    const absl::Duration t = std::min({batch_end, arrival_at, next_poll});
    if (t >= r.length) break;
    now = t;
    clock.Set(t0 + now);
    if (t == batch_end) {
      accrue();
      for (const internal::Request& req : batch) {
        const absl::Duration l = now - req.arrival;
        latency.Record(l);
        r.answers.push_back({now, l});
      }
      batch.clear();
      batch_end = absl::InfiniteDuration();
    } else if (t == arrival_at) {
      r.arrivals.push_back(now);
      if (next_arrival.best_effort && !best_effort.enabled()) {
        r.refused.push_back(now);
      } else {
        queue.push_back({now});
      }
      next_arrival = arrivals.Next();
    } else {
      poll();
      next_poll += options.sample_period;
    }
    if (batch.empty() && !queue.empty()) start_batch();
  }

  for (const internal::Request& req : batch) r.unserved.push_back(req.arrival);
  for (const internal::Request& req : queue) r.unserved.push_back(req.arrival);
  manager.reset();  // its observer and sink write into r
  return r;
}

// ---- Reading a run ----------------------------------------------------------

// The q-quantile (nearest rank, q in [0, 1]) of `ms`, which it reorders; 0
// for an empty `ms`.
inline double Quantile(std::vector<double>& ms, double q) {
  if (ms.empty()) return 0.0;
  const std::size_t k =
      std::min(ms.size() - 1,
               static_cast<std::size_t>(q * static_cast<double>(ms.size())));
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(k),
                   ms.end());
  return ms[k];
}

// One time slice of a run.
struct Slice {
  absl::Duration start;
  absl::Duration end;
  double offered_rps = 0.0;
  double throughput_rps = 0.0;
  double refused_rps = 0.0;
  int level = 0;      // at the end of the slice
  int max_level = 0;  // highest during the slice
  int features_on = 0;
  double max_queue = 0.0;  // highest sampled queue length
  double p50_ms = 0.0;     // of the requests answered in the slice
  double p99_ms = 0.0;
  std::size_t answered = 0;
};

// The run cut into slices of `width` (the last one may be shorter).
inline std::vector<Slice> Slices(const RunResult& r, absl::Duration width) {
  std::vector<Slice> out;
  std::size_t a = 0, f = 0, d = 0, s = 0;
  int level = 0;
  int features = static_cast<int>(kNumNonCore);
  for (absl::Duration start = absl::ZeroDuration(); start < r.length;
       start += width) {
    Slice sl;
    sl.start = start;
    sl.end = std::min(start + width, r.length);
    const double secs = absl::ToDoubleSeconds(sl.end - sl.start);
    std::size_t offered = 0, refused = 0;
    for (; a < r.arrivals.size() && r.arrivals[a] < sl.end; ++a) ++offered;
    for (; f < r.refused.size() && r.refused[f] < sl.end; ++f) ++refused;
    std::vector<double> lat;
    for (; d < r.answers.size() && r.answers[d].done < sl.end; ++d) {
      lat.push_back(absl::ToDoubleMilliseconds(r.answers[d].latency));
    }
    sl.max_level = level;
    for (; s < r.samples.size() && r.samples[s].t < sl.end; ++s) {
      level = r.samples[s].level;
      features = r.samples[s].features_on;
      sl.max_level = std::max(sl.max_level, level);
      sl.max_queue = std::max(sl.max_queue, r.samples[s].queue_length);
    }
    sl.level = level;
    sl.features_on = features;
    sl.offered_rps = static_cast<double>(offered) / secs;
    sl.refused_rps = static_cast<double>(refused) / secs;
    sl.throughput_rps = static_cast<double>(lat.size()) / secs;
    sl.answered = lat.size();
    sl.p50_ms = Quantile(lat, 0.50);
    sl.p99_ms = Quantile(lat, 0.99);
    out.push_back(sl);
  }
  return out;
}

// A run's totals.
struct Summary {
  std::size_t offered = 0;
  std::size_t refused = 0;
  std::size_t answered = 0;
  std::size_t unserved = 0;  // still waiting when the pattern ended
  // Answered after more than the timeout, plus unserved ones that had
  // already waited longer than that.
  std::size_t past_timeout = 0;
  double p50_ms = 0.0;
  double p99_ms = 0.0;
  double max_ms = 0.0;
  std::size_t level_changes = 0;
};

inline Summary Summarize(const RunResult& r, absl::Duration timeout) {
  Summary s;
  s.offered = r.arrivals.size();
  s.refused = r.refused.size();
  s.answered = r.answers.size();
  s.unserved = r.unserved.size();
  for (const absl::Duration arrival : r.unserved) {
    if (r.length - arrival > timeout) ++s.past_timeout;
  }
  std::vector<double> lat;
  lat.reserve(r.answers.size());
  for (const Answer& a : r.answers) {
    lat.push_back(absl::ToDoubleMilliseconds(a.latency));
    if (a.latency > timeout) ++s.past_timeout;
  }
  s.p50_ms = Quantile(lat, 0.50);
  s.p99_ms = Quantile(lat, 0.99);
  s.max_ms = lat.empty() ? 0.0 : *std::max_element(lat.begin(), lat.end());
  s.level_changes = r.changes.size();
  return s;
}

}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_SIMULATION_HPP_
