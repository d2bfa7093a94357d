// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: etcd/watcher.hpp
// -----------------------------------------------------------------------------
//
// Follows every key under an etcd prefix and calls you back for each change:
// the way a service keeps its degradation switches and configs in etcd and
// hears about an edit within milliseconds, without ever serving a stale view
// silently.
//
//   degrade::etcd::EtcdWatcherOptions o;
//   o.endpoint = "127.0.0.1:2379";
//   o.prefix = "/degrade/flags/";
//   o.on_put = [&](const std::string& key, const std::string& value,
//                  int64_t revision) { flags.Set(key, value); };
//   o.on_delete = [&](const std::string& key, int64_t) { flags.Erase(key); };
//   o.on_status = [](const absl::Status& s) { LogStatus(s); };
//   degrade::etcd::EtcdPrefixWatcher watcher(std::move(o));
//   if (absl::Status s = watcher.Start(); !s.ok()) return s;  // bad options
//   ...
//   watcher.Stop();                      // also done by the destructor
//
// What it guarantees (one background thread does all of it):
//
//   * Read, then watch from the next revision. A Range of the prefix at
//     store revision R delivers every key as on_put; the watch then starts
//     at R + 1, so a change made between the read and the watch is never
//     missed. Events are delivered in revision order; a stream event
//     from before the watch's start, or older than the revision its key
//     was delivered (or refused) at, is a replay and is dropped, so a key
//     never rolls back nor comes back.
//   * Reconnect with backoff. When the stream ends or fails, the watcher
//     waits a full-jitter backoff (uniform in [0, min(max, initial * 2^n)])
//     and reads the prefix again: on_put for each key whose mod_revision
//     differs from the one delivered, on_delete for each delivered key that
//     is gone (its revision is then the read's revision), then watches from
//     the new revision + 1. Nothing changed, nothing delivered.
//   * Compaction. A watch cancelled because its start revision was compacted
//     triggers the same resync from the head: never silently stale.
//   * A cluster made anew. When the read's cluster_id differs from the last
//     one, or its revision is below one already seen (a wiped data
//     directory, a restored backup), every key is delivered again; and a
//     key is delivered whenever its value's hash differs from the one
//     delivered, even at the same mod_revision (a cluster remade unseen).
//     The watch stream is checked too: a message whose header has another
//     cluster_id than the read's, or a revision below one already seen
//     (etcd wiped or restored between the read and the watch, where writes
//     below the old head would never arrive), ends the stream; so does a
//     history that changed under the same cluster_id (etcd wiped and made
//     anew with the same token, then written past the old head): once the
//     stream is created, the prefix is read again at the revision the
//     watch follows from, and must be what the read delivered (a second
//     read per connection, the price of never following a foreign
//     history; one that finds the revision compacted re-reads); on_status
//     gets ABORTED naming it (an outage the next "created" ends),
//     `cluster_changes` counts it, and a fresh read delivers the new
//     cluster as above (on_delete for each key gone).
//   * Outage reported once. on_status gets the first failure of an outage
//     (UNAVAILABLE when etcd is unreachable or shutting down; INTERNAL or
//     DATA_LOSS for a response that makes no sense), not one per retry, and
//     OkStatus as soon as the watch is established again. Streams that end
//     at once without an event, 3 in a row (a gateway that cancels every
//     watch as compacted or closes it), are an outage too: UNAVAILABLE,
//     with the backoff growing, until a stream delivers or lasts.
//   * TLS and auth. `tls`, `user` and `password` are the client's (client.hpp);
//     the token goes on the reads and the watch stream. An expired token is
//     renewed at the next read, transparently; a watch refused for its token
//     (etcd cancels it at creation) is renewed and re-created from the same
//     start revision, so no change is missed or delivered twice. A refused
//     password, a revoked role, an untrusted certificate are an outage
//     (UNAUTHENTICATED, PERMISSION_DENIED) reported once; the delivered
//     state stays the caller's (nothing is deleted) until a read succeeds.
//   * Size limit. A value over `max_value_bytes` is not delivered: on_status
//     gets INVALID_ARGUMENT naming the key and the size, once per key
//     revision; the previously delivered value (if any) stays the caller's.
//
// Operators see it through `stats()` (fleet_stats.hpp: its state, resyncs,
// outages, the last revision), offered to `options.metrics` and exported
// by a MetricsRegistry as the degrade_etcd_watcher_* series.
//
// Thread safety: the callbacks run on the watcher's thread, one at a time,
// never concurrently with each other; a callback that throws is caught (it
// is counted in `callback_errors` and, unless it is on_status itself,
// reported through on_status) and the watcher carries on. Start(), Stop()
// and counters() may be called from any thread, also at once. Stop() from
// a callback requests the stop and returns (no callback follows); the
// destructor joins the thread, so it must not run on a callback (the
// process would terminate). Elsewhere Stop() returns promptly (tens of
// ms) even while a request or stream is blocked, by interrupting it, but
// waits for a running callback: callbacks must not block for long. They
// run with SIGPIPE blocked on that thread (cpp-httplib writes without
// MSG_NOSIGNAL): write to sockets expecting EPIPE, not the signal.
//
// Needs cpp-httplib and the CMake target `degrade::etcd` (see client.hpp).

#ifndef DEGRADE_ETCD_WATCHER_HPP_
#define DEGRADE_ETCD_WATCHER_HPP_

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/backoff.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/thread_start.hpp"
#include "degrade/etcd/client.hpp"
#include "degrade/fleet_stats.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace etcd {

// EtcdWatcherOptions
//
// Every field has a usable default except `prefix` and the callbacks you
// care about (an unset callback is skipped).
struct EtcdWatcherOptions {
  std::string endpoint = "127.0.0.1:2379";  // host:port
  std::string prefix;                       // "" follows every key
  // HTTPS and etcd's auth, as EtcdClientOptions has them (client.hpp):
  // the reads and the watch stream use both. A token refused mid-way is
  // renewed and the watch resumed (see the file comment).
  EtcdTlsOptions tls{};
  std::string user{};
  std::string password{};
  // Values longer than this are refused (not delivered). Default 1 MiB.
  std::size_t max_value_bytes = std::size_t{1} << 20;
  // Full-jitter backoff between attempts after a failure; both > 0 and
  // initial <= max (Start() refuses others).
  absl::Duration backoff_initial = absl::Milliseconds(100);
  absl::Duration backoff_max = absl::Seconds(5);
  // Per-request bounds of the Range reads, and the connect bound of the
  // watch stream (>= 1 ms).
  absl::Duration connect_timeout = absl::Seconds(1);
  absl::Duration request_timeout = absl::Seconds(2);
  // A watch stream silent for this long, or one message of which has been
  // arriving for this long without being complete (bytes trickling in), is
  // dropped and re-established (after a resync): how a hung etcd is
  // noticed. >= 1 ms; default 60 s.
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  uint64_t jitter_seed = 0x5EED;  // the backoff's random stream
  // The name its telemetry exports it under (the `watcher` label); empty:
  // the prefix.
  std::string name;
  // Where its stats() are exported: null, the process default
  // (DefaultTelemetry()); NoTelemetry(), nowhere. Must outlive it.
  Telemetry* metrics = nullptr;

  std::function<void(const std::string& key, const std::string& value,
                     int64_t mod_revision)>
      on_put;
  std::function<void(const std::string& key, int64_t revision)> on_delete;
  std::function<void(const absl::Status& status)> on_status;

  // Test seam: called on the watcher thread after each read of the prefix
  // has been delivered and before the watch from `revision + 1` starts.
  std::function<void(int64_t revision)> after_range_for_testing;
};

// Counts since construction; each read with relaxed ordering.
struct EtcdWatcherCounters {
  uint64_t reconnects = 0;   // watch streams opened after the first
  uint64_t resyncs = 0;      // reads of the prefix after the first
  uint64_t compactions = 0;  // watches cancelled by a compaction
  // Watch streams whose header showed another cluster_id than the read's,
  // or a revision below one seen (etcd wiped or restored after the read).
  uint64_t cluster_changes = 0;
  uint64_t events_delivered = 0;  // on_put and on_delete calls
  uint64_t values_refused = 0;    // values over max_value_bytes
  uint64_t callback_errors = 0;   // callbacks that threw
  // Auth tokens obtained: the first, then one per renewal (0 without a
  // user).
  uint64_t authentications = 0;
};

// EtcdPrefixWatcher
//
// See the file comment. Not copyable or movable.
class EtcdPrefixWatcher {
 public:
  explicit EtcdPrefixWatcher(EtcdWatcherOptions options);
  EtcdPrefixWatcher(const EtcdPrefixWatcher&) = delete;
  EtcdPrefixWatcher& operator=(const EtcdPrefixWatcher&) = delete;
  // REQUIRES: not on a callback (see the file comment).
  ~EtcdPrefixWatcher() {
    telemetry_.reset();  // first: its view reads us
    Stop();
  }

  // Starts the background thread. INVALID_ARGUMENT for bad options,
  // FAILED_PRECONDITION when already started or stopped (a watcher runs
  // once), RESOURCE_EXHAUSTED when no thread can be made. Never waits
  // for etcd: unreachability is reported through on_status.
  absl::Status Start();

  // Stops the thread and waits for it (promptly: see the file comment).
  // Idempotent; concurrent calls all return once the thread is gone. From
  // a callback it only requests the stop (the thread ends after it).
  void Stop();

  EtcdWatcherCounters counters() const;

  // The counters, the state, outages and the last revision, for a
  // telemetry; relaxed reads, any thread.
  EtcdWatcherStats stats() const;
  const std::string& name() const { return name_; }

 private:
  enum class StreamEnd {
    kStopped,
    kCompacted,
    kEnded,
    kFailed,
    kClusterChanged
  };
  static constexpr int kEmptyEndsAnOutage = 3;  // see the file comment

  static EtcdClientOptions ClientOptions(const EtcdWatcherOptions& o);
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void Run();
  // Sleeps the backoff for `failures`; false when Stop() came first.
  bool Backoff(int failures);
  void ApplySnapshot(const RangeResult& r);
  // Forgets what was delivered when `r` comes from a cluster made anew.
  void NoticeCluster(const RangeResult& r);
  // Counts a quick end without an event; true at kEmptyEndsAnOutage.
  bool CountEmptyEnd(StreamEnd end, bool quick);
  // A stream ending sooner is "quick"; lasting is a sign of health.
  absl::Duration Lasting() const {
    return std::min(absl::Seconds(1), options_.stream_idle_timeout);
  }
  static uint64_t Hash(const std::string& v) {
    return static_cast<uint64_t>(std::hash<std::string>{}(v));
  }
  std::string Where() const {
    return absl::StrCat("etcd ", options_.endpoint, " watch ",
                        detail::etcd::Quoted(options_.prefix));
  }
  StreamEnd Watch(int64_t start_revision, absl::Status* status);
  // ABORTED when a stream message's header shows another cluster than the
  // read's, or a revision below one already seen.
  absl::Status CheckStreamHeader(uint64_t cluster_id, int64_t revision) const;
  // Once the stream is created: the prefix read again at the revision the
  // watch follows from must be what was delivered from the read. ABORTED
  // (a history the delivered state is not part of) when it is not;
  // *compacted when the revision is gone (the resync from the head then
  // re-reads); the read's own error otherwise.
  absl::Status CheckHistory(int64_t revision, bool* compacted);
  // One message of the stream; false ends the stream (with *end set).
  bool HandleMessage(absl::string_view text, bool* created, StreamEnd* end,
                     absl::Status* status);
  void Put(const std::string& key, const std::string& value, int64_t rev);
  void Erase(const std::string& key, int64_t revision);
  // DATA_LOSS for a read no etcd gives: revisions out of range.
  absl::Status CheckRange(const RangeResult& r) const;
  // Whether a stream event at `rev` is older than what `key` last had
  // (delivered or refused): a replay, never a change, in one cluster.
  bool OlderThanKnown(const std::string& key, int64_t rev) const {
    const auto d = delivered_.find(key);
    if (d != delivered_.end() && rev < d->second.rev) return true;
    const auto r = refused_.find(key);
    return r != refused_.end() && rev < r->second;
  }
  void Failure(const absl::Status& s);
  void Recovered();
  void Report(const absl::Status& s);
  template <typename F>
  void Guard(const char* which, F&& f);
  void Bump(std::atomic<uint64_t>& c) {
    c.fetch_add(1, std::memory_order_relaxed);
  }
  void SetState(EtcdWatcherState s) {
    state_.store(s, std::memory_order_relaxed);
  }
  // seen_revision_ as stats() reads it.
  void PublishRevision() {
    last_revision_.store(seen_revision_, std::memory_order_relaxed);
  }

  const EtcdWatcherOptions options_;
  EtcdClient client_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::thread::id> worker_{};  // the thread's id once it runs
  detail::Mutex join_mu_;                  // held by the one Stop() that joins
  detail::Mutex mu_;
  detail::CondVar cv_;  // wakes a backoff sleep for Stop()
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  httplib::Client* stream_ ABSL_GUARDED_BY(mu_) = nullptr;
  detail::etcd::RequestSocket stream_socket_;  // Stop() ends its handshake
  std::thread thread_;
  // Watcher thread only. The hash tells a key rewritten at the same
  // mod_revision (a cluster remade unseen) from a duplicate.
  struct Delivered {
    int64_t rev = 0;
    uint64_t hash = 0;
  };
  std::map<std::string, Delivered> delivered_;
  std::map<std::string, int64_t> refused_;  // key -> refused revision
  bool in_outage_ = false;
  bool garbled_ = false;  // the outage is a stream that failed once created
  bool stream_created_ = false;   // the last watch got its "created"
  std::string stream_token_;      // the auth token the last watch sent
  uint64_t stream_events_ = 0;    // events the last watch delivered
  int empty_ends_ = 0;            // quick empty stream ends in a row
  uint64_t cluster_id_ = 0;       // of the last read; 0 unknown
  bool cluster_changed_ = false;  // a stream saw it: the next read starts over
  int64_t seen_revision_ = 0;     // the highest revision seen
  int64_t watch_start_ = 0;       // the start_revision of the last watch
  detail::SplitMix64 rng_;
  std::atomic<uint64_t> reconnects_{0}, resyncs_{0}, compactions_{0},
      cluster_changes_{0}, events_{0}, refused_count_{0}, callback_errors_{0},
      outages_{0};
  std::atomic<EtcdWatcherState> state_{EtcdWatcherState::kStarting};
  std::atomic<int64_t> last_revision_{0};
  const std::string name_;
  const detail::OwnerView<EtcdPrefixWatcher, EtcdWatcherStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;  // last: destroyed first
};

// ---- Implementation details ----

inline EtcdPrefixWatcher::EtcdPrefixWatcher(EtcdWatcherOptions options)
    : options_(std::move(options)),
      client_(ClientOptions(options_)),
      rng_(options_.jitter_seed),
      name_(options_.name.empty() ? options_.prefix : options_.name),
      // Last: the view must be complete before a telemetry may read it.
      telemetry_(detail::Attach(options_.metrics, &Telemetry::AttachComponent,
                                view_)) {}

inline absl::Status EtcdPrefixWatcher::Start() {
  const EtcdWatcherOptions& o = options_;
  if (absl::Status s = EtcdClient::CheckOptions(ClientOptions(o)); !s.ok()) {
    return s;
  }
  if (o.backoff_initial <= absl::ZeroDuration() ||
      o.backoff_max < o.backoff_initial) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd watcher: backoff_initial (",
                     absl::FormatDuration(o.backoff_initial),
                     ") must be > 0 and <= backoff_max (",
                     absl::FormatDuration(o.backoff_max), ")"));
  }
  detail::MutexLock l(&mu_);
  if (started_ || stopping()) {
    return absl::FailedPreconditionError(
        "etcd watcher: already started or stopped (start a new one)");
  }
  absl::StatusOr<std::thread> t =
      detail::StartThread("etcd watcher", [this] { Run(); });
  if (!t.ok()) return t.status();
  thread_ = std::move(*t);
  started_ = true;
  return absl::OkStatus();
}

inline void EtcdPrefixWatcher::Stop() {
  stopping_.store(true, std::memory_order_release);
  // On the watcher's thread (a callback): it leaves once the callback
  // returns; waiting here would wait for itself.
  if (worker_.load(std::memory_order_acquire) == std::this_thread::get_id()) {
    return;
  }
  // One caller interrupts and joins; the others wait here for it.
  detail::MutexLock join(&join_mu_);
  // Interrupt whatever the thread is blocked in until it has left: a
  // request that started just after one interrupt meets the next.
  while (true) {
    client_.Interrupt();
    detail::MutexLock l(&mu_);
    if (!started_ || done_) break;
    if (stream_ != nullptr) {
      stream_socket_.Shut();
      stream_->stop();
    }
    cv_.SignalAll();
    cv_.WaitFor(&mu_, absl::Milliseconds(10),
                [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_; });
  }
  if (thread_.joinable()) thread_.join();
  state_.store(EtcdWatcherState::kStopped, std::memory_order_relaxed);
}

inline EtcdWatcherCounters EtcdPrefixWatcher::counters() const {
  EtcdWatcherCounters c;
  c.reconnects = reconnects_.load(std::memory_order_relaxed);
  c.resyncs = resyncs_.load(std::memory_order_relaxed);
  c.compactions = compactions_.load(std::memory_order_relaxed);
  c.cluster_changes = cluster_changes_.load(std::memory_order_relaxed);
  c.events_delivered = events_.load(std::memory_order_relaxed);
  c.values_refused = refused_count_.load(std::memory_order_relaxed);
  c.callback_errors = callback_errors_.load(std::memory_order_relaxed);
  c.authentications = client_.authentications();
  return c;
}

inline EtcdWatcherStats EtcdPrefixWatcher::stats() const {
  const EtcdWatcherCounters c = counters();
  EtcdWatcherStats s;
  s.state = state_.load(std::memory_order_relaxed);
  s.reconnects = c.reconnects;
  s.resyncs = c.resyncs;
  s.compactions = c.compactions;
  s.cluster_changes = c.cluster_changes;
  s.outages = outages_.load(std::memory_order_relaxed);
  s.events_delivered = c.events_delivered;
  s.values_refused = c.values_refused;
  s.callback_errors = c.callback_errors;
  s.last_revision = last_revision_.load(std::memory_order_relaxed);
  return s;
}

inline void EtcdPrefixWatcher::Run() {
  worker_.store(std::this_thread::get_id(), std::memory_order_release);
  int failures = 0;
  int changes_in_row = 0;  // streams ended by a cluster change, in a row
  bool first_read = true, first_watch = true;
  while (!stopping()) {
    if (failures > 0 && !Backoff(failures)) break;
    // An outage stays one until a watch is established again.
    if (!in_outage_) {
      SetState(first_read ? EtcdWatcherState::kStarting
                          : EtcdWatcherState::kResyncing);
    }
    absl::StatusOr<RangeResult> r = client_.Range(options_.prefix);
    if (stopping()) break;
    if (r.ok()) {
      if (absl::Status bad = CheckRange(*r); !bad.ok()) r = std::move(bad);
    }
    if (!r.ok()) {
      Failure(r.status());
      failures = std::min(failures + 1, 62);
      continue;
    }
    if (!first_read) Bump(resyncs_);
    first_read = false;
    NoticeCluster(*r);
    ApplySnapshot(*r);
    if (options_.after_range_for_testing) {
      Guard("after_range_for_testing",
            [&] { options_.after_range_for_testing(r->revision); });
    }
    if (stopping()) break;
    if (!first_watch) Bump(reconnects_);
    first_watch = false;
    absl::Status status;
    const absl::Time opened = RealClock::Instance().Now();
    StreamEnd end = Watch(r->revision + 1, &status);
    if (end == StreamEnd::kFailed && !stream_created_ &&
        !stream_token_.empty() && EtcdClient::TokenRefused(status)) {
      // The token lapsed between the read and the watch: renewed, the
      // watch resumes where it was to start (nothing was delivered since).
      client_.DropToken(stream_token_);
      status = absl::OkStatus();
      end = Watch(watch_start_, &status);
    }
    if (end == StreamEnd::kStopped) break;
    if (end == StreamEnd::kCompacted) Bump(compactions_);
    if (end == StreamEnd::kClusterChanged) {
      // Reported (ABORTED) as an outage the next watch's "created" ends;
      // the resync from a fresh read starts at once.
      // Twice in a row (a gateway whose reads and streams disagree), it
      // backs off: never a tight loop.
      Bump(cluster_changes_);
      cluster_changed_ = true;
      Failure(status);
      failures = std::min(changes_in_row++, 62);
      continue;
    }
    changes_in_row = 0;
    // Quick empty ends in a row, and a stream gone bad (or failed quickly)
    // once created, are an outage only an event or a lasting stream ends;
    // a lasting stream's end with UNAVAILABLE (etcd going away) is one the
    // next "created" ends.
    const bool quick =
        detail::ElapsedSince(RealClock::Instance().Now(), opened) < Lasting();
    const bool looping = CountEmptyEnd(end, quick);
    if (end == StreamEnd::kFailed) {
      const bool lasted = stream_created_ && !quick;
      if (lasted) failures = 0;  // a new outage backs off from the start
      garbled_ = (garbled_ && !lasted) || looping ||
                 (stream_created_ && (quick || !absl::IsUnavailable(status)));
      Failure(status);
      failures = std::min(failures + 1, 62);
    } else if (looping) {
      garbled_ = true;
      Failure(absl::UnavailableError(absl::StrCat(
          Where(), ": ", empty_ends_, " watch streams in a row ended at once",
          " without an event (",
          end == StreamEnd::kCompacted ? "cancelled as compacted" : "closed",
          "); backing off")));
      failures = std::min(failures + 1, 62);
    } else if (end == StreamEnd::kCompacted) {
      failures = 0;  // resync from the head at once
    } else {
      failures = 1;  // a short jittered pause, never a tight loop
      if (garbled_ && !quick) {
        garbled_ = false;
        Recovered();
      }
    }
  }
  SetState(EtcdWatcherState::kStopped);
  detail::MutexLock l(&mu_);
  done_ = true;
  cv_.SignalAll();
}

inline bool EtcdPrefixWatcher::Backoff(int failures) {
  const absl::Duration wait =
      detail::FullJitter(options_.backoff_initial, 2.0, options_.backoff_max,
                         failures - 1, rng_.NextUnit());
  detail::MutexLock l(&mu_);
  return !cv_.WaitFor(&mu_, wait, [this] { return stopping(); });
}

inline bool EtcdPrefixWatcher::CountEmptyEnd(StreamEnd end, bool quick) {
  // Only streams that etcd answered count; a failed connect is a failure.
  if (!stream_created_ && end != StreamEnd::kCompacted) return false;
  empty_ends_ = stream_events_ == 0 && quick ? empty_ends_ + 1 : 0;
  return empty_ends_ >= kEmptyEndsAnOutage;
}

inline void EtcdPrefixWatcher::Failure(const absl::Status& s) {
  if (in_outage_ || stopping()) return;
  in_outage_ = true;
  Bump(outages_);
  SetState(EtcdWatcherState::kOutage);
  Report(s);
}

inline void EtcdPrefixWatcher::Recovered() {
  if (!in_outage_) return;
  in_outage_ = false;
  SetState(EtcdWatcherState::kWatching);
  Report(absl::OkStatus());
}

inline void EtcdPrefixWatcher::Report(const absl::Status& s) {
  if (options_.on_status) Guard("on_status", [&] { options_.on_status(s); });
}

template <typename F>
void EtcdPrefixWatcher::Guard(const char* which, F&& f) {
  if (stopping()) return;  // no callback after a Stop()
  detail::InvokeOr(
      [&] {
        f();
        return true;
      },
      [&](absl::string_view what) {
        Bump(callback_errors_);
        if (absl::string_view(which) != "on_status") {
          Report(absl::UnknownError(absl::StrCat("etcd watcher: callback ",
                                                 which, " threw: ", what)));
        }
        return false;
      });
}

}  // namespace etcd
DEGRADE_NAMESPACE_END

// The stream's mechanics (Watch, HandleMessage), apart so that this header
// reads as the contract and stays short.
#include "degrade/etcd/detail/watcher_stream_inl.hpp"  // IWYU pragma: export
// What a read applies: the checks of a Range, a cluster made anew, the
// snapshot delivered as puts and deletes.
#include "degrade/etcd/detail/watcher_resync_inl.hpp"  // IWYU pragma: export

#endif  // DEGRADE_ETCD_WATCHER_HPP_
