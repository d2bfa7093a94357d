// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: concurrency_limiter.hpp
// -----------------------------------------------------------------------------
//
// An adaptive limit on how many requests a server works on at once. Past
// its capacity a server does not answer more requests by accepting more: it
// answers every one of them later. A concurrency limit refuses the excess
// at once (a cheap RESOURCE_EXHAUSTED the client can retry elsewhere) and
// keeps the latency of what is admitted near the no-load latency. The right
// limit is capacity x latency (Little's law), which nobody knows and which
// changes when a GPU slows down, so the limiter finds it from the latencies
// its permits report: Netflix concurrency-limits' AIMD, Gradient2 and Vegas
// (detail/overload/limit_algorithms.hpp says where ours differ), with the
// guards against the drift their users reported, mandatory bounds (brpc #1334:
// an unbounded limit ran out of memory; brpc #1006: a limit computed below 1
// admitted nothing, ever), and partitions by criticality whose guaranteed
// shares apply only when the global limit is reached.
//
//   degrade::LimiterSettings s;
//   s.name = "inference";
//   s.min_limit = 4;
//   s.max_limit = 256;
//   s.guaranteed_share[static_cast<int>(degrade::Criticality::kCriticalPlus)] =
//   0.2; auto limiter = degrade::ConcurrencyLimiter::Create(s).value();
//   ...
//   absl::StatusOr<degrade::LimiterPermit> permit = limiter->Acquire(rc);
//   if (!permit.ok()) return permit.status();          // IsShed(): retry later
//   const absl::Time start = clock.Now();
//   absl::Status st = Serve(request);
//   if (IsDeadlineExceeded(st)) permit->Dropped();     // overload: decrease
//   else permit->Success(clock.Now() - start);         // trains the limit
//
// Acquiring is one compare-and-swap on a packed word (the in-flight count of
// each criticality), never a load, a check and an increment: the limit can
// not be overshot by racing acquirers (concurrency-limits #234). Samples are
// gathered lock-free into windows of `window_samples`; the thread that
// completes a window takes a mutex and runs the algorithm, so one report in
// `window_samples` touches a lock and acquiring never does.
//
// LimiterSettings, LimitAlgorithm and ValidateLimiterSettings() are in
// limiter_settings.hpp, which this header includes.
//
// Thread safety: ConcurrencyLimiter is thread-safe. A LimiterPermit is a
// value owned by one thread at a time. The limiter must outlive its permits
// and the functions RejectionRateSource() returns.

#ifndef DEGRADE_CONCURRENCY_LIMITER_HPP_
#define DEGRADE_CONCURRENCY_LIMITER_HPP_

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "degrade/clock.hpp"
#include "degrade/detail/cache_line.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/overload/limit_algorithms.hpp"
#include "degrade/detail/overload/sample_window.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/limiter_settings.hpp"  // IWYU pragma: export
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

class ConcurrencyLimiter;

// LimiterPermit
//
// One admitted request's slot. Report how it ended exactly once: Success()
// with its latency (trains the limit), Dropped() for a timeout or an
// overload answer (the limit decreases), Ignore() for no signal (a client
// cancel). Destroyed or assigned over unreported it is Ignore()d; any
// report after the first is a no-op. Move-only; not thread-safe (one owner
// at a time). REQUIRES: the limiter outlives it.
class LimiterPermit {
 public:
  LimiterPermit(LimiterPermit&& other) noexcept
      : limiter_(std::exchange(other.limiter_, nullptr)),
        epoch_(other.epoch_),
        in_flight_(other.in_flight_),
        criticality_(other.criticality_) {}
  LimiterPermit& operator=(LimiterPermit&& other) noexcept {
    if (this != &other) {
      Ignore();
      limiter_ = std::exchange(other.limiter_, nullptr);
      epoch_ = other.epoch_;
      in_flight_ = other.in_flight_;
      criticality_ = other.criticality_;
    }
    return *this;
  }
  LimiterPermit(const LimiterPermit&) = delete;
  LimiterPermit& operator=(const LimiterPermit&) = delete;
  ~LimiterPermit() { Ignore(); }

  inline void Success(absl::Duration latency);
  inline void Dropped();
  inline void Ignore();
  // True until the first report (or a move away).
  bool active() const { return limiter_ != nullptr; }

 private:
  friend class ConcurrencyLimiter;
  LimiterPermit(ConcurrencyLimiter* limiter, uint32_t epoch, int in_flight,
                uint8_t criticality)
      : limiter_(limiter),
        epoch_(epoch),
        in_flight_(in_flight),
        criticality_(criticality) {}

  ConcurrencyLimiter* limiter_;
  uint32_t epoch_;
  int in_flight_;  // when it was taken, this one included
  uint8_t criticality_;
};

// ConcurrencyLimiter
//
// Thread-safe; neither copyable nor movable (permits hold its address).
class ConcurrencyLimiter final {
 public:
  // Create(settings)
  //
  // INVALID_ARGUMENT (ValidateLimiterSettings) or a limiter at
  // initial_limit with nothing in flight.
  static absl::StatusOr<std::unique_ptr<ConcurrencyLimiter>> Create(
      LimiterSettings s) {
    absl::Status valid = ValidateLimiterSettings(s);
    if (!valid.ok()) return valid;
    return std::unique_ptr<ConcurrencyLimiter>(
        new ConcurrencyLimiter(std::move(s)));
  }

  ConcurrencyLimiter(const ConcurrencyLimiter&) = delete;
  ConcurrencyLimiter& operator=(const ConcurrencyLimiter&) = delete;

  ~ConcurrencyLimiter() { telemetry_.reset(); }  // first: its view reads us

  // TryAcquire(rc)
  //
  // A permit, or nullopt when refused (see guaranteed_share for the rule).
  // One compare-and-swap loop on one word, no allocation, no lock; counts
  // the outcome. A criticality out of range is treated as kSheddable.
  std::optional<LimiterPermit> TryAcquire(RequestClass rc = {}) {
    const unsigned c = Index(rc.criticality);
    const uint64_t one = uint64_t{1} << (16 * c);
    // Before the CAS: a permit taken as a re-measurement begins must carry
    // the epoch before it (it may have been taken at the loaded concurrency).
    uint32_t epoch = epoch_.load(std::memory_order_acquire);
    // Negative: a holding re-measurement, admissions held to -held.
    const int held = admission_limit_.load(std::memory_order_relaxed);
    const int limit = held < 0 ? -held : held;
    // Reservations are shares of the algorithm's limit, also while held.
    const int shared = held < 0 ? limit_.load(std::memory_order_relaxed) : limit;
    uint64_t w = word_.load(std::memory_order_relaxed);
    int total = 0;
    do {
      total = Total(w);
      if (total >= limit && Lane(w, c) >= Reserved(c, shared)) {
        shards_[detail::ThreadShardIndex()].rejected[c].Add(1);
        // At most one store per re-measurement: a plain load otherwise.
        if (!refused_.load(std::memory_order_relaxed)) {
          refused_.store(true, std::memory_order_relaxed);
        }
        if (held < 0) NoteProbeRefusal();
        return std::nullopt;
      }
    } while (!word_.compare_exchange_weak(w, w + one,
                                          std::memory_order_relaxed,
                                          std::memory_order_relaxed));
    // Let in by its reservation above probe_limit: served behind the load,
    // so its report must not be the re-measurement (an odd epoch matches
    // none). Nor may any permit after the first window_samples admitted
    // since a re-measurement began: it measures those calls, in the order
    // they arrived, not the first to finish (cache hits finish many times
    // while one ordinary call does, and a window of the first finishers
    // is mostly hits).
    if (DEGRADE_UNLIKELY(probing_.load(std::memory_order_relaxed)) &&
        epoch == epoch_.load(std::memory_order_acquire) &&
        ((held < 0 && total >= limit) || !TakeProbeSlot())) {
      epoch |= 1;
    }
    shards_[detail::ThreadShardIndex()].acquired[c].Add(1);
    return LimiterPermit(this, epoch, total + 1, static_cast<uint8_t>(c));
  }

  // Acquire(rc)
  //
  // TryAcquire() as a status: a refusal is a ShedError (IsShed(); it
  // allocates only then). Thread-safe.
  absl::StatusOr<LimiterPermit> Acquire(RequestClass rc = {}) {
    std::optional<LimiterPermit> p = TryAcquire(rc);
    if (p.has_value()) return std::move(*p);
    const int held = admission_limit_.load(std::memory_order_relaxed);
    if (held < 0) {
      return ShedError(name_, absl::StrCat(
          "re-measuring the no-load latency: admissions held to ", -held,
          " (", in_flight(), " in flight; limit ", limit(), ")"));
    }
    return ShedError(name_, absl::StrCat("concurrency limit ", limit(),
                                         " reached (", in_flight(),
                                         " in flight)"));
  }

  // The algorithm's limit (during a holding re-measurement admissions are
  // held lower; see probe_holds_admissions). Thread-safe, a relaxed load.
  int limit() const { return limit_.load(std::memory_order_relaxed); }
  // Permits out now, every class. Thread-safe, a relaxed load.
  int in_flight() const { return Total(word_.load(std::memory_order_relaxed)); }
  // Of one class.
  int in_flight(Criticality c) const {
    return Lane(word_.load(std::memory_order_relaxed), Index(c));
  }

  // RejectionRateSource()
  //
  // A DegradationManager source ("limiter_rejection_rate"): each call
  // returns the fraction of TryAcquire/Acquire calls refused since its
  // previous call (since its creation for the first), 0 when none were
  // made. Each returned function keeps its own baseline; calls are
  // thread-safe (each snapshot is taken under the baseline's lock, so
  // overlapping callers split the calls between them and never count one
  // twice). REQUIRES: the limiter outlives it.
  std::function<double()> RejectionRateSource() {
    struct Baseline {
      detail::Mutex mu;
      uint64_t asked ABSL_GUARDED_BY(mu) = 0;
      uint64_t refused ABSL_GUARDED_BY(mu) = 0;
    };
    auto base = std::make_shared<Baseline>();
    {
      detail::MutexLock lock(&base->mu);
      const LimiterStats st = stats();
      base->asked = Asked(st);
      base->refused = Sum(st.rejected);
    }
    return [this, base]() -> double {
      detail::MutexLock lock(&base->mu);
      // Counters only grow, and the baseline was read under this lock
      // before this snapshot: the differences can not wrap.
      const LimiterStats st = stats();
      const uint64_t asked = Asked(st) - base->asked;
      const uint64_t refused = Sum(st.rejected) - base->refused;
      base->asked = Asked(st);
      base->refused = Sum(st.rejected);
      return asked == 0 ? 0.0
                        : static_cast<double>(refused) /
                              static_cast<double>(asked);
    };
  }

  // Thread-safe; each counter is exact once the threads using the limiter
  // are synchronised with the caller.
  LimiterStats stats() const {
    LimiterStats st;
    st.limit = limit();
    st.in_flight = in_flight();
    for (std::size_t i = 0; i < shard_count_; ++i) {
      const Shard& s = shards_[i];
      for (std::size_t c = 0; c < kNumCriticalities; ++c) {
        st.acquired[c] += s.acquired[c].Load();
        st.rejected[c] += s.rejected[c].Load();
      }
      st.succeeded += s.succeeded.Load();
      st.dropped += s.dropped.Load();
      st.ignored += s.ignored.Load();
    }
    detail::MutexLock lock(&mu_);
    st.no_load_latency = core_.no_load_latency();
    st.re_measuring = core_.probing();
    return st;
  }

  const std::string& name() const { return name_; }
  LimitAlgorithm algorithm() const { return algorithm_; }

 private:
  friend class LimiterPermit;
  enum class Outcome : uint8_t { kSuccess, kDropped, kIgnored };

  struct alignas(detail::kCacheLine) Shard {
    detail::ShardCounter acquired[kNumCriticalities];
    detail::ShardCounter rejected[kNumCriticalities];
    detail::ShardCounter succeeded;
    detail::ShardCounter dropped;
    detail::ShardCounter ignored;
  };

  explicit ConcurrencyLimiter(LimiterSettings s)
      : name_(detail::Printable(s.name)),
        algorithm_(s.algorithm),
        aimd_timeout_(s.aimd_timeout),
        probe_window_(static_cast<uint64_t>(s.window_samples)),
        window_(static_cast<uint32_t>(s.window_samples)),
        shard_count_(detail::ShardArraySize()),
        shards_(new Shard[shard_count_]),
        core_(Params(s)) {
    for (std::size_t c = 0; c < kNumCriticalities; ++c) {
      share_[c] = s.guaranteed_share[c];
    }
    {
      detail::MutexLock lock(&mu_);
      Publish();
    }
    // Last: the view must be complete before a telemetry may read it.
    telemetry_ = detail::Attach(s.metrics, &Telemetry::AttachLimiter, view_);
  }

  static detail::LimitParams Params(const LimiterSettings& s) {
    detail::LimitParams p;
    p.algorithm = s.algorithm;
    p.min_limit = s.min_limit;
    p.max_limit = s.max_limit;
    p.initial_limit = s.initial_limit;
    p.max_healthy_latency = s.max_healthy_latency;
    p.aimd_backoff = s.aimd_backoff;
    p.gradient_smoothing = s.gradient_smoothing;
    p.gradient_queue_size = s.gradient_queue_size;
    p.rtt_tolerance = s.rtt_tolerance;
    p.long_window = s.long_window;
    p.vegas_smoothing = s.vegas_smoothing;
    p.probe_multiplier = s.probe_multiplier;
    p.probe_limit = s.probe_limit;
    p.hold_admissions = s.probe_holds_admissions;
    p.window_samples = s.window_samples;
    p.seed = s.seed;
    return p;
  }

  static unsigned Index(Criticality c) {
    const auto i = static_cast<unsigned>(c);
    return i < kNumCriticalities ? i : kNumCriticalities - 1;
  }
  static int Lane(uint64_t w, unsigned c) {
    return static_cast<int>((w >> (16 * c)) & 0xFFFF);
  }
  // The four 16-bit lanes summed (the total fits 16 bits: see
  // kMaxConcurrencyLimit).
  static int Total(uint64_t w) {
    return static_cast<int>(((w * 0x0001000100010001ULL) >> 48) & 0xFFFF);
  }
  int Reserved(unsigned c, int limit) const {
    const double share = share_[c];
    if (share <= 0) return 0;
    // The epsilon keeps 0.3 x 10 from rounding up to 4.
    const double slots = std::ceil(share * limit - 1e-9);
    return std::max(1, static_cast<int>(slots));
  }
  static uint64_t Sum(const PerCriticality& v) {
    uint64_t n = 0;
    for (uint64_t x : v) n += x;
    return n;
  }
  static uint64_t Asked(const LimiterStats& st) {
    return Sum(st.acquired) + Sum(st.rejected);
  }

  void Report(const LimiterPermit& p, Outcome outcome, absl::Duration latency) {
    word_.fetch_sub(uint64_t{1} << (16 * p.criticality_),
                    std::memory_order_relaxed);
    Shard& shard = shards_[detail::ThreadShardIndex()];
    switch (outcome) {
      case Outcome::kSuccess:
        // Under the window's 1 us unit (zero, negative: a clock stepped
        // back, a cache hit): not a measurement, and as the minimum it
        // would collapse Vegas's limit. Counted as ignored.
        if (latency < absl::Microseconds(1)) {
          shard.ignored.Add(1);
          return GiveBackProbeSlot(p);
        }
        shard.succeeded.Add(1);
        break;
      case Outcome::kDropped:
        shard.dropped.Add(1);
        break;
      case Outcome::kIgnored:
        shard.ignored.Add(1);
        return GiveBackProbeSlot(p);
    }
    if (algorithm_ == LimitAlgorithm::kFixed) return;
    // Taken before a re-measurement began: it saw the loaded latency. Or
    // not one of the calls a re-measurement measures.
    if (p.epoch_ != epoch_.load(std::memory_order_acquire)) {
      if (probing_.load(std::memory_order_relaxed)) NoteProbeStray();
      return;
    }
    bool drop = outcome == Outcome::kDropped;
    if (algorithm_ == LimitAlgorithm::kAimd && latency > aimd_timeout_) drop = true;
    if (window_.Add(drop, latency, p.in_flight_)) CloseWindow();
  }

  // One of the first window_samples places of a re-measurement; false once
  // they are all taken. Saturates, so a place given back is taken by the
  // next arrival.
  bool TakeProbeSlot() {
    uint64_t n = probe_admitted_.load(std::memory_order_relaxed);
    while (n < probe_window_) {
      if (probe_admitted_.compare_exchange_weak(n, n + 1,
                                                std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // A report a re-measurement does not use. Past a budget of them (the
  // permits out when it began, then ten windows' worth) it is abandoned
  // and the estimate kept: a measured call that never reports (a stream,
  // a leaked permit) must not hold the limit still, whatever happens to
  // the server meanwhile.
  void NoteProbeStray() {
    const uint64_t n =
        probe_strays_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n != probe_stray_budget_.load(std::memory_order_relaxed)) return;
    detail::MutexLock lock(&mu_);
    if (!core_.probing()) return;
    core_.EndProbe();
    Publish();
  }

  // One of a re-measurement's calls ended without a sample: its place goes
  // to the next arrival, or the window would never fill.
  void GiveBackProbeSlot(const LimiterPermit& p) {
    if (probing_.load(std::memory_order_relaxed) &&
        p.epoch_ == epoch_.load(std::memory_order_acquire)) {
      probe_admitted_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  void CloseWindow() {
    detail::MutexLock lock(&mu_);
    detail::LimitWindow w = window_.Take();
    w.saturated = refused_.load(std::memory_order_relaxed);
    // Refusals since the last window: the offered load above the limit.
    uint64_t refusals = 0;
    for (std::size_t i = 0; i < shard_count_; ++i) {
      for (std::size_t c = 0; c < kNumCriticalities; ++c) {
        refusals += shards_[i].rejected[c].Load();
      }
    }
    w.refusals = refusals - std::min(refusals, refusals_at_window_);
    refusals_at_window_ = refusals;
    if (core_.Update(w)) {
      // Permits out now were taken at the loaded concurrency; what they
      // reported since the exchange above is theirs too. Epochs stay even
      // (odd marks a permit no epoch accepts; see TryAcquire).
      epoch_.fetch_add(2, std::memory_order_acq_rel);
      window_.Clear();
      probe_refusals_.store(0, std::memory_order_relaxed);
      probe_admitted_.store(0, std::memory_order_relaxed);
      probe_strays_.store(0, std::memory_order_relaxed);
      probe_stray_budget_.store(
          4 * static_cast<uint64_t>(core_.published_limit()) +
              10 * probe_window_,
          std::memory_order_relaxed);
      refused_.store(false, std::memory_order_relaxed);
      probe_budget_.store(core_.probe_refusal_budget(), std::memory_order_relaxed);
    }
    Publish();
  }

  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    limit_.store(core_.published_limit(), std::memory_order_relaxed);
    probing_.store(core_.probing(), std::memory_order_relaxed);
    const int admit = core_.admission_limit();
    admission_limit_.store(core_.holding() ? -admit : admit,
                           std::memory_order_relaxed);
  }

  // A holding re-measurement is abandoned after its budget of refusals,
  // whether or not any sample arrived (permits out for minutes would
  // otherwise hold it, and every admission, for as long).
  void NoteProbeRefusal() {
    const uint64_t n = probe_refusals_.fetch_add(1, std::memory_order_relaxed) + 1;
    // One refusal takes the lock: the one that spends the budget.
    if (n != probe_budget_.load(std::memory_order_relaxed)) return;
    detail::MutexLock lock(&mu_);
    if (!core_.holding()) return;
    core_.EndProbe();
    Publish();
  }

  const std::string name_;
  const LimitAlgorithm algorithm_;
  const absl::Duration aimd_timeout_;
  std::array<double, kNumCriticalities> share_{};

  // Written by every acquire and release, each on a line of its own.
  alignas(detail::kCacheLine) std::atomic<uint64_t> word_{0};
  alignas(detail::kCacheLine) std::atomic<int> admission_limit_{1};
  std::atomic<bool> probing_{false};  // a re-measurement is under way
  std::atomic<int> limit_{1};
  std::atomic<bool> refused_{false};  // since the last re-measurement began
  std::atomic<uint32_t> epoch_{0};
  std::atomic<uint64_t> probe_refusals_{0};
  std::atomic<uint64_t> probe_budget_{0};
  // Measured places taken since a re-measurement began (at most
  // probe_window_, window_samples), and the reports it has not used (its
  // budget of them: see NoteProbeStray).
  std::atomic<uint64_t> probe_admitted_{0};
  std::atomic<uint64_t> probe_strays_{0};
  std::atomic<uint64_t> probe_stray_budget_{0};
  const uint64_t probe_window_;
  detail::SampleWindow window_;

  const std::size_t shard_count_;
  const std::unique_ptr<Shard[]> shards_;

  mutable detail::Mutex mu_;
  detail::LimitCore core_ ABSL_GUARDED_BY(mu_);
  uint64_t refusals_at_window_ ABSL_GUARDED_BY(mu_) = 0;

  const detail::OwnerView<ConcurrencyLimiter, LimiterStats> view_{this};
  std::unique_ptr<TelemetryAttachment> telemetry_;
};

inline void LimiterPermit::Success(absl::Duration latency) {
  if (limiter_ == nullptr) return;
  ConcurrencyLimiter* l = std::exchange(limiter_, nullptr);
  l->Report(*this, ConcurrencyLimiter::Outcome::kSuccess, latency);
}
inline void LimiterPermit::Dropped() {
  if (limiter_ == nullptr) return;
  ConcurrencyLimiter* l = std::exchange(limiter_, nullptr);
  l->Report(*this, ConcurrencyLimiter::Outcome::kDropped, absl::ZeroDuration());
}
inline void LimiterPermit::Ignore() {
  if (limiter_ == nullptr) return;
  ConcurrencyLimiter* l = std::exchange(limiter_, nullptr);
  l->Report(*this, ConcurrencyLimiter::Outcome::kIgnored, absl::ZeroDuration());
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONCURRENCY_LIMITER_HPP_
