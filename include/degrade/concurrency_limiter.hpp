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
// (detail/limit_algorithms.hpp says where ours differ), with the guards
// against the drift their users reported, mandatory bounds (brpc #1334: an
// unbounded limit ran out of memory; brpc #1006: a limit computed below 1
// admitted nothing, ever), and partitions by criticality whose guaranteed
// shares apply only when the global limit is reached.
//
//   degrade::LimiterSettings s;
//   s.name = "inference";
//   s.min_limit = 4;
//   s.max_limit = 256;
//   s.guaranteed_share[static_cast<int>(degrade::Criticality::kCriticalPlus)] = 0.2;
//   auto limiter = degrade::ConcurrencyLimiter::Create(s).value();
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
#include "degrade/detail/limit_algorithms.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/sample_window.hpp"
#include "degrade/detail/thread_shard.hpp"
#include "degrade/overload_stats.hpp"
#include "degrade/request_class.hpp"
#include "degrade/status.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest max_limit: the packed in-flight word has 16 bits per
// criticality, and the total (limit plus the guarantees) must fit in 16.
inline constexpr int kMaxConcurrencyLimit = 32000;
// A sample's latency is recorded up to this (longer counts as this long).
inline constexpr absl::Duration kLongestLimiterSample =
    detail::SampleWindow::kMaxSample;

// LimiterSettings
//
// Defaults are the anchors' (Netflix concurrency-limits unless noted).
// Validate with ValidateLimiterSettings(); Create() refuses what it refuses.
struct LimiterSettings {
  std::string name = "limiter";
  // kFixed: initial_limit, always. kAimd: x aimd_backoff on a drop, +1 per
  // success while at least half the limit is in use. kGradient2: the limit
  // follows the ratio of the no-load to the current latency, tolerating
  // rtt_tolerance x, plus a headroom of gradient_queue_size; it settles
  // near rtt_tolerance x the concurrency that starts queueing. kVegas: keeps
  // an estimated queue of alpha..beta = 3..6 x log10(limit) requests above
  // that concurrency.
  LimitAlgorithm algorithm = LimitAlgorithm::kGradient2;
  // Mandatory: 1 <= min_limit <= initial_limit <= max_limit <= 32000.
  int min_limit = 0, initial_limit = 20, max_limit = 0;
  // 0 = off. When set, a window whose average latency is above it only ever
  // decreases the limit, however long that lasts (failsafe-go #127: the
  // baseline caught up with a long incident and the limiter stopped
  // shedding). At most kLongestLimiterSample.
  absl::Duration max_healthy_latency = absl::ZeroDuration();
  // By Criticality: the fraction of the limit reserved for each class, each
  // in [0, 1], summing to at most 1. Reserved slots are ceil(share x limit),
  // at least 1 when the share is above 0. They matter only at the global
  // limit: below it anyone may take a free slot; at it, a class with fewer
  // than its reserved slots in flight still gets one (in flight may then
  // exceed the limit by the guarantees not in use), and any other class is
  // refused. So the part of in flight above the classes' reservations never
  // exceeds the limit, and in flight never exceeds limit + sum(reserved).
  std::array<double, kNumCriticalities> guaranteed_share{};

  // Samples are applied a window at a time, in [1, 512]
  // (concurrency-limits' WindowedLimit windowSize).
  int window_samples = 10;
  // kAimd: the decrease factor, in [0.5, 1); a success slower than
  // aimd_timeout (> 0) counts as a drop.
  double aimd_backoff = 0.9;
  absl::Duration aimd_timeout = absl::Seconds(5);
  // kGradient2: smoothing in (0, 1]; queue headroom in [0, 1000];
  // rtt_tolerance in [1, 100]; the long RTT's EMA length, in windows, in
  // [1, 1e6]. The long RTT follows latency down; it goes up only through a
  // re-measurement (concurrency-limits #134: it crept up under load).
  double gradient_smoothing = 0.2;
  double gradient_queue_size = 4;
  double rtt_tolerance = 1.5;
  int long_window = 600;
  // kVegas: smoothing in (0, 1].
  double vegas_smoothing = 1.0;
  // kGradient2 and kVegas re-measure the no-load latency every
  // probe_multiplier x limit samples (in [1, 1e6]), times a jitter in
  // [0.5, 1) drawn from `seed` (Envoy #8337: re-measurements in step across
  // a fleet shed in bursts). During one window admissions are held to
  // probe_limit (>= 1; Envoy's min_concurrency, apart from the floor as
  // Envoy #46532 asked), and reports of permits taken before it began are
  // not used (Envoy #11579: they measured the loaded latency).
  int probe_multiplier = 30;
  int probe_limit = 3;
  uint64_t seed = 1;
  // Not read today: the windows count samples, not time. Accepted so that
  // a time-based window can be added without changing callers.
  const Clock* clock = nullptr;
  Telemetry* metrics = nullptr;
};

// ValidateLimiterSettings(s)
//
// OK, or INVALID_ARGUMENT naming the limiter, the first setting at fault
// and its value. Pure; thread-safe.
inline absl::Status ValidateLimiterSettings(const LimiterSettings& s) {
  const std::string who = absl::StrCat("concurrency limiter '",
                                       detail::Printable(s.name), "': ");
  auto bad = [&](absl::string_view setting, const auto& value,
                 absl::string_view rule) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, "setting '", setting, "' = ", value, " is invalid: ", rule));
  };
  auto in = [](double v, double lo, double hi) { return v >= lo && v <= hi; };
  const auto a = static_cast<uint8_t>(s.algorithm);
  if (a > static_cast<uint8_t>(LimitAlgorithm::kVegas)) {
    return bad("algorithm", static_cast<int>(a), "not a LimitAlgorithm");
  }
  if (s.min_limit < 1) return bad("min_limit", s.min_limit, "must be >= 1");
  if (s.max_limit < s.min_limit) {
    return bad("max_limit", s.max_limit,
               absl::StrCat("must be >= min_limit (", s.min_limit, ")"));
  }
  if (s.max_limit > kMaxConcurrencyLimit) {
    return bad("max_limit", s.max_limit,
               absl::StrCat("must be <= ", kMaxConcurrencyLimit));
  }
  if (s.initial_limit < s.min_limit || s.initial_limit > s.max_limit) {
    return bad("initial_limit", s.initial_limit,
               absl::StrCat("must be in [min_limit, max_limit] = [",
                            s.min_limit, ", ", s.max_limit, "]"));
  }
  if (s.max_healthy_latency < absl::ZeroDuration() ||
      s.max_healthy_latency > kLongestLimiterSample) {
    return bad("max_healthy_latency", absl::FormatDuration(s.max_healthy_latency),
               "must be 0 (off) or positive and at most 256s");
  }
  double sum = 0;
  for (std::size_t i = 0; i < kNumCriticalities; ++i) {
    const double share = s.guaranteed_share[i];
    if (!in(share, 0, 1)) {
      return bad(absl::StrCat("guaranteed_share[",
                              CriticalityName(static_cast<Criticality>(i)), "]"),
                 share, "must be a number in [0, 1]");
    }
    sum += share;
  }
  if (sum > 1 + 1e-9) {
    return bad("guaranteed_share", absl::StrCat("(sum ", sum, ")"),
               "the shares must sum to at most 1");
  }
  if (s.window_samples < 1 || s.window_samples > 512) {
    return bad("window_samples", s.window_samples, "must be in [1, 512]");
  }
  if (!(s.aimd_backoff >= 0.5 && s.aimd_backoff < 1)) {
    return bad("aimd_backoff", s.aimd_backoff, "must be in [0.5, 1)");
  }
  if (s.aimd_timeout <= absl::ZeroDuration() ||
      s.aimd_timeout == absl::InfiniteDuration()) {
    return bad("aimd_timeout", absl::FormatDuration(s.aimd_timeout),
               "must be positive and finite");
  }
  if (!(s.gradient_smoothing > 0 && s.gradient_smoothing <= 1)) {
    return bad("gradient_smoothing", s.gradient_smoothing, "must be in (0, 1]");
  }
  if (!in(s.gradient_queue_size, 0, 1000)) {
    return bad("gradient_queue_size", s.gradient_queue_size,
               "must be in [0, 1000]");
  }
  if (!in(s.rtt_tolerance, 1, 100)) {
    return bad("rtt_tolerance", s.rtt_tolerance, "must be in [1, 100]");
  }
  if (s.long_window < 1 || s.long_window > 1'000'000) {
    return bad("long_window", s.long_window, "must be in [1, 1000000]");
  }
  if (!(s.vegas_smoothing > 0 && s.vegas_smoothing <= 1)) {
    return bad("vegas_smoothing", s.vegas_smoothing, "must be in (0, 1]");
  }
  if (s.probe_multiplier < 1 || s.probe_multiplier > 1'000'000) {
    return bad("probe_multiplier", s.probe_multiplier,
               "must be in [1, 1000000]");
  }
  if (s.probe_limit < 1) {
    return bad("probe_limit", s.probe_limit, "must be >= 1");
  }
  return absl::OkStatus();
}

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
    const int limit = admission_limit_.load(std::memory_order_relaxed);
    uint64_t w = word_.load(std::memory_order_relaxed);
    int total = 0;
    do {
      total = Total(w);
      if (total >= limit && Lane(w, c) >= Reserved(c, limit)) {
        shards_[detail::ThreadShardIndex()].rejected[c].Add(1);
        return std::nullopt;
      }
    } while (!word_.compare_exchange_weak(w, w + one,
                                          std::memory_order_relaxed,
                                          std::memory_order_relaxed));
    shards_[detail::ThreadShardIndex()].acquired[c].Add(1);
    return LimiterPermit(this, epoch_.load(std::memory_order_acquire),
                         total + 1, static_cast<uint8_t>(c));
  }

  // Acquire(rc)
  //
  // TryAcquire() as a status: a refusal is a ShedError (IsShed(); it
  // allocates only then). Thread-safe.
  absl::StatusOr<LimiterPermit> Acquire(RequestClass rc = {}) {
    std::optional<LimiterPermit> p = TryAcquire(rc);
    if (p.has_value()) return std::move(*p);
    return ShedError(name_, absl::StrCat("concurrency limit ", limit(),
                                         " reached (", in_flight(),
                                         " in flight)"));
  }

  // The algorithm's limit (during a re-measurement admissions are held
  // lower; see probe_limit). Thread-safe, a relaxed load.
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
  // thread-safe. REQUIRES: the limiter outlives it.
  std::function<double()> RejectionRateSource() {
    struct Baseline {
      detail::Mutex mu;
      uint64_t asked ABSL_GUARDED_BY(mu) = 0;
      uint64_t refused ABSL_GUARDED_BY(mu) = 0;
    };
    auto base = std::make_shared<Baseline>();
    {
      const LimiterStats st = stats();
      detail::MutexLock lock(&base->mu);
      base->asked = Asked(st);
      base->refused = Sum(st.rejected);
    }
    return [this, base]() -> double {
      const LimiterStats st = stats();
      detail::MutexLock lock(&base->mu);
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

  class View final : public LimiterView {
   public:
    explicit View(const ConcurrencyLimiter* l) : l_(l) {}
    const std::string& name() const override { return l_->name_; }
    LimiterStats stats() const override { return l_->stats(); }

   private:
    const ConcurrencyLimiter* const l_;
  };

  explicit ConcurrencyLimiter(LimiterSettings s)
      : name_(detail::Printable(s.name)),
        algorithm_(s.algorithm),
        aimd_timeout_(s.aimd_timeout),
        window_(static_cast<uint32_t>(s.window_samples)),
        shard_count_(detail::ShardArraySize()),
        shards_(new Shard[shard_count_]),
        core_(Params(s)) {
    for (std::size_t c = 0; c < kNumCriticalities; ++c) {
      share_[c] = s.guaranteed_share[c];
    }
    limit_.store(core_.published_limit(), std::memory_order_relaxed);
    admission_limit_.store(core_.admission_limit(), std::memory_order_relaxed);
    // Last: the view must be complete before a telemetry may read it.
    if (Telemetry* t = detail::ResolveTelemetry(s.metrics)) {
      telemetry_ = detail::AttachQuietly([&] { return t->AttachLimiter(view_); });
    }
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
        shard.succeeded.Add(1);
        break;
      case Outcome::kDropped:
        shard.dropped.Add(1);
        break;
      case Outcome::kIgnored:
        shard.ignored.Add(1);
        return;
    }
    if (algorithm_ == LimitAlgorithm::kFixed) return;
    // Taken before a re-measurement began: it saw the loaded latency.
    if (p.epoch_ != epoch_.load(std::memory_order_acquire)) return;
    bool drop = outcome == Outcome::kDropped;
    if (algorithm_ == LimitAlgorithm::kAimd && latency > aimd_timeout_) drop = true;
    if (window_.Add(drop, latency, p.in_flight_)) CloseWindow();
  }

  void CloseWindow() {
    detail::MutexLock lock(&mu_);
    if (core_.Update(window_.Take())) {
      // Permits out now were taken at the loaded concurrency; what they
      // reported since the exchange above is theirs too.
      epoch_.fetch_add(1, std::memory_order_acq_rel);
      window_.Clear();
    }
    limit_.store(core_.published_limit(), std::memory_order_relaxed);
    admission_limit_.store(core_.admission_limit(), std::memory_order_relaxed);
  }

  const std::string name_;
  const LimitAlgorithm algorithm_;
  const absl::Duration aimd_timeout_;
  std::array<double, kNumCriticalities> share_{};

  // Written by every acquire and release, each on a line of its own.
  alignas(detail::kCacheLine) std::atomic<uint64_t> word_{0};
  alignas(detail::kCacheLine) std::atomic<int> admission_limit_{1};
  std::atomic<int> limit_{1};
  std::atomic<uint32_t> epoch_{0};
  detail::SampleWindow window_;

  const std::size_t shard_count_;
  const std::unique_ptr<Shard[]> shards_;

  mutable detail::Mutex mu_;
  detail::LimitCore core_ ABSL_GUARDED_BY(mu_);

  const View view_{this};
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
