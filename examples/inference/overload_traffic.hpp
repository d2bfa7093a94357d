// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/overload_traffic.hpp
// -----------------------------------------------------------------------------
//
// The traffic and the hardware of the overload simulation
// (overload_sim.hpp): four request classes over one seeded arrival process,
// each request with a user (and so a cohort) and a deadline, and a GPU whose
// speed can drop mid-run.
//
// The classes are Google's criticalities with the shares of a typical
// inference front end:
//
//   CRITICAL_PLUS   25%  paid API traffic
//   CRITICAL        40%  interactive users
//   SHEDDABLE_PLUS  20%  prefetches (the answer may be wanted later)
//   SHEDDABLE       15%  batch and background jobs
//
// The two sheddable classes together are the 35% best-effort share of
// simulation.hpp, so today's static config (level 3 refuses best-effort
// traffic) refuses the same requests it refuses there.
//
// Every request belongs to one of kUsers users; its cohort is
// degrade::CohortRotation's cohort of the user's key at the request's time,
// so one user's requests share a cohort, as they would at every hop of a
// fan-out.
//
// The arrivals depend only on the pattern and the seed, never on what the
// server does: every mode sees exactly the same requests.

#ifndef DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_TRAFFIC_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_TRAFFIC_HPP_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/request_class.hpp"
#include "inference/simulation.hpp"

namespace inference {
namespace overload {

using degrade::Criticality;
using degrade::kNumCriticalities;

// ---- The classes ------------------------------------------------------------

struct TrafficClass {
  Criticality criticality;
  double share;
  absl::string_view what;
};

inline constexpr std::array<TrafficClass, kNumCriticalities> kClasses = {{
    {Criticality::kCriticalPlus, 0.25, "paid"},
    {Criticality::kCritical, 0.40, "interactive"},
    {Criticality::kSheddablePlus, 0.20, "prefetch"},
    {Criticality::kSheddable, 0.15, "batch"},
}};

inline constexpr bool IsSheddable(Criticality c) {
  return c == Criticality::kSheddablePlus || c == Criticality::kSheddable;
}

// Users behind the traffic; enough that each of the 128 cohorts holds many.
inline constexpr int kUsers = 20000;
// Every request must be answered within this of its arrival.
inline constexpr absl::Duration kDeadline = absl::Seconds(1);

// ---- The hardware -----------------------------------------------------------

// The GPU runs at `speed` (1 = simulation.hpp's GPU, 0.5 = half its
// throughput: every batch takes twice as long) from `from` on.
struct SpeedChange {
  absl::Duration from;
  double speed = 1.0;
};

// The speed at offset `t` of a schedule sorted by `from`; 1 before the first.
inline double SpeedAt(const std::vector<SpeedChange>& schedule,
                      absl::Duration t) {
  double speed = 1.0;
  for (const SpeedChange& c : schedule) {
    if (c.from > t) break;
    speed = c.speed;
  }
  return speed;
}

namespace internal {

// The GPU and the signals simulation.hpp's manager reads.
class Gpu {
 public:
  bool busy() const { return !batch_.empty(); }
  absl::Duration start() const { return start_; }
  absl::Duration end() const { return end_; }
  const std::vector<std::size_t>& batch() const { return batch_; }

  // Starts a batch at `now`; returns its duration.
  absl::Duration Start(std::vector<std::size_t> ids, absl::Duration now,
                       absl::Duration non_core, double speed) {
    batch_ = std::move(ids);
    const absl::Duration d =
        BatchTime(static_cast<int>(batch_.size()), non_core) / speed;
    start_ = now;
    end_ = now + d;
    return d;
  }
  void Finish(absl::Duration now) {
    Accrue(now);
    batch_.clear();
    end_ = absl::InfiniteDuration();
  }

  // The share of batch slots busy since the last call (gpu_util).
  double Utilisation(absl::Duration now) {
    Accrue(now);
    const double period = absl::ToDoubleSeconds(now - last_poll_);
    const double util = period > 0.0 ? slot_seconds_ / period : 0.0;
    slot_seconds_ = 0.0;
    last_poll_ = now;
    return std::min(util, 1.0);
  }

 private:
  void Accrue(absl::Duration now) {
    if (!batch_.empty()) {
      slot_seconds_ += static_cast<double>(batch_.size()) / kBatchSize *
                       absl::ToDoubleSeconds(now - std::max(start_, accrued_));
    }
    accrued_ = now;
  }

  std::vector<std::size_t> batch_;
  absl::Duration start_ = absl::ZeroDuration();
  absl::Duration end_ = absl::InfiniteDuration();
  absl::Duration accrued_ = absl::ZeroDuration();
  absl::Duration last_poll_ = absl::ZeroDuration();
  double slot_seconds_ = 0.0;
};

}  // namespace internal

// ---- The scenario -----------------------------------------------------------

// The proof's one run: a short normal phase, a ramp to 3x the fully
// featured capacity, a 10-minute plateau at 3x (the steady state and the
// limit's drift are read there), then, still at 3x, the GPU loses half its
// throughput for two minutes and gets it back.
struct Scenario {
  LoadPattern pattern;
  std::vector<SpeedChange> speed;
  // Offsets the report and the test read.
  absl::Duration plateau_start, plateau_end;  // the 10-minute plateau
  absl::Duration halved_start, halved_end;    // the GPU at half speed
};

inline Scenario DefaultScenario() {
  Scenario s;
  s.pattern.phases = {
      {"normal", absl::Seconds(30), 0.5, 0.5, 0.05},
      {"ramp up", absl::Seconds(30), 0.5, 3.0, 0.05},
      {"plateau 3x", absl::Seconds(600), 3.0, 3.0, 0.10},
      {"GPU at half speed", absl::Seconds(120), 3.0, 3.0, 0.10},
      {"GPU restored", absl::Seconds(60), 3.0, 3.0, 0.10},
  };
  s.plateau_start = absl::Seconds(60);
  s.plateau_end = absl::Seconds(660);
  s.halved_start = absl::Seconds(660);
  s.halved_end = absl::Seconds(780);
  s.speed = {{s.halved_start, 0.5}, {s.halved_end, 1.0}};
  return s;
}

// ---- The arrivals -----------------------------------------------------------

struct Arrival {
  // Offset from the start; InfiniteDuration() once the pattern has ended.
  absl::Duration at = absl::InfiniteDuration();
  uint8_t klass = 0;  // index into kClasses (== the criticality)
  int user = 0;       // in [0, kUsers)
};

// simulation.hpp's thinned Poisson process, each arrival with a class and
// a user drawn from the same seeded stream.
class ClassedArrivals {
 public:
  ClassedArrivals(const LoadPattern& pattern, uint64_t seed)
      : poisson_(pattern, seed, 0xC0FFEE123ull) {}

  Arrival Next() {
    bool accept = false;
    while (poisson_.NextCandidate(&accept)) {
      const double u = poisson_.Unit();
      const int user = static_cast<int>(poisson_.Unit() * kUsers);
      if (!accept) continue;
      Arrival a;
      a.at = absl::Seconds(poisson_.at());
      a.user = std::min(user, kUsers - 1);
      a.klass = static_cast<uint8_t>(kClasses.size() - 1);
      double cumulative = 0.0;
      for (std::size_t c = 0; c < kClasses.size(); ++c) {
        cumulative += kClasses[c].share;
        if (u < cumulative) {
          a.klass = static_cast<uint8_t>(c);
          break;
        }
      }
      return a;
    }
    return Arrival{};
  }

 private:
  inference::internal::ThinnedPoisson poisson_;
};

// The users' keys, built once: a cohort lookup per request then allocates
// nothing.
inline std::vector<std::string> UserKeys() {
  std::vector<std::string> keys;
  keys.reserve(kUsers);
  for (int u = 0; u < kUsers; ++u) keys.push_back(absl::StrCat("user-", u));
  return keys;
}

}  // namespace overload
}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_TRAFFIC_HPP_
