// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What a component attached to a MetricsRegistry holds (metrics_registry.hpp
// is the only user): its registration, which the registry collects at each
// scrape and drops when the attachment is destroyed, and for breakers and
// managers the event-line plumbing. They are templates over the registry
// only so that this header needs no complete MetricsRegistry: the registry
// header includes it before defining its class, and instantiates them with
// itself in its Attach*() definitions.
//
// Thread safety: each attachment is owned by one component; the callbacks
// it registers run on the scraping thread, one component at a time.

#ifndef DEGRADE_DETAIL_METRICS_REGISTRY_ATTACHMENTS_HPP_
#define DEGRADE_DETAIL_METRICS_REGISTRY_ATTACHMENTS_HPP_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_episode.hpp"
#include "degrade/detail/levels/manager_log.hpp"
#include "degrade/detail/metrics/component_metrics.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metric_writer.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Registers `view` under `kind`, the series written by `write(view,
// registered name, writer)` at each scrape and the episodes by
// `episodes(view, registered name, out)`: what the listeners that report
// episodes (breakers, managers) register.
template <typename Registry, typename View, typename Write, typename Episodes>
typename Registry::Registration RegisterWithEpisodes(Registry& registry,
                                                     absl::string_view kind,
                                                     const View& view,
                                                     Write write,
                                                     Episodes episodes) {
  const View* v = &view;
  return registry.Register(
      kind, view.name(),
      [v, write](MetricWriter& w) { write(*v, w.component(), w); },
      [v, episodes](const std::string& name,
                    std::vector<DegradationEpisode>* out) {
        episodes(*v, name, out);
      });
}

// What a breaker attached to a registry keeps: its registration (series and
// episodes, read through the view) and its event-line key.
template <typename Registry>
class RegistryBreakerListener final : public BreakerListener {
 public:
  RegistryBreakerListener(Registry& registry, const BreakerView& view)
      : registration_(RegisterWithEpisodes(
            registry, "breaker", view, WriteBreakerMetrics, BreakerEpisodes)) {
    key_ = registration_.log().GetKey(
        absl::StrCat("breaker/", registration_.name()));
  }

  void OnStateChange(const BreakerStateChange& change) override {
    registration_.log().Emit(key_, [&] {
      return BreakerStateChangeLine(change, registration_.name());
    });
  }
  void OnThreshold(const BreakerThresholdEvent& event) override {
    registration_.log().Emit(key_, [&] {
      return BreakerThresholdLine(event, registration_.name());
    });
  }

 private:
  typename Registry::Registration registration_;
  EventLog::Key key_;
};

// A manager's registration, and its event lines unless it has its own log.
template <typename Registry>
class RegistryManagerListener final : public ManagerListener {
 public:
  RegistryManagerListener(Registry& registry, const ManagerView& view)
      : registration_(RegisterWithEpisodes(
            registry, "manager", view,
            [](const ManagerView& m, const std::string& name, MetricWriter& w) {
              WriteManagerMetrics(m.stats(), name, w);
            },
            [](const ManagerView& m, const std::string& name,
               std::vector<DegradationEpisode>* out) {
              ManagerEpisodes(m.stats(), name, out);
            })) {
    if (!view.has_own_log()) {
      // Named as the metrics are: unique among live managers.
      lines_ = std::make_unique<ManagerLog>(&registration_.log(),
                                            registration_.name());
    }
  }

  bool writes_lines() const override { return lines_ != nullptr; }
  void OnLevelChange(const LevelChange& c) override {
    if (lines_) lines_->OnLevelChange(c);
  }
  void OnReload(const ReloadEvent& e) override {
    if (lines_) lines_->OnReload(e);
  }
  void OnOverrideExpired(const OverrideExpiredEvent& e) override {
    if (lines_) lines_->OnOverrideExpired(e);
  }
  void OnPollError(const PollErrorEvent& e) override {
    if (lines_) lines_->OnPollError(e);
  }

 private:
  typename Registry::Registration registration_;
  std::unique_ptr<ManagerLog> lines_;
};

// A component that only exports series: its registration, collecting
// `write(view.stats(), registered name, writer)` at each scrape. Destroying
// it waits for a collection of this component in progress (Registration).
template <typename Registry, typename View, typename Write>
class RegistryViewAttachment final : public TelemetryAttachment {
 public:
  RegistryViewAttachment(Registry& registry, absl::string_view kind,
                         const View& view, Write write) {
    const View* v = &view;
    registration_ = registry.Register(
        kind, view.name(),
        [v, write](MetricWriter& w) { write(v->stats(), w.component(), w); });
  }

 private:
  typename Registry::Registration registration_;
};

template <typename Registry, typename View, typename Write>
std::unique_ptr<TelemetryAttachment> AttachView(Registry& registry,
                                                absl::string_view kind,
                                                const View& view, Write write) {
  return std::make_unique<RegistryViewAttachment<Registry, View, Write>>(
      registry, kind, view, write);
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_METRICS_REGISTRY_ATTACHMENTS_HPP_
