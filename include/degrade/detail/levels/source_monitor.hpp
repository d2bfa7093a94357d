// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The signal sources of a degradation manager and the thread that polls
// them. Sources are registered from any thread and called outside every
// lock, in the order they were added. A source returns a value, or a status
// saying why it has none (gpu_signal.hpp's read error): that status, with
// the owner and signal in front, is the poll's error. A throwing source
// becomes the one status shape of the library (UNKNOWN with the
// callable_exception payload, invoke.hpp) for that poll. The monitor calls a
// poll function every period on its own thread and reports a poll's error only
// when it changes, so that a broken source cannot flood the log.
//
//   detail::SourceMonitor sources("degradation manager", "m");
//   sources.Add("queue_length", [&] { return queue.size(); });
//   detail::SourceMonitor::Polled p = sources.CallAll();  // samples, error
//   absl::Status s = sources.Start(absl::Seconds(1), poll, log_error);
//
// Thread-safe. Destroying it stops the monitor (Stop's rules apply).

#ifndef DEGRADE_DETAIL_LEVELS_SOURCE_MONITOR_HPP_
#define DEGRADE_DETAIL_LEVELS_SOURCE_MONITOR_HPP_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/detail/reentry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class SourceMonitor {
 public:
  struct Polled {
    // (signal, value) for every source that returned, in the order added.
    std::vector<std::pair<std::string, double>> samples;
    // The first source's error, if any failed.
    absl::Status first_error;
  };

  // `kind` and `name` name the owner in statuses ("degradation manager",
  // "m"), a throwing source's included.
  SourceMonitor(std::string kind, std::string name)
      : kind_(std::move(kind)), name_(std::move(name)) {}

  using SourceFn = std::function<absl::StatusOr<double>()>;

  void Add(std::string signal, SourceFn fn) {
    MutexLock lock(&mu_);
    sources_.push_back({std::move(signal), std::move(fn)});
  }

  // Calls every source once, outside the lock (a source may Add another;
  // it is called from the next poll on).
  Polled CallAll() const;

  // Whether the current thread is inside CallAll(), in a source: a poll
  // from there would call that source again, and so on without end.
  bool InSource() const { return CallbackScope::Inside(this); }

  // Calls `poll` every `period` (real time) on the monitor thread, and
  // `on_new_error(s)` when it returns a non-OK status different from the
  // previous poll's. INVALID_ARGUMENT for a period under 1 ms or over 24
  // hours; FAILED_PRECONDITION when already running; RESOURCE_EXHAUSTED
  // when its thread could not be started (then none runs, and Start may be
  // called again). From the monitor thread (a poll's callback) after a
  // Stop() there, it takes the Stop back: the monitor keeps going with the
  // new period and poll.
  absl::Status Start(absl::Duration period, std::function<absl::Status()> poll,
                     std::function<void(const absl::Status&)> on_new_error);

  // See PeriodicWorker::Stop: waits for the thread, or from the thread
  // itself only asks it to stop after this poll (the next Start() from
  // anywhere works).
  void Stop() { worker_.Stop(); }

 private:
  struct Source {
    std::string signal;
    SourceFn fn;
  };

  std::string Who() const { return absl::StrCat(kind_, " '", name_, "'"); }

  const std::string kind_;
  const std::string name_;
  mutable Mutex mu_;
  std::vector<Source> sources_ ABSL_GUARDED_BY(mu_);
  // Last, so that it stops before anything its polls touch is destroyed.
  PeriodicWorker worker_;
};

// ---- Implementation details ----

inline SourceMonitor::Polled SourceMonitor::CallAll() const {
  std::vector<Source> sources;
  {
    MutexLock lock(&mu_);
    sources = sources_;
  }
  Polled out;
  const CallbackScope in_sources(this);
  for (const Source& src : sources) {
    // InvokeCatching names where a throw came from; a returned status
    // gets the same prefix here.
    bool returned_error = false;
    auto call = [&src, &returned_error]() -> absl::StatusOr<double> {
      absl::StatusOr<double> r = src.fn();
      returned_error = !r.ok();
      return r;
    };
    absl::StatusOr<double> v = InvokeCatching<double>(
        call, kind_, name_, absl::StrCat("source for '", src.signal, "'"));
    if (!v.ok()) {
      if (out.first_error.ok()) {
        out.first_error =
            returned_error
                ? absl::Status(v.status().code(),
                               absl::StrCat(Who(), ": source for '", src.signal,
                                            "': ", v.status().message()))
                : v.status();
      }
      continue;
    }
    out.samples.emplace_back(src.signal, *v);
  }
  return out;
}

inline absl::Status SourceMonitor::Start(
    absl::Duration period, std::function<absl::Status()> poll,
    std::function<void(const absl::Status&)> on_new_error) {
  // Below the worker's 1 ms the period would be silently lengthened.
  if (period < MinWorkerPeriod() || period > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Who(), ": Start(", absl::FormatDuration(period),
                     "): the period must be in [1ms, 24h]"));
  }
  auto tick = [poll = std::move(poll), on_new_error = std::move(on_new_error),
               last_error = std::string()]() mutable {
    const absl::Status s = poll();
    const std::string error = s.ok() ? std::string() : s.ToString();
    if (error != last_error && !s.ok()) on_new_error(s);
    last_error = error;
  };
  const absl::Status started = worker_.StartIfIdle(period, std::move(tick));
  if (absl::IsFailedPrecondition(started)) {
    return absl::FailedPreconditionError(absl::StrCat(
        Who(), ": Start(): the monitor is already running",
        worker_.OnWorkerThread()
            ? " (this is its own thread: Stop() first to change the period)"
            : ""));
  }
  if (!started.ok()) {
    // Nothing runs; a later Start() may succeed.
    return absl::Status(started.code(),
                        absl::StrCat(Who(), ": monitor ", started.message()));
  }
  return absl::OkStatus();
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_LEVELS_SOURCE_MONITOR_HPP_
