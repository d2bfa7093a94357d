// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stage_metrics.hpp
// -----------------------------------------------------------------------------
//
// What the end of each request reports: which stages served a fallback, why,
// and how many stages each request lost. One `Observe(trace)` per request,
// with the trace of its final result, feeds degrade_fallbacks_total{stage,
// reason}, the degrade_request_degraded_stages histogram, the per-stage
// degrade_stage_degraded_seconds gauge (and the "stage" episodes an
// EscalationWatch pages on), and a rate-limited fallback_served line.
// Like every component it exports to its options' `metrics`, else to the
// process default (SetDefaultTelemetry, telemetry.hpp), else nowhere.
//
//   degrade::MetricsRegistry registry;
//   degrade::StageMetricsOptions o;
//   o.name = "recsys";
//   o.metrics = &registry;
//   degrade::StageMetrics stages(o);
//   ...
//   degrade::StageResult<Ranked> response = Serve(request);
//   stages.Observe(response.trace());   // once per request
//
// Thread safety: see StageMetrics.

#ifndef DEGRADE_STAGE_METRICS_HPP_
#define DEGRADE_STAGE_METRICS_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_episode.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_line.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// StageMetricsOptions
struct StageMetricsOptions {
  // Names the request path (the `pipeline` label).
  std::string name = "pipeline";
  // Where the series and lines go, by the rule every component follows
  // (telemetry.hpp): this telemetry, else the process default
  // (SetDefaultTelemetry), else nowhere; NoTelemetry() means nowhere even
  // with a default. The telemetry must be a MetricsRegistry, or answer one
  // from AsMetricsRegistry(); another telemetry leaves the StageMetrics
  // unexported. Unexported, it still counts (fallbacks(),
  // requests_at_depth()) and writes no lines. REQUIRES: outlives nothing;
  // the registration keeps what it needs of the registry alive.
  Telemetry* metrics = nullptr;
  // For the degraded-since times and log lines; nullptr means the real
  // clock. Must outlive the StageMetrics.
  const Clock* clock = nullptr;
  // The former name of `metrics`, still honoured when `metrics` is unset.
  MetricsRegistry* registry = nullptr;
  // Until this release an unset `metrics` meant MetricsRegistry::Default()
  // even with no process default (docs/changelog.md). A service that
  // scrapes Default() makes it the default once at startup:
  // SetDefaultTelemetry(&MetricsRegistry::Default()).
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
                                        : &RealClock::Instance()),
        registry_(ChooseRegistry(options)) {
    if (registry_ == nullptr) return;  // unexported
    registration_ = registry_->Register(
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

  // The name its series and lines carry: the options' name, made unique in
  // its registry ("p#2"); the options' name when unexported.
  const std::string& name() const {
    return registry_ != nullptr ? registration_.name() : name_;
  }

  // Whether it registered with a registry (see StageMetricsOptions::metrics).
  bool exported() const { return registry_ != nullptr; }

 private:
  // One slot per reason, indexed by its value; slot 0 (kNone) unused.
  static constexpr std::size_t kReasons = kAllDegradeReasons.size() + 1;
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

  // The registry `options` name by the telemetry rule, or nullptr.
  static MetricsRegistry* ChooseRegistry(const StageMetricsOptions& options) {
    Telemetry* const t = detail::ResolveTelemetry(
        options.metrics != nullptr ? options.metrics : options.registry);
    if (t == nullptr) return nullptr;
    return detail::InvokeOr([t] { return t->AsMetricsRegistry(); },
                            [](absl::string_view) {
                              return static_cast<MetricsRegistry*>(nullptr);
                            });
  }

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
        // A clock at InfinitePast reads the sentinel itself: start 1 ns
        // later, so the episode is not lost.
        slot->degraded_since.compare_exchange_strong(
            since, std::max(NowNanos(), kNotDegraded + 1),
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
    if (registry_ == nullptr) return;  // unexported: no log to write to
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
      return detail::JsonLine("fallback_served", clock_->Now())
          .Str("pipeline", registration_.name())
          .Str("stage", slot.name)
          .Str("reason", ReasonName(reason))
          .Done();
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
      for (DegradeReason reason : kAllDegradeReasons) {
        const uint64_t v = s.fallbacks[static_cast<std::size_t>(reason)].load(
            std::memory_order_relaxed);
        if (v == 0) continue;
        w.Counter("degrade_fallbacks_total", kFallbacksHelp,
                  {{"pipeline", pipeline},
                   {"stage", s.name},
                   {"reason", std::string(ReasonName(reason))}},
                  static_cast<double>(v));
      }
      const int64_t since = s.degraded_since.load(std::memory_order_relaxed);
      w.Gauge("degrade_stage_degraded_seconds",
              "How long the stage has been serving fallbacks without a "
              "normal answer in between; 0 when it is not degraded.",
              {{"pipeline", pipeline}, {"stage", s.name}},
              since == kNotDegraded
                  ? 0.0
                  : static_cast<double>(detail::ElapsedNanosSince(now, since)) /
                        1e9);
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
      e.kind = EpisodeKind::kStage;
      e.name = slots_[i].name;
      e.source = pipeline;
      e.since = absl::FromUnixNanos(since);
      out->push_back(std::move(e));
    }
  }

  const std::string name_;
  const Clock* const clock_;
  // Where it registered, or nullptr; only compared with nullptr after the
  // constructor (the registration, not this, keeps the registry alive).
  MetricsRegistry* const registry_;
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

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STAGE_METRICS_HPP_
