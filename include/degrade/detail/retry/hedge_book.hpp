// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a HedgePolicy keeps about its route between calls: the latency
// histogram the delay is read from, the sliding window of calls and hedges
// the extra-load cap is checked against, and the totals it reports. Kept
// apart from hedge.hpp so that the race (hedge_race.hpp) can use it
// without the public header.
//
// The cap is exact against other hedges: TryHedge() is the window's
// conditional add (tick_window.hpp), so concurrent calls can never
// together overshoot max_extra_load of the calls counted so far, even
// across a tick boundary; no lock is taken. Calls and refunds are plain
// adds. The window is ten ticks of window/10: a call or hedge counts for
// between 0.9 and 1 window.
//
// The quantile delay is read a few times per window, not per call: the
// cached value is refreshed when it is older than a fiftieth of the window
// (200 ms of the default 10 s), by whichever call first sees it stale.
//
// Thread safety: every member may be called from any thread.

#ifndef DEGRADE_DETAIL_RETRY_HEDGE_BOOK_HPP_
#define DEGRADE_DETAIL_RETRY_HEDGE_BOOK_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/retry/latency_histogram.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/tick_window.hpp"
#include "degrade/hedge_settings.hpp"
#include "degrade/hedge_stats.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class HedgeBook {
 public:
  // REQUIRES: ValidateHedgeSettings(s) is OK.
  explicit HedgeBook(HedgeSettings s)
      : settings_(std::move(s)),
        clock_(settings_.clock != nullptr ? settings_.clock
                                          : &RealClock::Instance()),
        load_(settings_.window, clock_->Now()),
        latencies_(settings_.window, clock_->Now()),
        refresh_(settings_.window / 50) {}

  const HedgeSettings& settings() const { return settings_; }
  const Clock& clock() const { return *clock_; }

  // A call starts at `now`: counted, and given the delay in force.
  absl::Duration StartCall(absl::Time now) {
    load_.Add(kCalls, load_.TickOf(now));
    calls_.fetch_add(1, std::memory_order_relaxed);
    return Delay(now);
  }

  // The delay in force at `now`: the fixed one, or the cached quantile
  // (InfiniteDuration while fewer than min_samples latencies are known).
  absl::Duration Delay(absl::Time now) {
    if (settings_.delay.has_value()) return *settings_.delay;
    const int64_t at = cached_at_.load(std::memory_order_acquire);
    const int64_t now_ns = absl::ToUnixNanos(now);
    if (at == kNever || now_ns < at ||
        ElapsedNanosSince(now_ns, at) >= absl::ToInt64Nanoseconds(refresh_)) {
      Refresh(now);
    }
    const int64_t d = cached_delay_.load(std::memory_order_relaxed);
    return d == kNever ? absl::InfiniteDuration() : absl::Nanoseconds(d);
  }

  // Whether one more hedge fits the cap at `now`; if so it is counted.
  bool TryHedge(absl::Time now) {
    const double cap = settings_.max_extra_load;
    const bool fits = load_.AddIf(
        kHedges, load_.TickOf(now), [cap](const Window::Sums& sums) {
          return static_cast<double>(Used(sums) + 1) <=
                 cap * static_cast<double>(sums[kCalls]);
        });
    if (!fits) over_budget_.fetch_add(1, std::memory_order_relaxed);
    return fits;
  }

  // A hedge TryHedge() counted was not sent after all: it gives its share
  // of the cap back.
  void Refund(absl::Time now) { load_.Add(kRefunds, load_.TickOf(now)); }
  // A hedge the breaker or the executor refused.
  void Refused() { refused_.fetch_add(1, std::memory_order_relaxed); }

  void RecordLatency(absl::Time now, absl::Duration latency) {
    latencies_.Record(now, latency);
  }

  void Sent() { sent_.fetch_add(1, std::memory_order_relaxed); }
  void Won() { won_.fetch_add(1, std::memory_order_relaxed); }
  void Cancelled(uint64_t n) {
    cancelled_.fetch_add(n, std::memory_order_relaxed);
  }

  HedgeStats stats() {
    const absl::Time now = clock_->Now();
    HedgeStats st;
    st.calls = calls_.load(std::memory_order_relaxed);
    st.hedges_sent = sent_.load(std::memory_order_relaxed);
    st.hedges_won = won_.load(std::memory_order_relaxed);
    st.attempts_cancelled = cancelled_.load(std::memory_order_relaxed);
    st.hedges_over_budget = over_budget_.load(std::memory_order_relaxed);
    st.hedges_refused = refused_.load(std::memory_order_relaxed);
    st.delay = Delay(now);
    const auto sums = load_.Sum(load_.TickOf(now));
    const uint64_t used = Used(sums);
    st.extra_load = sums[kCalls] == 0 ? 0.0
                                      : static_cast<double>(used) /
                                            static_cast<double>(sums[kCalls]);
    return st;
  }

 private:
  static constexpr std::size_t kCalls = 0;
  static constexpr std::size_t kHedges = 1;
  static constexpr std::size_t kRefunds = 2;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();

  using Window = TickWindow<3>;  // calls, hedges, refunds

  // Hedges counted and not refunded.
  static uint64_t Used(const Window::Sums& sums) {
    return sums[kHedges] > sums[kRefunds] ? sums[kHedges] - sums[kRefunds] : 0;
  }

  // One thread refreshes; the others use the value it is replacing.
  void Refresh(absl::Time now) {
    if (!refresh_mu_.TryLock()) return;
    const std::optional<absl::Duration> q =
        latencies_.Quantile(now, settings_.delay_quantile,
                            static_cast<uint64_t>(settings_.min_samples));
    // A quantile of zero (every latency under a microsecond) still waits a
    // nanosecond: a zero delay would send every hedge at once.
    cached_delay_.store(q.has_value()
                            ? std::max<int64_t>(absl::ToInt64Nanoseconds(*q), 1)
                            : kNever,
                        std::memory_order_relaxed);
    cached_at_.store(absl::ToUnixNanos(now), std::memory_order_release);
    refresh_mu_.Unlock();
  }

  const HedgeSettings settings_;
  const Clock* const clock_;
  Window load_;
  LatencyHistogram latencies_;
  const absl::Duration refresh_;
  Mutex refresh_mu_;  // one refresher at a time
  std::atomic<int64_t> cached_delay_{kNever};
  std::atomic<int64_t> cached_at_{kNever};
  std::atomic<uint64_t> calls_{0}, sent_{0}, won_{0}, cancelled_{0},
      over_budget_{0}, refused_{0};
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_RETRY_HEDGE_BOOK_HPP_
