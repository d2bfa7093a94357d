// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/report.hpp
// -----------------------------------------------------------------------------
//
// The inference_shedding demo's output, shared with its test: the three runs
// of one pattern (RunComparison), the text report (Report) and the SVG chart
// (Chart).

#ifndef DEGRADE_EXAMPLES_INFERENCE_REPORT_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_REPORT_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "inference/simulation.hpp"
#include "inference/svg_chart.hpp"

namespace inference {

// A request answered after this long has outlived its client's patience.
inline constexpr absl::Duration kTimeout = absl::Seconds(1);
// The report's table slices, and the chart's.
inline constexpr absl::Duration kTableSlice = absl::Seconds(30);
inline constexpr absl::Duration kChartSlice = absl::Seconds(5);

// One pattern, one seed, three modes.
struct Comparison {
  LoadPattern pattern;
  uint64_t seed = 0;
  RunResult shedding;
  RunResult features_only;
  RunResult always_on;
};

inline absl::StatusOr<Comparison> RunComparison(
    const degrade::DegradationConfig& config, uint64_t seed,
    LoadPattern pattern = DefaultPattern()) {
  Comparison c;
  c.pattern = std::move(pattern);
  c.seed = seed;
  SimOptions o;
  o.seed = seed;
  o.pattern = c.pattern;
  o.config = config;
  for (auto [mode, out] :
       {std::make_pair(Mode::kShedding, &c.shedding),
        std::make_pair(Mode::kFeaturesOnly, &c.features_only),
        std::make_pair(Mode::kAlwaysOn, &c.always_on)}) {
    o.mode = mode;
    absl::StatusOr<RunResult> r = Run(o);
    if (!r.ok()) return r.status();
    *out = std::move(*r);
  }
  return c;
}

// The level changes of `r` within [from, to).
inline std::size_t ChangesIn(const RunResult& r,
                             std::pair<absl::Duration, absl::Duration> span) {
  return static_cast<std::size_t>(std::count_if(
      r.changes.begin(), r.changes.end(),
      [&](const Change& c) { return c.t >= span.first && c.t < span.second; }));
}

// The final descent to level 0: the changes after the last escalation.
inline std::vector<Change> FinalRecovery(const RunResult& r) {
  std::vector<Change> out;
  for (const Change& c : r.changes) {
    if (c.to > c.from) {
      out.clear();
    } else {
      out.push_back(c);
    }
  }
  return out;
}

namespace internal {

inline std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.0f", absl::ToDoubleSeconds(d));
}

inline std::string Ms(double ms) {
  if (ms >= 10000.0) return absl::StrFormat("%.0f s", ms / 1000.0);
  if (ms >= 1000.0) return absl::StrFormat("%.2f s", ms / 1000.0);
  return absl::StrFormat("%.0f ms", ms);
}

}  // namespace internal

// The text report. `verbose` adds the manager's log lines.
inline std::string Report(const Comparison& c,
                          const degrade::DegradationConfig& config,
                          bool verbose) {
  using internal::Ms;
  using internal::Seconds;
  std::string out;
  absl::StrAppend(
      &out, "inference_shedding: batch ", kBatchSize, ", ",
      absl::FormatDuration(BatchTime(kBatchSize, absl::ZeroDuration())),
      " of core work per full batch; seed ", c.seed, "\n\n");
  absl::StrAppend(&out, "capacity in full batches, by level:\n");
  for (int level = 0; level <= 3; ++level) {
    absl::StrAppend(
        &out,
        absl::StrFormat("  level %d  %5.1f req/s  (non-core %s per request)\n",
                        level, CapacityRps(level),
                        absl::FormatDuration(NonCoreCostAt(level))));
  }
  absl::StrAppend(&out, "  best-effort traffic (",
                  absl::StrFormat("%.0f%%", 100 * kBestEffortShare),
                  " of requests) is refused at level ", kBestEffortLevel,
                  " in the shedding run\n\n");
  absl::StrAppend(&out, "load, in multiples of the level-0 capacity:\n");
  for (const LoadPhase& p : c.pattern.phases) {
    absl::StrAppend(
        &out,
        absl::StrFormat("  %-14s %4s s  %.1fx -> %.1fx, noise +-%.0f%%", p.name,
                        Seconds(p.length), p.from, p.to, 100 * p.noise));
    if (p.burst_every > absl::ZeroDuration()) {
      absl::StrAppend(&out,
                      absl::StrFormat(", %s s bursts to %.1fx every %s s",
                                      Seconds(p.burst_length), p.burst_load,
                                      Seconds(p.burst_every)));
    }
    absl::StrAppend(&out, "\n");
  }

  const std::vector<Slice> shed = Slices(c.shedding, kTableSlice);
  const std::vector<Slice> off = Slices(c.always_on, kTableSlice);
  absl::StrAppend(&out, "\nper ", Seconds(kTableSlice),
                  " s slice (offered and throughput in req/s; queue: the "
                  "longest sampled; level and features at the slice end):\n");
  constexpr char kRow[] =
      "  %-11s | %7s | %5s %5s %5s %7s %8s %8s %7s | %5s %7s %8s %8s\n";
  absl::StrAppend(&out, absl::StrFormat("  %-11s | %7s | %-51s | %s\n", "", "",
                                        "with shedding", "always on"));
  absl::StrAppend(
      &out, absl::StrFormat(kRow, "t (s)", "offered", "level", "feats", "queue",
                            "p50", "p99", "answered", "refused", "queue", "p50",
                            "p99", "answered"));
  const auto rate = [](double v) { return absl::StrFormat("%.0f", v); };
  for (std::size_t i = 0; i < shed.size() && i < off.size(); ++i) {
    const Slice& s = shed[i];
    const Slice& o = off[i];
    absl::StrAppend(
        &out,
        absl::StrFormat(
            kRow, absl::StrFormat("%4s-%-4s", Seconds(s.start), Seconds(s.end)),
            rate(s.offered_rps), absl::StrCat(s.level),
            absl::StrCat(s.features_on, "/", kNumNonCore), rate(s.max_queue),
            Ms(s.p50_ms), Ms(s.p99_ms), rate(s.throughput_rps),
            rate(s.refused_rps), rate(o.max_queue), Ms(o.p50_ms), Ms(o.p99_ms),
            rate(o.throughput_rps)));
  }

  if (verbose) {
    absl::StrAppend(&out,
                    "\nlevel changes (the manager's log, shedding run):\n");
    for (const std::string& line : c.shedding.log_lines) {
      absl::StrAppend(&out, "  ", line, "\n");
    }
  }

  const Summary s[3] = {Summarize(c.shedding, kTimeout),
                        Summarize(c.features_only, kTimeout),
                        Summarize(c.always_on, kTimeout)};
  const auto plateau = c.pattern.Span("noisy plateau");
  absl::StrAppend(&out, "\nsummary (", Seconds(c.pattern.length()),
                  " s, same requests in every run):\n");
  absl::StrAppend(&out, "  | | shedding | features only | always on |\n");
  absl::StrAppend(&out, "  |---|---|---|---|\n");
  const auto row = [&](absl::string_view name, auto value) {
    absl::StrAppend(&out, "  | ", name, " | ", value(s[0], c.shedding), " | ",
                    value(s[1], c.features_only), " | ",
                    value(s[2], c.always_on), " |\n");
  };
  row("requests offered", [](const Summary& x, const RunResult&) {
    return absl::StrCat(x.offered);
  });
  row("refused (best-effort, level 3)", [](const Summary& x, const RunResult&) {
    return absl::StrCat(x.refused);
  });
  row("answered", [](const Summary& x, const RunResult&) {
    return absl::StrCat(x.answered);
  });
  row("still queued at the end", [](const Summary& x, const RunResult&) {
    return absl::StrCat(x.unserved);
  });
  row("p50 latency",
      [](const Summary& x, const RunResult&) { return Ms(x.p50_ms); });
  row("p99 latency",
      [](const Summary& x, const RunResult&) { return Ms(x.p99_ms); });
  row("max latency",
      [](const Summary& x, const RunResult&) { return Ms(x.max_ms); });
  row(absl::StrCat("past the ", absl::ToInt64Seconds(kTimeout),
                   " s timeout (answered late or still waiting)"),
      [](const Summary& x, const RunResult&) {
        return absl::StrFormat(
            "%d (%.1f%%)", x.past_timeout,
            x.offered == 0 ? 0.0 : 100.0 * x.past_timeout / x.offered);
      });
  row("level changes (on the plateau)",
      [&](const Summary& x, const RunResult& r) {
        if (r.mode == Mode::kAlwaysOn) return std::string("-");
        return absl::StrCat(x.level_changes, " (", ChangesIn(r, plateau), ")");
      });

  absl::StrAppend(&out,
                  "\nrecovery, shedding run (each step after its hold; "
                  "holds: ");
  std::vector<std::string> holds;
  for (std::size_t k = 0; k < config.levels.size(); ++k) {
    holds.push_back(absl::StrCat(
        "level ", k + 1, " ",
        absl::FormatDuration(config.levels[k].hold.value_or(config.hold))));
  }
  absl::StrAppend(&out, absl::StrJoin(holds, ", "), "):\n");
  const auto ramp_down = c.pattern.Span("ramp down");
  absl::Duration previous = ramp_down.first;
  const std::vector<Change> recovery = FinalRecovery(c.shedding);
  for (const Change& ch : recovery) {
    absl::StrAppend(
        &out,
        absl::StrFormat("  level %d -> %d at t = %s s (%s s after %s)\n",
                        ch.from, ch.to, Seconds(ch.t), Seconds(ch.t - previous),
                        &ch == &recovery.front() ? "the ramp down began"
                                                 : "the previous step"));
    previous = ch.t;
  }
  return out;
}

namespace internal {

// One value per slice, at the slice's midpoint (in seconds); NaN where the
// slice answered nothing.
template <typename F>
std::vector<svg::Point> PerSlice(const std::vector<Slice>& slices, F value) {
  std::vector<svg::Point> points;
  for (const Slice& s : slices) {
    points.push_back({absl::ToDoubleSeconds(s.start + s.end) / 2.0, value(s)});
  }
  return points;
}

inline svg::Series Constant(std::string label, std::string color, double y,
                            absl::Duration length) {
  svg::Series s{std::move(label),
                std::move(color),
                {{0.0, y}, {absl::ToDoubleSeconds(length), y}}};
  s.width = 1.2;
  s.dashed = true;
  return s;
}

}  // namespace internal

// The chart: offered load and throughput, the level, and p99 latency (log
// scale) over time, the runs overlaid, the load pattern's phases as bands.
inline svg::Chart MakeChart(const Comparison& c) {
  using internal::PerSlice;
  constexpr char kShed[] = "#1f77b4";
  constexpr char kFeaturesOnly[] = "#ff7f0e";
  constexpr char kAlwaysOn[] = "#d62728";
  const std::vector<Slice> shed = Slices(c.shedding, kChartSlice);
  const std::vector<Slice> features = Slices(c.features_only, kChartSlice);
  const std::vector<Slice> on = Slices(c.always_on, kChartSlice);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  svg::Chart chart;
  chart.title = absl::StrCat(
      "Batched inference driven to 3x capacity: shedding non-core work vs. "
      "every feature on");
  chart.subtitle =
      absl::StrCat("The same requests (seed ", c.seed,
                   ") in every run; simulated on a FakeClock by "
                   "examples/inference_shedding.cpp; ",
                   absl::ToInt64Seconds(kChartSlice), " s slices.");
  chart.x_label = "time (s)";
  chart.x_max = absl::ToDoubleSeconds(c.pattern.length());
  absl::Duration start = absl::ZeroDuration();
  for (const LoadPhase& p : c.pattern.phases) {
    chart.bands.push_back({absl::ToDoubleSeconds(start),
                           absl::ToDoubleSeconds(start + p.length), p.name});
    start += p.length;
  }

  svg::Panel& load = chart.panels.emplace_back();
  load.title = "Requests per second: offered, and answered by each run";
  load.series.push_back(
      {"offered", "#555555",
       PerSlice(shed, [](const Slice& s) { return s.offered_rps; })});
  load.series.back().width = 1.0;
  load.series.push_back(
      {"answered, with shedding", kShed,
       PerSlice(shed, [](const Slice& s) { return s.throughput_rps; })});
  load.series.push_back(
      {"answered, always on", kAlwaysOn,
       PerSlice(on, [](const Slice& s) { return s.throughput_rps; })});
  load.series.push_back(internal::Constant(
      absl::StrFormat("capacity, all non-core off (%.0f/s)", CapacityRps(3)),
      kShed, CapacityRps(3), c.pattern.length()));
  load.series.push_back(internal::Constant(
      absl::StrFormat("capacity, every feature on (%.0f/s)", CapacityRps(0)),
      kAlwaysOn, CapacityRps(0), c.pattern.length()));

  svg::Panel& level = chart.panels.emplace_back();
  level.title =
      "Degradation level of the shedding run (always on: no manager, level 0)";
  level.height = 110.0;
  level.y_min = -0.25;
  level.y_max = 3.4;
  level.y_ticks = {{0, "0"}, {1, "1"}, {2, "2"}, {3, "3"}};
  svg::Series steps{"level", kShed, {}};
  steps.step = true;
  steps.width = 2.0;
  steps.points.push_back({0.0, 0.0});
  for (const Sample& s : c.shedding.samples) {
    steps.points.push_back({absl::ToDoubleSeconds(s.t), double(s.level)});
  }
  steps.points.push_back({chart.x_max, steps.points.back().y});
  level.series.push_back(std::move(steps));

  svg::Panel& latency = chart.panels.emplace_back();
  latency.title =
      absl::StrCat("p99 latency per ", absl::ToInt64Seconds(kChartSlice),
                   " s slice (log scale)");
  latency.height = 200.0;
  latency.log_y = true;
  latency.y_min = 100.0;
  latency.y_max = 1e6;
  latency.y_ticks = {{100, "100 ms"},
                     {1e3, "1 s"},
                     {1e4, "10 s"},
                     {1e5, "100 s"},
                     {1e6, "1000 s"}};
  const auto p99 = [nan](const Slice& s) {
    return s.answered == 0 ? nan : s.p99_ms;
  };
  latency.series.push_back({"with shedding", kShed, PerSlice(shed, p99), 2.0});
  latency.series.push_back({"features shed, all traffic admitted",
                            kFeaturesOnly, PerSlice(features, p99), 1.2});
  latency.series.push_back({"always on", kAlwaysOn, PerSlice(on, p99), 2.0});
  latency.series.push_back(internal::Constant(
      absl::StrCat(absl::ToInt64Seconds(kTimeout), " s timeout"), "#555555",
      absl::ToDoubleMilliseconds(kTimeout), c.pattern.length()));
  return chart;
}

inline std::string Chart(const Comparison& c) {
  return svg::Render(MakeChart(c));
}

}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_REPORT_HPP_
