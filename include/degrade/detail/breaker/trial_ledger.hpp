// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The trials of one half-open generation of a circuit breaker: how many
// were admitted and how each ended, which decides (JudgeTrials) whether the
// breaker closes (max_requests successes, or rates below the thresholds
// once enough have reported), reopens (the first failure, or rates
// reached) or waits. With a `half_open_max_wait` it also keeps when each outstanding
// trial was admitted: the wait is per trial, from its own admission, so the
// deadline is the oldest outstanding trial's admission plus the wait, and a
// trial admitted late is never cut short by an earlier one's clock.
//
//   TrialLedger t(/*wait_nanos=*/50'000'000);
//   t.Admit(now);                 // trial A
//   t.Admit(now + 30ms);          // trial B
//   t.Succeed(now);               // A reports: B's clock decides now
//   t.deadline() == now + 80ms
//
// Thread-compatible: the breaker keeps it under its lock. Not a public API.

#ifndef DEGRADE_DETAIL_BREAKER_TRIAL_LEDGER_HPP_
#define DEGRADE_DETAIL_BREAKER_TRIAL_LEDGER_HPP_

#include <cstdint>
#include <limits>
#include <set>

#include "degrade/detail/saturating.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class TrialLedger {
 public:
  // "No deadline".
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // `wait_nanos` <= 0: trials may be out forever (no admission times kept).
  explicit TrialLedger(int64_t wait_nanos = 0) : wait_nanos_(wait_nanos) {}

  // A trial was admitted at `now`. Strong exception guarantee: a failed
  // allocation leaves the ledger as it was.
  void Admit(int64_t now) {
    if (wait_nanos_ > 0) out_since_.insert(now);
    ++admitted;
  }
  // The trial admitted at `admitted_at` ended without an outcome, or with
  // an excluded one: its slot is given back.
  void Abandon(int64_t admitted_at) {
    ++abandoned;
    Back(admitted_at);
  }
  void Exclude(int64_t admitted_at) {
    ++excluded;
    Back(admitted_at);
  }
  // The trial admitted at `admitted_at` succeeded (it keeps its slot).
  void Succeed(int64_t admitted_at) {
    ++succeeded;
    Back(admitted_at);
  }
  // The trial admitted at `admitted_at` failed. Under gobreaker's policy
  // the generation ends with it; under the rate-based one it waits for the
  // others, so its clock stops like a success's.
  void Fail(int64_t admitted_at) {
    ++failed;
    Back(admitted_at);
  }
  // A trial that succeeded or failed was slower than slow_call_duration.
  void Slow() { ++slow; }

  uint64_t slots_used() const { return admitted - abandoned - excluded; }
  uint64_t reported() const { return succeeded + failed; }
  uint64_t outstanding() const { return slots_used() - reported(); }

  // The rate-based policy's judgement once `n` trials have reported: true
  // to reopen, when the failure rate reaches `failure_rate` or, with
  // slow calls tracked, the slow-call rate reaches `slow_rate`.
  bool RatesReached(double failure_rate, double slow_rate,
                    bool track_slow) const {
    const uint64_t n = reported();
    if (n == 0) return false;
    const double d = static_cast<double>(n);
    return static_cast<double>(failed) / d >= failure_rate ||
           (track_slow && static_cast<double>(slow) / d >= slow_rate);
  }
  // When the oldest outstanding trial's wait ends; kNever without a wait or
  // with no trial out.
  int64_t deadline() const {
    return out_since_.empty() ? kNever
                              : SatAddNanos(*out_since_.begin(), wait_nanos_);
  }

  uint64_t admitted = 0;
  uint64_t abandoned = 0;
  uint64_t excluded = 0;
  uint64_t succeeded = 0;
  // Under gobreaker's policy at most 1: the first failure ends half-open.
  uint64_t failed = 0;
  uint64_t slow = 0;

 private:
  void Back(int64_t admitted_at) {
    const auto it = out_since_.find(admitted_at);
    if (it != out_since_.end()) out_since_.erase(it);
  }

  int64_t wait_nanos_;
  std::multiset<int64_t> out_since_;
};

// What a half-open breaker does after a trial reported.
enum class TrialVerdict : uint8_t { kWait, kClose, kReopen };

// The half-open policies' judgement of `l`, a pure function.
//   gobreaker (rated == false): the first failure reopens, `max_requests`
//     successes close.
//   resilience4j (rated): nothing until `decide_at` trials reported
//     (min(the rule's minimum calls, max_requests)); then reopen when a
//     rate reaches its threshold (RatesReached), else close.
inline TrialVerdict JudgeTrials(const TrialLedger& l, bool rated,
                                uint64_t max_requests, uint64_t decide_at,
                                double failure_rate, double slow_rate,
                                bool track_slow) {
  if (!rated) {
    if (l.failed > 0) return TrialVerdict::kReopen;
    return l.succeeded >= max_requests ? TrialVerdict::kClose
                                       : TrialVerdict::kWait;
  }
  if (l.reported() < decide_at) return TrialVerdict::kWait;
  return l.RatesReached(failure_rate, slow_rate, track_slow)
             ? TrialVerdict::kReopen
             : TrialVerdict::kClose;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_BREAKER_TRIAL_LEDGER_HPP_
