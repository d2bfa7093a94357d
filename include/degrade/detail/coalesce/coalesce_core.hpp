// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The state a Coalescer (coalesce.hpp) shares with the calls it started:
// the sharded table of calls in flight, the counters and the on_complete
// hook. Every call queued on an executor holds a shared_ptr to it, so a
// call that ends after the coalescer is gone still finds the table it
// unregisters from; the coalescer only closes the hook on its way out.
//
//   auto core = std::make_shared<CoalesceCore<K, V, H, E>>(settings, hook);
//   std::shared_ptr<Call> call;
//   if (core->Register(key, &call) == Registration::kLeader)
//     core->Run(key, f, call, /*registered=*/true, /*inline_run=*/true);
//
// An outcome is published in this order: the key leaves the table, the
// waiters get the outcome, then the hook runs, with no lock held, so a hook
// (or a waiter woken by the outcome) that asks for the key again starts a
// new call rather than joining the one that has ended.
//
// Thread-safe.

#ifndef DEGRADE_DETAIL_COALESCE_COALESCE_CORE_HPP_
#define DEGRADE_DETAIL_COALESCE_COALESCE_CORE_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/coalesce_stats.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The shards of a coalescer's table when its settings leave it to us.
inline constexpr std::size_t kCoalesceDefaultShards = 64;

// A copy of `r` that shares no reference count with it: the same code,
// message and payloads, in storage of its own. Every waiter gets one, and
// the call keeps one, because Debian's Abseil drops a Status's last
// reference in its uninstrumented library: ThreadSanitizer (in users'
// builds too) cannot see that count, and would report one waiter freeing
// the message another reads. Only failures pay for it.
template <typename V>
absl::StatusOr<V> UnsharedCopy(const absl::StatusOr<V>& r) {
  if (r.ok()) return r;
  absl::Status copy(r.status().code(), r.status().message());
  r.status().ForEachPayload(
      [&copy](absl::string_view url, const absl::Cord& payload) {
        copy.SetPayload(url, absl::Cord(std::string(payload)));
      });
  return copy;
}

template <typename K, typename V, typename Hash, typename Eq>
class CoalesceCore {
 public:
  using Result = absl::StatusOr<V>;
  using OnComplete = std::function<void(const K&, const Result&)>;

  // One call's outcome and the requests waiting for it. Waiters and the
  // running call each hold a shared_ptr: a waiter that gave up leaves the
  // call nothing to clean.
  class Call {
   public:
    void Deliver(const Result& outcome) {
      MutexLock lock(&mu_);
      outcome_.emplace(UnsharedCopy(outcome));
      cv_.SignalAll();
    }
    // A copy of the outcome once it is there, or nullopt when `wait` runs
    // out first (a zero or negative wait only looks).
    std::optional<Result> Await(absl::Duration wait) {
      MutexLock lock(&mu_);
      const bool done =
          cv_.WaitFor(&mu_, wait, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return outcome_.has_value();
          });
      if (!done) return std::nullopt;
      return UnsharedCopy(*outcome_);
    }

    // Requests that joined: changed and read only under the lock of the
    // call's shard, so the count read when the key leaves the table is
    // final (atomic only because that lock is not this object's).
    std::atomic<std::size_t> joined{0};

   private:
    Mutex mu_;
    CondVar cv_;  // the outcome arrived
    std::optional<Result> outcome_ ABSL_GUARDED_BY(mu_);
  };

  enum class Registration { kLeader, kJoined, kFull };
  enum Counter : std::size_t {
    kLeaders,
    kJoined,
    kUncoalesced,
    kRefused,
    kTimedOut,
    kFailed,
    kCompleted,
    kCallNanos,
    kCounters
  };

  template <typename Settings>
  CoalesceCore(const Settings& s, OnComplete on_complete)
      : name_(Printable(s.name)),
        clock_(s.clock != nullptr ? s.clock : &RealClock::Instance()),
        max_inflight_(s.max_inflight),
        shard_count_(s.shards == 0 ? kCoalesceDefaultShards : s.shards),
        shards_(new Shard[shard_count_]),
        on_complete_(std::move(on_complete)) {}

  const std::string& name() const { return name_; }
  std::size_t inflight() const {
    return inflight_.load(std::memory_order_relaxed);
  }
  void Count(Counter c, uint64_t n = 1) { counts_.Add(c, n); }

  // Joins the call in flight for `key`, or registers a new one (kLeader)
  // while the table has room, or neither (kFull). `*call` is the call
  // joined or registered.
  // With `join_only`, never registers: kFull stands for "nothing in flight
  // to join".
  Registration Register(const K& key, std::shared_ptr<Call>* call,
                        bool join_only = false) {
    Shard& shard = ShardOf(key);
    MutexLock lock(&shard.mu);
    auto it = shard.calls.find(key);
    if (it != shard.calls.end()) {
      *call = it->second;
      (*call)->joined.fetch_add(1, std::memory_order_relaxed);
      return Registration::kJoined;
    }
    if (join_only) return Registration::kFull;
    // Counted before the entry exists, so concurrent leaders of other
    // shards can never take the table past the bound together.
    if (inflight_.fetch_add(1, std::memory_order_relaxed) >= max_inflight_) {
      inflight_.fetch_sub(1, std::memory_order_relaxed);
      return Registration::kFull;
    }
    // An allocation that throws (bad_alloc) leaves the count as it was, so
    // the failure reaches the caller without costing the table a slot.
    SlotRelease unless_kept{&inflight_};
    *call = std::make_shared<Call>();
    shard.calls.emplace(key, *call);
    unless_kept.inflight = nullptr;
    return Registration::kLeader;
  }

  // Runs `f` and publishes its outcome (see the file comment), returning it.
  // `inline_run`: on the thread of the request that started it, which needs
  // no delivery; when no request joined either, the call's lock and copy
  // are skipped (the common uncontended miss).
  template <typename F>
  Result Run(const K& key, F& f, const std::shared_ptr<Call>& call,
             bool registered, bool inline_run) {
    // The coarse reading: a few ns instead of about 25, a third of an
    // uncontended request's cost. A call's time is then right within the
    // clock's tick (a few ms), and the sum over many calls unbiased.
    const absl::Time start = clock_->CoarseNow();
    Result outcome = InvokeCatching<V>(f, "coalescer", name_);
    // A clock at an infinity times nothing rather than a call of forever.
    const absl::Duration took = ElapsedSince(clock_->CoarseNow(), start);
    const std::size_t joined = registered ? Unregister(key) : 0;
    // Counted after the key has left the table and before any waiter
    // wakes: stats that show the call completed show it gone, and a waiter
    // that has the outcome finds it counted.
    if (took != absl::InfiniteDuration()) {
      Count(kCallNanos, static_cast<uint64_t>(absl::ToInt64Nanoseconds(took)));
    }
    Count(kCompleted);
    if (!outcome.ok()) Count(kFailed);
    if (!inline_run || joined > 0) call->Deliver(outcome);
    if (on_complete_ != nullptr && EnterHook()) {
      CallQuietly(on_complete_, key, outcome);
      LeaveHook();
    }
    return outcome;
  }

  // The executor would not take the call: forgets it, hands the refusal to
  // any request that joined meanwhile, and returns it.
  Result Refuse(const K& key, const std::shared_ptr<Call>& call,
                bool registered, const std::optional<std::string>& thrown) {
    Count(kRefused);
    Result refusal(absl::ResourceExhaustedError(
        thrown.has_value()
            ? absl::StrCat("coalescer '", name_,
                           "': the executor's Submit() threw (", *thrown,
                           "); the call was not run")
            : absl::StrCat("coalescer '", name_,
                           "': the executor refused the call (full, "
                           "stopping, or without threads); it was not run")));
    if (registered) Unregister(key);
    call->Deliver(refusal);
    return refusal;
  }

  // No hook starts after this returns; waits for one that is running.
  void Close() {
    MutexLock lock(&hook_mu_);
    closed_ = true;
    hooks_idle_.Wait(&hook_mu_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                    hook_mu_) { return hooks_running_ == 0; });
  }

  CoalesceStats stats() const {
    CoalesceStats s;
    s.leaders = counts_.Load(kLeaders);
    s.joined = counts_.Load(kJoined);
    s.uncoalesced = counts_.Load(kUncoalesced);
    s.refused = counts_.Load(kRefused);
    s.timed_out = counts_.Load(kTimedOut);
    s.failed = counts_.Load(kFailed);
    s.completed = counts_.Load(kCompleted);
    s.call_seconds = static_cast<double>(counts_.Load(kCallNanos)) * 1e-9;
    s.inflight = inflight();
    s.max_inflight = max_inflight_;
    return s;
  }

 private:
  // Gives back a slot of the bound on its way out, unless disarmed.
  struct SlotRelease {
    std::atomic<std::size_t>* inflight;
    ~SlotRelease() {
      if (inflight != nullptr)
        inflight->fetch_sub(1, std::memory_order_relaxed);
    }
  };

  struct alignas(kCacheLine) Shard {
    Mutex mu;
    std::unordered_map<K, std::shared_ptr<Call>, Hash, Eq> calls
        ABSL_GUARDED_BY(mu);
  };

  Shard& ShardOf(const K& key) {
    // Mixed: std::hash of an integer is the integer itself, and keys that
    // share their low bits (ids of one parity) must not share a shard.
    const uint64_t h = SplitMix64Step(static_cast<uint64_t>(Hash()(key)));
    return shards_[h % shard_count_];
  }

  // Removes `key`'s call from the table; returns how many joined it.
  std::size_t Unregister(const K& key) {
    Shard& shard = ShardOf(key);
    MutexLock lock(&shard.mu);
    std::size_t joined = 0;
    auto it = shard.calls.find(key);
    if (it != shard.calls.end()) {
      joined = it->second->joined.load(std::memory_order_relaxed);
      shard.calls.erase(it);
    }
    inflight_.fetch_sub(1, std::memory_order_relaxed);
    return joined;
  }

  bool EnterHook() {
    MutexLock lock(&hook_mu_);
    if (closed_) return false;
    ++hooks_running_;
    return true;
  }
  void LeaveHook() {
    MutexLock lock(&hook_mu_);
    if (--hooks_running_ == 0) hooks_idle_.SignalAll();
  }

  const std::string name_;
  const Clock* const clock_;
  const std::size_t max_inflight_;
  const std::size_t shard_count_;
  const std::unique_ptr<Shard[]> shards_;
  const OnComplete on_complete_;
  std::atomic<std::size_t> inflight_{0};
  ShardedCounts<kCounters> counts_;
  Mutex hook_mu_;
  CondVar hooks_idle_;  // hooks_running_ fell to 0
  bool closed_ ABSL_GUARDED_BY(hook_mu_) = false;
  std::size_t hooks_running_ ABSL_GUARDED_BY(hook_mu_) = 0;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_COALESCE_COALESCE_CORE_HPP_
