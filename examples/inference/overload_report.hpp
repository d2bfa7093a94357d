// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/overload_report.hpp
// -----------------------------------------------------------------------------
//
// Reading the overload simulation's runs (overload_sim.hpp): per mode and
// class over a window, goodput as a share of capacity, availability, the
// latency of what was answered and every refusal by reason; the shed-order
// check; the limit's settling and drift; the report the demo prints and one
// SVG chart per class. Shared by examples/inference_overload.cpp and
// tests/inference_overload_test.cpp, so the test checks what the demo prints.

#ifndef DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_REPORT_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_REPORT_HPP_

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "inference/overload_sim.hpp"
#include "inference/overload_traffic.hpp"
#include "inference/simulation.hpp"
#include "inference/svg_chart.hpp"

namespace inference {
namespace overload {

// ---- Per class and mode -----------------------------------------------------

struct ClassSummary {
  std::size_t offered = 0;
  std::size_t good = 0;  // answered within the deadline
  std::array<std::size_t, kNumFates> fates{};
  double p50_ms = 0.0, p99_ms = 0.0, max_ms = 0.0;  // of the answered

  double availability() const {
    return offered == 0 ? 1.0 : static_cast<double>(good) / offered;
  }
};

struct WindowSummary {
  double goodput = 0.0;  // of capacity, see overload_sim.hpp
  std::array<ClassSummary, kNumCriticalities> classes;
};

// The requests that arrived in [from, to) by class; goodput from the answers
// given in [from, to).
inline WindowSummary Summarize(const RunResult& r, absl::Duration from,
                               absl::Duration to) {
  WindowSummary w;
  std::array<std::vector<double>, kNumCriticalities> latencies;
  absl::Duration good_gpu = absl::ZeroDuration();
  for (const Request& q : r.requests) {
    if (q.good() && q.done >= from && q.done < to) good_gpu += q.gpu;
    if (q.arrival < from || q.arrival >= to) continue;
    ClassSummary& c = w.classes[q.klass];
    ++c.offered;
    ++c.fates[static_cast<std::size_t>(q.fate)];
    if (q.good()) ++c.good;
    if (q.fate == Fate::kAnswered) {
      latencies[q.klass].push_back(absl::ToDoubleMilliseconds(q.latency()));
    }
  }
  for (std::size_t k = 0; k < kNumCriticalities; ++k) {
    std::vector<double>& l = latencies[k];
    w.classes[k].max_ms = l.empty() ? 0.0 : *std::max_element(l.begin(), l.end());
    w.classes[k].p50_ms = Quantile(l, 0.50);
    w.classes[k].p99_ms = Quantile(l, 0.99);
  }
  w.goodput = to > from ? absl::FDivDuration(good_gpu, to - from) : 0.0;
  return w;
}

// Goodput per slice of `width`.
inline std::vector<double> GoodputSeries(const RunResult& r,
                                         absl::Duration width) {
  const auto n = static_cast<std::size_t>(std::ceil(absl::FDivDuration(r.length, width)));
  std::vector<absl::Duration> gpu(n, absl::ZeroDuration());
  for (const Request& q : r.requests) {
    if (!q.good() || q.done >= r.length) continue;
    gpu[static_cast<std::size_t>(q.done / width)] += q.gpu;
  }
  std::vector<double> out;
  for (const absl::Duration g : gpu) out.push_back(absl::FDivDuration(g, width));
  return out;
}

// Per 1 s slice and cohort, the CRITICAL or CRITICAL_PLUS requests refused
// at the door (by class, by the limiter or by a full queue) in a slice where
// a sheddable request of the same cohort got past it. Shedding strictly
// lowest class first means none.
struct OrderViolation {
  absl::Duration slice;
  int cohort = 0;
  std::size_t critical_refused = 0;
  std::size_t sheddable_admitted = 0;
};

inline bool RefusedAtDoor(const Request& q) {
  return q.done == q.arrival && q.fate != Fate::kAnswered;
}

inline std::vector<OrderViolation> ShedOrderViolations(const RunResult& r) {
  // (slice, cohort) -> {critical refused, sheddable admitted}
  std::map<std::pair<int64_t, int>, std::pair<std::size_t, std::size_t>> cells;
  for (const Request& q : r.requests) {
    const Criticality c = kClasses[q.klass].criticality;
    const bool refused = RefusedAtDoor(q);
    const std::pair<int64_t, int> key{absl::ToInt64Seconds(q.arrival), q.cohort};
    if (!IsSheddable(c) && refused) ++cells[key].first;
    if (IsSheddable(c) && !refused) ++cells[key].second;
  }
  std::vector<OrderViolation> out;
  for (const auto& [key, counts] : cells) {
    if (counts.first > 0 && counts.second > 0) {
      out.push_back({absl::Seconds(key.first), key.second, counts.first,
                     counts.second});
    }
  }
  return out;
}

// A stricter reading of the same order, across cohorts: how many sheddable
// requests got past the door within `after` of a CRITICAL or CRITICAL_PLUS
// request being refused there. The limiter does not know cohorts, so the
// per-cohort check above sees about one in 128 of the inversions it causes;
// this one sees them all. Requests are in arrival order.
inline std::size_t SheddableAdmittedAfterCriticalRefusal(const RunResult& r,
                                                         absl::Duration after) {
  std::size_t n = 0;
  absl::Duration last_refusal = -absl::InfiniteDuration();
  for (const Request& q : r.requests) {
    const bool sheddable = IsSheddable(kClasses[q.klass].criticality);
    const bool refused = RefusedAtDoor(q);
    if (!sheddable && refused) last_refusal = q.arrival;
    if (sheddable && !refused && q.arrival - last_refusal <= after) ++n;
  }
  return n;
}

// ---- The limit --------------------------------------------------------------

// The limit's range over the samples in [from, to); {0, 0} without a limiter.
inline std::pair<int, int> LimitRange(const RunResult& r, absl::Duration from,
                                      absl::Duration to) {
  int lo = std::numeric_limits<int>::max(), hi = 0;
  for (const Sample& s : r.samples) {
    if (s.t < from || s.t >= to || s.limit == 0) continue;
    lo = std::min(lo, s.limit);
    hi = std::max(hi, s.limit);
  }
  return hi == 0 ? std::pair<int, int>{0, 0} : std::pair<int, int>{lo, hi};
}

// The median of the limit's samples in [from, to); 0 without a limiter.
inline double MedianLimit(const RunResult& r, absl::Duration from,
                          absl::Duration to) {
  std::vector<double> v;
  for (const Sample& s : r.samples) {
    if (s.t >= from && s.t < to) v.push_back(s.limit);
  }
  return Quantile(v, 0.5);
}

// How far the limit moved over the plateau: its median over the last minute
// against its median over the second (the first is the ramp settling), as
// a fraction of the latter; 0 without a limiter.
inline double PlateauDrift(const RunResult& r, const Scenario& s) {
  const double first = MedianLimit(r, s.plateau_start + absl::Seconds(60),
                                   s.plateau_start + absl::Seconds(120));
  const double last =
      MedianLimit(r, s.plateau_end - absl::Seconds(60), s.plateau_end);
  return first > 0.0 ? std::abs(last - first) / first : 0.0;
}

// The time after `from` from which the limit stays within `tolerance`
// (relative) of its median over [from + settle_window, to): how long it took
// to settle. InfiniteDuration() if it never does.
inline absl::Duration SettlingTime(const RunResult& r, absl::Duration from,
                                   absl::Duration to, double tolerance) {
  std::vector<double> tail;
  std::vector<const Sample*> in;
  for (const Sample& s : r.samples) {
    if (s.t < from || s.t >= to) continue;
    in.push_back(&s);
  }
  if (in.empty()) return absl::InfiniteDuration();
  for (std::size_t i = in.size() / 2; i < in.size(); ++i) {
    tail.push_back(in[i]->limit);
  }
  const double median = Quantile(tail, 0.5);
  absl::Duration settled = from;
  for (const Sample* s : in) {
    if (std::abs(s->limit - median) > tolerance * median) settled = s->t;
  }
  return settled - from;
}

// ---- The comparison ---------------------------------------------------------

struct Comparison {
  uint64_t seed = 1;
  Scenario scenario;
  std::array<RunResult, kModes.size()> runs;
  // OK, or why the mode did not run (a tree without the components, a
  // config that does not load); the report says so, the others still run.
  std::array<absl::Status, kModes.size()> status;
  bool ran(std::size_t m) const { return status[m].ok(); }
};

// Every mode on `base`'s configs and scenario with `seed`.
inline absl::StatusOr<Comparison> RunComparison(const SimOptions& base,
                                                uint64_t seed) {
  Comparison c;
  c.seed = seed;
  c.scenario = base.scenario;
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    SimOptions o = base;
    o.mode = kModes[m];
    o.seed = seed;
    absl::StatusOr<RunResult> r = Run(o);
    if (r.ok()) {
      c.runs[m] = std::move(*r);
    } else if (absl::IsUnimplemented(r.status()) || m >= 2) {
      c.status[m] = r.status();  // the overload components or their config
    } else {
      return r.status();
    }
  }
  return c;
}

// ---- The text report --------------------------------------------------------

inline std::string ClassTable(const WindowSummary& w) {
  std::string out = absl::StrFormat(
      "  %-15s %8s %7s %8s %8s %8s |", "class", "offered", "avail",
      "p50", "p99", "max");
  for (std::size_t f = 1; f < kNumFates; ++f) {
    absl::StrAppend(&out, absl::StrFormat(" %8s", FateName(static_cast<Fate>(f))));
  }
  absl::StrAppend(&out, "\n");
  for (std::size_t k = 0; k < kNumCriticalities; ++k) {
    const ClassSummary& c = w.classes[k];
    absl::StrAppend(
        &out, absl::StrFormat("  %-15s %8d %6.2f%% %6.0fms %6.0fms %6.0fms |",
                              degrade::CriticalityName(kClasses[k].criticality),
                              c.offered, 100.0 * c.availability(), c.p50_ms,
                              c.p99_ms, c.max_ms));
    for (std::size_t f = 1; f < kNumFates; ++f) {
      absl::StrAppend(&out, absl::StrFormat(" %8d", c.fates[f]));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

inline std::string Report(const Comparison& c) {
  const Scenario& s = c.scenario;
  std::string out = absl::StrFormat(
      "Batched inference, four request classes, driven to 3x its fully "
      "featured capacity (%.0f req/s; %.0f with every non-core feature off); "
      "seed %d.\nThe same %d requests in every mode. Goodput: GPU-seconds "
      "spent on answers within %s, over the GPU-seconds available.\n",
      CapacityRps(0), CapacityRps(3), c.seed, c.runs[0].requests.size(),
      absl::FormatDuration(kDeadline));
  struct Window {
    const char* name;
    absl::Duration from, to;
  };
  const Window windows[] = {
      {"10-minute plateau at 3x", s.plateau_start, s.plateau_end},
      {"GPU at half speed, 3x offered", s.halved_start, s.halved_end},
      {"GPU restored", s.halved_end, c.runs[0].length},
  };
  absl::StrAppend(&out, "\nGoodput (of capacity)\n  ",
                  absl::StrFormat("%-16s", "mode"));
  for (const Window& w : windows) absl::StrAppend(&out, absl::StrFormat(" %30s", w.name));
  absl::StrAppend(&out, "\n");
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    absl::StrAppend(&out, absl::StrFormat("  %-16s", ModeName(kModes[m])));
    if (!c.ran(m)) {
      absl::StrAppend(&out, " not run: ", c.status[m].ToString(), "\n");
      continue;
    }
    for (const Window& w : windows) {
      absl::StrAppend(&out, absl::StrFormat(
                                " %30.3f", Summarize(c.runs[m], w.from, w.to).goodput));
    }
    absl::StrAppend(&out, "\n");
  }
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    const RunResult& r = c.runs[m];
    if (!c.ran(m)) continue;
    absl::StrAppend(&out, "\n== ", ModeName(kModes[m]), " ==\n");
    for (const Window& w : windows) {
      absl::StrAppend(&out, "-- ", w.name, " [", absl::FormatDuration(w.from),
                      ", ", absl::FormatDuration(w.to), "): goodput ",
                      absl::StrFormat("%.3f", Summarize(r, w.from, w.to).goodput),
                      "\n", ClassTable(Summarize(r, w.from, w.to)));
    }
    const std::pair<int, int> plateau = LimitRange(r, s.plateau_start + absl::Seconds(60), s.plateau_end);
    if (plateau.second > 0) {
      absl::StrAppend(
          &out,
          absl::StrFormat("  limit on the plateau (after its first minute): "
                          "%d..%d, drift %.1f%%; settled %s after the GPU "
                          "halved, %s after it was restored\n",
                          plateau.first, plateau.second, 100.0 * PlateauDrift(r, s),
                          absl::FormatDuration(SettlingTime(r, s.halved_start, s.halved_end, 0.10)),
                          absl::FormatDuration(SettlingTime(r, s.halved_end, r.length, 0.10))));
    }
    absl::StrAppend(&out, "  shed-order violations (1 s slices, same cohort): ",
                    ShedOrderViolations(r).size(),
                    "; sheddable admitted within 100 ms of a critical refusal: ",
                    SheddableAdmittedAfterCriticalRefusal(r, absl::Milliseconds(100)),
                    "\n");
  }
  return out;
}

// ---- The charts -------------------------------------------------------------

inline constexpr absl::Duration kChartWidth = absl::Seconds(5);
inline constexpr std::array<const char*, kModes.size()> kModeColors = {
    "#d62728", "#ff7f0e", "#9467bd", "#1f77b4"};

// The chart of one class: its availability and p99 latency per 5 s slice in
// every mode, and the goodput of every mode, over the scenario's phases.
inline svg::Chart MakeClassChart(const Comparison& c, std::size_t klass) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  svg::Chart chart;
  chart.title = absl::StrCat(
      "Overload at 3x capacity, ", degrade::CriticalityName(kClasses[klass].criticality),
      " (", kClasses[klass].what, ", ",
      static_cast<int>(kClasses[klass].share * 100), "% of the traffic)");
  chart.subtitle = absl::StrCat(
      "The same requests (seed ", c.seed, ") in every mode; simulated on a "
      "FakeClock by examples/inference_overload.cpp; ",
      absl::ToInt64Seconds(kChartWidth), " s slices.");
  chart.x_label = "time (s)";
  chart.x_max = absl::ToDoubleSeconds(c.scenario.pattern.length());
  absl::Duration start = absl::ZeroDuration();
  for (const LoadPhase& p : c.scenario.pattern.phases) {
    chart.bands.push_back({absl::ToDoubleSeconds(start),
                           absl::ToDoubleSeconds(start + p.length), p.name});
    start += p.length;
  }
  chart.panels.reserve(3);  // the references below must stay valid
  svg::Panel& avail = chart.panels.emplace_back();
  avail.title = "Availability: answered within 1 s / offered (%)";
  avail.y_min = 0.0;
  avail.y_max = 100.0;
  svg::Panel& latency = chart.panels.emplace_back();
  latency.title = "p99 latency of the answered (log scale)";
  latency.log_y = true;
  latency.y_min = 100.0;
  latency.y_max = 1e6;
  latency.y_ticks = {{100, "100 ms"}, {1e3, "1 s"}, {1e4, "10 s"},
                     {1e5, "100 s"}, {1e6, "1000 s"}};
  svg::Panel& good = chart.panels.emplace_back();
  good.title = "Goodput, all classes (share of the GPU's time)";
  good.height = 120.0;
  good.y_min = 0.0;
  good.y_max = 1.0;
  for (std::size_t m = 0; m < kModes.size(); ++m) {
    const RunResult& r = c.runs[m];
    if (!c.ran(m)) continue;
    const auto n = static_cast<std::size_t>(std::ceil(absl::FDivDuration(r.length, kChartWidth)));
    std::vector<std::size_t> offered(n), ok(n);
    std::vector<std::vector<double>> lat(n);
    for (const Request& q : r.requests) {
      if (q.klass != klass) continue;
      const auto i = static_cast<std::size_t>(q.arrival / kChartWidth);
      ++offered[i];
      if (q.good()) ++ok[i];
      if (q.fate == Fate::kAnswered) {
        lat[i].push_back(absl::ToDoubleMilliseconds(q.latency()));
      }
    }
    svg::Series a{std::string(ModeName(kModes[m])), kModeColors[m], {}};
    svg::Series p{std::string(ModeName(kModes[m])), kModeColors[m], {}};
    for (std::size_t i = 0; i < n; ++i) {
      const double x = (static_cast<double>(i) + 0.5) * absl::ToDoubleSeconds(kChartWidth);
      a.points.push_back({x, offered[i] == 0 ? nan : 100.0 * ok[i] / offered[i]});
      p.points.push_back({x, lat[i].empty() ? nan : Quantile(lat[i], 0.99)});
    }
    avail.series.push_back(std::move(a));
    latency.series.push_back(std::move(p));
    svg::Series g{std::string(ModeName(kModes[m])), kModeColors[m], {}};
    const std::vector<double> gp = GoodputSeries(r, kChartWidth);
    for (std::size_t i = 0; i < gp.size(); ++i) {
      g.points.push_back(
          {(static_cast<double>(i) + 0.5) * absl::ToDoubleSeconds(kChartWidth), gp[i]});
    }
    good.series.push_back(std::move(g));
  }
  return chart;
}

inline std::string ClassChart(const Comparison& c, std::size_t klass) {
  return svg::Render(MakeClassChart(c, klass));
}

// The file name of class `klass`'s chart: "inference_overload_critical_plus.svg".
inline std::string ClassChartName(std::size_t klass) {
  std::string name = absl::StrCat(
      "inference_overload_",
      degrade::CriticalityName(kClasses[klass].criticality), ".svg");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) {
    return static_cast<char>(std::tolower(ch));
  });
  return name;
}

}  // namespace overload
}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_OVERLOAD_REPORT_HPP_
