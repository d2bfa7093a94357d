// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/recsys/pipeline.hpp
// -----------------------------------------------------------------------------
//
// A four-stage recommendation pipeline (features -> recall -> rank ->
// re-rank) on mock backends and simulated time, shared by the
// recsys_pipeline demo and its test so that the test checks the very code the
// demo prints.
//
// Each stage sits behind its own circuit breaker, latency budget and Plan B:
//
//   features  FailingBackend<vector<float>>  -> DefaultFeatures (global mean)
//   recall    FailingBackend<vector<Cand.>>  -> HotList (200 hot items, built
//                                               in, or from a HotSource
//                                               such as Redis)
//   rank      FailingBackend<std::string>    -> order by recall score
//   rerank    FailingBackend<std::string>    -> dedup only
//
// Time is a FakeClock. Every backend call costs a nominal round trip (the
// pipeline advances the clock by it), so a request's simulated latency is
// the clock's movement while it is served. The backends follow one outage
// script (`OutageScript()`), laid out on the clock when the pipeline is
// built.
//
// Latency budgets are enforced cooperatively: a stage that found its
// `Deadline` expired when its backend returned reports DEADLINE_EXCEEDED (to
// the breaker, and as the reason `timeout` in the trace), and the clock is
// rewound to the moment the budget ran out, because that is when the request
// stopped waiting. In production the same cut-off comes from
// `degrade::CallWithTimeout` running the blocking call on a `ThreadPool`; with
// a FakeClock a real thread would wait real time for simulated time that
// never passes, so the demo models the give-up instead.

#ifndef DEGRADE_EXAMPLES_RECSYS_PIPELINE_HPP_
#define DEGRADE_EXAMPLES_RECSYS_PIPELINE_HPP_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/clock.hpp"
#include "degrade/deadline.hpp"
#include "degrade/degrade_reason.hpp"
#include "degrade/detail/splitmix.hpp"
#include "degrade/fallback.hpp"
#include "degrade/metrics.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/testing/failing_backend.hpp"

namespace recsys {

struct Candidate {
  int64_t id = 0;
  float recall_score = 0;  // from recall (or the hot list's popularity)
  float score = 0;         // from the ranker; 0 until ranked
};

// Stage indices and names, in request order.
inline constexpr std::size_t kStages = 4;
enum StageIndex : std::size_t {
  kFeatures = 0,
  kRecall = 1,
  kRank = 2,
  kRerank = 3
};
inline constexpr std::array<absl::string_view, kStages> kStageNames = {
    "features", "recall", "rank", "rerank"};

// How a backend behaves in one phase of the outage script.
enum class Mode : uint8_t {
  kHealthy,
  kDown,      // returns UNAVAILABLE at once
  kHanging,   // answers after kHangLatency, far past the stage budget
  kThrowing,  // throws std::runtime_error
};

struct Phase {
  std::string name;
  std::array<Mode, kStages> modes;
};

// Timing of the simulation. The phase length is well above the breaker
// timeout so that every breaker can go open -> half-open -> closed (or back
// to open) within a phase, and the steady part of each phase shows the
// settled behaviour.
inline constexpr absl::Duration kPhaseLength = absl::Seconds(20);
inline constexpr absl::Duration kRequestInterval = absl::Milliseconds(100);
inline constexpr absl::Duration kBreakerTimeout = absl::Seconds(5);
inline constexpr absl::Duration kStageBudget = absl::Milliseconds(100);
// A "hang": 50 times the budget. Modelled with the backend's Slow phase,
// which advances the FakeClock inside the call.
inline constexpr absl::Duration kHangLatency = absl::Seconds(5);
inline constexpr uint64_t kTripAfterFailures = 3;
inline constexpr std::size_t kHotListSize = 200;
inline constexpr std::size_t kResultSize = 20;

// Nominal round trip of each healthy backend call (network + compute).
inline constexpr std::array<absl::Duration, kStages> kStageCost = {
    absl::Milliseconds(4), absl::Milliseconds(12), absl::Milliseconds(25),
    absl::Milliseconds(6)};

// The scripted outage: one entry per phase, each kPhaseLength long.
inline const std::vector<Phase>& OutageScript() {
  using M = Mode;
  static const std::vector<Phase>* const script = new std::vector<Phase>{
      {"healthy", {M::kHealthy, M::kHealthy, M::kHealthy, M::kHealthy}},
      {"feature service down",
       {M::kDown, M::kHealthy, M::kHealthy, M::kHealthy}},
      {"recall down", {M::kHealthy, M::kDown, M::kHealthy, M::kHealthy}},
      {"ranking hanging", {M::kHealthy, M::kHealthy, M::kHanging, M::kHealthy}},
      {"re-ranking throwing",
       {M::kHealthy, M::kHealthy, M::kHealthy, M::kThrowing}},
      {"everything down", {M::kDown, M::kDown, M::kDown, M::kDown}},
      {"recovery", {M::kHealthy, M::kHealthy, M::kHealthy, M::kHealthy}},
  };
  return *script;
}

// Deterministic "random" users and embeddings, from the library's own
// generator (a service would bring its own; the demo must repeat exactly).
inline uint64_t Mix(uint64_t x) { return degrade::detail::SplitMix64Step(x); }

// A value in [-1, 1) drawn from `seed`.
inline float Unit(uint64_t seed) {
  return static_cast<float>(
      static_cast<double>(Mix(seed) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

inline constexpr std::size_t kFeatureDim = 8;

// An item's embedding, a pure function of its id (the mock model's "weights").
inline std::vector<float> ItemEmbedding(int64_t id) {
  std::vector<float> e(kFeatureDim);
  for (std::size_t i = 0; i < kFeatureDim; ++i) {
    e[i] = Unit(static_cast<uint64_t>(id) * 131 + i);
  }
  return e;
}

// The weight of the personal (feature-based) score against the recall
// score, by what the feature stage served: its rung (`StageResult::tier()`)
// when it sits on a fallback ladder, else whether it served a default. A
// user's own features, even a few minutes old, still rank for that user; a
// population average ranks every user of it alike, so its say is small.
// The stale weights fall with age because interests drift; the ladder part
// of the demo (ladder_sim.hpp) measures how much each rung keeps, which is
// how a service would set these.
inline float PersonalWeight(degrade::FallbackTier tier, bool is_default) {
  switch (tier) {
    case degrade::FallbackTier::kStale1m:
      return 0.8f;
    case degrade::FallbackTier::kStale10m:
      return 0.7f;
    case degrade::FallbackTier::kStale1h:
      return 0.5f;
    case degrade::FallbackTier::kStaleOld:
      return 0.35f;
    case degrade::FallbackTier::kSegment:
      return 0.35f;
    case degrade::FallbackTier::kGlobal:
      return 0.2f;
    case degrade::FallbackTier::kUnspecified:
      break;
  }
  // Fresh, or a default off any ladder (the global mean here).
  return is_default ? 0.2f : 0.8f;
}

// Where the hot list (recall's Plan B) can come from besides the built-in
// snapshot, e.g. a Redis sorted set (degrade/redis/hot_list_source.hpp).
using HotSource = std::function<absl::StatusOr<std::vector<Candidate>>()>;

// What one request produced.
struct Response {
  degrade::StageResult<std::vector<Candidate>> result;
  absl::Duration latency;  // simulated
  // The ranker ran (fresh) on default features and lowered their weight.
  bool ranked_on_default_features = false;
};

class Pipeline {
 public:
  // Builds the backends, scripts them from `clock->Now()` with
  // OutageScript(), and installs the Plan B data. `clock` must outlive the
  // pipeline. Breakers, the hot list and the per-request stage metrics
  // export to `registry` (null: the default telemetry) under the
  // pipeline `name`'s stage names. With a `hot_source`, the hot list is
  // refreshed from it once here, and the built-in snapshot serves only if
  // that refresh fails (`hot_list_status()` says which); what `hot_source`
  // uses must outlive the pipeline too.
  explicit Pipeline(degrade::FakeClock* clock,
                    degrade::MetricsRegistry* registry = nullptr,
                    std::string name = "recsys", HotSource hot_source = nullptr)
      : clock_(clock),
        registry_(registry),
        stage_metrics_(
            degrade::StageMetricsOptions{std::move(name), registry, clock}),
        features_(clock, UserFeatureBase(), Options("feature-service")),
        recall_(clock, RecallPool(), Options("recall-service")),
        rank_(clock, std::string("ranker-v7"), Options("rank-service")),
        rerank_(clock, std::string("diversity-v2"), Options("rerank-service")),
        hot_list_(HotOptions(clock, registry, hot_source)) {
    for (std::size_t s = kRecall; s < kStages; ++s) {
      breakers_[s] =
          std::make_unique<degrade::CircuitBreaker<std::vector<Candidate>>>(
              BreakerFor(kStageNames[s]));
    }
    feature_breaker_ =
        std::make_unique<degrade::CircuitBreaker<std::vector<float>>>(
            BreakerFor(kStageNames[kFeatures]));
    // Plan B data is installed before the first request: a service without
    // it has no Plan B and should refuse to start. The features' default
    // is the global mean, never zeros (zeros score every item the same).
    (void)defaults_.Set(std::vector<float>(kFeatureDim, 0.25f), "global-mean");
    hot_list_status_ =
        hot_source ? hot_list_.RefreshOnce()
                   : absl::FailedPreconditionError("no hot source was given");
    if (!hot_list_status_.ok()) {
      std::vector<Candidate> hot;
      for (std::size_t i = 0; i < kHotListSize; ++i) {
        hot.push_back(Candidate{static_cast<int64_t>(1000 + i),
                                1.0f - static_cast<float>(i) / kHotListSize,
                                0});
      }
      (void)hot_list_.Publish(std::move(hot));
    }
    ScriptBackends();
  }

  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Serves one request for `user`. Never returns an empty list while the
  // Plan B data is installed.
  Response Serve(uint64_t user) {
    Response r = ServeUnobserved(user);
    // One observation per request: fallbacks by stage and reason, the
    // degradation-depth histogram, and the fallback_served log lines.
    stage_metrics_.Observe(r.result.trace());
    return r;
  }

  const degrade::StageMetrics& stage_metrics() const { return stage_metrics_; }

  // OK if the hot list came from the hot source; otherwise why not (the
  // built-in snapshot serves then; FAILED_PRECONDITION without a source).
  const absl::Status& hot_list_status() const { return hot_list_status_; }
  // How many items the hot list serves.
  std::size_t hot_list_size() const {
    degrade::HotList<Candidate>::Snapshot s = hot_list_.snapshot();
    return s == nullptr ? 0 : s->size();
  }

  // The state of stage `s`'s breaker now (applying a due open -> half-open).
  degrade::State BreakerState(std::size_t s) {
    return s == kFeatures ? feature_breaker_->state() : breakers_[s]->state();
  }

  // When the scripted outage starts (the clock's time at construction) and
  // ends.
  absl::Time ScriptStart() const { return script_start_; }
  absl::Time ScriptEnd() const {
    return script_start_ +
           kPhaseLength * static_cast<int64_t>(OutageScript().size());
  }

 private:
  Response ServeUnobserved(uint64_t user) {
    const absl::Time start = clock_->Now();

    // 1. Features. DefaultFeatures::Fallback() can fail (before any load),
    // so this WithFallback returns a StatusOr; the constructor loaded it.
    absl::StatusOr<degrade::StageResult<std::vector<float>>> features =
        degrade::WithFallback(
            *feature_breaker_, kStageNames[kFeatures],
            [&]() -> absl::StatusOr<std::vector<float>> {
              absl::StatusOr<std::vector<float>> f =
                  Timed(kFeatures, [&] { return features_.Call(); });
              if (!f.ok()) return f;
              // The mock serves one base vector; make it this user's.
              for (std::size_t i = 0; i < f->size(); ++i) {
                (*f)[i] += 0.5f * Unit(user * 7 + i);
              }
              return f;
            },
            defaults_.Fallback());
    if (!features.ok()) {
      // Both plans failed: there is nothing to rank with. Say so with an
      // empty result rather than invent one; the demo counts it.
      return Response{
          degrade::StageResult<std::vector<Candidate>>::Fallback(
              {}, kStageNames[kFeatures], degrade::DegradeReason::kError),
          clock_->Now() - start, false};
    }

    // 2. Recall, with the features' trace merged in.
    absl::StatusOr<degrade::StageResult<std::vector<Candidate>>> recalled =
        degrade::WithFallback(
            *features, *breakers_[kRecall], kStageNames[kRecall],
            [&]() -> absl::StatusOr<std::vector<Candidate>> {
              absl::StatusOr<std::vector<Candidate>> pool =
                  Timed(kRecall, [&] { return recall_.Call(); });
              if (!pool.ok()) return pool;
              return Personalise(*std::move(pool), user);
            },
            hot_list_.Fallback());
    if (!recalled.ok()) {
      auto empty = degrade::StageResult<std::vector<Candidate>>::Fallback(
          {}, kStageNames[kRecall], degrade::DegradeReason::kError);
      empty.MergeUpstream(features->trace());
      return Response{std::move(empty), clock_->Now() - start, false};
    }

    // 3. Rank. The ranker reads its input's tag: default features say
    // nothing about this user, so their personal score is down-weighted and
    // the recall score carries more of the ranking (PersonalWeight: by the
    // rung served, 0.8 fresh, 0.2 on the global mean).
    const bool default_features = features->is_default();
    const float personal_weight =
        PersonalWeight(features->tier(), default_features);
    const std::vector<float>& user_vec = features->value();
    bool ranked_fresh = false;
    degrade::StageResult<std::vector<Candidate>> ranked =
        degrade::RankOrFallback(
            recalled->trace(), *breakers_[kRank], kStageNames[kRank],
            [&](const std::vector<Candidate>& in)
                -> absl::StatusOr<std::vector<Candidate>> {
              absl::StatusOr<std::string> model =
                  Timed(kRank, [&] { return rank_.Call(); });
              if (!model.ok()) return model.status();
              ranked_fresh = true;
              return Score(in, user_vec, personal_weight);
            },
            std::move(*recalled).value(),
            [](const Candidate& c) { return c.recall_score; });

    // 4. Re-rank: diversify; its Plan B only removes duplicates.
    degrade::StageResult<std::vector<Candidate>> reranked =
        degrade::RerankOrFallback(
            ranked.trace(), *breakers_[kRerank], kStageNames[kRerank],
            [&](const std::vector<Candidate>& in)
                -> absl::StatusOr<std::vector<Candidate>> {
              absl::StatusOr<std::string> model =
                  Timed(kRerank, [&] { return rerank_.Call(); });
              if (!model.ok()) return model.status();
              return Diversify(in);
            },
            std::move(ranked).value(), [](const Candidate& c) { return c.id; });
    if (reranked.value().size() > kResultSize) {
      reranked.value().resize(kResultSize);
    }
    return Response{std::move(reranked), clock_->Now() - start,
                    ranked_fresh && default_features};
  }

  static degrade::testing::FailingBackendOptions Options(std::string name) {
    degrade::testing::FailingBackendOptions o;
    o.name = std::move(name);
    // A hang is simulated latency on the FakeClock, never a real sleep.
    o.slow_mode = degrade::testing::SlowMode::kAdvanceFakeClock;
    return o;
  }

  // Exported as degrade_default_features_*{default_features="features"}:
  // the age of the vector the feature stage falls back to.
  static degrade::DefaultFeaturesOptions DefaultsOptions(
      const degrade::Clock* clock, degrade::MetricsRegistry* registry) {
    degrade::DefaultFeaturesOptions o;
    o.expected_dimension = kFeatureDim;
    o.name = "features";
    o.clock = clock;
    o.metrics = registry;
    return o;
  }

  static degrade::HotListOptions<Candidate> HotOptions(
      const degrade::Clock* clock, degrade::MetricsRegistry* registry,
      HotSource source) {
    degrade::HotListOptions<Candidate> o;
    o.metrics = registry;
    o.source = std::move(source);
    o.top_n = kHotListSize;
    o.clock = clock;
    o.name = "hot-list";
    return o;
  }

  degrade::BreakerSettings BreakerFor(absl::string_view stage) const {
    degrade::BreakerSettings s;
    s.name = std::string(stage);
    s.clock = clock_;
    s.metrics = registry_;
    s.timeout = kBreakerTimeout;
    s.ready_to_trip = degrade::trip::ConsecutiveFailures(kTripAfterFailures);
    return s;
  }

  static std::vector<float> UserFeatureBase() {
    return std::vector<float>(kFeatureDim, 0.25f);
  }

  // The recall service's candidate pool: 300 items, some of them listed
  // twice (two recall channels that overlap), so that de-duplication has
  // work to do.
  static std::vector<Candidate> RecallPool() {
    std::vector<Candidate> pool;
    for (int64_t i = 0; i < 300; ++i) {
      const int64_t id = (i % 60 == 59) ? i - 1 : i;  // every 60th repeats
      pool.push_back(
          Candidate{id, Unit(static_cast<uint64_t>(i) + 99) * 0.5f + 0.5f, 0});
    }
    return pool;
  }

  static std::vector<Candidate> Personalise(std::vector<Candidate> pool,
                                            uint64_t user) {
    // A user-dependent rotation stands in for per-user retrieval.
    const std::size_t shift = static_cast<std::size_t>(user % pool.size());
    std::rotate(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(shift),
                pool.end());
    pool.resize(std::min<std::size_t>(pool.size(), 240));
    return pool;
  }

  // `w`: the personal score's weight (PersonalWeight).
  static std::vector<Candidate> Score(std::vector<Candidate> in,
                                      const std::vector<float>& user, float w) {
    for (Candidate& c : in) {
      const std::vector<float> e = ItemEmbedding(c.id);
      float dot = 0;
      for (std::size_t i = 0; i < e.size() && i < user.size(); ++i) {
        dot += e[i] * user[i];
      }
      c.score = w * dot + (1 - w) * c.recall_score;
    }
    std::stable_sort(in.begin(), in.end(),
                     [](const Candidate& a, const Candidate& b) {
                       return a.score > b.score;
                     });
    return in;
  }

  // Re-ranking: drop duplicates and interleave five "categories" (id % 5),
  // so no category takes the first screen.
  static std::vector<Candidate> Diversify(const std::vector<Candidate>& in) {
    std::vector<Candidate> unique =
        degrade::DedupOnly(in, [](const Candidate& c) { return c.id; });
    std::array<std::vector<Candidate>, 5> by_category;
    for (Candidate& c : unique) {
      by_category[static_cast<std::size_t>(c.id % 5)].push_back(c);
    }
    std::vector<Candidate> out;
    for (std::size_t round = 0; out.size() < unique.size(); ++round) {
      for (auto& bucket : by_category) {
        if (round < bucket.size()) out.push_back(bucket[round]);
      }
    }
    return out;
  }

  // Calls a backend within the stage budget. Advances the clock by the
  // stage's round trip; a call that comes back after its deadline is a
  // DEADLINE_EXCEEDED, and the clock goes back to the deadline: the request
  // stopped waiting there (see the file comment).
  template <typename Call>
  auto Timed(std::size_t stage, Call call) -> decltype(call()) {
    const degrade::Deadline deadline =
        degrade::Deadline::In(kStageBudget, clock_);
    clock_->Advance(kStageCost[stage]);
    auto result = call();
    if (deadline.expired()) {
      if (clock_->Now() > deadline.when()) clock_->Set(deadline.when());
      return absl::DeadlineExceededError(
          absl::StrCat(kStageNames[stage], ": no answer within ",
                       absl::FormatDuration(kStageBudget)));
    }
    return result;
  }

  void ScriptBackends() {
    script_start_ = clock_->Now();
    std::array<degrade::testing::FailingBackendCore*, kStages> backends = {
        &features_, &recall_, &rank_, &rerank_};
    for (std::size_t s = 0; s < kStages; ++s) {
      degrade::testing::BackendScript script =
          backends[s]->Script(script_start_);
      for (const Phase& p : OutageScript()) {
        switch (p.modes[s]) {
          case Mode::kHealthy:
            script.Healthy(kPhaseLength);
            break;
          case Mode::kDown:
            script.Failing(absl::UnavailableError(absl::StrCat(
                               kStageNames[s], " backend is down")),
                           kPhaseLength);
            break;
          case Mode::kHanging:
            script.Slow(kHangLatency, kPhaseLength);
            break;
          case Mode::kThrowing:
            script.Throwing(kPhaseLength);
            break;
        }
      }
    }
  }

  degrade::FakeClock* const clock_;
  degrade::MetricsRegistry* const registry_;
  degrade::StageMetrics stage_metrics_;
  absl::Time script_start_;
  degrade::testing::FailingBackend<std::vector<float>> features_;
  degrade::testing::FailingBackend<std::vector<Candidate>> recall_;
  // The model servers answer with their model's name; the scoring itself is
  // computed locally as a stand-in for what they would return.
  degrade::testing::FailingBackend<std::string> rank_;
  degrade::testing::FailingBackend<std::string> rerank_;
  std::unique_ptr<degrade::CircuitBreaker<std::vector<float>>> feature_breaker_;
  // Indexed by StageIndex; [kFeatures] is unused (features have their own
  // value type).
  std::array<std::unique_ptr<degrade::CircuitBreaker<std::vector<Candidate>>>,
             kStages>
      breakers_;
  // After clock_ and registry_, which its options read.
  degrade::DefaultFeatures defaults_{DefaultsOptions(clock_, registry_)};
  degrade::HotList<Candidate> hot_list_;
  absl::Status hot_list_status_;
};

// Drives `pipeline` through the whole outage script: one request every
// kRequestInterval of simulated time. `on_response(phase_index, offset into
// the phase, user, response)` sees each request; `on_phase_end(phase_index)`
// runs when a phase's last request is done. Requests arrive on schedule, but
// a request that overran the interval pushes the next one back (there is one
// client), so the clock never goes backwards between requests.
template <typename OnResponse, typename OnPhaseEnd>
void RunScript(degrade::FakeClock& clock, Pipeline& pipeline,
               OnResponse on_response, OnPhaseEnd on_phase_end,
               uint64_t seed = 42) {
  const absl::Time t0 = pipeline.ScriptStart();
  uint64_t n = 0;
  for (std::size_t p = 0; p < OutageScript().size(); ++p) {
    const absl::Time phase_start = t0 + kPhaseLength * static_cast<int64_t>(p);
    const absl::Time phase_end = phase_start + kPhaseLength;
    for (absl::Time at = std::max(phase_start, clock.Now()); at < phase_end;
         at = std::max(at + kRequestInterval, clock.Now())) {
      if (clock.Now() < at) clock.Set(at);
      const uint64_t user = Mix(seed ^ Mix(n++)) % 100000;
      Response r = pipeline.Serve(user);
      on_response(p, at - phase_start, user, r);
    }
    on_phase_end(p);
  }
}

}  // namespace recsys

#endif  // DEGRADE_EXAMPLES_RECSYS_PIPELINE_HPP_
