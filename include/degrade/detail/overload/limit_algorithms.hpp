// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The limit algorithms of ConcurrencyLimiter (concurrency_limiter.hpp), as a
// pure state machine: one closed window of samples in, a new limit out. No
// atomics and no clock here, so every rule can be read (and tested) as
// arithmetic; the limiter owns the concurrency and calls Update() under its
// lock.
//
// What is the anchors' and what is ours:
//   * AIMD is Netflix's AIMDLimit as its WindowedLimit drives it: multiply
//     by `backoff` for a window with a drop, add one for a window without
//     while the limit is being used (per success when a window is one
//     sample).
//   * Gradient2 is Netflix's Gradient2Limit (smoothing, queue headroom,
//     rtt_tolerance, the long EMA and its 0.95 decay) except that the long
//     RTT only follows latency down. Netflix's long EMA catches up with a
//     sustained high latency, the gradient returns to 1 and the limit creeps
//     up without bound (concurrency-limits #134). Ours rises only through a
//     re-measurement at low concurrency, which is what makes a plateau flat.
//   * Vegas is Netflix's VegasLimit (queue estimate, alpha/beta/threshold in
//     log10 of the limit) except that its no-load latency follows a lower
//     latency down over long_window windows (a window of cache hits is not
//     a faster server), and a queue above beta is cut in one step
//     to beta above the concurrency that did not queue (at least log10 L),
//     so that a halved capacity is found within a few windows instead of
//     after dozens of log10 steps; the queue is estimated at the window's
//     in-flight count rather than at the limit.
//   * Both latency algorithms re-measure their no-load latency every
//     probe_multiplier x limit samples, jittered by a factor in [0.5, 1)
//     (Envoy #8337: synchronised re-measurements shed in bursts). By
//     default a re-measurement holds nothing back (as Netflix's Vegas
//     probe): the next full window of samples from permits taken after it
//     began (Envoy #11579) becomes the no-load latency, provided nothing
//     was refused meanwhile or it ran at no more than probe_limit in
//     flight; a window at the limit measured the queue, not the server, and
//     leaves the estimate as it was (that is what keeps a saturated plateau
//     from creeping up, concurrency-limits #134), and makes the next
//     re-measurement hold admissions as the opt-in does (a limiter stuck
//     below capacity is always saturated: it must not keep a wrong
//     estimate for good). Held re-measurements that only confirm the
//     estimate back off (x2, up to x16 the interval); the round trip of
//     samples after a hold changes nothing. Opt-in
//     (`hold_admissions`): Envoy's probe, admissions held to `probe_limit`
//     (separate from the floor: Envoy #46532) until that window, or until
//     10 x (1 + window_samples / probe_limit) x limit refusals without it
//     (the probe is then abandoned, the estimate kept), so a
//     re-measurement can not stall the limiter.
//   * `max_healthy_latency` (failsafe-go #127): a window whose average is
//     above it is treated as overload, so the limit keeps decreasing however
//     long the incident lasts.
//
// Not thread-safe: one instance, under its owner's lock.

#ifndef DEGRADE_DETAIL_OVERLOAD_LIMIT_ALGORITHMS_HPP_
#define DEGRADE_DETAIL_OVERLOAD_LIMIT_ALGORITHMS_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/time/time.h"
#include "degrade/detail/splitmix.hpp"
#include "degrade/limiter_settings.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {

// The validated settings the algorithms read (LimiterSettings, minus what
// only the limiter needs).
struct LimitParams {
  LimitAlgorithm algorithm = LimitAlgorithm::kGradient2;
  double min_limit = 1;
  double max_limit = 1;
  double initial_limit = 1;
  absl::Duration max_healthy_latency = absl::ZeroDuration();
  double aimd_backoff = 0.9;
  double gradient_smoothing = 0.2;
  double gradient_queue_size = 4;
  double rtt_tolerance = 1.5;
  double long_window = 600;
  double vegas_smoothing = 1.0;
  double probe_multiplier = 30;
  int probe_limit = 3;
  double window_samples = 10;
  bool hold_admissions = false;
  uint64_t seed = 1;
};

// One closed window: `samples` reports, of which `drops` were drops; the
// others' average latency in microseconds (plain doubles: this runs once
// per window on the reporting path); the most permits in flight when any
// of them was taken. `full`: it has its window_samples (a window cut short
// by a re-measurement beginning is not one). `saturated`: something was
// refused since the re-measurement began (its samples queued at the limit).
// `refusals`: admissions refused since the previous window closed (the
// offered load above the limit, which sizes a holding re-measurement's
// refusal budget).
struct LimitWindow {
  bool full = true;
  bool saturated = false;
  uint32_t samples = 0;
  uint32_t drops = 0;
  double average_latency_us = 0;
  int max_in_flight = 0;
  uint64_t refusals = 0;
};

class LimitCore {
 public:
  explicit LimitCore(const LimitParams& p)
      : p_(p),
        max_healthy_us_(absl::ToDoubleMicroseconds(p.max_healthy_latency)),
        limit_(p.initial_limit),
        rng_(p.seed) {
    ScheduleProbe();
  }

  // Applies one window. Returns true when a re-measurement begins with it:
  // the caller must then discard the samples of permits already out.
  bool Update(const LimitWindow& w) {
    if (p_.algorithm == LimitAlgorithm::kFixed || w.samples == 0) return false;
    const bool have_latency = w.samples > w.drops;
    // Whole microseconds are what the limiter records; below one, the
    // ratios below would divide by zero.
    const double rtt = std::max(w.average_latency_us, 1.0);
    bool overloaded = w.drops > 0;
    if (have_latency && max_healthy_us_ > 0 &&
        w.average_latency_us > max_healthy_us_) {
      overloaded = true;
    }
    const bool used = 2.0 * w.max_in_flight >= limit_;

    bool ended_probe = false;
    if (probing_) {
      // The window of the re-measurement: a partial one (cut short as it
      // began) does not end it.
      if (!w.full) return false;
      ended_probe = true;
      const bool held = holding();
      if (overloaded) {
        // Drops (or latency over max_healthy_latency) are overload, not a
        // no-load latency: the probe ends unmeasured and the window cuts
        // the limit below like any other.
        EndProbe();
      } else if (have_latency &&
                 (!w.saturated || w.max_in_flight <= p_.probe_limit)) {
        if (held) {
          // Held re-measurements cost traffic: while they only confirm
          // the estimate (within 10%), each waits twice as long as the
          // last, up to 16 intervals; a correction resets the wait.
          const double before = no_load_ > 0 ? no_load_ : rtt;
          const bool confirmed = std::abs(rtt / before - 1) <= 0.1;
          hold_backoff_ = confirmed ? std::min(16.0, 2 * hold_backoff_) : 1;
          // The samples of the refill after a hold were taken below the
          // limit and read as no queue: the next round trip's worth of
          // samples changes nothing.
          refill_samples_ = limit_;
        }
        long_rtt_ = no_load_ = rtt;
        starved_ = false;
      } else if (have_latency) {
        // Saturated at the limit: the window measured the queue. A limiter
        // stuck below capacity is always saturated, so the next
        // re-measurement holds admissions to probe_limit, whatever
        // hold_admissions says: saturation can not starve the estimate.
        starved_ = true;
      }
      if (probing_) {
        EndProbe();
        return false;
      }
    }
    if (w.full) {
      refusals_per_sample_ =
          static_cast<double>(w.refusals) / static_cast<double>(w.samples);
    }
    if (refill_samples_ > 0 && !overloaded) {
      refill_samples_ -= w.samples;
      samples_since_probe_ += w.samples;
      return false;
    }

    double next = limit_;
    switch (p_.algorithm) {
      case LimitAlgorithm::kFixed:
        break;
      case LimitAlgorithm::kAimd:
        if (overloaded) {
          next = limit_ * p_.aimd_backoff;
        } else if (used) {
          next = limit_ + 1;
        }
        break;
      case LimitAlgorithm::kGradient2:
        next = Gradient2(have_latency, rtt, overloaded, used);
        break;
      case LimitAlgorithm::kVegas:
        next = Vegas(have_latency, rtt, overloaded, used, w.max_in_flight);
        break;
    }
    limit_ = Clamp(next);

    if (p_.algorithm == LimitAlgorithm::kAimd || ended_probe) return false;
    samples_since_probe_ += w.samples;
    if (no_load_ > 0 && samples_since_probe_ >= probe_due_) {
      probing_ = true;
      last_probe_held_ = holding();
      return true;
    }
    return false;
  }

  // The algorithm's limit, in [min_limit, max_limit] and never below 1.
  double limit() const { return limit_; }
  int published_limit() const { return static_cast<int>(limit_); }
  // What admissions are held to: the limit, or probe_limit while a
  // re-measurement that holds admissions runs.
  int admission_limit() const {
    return holding() ? std::min(published_limit(), p_.probe_limit)
                     : published_limit();
  }
  bool probing() const { return probing_; }
  bool holding() const { return probing_ && (p_.hold_admissions || starved_); }
  // Whether the last re-measurement found the limiter saturated, so that
  // the next one holds admissions.
  bool starved() const { return starved_; }
  // How many refusals a holding re-measurement may cost before it is
  // abandoned. A probe that measures refuses about (1 + r) x limit while
  // in flight drains, then (1 + r) x limit x window_samples / probe_limit
  // while its window fills (r: refusals per completed call before it, the
  // offered load above the limit); this is five to ten times that, so only
  // a probe that can not measure (permits out for minutes) runs into it. A
  // budget sized by the limit alone ran out in ~30 ms when a stuck limit
  // of 4 faced 15 times its load, and the estimate stayed wrong for good.
  uint64_t probe_refusal_budget() const {
    const double rounds = HoldRounds();
    const double load = std::max(1.0, std::min(refusals_per_sample_, 1e6));
    return static_cast<uint64_t>(
        std::max(1.0, 10 * rounds * published_limit() * load));
  }
  // Ends a re-measurement without a measurement (the estimate is kept).
  void EndProbe() {
    probing_ = false;
    ScheduleProbe();
  }
  // The no-load latency estimate (Gradient2's long RTT, Vegas's rtt_noload);
  // zero before the first sample and for kFixed and kAimd.
  absl::Duration no_load_latency() const {
    const double us =
        p_.algorithm == LimitAlgorithm::kGradient2 ? long_rtt_ : no_load_;
    return absl::Microseconds(us);
  }

 private:
  double Gradient2(bool have_latency, double rtt, bool overloaded, bool used) {
    const double s = p_.gradient_smoothing;
    if (overloaded) {
      // The gradient's floor and no headroom: a steady 0.9x at smoothing
      // 0.2, down to the minimum however small the limit already is.
      return limit_ * (1 - s) + s * (limit_ * 0.5);
    }
    if (!have_latency) return limit_;
    if (long_rtt_ <= 0) long_rtt_ = no_load_ = rtt;
    long_rtt_ += (std::min(rtt, long_rtt_) - long_rtt_) / p_.long_window;
    if (long_rtt_ / rtt > 2) long_rtt_ *= 0.95;
    no_load_ = long_rtt_;
    if (!used) return limit_;  // app-limited: the latency says nothing
    const double gradient =
        std::clamp(p_.rtt_tolerance * long_rtt_ / rtt, 0.5, 1.0);
    const double target = limit_ * gradient + p_.gradient_queue_size;
    return limit_ * (1 - s) + s * target;
  }

  double Vegas(bool have_latency, double rtt, bool overloaded, bool used,
               int in_flight) {
    const double lg = std::max(1.0, std::log10(limit_));
    double target = limit_;
    if (overloaded) {
      target = limit_ - lg;
    } else if (have_latency) {
      // Follows a lower latency down as Gradient2's long RTT does, over
      // long_window windows, not in one step: a window of cache hits (20 us
      // among 10 ms calls) would otherwise become the no-load latency and
      // read every ordinary window as a queue. A server that really got
      // faster is found by the next re-measurement.
      if (no_load_ <= 0) {
        no_load_ = rtt;
      } else if (rtt < no_load_) {
        no_load_ += (rtt - no_load_) / p_.long_window;
      }
      // The queue at the concurrency the samples were taken at (not the
      // limit now: the window lags the limit by a round trip), so that a
      // second window of stale samples asks for the same cut, not another.
      const double n = std::max(1, in_flight);
      const double queue = std::ceil(n * (1 - no_load_ / rtt));
      const double alpha = 3 * lg;
      const double beta = 6 * lg;
      if (queue <= lg) {
        if (used) target = limit_ + beta;
      } else if (queue < alpha) {
        if (used) target = limit_ + lg;
      } else if (queue > beta) {
        // To beta above the concurrency that did not queue.
        target = std::min(limit_ - lg, n - queue + beta);
      }
    }
    if (target > limit_) {
      // No higher than beta above what was actually in flight: a window of
      // samples taken while the limit was refilling (after a
      // re-measurement) saw no queue, but it says nothing about the limit.
      target = std::max(limit_, std::min(target, in_flight + 6 * lg));
    }
    const double s = p_.vegas_smoothing;
    return limit_ * (1 - s) + s * target;
  }

  double Clamp(double v) const {
    if (!(v == v)) return limit_;  // NaN: keep what serves
    return std::max(1.0, std::clamp(v, p_.min_limit, p_.max_limit));
  }

  void ScheduleProbe() {
    samples_since_probe_ = 0;
    const double jitter = 0.5 + 0.5 * rng_.NextUnit();
    // A re-measurement that will hold admissions (hold_admissions, or
    // starved_, which is set before this is called) waits hold_backoff_
    // times as long.
    const double backoff = starved_ || p_.hold_admissions ? hold_backoff_ : 1;
    double due = p_.probe_multiplier * limit_ * backoff;
    if (last_probe_held_) {
      // A hold refuses what is above probe_limit for about HoldRounds()
      // round trips (see probe_refusal_budget). Spaced by probe_multiplier
      // alone, window_samples 512 with probe_limit 1 held admissions most
      // of the time. The next re-measurement after a hold waits at least
      // 2.5 x HoldRounds() round trips, growing with the backoff to 40 x
      // (20 at the jitter's low end): holds that keep confirming the
      // estimate refuse under 5% of the traffic whatever window_samples /
      // probe_limit is, while a correction still comes back soon. With the
      // default settings this floor is below probe_multiplier and changes
      // nothing.
      due = std::max(due, 2.5 * backoff * HoldRounds() * limit_);
    }
    probe_due_ = std::max(1.0, due * jitter);
  }
  double HoldRounds() const { return 1 + p_.window_samples / p_.probe_limit; }

  const LimitParams p_;
  const double max_healthy_us_;  // 0: off
  double limit_;
  double long_rtt_ = 0;  // microseconds
  double no_load_ = 0;   // microseconds
  bool probing_ = false;
  bool starved_ = false;
  double hold_backoff_ = 1;    // 1..16, see Update
  bool last_probe_held_ = false;  // the latest re-measurement held admissions
  double refill_samples_ = 0;  // samples after a hold that change nothing
  double refusals_per_sample_ = 0;
  double samples_since_probe_ = 0;
  double probe_due_ = 0;
  SplitMix64 rng_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_OVERLOAD_LIMIT_ALGORITHMS_HPP_
