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
//   * adaptive LIFO: while the queue stands, the newest items are served
//     first (they can still make their deadlines), FIFO again once it clears;
//   * deadline awareness: an item whose deadline falls before now plus the
//     observed batch service time is dropped instead of served;
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
  //   on_sojourn: called once per served item with the time it waited, to
  //     drive DAGOR's queuing-delay threshold. With an AdmissionController:
  //     `[ac](absl::Duration d) { ac->RecordQueuingDelay(d); }`. A throw is
  //     swallowed.
  std::function<int()> admission_threshold;
  std::function<void(absl::Duration)> on_sojourn;
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
// move-constructible; it need not be default-constructible or copyable.
//
// Every item pushed successfully ends exactly once: handed out by a pop, or
// given to `on_drop` with its reason (kCodel, kDeadline, kShed), or
// destroyed with the queue (the destructor does not call `on_drop`: drain
// the queue first if its items must be answered). A refused push never
// takes the item.
//
// Thread-safe. Neither copyable nor movable (views and sources hold its
// address); destroy it only once no other thread uses it.
template <typename T>
class AdmissionQueue final {
  static_assert(std::is_move_constructible_v<T>,
                "degrade::AdmissionQueue<T>: T must be move-constructible");

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
  ~AdmissionQueue();

  // AdmissionQueue::Push()
  //
  // Queues `item`, to be served by `deadline`, as a request of class `rc`.
  // Refused with a ShedError (the item is NOT moved from), counted as a drop
  // of the reason given:
  //   * kShed: Rank(rc) is at or above the admission threshold;
  //   * kDeadline (deadline_aware): `deadline` is at or before now plus the
  //     service time estimate; the status says not to retry;
  //   * kCapacity: the queue is full and holds nothing of a less important
  //     criticality than rc's. If it does, the oldest item of the least
  //     important criticality queued is evicted (on_drop, kShed) to make
  //     room: Envoy #25783's ask. Deciding is O(1) (counts per
  //     criticality); evicting is O(capacity), paid only by a full queue.
  // Allocates nothing unless refusing.
  absl::Status Push(T&& item, absl::Time deadline = absl::InfiniteFuture(),
                    RequestClass rc = {});

  // AdmissionQueue::PopBatch()
  //
  // Moves up to `max_batch` items to the back of `*out` (which keeps what
  // it held) and returns how many; never blocks. FIFO, or newest first
  // while the queue stands (adaptive_lifo). Items CoDel sloughs, items that
  // can no longer make their deadline and items below the admission
  // threshold are dropped on the way (on_drop, after the lock is released).
  // `out` grows only if it lacks capacity: reserve max_batch once.
  std::size_t PopBatch(std::vector<T>* out, std::size_t max_batch);

  // AdmissionQueue::WaitPopBatch()
  //
  // PopBatch() that first waits, up to `timeout` of real time, for the queue
  // to hold something. May return 0 before the timeout if everything it
  // found was dropped. Any timeout is safe (<= 0 does not wait;
  // InfiniteDuration() waits for a push).
  std::size_t WaitPopBatch(std::vector<T>* out, std::size_t max_batch,
                           absl::Duration timeout);

  // AdmissionQueue::RecordServiceTime()
  //
  // Reports how long the last batch took to serve. The deadline checks use
  // an EWMA of these (weight 1/4 for the newest; the first sample is taken
  // as is). Negative and infinite durations are ignored.
  void RecordServiceTime(absl::Duration batch_time);
  // The current estimate; ZeroDuration() before the first sample.
  absl::Duration service_time_estimate() const;

  // AdmissionQueue::QueueDelaySource()
  //
  // A DegradationManager source ("queue_delay_ms"): the mean wait, in ms, of
  // the items served since the previous call. When none was served, the
  // age of the oldest queued item, so a stalled consumer reads as a growing
  // delay rather than as 0; an idle, empty queue reads 0. The mean (not
  // CoDel's minimum) because that is what DAGOR's 20 ms threshold and a
  // hand-written config compare with. Each call restarts the mean: give it
  // to one manager. REQUIRES: the queue outlives the function.
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
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One lock hold of a pop, serving at most `limit` (<= kServeChunk):
  // returns true when it stopped because its drops filled the chunk.
  bool PopChunkLocked(std::vector<T>* out, std::size_t limit,
                      int threshold, DropChunk* drops, std::size_t* dropped,
                      std::array<int64_t, kServeChunk>* waits,
                      std::size_t* served) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  int64_t service_estimate_ ABSL_GUARDED_BY(mu_) = 0;  // ns
  bool has_service_estimate_ ABSL_GUARDED_BY(mu_) = false;
  QueueStats totals_ ABSL_GUARDED_BY(mu_);  // all but depth, lifo,
                                            // overloaded, sojourn_sum
  int64_t sojourn_sum_ ABSL_GUARDED_BY(mu_) = 0;  // ns, saturating
  int64_t poll_sum_ ABSL_GUARDED_BY(mu_) = 0;     // ns, saturating
  uint64_t poll_count_ ABSL_GUARDED_BY(mu_) = 0;
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;  // threads in WaitPopBatch

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
}

template <typename T>
int AdmissionQueue<T>::Threshold() const {
  if (!threshold_) return kAdmitAllRank;
  return detail::InvokeOr([this] { return threshold_(); },
                          [](absl::string_view) { return kAdmitAllRank; });
}

template <typename T>
bool AdmissionQueue<T>::CanMeet(int64_t deadline, int64_t now) const {
  if (!deadline_aware_ || deadline == detail::kSatMaxNanos) return true;
  return detail::SatAddNanos(now, service_estimate_) < deadline;
}

template <typename T>
absl::Status AdmissionQueue<T>::Refuse(DropReason why, absl::string_view what,
                                       std::optional<absl::Duration> retry) {
  ++totals_.drops[static_cast<std::size_t>(why)];
  return ShedError(absl::StrCat("admission queue '", name_, "'"), what, retry);
}

template <typename T>
void AdmissionQueue<T>::Forget(const Entry& e) {
  --by_criticality_[static_cast<std::size_t>(Rank(e.rc) / kNumCohorts)];
}

template <typename T>
absl::Status AdmissionQueue<T>::Push(T&& item, absl::Time deadline,
                                     RequestClass rc) {
  const int threshold = Threshold();
  std::optional<Dropped> evicted;
  bool wake = false;
  {
    detail::MutexLock lock(&mu_);
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
    if (!CanMeet(deadline_ns, now)) {
      return Refuse(DropReason::kDeadline,
                    absl::StrCat("the deadline cannot be met (service time ",
                                 absl::FormatDuration(
                                     absl::Nanoseconds(service_estimate_)), ")"),
                    absl::Milliseconds(-1));
    }
    const std::size_t crit = static_cast<std::size_t>(Rank(rc) / kNumCohorts);
    if (ring_.full()) {
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
        if (static_cast<std::size_t>(Rank(e.rc) / kNumCohorts) != victim_crit)
          continue;
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
bool AdmissionQueue<T>::PopChunkLocked(
    std::vector<T>* out, std::size_t limit, int threshold,
    DropChunk* drops, std::size_t* dropped,
    std::array<int64_t, kServeChunk>* waits, std::size_t* served) {
  const int64_t now = NowNanos();
  if (ring_.empty()) {
    codel_.Drained(now);
    return false;
  }
  codel_.Observe(now, Age(now, ring_.front().enqueued));
  const bool lifo = adaptive_lifo_ && codel_.overloaded();
  while (*served < limit) {
    if (ring_.empty()) {
      codel_.Drained(now);
      return false;
    }
    if (*dropped == kDropChunk) return true;
    if (codel_.Slough(Age(now, ring_.front().enqueued))) {
      DropLocked(ring_.pop_front(), DropReason::kCodel, drops, dropped);
      continue;
    }
    Entry e = lifo ? ring_.pop_back() : ring_.pop_front();
    if (Rank(e.rc) >= threshold) {
      DropLocked(std::move(e), DropReason::kShed, drops, dropped);
      continue;
    }
    if (!CanMeet(e.deadline, now)) {
      DropLocked(std::move(e), DropReason::kDeadline, drops, dropped);
      continue;
    }
    Forget(e);
    const int64_t wait = Age(now, e.enqueued);
    std::size_t bucket = 0;
    while (bucket < kSojournBucketsMs.size() &&
           static_cast<double>(wait) > kSojournBucketsMs[bucket] * 1e6) {
      ++bucket;
    }
    ++totals_.sojourn_buckets[bucket];
    sojourn_sum_ = detail::SatAddNanos(sojourn_sum_, wait);
    ++totals_.popped;
    poll_sum_ = detail::SatAddNanos(poll_sum_, wait);
    ++poll_count_;
    out->push_back(std::move(e.item));
    if (on_sojourn_) (*waits)[*served] = wait;
    ++*served;
  }
  return false;
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
  const int threshold = Threshold();
  std::size_t total = 0;
  bool more = true;
  while (more) {
    DropChunk drops;
    std::array<int64_t, kServeChunk> waits;  // written only for on_sojourn
    std::size_t dropped = 0;
    std::size_t served = 0;
    const std::size_t limit = std::min(max_batch - total, kServeChunk);
    {
      detail::MutexLock lock(&mu_);
      // Another hold when this one stopped at its drop quota, or at its
      // serve quota with more of the batch to go.
      more = PopChunkLocked(out, limit, threshold, &drops, &dropped, &waits,
                            &served) ||
             (served == limit && total + served < max_batch);
    }
    total += served;
    if (on_sojourn_) {
      for (std::size_t i = 0; i < served; ++i) {
        detail::CallQuietly(on_sojourn_, absl::Nanoseconds(waits[i]));
      }
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
    nonempty_.WaitFor(&mu_, timeout, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                                         mu_) { return !ring_.empty(); });
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
  if (!has_service_estimate_) {
    service_estimate_ = ns;
    has_service_estimate_ = true;
  } else {
    // Both are in [0, INT64_MAX]: the difference and the sum cannot wrap.
    service_estimate_ += (ns - service_estimate_) / 4;
  }
}

template <typename T>
absl::Duration AdmissionQueue<T>::service_time_estimate() const {
  detail::MutexLock lock(&mu_);
  return absl::Nanoseconds(service_estimate_);
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
