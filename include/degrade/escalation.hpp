// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: escalation.hpp
// -----------------------------------------------------------------------------
//
// When to call a human. Degradation is meant to be temporary: the first seed
// article pages someone when a service has been lossy for 30 minutes. An
// `EscalationWatch` looks at the degradation episodes a MetricsRegistry
// knows (breakers not closed, managers at or above a level, stages serving
// fallbacks) and calls `on_escalate` once per episode that has lasted longer
// than `after`, writing an `escalation` line to the registry's event log.
//
//   degrade::EscalationOptions o;
//   o.after = absl::Minutes(30);
//   o.on_escalate = [](const degrade::DegradationEpisode& e,
//                      absl::Duration lasted) { Page(e.name, lasted); };
//   degrade::EscalationWatch watch(registry, o);
//   absl::Status started = watch.Start(absl::Minutes(1));  // or Check()
//
// Thread safety: see EscalationWatch.

#ifndef DEGRADE_ESCALATION_HPP_
#define DEGRADE_ESCALATION_HPP_

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_episode.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_line.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/event_log.hpp"
#include "degrade/metrics_registry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

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
// own. An episode's age is read from the clock when a check first sees it
// and then measured on a SteadyTime (detail/saturating.hpp): a clock stepped
// back counts as no time passing from the next check on, so it delays a page
// by at most one period, never by the step.
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
  // yet; returns how many fired. May be called from `on_escalate` (it
  // fires only what that call has not) and from a registry probe.
  int Check() {
    const absl::Time now = clock_->Now();
    std::vector<DegradationEpisode> due;
    std::vector<absl::Duration> lasted;
    // Asked before taking mu_: the probes are components' code, and one
    // that calls Check() must not wait for this very call.
    std::vector<DegradationEpisode> episodes = registry_->Episodes();
    {
      detail::MutexLock lock(&mu_);
      const absl::Time line = steady_.Advance(now);
      std::map<std::string, absl::Time> still;
      std::map<std::string, Sighting> seen;
      for (DegradationEpisode& e : episodes) {
        if (!Watched(e)) continue;
        const std::string key =
            absl::StrCat(EpisodeKindName(e.kind), "/", e.source, "/", e.name);
        // Aged from the clock at its first sighting, then on the watch's
        // SteadyTime: a clock stepped back during an episode neither
        // delays nor hastens the page.
        auto s = seen_.find(key);
        Sighting sighting =
            s != seen_.end() && s->second.since == e.since
                ? s->second
                : Sighting{e.since, line, detail::ElapsedSince(now, e.since)};
        const absl::Duration age =
            sighting.age + detail::ElapsedSince(line, sighting.line);
        seen.emplace(key, sighting);
        auto it = fired_.find(key);
        const bool already = it != fired_.end() && it->second == e.since;
        if (already) {
          still.emplace(key, e.since);
        } else if (age > options_.after) {
          still.emplace(key, e.since);
          lasted.push_back(age);
          due.push_back(std::move(e));
        }
      }
      fired_ = std::move(still);
      seen_ = std::move(seen);
    }
    for (std::size_t i = 0; i < due.size(); ++i) {
      const DegradationEpisode& e = due[i];
      registry_->log().Emit(log_key_, [&] {
        return detail::JsonLine("escalation", now)
            .Str("kind", EpisodeKindName(e.kind))
            .Str("name", e.name)
            .Str("source", e.source)
            .Int("level", e.level)
            .Time("since", e.since)
            .Num("lasted_seconds", absl::ToDoubleSeconds(lasted[i]))
            .Done();
      });
      if (options_.on_escalate) {
        detail::CallQuietly(options_.on_escalate, e, lasted[i]);
      }
    }
    return static_cast<int>(due.size());
  }

  // Runs Check() now and every `period` until Stop() or destruction; a
  // running watch restarts with the new period. INVALID_ARGUMENT for a
  // period outside [1 ms, 1 year] (a running watch is left as it was);
  // RESOURCE_EXHAUSTED when its thread cannot be started (none runs then,
  // and Start may be called again: nothing is paged until it works). From
  // `on_escalate` on the watch's own thread it cannot restart the thread it
  // runs on: the new period applies from the next check, a period after
  // this one, and it takes back a Stop() made earlier in the same callback.
  absl::Status Start(absl::Duration period) {
    absl::Status valid = detail::CheckPeriod("escalation watch", period);
    if (!valid.ok()) return valid;
    absl::Status started = worker_.TryRestart(period, [this] { Check(); });
    if (started.ok()) return started;
    return absl::Status(started.code(),
                        absl::StrCat("escalation watch: ", started.message()));
  }
  // Stops the watch's thread and waits for a check in progress. From
  // `on_escalate` on that thread it stops after this check instead (the
  // next Start() from any thread works).
  void Stop() { worker_.Stop(); }

 private:
  bool Watched(const DegradationEpisode& e) const {
    switch (e.kind) {
      case EpisodeKind::kLevel:
        return e.level == std::max(1, options_.min_level);
      case EpisodeKind::kBreaker:
        return options_.breakers;
      case EpisodeKind::kStage:
        return options_.stages;
    }
    return true;
  }

  MetricsRegistry* const registry_;
  const EscalationOptions options_;
  const Clock* const clock_;
  const EventLog::Key log_key_;
  detail::Mutex mu_;
  // Episodes that fired, by key, with their start: fire once per start.
  std::map<std::string, absl::Time> fired_ ABSL_GUARDED_BY(mu_);
  // An episode as first seen: its start, the watch's line then, and its
  // age on the clock then.
  struct Sighting {
    absl::Time since;
    absl::Time line;
    absl::Duration age;
  };
  std::map<std::string, Sighting> seen_ ABSL_GUARDED_BY(mu_);
  detail::SteadyTime steady_ ABSL_GUARDED_BY(mu_);
  detail::PeriodicWorker worker_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ESCALATION_HPP_
