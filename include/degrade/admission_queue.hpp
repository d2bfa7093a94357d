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
//     stands anything that waited past twice the target is dropped;
//   * criticality order: with several criticalities queued, the most
//     important is served first (oldest first), the rest absorb overload;
//   * adaptive LIFO: while the queue stands and holds one criticality, the
//     newest items are served first (they can still make their deadlines),
//     FIFO again once it clears;
//   * deadline awareness: an item whose deadline falls before now plus the
//     observed batch service time is dropped instead of served (one item is
//     let through as a probe when nothing was served for that long, so a
//     slow first batch cannot lock the queue out);
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
#include "degrade/detail/codel.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/detail/slot_ring.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest capacity Create() accepts: the slots are allocated up front,
// and a typo of a few digits should be an error, not an allocation failure.
inline constexpr std::size_t kMaxQueueCapacity = std::size_t{1} << 24;

// QueueSettings
//
// Settings for `AdmissionQueue<T>`. ValidateQueueSettings() states the
// ranges; Create() refuses anything outside them.
struct QueueSettings {
  // Names the queue in errors, shed statuses and metrics. Not empty.
  std::string name = "queue";
  // The hard bound on queued items. Mandatory: in [1, kMaxQueueCapacity].
  std::size_t capacity = 0;
  // CoDel's target and interval (folly's and "Fail at Scale"'s defaults).
  // REQUIRES: 0 < target < interval < InfiniteDuration(). The slough
  // timeout is 2 x target.
  absl::Duration codel_target = absl::Milliseconds(5);
  absl::Duration codel_interval = absl::Milliseconds(100);
  // Serve newest first while CoDel says the queue stands.
  bool adaptive_lifo = true;
  // Refuse at push, and drop at pop, items whose deadline falls before now
  // plus the batch service time estimate (RecordServiceTime).
  bool deadline_aware = true;
  // The admission controller's hooks (admission.hpp), both optional and
  // called outside the queue's lock, from the pushing and popping threads
  // (so they must be thread-safe):
  //   admission_threshold: the rank threshold in force (Rank(), a threshold
  //     T admits exactly the ranks < T), read once per push and once per
  //     pop; items at or above it are refused at push and dropped at pop
  //     (kShed). Unset, or throwing, means kAdmitAllRank: the queue then
  //     fails open, its capacity and CoDel still bounding it.
  //     With an AdmissionController: `[ac] { return ac->threshold(); }`.
  //   on_sojourn: DAGOR's queuing-delay input, called once per item a pop
  //     lets go of. A served item, or one dropped for its deadline, reports
  //     the standing queue's delay: the larger of its own wait and the age of
  //     the oldest item at that pop (in adaptive LIFO the served item is the
  //     newest, whose wait says nothing about the backlog, and in FIFO the
  //     waits are capped by the slough timeout). An item CoDel sloughs
  //     reports InfiniteDuration(): it was never served, and a controller
  //     must see that window as overloaded whatever its target (CoDel's 10 ms
  //     cap is below DAGOR's 20 ms). With an AdmissionController:
  //     `[ac](absl::Duration d) { ac->RecordQueuingDelay(d); }`. A throw is
  //     swallowed.
  std::function<int()> admission_threshold;
  std::function<void(absl::Duration)> on_sojourn;
  // The usual pairing in one setting: Create() fills whichever of the two
  // hooks is unset from this controller (threshold(), which counts nothing,
  // and RecordQueuingDelay()). Must outlive the queue.
  AdmissionController* admission = nullptr;
  // The clock; null means RealClock::Instance(). Must outlive the queue.
  const Clock* clock = nullptr;
  // The telemetry the queue reports to (a QueueView); nullptr means
  // DefaultTelemetry(), NoTelemetry() none. Must outlive the queue.
  Telemetry* metrics = nullptr;
};

// ValidateQueueSettings(s)
//
// OK, or INVALID_ARGUMENT naming the queue, the setting and its value.
// Thread-safe (a pure function).
absl::Status ValidateQueueSettings(const QueueSettings& s);

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
  // Allocates nothing unless refusing.
  absl::Status Push(T&& item, absl::Time deadline = absl::InfiniteFuture(),
                    RequestClass rc = {});

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
  // been handed out for twice the estimate, the next one is let through
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

  class View final : public QueueView {
   public:
    explicit View(const AdmissionQueue* q) : q_(q) {}
    const std::string& name() const override { return q_->name_; }
    QueueStats stats() const override { return q_->stats(); }

   private:
    const AdmissionQueue* const q_;
  };

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
  // The next item to serve; `lifo` while the queue stands (see the
  // definition).
  Entry TakeLocked(bool lifo) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static std::size_t Crit(RequestClass rc) {
    return static_cast<std::size_t>(Rank(rc) / kNumCohorts);
  }
  // Drops the oldest item past its deadline at `now`; false if none.
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

  const View view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

// ---- Implementation details -------------------------------------------------

inline absl::Status ValidateQueueSettings(const QueueSettings& s) {
  return detail::ValidateQueueShape(s.name, s.capacity, kMaxQueueCapacity,
                                    s.codel_target, s.codel_interval);
}

template <typename T>
absl::StatusOr<std::unique_ptr<AdmissionQueue<T>>> AdmissionQueue<T>::Create(
    QueueSettings s, DropFn on_drop) {
  if (absl::Status st = ValidateQueueSettings(s); !st.ok()) return st;
  if (AdmissionController* ac = s.admission) {
    if (!s.admission_threshold) {
      s.admission_threshold = [ac] { return ac->threshold(); };
    }
    if (!s.on_sojourn) {
      s.on_sojourn = [ac](absl::Duration d) { ac->RecordQueuingDelay(d); };
    }
  }
  return std::unique_ptr<AdmissionQueue>(
      new AdmissionQueue(std::move(s), std::move(on_drop)));
}

template <typename T>
AdmissionQueue<T>::AdmissionQueue(QueueSettings s, DropFn on_drop)
    : name_(std::move(s.name)),
      capacity_(s.capacity),
      adaptive_lifo_(s.adaptive_lifo),
      deadline_aware_(s.deadline_aware),
      threshold_(std::move(s.admission_threshold)),
      on_sojourn_(std::move(s.on_sojourn)),
      on_drop_(std::move(on_drop)),
      clock_(s.clock != nullptr ? s.clock : &RealClock::Instance()),
      real_clock_(clock_ == &RealClock::Instance() ? &RealClock::Instance()
                                                   : nullptr),
      ring_(s.capacity),
      codel_(s.codel_target, s.codel_interval) {
  totals_.capacity = capacity_;
  // Last: the view must be complete before a telemetry may read it.
  if (Telemetry* t = detail::ResolveTelemetry(s.metrics)) {
    telemetry_ = detail::AttachQuietly([&] { return t->AttachQueue(view_); });
  }
}

template <typename T>
AdmissionQueue<T>::~AdmissionQueue() {
  telemetry_.reset();  // first: nothing may scrape a queue being destroyed
  Close();
  // Answered, not destroyed silently. on_drop may re-enter: pushes are
  // refused (closed), and a pop from it takes from the same ring.
  while (true) {
    std::optional<Dropped> d;
    {
      detail::MutexLock lock(&mu_);
      if (ring_.empty()) break;
      Entry e = ring_.pop_front();
      Forget(e);
      ++totals_.drops[static_cast<std::size_t>(DropReason::kShed)];
      d.emplace(Dropped{std::move(e.item), DropReason::kShed});
    }
    if (on_drop_) detail::CallQuietly([&] { on_drop_(std::move(d->item), d->why); });
  }
}

template <typename T>
void AdmissionQueue<T>::Close() {
  {
    detail::MutexLock lock(&mu_);
    closed_ = true;
  }
  nonempty_.SignalAll();
}

template <typename T>
bool AdmissionQueue<T>::closed() const {
  detail::MutexLock lock(&mu_);
  return closed_;
}

template <typename T>
int AdmissionQueue<T>::Threshold() const {
  if (!threshold_) return kAdmitAllRank;
  return detail::InvokeOr([this] { return threshold_(); },
                          [](absl::string_view) { return kAdmitAllRank; });
}

template <typename T>
absl::Status AdmissionQueue<T>::Refuse(DropReason why, absl::string_view what,
                                       std::optional<absl::Duration> retry) {
  ++totals_.drops[static_cast<std::size_t>(why)];
  return ShedError(absl::StrCat("admission queue '", name_, "'"), what, retry);
}

template <typename T>
void AdmissionQueue<T>::Forget(const Entry& e) {
  --by_criticality_[Crit(e.rc)];
}

template <typename T>
bool AdmissionQueue<T>::DropExpiredLocked(int64_t now,
                                          std::optional<Dropped>* out) {
  for (std::size_t i = 0; i < ring_.size(); ++i) {
    if (ring_.at(i).deadline > now) continue;
    Forget(ring_.at(i));
    ++totals_.drops[static_cast<std::size_t>(DropReason::kDeadline)];
    out->emplace(Dropped{std::move(ring_.remove_at(i).item),
                         DropReason::kDeadline});
    return true;
  }
  return false;
}

template <typename T>
absl::Status AdmissionQueue<T>::Push(T&& item, absl::Time deadline,
                                     RequestClass rc) {
  const int threshold = Threshold();
  std::optional<Dropped> evicted;
  bool wake = false;
  {
    detail::MutexLock lock(&mu_);
    if (closed_) {
      return absl::UnavailableError(
          absl::StrCat("admission queue '", name_, "' is closed"));
    }
    const int64_t now = NowNanos();
    if (Rank(rc) >= threshold) {
      return Refuse(DropReason::kShed,
                    absl::StrCat("request class ", EncodeRequestClass(rc),
                                 " is below the admission threshold"),
                    std::nullopt);
    }
    const int64_t deadline_ns = deadline == absl::InfiniteFuture()
                                    ? detail::kSatMaxNanos
                                    : absl::ToUnixNanos(deadline);
    if (!CanMeet(deadline_ns, now) &&
        !(ring_.empty() && service_.ProbeDue(now))) {
      return Refuse(DropReason::kDeadline,
                    absl::StrCat("the deadline cannot be met (service time ",
                                 absl::FormatDuration(absl::Nanoseconds(
                                     service_.estimate())), ")"),
                    absl::Milliseconds(-1));
    }
    const std::size_t crit = Crit(rc);
    if (ring_.full() && !(deadline_aware_ && DropExpiredLocked(now, &evicted))) {
      std::size_t victim_crit = kNumCriticalities;
      for (std::size_t c = kNumCriticalities; c-- > crit + 1;) {
        if (by_criticality_[c] > 0) {
          victim_crit = c;
          break;
        }
      }
      if (victim_crit == kNumCriticalities) {
        return Refuse(DropReason::kCapacity,
                      absl::StrCat("the queue is full (capacity ", capacity_,
                                   ")"),
                      std::nullopt);
      }
      for (std::size_t i = 0; i < ring_.size(); ++i) {
        const Entry& e = ring_.at(i);
        if (Crit(e.rc) != victim_crit) continue;
        Forget(e);
        evicted.emplace(Dropped{std::move(ring_.remove_at(i).item),
                                DropReason::kShed});
        ++totals_.drops[static_cast<std::size_t>(DropReason::kShed)];
        break;
      }
    }
    ring_.push_back(Entry{std::move(item), now, deadline_ns, rc});
    ++by_criticality_[crit];
    ++totals_.pushed;
    wake = waiters_ > 0;
  }
  // Only a blocked WaitPopBatch needs the signal, and signalling costs as
  // much as the rest of a push.
  if (wake) nonempty_.Signal();
  if (evicted.has_value() && on_drop_) {
    detail::CallQuietly(
        [&] { on_drop_(std::move(evicted->item), evicted->why); });
  }
  return absl::OkStatus();
}

template <typename T>
void AdmissionQueue<T>::DropLocked(Entry&& e, DropReason why,
                                   DropChunk* drops, std::size_t* dropped) {
  Forget(e);
  ++totals_.drops[static_cast<std::size_t>(why)];
  (*drops)[(*dropped)++].emplace(Dropped{std::move(e.item), why});
}

template <typename T>
bool AdmissionQueue<T>::PopChunkLocked(std::vector<T>* out, std::size_t limit,
                                       int threshold, DropChunk* drops,
                                       std::size_t* dropped, Samples* samples,
                                       std::size_t* served) {
  const int64_t now = NowNanos();
  if (ring_.empty()) {
    codel_.Drained(now);
    return false;
  }
  // The standing queue's delay: every signal of this hold reports at least
  // it (see on_sojourn, QueueDelaySource).
  const int64_t head_age = Age(now, ring_.front().enqueued);
  codel_.Observe(now, head_age);
  poll_sum_ = detail::SatAddNanos(poll_sum_, head_age);
  ++poll_count_;
  const bool lifo = adaptive_lifo_ && codel_.overloaded();
  const auto sample = [&](int64_t ns) {
    if (on_sojourn_) samples->ns[samples->n++] = ns;
  };
  bool more = false;
  while (*served < limit && !ring_.empty()) {
    if (*dropped == kDropChunk) {
      more = true;
      break;
    }
    if (codel_.Slough(Age(now, ring_.front().enqueued))) {
      DropLocked(ring_.pop_front(), DropReason::kCodel, drops, dropped);
      sample(detail::kSatMaxNanos);
      continue;
    }
    Entry e = TakeLocked(lifo);
    const int64_t wait = Age(now, e.enqueued);
    if (Rank(e.rc) >= threshold) {
      DropLocked(std::move(e), DropReason::kShed, drops, dropped);
      continue;
    }
    // The probe (detail::ServiceEstimate) is the first item of a pop after
    // nothing was handed out for the estimate.
    if (!CanMeet(e.deadline, now)) {
      if (*served > 0 || !service_.ProbeDue(now)) {
        DropLocked(std::move(e), DropReason::kDeadline, drops, dropped);
        sample(std::max(wait, head_age));
        continue;
      }
      service_.Probed();
    }
    Forget(e);
    ++totals_.sojourn_buckets[detail::SojournBucket(kSojournBucketsMs, wait)];
    sojourn_sum_ = detail::SatAddNanos(sojourn_sum_, wait);
    ++totals_.popped;
    out->push_back(std::move(e.item));  // reserved: cannot throw
    sample(std::max(wait, head_age));
    ++*served;
  }
  if (*served > 0) service_.HandedOut(now);
  // Checked after the loop too: a pop that took exactly the last items
  // leaves an empty queue FIFO and calm.
  if (ring_.empty()) codel_.Drained(now);
  return more;
}

template <typename T>
typename AdmissionQueue<T>::Entry AdmissionQueue<T>::TakeLocked(
    bool lifo) {
  // REQUIRES: !ring_.empty(), so some criticality has a count.
  std::size_t best = 0;
  while (by_criticality_[best] == 0) ++best;
  const std::size_t n = ring_.size();
  // One criticality queued: newest first (lifo). Several: the most
  // important, oldest first; the others absorb the overload (they are
  // sloughed), and newest-first within a class the server keeps up with
  // would starve its older items until CoDel drops them.
  if (by_criticality_[best] == n) return lifo ? ring_.pop_back() : ring_.pop_front();
  std::size_t pick = 0;
  while (Crit(ring_.at(pick).rc) != best) ++pick;
  return pick == 0 ? ring_.pop_front() : ring_.remove_at(pick);
}

template <typename T>
void AdmissionQueue<T>::Deliver(DropChunk* drops, std::size_t n) const {
  for (std::size_t i = 0; i < n; ++i) {
    std::optional<Dropped>& d = (*drops)[i];
    if (on_drop_) {
      detail::CallQuietly([&] { on_drop_(std::move(d->item), d->why); });
    }
    d.reset();
  }
}

template <typename T>
std::size_t AdmissionQueue<T>::PopBatch(std::vector<T>* out,
                                        std::size_t max_batch) {
  if (out == nullptr || max_batch == 0) return 0;
  // Before any item is taken, so that a bad_alloc loses nothing; the chunk
  // loop below then moves items with no allocation (T's move is noexcept).
  if (out->capacity() - out->size() < max_batch) {
    out->reserve(out->size() + std::min(max_batch, capacity_));
  }
  max_batch = std::min(max_batch, out->capacity() - out->size());
  const int threshold = Threshold();
  std::size_t total = 0;
  bool more = true;
  while (more) {
    DropChunk drops;
    Samples samples;  // written only for on_sojourn
    std::size_t dropped = 0;
    std::size_t served = 0;
    const std::size_t limit = std::min(max_batch - total, kServeChunk);
    {
      detail::MutexLock lock(&mu_);
      // Another hold when this one stopped at its drop quota, or at its
      // serve quota with more of the batch to go.
      more = PopChunkLocked(out, limit, threshold, &drops, &dropped, &samples,
                            &served) ||
             (served == limit && total + served < max_batch);
    }
    total += served;
    for (std::size_t i = 0; i < samples.n; ++i) {
      detail::CallQuietly(on_sojourn_,
                          samples.ns[i] == detail::kSatMaxNanos
                              ? absl::InfiniteDuration()
                              : absl::Nanoseconds(samples.ns[i]));
    }
    Deliver(&drops, dropped);
  }
  return total;
}

template <typename T>
std::size_t AdmissionQueue<T>::WaitPopBatch(std::vector<T>* out,
                                            std::size_t max_batch,
                                            absl::Duration timeout) {
  if (out == nullptr || max_batch == 0) return 0;
  {
    detail::MutexLock lock(&mu_);
    ++waiters_;
    nonempty_.WaitFor(&mu_, timeout,
                      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                        return !ring_.empty() || closed_;
                      });
    --waiters_;
  }
  return PopBatch(out, max_batch);
}

template <typename T>
void AdmissionQueue<T>::RecordServiceTime(absl::Duration batch_time) {
  if (batch_time < absl::ZeroDuration() ||
      batch_time == absl::InfiniteDuration()) {
    return;
  }
  const int64_t ns = absl::ToInt64Nanoseconds(batch_time);
  detail::MutexLock lock(&mu_);
  service_.Record(ns, NowNanos());
}

template <typename T>
absl::Duration AdmissionQueue<T>::service_time_estimate() const {
  detail::MutexLock lock(&mu_);
  return absl::Nanoseconds(service_.estimate());
}

template <typename T>
std::function<double()> AdmissionQueue<T>::QueueDelaySource() {
  return [this]() -> double {
    detail::MutexLock lock(&mu_);
    double delay_ns = 0;
    if (poll_count_ > 0) {
      delay_ns = static_cast<double>(poll_sum_) / static_cast<double>(poll_count_);
    } else if (!ring_.empty()) {
      delay_ns = static_cast<double>(Age(NowNanos(), ring_.front().enqueued));
    }
    poll_sum_ = 0;
    poll_count_ = 0;
    return delay_ns / 1e6;
  };
}

template <typename T>
std::size_t AdmissionQueue<T>::size() const {
  detail::MutexLock lock(&mu_);
  return ring_.size();
}

template <typename T>
QueueStats AdmissionQueue<T>::stats() const {
  detail::MutexLock lock(&mu_);
  QueueStats s = totals_;
  s.sojourn_sum = absl::Nanoseconds(sojourn_sum_);
  s.depth = ring_.size();
  s.overloaded = codel_.overloaded();
  s.lifo = adaptive_lifo_ && s.overloaded;
  return s;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ADMISSION_QUEUE_HPP_
