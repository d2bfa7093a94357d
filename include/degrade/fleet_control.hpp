// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: fleet_control.hpp
// -----------------------------------------------------------------------------
//
// Applies control documents (control_document.hpp) to one process: the
// managers and breakers registered with it. Every instance of a service
// owns one `FleetControl`, fed by whatever carries the document to it: a
// file through `ControlFileWatcher` (a ConfigMap), an etcd watch, a config
// centre's push callback. The rules that make one operator action safe to
// send to a whole fleet live here:
//
//   * versions only grow: an older version is refused and changes nothing,
//     and the same version again is accepted as a no-op only when its text
//     is the same (a watcher re-reading after a reconnect), refused
//     otherwise;
//   * a document is checked whole before anything changes: parse, the
//     registry's names (an unknown manager or breaker is refused: a typo
//     must not force nothing), each manager's levels and critical
//     features, each breaker's clock; then applied;
//   * a newer document replaces the older one entirely: what the old one
//     forced and the new one does not name is released;
//   * everything a document forces ends by itself at `expires_at`, on the
//     managers' and breakers' clocks, with no new document needed (a
//     manager at its first evaluation at or after it: see
//     DegradationManager::Control);
//   * `Lift()` (the key deleted) ends what the document forced but keeps
//     its version as the floor, so the old document cannot come back.
//
// Unknown feature names are applied and reported rather than refused:
// gates are registered lazily, on first use, so a feature a fresh instance
// has not served yet is still a real one.
//
//   degrade::FleetControl control;
//   control.AddManager(&manager).IgnoreError();
//   control.AddBreaker(&rank_breaker).IgnoreError();
//   absl::Status s = control.Apply(text, "etcd: /svc/degrade/control");
//   // OK: in force on every registered manager and breaker; otherwise the
//   // status names the path, value and rule, and nothing changed.
//
// Each applied, lifted or refused document is one log line (to
// `Options::log_sink`, stderr by default, through an EventLog like every
// component's lines: "time" first, refusals rate-limited) carrying its
// version and reason; the managers' own level-change lines carry the reason
// as their `note`. Its `stats()` (fleet_stats.hpp: the version and end in
// force, documents accepted and refused by reason) reach `Options::metrics`,
// as the degrade_fleet_* series of a MetricsRegistry.
//
// Thread safety: every member is thread-safe; documents are applied one at
// a time in call order. The registered managers and breakers must outlive
// the FleetControl. Apply() calls into the managers, which run their
// observers on the calling thread; an observer may read the FleetControl
// (version(), in_force(), ...) but not Apply(), Lift() or register (it
// would wait for itself: FAILED_PRECONDITION is returned instead).

#ifndef DEGRADE_FLEET_CONTROL_HPP_
#define DEGRADE_FLEET_CONTROL_HPP_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/control_document.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/json_line.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/event_log.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// FleetControlOptions
struct FleetControlOptions {
  // The clock `expires_at` is judged by when a document arrives; the
  // managers' and breakers' own clocks end what it forced. Null: real.
  const Clock* clock = nullptr;
  // One JSON object per line; stderr when empty. Called with no lock held,
  // possibly from several threads at once (concurrent Apply() calls); a
  // sink that throws loses that line. Applied and lifted documents are
  // audit lines, always written; refusals, which a watcher re-reading a bad
  // document repeats, are rate-limited as EventLog's defaults say (5 a
  // second, the next line saying how many were dropped).
  std::function<void(absl::string_view)> log_sink;
  // The name its telemetry exports it under (the `fleet_control` label).
  std::string name = "fleet";
  // Where its stats() are exported: null, the process default
  // (DefaultTelemetry()); NoTelemetry(), nowhere. Must outlive it.
  Telemetry* metrics = nullptr;
};

// FleetControl
//
// One process's end of fleet control; see the file comment. Thread-safe.
class FleetControl {
 public:
  using Options = FleetControlOptions;

  explicit FleetControl(Options options = {})
      : clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        log_(LogOptions(std::move(options.log_sink), clock_)),
        refused_key_(log_.GetKey("control_refused")),
        name_(std::move(options.name)),
        // Last: the view must be complete before a telemetry may read it.
        telemetry_(detail::Attach(options.metrics, &Telemetry::AttachComponent,
                                  view_)) {}

  FleetControl(const FleetControl&) = delete;
  FleetControl& operator=(const FleetControl&) = delete;
  ~FleetControl() { telemetry_.reset(); }  // first: its view reads us

  // Registers `manager` under its name(). ALREADY_EXISTS for a second
  // manager of that name; FAILED_PRECONDITION from an observer during an
  // Apply() or Lift(). REQUIRES: not null; outlives this.
  absl::Status AddManager(DegradationManager* manager);

  // Registers `breaker` under its name(), as AddManager.
  template <typename T>
  absl::Status AddBreaker(CircuitBreaker<T>* breaker) {
    BreakerHooks hooks;
    hooks.check = [breaker](absl::Time t) {
      const Clock* clock = breaker->settings().clock != nullptr
                               ? breaker->settings().clock
                               : &RealClock::Instance();
      return t > clock->Now();
    };
    hooks.force_open_until = [breaker](absl::Time t) {
      return breaker->ForceOpenUntil(t);
    };
    hooks.release_if_ours = [breaker](absl::Time ours) {
      // Only the open we set: a later manual call replaced it otherwise.
      if (breaker->forced_open() && breaker->forced_open_until() == ours) {
        breaker->Reset();
      }
    };
    return AddBreakerHooks(breaker->name(), std::move(hooks));
  }

  // Applies the control document `text` (control_document.hpp), naming it
  // `source` in errors and log lines. OK when it is in force, or is the
  // document in force already (the same text, not yet expired or lifted);
  // then `*applied_version` (if not null) is its version. Otherwise nothing
  // changed and: INVALID_ARGUMENT for a bad document (parse, an unknown
  // manager or breaker, a level past a manager's levels, a critical
  // feature, a breaker time its clock has passed); FAILED_PRECONDITION for
  // a version not above the floor (other than the document in force
  // again), or a call from an observer during an Apply() or Lift().
  absl::Status Apply(absl::string_view text, absl::string_view source,
                     uint64_t* applied_version = nullptr);

  // Ends what the document in force forced (the document was deleted);
  // the version floor stays. OK and a no-op without a document, or when
  // `only_version` is not 0 and not the version in force (a source lifting
  // only what it put there). FAILED_PRECONDITION from an observer during
  // an Apply() or Lift().
  absl::Status Lift(absl::string_view source, uint64_t only_version = 0);

  // Readers take a lock no Apply() holds while it calls the managers and
  // breakers, so observers and log sinks may call them.
  //
  // The highest version applied (0 before the first): the floor.
  uint64_t version() const {
    detail::MutexLock lock(&state_mu_);
    return floor_;
  }
  // The document in force: applied, not lifted, not yet expired.
  std::optional<ControlDocument> in_force() const {
    detail::MutexLock lock(&state_mu_);
    if (!current_ || !(clock_->Now() < current_->expires_at)) {
      return std::nullopt;
    }
    return current_;
  }
  // Documents put in force, and documents refused (of every reason).
  uint64_t applied() const {
    detail::MutexLock lock(&state_mu_);
    return stats_.accepted;
  }
  uint64_t refused() const {
    detail::MutexLock lock(&state_mu_);
    return stats_.refused_total();
  }

  const std::string& name() const { return name_; }
  // Everything above, and why documents were refused, in one snapshot.
  FleetControlStats stats() const;

 private:
  struct BreakerHooks {
    std::function<bool(absl::Time)> check;  // the time is ahead
    std::function<absl::Status(absl::Time)> force_open_until;
    std::function<void(absl::Time)> release_if_ours;
  };

  absl::Status AddBreakerHooks(const std::string& name, BreakerHooks hooks);
  absl::Status NotFromObserver(absl::string_view what) const;
  static DegradationManager::Control ControlFor(const ControlDocument& doc,
                                                const ManagerControlSpec& s);
  // Checks `doc` against the registry and each manager's and breaker's own
  // rules, changing nothing; the first fault, INVALID_ARGUMENT.
  // `*why` says which kind of fault (kUnknownTarget or kInvalid).
  absl::Status CheckLocked(const ControlDocument& doc, absl::string_view source,
                           ControlRefusal* why) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Moves the registry from what `from` forced to what `to` forces (null:
  // nothing). The first error of a manager or breaker refusing (only a
  // race with a reload or a clock can make one refuse after CheckLocked).
  absl::Status InstallLocked(const ControlDocument* from,
                             const ControlDocument* to)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  // Apply() after parsing: the version rule, the checks, the install.
  // Fills `line` with the log line to write once the locks are released.
  absl::Status ApplyLocked(absl::string_view text, absl::string_view source,
                           ControlDocument doc, uint64_t* applied_version,
                           std::string* line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_);
  static std::string RefusedLine(absl::Time now, absl::string_view source,
                                 const absl::Status& error);
  static EventLogOptions LogOptions(std::function<void(absl::string_view)> sink,
                                    const Clock* clock) {
    EventLogOptions o;
    o.sink = std::move(sink);
    o.clock = clock;
    return o;
  }
  // Writes `line`: refusals under their rate limit, the rest always.
  void Log(bool refused, std::string line);
  // Counts a refusal of `why` and writes its line into `line`.
  absl::Status Refuse(ControlRefusal why, absl::string_view source,
                      absl::Status error, std::string* line);

  // "<where>: degrade_control.<key>.<name>: no <what> of that name here
  // (registered: a, b)".
  template <typename Registry>
  static absl::Status Unknown(absl::string_view where, absl::string_view key,
                              absl::string_view what, const std::string& name,
                              const Registry& registered) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": degrade_control.", key, ".", detail::Printable(name), ": no ",
        what, " of that name here (registered: ",
        absl::StrJoin(registered, ", ",
                      [](std::string* out, const auto& entry) {
                        out->append(detail::Printable(entry.first));
                      }),
        ")"));
  }

  static std::string Note(const ControlDocument& doc) {
    return absl::StrCat("control v", doc.version, ": ", doc.reason);
  }

  const Clock* const clock_;
  EventLog log_;
  const EventLog::Key refused_key_;
  const std::string name_;

  // Serialises Apply(), Lift() and registration; held while the managers
  // and breakers are called, so never taken by a reader.
  detail::Mutex apply_mu_;
  std::map<std::string, DegradationManager*> managers_
      ABSL_GUARDED_BY(apply_mu_);
  std::map<std::string, BreakerHooks> breakers_ ABSL_GUARDED_BY(apply_mu_);
  std::string current_text_ ABSL_GUARDED_BY(apply_mu_);

  // What readers see; written under apply_mu_ too, held only briefly.
  mutable detail::Mutex state_mu_;
  std::optional<ControlDocument> current_ ABSL_GUARDED_BY(state_mu_);
  uint64_t floor_ ABSL_GUARDED_BY(state_mu_) = 0;
  // The counters; its version fields are filled in by stats().
  FleetControlStats stats_ ABSL_GUARDED_BY(state_mu_);

  const detail::OwnerView<FleetControl, FleetControlStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details -------------------------------------------------

inline absl::Status FleetControl::NotFromObserver(
    absl::string_view what) const {
  if (!detail::CallbackScope::Inside(this)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("fleet control: ", what,
                   " from an observer during an Apply() or Lift()"));
}

inline absl::Status FleetControl::AddManager(DegradationManager* manager) {
  if (absl::Status s = NotFromObserver("AddManager()"); !s.ok()) return s;
  detail::MutexLock lock(&apply_mu_);
  if (!managers_.emplace(manager->name(), manager).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("fleet control: a manager named '",
                     detail::Printable(manager->name()), "' is registered"));
  }
  return absl::OkStatus();
}

inline absl::Status FleetControl::AddBreakerHooks(const std::string& name,
                                                  BreakerHooks hooks) {
  if (absl::Status s = NotFromObserver("AddBreaker()"); !s.ok()) return s;
  detail::MutexLock lock(&apply_mu_);
  if (!breakers_.emplace(name, std::move(hooks)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("fleet control: a breaker named '",
                     detail::Printable(name), "' is registered"));
  }
  return absl::OkStatus();
}

inline DegradationManager::Control FleetControl::ControlFor(
    const ControlDocument& doc, const ManagerControlSpec& spec) {
  DegradationManager::Control c;
  c.level = spec.level;
  c.features_off = spec.features_off;
  c.until = doc.expires_at;
  c.version = doc.version;
  c.note = Note(doc);
  return c;
}

inline FleetControlStats FleetControl::stats() const {
  detail::MutexLock lock(&state_mu_);
  FleetControlStats s = stats_;
  s.version = floor_;
  if (current_ && clock_->Now() < current_->expires_at) {
    s.version_in_force = current_->version;
    s.expires_at = current_->expires_at;
  }
  return s;
}

inline absl::Status FleetControl::CheckLocked(const ControlDocument& doc,
                                              absl::string_view source,
                                              ControlRefusal* why) const {
  const std::string where = detail::Printable(source);
  // Each return says its kind: a target missing here, or one refusing.
  *why = ControlRefusal::kUnknownTarget;
  for (const auto& [name, spec] : doc.managers) {
    if (managers_.count(name) == 0) {
      return Unknown(where, "managers", "manager", name, managers_);
    }
  }
  for (const auto& [name, until] : doc.breakers_open) {
    if (breakers_.count(name) == 0) {
      return Unknown(where, "breakers_open", "breaker", name, breakers_);
    }
  }
  *why = ControlRefusal::kInvalid;
  for (const auto& [name, spec] : doc.managers) {
    DegradationManager* manager = managers_.at(name);
    const int n = manager->num_levels();
    if (spec.level && *spec.level > n) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": degrade_control.managers.", detail::Printable(name),
          ".level = ", *spec.level, ": the manager has levels 0 to ", n));
    }
    // The manager's own rules (a critical feature), before anything moves.
    if (absl::Status s = manager->CheckControl(ControlFor(doc, spec));
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": degrade_control.managers.",
                       detail::Printable(name), ": ", s.message()));
    }
  }
  for (const auto& [name, until] : doc.breakers_open) {
    if (!breakers_.at(name).check(until)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": degrade_control.breakers_open.", detail::Printable(name),
          " = ", detail::control::UtcText(until),
          ": the breaker's clock is past it"));
    }
  }
  return absl::OkStatus();
}

inline absl::Status FleetControl::InstallLocked(const ControlDocument* from,
                                                const ControlDocument* to) {
  absl::Status first;
  for (const auto& [name, manager] : managers_) {
    const bool was = from != nullptr && from->managers.count(name) != 0;
    const auto spec = to != nullptr ? to->managers.find(name)
                                    : decltype(to->managers.end()){};
    if (to == nullptr || spec == to->managers.end()) {
      if (was) manager->ClearControl();
      continue;
    }
    absl::Status s = manager->SetControl(ControlFor(*to, spec->second));
    if (!s.ok() && first.ok()) first = s;
  }
  for (const auto& [name, hooks] : breakers_) {
    std::optional<absl::Time> was, want;
    if (from != nullptr) {
      if (auto it = from->breakers_open.find(name);
          it != from->breakers_open.end()) {
        was = it->second;
      }
    }
    if (to != nullptr) {
      if (auto it = to->breakers_open.find(name);
          it != to->breakers_open.end()) {
        want = it->second;
      }
    }
    if (want) {
      if (was == want) continue;
      absl::Status s = hooks.force_open_until(*want);
      if (!s.ok() && first.ok()) first = s;
    } else if (was) {
      hooks.release_if_ours(*was);
    }
  }
  return first;
}

inline absl::Status FleetControl::Apply(absl::string_view text,
                                        absl::string_view source,
                                        uint64_t* applied_version) {
  if (absl::Status s = NotFromObserver("Apply()"); !s.ok()) return s;
  absl::StatusOr<ControlDocument> doc =
      ParseControlDocument(text, source, clock_->Now());
  absl::Status result;
  std::string line;
  if (!doc.ok()) {
    result = Refuse(ControlRefusal::kMalformed, source, doc.status(), &line);
  } else {
    detail::MutexLock lock(&apply_mu_);
    const detail::CallbackScope in_apply(this);
    result = ApplyLocked(text, source, *std::move(doc), applied_version, &line);
  }
  if (!line.empty()) Log(!result.ok(), std::move(line));
  return result;
}

inline absl::Status FleetControl::ApplyLocked(absl::string_view text,
                                              absl::string_view source,
                                              ControlDocument doc,
                                              uint64_t* applied_version,
                                              std::string* line) {
  const std::string where = detail::Printable(source);
  const absl::Time now = clock_->Now();
  std::optional<ControlDocument> current;
  uint64_t floor;
  {
    detail::MutexLock lock(&state_mu_);
    current = current_;
    floor = floor_;
  }
  // An ended document forces nothing any more: nothing to release or to
  // move back to.
  if (current && !(now < current->expires_at)) current.reset();
  const auto refuse = [&](ControlRefusal why, absl::Status s) {
    return Refuse(why, source, std::move(s), line);
  };
  if (doc.version == floor && current && text == current_text_) {
    if (applied_version != nullptr) *applied_version = doc.version;
    detail::MutexLock lock(&state_mu_);
    ++stats_.repeated;
    return absl::OkStatus();  // the same document again: nothing to do
  }
  if (doc.version <= floor) {
    return refuse(
        ControlRefusal::kStale,
        absl::FailedPreconditionError(absl::StrCat(
            where, ": degrade_control.version = ", doc.version, ": ",
            doc.version < floor ? "older than the version applied, "
            : current ? "already applied with other content (a change "
                        "needs a new version); applied "
                      : "already applied, and ended or lifted; applied ",
            floor)));
  }
  ControlRefusal why = ControlRefusal::kInvalid;
  if (absl::Status s = CheckLocked(doc, source, &why); !s.ok()) {
    return refuse(why, s);
  }
  const ControlDocument* from = current ? &*current : nullptr;
  if (absl::Status s = InstallLocked(from, &doc); !s.ok()) {
    // Only a race can get here (a reload to fewer levels, a clock passing
    // a time between the check and the install): move back.
    absl::Status back = InstallLocked(&doc, from);
    return refuse(
        ControlRefusal::kInstallFailed,
        absl::InvalidArgumentError(absl::StrCat(
            where, ": ", s.message(),
            back.ok() ? ""
                      : absl::StrCat("; moving back to the previous document "
                                     "failed too: ",
                                     back.message()))));
  }
  current_text_ = std::string(text);
  if (applied_version != nullptr) *applied_version = doc.version;
  detail::JsonLine applied("control_applied", now);
  applied.Str("source", source)
      .Int("version", doc.version)
      .Str("expires_at", detail::control::UtcText(doc.expires_at))
      .Str("reason", doc.reason);
  std::vector<std::string> unseen;
  for (const auto& [name, spec] : doc.managers) {
    for (const std::string& f : spec.features_off) {
      if (!managers_.at(name)->KnowsFeature(f)) {
        unseen.push_back(absl::StrCat(name, "/", f));
      }
    }
  }
  if (!unseen.empty()) {
    applied.Str("features_not_seen_yet", absl::StrJoin(unseen, ", "));
  }
  *line = applied.Done();
  detail::MutexLock lock(&state_mu_);
  ++stats_.accepted;
  floor_ = doc.version;
  current_ = std::move(doc);
  return absl::OkStatus();
}

inline absl::Status FleetControl::Lift(absl::string_view source,
                                       uint64_t only_version) {
  if (absl::Status s = NotFromObserver("Lift()"); !s.ok()) return s;
  std::string line;
  {
    detail::MutexLock lock(&apply_mu_);
    const detail::CallbackScope in_lift(this);
    std::optional<ControlDocument> current;
    {
      detail::MutexLock state_lock(&state_mu_);
      current = current_;
    }
    if (!current) return absl::OkStatus();
    if (only_version != 0 && current->version != only_version) {
      return absl::OkStatus();
    }
    InstallLocked(&*current, nullptr).IgnoreError();  // clearing cannot fail
    line = detail::JsonLine("control_lifted", clock_->Now())
               .Str("source", source)
               .Int("version", current->version)
               .Str("reason", current->reason)
               .Done();
    current_text_.clear();
    detail::MutexLock state_lock(&state_mu_);
    current_.reset();
    ++stats_.lifted;
  }
  Log(false, std::move(line));
  return absl::OkStatus();
}

inline std::string FleetControl::RefusedLine(absl::Time now,
                                             absl::string_view source,
                                             const absl::Status& error) {
  return detail::JsonLine("control_refused", now)
      .Str("source", source)
      .Str("error", error.ToString())
      .Done();
}

inline absl::Status FleetControl::Refuse(ControlRefusal why,
                                         absl::string_view source,
                                         absl::Status error,
                                         std::string* line) {
  *line = RefusedLine(clock_->Now(), source, error);
  detail::MutexLock lock(&state_mu_);
  switch (why) {
    case ControlRefusal::kMalformed:
      ++stats_.refused_malformed;
      break;
    case ControlRefusal::kStale:
      ++stats_.refused_stale;
      break;
    case ControlRefusal::kUnknownTarget:
      ++stats_.refused_unknown_target;
      break;
    case ControlRefusal::kInvalid:
      ++stats_.refused_invalid;
      break;
    case ControlRefusal::kInstallFailed:
      ++stats_.refused_install_failed;
      break;
  }
  return error;
}

inline void FleetControl::Log(bool refused, std::string line) {
  const auto take = [&line] { return std::move(line); };
  if (refused) {
    log_.Emit(refused_key_, take);
  } else {
    log_.WriteAlways(take);
  }
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_FLEET_CONTROL_HPP_
