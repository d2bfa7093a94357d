// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: degradation_manager.hpp
// -----------------------------------------------------------------------------
//
// A tiered degradation manager: under load, a service switches off non-core
// work level by level (cache refresh, debug logs, A/B tagging,
// personalisation, ...) and switches it back on when the load is gone,
// without flapping.
//
// The manager holds a level, 0 (normal) to N (N <= 8), driven by named load
// signals (`gpu_util`, `queue_length`, `avg_latency_ms`, ...):
//
//   * Escalation: level k is wanted when any of its signals reaches its enter
//     threshold (for `enter_after`, if set); the manager goes straight to the
//     highest wanted level.
//   * Staged recovery with hysteresis: it steps down one level at a time, from
//     k to k-1 only after every level-k signal has stayed below its recover
//     threshold (lower than the enter threshold) for `hold`; each further step
//     needs a fresh hold, and a sample back above the recover threshold
//     restarts it. A signal oscillating around one threshold therefore moves
//     the level at most once each way.
//   * Levels are cumulative: level k switches off its own `disable` list and
//     those of every lower level.
//
// Request code asks a `FeatureGate`, whose `enabled()` is one relaxed atomic
// load:
//
//   degrade::DegradationManager manager({"inference"});
//   absl::Status s = manager.Reload(config);   // or ReloadJson(), config.hpp
//   degrade::FeatureGate cache = manager.Feature("semantic_cache");
//   manager.AddSource("queue_length", [&] { return queue.size(); });
//   manager.Start(absl::Seconds(1));            // polls the sources
//   ...
//   if (cache.enabled()) cache_client.Write(key, value);
//
//   // The article's `when` decorator:
//   auto personalise = degrade::When(manager, /*level=*/2, Personalise,
//                                    /*fallback=*/Generic());
//
// Every level change is one structured JSON log line (through a pluggable
// sink; stderr by default), a call to each observer, and counters.
//
// Thread safety: every member of DegradationManager is thread-safe.
// `level()`, `FeatureGate::enabled()` and `When` wrappers take no lock and
// allocate nothing; observations, reloads and overrides take an internal lock.
// Log sinks and observers run after that lock is released, in order, never
// concurrently, so they may call back into the manager.

#ifndef DEGRADE_DEGRADATION_MANAGER_HPP_
#define DEGRADE_DEGRADATION_MANAGER_HPP_

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/manager_log.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/event_log.hpp"
#include "degrade/level_change.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

class DegradationManager;

// FeatureGate
//
// A handle on one feature's on/off switch. `enabled()` is one relaxed atomic
// load: no lock, no allocation, no string hashing. Cheap to copy. A
// default-constructed gate is always enabled.
// REQUIRES: the manager that issued the gate outlives it.
class FeatureGate {
 public:
  FeatureGate() = default;

  // One relaxed load and nothing else: a default gate points at a shared
  // always-on switch rather than at null, so there is no branch to pay.
  bool enabled() const { return slot_->load(std::memory_order_relaxed); }
  explicit operator bool() const { return enabled(); }
  // The feature's name; empty for a default-constructed gate.
  absl::string_view name() const {
    return name_ == nullptr ? absl::string_view() : absl::string_view(*name_);
  }

 private:
  friend class DegradationManager;
  FeatureGate(const std::atomic<bool>* slot, const std::string* name)
      : slot_(slot), name_(name) {}

  static const std::atomic<bool>* AlwaysOn() {
    static const std::atomic<bool> on{true};
    return &on;
  }

  const std::atomic<bool>* slot_ = AlwaysOn();
  const std::string* name_ = nullptr;
};

// LatencyTracker
//
// A ready-made signal source: request code records durations, the manager's
// monitor polls `TakeMillis()`. kAverage reports the mean of the durations
// recorded since the previous poll (0 when there were none); kEwma folds
// that mean into an exponentially weighted moving average (unchanged when
// there were none). Durations are kept in whole microseconds.
//
// Thread-safe. `Record` is one relaxed atomic add: the count and the sum
// share one 64-bit word, so a poll never sees a sample's duration without
// its count (an average of equal samples is exactly that sample).
class LatencyTracker {
 public:
  enum class Kind { kAverage, kEwma };

  // REQUIRES: 0 < alpha <= 1 (other values are replaced by 0.3).
  explicit LatencyTracker(Kind kind = Kind::kAverage, double alpha = 0.3)
      : kind_(kind), alpha_(!(alpha > 0.0) || alpha > 1.0 ? 0.3 : alpha) {}

  void Record(absl::Duration d) {
    int64_t us = d < absl::ZeroDuration() ? 0 : absl::ToInt64Microseconds(d);
    if (us > static_cast<int64_t>(kMaxSampleMicros)) {
      us = static_cast<int64_t>(kMaxSampleMicros);
    }
    const uint64_t after =
        packed_.fetch_add(kOneCount | static_cast<uint64_t>(us),
                          std::memory_order_relaxed) +
        (kOneCount | static_cast<uint64_t>(us));
    // Fold into the wide totals long before either field could overflow
    // (only if nobody polls for minutes at high load).
    if (DEGRADE_UNLIKELY((after >> kCountShift) >= kFoldAtCount ||
                         (after & kSumMask) >= kFoldAtSum)) {
      std::lock_guard<std::mutex> lock(mu_);
      FoldLocked();
    }
  }

  // Consumes the durations recorded since the last call.
  double TakeMillis() {
    std::lock_guard<std::mutex> lock(mu_);
    FoldLocked();
    const uint64_t count = folded_count_;
    const double sum_us = folded_sum_us_;
    folded_count_ = 0;
    folded_sum_us_ = 0.0;
    const double mean =
        count == 0 ? 0.0 : sum_us / 1000.0 / static_cast<double>(count);
    if (kind_ == Kind::kAverage) return mean;
    if (count > 0) {
      ewma_ = has_ewma_ ? alpha_ * mean + (1.0 - alpha_) * ewma_ : mean;
      has_ewma_ = true;
    }
    return ewma_;
  }

  // A source function for `DegradationManager::AddSource`.
  std::function<double()> Source() {
    return [this] { return TakeMillis(); };
  }

 private:
  // Layout of `packed_`: count in the top 20 bits, microseconds below.
  static constexpr int kCountShift = 44;
  static constexpr uint64_t kOneCount = uint64_t{1} << kCountShift;
  static constexpr uint64_t kSumMask = kOneCount - 1;
  static constexpr uint64_t kFoldAtCount = uint64_t{1} << 19;
  static constexpr uint64_t kFoldAtSum = uint64_t{1} << 43;
  // One sample can't carry the sum past the fold threshold and overflow.
  static constexpr uint64_t kMaxSampleMicros = uint64_t{1} << 40;

  void FoldLocked() {
    const uint64_t w = packed_.exchange(0, std::memory_order_relaxed);
    folded_count_ += w >> kCountShift;
    folded_sum_us_ += static_cast<double>(w & kSumMask);
  }

  const Kind kind_;
  const double alpha_;
  std::atomic<uint64_t> packed_{0};
  std::mutex mu_;
  uint64_t folded_count_ = 0;  // guarded by mu_
  double folded_sum_us_ = 0.0;
  double ewma_ = 0.0;
  bool has_ewma_ = false;
};

// InFlightGauge
//
// A ready-made signal source counting work in progress (requests in flight,
// queue length): `Enter()` returns a token that counts until it is destroyed.
// Thread-safe; tokens are movable, not copyable.
class InFlightGauge {
 public:
  class [[nodiscard]] Token {
   public:
    Token(Token&& other) noexcept
        : gauge_(std::exchange(other.gauge_, nullptr)) {}
    Token& operator=(Token&& other) noexcept {
      if (this != &other) {
        Release();
        gauge_ = std::exchange(other.gauge_, nullptr);
      }
      return *this;
    }
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() { Release(); }

   private:
    friend class InFlightGauge;
    explicit Token(InFlightGauge* g) : gauge_(g) {}
    void Release() {
      if (gauge_ != nullptr) {
        gauge_->count_.fetch_sub(1, std::memory_order_relaxed);
        gauge_ = nullptr;
      }
    }
    InFlightGauge* gauge_;
  };

  Token Enter() {
    count_.fetch_add(1, std::memory_order_relaxed);
    return Token(this);
  }
  int64_t current() const { return count_.load(std::memory_order_relaxed); }

  // A source function for `DegradationManager::AddSource`.
  std::function<double()> Source() const {
    return [this] { return static_cast<double>(current()); };
  }

 private:
  std::atomic<int64_t> count_{0};
};

// ManagerOptions
//
// How a DegradationManager names itself, tells time and logs.
struct ManagerOptions {
  // Names the manager in logs and statuses.
  std::string name = "degradation";
  // The time source; must outlive the manager. nullptr means the real clock.
  const Clock* clock = nullptr;
  // Receives one JSON object per line-worthy event (level change, override
  // expiry, config reload or rejection, source poll error), rate-limited per
  // event kind like every EventLog (5 lines per second by this manager's
  // clock, see `max_log_lines_per_second`). Unset means the registry's event
  // log (stderr by default), with the registry's limits.
  std::function<void(absl::string_view json_line)> log_sink;
  // With `log_sink`: lines of each event kind per second of this manager's
  // clock; later ones are suppressed and counted in the next line's
  // "suppressed" member.
  uint32_t max_log_lines_per_second = 5;
  // The telemetry the manager reports to (see telemetry.hpp): with a
  // MetricsRegistry, the degrade_level* series, its episodes and (unless
  // `log_sink` is set) its event lines. nullptr means DefaultTelemetry()
  // (none unless SetDefaultTelemetry() was called); NoTelemetry() means none
  // even then. With no telemetry and no `log_sink`, lines go to stderr.
  // REQUIRES: outlives the manager.
  Telemetry* metrics = nullptr;
};

// DegradationManager
//
// See the file comment. Neither copyable nor movable: gates point into it.
class DegradationManager {
 public:
  using Options = ManagerOptions;
  using Observer = std::function<void(const LevelChange&)>;

  // Starts with no configuration: level 0, every feature enabled, every
  // signal unknown. `Reload()` installs one.
  explicit DegradationManager(Options options = {})
      : name_(options.name.empty() ? "degradation" : std::move(options.name)),
        clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        has_own_log_(static_cast<bool>(options.log_sink)) {
    {
      detail::MutexLock lock(&mu_);
      level_since_ = clock_->Now();
      time_at_level_.assign(kMaxLevels + 1, absl::ZeroDuration());
      at_or_above_since_.fill(absl::InfiniteFuture());
    }
    Telemetry* telemetry = detail::ResolveTelemetry(options.metrics);
    // Every level change is a log line (the seed asks for it): to the sink
    // the options name, else to the telemetry's log, else to stderr.
    if (has_own_log_ || telemetry == nullptr) {
      EventLogOptions o;
      o.sink = std::move(options.log_sink);  // empty: stderr
      o.clock = clock_;
      o.max_lines_per_key = options.max_log_lines_per_second;
      own_log_ = std::make_unique<EventLog>(std::move(o));
      own_lines_ = std::make_unique<detail::ManagerLog>(own_log_.get(), name_);
    }
    // Last: the view must be complete before a telemetry may read it.
    if (telemetry != nullptr) listener_ = telemetry->AttachManager(view_);
  }

  // A manager with `config` installed, or the config's validation error.
  static absl::StatusOr<std::unique_ptr<DegradationManager>> Create(
      DegradationConfig config, Options options = {}) {
    auto m = std::make_unique<DegradationManager>(std::move(options));
    absl::Status s = m->Reload(std::move(config));
    if (!s.ok()) return s;
    return m;
  }

  DegradationManager(const DegradationManager&) = delete;
  DegradationManager& operator=(const DegradationManager&) = delete;

  // Stops the monitor thread, if running.
  ~DegradationManager() { Stop(); }

  const std::string& name() const { return name_; }

  // ---- Configuration ----

  // Validates `config` and, if it is valid, swaps it in atomically: readers
  // see the old or the new one, never a mixture. The current level carries
  // over, clamped to the new number of levels; holds and `enter_after`
  // timers restart. A config equal to the installed one changes nothing (a
  // config centre that re-pushes the same config every few seconds must not
  // keep restarting the holds). On error the old config keeps serving, the
  // rejection is counted and logged, and the error is returned.
  absl::Status Reload(DegradationConfig config) {
    absl::Status valid = ValidateDegradationConfig(config);
    if (!valid.ok()) return RejectReload(std::move(valid));
    {
      detail::MutexLock lock(&mu_);
      if (config_ != nullptr && *config_ == config) return absl::OkStatus();
      const absl::Time now = clock_->Now();
      InstallLocked(std::move(config), now);
      ++reloads_;
      ReloadEvent applied;
      applied.manager = name_;
      applied.time = now;
      applied.applied = true;
      applied.levels = static_cast<int>(compiled_.size());
      applied.level = level();
      PushLocked(Event(applied));
      EvaluateLocked(now);
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Records a reload that failed before reaching `Reload()` (a file that
  // could not be read or parsed): counts it, logs it, returns `error`.
  absl::Status RejectReload(absl::Status error) {
    {
      detail::MutexLock lock(&mu_);
      ++rejected_reloads_;
      ReloadEvent rejected;
      rejected.manager = name_;
      rejected.time = clock_->Now();
      rejected.error = error;
      PushLocked(Event(rejected));
    }
    Dispatch();
    return error;
  }

  // The installed config; nullptr before the first successful Reload().
  std::shared_ptr<const DegradationConfig> config() const {
    detail::MutexLock lock(&mu_);
    return config_;
  }
  uint64_t reloads() const {
    detail::MutexLock lock(&mu_);
    return reloads_;
  }
  uint64_t rejected_reloads() const {
    detail::MutexLock lock(&mu_);
    return rejected_reloads_;
  }

  // ---- Signals ----

  // Records a signal sample and re-evaluates the level. A non-finite value
  // or a signal that no level uses is rejected (INVALID_ARGUMENT naming it)
  // and changes nothing; before any config, FAILED_PRECONDITION.
  absl::Status Observe(absl::string_view signal, double value) {
    return ObserveBatch({{std::string(signal), value}});
  }

  // Records several samples, all or nothing: if any is rejected, none is
  // recorded. Then re-evaluates once.
  absl::Status ObserveBatch(
      const std::vector<std::pair<std::string, double>>& samples) {
    {
      detail::MutexLock lock(&mu_);
      if (config_ == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "degradation manager '", name_, "': no config installed yet"));
      }
      for (const auto& [signal, value] : samples) {
        absl::Status s = CheckSampleLocked(signal, value);
        if (!s.ok()) return s;
      }
      for (const auto& [signal, value] : samples) {
        values_[signal_index_.find(signal)->second] = value;
      }
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Re-evaluates with the clock's current time: a hold can complete, or an
  // override expire, without a new sample. The monitor calls it every poll.
  void Evaluate() {
    {
      detail::MutexLock lock(&mu_);
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
  }

  // The last recorded value of `signal`, if any.
  std::optional<double> signal_value(absl::string_view signal) const {
    detail::MutexLock lock(&mu_);
    const auto it = signal_index_.find(std::string(signal));
    if (it == signal_index_.end()) return std::nullopt;
    return values_[it->second];
  }

  // Registers a source polled by the monitor (or `PollOnce()`): `source()`
  // returns the signal's current value. Sources run outside the manager's
  // lock. A throwing source is reported as an error for that poll.
  // REQUIRES: whatever `source` refers to outlives the manager, or the
  // monitor is stopped first.
  void AddSource(std::string signal, std::function<double()> source) {
    detail::MutexLock lock(&mu_);
    sources_.push_back({std::move(signal), std::move(source)});
  }

  // Polls every source once, records what they return (skipping rejected
  // values), and re-evaluates. Returns the first error.
  absl::Status PollOnce() {
    std::vector<Source> sources;
    {
      detail::MutexLock lock(&mu_);
      sources = sources_;
    }
    absl::Status first_error;
    std::vector<std::pair<std::string, double>> samples;
    for (const Source& src : sources) {
      absl::StatusOr<double> v = CallSource(src);
      if (!v.ok()) {
        if (first_error.ok()) first_error = v.status();
        continue;
      }
      samples.emplace_back(src.signal, *v);
    }
    {
      detail::MutexLock lock(&mu_);
      if (config_ == nullptr && !samples.empty() && first_error.ok()) {
        first_error = absl::FailedPreconditionError(
            absl::StrCat("degradation manager '", name_,
                         "': no config installed yet; source values dropped"));
      }
      if (config_ != nullptr) {
        for (const auto& [signal, value] : samples) {
          absl::Status s = CheckSampleLocked(signal, value);
          if (!s.ok()) {
            if (first_error.ok()) first_error = s;
            continue;
          }
          values_[signal_index_.find(signal)->second] = value;
        }
      }
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
    return first_error;
  }

  // Starts a background thread that calls `PollOnce()` every `period` (real
  // time, whatever the clock). FAILED_PRECONDITION if already running or
  // called from the monitor thread; INVALID_ARGUMENT for a period <= 0 or
  // longer than 24 hours.
  absl::Status Start(absl::Duration period) {
    if (period <= absl::ZeroDuration() || period > absl::Hours(24)) {
      return absl::InvalidArgumentError(
          absl::StrCat("degradation manager '", name_, "': Start(",
                       absl::FormatDuration(period),
                       "): the period must be > 0 and at most 24h"));
    }
    if (monitor_.OnWorkerThread()) {
      return absl::FailedPreconditionError(
          absl::StrCat("degradation manager '", name_,
                       "': Start() called from the monitor thread"));
    }
    // A failing source is logged when its error changes, not on every poll,
    // so a broken source can't flood the log.
    auto tick = [this, last_error = std::string()]() mutable {
      const absl::Status s = PollOnce();
      const std::string error = s.ok() ? std::string() : s.ToString();
      if (error != last_error && !s.ok()) LogPollError(s);
      last_error = error;
    };
    if (!monitor_.StartIfIdle(period, std::move(tick))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "degradation manager '", name_, "': the monitor is already running"));
    }
    return absl::OkStatus();
  }

  // Stops the monitor and waits for it; a no-op when it isn't running.
  // Called from the monitor thread itself (a source, observer or log sink
  // running on it), it only asks the thread to stop after this poll; the
  // next Stop() or the destructor joins it.
  void Stop() { monitor_.Stop(); }

  // ---- Level and features ----

  // The current level, 0 (normal) to num_levels(). One atomic load.
  int level() const { return level_.load(std::memory_order_relaxed); }

  int num_levels() const {
    detail::MutexLock lock(&mu_);
    return static_cast<int>(compiled_.size());
  }

  // The gate of feature `name`, registered on first use. Call it once and
  // keep the gate; this call takes the lock.
  FeatureGate Feature(absl::string_view name) {
    detail::MutexLock lock(&mu_);
    auto it = features_.find(std::string(name));
    if (it == features_.end()) {
      auto slot = std::make_unique<Slot>();
      slot->name = std::string(name);
      slot->enabled.store(!DisabledAtLocked(slot->name, level()),
                          std::memory_order_relaxed);
      it = features_.emplace(slot->name, std::move(slot)).first;
    }
    return FeatureGate(&it->second->enabled, &it->second->name);
  }

  // Whether feature `name` is enabled at the current level. Takes the lock:
  // prefer a FeatureGate on hot paths.
  bool Enabled(absl::string_view name) const {
    detail::MutexLock lock(&mu_);
    return !DisabledAtLocked(std::string(name), level());
  }

  // ---- Manual override ----

  // Holds the level at `level` for `ttl` (InfiniteDuration: until cleared);
  // signals are still recorded but do not move the level. When the override
  // ends, the signals take over again from the forced level: a higher
  // wanted level applies at once, lower levels through staged recovery.
  // INVALID_ARGUMENT for a level outside [0, num_levels()] or ttl <= 0.
  absl::Status ForceLevel(int level, absl::Duration ttl) {
    {
      detail::MutexLock lock(&mu_);
      const int n = static_cast<int>(compiled_.size());
      if (level < 0 || level > n) {
        return absl::InvalidArgumentError(
            absl::StrCat("degradation manager '", name_, "': ForceLevel(",
                         level, "): the level must be in [0, ", n, "]"));
      }
      if (ttl <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "degradation manager '", name_, "': ForceLevel(", level, ", ",
            absl::FormatDuration(ttl), "): the ttl must be > 0"));
      }
      const absl::Time now = clock_->Now();
      override_ = Override{level, ttl == absl::InfiniteDuration()
                                      ? absl::InfiniteFuture()
                                      : now + ttl};
      if (level != this->level()) {
        LevelChange c = MakeChange(now, level, LevelChangeReason::kOverride);
        c.until = override_->until;
        ChangeLevelLocked(std::move(c));
      }
      recover_since_.reset();
    }
    Dispatch();
    return absl::OkStatus();
  }

  // Ends an override now; the signals take over (see ForceLevel).
  void ClearOverride() {
    {
      detail::MutexLock lock(&mu_);
      if (!override_) return;
      override_.reset();
      recover_since_.reset();
      EvaluateLocked(clock_->Now());
    }
    Dispatch();
  }

  // The forced level while an override is in force.
  std::optional<int> forced_level() {
    {
      detail::MutexLock lock(&mu_);
      EvaluateLocked(clock_->Now());  // applies a due expiry
    }
    Dispatch();
    detail::MutexLock lock(&mu_);
    if (!override_) return std::nullopt;
    return override_->level;
  }

  // ---- Observation ----

  // Called once per level change, in order, outside the lock.
  void AddObserver(Observer observer) {
    detail::MutexLock lock(&mu_);
    observers_.push_back(std::move(observer));
  }

  // Level changes since construction.
  uint64_t transitions() const {
    return transitions_.load(std::memory_order_relaxed);
  }

  // Total time spent at `level` so far, including the current stay.
  absl::Duration time_at_level(int level) const {
    detail::MutexLock lock(&mu_);
    if (level < 0 || level > kMaxLevels) return absl::ZeroDuration();
    absl::Duration d = time_at_level_[level];
    if (level == this->level()) d += clock_->Now() - level_since_;
    return d;
  }

 private:
  struct Slot {
    std::string name;
    std::atomic<bool> enabled{true};
  };

  struct Source {
    std::string signal;
    std::function<double()> fn;
  };

  struct Threshold {
    std::size_t signal;  // index into values_
    double value;
  };

  // A level with its signals resolved to indices.
  struct CompiledLevel {
    std::vector<Threshold> enter;
    std::vector<Threshold> recover;
    absl::Duration hold;
    absl::Duration enter_after;
    std::set<std::string> disabled;  // cumulative over levels 1..k
    bool all_non_critical = false;   // cumulative too
  };

  struct Override {
    int level;
    absl::Time until;
  };

  // One queued event for the listeners (and, for a level change, the
  // observers). Rare, so a plain struct with one member used per kind.
  struct Event {
    enum class Kind { kLevelChange, kReload, kOverrideExpired, kPollError };
    explicit Event(LevelChange c)
        : kind(Kind::kLevelChange), change(std::move(c)) {}
    explicit Event(ReloadEvent e) : kind(Kind::kReload), reload(std::move(e)) {}
    explicit Event(OverrideExpiredEvent e)
        : kind(Kind::kOverrideExpired), expired(e) {}
    explicit Event(PollErrorEvent e)
        : kind(Kind::kPollError), poll_error(std::move(e)) {}
    Kind kind;
    LevelChange change;
    ReloadEvent reload;
    OverrideExpiredEvent expired;
    PollErrorEvent poll_error;
  };

  absl::StatusOr<double> CallSource(const Source& src) const {
    // The same status as every throwing callable: UNKNOWN, with the
    // callable_exception payload.
    return detail::InvokeCatching<double>(
        src.fn, "degradation manager", name_,
        absl::StrCat("source for '", src.signal, "'"));
  }

  absl::Status CheckSampleLocked(const std::string& signal, double value) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (signal_index_.find(signal) == signal_index_.end()) {
      std::vector<std::string> known;
      for (const auto& [name, index] : signal_index_) known.push_back(name);
      return absl::InvalidArgumentError(absl::StrCat(
          "degradation manager '", name_, "': unknown signal '", signal,
          "' (no level uses it; known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("degradation manager '", name_, "': signal '", signal,
                       "' = ", value, ": values must be finite"));
    }
    return absl::OkStatus();
  }

  void InstallLocked(DegradationConfig config, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Keep the last value of every signal the new config still uses.
    std::map<std::string, double> kept;
    for (const auto& [name, index] : signal_index_) {
      if (values_[index]) kept[name] = *values_[index];
    }
    signal_index_.clear();
    values_.clear();
    compiled_.clear();
    const std::set<std::string> critical(config.critical.begin(),
                                         config.critical.end());
    std::set<std::string> disabled;
    bool all_non_critical = false;
    for (const LevelSpec& spec : config.levels) {
      CompiledLevel c;
      for (const auto& [signal, threshold] : spec.enter) {
        c.enter.push_back({IndexOfLocked(signal), threshold});
        c.recover.push_back(
            {IndexOfLocked(signal), RecoverThreshold(config, spec, signal)});
      }
      c.hold = spec.hold.value_or(config.hold);
      c.enter_after = spec.enter_after.value_or(config.enter_after);
      for (const std::string& f : spec.disable) {
        if (f == kAllNonCritical) {
          all_non_critical = true;
        } else {
          disabled.insert(f);
        }
      }
      c.disabled = disabled;
      c.all_non_critical = all_non_critical;
      compiled_.push_back(std::move(c));
    }
    for (const auto& [name, value] : kept) {
      const auto it = signal_index_.find(name);
      if (it != signal_index_.end()) values_[it->second] = value;
    }
    critical_ = critical;
    config_ = std::make_shared<const DegradationConfig>(std::move(config));
    enter_since_.assign(compiled_.size(), std::nullopt);
    recover_since_.reset();
    const int n = static_cast<int>(compiled_.size());
    if (override_ && override_->level > n) override_->level = n;
    if (level() > n) {
      LevelChange c = MakeChange(now, n, LevelChangeReason::kReload);
      ChangeLevelLocked(std::move(c));
    } else {
      RecomputeGatesLocked();
    }
  }

  std::size_t IndexOfLocked(const std::string& signal)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = signal_index_.find(signal);
    if (it == signal_index_.end()) {
      it = signal_index_.emplace(signal, values_.size()).first;
      values_.emplace_back();
    }
    return it->second;
  }

  bool DisabledAtLocked(const std::string& feature, int level) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (level <= 0 || compiled_.empty()) return false;
    const CompiledLevel& c = compiled_[static_cast<std::size_t>(level) - 1];
    if (c.disabled.count(feature) != 0) return true;
    return c.all_non_critical && critical_.count(feature) == 0;
  }

  // What the telemetry reads: a member rather than a base class, so the
  // manager itself has no virtual functions.
  class View final : public ManagerView {
   public:
    explicit View(const DegradationManager* m) : m_(m) {}
    const std::string& name() const override { return m_->name_; }
    ManagerStats stats() const override { return m_->Stats(); }
    bool has_own_log() const override { return m_->has_own_log_; }

   private:
    const DegradationManager* const m_;
  };

  ManagerStats Stats() const {
    detail::MutexLock lock(&mu_);
    ManagerStats st;
    st.now = clock_->Now();
    st.level = level();
    st.num_levels = static_cast<int>(compiled_.size());
    st.transitions.assign(level_transitions_.begin(), level_transitions_.end());
    for (int k = 0; k <= std::max(st.num_levels, st.level); ++k) {
      absl::Duration d = time_at_level_[static_cast<std::size_t>(k)];
      if (k == st.level) d += st.now - level_since_;
      st.time_at_level.push_back(d);
    }
    for (const auto& [feature, slot] : features_) {
      st.features.emplace_back(feature,
                               slot->enabled.load(std::memory_order_relaxed));
    }
    st.reloads = reloads_;
    st.rejected_reloads = rejected_reloads_;
    for (int k = 1; k <= st.level; ++k) {
      st.at_or_above_since.push_back(
          at_or_above_since_[static_cast<std::size_t>(k)]);
    }
    return st;
  }

  void RecomputeGatesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int l = level();
    for (auto& [name, slot] : features_) {
      slot->enabled.store(!DisabledAtLocked(name, l),
                          std::memory_order_relaxed);
    }
  }

  LevelChange MakeChange(absl::Time now, int to, LevelChangeReason reason) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    LevelChange c;
    c.time = now;
    c.manager = name_;
    c.from = level();
    c.to = to;
    c.reason = reason;
    return c;
  }

  void ChangeLevelLocked(LevelChange c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    time_at_level_[c.from] += c.time - level_since_;
    ++level_transitions_[{c.from, c.to}];
    for (int k = c.from + 1; k <= c.to; ++k) at_or_above_since_[k] = c.time;
    for (int k = c.to + 1; k <= c.from; ++k) {
      at_or_above_since_[k] = absl::InfiniteFuture();
    }
    level_since_ = c.time;
    last_change_ = c.time;
    level_.store(c.to, std::memory_order_relaxed);
    transitions_.fetch_add(1, std::memory_order_relaxed);
    RecomputeGatesLocked();
    events_.Push(Event(std::move(c)));
  }

  void LogPollError(const absl::Status& s) {
    {
      detail::MutexLock lock(&mu_);
      PollErrorEvent e;
      e.manager = name_;
      e.time = clock_->Now();
      e.error = s;
      PushLocked(Event(std::move(e)));
    }
    Dispatch();
  }

  void PushLocked(Event e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    events_.Push(std::move(e));
  }

  // Whether every signal of level k (1-based) is below its recover threshold.
  // A signal never observed counts as below: no evidence of load.
  bool BelowRecoverLocked(int k) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const Threshold& t :
         compiled_[static_cast<std::size_t>(k) - 1].recover) {
      const std::optional<double>& v = values_[t.signal];
      if (v && *v >= t.value) return false;
    }
    return true;
  }

  void EvaluateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int n = static_cast<int>(compiled_.size());
    if (n == 0) return;
    // Track each level's trigger on every evaluation, also while forced, so
    // that `enter_after` measures real persistence.
    int wanted = 0;
    const Threshold* why = nullptr;
    for (int k = 1; k <= n; ++k) {
      const CompiledLevel& c = compiled_[static_cast<std::size_t>(k) - 1];
      const Threshold* hit = nullptr;
      double worst = 0.0;
      for (const Threshold& t : c.enter) {
        const std::optional<double>& v = values_[t.signal];
        if (!v || *v < t.value) continue;
        const double ratio = t.value > 0.0 ? *v / t.value : 1e300;
        if (hit == nullptr || ratio > worst) {
          hit = &t;
          worst = ratio;
        }
      }
      std::optional<absl::Time>& since =
          enter_since_[static_cast<std::size_t>(k) - 1];
      if (hit == nullptr) {
        since.reset();
        continue;
      }
      if (!since) since = now;
      if (now - *since >= c.enter_after) {
        wanted = k;
        why = hit;
      }
    }

    if (override_) {
      if (now < override_->until) return;
      OverrideExpiredEvent expired;
      expired.manager = name_;
      expired.time = now;
      expired.level = override_->level;
      PushLocked(Event(expired));
      override_.reset();
      recover_since_.reset();
    }

    const int current = level();
    if (wanted > current) {
      LevelChange c = MakeChange(now, wanted, LevelChangeReason::kSignal);
      c.signal = SignalName(why->signal);
      c.value = *values_[why->signal];
      c.threshold = why->value;
      ChangeLevelLocked(std::move(c));
      recover_since_.reset();
      return;
    }
    if (current == 0) return;
    if (!BelowRecoverLocked(current)) {
      recover_since_.reset();
      return;
    }
    if (!recover_since_) recover_since_ = now;
    const CompiledLevel& c = compiled_[static_cast<std::size_t>(current) - 1];
    if (now - *recover_since_ >= c.hold &&
        now - last_change_ >= config_->cooldown) {
      LevelChange change =
          MakeChange(now, current - 1, LevelChangeReason::kRecovered);
      change.hold = c.hold;
      ChangeLevelLocked(std::move(change));
      // Each step needs a fresh hold, starting now if the next level's
      // signals are already below their recover thresholds.
      recover_since_.reset();
      if (current - 1 > 0 && BelowRecoverLocked(current - 1)) {
        recover_since_ = now;
      }
    }
  }

  std::string SignalName(std::size_t index) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [name, i] : signal_index_) {
      if (i == index) return name;
    }
    return "";
  }

  // Delivers queued events outside `mu_`, in order: to the manager's own
  // log lines, to the telemetry's listener, then (level changes) to the
  // observers. Each on its own: one that throws silences no other.
  void Dispatch() {
    events_.Drain([this](const Event& e) {
      for (ManagerListener* l : {own_lines_.get(), listener_.get()}) {
        if (l != nullptr) detail::CallQuietly([l, &e] { Deliver(*l, e); });
      }
      if (e.kind != Event::Kind::kLevelChange) return;
      std::vector<Observer> observers;
      {
        detail::MutexLock lock(&mu_);
        observers = observers_;
      }
      for (const Observer& o : observers) detail::CallQuietly(o, e.change);
    });
  }

  static void Deliver(ManagerListener& l, const Event& e) {
    switch (e.kind) {
      case Event::Kind::kLevelChange:
        l.OnLevelChange(e.change);
        break;
      case Event::Kind::kReload:
        l.OnReload(e.reload);
        break;
      case Event::Kind::kOverrideExpired:
        l.OnOverrideExpired(e.expired);
        break;
      case Event::Kind::kPollError:
        l.OnPollError(e.poll_error);
        break;
    }
  }

  const std::string name_;
  const Clock* const clock_;
  const bool has_own_log_;

  // Read on every gate check and level() call.
  std::atomic<int> level_{0};
  std::atomic<uint64_t> transitions_{0};

  mutable detail::Mutex mu_;
  std::shared_ptr<const DegradationConfig> config_ ABSL_GUARDED_BY(mu_);
  std::vector<CompiledLevel> compiled_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> critical_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::size_t> signal_index_ ABSL_GUARDED_BY(mu_);
  std::vector<std::optional<double>> values_ ABSL_GUARDED_BY(mu_);
  std::vector<std::optional<absl::Time>> enter_since_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> recover_since_ ABSL_GUARDED_BY(mu_);
  absl::Time last_change_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time level_since_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> time_at_level_ ABSL_GUARDED_BY(mu_);
  std::optional<Override> override_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<Slot>> features_ ABSL_GUARDED_BY(mu_);
  std::vector<Source> sources_ ABSL_GUARDED_BY(mu_);
  std::vector<Observer> observers_ ABSL_GUARDED_BY(mu_);
  uint64_t reloads_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rejected_reloads_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<int, int>, uint64_t> level_transitions_
      ABSL_GUARDED_BY(mu_);
  // at_or_above_since_[k]: since when the level has been >= k (k >= 1);
  // InfiniteFuture while it is below.
  std::array<absl::Time, kMaxLevels + 1> at_or_above_since_
      ABSL_GUARDED_BY(mu_);
  detail::SerialDispatcher<Event> events_;

  const View view_{this};
  // The manager's own lines (log_sink, or stderr without a telemetry).
  std::unique_ptr<EventLog> own_log_;
  std::unique_ptr<ManagerListener> own_lines_;
  // What the telemetry attached; destroyed after the monitor stops and
  // before anything its view reads.
  std::unique_ptr<ManagerListener> listener_;
  // Last, so that it stops before anything its polls touch is destroyed.
  detail::PeriodicWorker monitor_;
};

// ---- The `when` combinators ----

namespace detail {

// Produces the fallback result of type R from `fallback`: a value
// convertible to R, or a callable taking no arguments that returns one.
template <typename R, typename Fallback>
R FallbackResult(const Fallback& fallback) {
  if constexpr (std::is_invocable_v<const Fallback&>) {
    return fallback();
  } else {
    static_assert(std::is_convertible_v<const Fallback&, R>,
                  "degrade::When: the fallback must be a value convertible "
                  "to the function's result, or a callable returning one");
    return fallback;
  }
}

template <typename Gate, typename F, typename Fallback>
class Guarded {
 public:
  Guarded(Gate gate, F f, Fallback fallback)
      : gate_(std::move(gate)),
        f_(std::move(f)),
        fallback_(std::move(fallback)) {}

  template <typename... Args>
  auto operator()(Args&&... args) const
      -> std::invoke_result_t<const F&, Args&&...> {
    using R = std::invoke_result_t<const F&, Args&&...>;
    if (gate_()) return std::invoke(f_, std::forward<Args>(args)...);
    if constexpr (std::is_void_v<R>) {
      return;
    } else {
      return FallbackResult<R>(fallback_);
    }
  }

 private:
  Gate gate_;
  F f_;
  Fallback fallback_;
};

struct NoFallback {};

}  // namespace detail

// When(manager, k, f, fallback)
//
// The article's `when` decorator: returns a callable that runs `f` (with the
// caller's arguments) while `manager.level() < k`, and otherwise returns
// `fallback` (a value, or the result of calling it if it is a no-argument
// callable). Omit `fallback` for functions returning void: they are skipped.
// The check is one atomic load. REQUIRES: the manager outlives the wrapper.
template <typename F, typename Fallback>
auto When(const DegradationManager& manager, int k, F f, Fallback fallback) {
  const DegradationManager* m = &manager;
  auto gate = [m, k] { return m->level() < k; };
  return detail::Guarded<decltype(gate), F, Fallback>(gate, std::move(f),
                                                      std::move(fallback));
}
template <typename F>
auto When(const DegradationManager& manager, int k, F f) {
  return When(manager, k, std::move(f), detail::NoFallback{});
}

// WhenEnabled(gate, f, fallback)
//
// Like When, keyed on a feature: runs `f` while `gate.enabled()`.
template <typename F, typename Fallback>
auto WhenEnabled(FeatureGate gate, F f, Fallback fallback) {
  auto check = [gate] { return gate.enabled(); };
  return detail::Guarded<decltype(check), F, Fallback>(check, std::move(f),
                                                       std::move(fallback));
}
template <typename F>
auto WhenEnabled(FeatureGate gate, F f) {
  return WhenEnabled(gate, std::move(f), detail::NoFallback{});
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DEGRADATION_MANAGER_HPP_
