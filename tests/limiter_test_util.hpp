// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What the concurrency limiter's tests share (concurrency_limiter_test.cpp,
// attack_reliability2_test.cpp): settings with the mandatory bounds, a
// limiter made from them, and an open-loop load on a FakeClock.

#ifndef DEGRADE_TESTS_LIMITER_TEST_UTIL_HPP_
#define DEGRADE_TESTS_LIMITER_TEST_UTIL_HPP_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/telemetry.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace limiter_test {

inline LimiterSettings Base(LimitAlgorithm a, int min, int initial, int max) {
  LimiterSettings s;
  s.algorithm = a;
  s.min_limit = min;
  s.initial_limit = initial;
  s.max_limit = max;
  s.metrics = NoTelemetry();
  return s;
}

inline std::unique_ptr<ConcurrencyLimiter> Make(const LimiterSettings& s) {
  absl::StatusOr<std::unique_ptr<ConcurrencyLimiter>> l =
      ConcurrencyLimiter::Create(s);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *std::move(l) : nullptr;
}

// An open-loop load on a FakeClock: requests arrive every 1/qps; each one
// admitted is served with latency(in flight when it was admitted) and
// reports Success() then, or Ignore() for every cancel_every-th (a client
// cancelling when it would have been answered). `observe` sees the limit
// after every report.
class Simulation {
 public:
  Simulation(ConcurrencyLimiter* limiter, FakeClock* clock, double qps)
      : limiter_(limiter),
        clock_(clock),
        gap_(absl::Seconds(1) / qps),
        next_arrival_(clock->Now()) {}

  std::function<absl::Duration(int)> latency;
  // (when reported, when acquired, the limit after the report)
  std::function<void(absl::Time, absl::Time, int)> observe =
      [](absl::Time, absl::Time, int) {};
  int cancel_every = 0;  // 0: none

  void Run(absl::Duration d) {
    const absl::Time end = clock_->Now() + d;
    while (next_arrival_ < end) {
      while (!pending_.empty() && pending_.begin()->first <= next_arrival_) {
        auto it = pending_.begin();
        clock_->Set(it->first);
        if (cancel_every > 0 && (reports_ + 1) % cancel_every == 0) {
          it->second.permit.Ignore();
        } else {
          it->second.permit.Success(it->second.latency);
          served_latency_ += it->second.latency;
          ++served_;
        }
        const absl::Time acquired = it->second.acquired;
        pending_.erase(it);
        ++reports_;
        const int limit = limiter_->limit();
        max_limit_ = std::max(max_limit_, limit);
        observe(clock_->Now(), acquired, limit);
      }
      clock_->Set(next_arrival_);
      ++arrivals_;
      std::optional<LimiterPermit> p = limiter_->TryAcquire();
      if (p.has_value()) {
        const absl::Duration lat = latency(limiter_->in_flight());
        pending_.emplace(clock_->Now() + lat,
                         Pending{std::move(*p), lat, clock_->Now()});
      } else {
        ++refused_;
      }
      next_arrival_ += gap_;
    }
  }

  uint64_t reports() const { return reports_; }

  // What happened since the last Take() (or TakeRefusedFraction()).
  struct Window {
    double refused = 0;  // the fraction of arrivals refused
    uint64_t served = 0;
    absl::Duration mean_latency;
    int max_limit = 0;
  };
  Window Take() {
    Window w;
    w.refused = arrivals_ == 0 ? 0.0
                               : static_cast<double>(refused_) /
                                     static_cast<double>(arrivals_);
    w.mean_latency = served_ == 0
                         ? absl::ZeroDuration()
                         : served_latency_ / static_cast<double>(served_);
    w.max_limit = max_limit_;
    w.served = served_;
    arrivals_ = refused_ = served_ = 0;
    served_latency_ = absl::ZeroDuration();
    max_limit_ = 0;
    return w;
  }
  double TakeRefusedFraction() { return Take().refused; }

 private:
  struct Pending {
    LimiterPermit permit;
    absl::Duration latency;
    absl::Time acquired;
  };
  ConcurrencyLimiter* const limiter_;
  FakeClock* const clock_;
  const absl::Duration gap_;
  absl::Time next_arrival_;
  std::multimap<absl::Time, Pending> pending_;
  uint64_t reports_ = 0;
  uint64_t arrivals_ = 0;
  uint64_t refused_ = 0;
  uint64_t served_ = 0;
  absl::Duration served_latency_;
  int max_limit_ = 0;
};

}  // namespace limiter_test
}  // namespace degrade

#endif  // DEGRADE_TESTS_LIMITER_TEST_UTIL_HPP_
