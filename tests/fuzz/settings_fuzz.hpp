// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: settings and durations at the extremes. From arbitrary bytes
// it builds one of
//
//   * breaker settings (windows, trip rules, backoff and jitter, slow calls,
//     half_open_max_wait),
//   * a degradation config and manager options,
//   * hot-list options, and (when degrade::redis is built) Redis hot-list
//     source options (validation and Create only: nothing connects),
//
// drawing every duration from a set of extremes (0, 1 ns, 999 ns, 1 us,
// seconds, years, 300 years, the largest finite duration, InfiniteDuration
// and their negatives) and every number from NaN, +/-inf, FLT_MAX, DBL_MAX,
// denormals, -0, 0, 1 and just above. It validates them; a valid value is
// constructed on a FakeClock and driven with random calls (successes,
// failures, slow calls, abandoned permits, signal samples, polls,
// overrides, reloads, publishes) while the clock jumps to InfinitePast,
// InfiniteFuture, the Unix epoch, steps backwards and years forwards.
// Beyond "no crash, hang, UB or leak" it checks:
//
//   * a valid value constructs; an invalid one is refused with
//     INVALID_ARGUMENT naming a field, and the breaker's repair of it
//     validates;
//   * a breaker's state is a State; its counts add up and never wrap; its
//     lifetime totals balance exactly; transitions chain (from != to, each
//     from the last one's to) and match the generation;
//   * a manager's level is in [0, num_levels]; level changes chain and are
//     counted; no time at a level is negative; a refused reload or sample
//     changes nothing;
//   * a hot list's snapshot holds at most top_n items and its age is never
//     negative.

#ifndef DEGRADE_TESTS_FUZZ_SETTINGS_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_SETTINGS_FUZZ_HPP_

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "fuzz/fuzz_support.hpp"
#if defined(DEGRADE_FUZZ_HAVE_REDIS)
#include "degrade/redis/hot_list_source.hpp"
#endif

namespace degrade_fuzz {

// Reads the input a byte at a time; past its end every read is 0, so any
// prefix of an input is an input.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}

  bool empty() const { return p_ == end_; }
  uint8_t U8() { return p_ == end_ ? 0 : *p_++; }
  bool Bool() { return (U8() & 1) != 0; }
  uint64_t U64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | U8();
    return v;
  }
  template <typename T, std::size_t N>
  const T& Pick(const T (&table)[N]) {
    return table[U8() % N];
  }

  absl::Duration Duration() {
    static const absl::Duration kYear = absl::Hours(24 * 365);
    static const absl::Duration kTable[] = {
        absl::ZeroDuration(),         absl::Nanoseconds(1),
        absl::Nanoseconds(999),       absl::Microseconds(1),
        absl::Milliseconds(1),        absl::Milliseconds(50),
        absl::Seconds(1),             absl::Seconds(30),
        absl::Hours(1),               kYear,
        kYear * 300,                  absl::Seconds(INT64_MAX),
        absl::InfiniteDuration(),     -absl::Nanoseconds(1),
        -absl::Seconds(1),            -kYear * 300,
        -absl::InfiniteDuration(),    absl::Seconds(INT64_MIN),
    };
    const uint8_t k = U8();
    if (k < 240) return kTable[k % (sizeof(kTable) / sizeof(kTable[0]))];
    // Any nanosecond count, and its neighbourhood of the table.
    return absl::Nanoseconds(static_cast<int64_t>(U64()));
  }

  double Number() {
    static const double kTable[] = {
        std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(),
        FLT_MAX,
        -FLT_MAX,
        DBL_MAX,
        -DBL_MAX,
        std::numeric_limits<double>::denorm_min(),
        DBL_MIN,
        0.0,
        -0.0,
        1.0,
        std::nextafter(1.0, 2.0),
        std::nextafter(1.0, 0.0),
        0.5,
        2.0,
        10.0,
        100.0,
        0.8,
        -1.0,
        9007199254740993.0,  // 2^53 + 1, as a double (2^53)
    };
    const uint8_t k = U8();
    if (k < 240) return kTable[k % (sizeof(kTable) / sizeof(kTable[0]))];
    const uint64_t bits = U64();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }

  uint64_t Count() {
    static const uint64_t kTable[] = {0, 1, 2, 3, 5, 6, 10, 100,
                                      10000, 10001, 100000, 100001,
                                      UINT32_MAX, UINT64_MAX};
    return Pick(kTable);
  }

  // A short name from a small alphabet, so that names collide.
  std::string Name() {
    static const char* const kNames[] = {"", "a", "b", "cpu", "qps", "lat",
                                         "all_non_critical", "x\"\n\\"};
    return Pick(kNames);
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Where the clock jumps.
inline absl::Time NextTime(ByteReader& in, absl::Time now) {
  switch (in.U8() % 8) {
    case 0:
      return absl::InfinitePast();
    case 1:
      return absl::InfiniteFuture();
    case 2:
      return absl::UnixEpoch();
    case 3:
      return now - absl::Nanoseconds(1);  // a step back
    case 4:
      return now - in.Duration();
    case 5:
      return now + absl::Hours(24 * 365 * 10);
    case 6:
      return absl::FromUnixNanos(static_cast<int64_t>(in.U64()));
    default:
      return now + in.Duration();
  }
}

// Moves `clock` as the next byte says: a jump (Set) or an Advance.
inline void MoveClock(ByteReader& in, degrade::FakeClock& clock) {
  if (in.Bool()) {
    clock.Set(NextTime(in, clock.Now()));
  } else {
    clock.Advance(in.Duration());
  }
}

// INVALID_ARGUMENT, and the message names one of `fields`.
inline void CheckNamesAField(const absl::Status& s, const char* what,
                             const std::vector<const char*>& fields) {
  DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), what, ": ", s.ToString());
  bool named = false;
  for (const char* f : fields) named = named || absl::StrContains(s.message(), f);
  DEGRADE_FUZZ_CHECK(named, what, " names no field: ", s.message());
}

// ---- The breaker ----

inline degrade::BreakerSettings BreakerSettingsFrom(ByteReader& in,
                                                    const degrade::Clock* clock) {
  degrade::BreakerSettings s;
  s.name = in.Name();
  s.clock = clock;
  s.metrics = degrade::NoTelemetry();
  s.max_requests = static_cast<uint32_t>(in.Count());
  s.interval = in.Duration();
  s.timeout = in.Duration();
  s.slow_call_duration = in.Duration();
  s.backoff_multiplier = in.Number();
  s.max_timeout = in.Duration();
  s.backoff_jitter = in.Number();
  s.half_open_max_wait = in.Duration();
  switch (in.U8() % 4) {
    case 0:
      break;
    case 1:
      s.window = degrade::SlidingWindow::Count(static_cast<uint32_t>(in.Count()));
      break;
    case 2:
      s.window = degrade::SlidingWindow::Time(
          in.Duration(), static_cast<uint32_t>(in.Count()));
      break;
    default:  // a kind that is none of the enumerators
      s.window.kind = static_cast<degrade::SlidingWindow::Kind>(3 + in.U8() % 250);
      s.window.size = static_cast<uint32_t>(in.Count());
      s.window.length = in.Duration();
  }
  switch (in.U8() % 5) {
    case 0:
      break;
    case 1:
      s.ready_to_trip = degrade::trip::ConsecutiveFailures(in.Count());
      break;
    case 2:
      s.ready_to_trip = degrade::trip::FailureRate(in.Number(), in.Count());
      break;
    case 3:
      s.ready_to_trip = degrade::trip::SlowCallRate(in.Number(), in.Count());
      break;
    default:
      s.ready_to_trip = degrade::trip::AnyOf(
          degrade::trip::FailureRate(in.Number(), in.Count()),
          degrade::trip::ConsecutiveFailures(in.Count()));
  }
  if (in.Bool()) {
    s.is_excluded = [](const absl::Status& st) {
      return absl::IsInvalidArgument(st);
    };
  }
  // The resilience4j half (issue 14), enumerators out of range included.
  s.half_open_policy = static_cast<degrade::HalfOpenPolicy>(in.U8() % 3);
  s.half_open_failure_rate = in.Bool() ? in.Number() : 0.0;
  s.half_open_slow_call_rate = in.Bool() ? in.Number() : 0.0;
  s.half_open_wait_from = static_cast<degrade::HalfOpenWaitFrom>(in.U8() % 3);
  s.half_open_wait_expiry =
      static_cast<degrade::HalfOpenWaitExpiry>(in.U8() % 3);
  s.initial_state = static_cast<degrade::InitialState>(in.U8() % 6);
  return s;
}

inline const std::vector<const char*>& BreakerFields() {
  static const std::vector<const char*> kFields = {
      "'interval'",    "'timeout'",      "'slow_call_duration'",
      "'max_timeout'", "'half_open_max_wait'", "'backoff_multiplier'",
      "'backoff_jitter'", "'window.kind'", "'window.size'", "'window.length'",
      "'ready_to_trip'", "'half_open_policy'", "'half_open_failure_rate'",
      "'half_open_slow_call_rate'", "'half_open_wait_from'",
      "'half_open_wait_expiry'", "'initial_state'"};
  return kFields;
}

// What a breaker's callback saw, for the chain check.
struct TransitionLog {
  bool any = false;
  degrade::State last_to = degrade::State::kClosed;
  uint64_t count = 0;
  // Set while the driver makes a manual call (ForceOpen, Disable, ...).
  bool in_manual = false;
};

inline bool IsState(degrade::State s) {
  return s == degrade::State::kClosed || s == degrade::State::kHalfOpen ||
         s == degrade::State::kOpen;
}

inline void CheckBreaker(degrade::CircuitBreaker<void>& b, std::size_t in_flight,
                         uint64_t ops) {
  DEGRADE_FUZZ_CHECK(IsState(b.state()), static_cast<int>(b.state()));
  const degrade::Counts c = b.counts();
  // Every counter is bounded by the calls made: a larger one wrapped.
  for (const uint64_t v :
       {c.requests, c.total_successes, c.total_failures, c.total_exclusions,
        c.consecutive_successes, c.consecutive_failures, c.window_calls,
        c.window_failures, c.window_slow_calls}) {
    DEGRADE_FUZZ_CHECK(v <= ops, "a count of ", v, " after ", ops, " calls");
  }
  DEGRADE_FUZZ_CHECK(
      c.total_successes + c.total_failures + c.total_exclusions <= c.requests,
      "outcomes beyond requests");
  DEGRADE_FUZZ_CHECK(c.window_failures <= c.window_calls, "window failures");
  DEGRADE_FUZZ_CHECK(c.window_slow_calls <= c.window_calls, "window slow");
  const double fr = c.failure_rate();
  DEGRADE_FUZZ_CHECK(fr >= 0.0 && fr <= 1.0, fr);
  const degrade::BreakerTotals t = b.totals();
  DEGRADE_FUZZ_CHECK(t.admitted == t.successes + t.failures + t.exclusions +
                                       t.abandoned + t.stale + in_flight,
                     "totals: admitted ", t.admitted, " successes ",
                     t.successes, " failures ", t.failures, " exclusions ",
                     t.exclusions, " abandoned ", t.abandoned, " stale ",
                     t.stale, " in flight ", in_flight);
  DEGRADE_FUZZ_CHECK(t.slow_calls <= t.successes + t.failures, "slow calls");
  DEGRADE_FUZZ_CHECK(t.admitted + t.rejected_open + t.rejected_too_many <= ops,
                     "more decisions than calls");
  DEGRADE_FUZZ_CHECK(b.current_open_duration() > absl::ZeroDuration(),
                     absl::FormatDuration(b.current_open_duration()));
}

inline void FuzzBreaker(ByteReader& in) {
  degrade::FakeClock clock(NextTime(in, absl::FromUnixSeconds(1'700'000'000)));
  degrade::BreakerSettings s = BreakerSettingsFrom(in, &clock);
  const absl::Status valid = degrade::ValidateBreakerSettings(s);
  if (!valid.ok()) {
    CheckNamesAField(valid, "breaker settings", BreakerFields());
    DEGRADE_FUZZ_CHECK(
        absl::StartsWith(valid.message(), absl::StrCat("circuit breaker '")),
        valid.message());
    const auto refused = degrade::CircuitBreaker<void>::Create(s);
    DEGRADE_FUZZ_CHECK(!refused.ok() && refused.status() == valid,
                       refused.status().ToString());
    const degrade::BreakerSettings repaired =
        degrade::detail::NormalizeBreakerSettings(s);
    DEGRADE_FUZZ_CHECK(degrade::ValidateBreakerSettings(repaired).ok(),
                       degrade::ValidateBreakerSettings(repaired).ToString());
  }
  auto log = std::make_shared<TransitionLog>();
  s.on_state_change = [log](const std::string&, degrade::State from,
                            degrade::State to) {
    // A state kept is reported only for a manual call (issue 14: every
    // manual change is reported, Disable() on a closed breaker included).
    DEGRADE_FUZZ_CHECK(IsState(from) && IsState(to) &&
                           (from != to || log->in_manual),
                       static_cast<int>(from), "->", static_cast<int>(to));
    DEGRADE_FUZZ_CHECK(!log->any || from == log->last_to, "a broken chain");
    log->any = true;
    log->last_to = to;
    ++log->count;
  };
  std::unique_ptr<degrade::CircuitBreaker<void>> owned;
  if (valid.ok()) {
    auto created = degrade::CircuitBreaker<void>::Create(s);
    DEGRADE_FUZZ_CHECK(created.ok(), created.status().ToString());
    owned = *std::move(created);
  } else {
    owned = std::make_unique<degrade::CircuitBreaker<void>>(s);  // repairs
  }
  degrade::CircuitBreaker<void>& b = *owned;

  // Permits held, and whether each counts in totals (one admitted while
  // the breaker bypassed records nothing).
  std::vector<degrade::Permit> permits;
  std::vector<bool> recorded;
  const auto in_flight = [&] {
    return static_cast<std::size_t>(
        std::count(recorded.begin(), recorded.end(), true));
  };
  uint64_t ops = 0;
  uint64_t last_generation = b.generation();
  while (!in.empty() && ops < 512) {
    ++ops;
    switch (in.U8() % 12) {
      case 0:
        b.Execute([] { return absl::OkStatus(); }).IgnoreError();
        break;
      case 1:
        b.Execute([] { return absl::UnavailableError("down"); }).IgnoreError();
        break;
      case 2:
        b.Execute([] { return absl::InvalidArgumentError("excluded?"); })
            .IgnoreError();
        break;
      case 3: {  // a slow call: the clock moves while it runs
        b.Execute([&] {
           MoveClock(in, clock);
           return in.Bool() ? absl::OkStatus() : absl::InternalError("slow");
         }).IgnoreError();
        break;
      }
      case 4: {
        const bool bypassed = b.bypassed();
        absl::StatusOr<degrade::Permit> p = b.Allow();
        if (p.ok() && permits.size() < 8) {
          permits.push_back(*std::move(p));
          recorded.push_back(!bypassed);
        }
        break;
      }
      case 5:
        if (!permits.empty()) {
          const std::size_t i = in.U8() % permits.size();
          permits[i].Done(in.Bool() ? absl::OkStatus()
                                    : absl::DeadlineExceededError("late"));
          permits.erase(permits.begin() + static_cast<std::ptrdiff_t>(i));
          recorded.erase(recorded.begin() + static_cast<std::ptrdiff_t>(i));
        }
        break;
      case 6:  // abandoned
        if (!permits.empty()) {
          permits.pop_back();
          recorded.pop_back();
        }
        break;
      case 7:
      case 8:
        MoveClock(in, clock);
        break;
      case 9:
        log->in_manual = true;
        switch (in.U8() % 6) {
          case 0:
            b.ForceOpen();
            break;
          case 1:
            b.Disable();
            break;
          case 2:
            b.Bypass();
            break;
          case 3:  // refused (and nothing changes) below 1 ns
            b.ForceOpenFor(in.Duration()).IgnoreError();
            break;
          case 4:
            b.ForceOpenUntil(clock.Now() + in.Duration()).IgnoreError();
            break;
          default:
            b.Reset();
        }
        log->in_manual = false;
        break;
      case 10:
        b.state();
        break;
      default:
        b.counts();
    }
    CheckBreaker(b, in_flight(), ops);
    const uint64_t g = b.generation();
    DEGRADE_FUZZ_CHECK(g >= last_generation, "the generation went back");
    last_generation = g;
  }
  permits.clear();
  recorded.clear();
  CheckBreaker(b, 0, ops);
  if (log->any) {
    DEGRADE_FUZZ_CHECK(log->last_to == b.state(), "the last transition is not "
                                                  "the state");
  }
}

// ---- The manager ----

inline degrade::DegradationConfig ConfigFrom(ByteReader& in) {
  degrade::DegradationConfig c;
  if (in.Bool()) c.name = in.Name();
  const int levels = in.U8() % 10;  // 0 and 9 are invalid
  for (int i = 0; i < levels; ++i) {
    degrade::LevelSpec l;
    if (in.Bool()) l.name = in.Name();
    const int triggers = in.U8() % 4;
    for (int k = 0; k < triggers; ++k) l.enter[in.Name()] = in.Number();
    if (in.Bool()) l.recover[in.Name()] = in.Number();
    const int disabled = in.U8() % 3;
    for (int k = 0; k < disabled; ++k) l.disable.push_back(in.Name());
    if (in.Bool()) l.hold = in.Duration();
    if (in.Bool()) l.enter_after = in.Duration();
    c.levels.push_back(std::move(l));
  }
  if (in.Bool()) c.recover_ratio = in.Number();
  if (in.Bool()) c.hold = in.Duration();
  if (in.Bool()) c.enter_after = in.Duration();
  if (in.Bool()) c.cooldown = in.Duration();
  if (in.Bool()) c.critical.push_back(in.Name());
  // Admission floors last, so that older corpus inputs still spell the same
  // configs (a reader past the end yields zeros: no floors).
  if (in.Bool()) {
    for (degrade::LevelSpec& l : c.levels) {
      if (!in.Bool()) continue;
      degrade::AdmitFloor a;
      a.min = static_cast<degrade::Criticality>(in.U8() % 5);  // 4 is invalid
      a.cohorts_at_min = static_cast<int>(in.U8() % 131);      // 129, 130 too
      l.admit = a;
    }
  }
  return c;
}

// A config most inputs can't spell: one valid level on "cpu".
inline degrade::DegradationConfig GoodConfig() {
  degrade::DegradationConfig c;
  degrade::LevelSpec l;
  l.enter["cpu"] = 0.9;
  l.disable.push_back("a");
  c.levels.push_back(l);
  c.hold = absl::Seconds(1);
  return c;
}

struct ManagerLog {
  bool any = false;
  int last_to = 0;
  uint64_t changes = 0;
};

inline void CheckManager(const degrade::DegradationManager& m,
                         const ManagerLog& log) {
  const int n = m.num_levels();
  DEGRADE_FUZZ_CHECK(m.level() >= 0 && m.level() <= n, m.level(), " of ", n);
  DEGRADE_FUZZ_CHECK(m.transitions() == log.changes, m.transitions(), " vs ",
                     log.changes, " observed");
  // The published admission threshold is the floor of the nearest level at
  // or below the current one that names one.
  int floor = degrade::kAdmitAllRank;
  const auto config = m.config();
  for (int k = 0; k < m.level() && k < static_cast<int>(config->levels.size());
       ++k) {
    if (config->levels[k].admit) floor = config->levels[k].admit->threshold();
  }
  DEGRADE_FUZZ_CHECK(m.admission_threshold() == floor, m.admission_threshold(),
                     " published, ", floor, " expected at level ", m.level());
  for (int k = 0; k <= degrade::kMaxLevels; ++k) {
    const absl::Duration at = m.time_at_level(k);
    DEGRADE_FUZZ_CHECK(at >= absl::ZeroDuration(), "time at level ", k, " is ",
                       absl::FormatDuration(at));
  }
}

inline void FuzzManager(ByteReader& in) {
  degrade::FakeClock clock(NextTime(in, absl::FromUnixSeconds(1'700'000'000)));
  degrade::ManagerOptions o;
  o.name = in.Name();
  o.clock = &clock;
  o.metrics = degrade::NoTelemetry();
  const uint32_t kRates[] = {0, 1, 5, UINT32_MAX};
  o.max_log_lines_per_second = in.Pick(kRates);
  auto lines = std::make_shared<uint64_t>(0);
  o.log_sink = [lines](absl::string_view line) {
    DEGRADE_FUZZ_CHECK(!line.empty() && line.front() == '{', line);
    ++*lines;
  };

  const degrade::DegradationConfig config = ConfigFrom(in);
  const absl::Status valid = degrade::ValidateDegradationConfig(config);
  degrade::DegradationManager m(o);
  if (!valid.ok()) {
    DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(valid), valid.ToString());
    DEGRADE_FUZZ_CHECK(
        absl::StartsWith(valid.message(), "degradation config '") &&
            absl::StrContains(valid.message(), "degradation"),
        valid.message());
    const auto refused = degrade::DegradationManager::Create(config, o);
    DEGRADE_FUZZ_CHECK(!refused.ok() && refused.status() == valid,
                       refused.status().ToString());
    // A serving manager keeps its config.
    DEGRADE_FUZZ_CHECK(m.Reload(GoodConfig()).ok(), "GoodConfig");
    const auto before = m.config();
    DEGRADE_FUZZ_CHECK(m.Reload(config) == valid, "Reload != Validate");
    DEGRADE_FUZZ_CHECK(m.config() == before, "a refused config installed");
    DEGRADE_FUZZ_CHECK(m.rejected_reloads() == 1, m.rejected_reloads());
  } else {
    DEGRADE_FUZZ_CHECK(m.Reload(config).ok(), "a valid config refused");
  }

  auto log = std::make_shared<ManagerLog>();
  m.AddObserver([log](const degrade::LevelChange& c) {
    DEGRADE_FUZZ_CHECK(c.from != c.to, c.from);
    DEGRADE_FUZZ_CHECK(c.from == (log->any ? log->last_to : c.from),
                       "a broken chain: ", c.from, " after ", log->last_to);
    log->any = true;
    log->last_to = c.to;
    ++log->changes;
  });
  // The observer sees changes from now on; count the ones before.
  log->changes = m.transitions();
  log->last_to = m.level();
  log->any = true;
  auto source_value = std::make_shared<double>(0.0);
  m.AddSource("cpu", [source_value] { return *source_value; });

  uint64_t ops = 0;
  while (!in.empty() && ops < 256) {
    ++ops;
    switch (in.U8() % 10) {
      case 0:
      case 1: {
        const std::string signal = in.Name();
        const double v = in.Number();
        const int level = m.level();
        const absl::Status s = m.Observe(signal, v);
        if (!std::isfinite(v)) {
          DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), "took ", v);
          DEGRADE_FUZZ_CHECK(m.level() == level, "a refused sample moved it");
        }
        break;
      }
      case 2:
        m.ObserveBatch({{in.Name(), in.Number()}, {in.Name(), in.Number()}})
            .IgnoreError();
        break;
      case 3:
      case 4:
        MoveClock(in, clock);
        m.Evaluate();
        break;
      case 5:
        *source_value = in.Number();
        m.PollOnce().IgnoreError();
        break;
      case 6: {
        const int level = static_cast<int>(in.U8() % 11) - 1;
        const absl::Status s = m.ForceLevel(level, in.Duration());
        if (level < 0 || level > m.num_levels()) {
          DEGRADE_FUZZ_CHECK(absl::IsInvalidArgument(s), s.ToString());
        }
        break;
      }
      case 7:
        if (in.Bool()) {
          m.ClearOverride();
        } else {
          const std::optional<int> forced = m.ForcedLevel();
          if (forced) DEGRADE_FUZZ_CHECK(*forced == m.level(), *forced);
        }
        break;
      case 8: {
        const degrade::DegradationConfig next = ConfigFrom(in);
        const auto before = m.config();
        const absl::Status s = m.Reload(next);
        DEGRADE_FUZZ_CHECK(s == degrade::ValidateDegradationConfig(next),
                           s.ToString());
        if (!s.ok()) DEGRADE_FUZZ_CHECK(m.config() == before, "installed");
        break;
      }
      default:
        m.Enabled(in.Name());
    }
    CheckManager(m, *log);
  }
}

// ---- The hot list, and the Redis source's settings ----

inline void FuzzHotList(ByteReader& in) {
  degrade::FakeClock clock(NextTime(in, absl::FromUnixSeconds(1'700'000'000)));
  degrade::HotListOptions<int64_t> o;
  const std::size_t kTopN[] = {0, 1, 2, 200, SIZE_MAX};
  o.top_n = in.Pick(kTopN);
  o.clock = &clock;
  o.metrics = degrade::NoTelemetry();
  o.name = in.Name();
  auto next = std::make_shared<std::vector<int64_t>>();
  auto fail = std::make_shared<bool>(false);
  o.source = [next, fail]() -> absl::StatusOr<std::vector<int64_t>> {
    if (*fail) return absl::UnavailableError("down");
    return *next;
  };
  degrade::HotList<int64_t> hot(std::move(o));
  const std::size_t top_n = hot.top_n();
  DEGRADE_FUZZ_CHECK(top_n >= 1, top_n);
  uint64_t ops = 0;
  while (!in.empty() && ops < 128) {
    ++ops;
    switch (in.U8() % 4) {
      case 0: {
        std::vector<int64_t> items(in.U8() % 5, 7);
        const auto before = hot.snapshot();
        const absl::Status s = hot.Publish(items);
        DEGRADE_FUZZ_CHECK(s.ok() == !items.empty(), s.ToString());
        if (!s.ok()) DEGRADE_FUZZ_CHECK(hot.snapshot() == before, "replaced");
        break;
      }
      case 1:
        next->assign(in.U8() % 5, 9);
        *fail = in.Bool();
        hot.RefreshOnce().IgnoreError();
        break;
      default:
        MoveClock(in, clock);
    }
    const auto snap = hot.snapshot();
    if (snap != nullptr) {
      DEGRADE_FUZZ_CHECK(!snap->empty() && snap->size() <= top_n, snap->size());
    }
    const absl::Duration age = hot.age();
    DEGRADE_FUZZ_CHECK(age >= absl::ZeroDuration(), "a negative age: ",
                       absl::FormatDuration(age));
    DEGRADE_FUZZ_CHECK(hot.updates() + hot.failures() <= ops, "counts");
  }
}

#if defined(DEGRADE_FUZZ_HAVE_REDIS)
inline void FuzzRedisSourceOptions(ByteReader& in) {
  degrade::FakeClock clock;
  degrade::redis::HotListSourceOptions o;
  const char* const kHosts[] = {"127.0.0.1", "", "localhost",
                                "bad\0host"};
  const int pick = in.U8() % 4;
  o.host = pick == 3 ? std::string("bad\0host", 8) : kHosts[pick];
  const int kPorts[] = {0, 1, 6379, 65535, 65536, -1, INT32_MIN, INT32_MAX};
  o.port = in.Pick(kPorts);
  o.key = in.Name();
  const std::size_t kTopN[] = {0, 1, 200, 100000, 100001, SIZE_MAX};
  o.top_n = in.Pick(kTopN);
  o.connect_timeout = in.Duration();
  o.command_timeout = in.Duration();
  if (in.Bool()) o.username = in.Name();
  if (in.Bool()) o.password = in.Name();
  const int kDatabases[] = {0, 1, 15, -1, INT32_MAX, INT32_MIN};
  o.database = in.Pick(kDatabases);
  if (in.Bool()) {
    o.breaker = BreakerSettingsFrom(in, &clock);
  } else {
    o.breaker.clock = &clock;
    o.breaker.metrics = degrade::NoTelemetry();
  }
  const absl::Status valid = degrade::redis::ValidateHotListSourceOptions(o);
  auto created = degrade::redis::HotListSource::Create(o);  // never connects
  DEGRADE_FUZZ_CHECK(created.ok() == valid.ok(), created.status().ToString());
  if (!valid.ok()) {
    std::vector<const char*> fields = BreakerFields();
    for (const char* f : {"'host'", "'port'", "'key'", "'top_n'",
                          "'connect_timeout'", "'command_timeout'",
                          "'username'", "'password'", "'database'"}) {
      fields.push_back(f);
    }
    CheckNamesAField(valid, "redis source options", fields);
    DEGRADE_FUZZ_CHECK(created.status() == valid, created.status().ToString());
  }
}
#endif

inline int FuzzSettings(const uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  switch (in.U8() % 4) {
    case 0:
      FuzzBreaker(in);
      break;
    case 1:
      FuzzManager(in);
      break;
    case 2:
      FuzzHotList(in);
      break;
    default:
#if defined(DEGRADE_FUZZ_HAVE_REDIS)
      FuzzRedisSourceOptions(in);
#else
      FuzzBreaker(in);
#endif
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_SETTINGS_FUZZ_HPP_
