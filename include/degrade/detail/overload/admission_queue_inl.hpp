// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The out-of-line members of AdmissionQueue<T>, included at the end of
// admission_queue.hpp (the "-inl" split the manager uses): the header keeps
// the contract, this file the mechanics. Including it alone includes the
// header first.
//
// Thread safety: see AdmissionQueue.

#ifndef DEGRADE_DETAIL_OVERLOAD_ADMISSION_QUEUE_INL_HPP_
#define DEGRADE_DETAIL_OVERLOAD_ADMISSION_QUEUE_INL_HPP_

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
#include "degrade/admission_queue.hpp"
#include "degrade/clock.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/overload/codel.hpp"
#include "degrade/detail/overload/slot_ring.hpp"
#include "degrade/detail/saturating.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

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
  telemetry_ = detail::Attach(s.metrics, &Telemetry::AttachQueue, view_);
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
    if (on_drop_)
      detail::CallQuietly([&] { on_drop_(std::move(d->item), d->why); });
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
  // Only the oldest few are looked at: a push into a full queue is the
  // overload case, and scanning a ring of millions under the lock on every
  // refusal would stall every producer. Expired items are mostly the oldest;
  // the rest are dropped when they reach the front.
  constexpr std::size_t kExpiryScan = 64;
  const std::size_t scan = std::min(ring_.size(), kExpiryScan);
  for (std::size_t i = 0; i < scan; ++i) {
    if (ring_.at(i).deadline > now) continue;
    Forget(ring_.at(i));
    ++totals_.drops[static_cast<std::size_t>(DropReason::kDeadline)];
    out->emplace(
        Dropped{std::move(ring_.remove_at(i).item), DropReason::kDeadline});
    return true;
  }
  return false;
}

template <typename T>
bool AdmissionQueue<T>::EvictBelowLocked(std::size_t crit,
                                         std::optional<Dropped>* out) {
  std::size_t victim = kNumCriticalities;
  for (std::size_t c = kNumCriticalities; c-- > crit + 1;) {
    if (by_criticality_[c] > 0) {
      victim = c;
      break;
    }
  }
  if (victim == kNumCriticalities) return false;
  for (std::size_t i = 0; i < ring_.size(); ++i) {
    if (Crit(ring_.at(i).rc) != victim) continue;
    Forget(ring_.at(i));
    ++totals_.drops[static_cast<std::size_t>(DropReason::kShed)];
    out->emplace(
        Dropped{std::move(ring_.remove_at(i).item), DropReason::kShed});
    return true;
  }
  return false;  // unreachable while by_criticality_ is exact
}

template <typename T>
bool AdmissionQueue<T>::Preempt(RequestClass rc) {
  std::optional<Dropped> evicted;
  {
    detail::MutexLock lock(&mu_);
    if (!EvictBelowLocked(Crit(rc), &evicted)) return false;
  }
  if (on_drop_) {
    detail::CallQuietly(
        [&] { on_drop_(std::move(evicted->item), evicted->why); });
  }
  return true;
}

template <typename T>
std::size_t AdmissionQueue<T>::queued_below(RequestClass rc) const {
  detail::MutexLock lock(&mu_);
  std::size_t n = 0;
  for (std::size_t c = Crit(rc) + 1; c < kNumCriticalities; ++c) {
    n += by_criticality_[c];
  }
  return n;
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
    // A probe goes through whatever the estimate says, but never with a
    // deadline already passed: that item cannot be served in time by any
    // server, and its batch would measure nothing it needs.
    if (!CanMeet(deadline_ns, now) &&
        !(ring_.empty() && service_.ProbeDue(now) && deadline_ns > now)) {
      return Refuse(DropReason::kDeadline,
                    absl::StrCat("the deadline cannot be met (service time ",
                                 absl::FormatDuration(
                                     absl::Nanoseconds(service_.estimate())),
                                 ")"),
                    absl::Milliseconds(-1));
    }
    const std::size_t crit = Crit(rc);
    if (ring_.full() &&
        !(deadline_aware_ && DropExpiredLocked(now, &evicted)) &&
        !EvictBelowLocked(crit, &evicted)) {
      return Refuse(
          DropReason::kCapacity,
          absl::StrCat("the queue is full (capacity ", capacity_, ")"),
          std::nullopt);
    }
    if (!ring_.MakeRoom()) {
      // Only a ring that has not yet grown to its capacity: no eviction
      // above (a full ring needs no growth) has taken anything.
      return Refuse(DropReason::kCapacity,
                    absl::StrCat("the queue could not grow past ",
                                 ring_.allocated(), " slots (out of memory)"),
                    std::nullopt);
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
void AdmissionQueue<T>::DropLocked(Entry&& e, DropReason why, DropChunk* drops,
                                   std::size_t* dropped) {
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
    if (codel_.Slough(Age(now, ring_.front().enqueued)) &&
        !ServedNextLocked()) {
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
      if (*served > 0 || !service_.ProbeDue(now) || e.deadline <= now) {
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
bool AdmissionQueue<T>::ServedNextLocked() {
  // REQUIRES: !ring_.empty().
  // The head is the oldest item, so when it is of the most important class
  // queued while a less important class waits too, TakeLocked serves it
  // next: its wait is the batch in service, not a standing queue of its
  // own class. Sloughing it would drop the most important request to serve
  // less important ones in its place (measured on the inference server:
  // one CRITICAL_PLUS in six lost to CoDel at 3x load while CRITICAL was
  // queued). The standing queue is shortened from the other classes as
  // their items reach the head, and by the admission threshold. With one
  // class queued the head is dropped as in any CoDel queue.
  const std::size_t head = Crit(ring_.front().rc);
  if (by_criticality_[head] == ring_.size()) return false;
  for (std::size_t c = 0; c < head; ++c) {
    if (by_criticality_[c] > 0) return false;
  }
  return true;
}

template <typename T>
typename AdmissionQueue<T>::Entry AdmissionQueue<T>::TakeLocked(bool lifo) {
  // REQUIRES: !ring_.empty(), so some criticality has a count.
  std::size_t best = 0;
  while (by_criticality_[best] == 0) ++best;
  const std::size_t n = ring_.size();
  // One criticality queued: newest first (lifo). Several: the most
  // important, oldest first; the others absorb the overload (they are
  // sloughed), and newest-first within a class the server keeps up with
  // would starve its older items until CoDel drops them.
  if (by_criticality_[best] == n)
    return lifo ? ring_.pop_back() : ring_.pop_front();
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
      detail::CallQuietly(on_sojourn_, samples.ns[i] == detail::kSatMaxNanos
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
      delay_ns =
          static_cast<double>(poll_sum_) / static_cast<double>(poll_count_);
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

#endif  // DEGRADE_DETAIL_OVERLOAD_ADMISSION_QUEUE_INL_HPP_
