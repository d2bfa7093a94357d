// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: retry_budget.hpp
// -----------------------------------------------------------------------------
//
// A retry budget caps what retries may add to a downstream's load, so that
// a brownout stays a brownout: three layers retrying three times each send
// up to 27x the load to the bottom exactly when it can least take it. The
// shape is Finagle's RetryBudget: over a sliding window of `ttl` (10 s),
// retries may add at most `percent_can_retry` (20%) of the requests made,
// plus a floor of `min_retries_per_sec` (10) x ttl retries, so that a
// quiet client can still retry its rare failure. When the budget is empty
// the retry is not made and the caller returns the error it had (a
// Retrier counts it under "budget_exhausted"). One budget per downstream,
// shared by every caller of it, Retriers and hedges alike.
//
// "Sliding" (detail/retry/budget_ledger.hpp): the window is the current tick of
// ttl/10 and the nine before it, so the allowance never resets in one
// step. A request counts from the moment it is deposited and leaves the
// window with its tick, ten ticks on, or earlier when its thread is busy
// (after 64 requests in a tick a thread reads the clock only every 64th
// request, so up to 63 of its requests may be dated by an older mark and
// leave up to a window early); never late, so the error is always towards
// fewer retries. A clock set back (a FakeClock)
// holds the window where it is until the clock passes it again, so no
// retry already granted is forgotten.
//
//   degrade::RetryBudgetSettings s;
//   s.name = "recall";
//   auto budget = degrade::RetryBudget::Create(s).value();
//   budget->Deposit();                    // every request, first attempts
//   if (failed && budget->TryWithdraw()) {
//     // retry it
//   }
//   // Or give it to a RetrySettings (retry.hpp), which does both.
//
// Cost: Deposit() is a plain add to a counter line only the calling thread
// writes (no clock read on most calls, no read-modify-write); a
// TryWithdraw() that is granted reads the coarse clock and makes one
// compare-and-swap. A withdrawal the window's allowance refuses first sums
// every thread's deposits (detail::ShardArraySize() lines, 10 on 2 cores,
// at most 80), so that requests made this instant count. Neither ever
// waits or allocates.
//
// Thread safety: `RetryBudget` is thread-safe.

#ifndef DEGRADE_RETRY_BUDGET_HPP_
#define DEGRADE_RETRY_BUDGET_HPP_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/retry/budget_ledger.hpp"
#include "degrade/detail/setting_error.hpp"
#include "degrade/retry_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// RetryBudgetSettings
//
// Defaults are Finagle's. Validate with ValidateRetryBudgetSettings();
// RetryBudget::Create() refuses what it refuses.
struct RetryBudgetSettings {
  // Names the budget in errors and metrics. Non-empty.
  std::string name = "retry_budget";
  // Retries may add this fraction of the window's requests. Finite, in
  // [0, 1]: 0 leaves only the floor, 1 allows one retry per request.
  double percent_can_retry = 0.2;
  // The floor: this many retries per second of ttl are always allowed,
  // whatever the requests. In [0, 1000000].
  int min_retries_per_sec = 10;
  // The sliding window, in [1 s, 60 s] (Finagle's bounds).
  absl::Duration ttl = absl::Seconds(10);
  // nullptr means RealClock::Instance(). REQUIRES: outlives the budget.
  const Clock* clock = nullptr;
  // Where the budget reports (a RetryBudgetView through
  // Telemetry::AttachRetryBudget). nullptr means DefaultTelemetry();
  // NoTelemetry() means none. REQUIRES: outlives the budget.
  Telemetry* metrics = nullptr;
};

// ValidateRetryBudgetSettings(s)
//
// OK, or INVALID_ARGUMENT naming the budget, the setting and its value.
// Pure; thread-safe.
inline absl::Status ValidateRetryBudgetSettings(const RetryBudgetSettings& s);

// RetryBudget
//
// Thread-safe; Deposit() and TryWithdraw() never wait, and allocate
// nothing after a thread's first call (the one mutex, which guards the
// tick marks, is only ever try-locked, by them and by stats() and
// balance(), which take a due mark too). A withdrawal made while another
// thread is taking a mark is refused: normally well under a microsecond
// per tick, longer if the marking thread is descheduled.
// Neither copyable nor movable (the telemetry holds its address).
class RetryBudget final {
 public:
  static absl::StatusOr<std::unique_ptr<RetryBudget>> Create(
      RetryBudgetSettings settings);

  RetryBudget(const RetryBudget&) = delete;
  RetryBudget& operator=(const RetryBudget&) = delete;
  ~RetryBudget() { telemetry_.reset(); }  // before anything its view reads

  // Counts one request (a first attempt; a retry is a withdrawal, not a
  // deposit).
  DEGRADE_ALWAYS_INLINE void Deposit() { ledger_.Deposit(); }

  // Takes one retry from the budget if it has one: true when the caller may
  // retry, false (counted as refused) when it must return the error it
  // has. Never overdraws, even when threads race for the last retry.
  bool TryWithdraw() { return ledger_.TryWithdraw(); }

  // Whether TryWithdraw() would grant a retry now, without taking one:
  // for a caller that must wait before it sends its retry (a backoff) and
  // withdraws only then, so that a retry it ends up not sending spends
  // nothing. False is counted as refused. Advisory under concurrency:
  // another thread may take the last retry before this caller withdraws,
  // and then the withdrawal is refused, so nothing is ever overspent.
  bool HasRoom() {
    if (ledger_.Read().balance >= 1.0) return true;
    ledger_.CountRefused();
    return false;
  }

  // Retries TryWithdraw() would grant now (fractional: 0.2 per request).
  double balance() const { return ledger_.Read().balance; }

  // The window and the totals. Thread-safe; a value the budget has held.
  RetryBudgetStats stats() const;

  const std::string& name() const { return name_; }

 private:
  RetryBudget(const RetryBudgetSettings& s, const Clock* clock);

  const std::string name_;
  // Mutable: reading the window may take the mark of a tick just begun.
  mutable detail::BudgetLedger ledger_;
  const detail::OwnerView<RetryBudget, RetryBudgetStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation details ----

inline absl::Status ValidateRetryBudgetSettings(const RetryBudgetSettings& s) {
  const detail::SettingOwner who("retry budget", s.name);
  if (s.name.empty()) return who.Invalid("name", "\"\"", "must not be empty");
  if (!(std::isfinite(s.percent_can_retry) && s.percent_can_retry >= 0.0 &&
        s.percent_can_retry <= 1.0)) {
    return who.Invalid("percent_can_retry", s.percent_can_retry,
                       "must be a finite number in [0, 1]");
  }
  if (s.min_retries_per_sec < 0 || s.min_retries_per_sec > 1'000'000) {
    return who.Invalid("min_retries_per_sec", s.min_retries_per_sec,
                       "must be in [0, 1000000]");
  }
  if (s.ttl < absl::Seconds(1) || s.ttl > absl::Seconds(60)) {
    return who.Invalid("ttl", absl::FormatDuration(s.ttl),
                       "must be in [1s, 60s]");
  }
  return absl::OkStatus();
}

inline absl::StatusOr<std::unique_ptr<RetryBudget>> RetryBudget::Create(
    RetryBudgetSettings s) {
  if (absl::Status v = ValidateRetryBudgetSettings(s); !v.ok()) return v;
  const Clock* clock = s.clock != nullptr ? s.clock : &RealClock::Instance();
  return std::unique_ptr<RetryBudget>(new RetryBudget(s, clock));
}

inline RetryBudget::RetryBudget(const RetryBudgetSettings& s,
                                const Clock* clock)
    : name_(detail::Printable(s.name)),
      ledger_(s.percent_can_retry,
              static_cast<double>(s.min_retries_per_sec) *
                  absl::ToDoubleSeconds(s.ttl),
              s.ttl, clock) {
  // Last: the view must be complete before a telemetry may read it.
  telemetry_ = detail::Attach(s.metrics, &Telemetry::AttachRetryBudget, view_);
}

inline RetryBudgetStats RetryBudget::stats() const {
  const detail::BudgetLedger::Window w = ledger_.Read();
  RetryBudgetStats st;
  st.window_requests = w.requests;
  st.window_retries = w.retries;
  st.balance = w.balance;
  st.granted = ledger_.granted();
  st.refused = ledger_.refused();
  return st;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_RETRY_BUDGET_HPP_
