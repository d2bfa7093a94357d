// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/recsys/ladder_sim.hpp
// -----------------------------------------------------------------------------
//
// The second part of the recsys_pipeline demo: the feature stage on a
// last-known-good ladder (degrade/ladder.hpp), driven by a Zipf-distributed
// user population through a feature-store outage on simulated time. Shared
// by the demo and its test, so the test checks the very code the demo
// prints.
//
// The model. Users are ranks 1..N of a Zipf(s) law (N = 10M, s = 0.9 in
// the demo). Each user has a segment (country x platform, 39 of them, of
// which the 3 of a new market have no segment default yet) and a true
// interest vector that drifts slowly:
//
//   truth(u, t) = center(segment) + sigma * (cos(w t + phi_u) a_u +
//                                            sin(w t + phi_u) b_u)
//   center(s)   = g + 0.8 r_s
//
// with g, r_s, a_u, b_u fixed pseudo-random vectors and w a quarter turn per
// hour. The feature store answers truth(u, now). The segment default is
// the segment's mean (its center), the global default the mean of the
// known segments' centers: what an offline job averaging stored features
// would produce. Every vector is a pure function of (seed, user, time), so
// nothing per user is stored but what the ladder's cache holds.
//
// Requests arrive at a steady simulated rate; the clock is a FakeClock and
// advances by one interval per request, so the run takes only CPU time.
// The feature store is up during `warm`, down (UNAVAILABLE) for `outage`,
// and up again for `recovery`.
//
// Thread safety: single-threaded, like the simulation it runs.

#ifndef DEGRADE_EXAMPLES_RECSYS_LADDER_SIM_HPP_
#define DEGRADE_EXAMPLES_RECSYS_LADDER_SIM_HPP_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_settings.hpp"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/default_features.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/ladder.hpp"
#include "degrade/ladder_stats.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"

namespace recsys {
namespace ladder_sim {

// ZipfSampler
//
// Ranks 1..n with P(k) proportional to k^-s, by rejection-inversion
// (Hörmann and Derflinger, 1996): invert the integral of x^-s over a
// continuous stand-in, round to the nearest rank k, and keep the draw when
// it fell in the part of k's cell whose area is exactly k^-s (x^-s is
// convex, so the cell [k-1/2, k+1/2] has at least that much). O(1) per
// sample with no table; about four draws in 10,000 are rejected at
// s = 0.9 over 10M ranks. Preconditions: n >= 1, s > 0 and s != 1.
class ZipfSampler {
 public:
  ZipfSampler(uint64_t n, double s)
      : n_(n),
        s_(s),
        // Rank 1's cell is cut to area 1 = 1^-s, so it is never rejected.
        lo_(H(1.5) - 1.0),
        hi_(H(static_cast<double>(n) + 0.5)) {}

  // One rank in [1, n] from `uniform` draws in [0, 1).
  template <typename Uniform>
  uint64_t Sample(Uniform&& uniform) const {
    for (;;) {
      const double u = lo_ + uniform() * (hi_ - lo_);
      const double x = HInverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > static_cast<double>(n_)) k = static_cast<double>(n_);
      if (u >= H(k + 0.5) - std::pow(k, -s_)) return static_cast<uint64_t>(k);
    }
  }

  // The exact probability of rank k, by summing the law (O(n): for tests).
  double Probability(uint64_t k) const {
    double z = 0;
    for (uint64_t i = 1; i <= n_; ++i)
      z += std::pow(static_cast<double>(i), -s_);
    return std::pow(static_cast<double>(k), -s_) / z;
  }

 private:
  // The integral of x^-s from 1 to x, and its inverse; written with
  // expm1/log1p so that they stay accurate as s approaches 1.
  double H(double x) const {
    return std::expm1((1 - s_) * std::log(x)) / (1 - s_);
  }
  double HInverse(double y) const {
    return std::exp(std::log1p(y * (1 - s_)) / (1 - s_));
  }

  uint64_t n_;
  double s_;
  double lo_;
  double hi_;
};

struct Config {
  uint64_t users = 10'000'000;
  double zipf_s = 0.9;
  // The ladder's cache: a tenth of the users.
  std::size_t cache_entries = 1'000'000;
  std::size_t cache_max_bytes = std::size_t{512} << 20;
  std::size_t dimension = 16;
  // Requests per simulated second (one instance of a fleet).
  double rate = 5000;
  absl::Duration warm = absl::Seconds(400);
  absl::Duration outage = absl::Seconds(60);
  absl::Duration recovery = absl::Seconds(40);
  absl::Duration breaker_timeout = absl::Seconds(5);
  absl::Duration ramp_period = absl::Seconds(20);
  absl::Duration stale_if_error = absl::Hours(1);
  uint64_t seed = 7;
};

// The rungs, in the order the ladder walks them, and a last row for a
// request no rung could serve.
inline constexpr std::size_t kRungs = 8;
inline constexpr std::array<absl::string_view, kRungs> kRungNames = {
    "fresh",     "stale-1m", "stale-10m", "stale-1h",
    "stale-old", "segment",  "global",    "failed"};
inline constexpr std::size_t kFailedRung = 7;

// The row of `kRungNames` a result belongs to.
template <typename T>
std::size_t RungOf(const degrade::StageResult<T>& r) {
  switch (r.tier()) {
    case degrade::FallbackTier::kStale1m:
      return 1;
    case degrade::FallbackTier::kStale10m:
      return 2;
    case degrade::FallbackTier::kStale1h:
      return 3;
    case degrade::FallbackTier::kStaleOld:
      return 4;
    case degrade::FallbackTier::kSegment:
      return 5;
    case degrade::FallbackTier::kGlobal:
      return 6;
    case degrade::FallbackTier::kUnspecified:
      break;
  }
  return r.is_default() ? 6 : 0;
}

struct RungTally {
  uint64_t requests = 0;
  // Sum of cos(served vector, the user's true vector now).
  double cosine_sum = 0;
  double mean_cosine() const {
    return requests == 0 ? 0.0 : cosine_sum / static_cast<double>(requests);
  }
};

struct PhaseReport {
  std::string name;
  absl::Duration length;
  uint64_t requests = 0;
  std::array<RungTally, kRungs> rungs{};
  // Requests served the user's own features (fresh or stale), and those
  // whose user is among the `cache_entries` most frequent: what an oracle
  // holding exactly the top users would have served.
  uint64_t own = 0;
  uint64_t oracle = 0;
  // Requests whose user had a value in the cache when they arrived (only
  // counted after the warm phase), and how those were served.
  uint64_t cached = 0;
  uint64_t cached_stale = 0;
  uint64_t cached_segment = 0;
  uint64_t cached_global = 0;
  // The ladder's counts over the phase (ages of the stale values served).
  degrade::LadderStats ladder;
  uint64_t store_calls = 0;  // that reached the store
};

struct Report {
  Config config;
  std::vector<PhaseReport> phases;  // warm, outage, recovery
  // Calls that reached the store, per simulated second from the start.
  std::vector<uint64_t> calls_per_second;
  // The store's call rate over the last 10 s before the outage.
  double pre_outage_rate = 0;
  // Per second of the recovery: calls / pre_outage_rate, and the ramp's
  // admitted share at the second's start (-1: not ramping, no cap).
  std::vector<double> recovery_ratio;
  std::vector<double> recovery_cap;
  // Per second of the recovery: of recovery_ratio, the calls the ramp had
  // no room for but that went anyway (a user with nothing cached), as a
  // share of pre_outage_rate; and the ramp's forced count at each second's
  // start.
  std::vector<double> recovery_forced_ratio;
  std::vector<uint64_t> recovery_forced_at;
  double max_recovery_ratio = 0;
  degrade::LastGoodCacheStats cache_after_warm;
  // At the end of the warm phase: how many of the `cache_entries` most
  // frequent users the cache holds, and their share of those users'
  // requests (the hot set by traffic).
  uint64_t hot_held = 0;
  double hot_traffic_held = 0;
  degrade::LastGoodCacheStats cache_at_end;
  degrade::RecoveryRampStats ramp;
};

// The true interest vectors, segments and defaults of the population.
class Population {
 public:
  static constexpr std::size_t kCountries = 13;  // the last: a new market
  static constexpr std::size_t kPlatforms = 3;
  static constexpr std::size_t kSegments = kCountries * kPlatforms;

  Population(std::size_t dimension, uint64_t seed)
      : dim_(dimension), seed_(seed), scale_(std::sqrt(3.0 / dimension)) {
    static constexpr std::array<absl::string_view, kCountries> kCountry = {
        "us", "br", "in", "de", "fr", "jp", "mx",
        "gb", "id", "tr", "kr", "es", "new"};
    static constexpr std::array<absl::string_view, kPlatforms> kPlatform = {
        "ios", "android", "web"};
    std::vector<float> g = Random(seed_ ^ 0x9e11);
    global_.assign(dim_, 0.0f);
    for (std::size_t c = 0; c < kCountries; ++c) {
      for (std::size_t p = 0; p < kPlatforms; ++p) {
        const std::size_t s = c * kPlatforms + p;
        names_[s] = absl::StrCat(kCountry[c], "-", kPlatform[p]);
        std::vector<float> r = Random(seed_ ^ (0x5e6 + 977 * s));
        centers_[s].resize(dim_);
        for (std::size_t i = 0; i < dim_; ++i) {
          centers_[s][i] = g[i] + 0.8f * r[i];
        }
        if (c + 1 < kCountries) {
          for (std::size_t i = 0; i < dim_; ++i) {
            global_[i] += centers_[s][i] / (kSegments - kPlatforms);
          }
        }
      }
    }
  }

  std::size_t SegmentOf(uint64_t user) const {
    const uint64_t h = Mix(user ^ seed_);
    return static_cast<std::size_t>((h >> 8) % kSegments);
  }
  const std::string& SegmentName(std::size_t s) const { return names_[s]; }
  bool HasSegmentDefault(std::size_t s) const {
    return s / kPlatforms + 1 < kCountries;
  }

  // The segment defaults (the known segments' means) and the global one.
  degrade::SegmentVectors SegmentDefaults() const {
    degrade::SegmentVectors out;
    for (std::size_t s = 0; s < kSegments; ++s) {
      if (HasSegmentDefault(s)) out[names_[s]] = centers_[s];
    }
    return out;
  }
  const std::vector<float>& GlobalDefault() const { return global_; }

  // truth(user, t), `seconds` after the simulation's start.
  void Truth(uint64_t user, double seconds, std::vector<float>* out) const {
    constexpr double kSigma = 1.0;
    constexpr double kOmega = 1.5707963267948966 / 3600;  // quarter turn/h
    const uint64_t h = Mix(user ^ seed_);
    const std::vector<float>& c = centers_[SegmentOf(user)];
    const double phase = 6.283185307179586 * Unit01(h ^ 0xf1);
    const double theta = kOmega * seconds + phase;
    const double ca = kSigma * std::cos(theta) * scale_;
    const double sb = kSigma * std::sin(theta) * scale_;
    out->resize(dim_);
    for (std::size_t i = 0; i < dim_; ++i) {
      const double a = Signed(h + 2 * i + 1);
      const double b = Signed(h + 2 * i + 2);
      (*out)[i] = static_cast<float>(c[i] + ca * a + sb * b);
    }
  }

  static double Cosine(const std::vector<float>& x,
                       const std::vector<float>& y) {
    double xy = 0, xx = 0, yy = 0;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      xy += static_cast<double>(x[i]) * y[i];
      xx += static_cast<double>(x[i]) * x[i];
      yy += static_cast<double>(y[i]) * y[i];
    }
    return xx == 0 || yy == 0 ? 0.0 : xy / std::sqrt(xx * yy);
  }

 private:
  static uint64_t Mix(uint64_t x) { return degrade::detail::SplitMix64Step(x); }
  static double Unit01(uint64_t x) {
    return static_cast<double>(Mix(x) >> 11) * 0x1.0p-53;
  }
  static double Signed(uint64_t x) { return 2 * Unit01(x) - 1; }
  // A vector of about unit length (entries uniform in +-sqrt(3/dim)).
  std::vector<float> Random(uint64_t seed) const {
    std::vector<float> v(dim_);
    for (std::size_t i = 0; i < dim_; ++i) {
      v[i] = static_cast<float>(scale_ * Signed(seed * 1315423911u + i));
    }
    return v;
  }

  std::size_t dim_;
  uint64_t seed_;
  double scale_;
  std::array<std::string, kSegments> names_;
  std::array<std::vector<float>, kSegments> centers_;
  std::vector<float> global_;
};

using Features = std::vector<float>;
using FeatureLadder = degrade::Ladder<uint64_t, Features>;

// Runs the simulation as `config` says. An error only when a component
// refuses its settings.
inline absl::StatusOr<Report> Run(const Config& config) {
  degrade::FakeClock clock;
  degrade::Telemetry* const quiet = degrade::NoTelemetry();
  Population people(config.dimension, config.seed);

  degrade::BreakerSettings b;
  b.name = "features";
  b.clock = &clock;
  b.metrics = quiet;
  b.timeout = config.breaker_timeout;
  b.ready_to_trip = degrade::trip::ConsecutiveFailures(3);
  degrade::CircuitBreaker<Features> breaker(b);

  degrade::LastGoodCacheSettings c;
  c.name = "user_features";
  c.max_entries = config.cache_entries;
  c.max_bytes = config.cache_max_bytes;
  c.stale_if_error = config.stale_if_error;
  c.max_age = std::max(config.stale_if_error, absl::Hours(24));
  c.clock = &clock;
  c.metrics = quiet;
  auto cache = degrade::LastGoodCache<uint64_t, Features>::Create(c);
  if (!cache.ok()) return cache.status();

  degrade::RecoveryRampSettings r;
  r.name = "features";
  r.period = config.ramp_period;
  r.clock = &clock;
  r.metrics = quiet;
  auto ramp = degrade::RecoveryRamp::Create(r);
  if (!ramp.ok()) return ramp.status();

  degrade::SegmentDefaultsOptions so;
  so.expected_dimension = config.dimension;
  so.name = "features";
  so.clock = &clock;
  so.metrics = quiet;
  auto segments = degrade::SegmentDefaults::Create(so);
  if (!segments.ok()) return segments.status();
  if (absl::Status s =
          (*segments)->Set(people.SegmentDefaults(), "segment means");
      !s.ok()) {
    return s;
  }
  degrade::DefaultFeaturesOptions go;
  go.expected_dimension = config.dimension;
  go.name = "features";
  go.clock = &clock;
  go.metrics = quiet;
  degrade::DefaultFeatures global(go);
  if (absl::Status s = global.Set(people.GlobalDefault(), "global mean");
      !s.ok()) {
    return s;
  }

  FeatureLadder::Rungs rungs;
  rungs.breaker = &breaker;
  rungs.cache = cache->get();
  rungs.ramp = ramp->get();
  // No coalescer: one client thread never has two misses for one key in
  // flight, so there would be nothing to share.
  rungs.segment = [&](absl::string_view s) { return (*segments)->Find(s); };
  rungs.global = [&] { return global.snapshot(); };
  degrade::LadderSettings ls;
  ls.name = "features";
  ls.clock = &clock;
  ls.metrics = quiet;
  auto ladder = FeatureLadder::Create(ls, rungs);
  if (!ladder.ok()) return ladder.status();

  Report report;
  report.config = config;
  const absl::Duration interval = absl::Seconds(1) / config.rate;
  const std::array<std::pair<const char*, absl::Duration>, 3> phases = {{
      {"warm", config.warm},
      {"feature store down", config.outage},
      {"recovery", config.recovery},
  }};
  const absl::Time t0 = clock.Now();
  const absl::Duration total = config.warm + config.outage + config.recovery;
  report.calls_per_second.assign(
      static_cast<std::size_t>(absl::ToInt64Seconds(total)) + 1, 0);

  ZipfSampler zipf(config.users, config.zipf_s);
  degrade::detail::SplitMix64 rng(config.seed);
  const auto uniform = [&] { return rng.NextUnit(); };
  Features truth;
  bool store_up = true;
  std::size_t second = 0;
  absl::Duration at = absl::ZeroDuration();
  degrade::LadderStats before = (*ladder)->stats();

  for (std::size_t p = 0; p < phases.size(); ++p) {
    PhaseReport ph;
    ph.name = phases[p].first;
    ph.length = phases[p].second;
    store_up = p != 1;
    const absl::Duration end = at + phases[p].second;
    if (p == 2) {
      // The recovery's start: the store's rate just before the outage.
      const std::size_t w =
          static_cast<std::size_t>(absl::ToInt64Seconds(config.warm));
      uint64_t sum = 0;
      const std::size_t n = std::min<std::size_t>(10, w);
      for (std::size_t s = w - n; s < w; ++s) sum += report.calls_per_second[s];
      report.pre_outage_rate = n == 0 ? 0.0 : static_cast<double>(sum) / n;
    }
    std::size_t last_second = SIZE_MAX;
    for (; at < end; at += interval) {
      clock.Set(t0 + at);
      second = static_cast<std::size_t>(absl::ToInt64Seconds(at));
      if (p == 2 && second != last_second) {
        last_second = second;
        const double allowed = (*ramp)->allowed_rate();
        report.recovery_forced_at.push_back((*ramp)->stats().forced);
        report.recovery_cap.push_back(std::isfinite(allowed) &&
                                              report.pre_outage_rate > 0
                                          ? allowed / report.pre_outage_rate
                                          : -1);
      }
      const uint64_t user = zipf.Sample(uniform);
      const std::size_t seg = people.SegmentOf(user);
      const double now_s = absl::ToDoubleSeconds(at);
      people.Truth(user, now_s, &truth);
      const bool cached = p > 0 && (*cache)->Contains(user);
      FeatureLadder::Result f = (*ladder)->Get(
          user, people.SegmentName(seg), [&]() -> absl::StatusOr<Features> {
            ++report.calls_per_second[second];
            ++ph.store_calls;
            if (!store_up) {
              return absl::UnavailableError("feature store is down");
            }
            return truth;
          });
      ++ph.requests;
      if (user <= config.cache_entries) ++ph.oracle;
      const std::size_t rung = f.ok() ? RungOf(*f) : kFailedRung;
      RungTally& t = ph.rungs[rung];
      ++t.requests;
      if (f.ok()) t.cosine_sum += Population::Cosine(*f->value(), truth);
      if (rung <= 4) ++ph.own;
      if (cached) {
        ++ph.cached;
        if (rung >= 1 && rung <= 4) ++ph.cached_stale;
        if (rung == 5) ++ph.cached_segment;
        if (rung == 6) ++ph.cached_global;
      }
    }
    // The ladder's counts over this phase.
    const degrade::LadderStats now = (*ladder)->stats();
    ph.ladder = now;
    ph.ladder.fresh -= before.fresh;
    for (std::size_t i = 0; i < now.stale.size(); ++i) {
      ph.ladder.stale[i] -= before.stale[i];
    }
    ph.ladder.segment -= before.segment;
    ph.ladder.global -= before.global;
    ph.ladder.failed -= before.failed;
    ph.ladder.store_calls -= before.store_calls;
    ph.ladder.ramp_refused -= before.ramp_refused;
    for (std::size_t i = 0; i < now.stale_age_buckets.size(); ++i) {
      ph.ladder.stale_age_buckets[i] -= before.stale_age_buckets[i];
    }
    ph.ladder.stale_age_sum_seconds -= before.stale_age_sum_seconds;
    before = now;
    if (p == 0) {
      report.cache_after_warm = (*cache)->stats();
      double held = 0, all = 0;
      const uint64_t top =
          std::min<uint64_t>(config.cache_entries, config.users);
      for (uint64_t k = 1; k <= top; ++k) {
        const double w = std::pow(static_cast<double>(k), -config.zipf_s);
        all += w;
        if ((*cache)->Contains(k)) {
          ++report.hot_held;
          held += w;
        }
      }
      report.hot_traffic_held = all > 0 ? held / all : 0;
    }
    report.phases.push_back(std::move(ph));
  }

  const std::size_t rec0 = static_cast<std::size_t>(
      absl::ToInt64Seconds(config.warm + config.outage));
  for (std::size_t s = rec0; s + 1 < report.calls_per_second.size(); ++s) {
    const double ratio = report.pre_outage_rate > 0
                             ? static_cast<double>(report.calls_per_second[s]) /
                                   report.pre_outage_rate
                             : 0.0;
    report.recovery_ratio.push_back(ratio);
    report.max_recovery_ratio = std::max(report.max_recovery_ratio, ratio);
  }
  for (std::size_t s = 0; s + 1 < report.recovery_forced_at.size(); ++s) {
    report.recovery_forced_ratio.push_back(
        report.pre_outage_rate > 0
            ? static_cast<double>(report.recovery_forced_at[s + 1] -
                                  report.recovery_forced_at[s]) /
                  report.pre_outage_rate
            : 0.0);
  }
  report.cache_at_end = (*cache)->stats();
  report.ramp = (*ramp)->stats();
  return report;
}

// The targets of the run; each failure is a line saying what was missed.
inline std::vector<std::string> MissedTargets(const Report& r) {
  std::vector<std::string> missed;
  if (r.phases.size() != 3) return {"the run has no three phases"};
  const PhaseReport& out = r.phases[1];
  if (out.cached == 0) {
    missed.push_back("no request of the outage came from a cached user");
  } else if (out.cached_stale != out.cached) {
    missed.push_back(absl::StrCat(
        out.cached - out.cached_stale, " of ", out.cached,
        " requests of cached users were not served stale in the outage"));
  }
  for (std::size_t p = 1; p < 3; ++p) {
    const PhaseReport& ph = r.phases[p];
    if (ph.cached_global + ph.cached_segment != 0) {
      missed.push_back(absl::StrCat(ph.name, ": ", ph.cached_global,
                                    " global and ", ph.cached_segment,
                                    " segment served to cached users"));
    }
  }
  for (const PhaseReport& ph : r.phases) {
    if (ph.rungs[kFailedRung].requests != 0) {
      missed.push_back(absl::StrCat(ph.name, ": ",
                                    ph.rungs[kFailedRung].requests,
                                    " requests got no features"));
    }
  }
  if (r.max_recovery_ratio > 1.2) {
    missed.push_back(
        absl::StrCat("the store's call rate reached ", r.max_recovery_ratio,
                     "x its pre-outage rate in the recovery (target <= 1.2x)"));
  }
  return missed;
}

}  // namespace ladder_sim
}  // namespace recsys

#endif  // DEGRADE_EXAMPLES_RECSYS_LADDER_SIM_HPP_
