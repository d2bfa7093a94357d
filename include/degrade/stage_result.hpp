// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stage_result.hpp
// -----------------------------------------------------------------------------
//
// The degradation tag. A recommendation request walks feature service ->
// recall -> rank -> re-rank, and any hop may serve its Plan B. The response
// is then "lossy but available", and three consumers need to know how lossy:
// the next stage (the ranker down-weights default features), the impression
// log (a training pipeline drops degraded impressions) and dashboards (how
// many layers each request lost). A `StageResult<T>` is a stage's value plus
// that tag: `is_default()` says this stage served a fallback, and a
// `DegradationTrace` says which stages, this one and every one upstream,
// degraded and why.
//
//   degrade::StageResult<Features> features =
//       f.ok() ? degrade::StageResult<Features>::Fresh(*std::move(f))
//              : degrade::StageResult<Features>::Fallback(
//                    GlobalAverage(), "features",
//                    degrade::ReasonFromStatus(f.status()));
//   // The ranker sees what it was fed and carries the trace on.
//   auto ranked = degrade::StageResult<Ranked>::From(
//       features.trace(), Rank(features.value(), features.is_default()));
//   response.set_degradation(ranked.trace().Encode());  // "v1;features=open"
//
// The vocabulary comes from two headers this one includes, so that every name
// of the tag is reachable from here: degrade_reason.hpp (`DegradeReason`,
// `ReasonName`, `ReasonFromStatus`, `kAllDegradeReasons`) and
// degradation_trace.hpp (`DegradationTrace`, its fixed capacity and rules,
// and its text encoding for RPC headers and logs).
//
// Thread safety: `StageResult` is a plain value. Concurrent const access is
// safe; a mutation needs the caller's synchronisation, as for any value type.
// Nothing here throws, and everything compiles with -fno-exceptions.

#ifndef DEGRADE_STAGE_RESULT_HPP_
#define DEGRADE_STAGE_RESULT_HPP_

#include <utility>

#include "absl/strings/string_view.h"
#include "degrade/degradation_trace.hpp"  // IWYU pragma: export
#include "degrade/degrade_reason.hpp"     // IWYU pragma: export
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// StageResult<T>
//
// A stage's value with its degradation tag. Made by the factories; a value
// type that owns nothing beyond `T` (for a trivially copyable `T` it is
// trivially copyable, and never touches the heap).
//
//   Fresh(v)                  the stage's own answer, no degradation seen
//   Fallback(v, stage, why)   the stage served its Plan B
//   Fallback(v, stage, why, tier)
//                             a default from a rung of a fallback ladder
//                             (`kSegment`, `kGlobal`; ladder.hpp)
//   Stale(v, stage, why, age) the key's own last-known-good value, `age`
//                             old: degraded, `is_stale()`, not a default
//   From(upstream, v)         a fresh answer computed from degraded inputs:
//                             carries their trace, is not itself a default
//
// Thread safety: a value type; see the file comment.
template <typename T>
class StageResult {
 public:
  using value_type = T;

  // A result that is not a default and has an empty trace.
  static StageResult Fresh(T value) { return StageResult(std::move(value)); }

  // A fallback served by `stage` because of `reason`: `is_default()` is
  // true and the trace names `stage` (subject to `DegradationTrace::Add`'s
  // rules: an invalid stage name is counted as dropped, and `kNone`
  // records nothing though the result is still a default).
  static StageResult Fallback(T value, absl::string_view stage,
                              DegradeReason reason) {
    StageResult r(std::move(value), true, DegradationTrace());
    r.trace_.Add(stage, reason);
    return r;
  }
  // Same, from a ladder's default rung. A stale `tier` belongs to `Stale()`:
  // given here it is recorded as `kUnspecified`.
  static StageResult Fallback(T value, absl::string_view stage,
                              DegradeReason reason, FallbackTier tier) {
    if (IsStaleTier(tier)) tier = FallbackTier::kUnspecified;
    StageResult r(std::move(value), true, DegradationTrace());
    if (!TierName(tier).empty()) r.tier_ = tier;
    r.trace_.Add(stage, reason, r.tier_);
    return r;
  }

  // The key's own last-known-good value, served because of `reason`:
  // `is_stale()` is true, `is_default()` false (it is this key's data, not a
  // population's), and the trace names `stage` with the stale tier of `age`
  // ("features=open/stale-10m"). A `reason` of `kNone` still marks the result
  // stale but records no entry, as for `Fallback()`.
  static StageResult Stale(T value, absl::string_view stage,
                           DegradeReason reason, absl::Duration age) {
    StageResult r(std::move(value), false, DegradationTrace());
    r.tier_ = StaleTierForAge(age);
    r.trace_.Add(stage, reason, r.tier_);
    return r;
  }

  // A result computed from inputs whose trace was `upstream`: not a default
  // itself, but it carries every layer lost upstream to the next stage.
  static StageResult From(const DegradationTrace& upstream, T value) {
    return StageResult(std::move(value), false, upstream);
  }

  // The value. The rvalue overloads move it out, for the last stage.
  const T& value() const& { return value_; }
  T& value() & { return value_; }
  T&& value() && { return std::move(value_); }
  const T&& value() const&& { return std::move(value_); }

  // True when this stage served a fallback (not when only an upstream
  // stage did: read `trace()` for that).
  bool is_default() const { return is_default_; }
  // True when this stage served a key's last-known-good value (`Stale()`).
  bool is_stale() const { return IsStaleTier(tier_); }
  // The rung of a fallback ladder this stage served: a stale bucket,
  // `kSegment` or `kGlobal`; `kUnspecified` for a fresh result and for a
  // fallback that is not on a ladder.
  FallbackTier tier() const { return tier_; }
  // True when this stage or any stage upstream degraded.
  bool degraded() const { return is_default_ || is_stale() || !trace_.empty(); }

  const DegradationTrace& trace() const { return trace_; }
  // For recording a degradation that is not a fallback, such as a fan-out
  // that returned partial results: `mutable_trace()->Add("recall", kTimeout)`.
  DegradationTrace* mutable_trace() { return &trace_; }

  // Marks this result as `stage`'s fallback after the fact: sets
  // `is_default()` and records the entry. Returns what `Add()` returns.
  bool MarkDefault(absl::string_view stage, DegradeReason reason) {
    is_default_ = true;
    if (IsStaleTier(tier_)) tier_ = FallbackTier::kUnspecified;
    return trace_.Add(stage, reason);
  }

  // Folds in the trace of an input. The upstream entries go first, since
  // those stages ran first, and where both name a stage the upstream reason
  // wins (it is the root cause). Returns `*this` for chaining.
  StageResult& MergeUpstream(const DegradationTrace& upstream) {
    DegradationTrace merged = upstream;
    merged.Merge(trace_);
    trace_ = merged;
    return *this;
  }
  // Same, for an input's result: only its trace is read, never its value.
  template <typename U>
  StageResult& MergeUpstream(const StageResult<U>& upstream) {
    return MergeUpstream(upstream.trace());
  }

 private:
  StageResult(T value, bool is_default, const DegradationTrace& trace)
      : value_(std::move(value)), is_default_(is_default), trace_(trace) {}
  // The happy path builds its empty trace in place instead of copying one:
  // it is most of a fresh result's size.
  // (`trace_` is default-initialised, not value-initialised: `trace_()`
  // would zero all of its entries first.)
  explicit StageResult(T value)
      : value_(std::move(value)), is_default_(false) {}

  T value_;
  bool is_default_;
  FallbackTier tier_ = FallbackTier::kUnspecified;
  DegradationTrace trace_;
};

// UpstreamTrace
//
// The trace a stage inherits, as the combinators take it (`WithFallback`,
// `RankOrFallback`, `RerankOrFallback`, `FanOutRecall`): made implicitly from
// a `DegradationTrace` or from the upstream `StageResult<U>` itself (only its
// trace is read), so each combinator has one upstream form rather than one
// per way of holding a trace.
//
//   WithFallback(features, recall_cb, "recall", call, fallback);
//   WithFallback(features.trace(), recall_cb, "recall", call, fallback);
//
// A parameter type: it refers to the trace it was made from and must not
// outlive it (a temporary lives as long as the call it is passed to).
class UpstreamTrace {
 public:
  // Implicit on purpose: the call sites above name the trace or the result.
  UpstreamTrace(const DegradationTrace& trace)  // NOLINT(runtime/explicit)
      : trace_(&trace) {}
  template <typename U>
  UpstreamTrace(const StageResult<U>& result)  // NOLINT(runtime/explicit)
      : trace_(&result.trace()) {}

  const DegradationTrace& trace() const { return *trace_; }

 private:
  const DegradationTrace* trace_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STAGE_RESULT_HPP_
