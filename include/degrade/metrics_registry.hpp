// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: metrics_registry.hpp
// -----------------------------------------------------------------------------
//
// What operators see: which dependency is degraded, since when, and every
// level change, on the dashboards and in the logs they already have.
//
// A `MetricsRegistry` is the `Telemetry` degrade ships (telemetry.hpp).
// Breakers, degradation managers, hot lists and the overload-control
// components (admission, queue, limiter) attach to it when they are
// built (their options' `metrics`, or the process default) and detach when
// destroyed; `StageMetrics` and any custom component register a collector
// with `Register()`. Nothing is copied on the hot path: the components keep
// their counters anyway (the breaker's per-thread shards, the manager's
// atomics), and the registry reads them when it is scraped.
//
//   degrade::MetricsRegistry registry;            // or ::Default()
//   degrade::SetDefaultTelemetry(&registry);      // every component from now
//   degrade::CircuitBreaker<Features> features(settings);
//   ...
//   // A /metrics handler (examples/metrics_server.cpp):
//   std::string body = registry.RenderPrometheus();
//   // Content-Type: text/plain; version=0.0.4
//   for (const degrade::DegradationEpisode& e : registry.Episodes()) { ... }
//
// `RenderPrometheus()` writes the text exposition format 0.0.4 (HELP and TYPE
// lines, families sorted by name, samples sorted by labels, label values
// escaped); `RenderJson()` the same snapshot as JSON. docs/metrics.md lists
// every series. A registry also carries the `EventLog` that the attached
// components' event lines go to (stderr by default, rate-limited per key).
//
// Thread safety: everything here is thread-safe. Collectors run on the
// scraping thread, one component at a time; a component being destroyed
// waits for its own collection to finish, never for a whole scrape.
// Registrations may outlive their registry (they keep its state alive).

#ifndef DEGRADE_METRICS_REGISTRY_HPP_
#define DEGRADE_METRICS_REGISTRY_HPP_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_episode.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/metrics/component_metrics.hpp"
#include "degrade/detail/metrics/component_writers.hpp"
#include "degrade/detail/metrics/hedge_metrics.hpp"
#include "degrade/detail/metrics/overload_metrics.hpp"
#include "degrade/detail/metrics/registry_attachments.hpp"
#include "degrade/detail/metrics/retry_metrics.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// MetricsRegistry
//
// See the file comment. Neither copyable nor movable. Thread-safe.
class MetricsRegistry : public Telemetry {
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

  // A process-wide registry, for services that want one (make it every
  // component's telemetry with SetDefaultTelemetry(&Default())). Never
  // destroyed, so components with static storage duration can unregister
  // from it at exit.
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
  // component's destruction waits for them) and must not destroy the
  // component. They may call this registry's Render*/Episodes: the nested
  // call leaves out the components whose collector or probe this thread is
  // running (it would wait for its own entry lock). A collector that throws
  // is stopped there: the samples it wrote before the throw stay, the rest
  // are missing, and the scrape counts one more
  // degrade_metrics_dropped_samples_total (the other components go on).
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
          cumulative = AddSaturating(cumulative, s.buckets[i]);
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
  // Non-finite values are strings ("NaN", "+Inf", "-Inf"), and invalid UTF-8
  // in a name becomes U+FFFD: the document is always valid JSON.
  std::string RenderJson() const {
    MetricWriter w = Collect();
    std::string out = R"({"metrics":[)";
    bool first_family = true;
    for (const auto& [name, family] : w.families_) {
      absl::StrAppend(&out, first_family ? "" : ",", R"({"name":")",
                      detail::JsonEscape(name), R"(","type":")",
                      MetricTypeName(family.type), R"(","help":")",
                      detail::JsonEscape(family.help), R"(","samples":[)");
      first_family = false;
      bool first_sample = true;
      for (const detail::MetricSample& s : family.samples) {
        absl::StrAppend(&out, first_sample ? "" : ",", R"({"labels":{)");
        first_sample = false;
        bool first_label = true;
        for (const auto& [k, v] : s.labels) {
          absl::StrAppend(&out, first_label ? "" : ",", "\"",
                          detail::JsonEscape(k), R"(":")",
                          detail::JsonEscape(v), "\"");
          first_label = false;
        }
        out += "}";
        if (family.type != MetricType::kHistogram) {
          absl::StrAppend(&out, R"(,"value":)", JsonNumber(s.value), "}");
          continue;
        }
        out += R"(,"buckets":[)";
        uint64_t cumulative = 0;
        for (std::size_t i = 0; i < s.buckets.size(); ++i) {
          cumulative = AddSaturating(cumulative, s.buckets[i]);
          absl::StrAppend(&out, i == 0 ? "" : ",", R"({"le":)",
                          i < s.bounds.size() ? JsonNumber(s.bounds[i])
                                              : std::string(R"("+Inf")"),
                          R"(,"count":)", cumulative, "}");
        }
        absl::StrAppend(&out, R"(],"sum":)", JsonNumber(s.value),
                        R"(,"count":)", cumulative, "}");
      }
      out += "]}";
    }
    out += "]}";
    return out;
  }

  // Every degradation in progress that registered components report.
  std::vector<DegradationEpisode> Episodes() const {
    std::vector<DegradationEpisode> out;
    for (const std::shared_ptr<Entry>& e : Snapshot()) {
      if (detail::CallbackScope::Inside(e.get())) continue;  // see Register
      detail::MutexLock lock(&e->mu);
      const detail::CallbackScope in_probe(e.get());
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

  // ---- Telemetry: what the components attach to ----

  // Exports the breaker's degrade_breaker_* series and "breaker" episodes,
  // and writes a breaker_state_change line per transition.
  std::unique_ptr<BreakerListener> AttachBreaker(
      const BreakerView& breaker) override;
  // Exports degrade_level* and the "level" episodes, and writes the
  // manager's event lines unless it has a log of its own.
  std::unique_ptr<ManagerListener> AttachManager(
      const ManagerView& manager) override;
  // Exports degrade_hot_list_*.
  std::unique_ptr<TelemetryAttachment> AttachHotList(
      const HotListView& hot_list) override;
  // Export degrade_admission_*, degrade_queue_* (the sojourn a histogram)
  // and degrade_limiter_*; registered under the kinds "admission", "queue"
  // and "limiter", so names are made unique per kind as for breakers.
  std::unique_ptr<TelemetryAttachment> AttachAdmission(
      const AdmissionView& admission) override;
  std::unique_ptr<TelemetryAttachment> AttachQueue(
      const QueueView& queue) override;
  std::unique_ptr<TelemetryAttachment> AttachLimiter(
      const LimiterView& limiter) override;
  // Export degrade_retry_budget_*, degrade_retry_* (attempts a histogram)
  // and degrade_throttle_*, under the kinds "budget", "retrier", "throttle".
  std::unique_ptr<TelemetryAttachment> AttachRetryBudget(
      const RetryBudgetView& budget) override;
  std::unique_ptr<TelemetryAttachment> AttachRetrier(
      const RetrierView& retrier) override;
  std::unique_ptr<TelemetryAttachment> AttachThrottler(
      const ThrottleView& throttler) override;
  // Exports degrade_hedge_* under the kind "hedge".
  std::unique_ptr<TelemetryAttachment> AttachHedge(
      const HedgeView& hedge) override;
  // Every component of the generic seam whose stats type the registry
  // knows (detail/metrics/component_writers.hpp lists them and the series
  // each exports, docs/metrics.md names them); null for any other.
  std::unique_ptr<TelemetryAttachment> AttachComponent(
      const ComponentView& view) override;
  // Itself: StageMetrics registers here when this registry is its
  // telemetry (explicitly or as the process default).
  MetricsRegistry* AsMetricsRegistry() override { return this; }

 private:
  // A histogram's running bucket total, stuck at 2^64-1: wrapped, a later
  // `le` would count fewer than an earlier one.
  static uint64_t AddSaturating(uint64_t total, uint64_t bucket) {
    return bucket > std::numeric_limits<uint64_t>::max() - total
               ? std::numeric_limits<uint64_t>::max()
               : total + bucket;
  }

  // Runs `collect` into `w`; false if it threw.
  static bool Collected(const Collector& collect, MetricWriter& w) {
    return detail::InvokeOr(
        [&] {
          collect(w);
          return true;
        },
        [](absl::string_view) { return false; });
  }

  // A JSON number, or the exposition format's spelling of a non-finite
  // value as a string (JSON has no NaN or infinity).
  static std::string JsonNumber(double v) {
    const std::string text = detail::FormatMetricValue(v);
    return std::isfinite(v) ? text : absl::StrCat("\"", text, "\"");
  }

  struct Entry {
    std::string kind;
    std::string name;
    // `name` is `base`, or `base#suffix` when suffix >= 2.
    std::string base;
    int suffix = 1;
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
    // (kind, name) of every live entry; and per (kind, base) with live
    // entries, the suffixes handed out: the highest, and those freed since,
    // so that registering or freeing the n-th "recall" costs a few
    // logarithmic lookups, however many there are and in whatever order
    // they come and go.
    struct Suffixes {
      int high = 1;
      std::set<int> freed;
      std::size_t live = 0;
    };
    std::set<std::pair<std::string, std::string>> taken ABSL_GUARDED_BY(mu);
    std::map<std::pair<std::string, std::string>, Suffixes> families
        ABSL_GUARDED_BY(mu);

    void Remove(const std::shared_ptr<Entry>& entry) {
      {
        detail::MutexLock lock(&mu);
        entries.erase(std::remove(entries.begin(), entries.end(), entry),
                      entries.end());
        taken.erase({entry->kind, entry->name});
        auto it = families.find({entry->kind, entry->base});
        if (it != families.end()) {
          if (entry->suffix >= 2) it->second.freed.insert(entry->suffix);
          if (--it->second.live == 0) families.erase(it);
        }
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
      if (detail::CallbackScope::Inside(e.get())) continue;  // see Register
      detail::MutexLock lock(&e->mu);
      const detail::CallbackScope in_collector(e.get());
      if (!e->alive || !e->collect) continue;
      w.component_ = e->name;
      // A collector that throws loses its remaining samples; counting it as
      // a dropped sample keeps the loss visible on the scrape itself.
      if (!Collected(e->collect, w)) ++w.dropped_;
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
  entry->base = std::string(name);
  {
    detail::MutexLock lock(&state_->mu);
    std::string unique(name);
    State::Suffixes& family = state_->families[{entry->kind, entry->base}];
    if (state_->taken.count({entry->kind, unique}) != 0) {
      // The lowest freed suffix, else the next new one; skipping any that
      // a component registered by that very name ("recall#2").
      for (;;) {
        int n;
        if (!family.freed.empty()) {
          n = *family.freed.begin();
          family.freed.erase(family.freed.begin());
        } else {
          n = ++family.high;
        }
        unique = absl::StrCat(name, "#", n);
        if (state_->taken.count({entry->kind, unique}) == 0) {
          entry->suffix = n;
          break;
        }
      }
    }
    ++family.live;
    state_->taken.emplace(entry->kind, unique);
    entry->name = std::move(unique);
    state_->entries.push_back(entry);
  }
  Registration r;
  r.state_ = state_;
  r.entry_ = std::move(entry);
  return r;
}

// ---- Implementation details ----

inline std::unique_ptr<BreakerListener> MetricsRegistry::AttachBreaker(
    const BreakerView& breaker) {
  return std::make_unique<detail::RegistryBreakerListener<MetricsRegistry>>(
      *this, breaker);
}

inline std::unique_ptr<ManagerListener> MetricsRegistry::AttachManager(
    const ManagerView& manager) {
  return std::make_unique<detail::RegistryManagerListener<MetricsRegistry>>(
      *this, manager);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachHotList(
    const HotListView& hot_list) {
  return detail::AttachView(*this, "hot_list", hot_list,
                            detail::WriteHotListMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachAdmission(
    const AdmissionView& admission) {
  return detail::AttachView(*this, "admission", admission,
                            detail::WriteAdmissionMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachQueue(
    const QueueView& queue) {
  return detail::AttachView(*this, "queue", queue, detail::WriteQueueMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachLimiter(
    const LimiterView& limiter) {
  return detail::AttachView(*this, "limiter", limiter,
                            detail::WriteLimiterMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachRetryBudget(
    const RetryBudgetView& budget) {
  return detail::AttachView(*this, "budget", budget,
                            detail::WriteRetryBudgetMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachRetrier(
    const RetrierView& retrier) {
  return detail::AttachView(*this, "retrier", retrier,
                            detail::WriteRetrierMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachThrottler(
    const ThrottleView& throttler) {
  return detail::AttachView(*this, "throttle", throttler,
                            detail::WriteThrottleMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachHedge(
    const HedgeView& hedge) {
  return detail::AttachView(*this, "hedge", hedge, detail::WriteHedgeMetrics);
}

inline std::unique_ptr<TelemetryAttachment> MetricsRegistry::AttachComponent(
    const ComponentView& view) {
  return detail::AttachKnownComponent(*this, view);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_METRICS_REGISTRY_HPP_
