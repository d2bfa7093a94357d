// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a MetricsRegistry exports for the components that attach to it, read
// through their telemetry views: the series (names, labels, HELP texts:
// docs/metrics.md lists them), the degradation episodes, and the breaker's
// event line. Free functions of the views alone, so they can be tested with
// a fake view and the components know none of it.

#ifndef DEGRADE_DETAIL_METRICS_COMPONENT_METRICS_HPP_
#define DEGRADE_DETAIL_METRICS_COMPONENT_METRICS_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/breaker_types.hpp"
#include "degrade/degradation_episode.hpp"
#include "degrade/detail/json_line.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Seconds from `since` to `now`, 0 when `since` is InfiniteFuture() (not
// degraded) or in the future.
inline double SecondsSince(absl::Time since, absl::Time now) {
  if (since == absl::InfiniteFuture()) return 0.0;
  return absl::ToDoubleSeconds(ElapsedSince(now, since));
}

// degrade_breaker_*, labelled with the registered (unique) `name`.
inline void WriteBreakerMetrics(const BreakerView& b, const std::string& name,
                                MetricWriter& w) {
  const BreakerTotals t = b.totals();
  const State state = b.observed_state();
  w.Gauge("degrade_breaker_state",
          "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
          {{"breaker", name}}, static_cast<double>(state));
  // The same state one-hot: averaging or summing the 0/1/2 gauge across
  // instances reads as a state nobody is in (half of a fleet open is "1",
  // half-open); a series per state sums to how many are in each.
  for (State s : {State::kClosed, State::kHalfOpen, State::kOpen}) {
    w.Gauge("degrade_breaker_in_state",
            "1 for the circuit breaker's current state, 0 for the others.",
            {{"breaker", name}, {"state", std::string(StateName(s))}},
            s == state ? 1.0 : 0.0);
  }
  const std::pair<CallOutcome, uint64_t> outcomes[] = {
      {CallOutcome::kSuccess, t.successes},
      {CallOutcome::kFailure, t.failures},
      {CallOutcome::kExcluded, t.exclusions},
      {CallOutcome::kRejectedOpen, t.rejected_open},
      {CallOutcome::kRejectedTooMany, t.rejected_too_many},
      {CallOutcome::kAbandoned, t.abandoned},
      {CallOutcome::kStale, t.stale}};
  for (const auto& [outcome, value] : outcomes) {
    w.Counter(
        "degrade_breaker_calls_total",
        "Calls through a circuit breaker by outcome: success, "
        "failure, excluded, rejected_open, rejected_too_many, "
        "abandoned (permit never reported), stale (reported after a "
        "state change).",
        {{"breaker", name}, {"outcome", std::string(CallOutcomeName(outcome))}},
        static_cast<double>(value));
  }
  w.Counter("degrade_breaker_slow_calls_total",
            "Calls (successes or failures) slower than the breaker's "
            "slow_call_duration.",
            {{"breaker", name}}, static_cast<double>(t.slow_calls));
  for (State from : {State::kClosed, State::kHalfOpen, State::kOpen}) {
    for (State to : {State::kClosed, State::kHalfOpen, State::kOpen}) {
      if (from == to) continue;
      w.Counter("degrade_breaker_transitions_total",
                "Circuit breaker state changes by from and to state.",
                {{"breaker", name},
                 {"from", std::string(StateName(from))},
                 {"to", std::string(StateName(to))}},
                static_cast<double>(b.transitions(from, to)));
    }
  }
  w.Gauge("degrade_breaker_degraded_seconds",
          "How long the breaker has been out of the closed state; 0 when "
          "closed.",
          {{"breaker", name}}, SecondsSince(b.degraded_since(), b.now()));
}

inline void BreakerEpisodes(const BreakerView& b, const std::string& name,
                            std::vector<DegradationEpisode>* out) {
  const absl::Time since = b.degraded_since();
  if (since == absl::InfiniteFuture()) return;
  DegradationEpisode e;
  e.kind = EpisodeKind::kBreaker;
  e.name = name;
  e.source = name;
  e.since = since;
  out->push_back(std::move(e));
}

// The breaker_state_change line. The modes appear when either is not
// normal, the forced end when there is one.
inline std::string BreakerStateChangeLine(const BreakerStateChange& c,
                                          absl::string_view name) {
  JsonLine line("breaker_state_change", c.time);
  line.Str("breaker", name)
      .Str("from", StateName(c.from))
      .Str("to", StateName(c.to))
      .Str("cause", TransitionCauseName(c.cause));
  if (c.from_mode != BreakerMode::kNormal ||
      c.to_mode != BreakerMode::kNormal) {
    line.Str("from_mode", BreakerModeName(c.from_mode))
        .Str("to_mode", BreakerModeName(c.to_mode));
  }
  if (c.forced_until != absl::InfiniteFuture()) {
    line.Time("forced_until", c.forced_until);
  }
  if (c.trip.rule != TripReason::Rule::kNone) {
    line.Raw("trip", c.trip.ToJson());
  }
  return line.Done();
}

// The breaker_threshold line.
inline std::string BreakerThresholdLine(const BreakerThresholdEvent& e,
                                        absl::string_view name) {
  return JsonLine("breaker_threshold", e.time)
      .Str("breaker", name)
      .Str("threshold", BreakerThresholdName(e.threshold))
      .Num("rate", e.rate)
      .Num("limit", e.limit)
      .Int("calls", e.calls)
      .Done();
}

// One count of a "result" label's value.
struct ResultCount {
  absl::string_view result;
  uint64_t count;
};

// A counter split by "result" into the updates that took and those refused,
// after which the previous state kept serving (config reloads, hot-list
// refreshes): the two series of every such counter, labelled alike.
inline void WriteByResult(MetricWriter& w, absl::string_view metric,
                          absl::string_view help,
                          const std::pair<std::string, std::string>& owner,
                          ResultCount took, ResultCount refused) {
  for (const ResultCount& r : {took, refused}) {
    w.Counter(metric, help, {owner, {"result", std::string(r.result)}},
              static_cast<double>(r.count));
  }
}

// degrade_level*, degrade_feature_enabled, degrade_config_reloads_total,
// degrade_manager_degraded_seconds.
inline void WriteManagerMetrics(const ManagerStats& st, const std::string& name,
                                MetricWriter& w) {
  w.Gauge("degrade_level", "The degradation manager's current level.",
          {{"manager", name}}, st.level);
  w.Gauge("degrade_levels", "Levels in the installed configuration.",
          {{"manager", name}}, st.num_levels);
  for (const auto& [from_to, count] : st.transitions) {
    w.Counter("degrade_level_transitions_total",
              "Degradation level changes by from and to level.",
              {{"manager", name},
               {"from", absl::StrCat(from_to.first)},
               {"to", absl::StrCat(from_to.second)}},
              static_cast<double>(count));
  }
  for (std::size_t k = 0; k < st.time_at_level.size(); ++k) {
    w.Counter("degrade_level_seconds_total",
              "Time spent at each degradation level.",
              {{"manager", name}, {"level", absl::StrCat(k)}},
              absl::ToDoubleSeconds(st.time_at_level[k]));
  }
  for (const auto& [feature, enabled] : st.features) {
    w.Gauge("degrade_feature_enabled",
            "Whether a feature is on (1) or switched off by the degradation "
            "level (0).",
            {{"manager", name}, {"feature", feature}}, enabled ? 1 : 0);
  }
  WriteByResult(w, "degrade_config_reloads_total",
                "Degradation config reloads by result: applied or rejected "
                "(the previous config kept serving).",
                {"manager", name}, {"applied", st.reloads},
                {"rejected", st.rejected_reloads});
  w.Gauge("degrade_control_version",
          "Version of the control document in force on the manager; 0 when "
          "none.",
          {{"manager", name}}, static_cast<double>(st.control_version));
  w.Gauge("degrade_control_expires_at_seconds",
          "When the control document in force ends, in Unix seconds; 0 when "
          "none, +Inf when it has no end.",
          {{"manager", name}},
          st.control_version == 0 ? 0.0
          : st.control_until == absl::InfiniteFuture()
              ? std::numeric_limits<double>::infinity()
              // raw-time-ok: an instant as Unix seconds (absl saturates)
              : absl::ToDoubleSeconds(st.control_until - absl::UnixEpoch()));
  w.Gauge("degrade_manager_degraded_seconds",
          "How long the manager has been above level 0; 0 at level 0.",
          {{"manager", name}},
          st.at_or_above_since.empty()
              ? 0.0
              : SecondsSince(st.at_or_above_since.front(), st.now));
}

// One "level" episode per level from 1 to the current one.
inline void ManagerEpisodes(const ManagerStats& st, const std::string& name,
                            std::vector<DegradationEpisode>* out) {
  for (std::size_t k = 0; k < st.at_or_above_since.size(); ++k) {
    DegradationEpisode e;
    e.kind = EpisodeKind::kLevel;
    e.name = name;
    e.source = name;
    e.level = static_cast<int>(k) + 1;
    e.since = st.at_or_above_since[k];
    out->push_back(std::move(e));
  }
}

// degrade_hot_list_*.
inline void WriteHotListMetrics(const HotListStats& st, const std::string& name,
                                MetricWriter& w) {
  w.Gauge("degrade_hot_list_age_seconds",
          "Age of the hot list's serving snapshot; +Inf before the first "
          "one. A rising age means refreshes are failing.",
          {{"hot_list", name}},
          st.age == absl::InfiniteDuration()
              ? std::numeric_limits<double>::infinity()
              : absl::ToDoubleSeconds(st.age));
  w.Gauge("degrade_hot_list_items", "Items in the serving snapshot.",
          {{"hot_list", name}}, static_cast<double>(st.items));
  WriteByResult(w, "degrade_hot_list_refreshes_total",
                "Hot-list snapshot updates by result: ok (published) or "
                "failed (the previous snapshot kept serving).",
                {"hot_list", name}, {"ok", st.refreshes},
                {"failed", st.failures});
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_COMPONENT_METRICS_HPP_
