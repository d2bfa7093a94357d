// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/grpc_recsys/front.hpp
// -----------------------------------------------------------------------------
//
// The front service of the multi-process demo: the in-process demo's
// pipeline (examples/recsys/pipeline.hpp), with each stage a gRPC call to a
// server process instead of a scripted mock. It lives in the driver's
// process (the driver calls Serve() from its worker threads), which keeps
// the figures honest: a response is counted where it is made.
//
//   features   Features/Get          -> the user's own last-known-good
//                                       features, else the segment's mean,
//                                       else the global mean (a Ladder)
//   recall     Recall/Recall on two  -> per route: that route's candidates
//              servers, cf and vec      are missing ("recall.cf=open");
//              (FanOutRecall)           both routes down: the hot list
//   rank       Rank/Rank             -> recall-score order (RankOrFallback)
//   rerank     Rerank/Rerank         -> dedup only (RerankOrFallback)
//
// The features stage goes through a `degrade::Ladder` (ladder.hpp): every
// fresh answer is written through to a last-known-good cache of a million
// users; when the features server fails, a user seen before gets their own
// stale features (tagged "features=open/stale-1m"), a new one their
// segment's mean ("/segment") or the global mean ("/global"); concurrent
// requests for one user share one call; and once the breaker closes, a
// recovery ramp lets calls back at 10% of the pre-outage rate rising to
// all of it over `ramp_period`, serving the rest stale.
//
// Each of the five backends has its own circuit breaker (trips after 3
// consecutive failures, stays open `breaker_timeout`, one half-open probe)
// and its own time budget per call (rank 100 ms, the others 50 ms). Those
// breakers belong to the Plan B combinators, exactly as in the in-process
// demo: WithFallback, FanOutRecall, RankOrFallback, RerankOrFallback.
//
// What the gRPC adapter (degrade/grpc/) does here:
//   * outcome.hpp: every breaker classifies replies with the default
//     OutcomeTable, so an INVALID_ARGUMENT or CANCELLED never opens it, and
//     UNAVAILABLE (a killed server) and DEADLINE_EXCEEDED (a hung or slow
//     one) do;
//   * metadata.hpp: each call's gRPC deadline is its stage budget
//     (SetDeadline), it carries the request class (SetRequestClass), and the
//     server's degradation trace comes back from the trailers (MergeTrace;
//     a malformed one is counted, never fatal);
//   * status.hpp: the reply's status is read with FromGrpcCall, so a
//     DEADLINE_EXCEEDED is recorded as "timeout" and pushback is kept.
// Why not client.hpp's Call() or the interceptor: both put a breaker of
// their own in front of the call. Here the breaker is the Plan B
// combinator's; a second one on the same backend would trip on the same
// failures, and the breaker states printed would be two for one backend.
// Rpc() below is Call() without its breaker.
//
// Servers come and go: a restarted server listens on a new port, as a
// rescheduled pod gets a new address. Connect() points a backend at its new
// address with a fresh channel, connected before it takes traffic, as
// service discovery adds an endpoint once it is ready. The old channel is
// dropped once its last call finishes.
//
// Thread safety: Serve() may run on many threads at once; Connect() may run
// concurrently with it.

#ifndef DEGRADE_EXAMPLES_GRPC_RECSYS_FRONT_HPP_
#define DEGRADE_EXAMPLES_GRPC_RECSYS_FRONT_HPP_

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/coalesce.hpp"
#include "degrade/deadline.hpp"
#include "degrade/default_features.hpp"
#include "degrade/degradation_trace.hpp"
#include "degrade/fan_out.hpp"
#include "degrade/grpc/metadata.hpp"
#include "degrade/grpc/outcome.hpp"
#include "degrade/grpc/status.hpp"
#include "degrade/hot_list.hpp"
#include "degrade/ladder.hpp"
#include "degrade/recovery_ramp.hpp"
#include "degrade/request_class.hpp"
#include "degrade/segment_defaults.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/stale_cache.hpp"
#include "degrade/telemetry.hpp"
#include "degrade/trip.hpp"
#include "degrade/with_fallback.hpp"
#include "recsys.grpc.pb.h"
#include "recsys/pipeline.hpp"
#include "trust.hpp"

namespace grpc_recsys {

// The five backends, each a server process and a breaker. The order is
// the request's.
enum Backend : std::size_t {
  kFeatures = 0,
  kRecallCf = 1,
  kRecallVec = 2,
  kRank = 3,
  kRerank = 4,
};
inline constexpr std::size_t kBackends = 5;
// The server's --role, and the process's name in the driver.
inline constexpr std::array<absl::string_view, kBackends> kRoles = {
    "features", "recall_cf", "recall_vec", "rank", "rerank"};
// The stage each backend is recorded as in a degradation trace. The recall
// routes are "recall.<route>" (fan_out.hpp); when both fail, "recall"
// (the hot list) is recorded as well.
inline constexpr std::array<absl::string_view, kBackends> kTraceNames = {
    "features", "recall.cf", "recall.vec", "rank", "rerank"};

struct FrontOptions {
  // How long a tripped breaker stays open before one probe is let through.
  absl::Duration breaker_timeout = absl::Seconds(2);
  // Consecutive failures that open a breaker (as the in-process demo).
  uint64_t trip_after = recsys::kTripAfterFailures;
  // Each backend call's budget, which is also its gRPC deadline.
  std::array<absl::Duration, kBackends> budgets = {
      absl::Milliseconds(50), absl::Milliseconds(50), absl::Milliseconds(50),
      absl::Milliseconds(100), absl::Milliseconds(50)};
  // Sent with every call (degrade-request-class-v1): the front assigns
  // the class; the servers believe CRITICAL_PLUS only from a caller whose
  // certificate names the front (trust.hpp).
  degrade::RequestClass request_class{degrade::Criticality::kCriticalPlus, 0};
  // The front's certificate for the servers' mutual TLS; nullptr: plain.
  std::shared_ptr<::grpc::ChannelCredentials> credentials;
  // Candidates asked of each recall route.
  uint32_t recall_limit = 120;
  // The features' last-known-good cache, and how long the recovery ramp
  // takes after the features breaker closes.
  std::size_t cache_users = 1'000'000;
  absl::Duration ramp_period = absl::Seconds(5);
};

// The segment a user belongs to: one of kSegments, of which the last two
// (a new market) have no segment default yet.
inline constexpr uint64_t kSegments = 24;
inline std::string SegmentOf(uint64_t user) {
  return absl::StrCat("s", recsys::Mix(user ^ 0x5e6) % kSegments);
}

// One request's answer.
struct FrontResponse {
  std::vector<recsys::Candidate> items;
  // Every stage that served its Plan B, and why; plus whatever the servers
  // reported in their trailers. Empty: fully personalised.
  degrade::DegradationTrace trace;
};

class Front {
 public:
  explicit Front(FrontOptions options) : options_(std::move(options)) {
    for (std::size_t b = 0; b < kBackends; ++b) {
      if (b == kFeatures) continue;
      list_breakers_[b] = std::make_unique<
          degrade::CircuitBreaker<std::vector<recsys::Candidate>>>(Settings(b));
    }
    feature_breaker_ =
        std::make_unique<degrade::CircuitBreaker<std::vector<float>>>(
            Settings(kFeatures));
    // The Plan B data, installed before the first request, as in the
    // in-process demo: the global mean vector, the segments' means and a
    // hot list of 200 items.
    (void)defaults_.Set(std::vector<float>(recsys::kFeatureDim, 0.25f),
                        "global-mean");
    degrade::SegmentVectors segs;
    for (uint64_t k = 0; k + 2 < kSegments; ++k) {
      std::vector<float> v(recsys::kFeatureDim, 0.25f);
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] += 0.2f * (recsys::Unit(k * 131 + i) - 0.5f);
      segs.emplace(absl::StrCat("s", k), std::move(v));
    }
    degrade::SegmentDefaultsOptions so;
    so.name = "features-segments";
    so.metrics = degrade::NoTelemetry();
    segments_ = degrade::SegmentDefaults::Create(so).value();
    (void)segments_->Set(std::move(segs), "segment-means");
    BuildLadder();
    std::vector<recsys::Candidate> hot;
    for (std::size_t i = 0; i < recsys::kHotListSize; ++i) {
      hot.push_back(recsys::Candidate{
          static_cast<int64_t>(1000 + i),
          1.0f - static_cast<float>(i) / recsys::kHotListSize, 0});
    }
    (void)hot_list_.Publish(std::move(hot));
  }

  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  // Points `backend` at 127.0.0.1:`port` with a new channel, once it is
  // connected (within `connect_timeout`; otherwise UNAVAILABLE naming the
  // backend and the address, and the old channel stays).
  absl::Status Connect(Backend backend, int port,
                       absl::Duration connect_timeout) {
    const std::string address = absl::StrCat("127.0.0.1:", port);
    ::grpc::ChannelArguments args;
    // Loopback never goes through a proxy (gRPC follows http_proxy even to
    // 127.0.0.1), and degrade owns failure handling: no gRPC retries.
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    // Each channel its own connection, never one shared with an old
    // channel to the same address.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    std::shared_ptr<::grpc::Channel> channel = DemoChannel(
        port,
        options_.credentials != nullptr ? options_.credentials
                                        : ::grpc::InsecureChannelCredentials(),
        args);
    if (!channel->WaitForConnected(
            std::chrono::system_clock::now() +
            absl::ToChronoMilliseconds(connect_timeout))) {
      return absl::UnavailableError(
          absl::StrCat(kRoles[backend], ": could not connect to ", address,
                       " within ", absl::FormatDuration(connect_timeout)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    channels_[backend] = std::move(channel);
    return absl::OkStatus();
  }

  // Serves one request for `user`. Never returns an empty list: every
  // stage has a Plan B whose data was installed at construction.
  FrontResponse Serve(uint64_t user) {
    // What the servers send back in their trailers, merged into the
    // response's trace at the end.
    degrade::DegradationTrace from_servers;

    // 1. Features: fresh, or the user's own last-known-good, the
    // segment's mean, the global mean.
    absl::StatusOr<degrade::StageResult<FeatureLadder::Value>> features =
        ladder_->Get(
            user, SegmentOf(user), [&]() -> absl::StatusOr<std::vector<float>> {
              FeatureRequest req;
              req.set_user(user);
              absl::StatusOr<FeatureReply> r = Rpc<FeatureReply>(
                  kFeatures, &from_servers,
                  [&](::grpc::ClientContext* ctx, FeatureReply* reply) {
                    return Features::Stub(Channel(kFeatures))
                        .Get(ctx, req, reply);
                  });
              if (!r.ok()) return r.status();
              return std::vector<float>(r->values().begin(), r->values().end());
            });
    if (!features.ok()) return FrontResponse{{}, Failed("features")};
    const std::vector<float>& user_vec = *features->value();

    // 2. Recall: two routes, each behind its breaker; the hot list only
    // when both failed.
    auto route = [&](Backend b) {
      return
          [this, b, user, &user_vec,
           &from_servers]() -> absl::StatusOr<std::vector<recsys::Candidate>> {
            RecallRequest req;
            req.set_user(user);
            req.set_limit(options_.recall_limit);
            req.mutable_features()->Add(user_vec.begin(), user_vec.end());
            absl::StatusOr<CandidateList> r = Rpc<CandidateList>(
                b, &from_servers,
                [&](::grpc::ClientContext* ctx, CandidateList* reply) {
                  return Recall::Stub(Channel(b)).Recall(ctx, req, reply);
                });
            if (!r.ok()) return r.status();
            return FromProto(*r);
          };
    };
    const std::vector<degrade::RecallRoute<recsys::Candidate>> routes = {
        {"cf", list_breakers_[kRecallCf].get(), route(kRecallCf)},
        {"vec", list_breakers_[kRecallVec].get(), route(kRecallVec)},
    };
    absl::StatusOr<degrade::StageResult<std::vector<recsys::Candidate>>>
        recalled = degrade::FanOutRecall(
            features->trace(), routes, hot_list_.Fallback(),
            degrade::DedupCandidatesById(
                [](const recsys::Candidate& c) { return c.id; }));
    if (!recalled.ok()) return FrontResponse{{}, Failed("recall")};

    // 3. Rank, or recall-score order. The ranker is told when the features
    // are the default, and weighs them less.
    const bool default_features = features->is_default();
    degrade::StageResult<std::vector<recsys::Candidate>> ranked =
        degrade::RankOrFallback(
            recalled->trace(), *list_breakers_[kRank], kTraceNames[kRank],
            [&](const std::vector<recsys::Candidate>& in)
                -> absl::StatusOr<std::vector<recsys::Candidate>> {
              RankRequest req;
              req.mutable_features()->Add(user_vec.begin(), user_vec.end());
              req.set_default_features(default_features);
              ToProto(in, req.mutable_items());
              absl::StatusOr<CandidateList> r = Rpc<CandidateList>(
                  kRank, &from_servers,
                  [&](::grpc::ClientContext* ctx, CandidateList* reply) {
                    return Rank::Stub(Channel(kRank)).Rank(ctx, req, reply);
                  });
              if (!r.ok()) return r.status();
              return FromProto(*r);
            },
            std::move(*recalled).value(),
            [](const recsys::Candidate& c) { return c.recall_score; });

    // 4. Re-rank, or dedup only.
    degrade::StageResult<std::vector<recsys::Candidate>> reranked =
        degrade::RerankOrFallback(
            ranked.trace(), *list_breakers_[kRerank], kTraceNames[kRerank],
            [&](const std::vector<recsys::Candidate>& in)
                -> absl::StatusOr<std::vector<recsys::Candidate>> {
              RerankRequest req;
              ToProto(in, req.mutable_items());
              absl::StatusOr<CandidateList> r = Rpc<CandidateList>(
                  kRerank, &from_servers,
                  [&](::grpc::ClientContext* ctx, CandidateList* reply) {
                    return Rerank::Stub(Channel(kRerank))
                        .Rerank(ctx, req, reply);
                  });
              if (!r.ok()) return r.status();
              return FromProto(*r);
            },
            std::move(ranked).value(),
            [](const recsys::Candidate& c) { return c.id; });

    FrontResponse out;
    out.items = std::move(reranked).value();
    if (out.items.size() > recsys::kResultSize)
      out.items.resize(recsys::kResultSize);
    out.trace = reranked.trace();
    out.trace.Merge(from_servers);
    return out;
  }

  // The state of `backend`'s breaker now (a due open -> half-open applied).
  degrade::State BreakerState(Backend backend) {
    return backend == kFeatures ? feature_breaker_->state()
                                : list_breakers_[backend]->state();
  }

  // What the features ladder served, and the calls it made.
  degrade::LadderStats ladder_stats() const { return ladder_->stats(); }

  // Replies whose degrade-trace-v1 trailer was malformed (ignored).
  uint64_t malformed_trailers() const { return malformed_trailers_.load(); }

  const FrontOptions& options() const { return options_; }

 private:
  using FeatureLadder = degrade::Ladder<uint64_t, std::vector<float>>;

  void BuildLadder() {
    degrade::LastGoodCacheSettings c;
    c.name = "features";
    c.max_entries = options_.cache_users;
    // A user's vector, its key and the entry's overhead, with room.
    c.max_bytes =
        options_.cache_users * (recsys::kFeatureDim * sizeof(float) + 160);
    c.metrics = degrade::NoTelemetry();
    cache_ = FeatureLadder::Cache::Create(c).value();
    degrade::CoalescerSettings co;
    co.name = "features";
    co.metrics = degrade::NoTelemetry();
    coalescer_ = FeatureLadder::Shared::Create(co).value();
    degrade::RecoveryRampSettings r;
    r.name = "features";
    r.period = options_.ramp_period;
    r.metrics = degrade::NoTelemetry();
    ramp_ = degrade::RecoveryRamp::Create(r).value();
    FeatureLadder::Rungs rungs;
    rungs.breaker = feature_breaker_.get();
    rungs.cache = cache_.get();
    rungs.coalescer = coalescer_.get();  // inline: the first request calls
    rungs.ramp = ramp_.get();
    rungs.segment = [this](absl::string_view s) { return segments_->Find(s); };
    rungs.global = [this] { return defaults_.snapshot(); };
    degrade::LadderSettings l;
    l.name = std::string(kTraceNames[kFeatures]);
    l.coalesce_wait = options_.budgets[kFeatures];
    l.metrics = degrade::NoTelemetry();
    ladder_ = FeatureLadder::Create(l, rungs).value();
  }

  degrade::BreakerSettings Settings(std::size_t backend) const {
    degrade::BreakerSettings s;
    s.name = std::string(kTraceNames[backend]);
    s.timeout = options_.breaker_timeout;
    s.max_requests = 1;
    s.ready_to_trip = degrade::trip::ConsecutiveFailures(options_.trip_after);
    s.metrics = degrade::NoTelemetry();
    degrade::grpc::OutcomeTable::Default().ApplyTo(s);
    return s;
  }

  // The backend's current channel; null before its first Connect(), which
  // gRPC's stub turns into a failed call.
  std::shared_ptr<::grpc::Channel> Channel(Backend b) {
    std::lock_guard<std::mutex> lock(mu_);
    return channels_[b];
  }

  // One unary call within the backend's budget: what client.hpp's Call()
  // does around its breaker. `invoke(context, &reply)` makes the call.
  template <typename Reply, typename Invoke>
  absl::StatusOr<Reply> Rpc(Backend b, degrade::DegradationTrace* from_servers,
                            Invoke invoke) {
    if (Channel(b) == nullptr) {
      return absl::UnavailableError(
          absl::StrCat(kRoles[b], ": no server address yet"));
    }
    ::grpc::ClientContext ctx;
    degrade::grpc::SetDeadline(&ctx,
                               degrade::Deadline::In(options_.budgets[b]));
    degrade::grpc::SetRequestClass(&ctx, options_.request_class);
    Reply reply;
    const ::grpc::Status s = invoke(&ctx, &reply);
    if (!degrade::grpc::MergeTrace(ctx, from_servers).ok())
      malformed_trailers_.fetch_add(1);
    if (!s.ok()) return degrade::grpc::FromGrpcCall(s, ctx);
    return reply;
  }

  static std::vector<recsys::Candidate> FromProto(const CandidateList& list) {
    std::vector<recsys::Candidate> out;
    out.reserve(static_cast<std::size_t>(list.items_size()));
    for (const Candidate& p : list.items()) {
      out.push_back(recsys::Candidate{p.id(), p.recall_score(), p.score()});
    }
    return out;
  }

  static void ToProto(const std::vector<recsys::Candidate>& in,
                      google::protobuf::RepeatedPtrField<Candidate>* out) {
    out->Reserve(static_cast<int>(in.size()));
    for (const recsys::Candidate& c : in) {
      Candidate* p = out->Add();
      p->set_id(c.id);
      p->set_recall_score(c.recall_score);
      p->set_score(c.score);
    }
  }

  // The trace of a request neither plan could answer (both Plan B data
  // sets are installed at construction, so this does not happen).
  static degrade::DegradationTrace Failed(absl::string_view stage) {
    degrade::DegradationTrace t;
    t.Add(stage, degrade::DegradeReason::kError);
    return t;
  }

  const FrontOptions options_;
  std::unique_ptr<degrade::CircuitBreaker<std::vector<float>>> feature_breaker_;
  // Indexed by Backend; [kFeatures] is unused (features are floats).
  std::array<
      std::unique_ptr<degrade::CircuitBreaker<std::vector<recsys::Candidate>>>,
      kBackends>
      list_breakers_;
  degrade::DefaultFeatures defaults_{recsys::kFeatureDim};
  std::unique_ptr<degrade::SegmentDefaults> segments_;
  std::unique_ptr<FeatureLadder::Cache> cache_;
  std::unique_ptr<FeatureLadder::Shared> coalescer_;
  std::unique_ptr<degrade::RecoveryRamp> ramp_;
  std::unique_ptr<FeatureLadder> ladder_;  // last: it uses the above
  degrade::HotList<recsys::Candidate> hot_list_{[] {
    degrade::HotListOptions<recsys::Candidate> o;
    o.name = "hot-list";
    o.top_n = recsys::kHotListSize;
    o.metrics = degrade::NoTelemetry();
    return o;
  }()};
  std::mutex mu_;
  std::array<std::shared_ptr<::grpc::Channel>, kBackends> channels_;
  std::atomic<uint64_t> malformed_trailers_{0};
};

}  // namespace grpc_recsys

#endif  // DEGRADE_EXAMPLES_GRPC_RECSYS_FRONT_HPP_
