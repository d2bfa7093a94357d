// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: event_log.hpp
// -----------------------------------------------------------------------------
//
// Structured event logs that cannot flood. Every event degrade reports (a
// breaker state change, a level change, a config reload, a fallback served)
// is one JSON object on one line, written to a pluggable sink (stderr by
// default). A stage that degrades every request of a 10k QPS service must not
// write 10k lines a second, so lines are rate-limited per key: at most
// `max_lines_per_key` lines per `interval` for each key (a breaker's name, a
// stage and reason, ...), and the next line written for a key carries
// `"suppressed":N`, how many were dropped since the last one. Audit lines
// (a manager's level changes, which are rare and are the record of what the
// service did) go through `WriteAlways` and are never rate-limited.
//
//   degrade::EventLogOptions o;
//   o.sink = [](absl::string_view line) { LOG(INFO) << line; };
//   o.max_lines_per_key = 5;              // per second, per key
//   degrade::EventLog log(std::move(o));
//   log.Emit("recall/open", R"({"event":"fallback_served","stage":"recall"})");
//
//   // On a hot path, resolve the key once and build the line only when it
//   // will be written:
//   degrade::EventLog::Key key = log.GetKey("recall/open");
//   log.Emit(key, [&] { return MakeLine(...); });
//
// Thread safety: EventLog is thread-safe. The sink is called outside every
// lock and may be called from several threads at once (the default stderr
// sink writes each line with one stdio call, which glibc keeps whole); a sink
// that throws loses that line and nothing else. The number of keys is capped
// (`max_keys`): idle keys nobody holds are forgotten first, and keys past
// the cap share one limit.

#ifndef DEGRADE_EVENT_LOG_HPP_
#define DEGRADE_EVENT_LOG_HPP_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/macros.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/serial_dispatcher.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The default sink: one line to stderr.
inline void StderrLogSink(absl::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

// EventLogOptions
//
// Where lines go and how many each key may write.
struct EventLogOptions {
  // Receives each line (a JSON object, no newline). Unset means stderr.
  std::function<void(absl::string_view line)> sink;
  // Lines each key may write per `interval`. 0 silences the log, audit
  // lines (`WriteAlways`) included: lines are only counted as suppressed.
  uint32_t max_lines_per_key = 5;
  // The rate-limit window. Values <= 0 mean 1 s.
  absl::Duration interval = absl::Seconds(1);
  // Tells time for the windows; must outlive the log. nullptr means the real
  // clock (its coarse reading: windows are seconds long).
  const Clock* clock = nullptr;
  // Distinct keys tracked; further keys share one overflow limit.
  std::size_t max_keys = 4096;
};

// LogRateLimiter
//
// The event log's per-key line limit (called `RateLimiter` until the
// request-rate limiter of rate_limit.hpp took that name). At most `limit`
// admissions per window of `interval`; counts the rest. The
// window restarts at the first admission attempt after it ends (not on a
// fixed grid), so a key that was quiet gets its full allowance at once.
//
// Thread-safe. While a window is full, `Admit` is two relaxed loads and one
// relaxed add, with no lock: that is the path a flooding key takes.
class LogRateLimiter {
 public:
  LogRateLimiter(uint32_t limit, absl::Duration interval)
      : limit_(limit),
        interval_nanos_(interval > absl::ZeroDuration()
                            ? absl::ToInt64Nanoseconds(interval)
                            : absl::ToInt64Nanoseconds(absl::Seconds(1))) {}

  LogRateLimiter(const LogRateLimiter&) = delete;
  LogRateLimiter& operator=(const LogRateLimiter&) = delete;

  // Whether a line may be written at `now_nanos`. When it may, sets
  // `*suppressed` to the attempts refused since the last admission (and
  // resets that count).
  bool Admit(int64_t now_nanos, uint64_t* suppressed) {
    // Full window: refuse without the lock. A reader racing a window restart
    // may refuse one line the new window would have taken; it is still
    // counted, and reported by the next line.
    if (used_.load(std::memory_order_relaxed) >= limit_ &&
        !WindowOver(now_nanos, window_start_.load(std::memory_order_relaxed))) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    detail::MutexLock lock(&mu_);
    if (WindowOver(now_nanos, window_start_.load(std::memory_order_relaxed))) {
      window_start_.store(now_nanos, std::memory_order_relaxed);
      used_.store(0, std::memory_order_relaxed);
    }
    const uint32_t used = used_.load(std::memory_order_relaxed);
    if (used >= limit_) {
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    used_.store(used + 1, std::memory_order_relaxed);
    *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
    return true;
  }

  // Attempts refused since the last admission.
  uint64_t pending_suppressed() const {
    return suppressed_.load(std::memory_order_relaxed);
  }

  // Whether a fresh limiter would behave the same from `now_nanos` on: the
  // window is over and no refusal is waiting to be reported.
  bool Idle(int64_t now_nanos) const {
    return pending_suppressed() == 0 &&
           WindowOver(now_nanos, window_start_.load(std::memory_order_relaxed));
  }

 private:
  // Whether the window that started at `start` is over at `now`. A clock
  // that went backwards starts a new window too (a FakeClock can be Set
  // back); extreme readings (a saturated clock) cannot overflow.
  bool WindowOver(int64_t now, int64_t start) const {
    return now < start ||
           detail::ElapsedNanosSince(now, start) >= interval_nanos_;
  }

  const uint32_t limit_;
  const int64_t interval_nanos_;
  detail::Mutex mu_;
  // Written under mu_, read without it by the full-window fast path.
  // So that the first Admit opens a window: any real reading is more than
  // `interval` past the minimum.
  std::atomic<int64_t> window_start_{std::numeric_limits<int64_t>::min()};
  std::atomic<uint32_t> used_{0};
  std::atomic<uint64_t> suppressed_{0};
};

// EventLog
//
// See the file comment.
class EventLog {
 public:
  // A resolved key: a handle on the key's limit, valid on its own (it keeps
  // the limit alive even if the log forgets the key). Cheap to pass by
  // reference; copying touches a reference count.
  class Key {
   public:
    Key() = default;

   private:
    friend class EventLog;
    explicit Key(std::shared_ptr<LogRateLimiter> limiter)
        : limiter_(std::move(limiter)) {}
    std::shared_ptr<LogRateLimiter> limiter_;
  };

  explicit EventLog(EventLogOptions options = {})
      : clock_(options.clock != nullptr ? options.clock
                                        : &RealClock::Instance()),
        limit_(options.max_lines_per_key),
        interval_(options.interval > absl::ZeroDuration() ? options.interval
                                                          : absl::Seconds(1)),
        max_keys_(options.max_keys),
        overflow_(std::make_shared<LogRateLimiter>(limit_, interval_)),
        sink_(std::make_shared<const Sink>(
            options.sink ? std::move(options.sink) : Sink(StderrLogSink))) {}

  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Replaces the sink (null: stderr). Lines already being written finish on
  // the old one.
  void SetSink(std::function<void(absl::string_view)> sink) {
    auto next = std::make_shared<const Sink>(sink ? std::move(sink)
                                                  : Sink(StderrLogSink));
    detail::MutexLock lock(&mu_);
    sink_ = std::move(next);
  }

  // The handle of `key`, created on first use (takes a lock; keep it).
  // When `max_keys` keys exist, keys that nobody holds a handle to and whose
  // limit is idle (window over, nothing suppressed) are forgotten first:
  // a fresh limit behaves the same, so components that come and go (a
  // BreakerFamily's breakers) don't use the cap up. If every key is in use,
  // the new one shares the overflow limit (counted in key_overflows()).
  Key GetKey(absl::string_view key) {
    detail::MutexLock lock(&mu_);
    auto it = keys_.find(key);
    if (it != keys_.end()) return Key(it->second);
    if (keys_.size() >= max_keys_) {
      // A sweep looks at every key, so one that freed nothing is not
      // repeated for an interval (no key can turn idle sooner): past the
      // cap, creating keys costs a lookup, not a scan each.
      const int64_t now = NowNanos();
      if (now >= next_sweep_nanos_ || now < last_sweep_nanos_) {
        const std::size_t before = keys_.size();
        for (auto k = keys_.begin(); k != keys_.end();) {
          if (k->second.use_count() == 1 && k->second->Idle(now)) {
            k = keys_.erase(k);
          } else {
            ++k;
          }
        }
        last_sweep_nanos_ = now;
        const int64_t wait = absl::ToInt64Nanoseconds(interval_);
        next_sweep_nanos_ =
            keys_.size() < before ? now : detail::SatAddNanos(now, wait);
      }
    }
    if (keys_.size() >= max_keys_) {
      key_overflows_.fetch_add(1, std::memory_order_relaxed);
      return Key(overflow_);
    }
    auto limiter = std::make_shared<LogRateLimiter>(limit_, interval_);
    keys_.emplace(std::string(key), limiter);
    return Key(std::move(limiter));
  }

  // Writes `json_object` (a JSON object: "{...}") unless `key` is over its
  // limit; returns whether it was written (a throwing sink counts as
  // written). When lines were suppressed before it, `"suppressed":N` is added
  // as the object's last member.
  bool Emit(absl::string_view key, absl::string_view json_object) {
    return Emit(GetKey(key),
                [json_object] { return std::string(json_object); });
  }

  // As above with a resolved key; `make_line()` returns the line and is only
  // called when it will be written. A default-constructed key uses the
  // overflow limit.
  template <typename MakeLine>
  bool Emit(const Key& key, MakeLine&& make_line) {
    LogRateLimiter* limiter =
        key.limiter_ != nullptr ? key.limiter_.get() : overflow_.get();
    uint64_t suppressed = 0;
    if (!limiter->Admit(NowNanos(), &suppressed)) {
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    std::string line = make_line();
    if (suppressed > 0 && !line.empty() && line.back() == '}') {
      line.pop_back();
      const bool empty_object = !line.empty() && line.back() == '{';
      absl::StrAppend(&line, empty_object ? "" : ",", R"("suppressed":)",
                      suppressed, "}");
    }
    Write(std::move(line));
    return true;
  }

  // Writes an audit line (a JSON object) whatever the rate limits: for
  // events that are rare by nature and must each leave a line, such as a
  // level change. Returns whether it was written: false only when the log
  // is silenced (`max_lines_per_key` = 0). Counted in written_total().
  template <typename MakeLine>
  bool WriteAlways(MakeLine&& make_line) {
    if (limit_ == 0) {
      suppressed_total_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    Write(make_line());
    return true;
  }

  // Lines written and suppressed since construction.
  uint64_t written_total() const {
    return written_total_.load(std::memory_order_relaxed);
  }
  uint64_t suppressed_total() const {
    return suppressed_total_.load(std::memory_order_relaxed);
  }
  // GetKey calls that found every key in use and got the shared overflow
  // limit instead.
  uint64_t key_overflows() const {
    return key_overflows_.load(std::memory_order_relaxed);
  }

  const Clock& clock() const { return *clock_; }

 private:
  using Sink = std::function<void(absl::string_view)>;

  int64_t NowNanos() const { return absl::ToUnixNanos(clock_->CoarseNow()); }

  void Write(std::string line) {
    std::shared_ptr<const Sink> sink;
    {
      detail::MutexLock lock(&mu_);
      sink = sink_;
    }
    written_total_.fetch_add(1, std::memory_order_relaxed);
    detail::CallQuietly(*sink, absl::string_view(line));
  }

  const Clock* const clock_;
  const uint32_t limit_;
  const absl::Duration interval_;
  const std::size_t max_keys_;
  const std::shared_ptr<LogRateLimiter> overflow_;
  std::atomic<uint64_t> key_overflows_{0};
  std::atomic<uint64_t> written_total_{0};
  std::atomic<uint64_t> suppressed_total_{0};
  detail::Mutex mu_;
  std::map<std::string, std::shared_ptr<LogRateLimiter>, std::less<>> keys_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Sink> sink_ ABSL_GUARDED_BY(mu_);
  int64_t last_sweep_nanos_ ABSL_GUARDED_BY(mu_) =
      std::numeric_limits<int64_t>::min();
  int64_t next_sweep_nanos_ ABSL_GUARDED_BY(mu_) =
      std::numeric_limits<int64_t>::min();
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_EVENT_LOG_HPP_
