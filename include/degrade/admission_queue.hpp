// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: admission_queue.hpp
// -----------------------------------------------------------------------------
//
// The queue in front of a batching server (a GPU model, a database writer),
// with a discipline: a plain bounded FIFO under overload fills with requests
// that will all miss their deadlines, and every one of them still costs a
// batch slot. `AdmissionQueue<T>` keeps the latency of what it serves bounded
// instead, the way Meta's "Fail at Scale" and folly do:
//
//   * a hard capacity (mandatory): a push into a full queue is refused, and
//     the caller, which still owns the item, answers it at once;
//   * CoDel: once the shortest wait over a whole interval stayed above the
//     target (5 ms of 100 ms), a standing queue has formed, and while it
//     stands anything that waited past twice the target is dropped, except
//     the oldest item of the most important class while a less important
//     class is queued (it is served next: its wait is the batch in service);
//   * criticality order: with several criticalities queued, the most
//     important is served first (oldest first), the rest absorb overload;
//   * adaptive LIFO: while the queue stands and holds one criticality, the
//     newest items are served first (they can still make their deadlines),
//     FIFO again once it clears;
//   * deadline awareness: an item whose deadline falls before now plus the
//     observed batch service time is dropped instead of served (one item is
//     let through as a probe when nothing was served for twice that long,
//     a minute at most, so a slow first batch, or one absurd sample, cannot
//     lock the queue out);
//   * admission: items whose class the admission controller no longer
//     admits are refused at push and dropped at pop;
//   * every drop is handed back through `on_drop` with its reason.
//
//   degrade::QueueSettings s;  s.capacity = 256;
//   auto q = degrade::AdmissionQueue<Request*>::Create(
//       s, [](Request*&& r, degrade::DropReason why) { r->Reject(why); });
//   if (absl::Status s = (*q)->Push(std::move(req), req->deadline, req->cls);
//       !s.ok()) req->Reject(s);               // the caller keeps req
//   std::vector<Request*> batch;                // server loop:
//   (*q)->WaitPopBatch(&batch, 32, absl::Milliseconds(5));
//   const absl::Time start = clock.Now();  Run(batch);
//   (*q)->RecordServiceTime(clock.Now() - start);
//
// Thread safety: every method may be called from any thread. One mutex
// guards the queue (it batches: a pop takes the lock once per batch of up to
// 64 items); user callbacks (`on_drop`, the settings' hooks) never run under
// it, so they may call back into the queue.

#ifndef DEGRADE_ADMISSION_QUEUE_HPP_
#define DEGRADE_ADMISSION_QUEUE_HPP_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/overload/codel.hpp"
#include "degrade/detail/overload/slot_ring.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/queue_settings.hpp"  // IWYU pragma: export
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN



// AdmissionQueue<T>
//
// A bounded, disciplined queue of T (see the file comment). T must be
// nothrow move-constructible (as folly's MPMCQueue requires): a pop moves
// items out of the ring while it holds drops not yet delivered, and a throw
// there would lose them. It need not be default-constructible or copyable.
//
// Every item pushed successfully ends exactly once: handed out by a pop, or
// given to `on_drop` with its reason (kCodel, kDeadline, kShed); the
// destructor hands whatever is still queued to `on_drop` as kShed. A
// refused push never takes the item.
//
// Thread-safe. Neither copyable nor movable (views and sources hold its
// address); destroy it only once no other thread uses it.
template <typename T>
class AdmissionQueue final {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "degrade::AdmissionQueue<T>: T must be nothrow "
                "move-constructible (a throwing move would lose drops)");

 public:
  // Called outside the queue's lock, possibly from several threads at once,
  // for each item the queue lets go of without serving. It may call back
  // into the queue (a Push from it works). A throw is swallowed, and the
  // item is then destroyed; the other drops are still delivered.
  using DropFn = std::function<void(T&& item, DropReason why)>;

  // Validates `s` (ValidateQueueSettings) and allocates every slot.
  static absl::StatusOr<std::unique_ptr<AdmissionQueue>> Create(
      QueueSettings s, DropFn on_drop = {});

  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;
  // Closes the queue and hands every item still queued to `on_drop`
  // (kShed), on the destroying thread. REQUIRES: no other thread uses the
  // queue; `on_drop` may still Push (refused: the queue is closed).
  ~AdmissionQueue();

  // AdmissionQueue::Close()
  //
  // For shutdown: every later Push() is refused with UNAVAILABLE ("closed",
  // not a shed: the caller should not retry here), and every WaitPopBatch()
  // returns at once, now and later, instead of waiting. Items already queued
  // stay and are still served by pops (drain them, or let the destructor
  // drop them). Idempotent; thread-safe.
  void Close();
  bool closed() const;

  // AdmissionQueue::Push()
  //
  // Queues `item`, to be served by `deadline`, as a request of class `rc`.
  // Refused with a ShedError (the item is NOT moved from), counted as a drop
  // of the reason given:
  //   * kShed: Rank(rc) is at or above the admission threshold;
  //   * kDeadline (deadline_aware): `deadline` is at or before now plus the
  //     service time estimate; the status says not to retry. Not while a
  //     probe is due (RecordServiceTime) and the queue is empty;
  //   * kCapacity: the queue is full, holds no item already past its
  //     deadline (the oldest such is dropped first, kDeadline) and nothing of
  //     a less important criticality than rc's. If it does, the oldest item
  //     of the least important criticality queued is evicted (on_drop,
  //     kShed) to make room: Envoy #25783's ask. Evicting is O(capacity),
  //     paid only by a full queue.
  // A closed queue refuses with UNAVAILABLE, counted as no drop.
  // Allocates only when refusing, or when every slot allocated so far is
  // in use (the slots double as the queue fills, up to its capacity); a
  // growth that cannot allocate refuses the push (kCapacity) and leaves
  // the item with the caller.
  absl::Status Push(T&& item, absl::Time deadline = absl::InfiniteFuture(),
                    RequestClass rc = {});

  // AdmissionQueue::Preempt()
  //
  // Drops the oldest queued item of the least important criticality below
  // rc's (on_drop, kShed, after the lock is released) and returns true;
  // false, dropping nothing, when nothing less important than rc is queued.
  // For a server whose concurrency limiter refused rc while queued items of
  // a lower class hold permits: the drop hands one back (on_drop reports the
  // permit), and rc may try again, so the limiter never refuses a CRITICAL
  // request to keep a SHEDDABLE one waiting. O(size), paid only on refusal.
  // A closed queue still preempts (its items are still queued).
  bool Preempt(RequestClass rc);

  // How many queued items are of a less important criticality than rc's:
  // how many Preempt(rc) calls can succeed now. A limiter refusing rc needs
  // in_flight() - limit() + 1 permits back; preempting fewer than that
  // drops requests and still refuses rc. O(1), under the queue's lock.
  std::size_t queued_below(RequestClass rc) const;

  // AdmissionQueue::PopBatch()
  //
  // Moves up to `max_batch` items to the back of `*out` (which keeps what
  // it held) and returns how many; never blocks. Most important
  // criticality first, FIFO within it, or newest first while the queue
  // stands and holds one criticality (adaptive_lifo). Items CoDel sloughs, items that
  // can no longer make their deadline and items below the admission
  // threshold are dropped on the way (on_drop, after the lock is released).
  // `out` is reserved for max_batch more before any item is taken, so a
  // bad_alloc leaves the queue as it was; reserve it once to allocate
  // nothing.
  std::size_t PopBatch(std::vector<T>* out, std::size_t max_batch);

  // AdmissionQueue::WaitPopBatch()
  //
  // PopBatch() that first waits, up to `timeout` of real time, for the queue
  // to hold something. May return 0 before the timeout if everything it
  // found was dropped, or once the queue is closed. Any timeout is safe
  // (<= 0 does not wait; InfiniteDuration() waits for a push or Close()).
  std::size_t WaitPopBatch(std::vector<T>* out, std::size_t max_batch,
                           absl::Duration timeout);

  // AdmissionQueue::RecordServiceTime()
  //
  // Reports how long the last batch took to serve. The deadline checks use
  // an EWMA of these (weight 1/4 for the newest; the first sample is taken
  // as is). Negative and infinite durations are ignored. Once no item has
  // been handed out for twice the estimate (at most a minute), the next
  // one is let through
  // whatever its deadline (a probe, see detail::ServiceEstimate), and the
  // next sample is taken as is: one slow batch cannot make the queue refuse
  // everything for good.
  void RecordServiceTime(absl::Duration batch_time);
  // The current estimate; ZeroDuration() before the first sample.
  absl::Duration service_time_estimate() const;

  // AdmissionQueue::QueueDelaySource()
  //
  // A DegradationManager source ("queue_delay_ms"): the standing queue's
  // delay, in ms: the mean, over the pops since the previous call, of the
  // age of the oldest queued item at each pop (CoDel's own measure; not the
  // served items' waits, which in adaptive LIFO are the newest items' and
  // in FIFO are capped by the slough timeout). With no pop since, the
  // oldest item's age now, so a stalled consumer reads as a growing delay;
  // an idle, empty queue reads 0. Each call restarts the mean: give it to
  // one manager. REQUIRES: the queue outlives the function.
  std::function<double()> QueueDelaySource();

  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }
  QueueStats stats() const;
  const std::string& name() const { return name_; }

 private:
  struct Entry {
    T item;
    int64_t enqueued;  // Unix ns; time is kept in integers, see NowNanos()
    int64_t deadline;  // Unix ns, kSatMaxNanos for none
    RequestClass rc;
  };
  struct Dropped {
    T item;
    DropReason why;
  };

  // What one lock hold hands out: at most this many drops (so a long
  // backlog is sloughed in bounded lock holds) and served items. The
  // drops live on the popping thread's stack until delivered.
  static constexpr std::size_t kDropChunk = std::max<std::size_t>(
      1, std::min<std::size_t>(16, 2048 / sizeof(std::optional<Dropped>)));
  static constexpr std::size_t kServeChunk = 64;
  using DropChunk = std::array<std::optional<Dropped>, kDropChunk>;

  AdmissionQueue(QueueSettings s, DropFn on_drop);

  int Threshold() const;
  bool CanMeet(int64_t deadline, int64_t now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !deadline_aware_ || service_.CanMeet(deadline, now);
  }
  // The on_sojourn samples of one lock hold (kSatMaxNanos: infinite).
  struct Samples {
    std::array<int64_t, kServeChunk + kDropChunk> ns;
    std::size_t n = 0;
  };
  // One lock hold of a pop, serving at most `limit` (<= kServeChunk):
  // returns true when it stopped because its drops filled the chunk.
  bool PopChunkLocked(std::vector<T>* out, std::size_t limit,
                      int threshold, DropChunk* drops, std::size_t* dropped,
                      Samples* samples, std::size_t* served)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the head is the item TakeLocked serves next among several
  // classes, and so exempt from CoDel's slough.
  bool ServedNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next item to serve; `lifo` while the queue stands (see the
  // definition).
  Entry TakeLocked(bool lifo) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::size_t Crit(RequestClass rc) {
    return static_cast<std::size_t>(Rank(rc) / kNumCohorts);
  }
  // Drops the oldest item past its deadline at `now`; false if none.
  // Evicts the oldest item of the least important criticality above
  // `crit` (less important) into *out; false when there is none.
  bool EvictBelowLocked(std::size_t crit, std::optional<Dropped>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool DropExpiredLocked(int64_t now, std::optional<Dropped>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropLocked(Entry&& e, DropReason why, DropChunk* drops,
                  std::size_t* dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Deliver(DropChunk* drops, std::size_t n) const;
  void Forget(const Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Refuse(DropReason why, absl::string_view what,
                      std::optional<absl::Duration> retry_after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Time in Unix nanoseconds: Debian's Abseil keeps Time and Duration
  // arithmetic out of line, which cost more than the rest of a push and pop
  // together. The default clock is read without its virtual call.
  int64_t NowNanos() const {
    return real_clock_ != nullptr ? real_clock_->UnixNanos()
                                  : absl::ToUnixNanos(clock_->Now());
  }
  static int64_t Age(int64_t now, int64_t since) {
    return detail::WaitNanos(now, since);
  }

  const std::string name_;
  const std::size_t capacity_;
  const bool adaptive_lifo_;
  const bool deadline_aware_;
  const std::function<int()> threshold_;
  const std::function<void(absl::Duration)> on_sojourn_;
  const DropFn on_drop_;
  const Clock* const clock_;
  const RealClock* const real_clock_;  // clock_ when it is the default

  mutable detail::Mutex mu_;
  detail::CondVar nonempty_;
  detail::SlotRing<Entry> ring_ ABSL_GUARDED_BY(mu_);
  detail::CodelState codel_ ABSL_GUARDED_BY(mu_);
  std::array<std::size_t, kNumCriticalities> by_criticality_
      ABSL_GUARDED_BY(mu_){};
  detail::ServiceEstimate service_ ABSL_GUARDED_BY(mu_);
  QueueStats totals_ ABSL_GUARDED_BY(mu_);  // all but depth, lifo,
                                            // overloaded, sojourn_sum
  int64_t sojourn_sum_ ABSL_GUARDED_BY(mu_) = 0;  // ns, saturating
  int64_t poll_sum_ ABSL_GUARDED_BY(mu_) = 0;  // head ages at pops, ns
  uint64_t poll_count_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;  // threads in WaitPopBatch
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

  const detail::OwnerView<AdmissionQueue, QueueStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

DEGRADE_NAMESPACE_END

// ---- Implementation details ----
// The out-of-line members, apart so that this header reads as the contract.
#include "degrade/detail/overload/admission_queue_inl.hpp"  // IWYU pragma: export

#endif  // DEGRADE_ADMISSION_QUEUE_HPP_
