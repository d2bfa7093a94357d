// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: metrics.hpp
// -----------------------------------------------------------------------------
//
// What operators see: which dependency is degraded, since when, how deep each
// request was degraded, and every level change, on the dashboards they
// already have.
//
// A `MetricsRegistry` knows every breaker, degradation manager, hot list and
// `StageMetrics` in the process: each registers itself by name when it is
// built (with `MetricsRegistry::Default()` unless its options name another
// registry) and unregisters when it is destroyed. Nothing is copied on the
// hot path: the components already keep their counters (the breaker's are
// per-thread shards, the manager's gates are atomics), and the registry reads
// them when it is scraped.
//
//   // A /metrics handler (see examples/metrics_server.cpp):
//   std::string body = degrade::MetricsRegistry::Default().RenderPrometheus();
//   // Content-Type: text/plain; version=0.0.4
//
//   // Per request, after the last stage: fallbacks by stage and reason, and
//   // the histogram of how many stages degraded.
//   degrade::StageMetrics stages({"recsys"});
//   stages.Observe(response.trace());
//
//   // Page a human when a degradation has lasted 30 minutes.
//   degrade::EscalationOptions escalation;
//   escalation.on_escalate = Page;  // (const DegradationEpisode&, Duration)
//   degrade::EscalationWatch watch(registry, escalation);
//   watch.Start(absl::Minutes(1));
//
// `RenderPrometheus()` writes the text exposition format 0.0.4 (HELP and TYPE
// lines, families sorted by name, samples sorted by labels, label values
// escaped); `RenderJson()` the same snapshot as JSON. The README lists every
// metric. A registry also carries the `EventLog` its components write their
// event lines to (stderr by default, rate-limited per key).
//
// Thread safety: everything here is thread-safe. Collectors run on the
// scraping thread, one component at a time; a component being destroyed
// waits for its own collection to finish, never for a whole scrape.
// Registrations may outlive their registry (they keep its state alive).

#ifndef DEGRADE_METRICS_HPP_
#define DEGRADE_METRICS_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/event_log.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/version.hpp"
#include "nlohmann/json.hpp"

DEGRADE_NAMESPACE_BEGIN

// Label names and values of one sample, in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge" or "histogram".
inline absl::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Whether `name` is a valid Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
inline bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Whether `name` is a valid label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting
// with "__" (reserved for Prometheus itself) and not "le" (histograms).
inline bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::string_view(name).substr(0, 2) == "__" ||
      name == "le") {
    return false;
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

namespace detail {

struct MetricSample {
  MetricLabels labels;
  double value = 0.0;
  // Histograms only: upper bounds (ascending, finite) and the count of each
  // bucket (not cumulative), one more than the bounds (the +Inf bucket).
  std::vector<double> bounds;
  std::vector<uint64_t> buckets;
};

struct MetricFamily {
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

// Shortest text that reads back as `v`; integers without a decimal point;
// "NaN", "+Inf", "-Inf" as the exposition format spells them.
inline std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// Escapes `s` for a label value (`quotes`) or a HELP text. Invalid UTF-8
// becomes U+FFFD: Prometheus refuses the whole scrape over one bad byte, and
// names can come from anywhere (a BreakerFamily key from a request).
inline void AppendEscaped(std::string* out, absl::string_view s, bool quotes) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        *out += "\xEF\xBF\xBD";
      } else {
        out->append(s.data() + i, n);
        i += n - 1;
      }
    } else if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quotes && c == '"') {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

inline void AppendLabels(std::string* out, const MetricLabels& labels,
                         absl::string_view le = absl::string_view()) {
  if (labels.empty() && le.empty()) return;
  *out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) *out += ',';
    first = false;
    absl::StrAppend(out, name, "=\"");
    AppendEscaped(out, value, /*quotes=*/true);
    *out += '"';
  }
  if (!le.empty()) {
    absl::StrAppend(out, first ? "" : ",", "le=\"", le, "\"");
  }
  *out += '}';
}

// A JSON number, or the exposition format's spelling for a non-finite value
// (JSON has no NaN or infinity).
inline nlohmann::json JsonMetricValue(double v) {
  if (!std::isfinite(v)) return FormatMetricValue(v);
  return v;
}

}  // namespace detail

// MetricWriter
//
// What a collector writes its samples into. Samples of one family may come
// from many components (every breaker writes `degrade_breaker_state`); the
// writer merges them under one HELP and TYPE. A sample that would make the
// exposition invalid (a bad metric or label name, a counter not ending in
// `_total` or with a negative or NaN value, a label name used twice, a type
// different from the family's, a label set the family already has,
// histogram bounds not ascending) is dropped and counted in
// `degrade_metrics_dropped_samples_total`.
//
// Not thread-safe: one writer per scrape.
class MetricWriter {
 public:
  void Counter(absl::string_view name, absl::string_view help,
               MetricLabels labels, double value) {
    // A counter only goes up from zero: NaN or a negative value is a bug in
    // the collector, and Prometheus would read it as a reset.
    if (name.size() < 6 || name.substr(name.size() - 6) != "_total" ||
        !(value >= 0)) {
      ++dropped_;
      return;
    }
    Add(name, help, MetricType::kCounter, Sample(std::move(labels), value));
  }

  void Gauge(absl::string_view name, absl::string_view help,
             MetricLabels labels, double value) {
    Add(name, help, MetricType::kGauge, Sample(std::move(labels), value));
  }

  // `bounds`: finite, strictly ascending upper bounds; `buckets`: the count
  // of observations in each bucket (not cumulative), bounds.size() + 1 of
  // them, the last being the +Inf bucket; `sum`: the sum of observations.
  void Histogram(absl::string_view name, absl::string_view help,
                 MetricLabels labels, absl::Span<const double> bounds,
                 absl::Span<const uint64_t> buckets, double sum) {
    bool ok = buckets.size() == bounds.size() + 1;
    for (std::size_t i = 0; ok && i < bounds.size(); ++i) {
      ok = std::isfinite(bounds[i]) && (i == 0 || bounds[i] > bounds[i - 1]);
    }
    if (!ok) {
      ++dropped_;
      return;
    }
    detail::MetricSample s = Sample(std::move(labels), sum);
    s.bounds.assign(bounds.begin(), bounds.end());
    s.buckets.assign(buckets.begin(), buckets.end());
    Add(name, help, MetricType::kHistogram, std::move(s));
  }

  // Samples dropped so far (see the class comment).
  uint64_t dropped() const { return dropped_; }

  // The name the component being collected is registered under (see
  // MetricsRegistry::Register): the value for its identifying label.
  const std::string& component() const { return component_; }

 private:
  friend class MetricsRegistry;

  static detail::MetricSample Sample(MetricLabels labels, double value) {
    detail::MetricSample s;
    s.labels = std::move(labels);
    s.value = value;
    return s;
  }

  void Add(absl::string_view name, absl::string_view help, MetricType type,
           detail::MetricSample sample) {
    if (!IsValidMetricName(name)) {
      ++dropped_;
      return;
    }
    for (std::size_t i = 0; i < sample.labels.size(); ++i) {
      bool ok = IsValidLabelName(sample.labels[i].first);
      for (std::size_t j = 0; ok && j < i; ++j) {
        ok = sample.labels[j].first != sample.labels[i].first;
      }
      if (!ok) {
        ++dropped_;
        return;
      }
    }
    auto it = families_.find(name);
    if (it == families_.end()) {
      detail::MetricFamily f;
      f.help = std::string(help);
      f.type = type;
      it = families_.emplace(std::string(name), std::move(f)).first;
    } else if (it->second.type != type) {
      ++dropped_;
      return;
    } else if (it->second.help.empty()) {
      it->second.help = std::string(help);
    }
    it->second.samples.push_back(std::move(sample));
  }

  // Sorts every family's samples by labels and drops repeated label sets,
  // keeping the first written.
  void Finish() {
    for (auto& [name, family] : families_) {
      auto& samples = family.samples;
      std::stable_sort(
          samples.begin(), samples.end(),
          [](const detail::MetricSample& a, const detail::MetricSample& b) {
            return a.labels < b.labels;
          });
      const auto last = std::unique(
          samples.begin(), samples.end(),
          [](const detail::MetricSample& a, const detail::MetricSample& b) {
            return a.labels == b.labels;
          });
      dropped_ += static_cast<uint64_t>(samples.end() - last);
      samples.erase(last, samples.end());
    }
  }

  std::map<std::string, detail::MetricFamily, std::less<>> families_;
  uint64_t dropped_ = 0;
  std::string component_;
};

// DegradationEpisode
//
// A degradation in progress, as components report it to `EscalationWatch`
// and to the `*_degraded_seconds` gauges.
struct DegradationEpisode {
  // "breaker" (not closed), "stage" (served fallbacks since its last normal
  // answer) or "level" (a manager at or above `level`).
  std::string kind;
  // The breaker, stage or manager.
  std::string name;
  // For "stage": the StageMetrics it was seen by. Otherwise `name`.
  std::string source;
  // For "level": the level this episode is about (the manager has been at
  // `level` or higher since `since`); 0 otherwise.
  int level = 0;
  absl::Time since;
};

// MetricsRegistry
//
// See the file comment. Neither copyable nor movable.
class MetricsRegistry {
 public:
  using Collector = std::function<void(MetricWriter&)>;
  // Receives the component's registered name (see Register) and appends
  // its episodes.
  using EpisodeProbe = std::function<void(
      const std::string& name, std::vector<DegradationEpisode>* out)>;

  // `log` configures the event log of the components registered here.
  explicit MetricsRegistry(EventLogOptions log = {})
      : state_(std::make_shared<State>(std::move(log))) {}

  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The process-wide registry every component uses unless told otherwise.
  // Never destroyed, so components with static storage duration can
  // unregister from it at exit.
  static MetricsRegistry& Default() {
    static MetricsRegistry* const registry = new MetricsRegistry();
    return *registry;
  }

  class Registration;

  // Registers a component of `kind` ("breaker", "manager", ...) named
  // `name`. The registration's `name()` is `name`, or `name#2`, `name#3`, ...
  // when a live component of the same kind already has it, so that every
  // series stays unique. `collect` writes the component's samples at each
  // scrape; `probe` (optional) reports its degradations in progress. Both
  // run on the scraping thread, never concurrently with each other for one
  // component, and never after the registration is destroyed or reset.
  // They run under that component's entry lock, so they must be quick (the
  // component's destruction waits for them) and must not call this
  // registry's Render*/Episodes (self-deadlock) or destroy the component.
  Registration Register(absl::string_view kind, absl::string_view name,
                        Collector collect, EpisodeProbe probe = nullptr);

  // Every registered component's samples in the Prometheus text exposition
  // format 0.0.4. Serve it with `Content-Type: text/plain; version=0.0.4`.
  std::string RenderPrometheus() const {
    MetricWriter w = Collect();
    std::string out;
    for (const auto& [name, family] : w.families_) {
      out += "# HELP ";
      out += name;
      out += ' ';
      detail::AppendEscaped(&out, family.help, /*quotes=*/false);
      absl::StrAppend(&out, "\n# TYPE ", name, " ", MetricTypeName(family.type),
                      "\n");
      for (const detail::MetricSample& s : family.samples) {
        if (family.type != MetricType::kHistogram) {
          out += name;
          detail::AppendLabels(&out, s.labels);
          absl::StrAppend(&out, " ", detail::FormatMetricValue(s.value), "\n");
          continue;
        }
        uint64_t cumulative = 0;
        for (std::size_t i = 0; i < s.buckets.size(); ++i) {
          cumulative += s.buckets[i];
          const std::string le = i < s.bounds.size()
                                     ? detail::FormatMetricValue(s.bounds[i])
                                     : std::string("+Inf");
          absl::StrAppend(&out, name, "_bucket");
          detail::AppendLabels(&out, s.labels, le);
          absl::StrAppend(&out, " ", cumulative, "\n");
        }
        absl::StrAppend(&out, name, "_sum");
        detail::AppendLabels(&out, s.labels);
        absl::StrAppend(&out, " ", detail::FormatMetricValue(s.value), "\n");
        absl::StrAppend(&out, name, "_count");
        detail::AppendLabels(&out, s.labels);
        absl::StrAppend(&out, " ", cumulative, "\n");
      }
    }
    return out;
  }

  // The same snapshot as one JSON object:
  //   {"metrics":[{"name":..., "type":..., "help":...,
  //                "samples":[{"labels":{...}, "value":...}, ...]}, ...]}
  // Histogram samples have "buckets" ([{"le":..., "count":cumulative}], the
  // last with "le":"+Inf"), "sum" and "count" instead of "value".
  // Non-finite values are strings ("NaN", "+Inf", "-Inf").
  std::string RenderJson() const {
    MetricWriter w = Collect();
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& [name, family] : w.families_) {
      nlohmann::json samples = nlohmann::json::array();
      for (const detail::MetricSample& s : family.samples) {
        nlohmann::json labels = nlohmann::json::object();
        for (const auto& [k, v] : s.labels) labels[k] = v;
        nlohmann::json sample = {{"labels", std::move(labels)}};
        if (family.type != MetricType::kHistogram) {
          sample["value"] = detail::JsonMetricValue(s.value);
        } else {
          nlohmann::json buckets = nlohmann::json::array();
          uint64_t cumulative = 0;
          for (std::size_t i = 0; i < s.buckets.size(); ++i) {
            cumulative += s.buckets[i];
            buckets.push_back(
                {{"le", i < s.bounds.size() ? nlohmann::json(s.bounds[i])
                                            : nlohmann::json("+Inf")},
                 {"count", cumulative}});
          }
          sample["buckets"] = std::move(buckets);
          sample["sum"] = detail::JsonMetricValue(s.value);
          sample["count"] = cumulative;
        }
        samples.push_back(std::move(sample));
      }
      metrics.push_back({{"name", name},
                         {"type", MetricTypeName(family.type)},
                         {"help", family.help},
                         {"samples", std::move(samples)}});
    }
    nlohmann::json out = {{"metrics", std::move(metrics)}};
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  // Every degradation in progress that registered components report.
  std::vector<DegradationEpisode> Episodes() const {
    std::vector<DegradationEpisode> out;
    for (const std::shared_ptr<Entry>& e : Snapshot()) {
      detail::MutexLock lock(&e->mu);
      if (e->alive && e->probe) detail::CallQuietly(e->probe, e->name, &out);
    }
    return out;
  }

  // The names registered under `kind`, sorted.
  std::vector<std::string> Names(absl::string_view kind) const {
    std::vector<std::string> out;
    detail::MutexLock lock(&state_->mu);
    for (const auto& e : state_->entries) {
      if (e->kind == kind) out.push_back(e->name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The event log of the components registered here.
  EventLog& log() const { return state_->log; }

 private:
  struct Entry {
    std::string kind;
    std::string name;
    detail::Mutex mu;
    bool alive ABSL_GUARDED_BY(mu) = true;
    Collector collect ABSL_GUARDED_BY(mu);
    EpisodeProbe probe ABSL_GUARDED_BY(mu);
  };

  struct State {
    explicit State(EventLogOptions options) : log(std::move(options)) {}
    mutable EventLog log;
    detail::Mutex mu;
    std::vector<std::shared_ptr<Entry>> entries ABSL_GUARDED_BY(mu);

    void Remove(const std::shared_ptr<Entry>& entry) {
      {
        detail::MutexLock lock(&mu);
        entries.erase(std::remove(entries.begin(), entries.end(), entry),
                      entries.end());
      }
      // Waits for a scrape collecting this entry right now.
      detail::MutexLock lock(&entry->mu);
      entry->alive = false;
      entry->collect = nullptr;
      entry->probe = nullptr;
    }
  };

  std::vector<std::shared_ptr<Entry>> Snapshot() const {
    detail::MutexLock lock(&state_->mu);
    return state_->entries;
  }

  MetricWriter Collect() const {
    MetricWriter w;
    for (const std::shared_ptr<Entry>& e : Snapshot()) {
      detail::MutexLock lock(&e->mu);
      if (!e->alive || !e->collect) continue;
      w.component_ = e->name;
      detail::CallQuietly(e->collect, std::ref(w));
    }
    w.component_.clear();
    const EventLog& log = state_->log;
    constexpr absl::string_view kLogLinesHelp =
        "Event log lines written, and suppressed by the per-key rate limit.";
    w.Counter("degrade_log_lines_total", kLogLinesHelp, {{"result", "written"}},
              static_cast<double>(log.written_total()));
    w.Counter("degrade_log_lines_total", kLogLinesHelp,
              {{"result", "suppressed"}},
              static_cast<double>(log.suppressed_total()));
    w.Counter("degrade_log_key_overflows_total",
              "Event log keys that found every key slot in use and share one "
              "rate limit (raise EventLogOptions::max_keys).",
              {}, static_cast<double>(log.key_overflows()));
    w.Finish();
    // Counted after Finish() so that it includes duplicates.
    w.Counter("degrade_metrics_dropped_samples_total",
              "Samples left out of this exposition because they would have "
              "made it invalid (see MetricWriter).",
              {}, static_cast<double>(w.dropped()));
    return w;
  }

  std::shared_ptr<State> state_;
};

// MetricsRegistry::Registration
//
// A component's place in a registry; unregisters on destruction or
// `Reset()`, after waiting for a collection of this component in progress.
// Move-only. Not thread-safe itself (one owner).
class MetricsRegistry::Registration {
 public:
  Registration() = default;
  Registration(Registration&& other) noexcept = default;
  Registration& operator=(Registration&& other) noexcept {
    if (this != &other) {
      Reset();
      state_ = std::move(other.state_);
      entry_ = std::move(other.entry_);
    }
    return *this;
  }
  ~Registration() { Reset(); }

  void Reset() {
    if (state_ != nullptr && entry_ != nullptr) state_->Remove(entry_);
    state_.reset();
    entry_.reset();
  }

  // The unique name the component is exported under; empty once reset.
  const std::string& name() const {
    static const std::string* const kEmpty = new std::string();
    return entry_ != nullptr ? entry_->name : *kEmpty;
  }

  // The registry's event log; REQUIRES: registered (not reset).
  EventLog& log() const { return state_->log; }

 private:
  friend class MetricsRegistry;
  std::shared_ptr<State> state_;
  std::shared_ptr<Entry> entry_;
};

inline MetricsRegistry::Registration MetricsRegistry::Register(
    absl::string_view kind, absl::string_view name, Collector collect,
    EpisodeProbe probe) {
  auto entry = std::make_shared<Entry>();
  entry->kind = std::string(kind);
  {
    detail::MutexLock entry_lock(&entry->mu);
    entry->collect = std::move(collect);
    entry->probe = std::move(probe);
  }
  {
    detail::MutexLock lock(&state_->mu);
    std::string unique(name);
    for (int n = 2;; ++n) {
      bool taken = false;
      for (const auto& e : state_->entries) {
        taken = taken || (e->kind == entry->kind && e->name == unique);
      }
      if (!taken) break;
      unique = absl::StrCat(name, "#", n);
    }
    entry->name = std::move(unique);
    state_->entries.push_back(entry);
  }
  Registration r;
  r.state_ = state_;
  r.entry_ = std::move(entry);
  return r;
}

// ---- Per-request stage metrics ----

// StageMetricsOptions
struct StageMetricsOptions {
  // Names the request path (the `pipeline` label).
  std::string name = "pipeline";
  // nullptr means MetricsRegistry::Default().
  MetricsRegistry* registry = nullptr;
  // For the degraded-since times and log lines; nullptr means the real
  // clock. Must outlive the StageMetrics.
  const Clock* clock = nullptr;
};

// StageMetrics
//
// What the end of each request reports: `Observe(trace)` counts a fallback
// for every stage in the request's trace (by stage and reason), adds the
// trace's depth to the per-request degradation-depth histogram, writes a
// rate-limited `fallback_served` log line per stage and reason, and tracks
// since when each stage has been degrading (from its first degraded request
// after a normal one): the `degrade_stage_degraded_seconds` gauge and the
// "stage" episodes of `EscalationWatch`.
//
// Up to `kMaxStages` distinct stage names are tracked; later names are
// counted under the stage "_other", and degradations the trace could not
// name (`dropped()`) under "_unnamed".
//
// Thread-safe. `Observe` takes no lock once its stages, and the reasons they
// fail with, are known (or once `kMaxStages` names are): relaxed atomic adds
// and loads, plus, for each degraded stage, the event log's rate limiter (a
// coarse clock read and two relaxed loads when the key's window is full).
// Neither copyable nor movable.
class StageMetrics {
 public:
  static constexpr std::size_t kMaxStages = 32;
  static constexpr int kDepthBuckets = 9;  // 0..8 stages; then +Inf

  explicit StageMetrics(StageMetricsOptions options = {})
      : name_(std::move(options.name)),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()) {
    MetricsRegistry& registry = options.registry != nullptr
                                    ? *options.registry
                                    : MetricsRegistry::Default();
    registration_ = registry.Register(
        "pipeline", name_, [this](MetricWriter& w) { Collect(w); },
        [this](const std::string& name, std::vector<DegradationEpisode>* out) {
          Probe(name, out);
        });
  }

  StageMetrics(const StageMetrics&) = delete;
  StageMetrics& operator=(const StageMetrics&) = delete;

  // Records one finished request that ran every stage this pipeline has
  // seen. Call it once per request with the trace of its final result. A
  // known stage missing from the trace answered normally, which ends its
  // degradation episode (unless the trace dropped entries it could not name:
  // one of them might be that stage).
  void Observe(const DegradationTrace& trace) { ObserveImpl(trace, nullptr); }

  // As above, for a request that ran only the stages in `ran` (say, a
  // re-rank stage that only some requests reach): a stage not in `ran`
  // tells nothing about its health, so its episode goes on.
  void Observe(const DegradationTrace& trace,
               absl::Span<const absl::string_view> ran) {
    ObserveImpl(trace, &ran);
  }

  // Fallbacks counted for `stage` with `reason`.
  uint64_t fallbacks(absl::string_view stage, DegradeReason reason) const {
    const auto r = static_cast<std::size_t>(reason);
    if (r >= kReasons) return 0;
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == stage) {
        return slots_[i].fallbacks[r].load(std::memory_order_relaxed);
      }
    }
    return 0;
  }

  // Requests observed with exactly `depth` degraded stages (`kDepthBuckets`
  // or more are counted together).
  uint64_t requests_at_depth(std::size_t depth) const {
    return depth_[std::min<std::size_t>(depth, kDepthBuckets)].load(
        std::memory_order_relaxed);
  }

  const std::string& name() const { return registration_.name(); }

 private:
  static constexpr std::size_t kReasons =
      static_cast<std::size_t>(DegradeReason::kInvalid) + 1;
  static constexpr int64_t kNotDegraded = std::numeric_limits<int64_t>::min();
  static_assert(kMaxStages <= 64, "Observe() keeps one bit per stage");

  struct Slot {
    std::string name;  // written before the slot is published
    std::array<std::atomic<uint64_t>, kReasons> fallbacks{};
    std::atomic<int64_t> degraded_since{kNotDegraded};
    // log_keys[r] is written once, under mu_, before key_ready[r] is set.
    std::array<EventLog::Key, kReasons> log_keys{};
    std::array<std::atomic<bool>, kReasons> key_ready{};
  };

  int64_t NowNanos() const { return absl::ToUnixNanos(clock_->CoarseNow()); }

  void ObserveImpl(const DegradationTrace& trace,
                   const absl::Span<const absl::string_view>* ran) {
    const std::size_t depth = trace.depth();
    depth_[std::min<std::size_t>(depth, kDepthBuckets)].fetch_add(
        1, std::memory_order_relaxed);
    depth_sum_.fetch_add(depth, std::memory_order_relaxed);

    uint64_t seen = 0;  // bit i: slot i degraded in this request
    for (const TraceEntry& e : trace.entries()) {
      Slot* slot = FindOrAdd(e.stage());
      const auto reason = static_cast<std::size_t>(e.reason());
      if (reason >= kReasons) continue;
      slot->fallbacks[reason].fetch_add(1, std::memory_order_relaxed);
      seen |= uint64_t{1} << static_cast<std::size_t>(slot - slots_.data());
      int64_t since = slot->degraded_since.load(std::memory_order_relaxed);
      if (since == kNotDegraded) {
        slot->degraded_since.compare_exchange_strong(since, NowNanos(),
                                                     std::memory_order_relaxed);
      }
      LogFallback(*slot, e.reason());
    }
    if (trace.dropped() > 0) {
      unnamed_.fetch_add(trace.dropped(), std::memory_order_relaxed);
      return;  // an unnamed degradation could be any stage: end no episode
    }
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if ((seen >> i) & 1u) continue;
      if (ran != nullptr &&
          std::find(ran->begin(), ran->end(), slots_[i].name) == ran->end()) {
        continue;
      }
      std::atomic<int64_t>& since = slots_[i].degraded_since;
      if (since.load(std::memory_order_relaxed) != kNotDegraded) {
        since.store(kNotDegraded, std::memory_order_relaxed);
      }
    }
  }

  Slot* FindOrAdd(absl::string_view stage) {
    std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == stage) return &slots_[i];
    }
    // Full: every unknown name is "_other", which holds the last slot.
    if (n == kMaxStages) return &slots_[kMaxStages - 1];
    detail::MutexLock lock(&mu_);
    n = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == stage) return &slots_[i];
    }
    if (n == kMaxStages - 1 && stage != "_other")
      return FindOrAddLocked("_other", n);
    if (n == kMaxStages) return &slots_[kMaxStages - 1];
    return FindOrAddLocked(stage, n);
  }

  Slot* FindOrAddLocked(absl::string_view stage, std::size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (std::size_t i = 0; i < n; ++i) {
      if (slots_[i].name == stage) return &slots_[i];
    }
    Slot& slot = slots_[n];
    slot.name = std::string(stage);
    count_.store(n + 1, std::memory_order_release);
    return &slot;
  }

  void LogFallback(Slot& slot, DegradeReason reason) {
    const auto r = static_cast<std::size_t>(reason);
    // Keys are made for the reasons a stage actually fails with, not all
    // nine up front: the log keeps a bounded number of keys.
    if (!slot.key_ready[r].load(std::memory_order_acquire)) {
      detail::MutexLock lock(&mu_);
      if (!slot.key_ready[r].load(std::memory_order_relaxed)) {
        slot.log_keys[r] = registration_.log().GetKey(
            absl::StrCat("fallback/", registration_.name(), "/", slot.name, "/",
                         ReasonName(reason)));
        slot.key_ready[r].store(true, std::memory_order_release);
      }
    }
    registration_.log().Emit(slot.log_keys[r], [&] {
      return absl::StrCat(R"({"time":")", detail::JsonTime(clock_->Now()),
                          R"(","event":"fallback_served","pipeline":")",
                          detail::JsonEscape(registration_.name()),
                          R"(","stage":")", detail::JsonEscape(slot.name),
                          R"(","reason":")", ReasonName(reason), R"("})");
    });
  }

  static constexpr absl::string_view kFallbacksHelp =
      "Requests for which a stage served its fallback, by stage and reason.";

  void Collect(MetricWriter& w) const {
    const std::string& pipeline = w.component();
    const std::size_t n = count_.load(std::memory_order_acquire);
    const int64_t now = NowNanos();
    for (std::size_t i = 0; i < n; ++i) {
      const Slot& s = slots_[i];
      for (std::size_t r = 1; r < kReasons; ++r) {
        const uint64_t v = s.fallbacks[r].load(std::memory_order_relaxed);
        if (v == 0) continue;
        w.Counter("degrade_fallbacks_total", kFallbacksHelp,
                  {{"pipeline", pipeline},
                   {"stage", s.name},
                   {"reason",
                    std::string(ReasonName(static_cast<DegradeReason>(r)))}},
                  static_cast<double>(v));
      }
      const int64_t since = s.degraded_since.load(std::memory_order_relaxed);
      w.Gauge("degrade_stage_degraded_seconds",
              "How long the stage has been serving fallbacks without a "
              "normal answer in between; 0 when it is not degraded.",
              {{"pipeline", pipeline}, {"stage", s.name}},
              since == kNotDegraded
                  ? 0.0
                  : std::max(0.0, static_cast<double>(now - since) / 1e9));
    }
    const uint64_t unnamed = unnamed_.load(std::memory_order_relaxed);
    if (unnamed > 0) {
      w.Counter("degrade_fallbacks_total", kFallbacksHelp,
                {{"pipeline", pipeline},
                 {"stage", "_unnamed"},
                 {"reason", "unknown"}},
                static_cast<double>(unnamed));
    }
    std::array<double, kDepthBuckets> bounds{};
    std::array<uint64_t, kDepthBuckets + 1> buckets{};
    for (int i = 0; i <= kDepthBuckets; ++i) {
      if (i < kDepthBuckets) bounds[static_cast<std::size_t>(i)] = i;
      buckets[static_cast<std::size_t>(i)] =
          depth_[static_cast<std::size_t>(i)].load(std::memory_order_relaxed);
    }
    w.Histogram(
        "degrade_request_degraded_stages",
        "Stages that served a fallback, per request.", {{"pipeline", pipeline}},
        bounds, buckets,
        static_cast<double>(depth_sum_.load(std::memory_order_relaxed)));
  }

  void Probe(const std::string& pipeline,
             std::vector<DegradationEpisode>* out) const {
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t since =
          slots_[i].degraded_since.load(std::memory_order_relaxed);
      if (since == kNotDegraded) continue;
      DegradationEpisode e;
      e.kind = "stage";
      e.name = slots_[i].name;
      e.source = pipeline;
      e.since = absl::FromUnixNanos(since);
      out->push_back(std::move(e));
    }
  }

  const std::string name_;
  const Clock* const clock_;
  std::array<Slot, kMaxStages> slots_;
  std::atomic<std::size_t> count_{0};
  detail::Mutex mu_;
  std::array<std::atomic<uint64_t>, kDepthBuckets + 1> depth_{};
  std::atomic<uint64_t> depth_sum_{0};
  std::atomic<uint64_t> unnamed_{0};
  // Last: unregisters (waiting for a scrape of this object) before the
  // members a collection reads are destroyed.
  MetricsRegistry::Registration registration_;
};

// ---- Escalation ----

// EscalationOptions
struct EscalationOptions {
  // How long a degradation may last before a human is called: the article's
  // 30 minutes.
  absl::Duration after = absl::Minutes(30);
  // A manager level at or above this is a degradation.
  int min_level = 1;
  // Whether breakers that are not closed, and stages serving fallbacks,
  // count too.
  bool breakers = true;
  bool stages = true;
  // Called once per episode that lasts longer than `after`, with how long it
  // had lasted when it was noticed. Runs on the thread calling `Check()`
  // (the watch's own thread after `Start`). A throw is swallowed.
  std::function<void(const DegradationEpisode&, absl::Duration lasted)>
      on_escalate;
  // Must be the clock the watched components use; nullptr means the real
  // clock.
  const Clock* clock = nullptr;
};

// EscalationWatch
//
// Calls `on_escalate` when a degradation (a stage degraded, a breaker not
// closed, or a manager at or above `min_level`) has lasted longer than
// `after`, once per episode (an episode that ends and starts again is a new
// one), and writes an `escalation` line to the registry's event log.
// `Check()` looks now; `Start(period)` looks every period on a thread of its
// own.
//
// Thread-safe. REQUIRES: the registry outlives the watch.
class EscalationWatch {
 public:
  EscalationWatch(MetricsRegistry& registry, EscalationOptions options)
      : registry_(&registry),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock
                                         : &RealClock::Instance()),
        log_key_(registry.log().GetKey("escalation")) {}

  EscalationWatch(const EscalationWatch&) = delete;
  EscalationWatch& operator=(const EscalationWatch&) = delete;
  ~EscalationWatch() { Stop(); }

  // Fires the callback for every episode past `after` that has not fired
  // yet; returns how many fired.
  int Check() {
    const absl::Time now = clock_->Now();
    std::vector<DegradationEpisode> due;
    std::vector<absl::Duration> lasted;
    {
      detail::MutexLock lock(&mu_);
      std::map<std::string, absl::Time> still;
      for (DegradationEpisode& e : registry_->Episodes()) {
        if (!Watched(e)) continue;
        const std::string key =
            absl::StrCat(e.kind, "/", e.source, "/", e.name);
        auto it = fired_.find(key);
        const bool already = it != fired_.end() && it->second == e.since;
        if (already) {
          still.emplace(key, e.since);
        } else if (now - e.since > options_.after) {
          still.emplace(key, e.since);
          lasted.push_back(now - e.since);
          due.push_back(std::move(e));
        }
      }
      fired_ = std::move(still);
    }
    for (std::size_t i = 0; i < due.size(); ++i) {
      const DegradationEpisode& e = due[i];
      registry_->log().Emit(log_key_, [&] {
        return absl::StrCat(
            R"({"time":")", detail::JsonTime(now),
            R"(","event":"escalation","kind":")", detail::JsonEscape(e.kind),
            R"(","name":")", detail::JsonEscape(e.name), R"(","source":")",
            detail::JsonEscape(e.source), R"(","level":)", e.level,
            R"(,"since":")", detail::JsonTime(e.since),
            R"(","lasted_seconds":)", absl::ToDoubleSeconds(lasted[i]), "}");
      });
      if (options_.on_escalate) {
        detail::CallQuietly(options_.on_escalate, e, lasted[i]);
      }
    }
    return static_cast<int>(due.size());
  }

  // Runs Check() now and every `period` until Stop() or destruction.
  void Start(absl::Duration period) {
    worker_.Restart(period, [this] { Check(); });
  }
  void Stop() { worker_.Stop(); }

 private:
  bool Watched(const DegradationEpisode& e) const {
    if (e.kind == "level") return e.level == std::max(1, options_.min_level);
    if (e.kind == "breaker") return options_.breakers;
    if (e.kind == "stage") return options_.stages;
    return true;
  }

  MetricsRegistry* const registry_;
  const EscalationOptions options_;
  const Clock* const clock_;
  const EventLog::Key log_key_;
  detail::Mutex mu_;
  // Episodes that fired, by key, with their start: fire once per start.
  std::map<std::string, absl::Time> fired_ ABSL_GUARDED_BY(mu_);
  detail::PeriodicWorker worker_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_METRICS_HPP_
