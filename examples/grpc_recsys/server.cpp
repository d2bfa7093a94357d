// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// grpc_recsys_server: one stage of the multi-process recommendation demo,
// as its own OS process, so that an outage is a real one: a SIGKILL closes
// its sockets, a SIGSTOP leaves them open and silent, exactly as a crashed
// or hung backend does in production.
//
//   grpc_recsys_server --role features|recall_cf|recall_vec|rank|rerank
//                      [--tls-dir DIR]
//
// It listens on 127.0.0.1:0 (loopback only, a port the kernel picks, so
// that runs never collide), prints "PORT <n>" on stdout once it serves, and
// then writes nothing more there: the parent reads that line through a pipe
// and closes it. Diagnostics go to stderr. It serves until it is killed;
// the parent set PR_SET_PDEATHSIG before exec, so it dies with its parent.
//
// Each server also serves grpc_recsys.Control/SetLatency, which adds
// latency to its stage calls: the chaos script's "slow one server". A handler
// never sleeps past the caller's deadline: the caller has given up by then, and
// a real server would stop working on the request too.
//
// The handlers are written the way degrade's server side wants a handler
// written (degrade/grpc/server.hpp): a ServerCall at the top reads the
// caller's request class and deadline, and its Finish() at the bottom sends
// the server's degradation trace back in the trailers. These servers have
// no Plan B of their own, so the trace they send is empty, and they admit
// everything (no AdmissionController): the demo is about the front's
// degradation, not the servers' overload control.
//
// The "models" are the in-process demo's (examples/recsys/pipeline.hpp):
// the same item embeddings and user features, the same ranking rule
// (default features get a smaller personal weight), the same re-ranking
// (dedup, then interleave five categories).
//
// With --tls-dir, it serves mutual TLS only, with DIR's certificates
// (chaos.hpp makes them: ca.crt signs everything; server.crt/.key is this
// server's): a client without a certificate the CA signed never reaches a
// handler. It then trusts only the front end: a caller whose certificate
// names front.grpc-recsys may claim any request class; every other caller
// (a batch job with a certificate of its own, say) at most CRITICAL
// (ServerOptions::trust). Control/SetLatency, which changes the server's
// state, answers PERMISSION_DENIED to anyone but chaos.grpc-recsys. Every
// stage reply says the class it was served at in the trailer
// grpc-recsys-served-class, so the driver can show what the policy did.
//
// Exit status: 2 for a bad command line (an unknown role names the roles it
// knows), 1 when it cannot listen. Neither is ever silent.

#include "degrade/grpc/server.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/trust_policy.hpp"
#include "recsys.grpc.pb.h"
#include "recsys/pipeline.hpp"
#include "tls_certificates.hpp"

namespace {

constexpr std::array<absl::string_view, 5> kRoles = {
    "features", "recall_cf", "recall_vec", "rank", "rerank"};

// What each stage's "model" nominally costs, so that a healthy request
// takes a few milliseconds as a real one would, not a few microseconds.
// Small against every stage budget (50 ms, rank 100 ms).
absl::Duration ServiceTime(absl::string_view role) {
  if (role == "rank") return absl::Milliseconds(3);
  if (role == "recall_cf" || role == "recall_vec") return absl::Milliseconds(2);
  return absl::Milliseconds(1);
}

// State shared by the role's service and the Control service.
struct ServerState {
  std::string role;
  std::atomic<int64_t> added_latency_ms{0};
  // Admits everything (see the top); with --tls-dir, trusts the front end.
  degrade::grpc::ServerOptions options;
  bool tls = false;
};

inline constexpr const char* kFrontName = "front.grpc-recsys";
inline constexpr const char* kChaosName = "chaos.grpc-recsys";
inline constexpr const char* kServedClassKey = "grpc-recsys-served-class";

// Sends the class the call was admitted at (after the trust policy).
void TellServedClass(::grpc::ServerContext* ctx,
                     const degrade::grpc::ServerCall& call) {
  ctx->AddTrailingMetadata(kServedClassKey,
                           degrade::EncodeRequestClass(call.request_class()));
}

// Spends the stage's service time plus the added latency, but never past
// the caller's deadline. Returns false when the deadline cut it short: the
// caller has already given up, so there is no point in answering.
bool Work(const ServerState& state, const degrade::Deadline& deadline) {
  const absl::Duration want =
      ServiceTime(state.role) + absl::Milliseconds(state.added_latency_ms.load(
                                    std::memory_order_relaxed));
  const absl::Duration left = deadline.remaining();
  absl::SleepFor(std::min(want, left));
  return want < left;
}

absl::Status TooLate(absl::string_view role) {
  return absl::DeadlineExceededError(
      absl::StrCat(role, ": the caller's deadline passed before the answer"));
}

void ToProto(const std::vector<recsys::Candidate>& in,
             grpc_recsys::CandidateList* out) {
  for (const recsys::Candidate& c : in) {
    grpc_recsys::Candidate* p = out->add_items();
    p->set_id(c.id);
    p->set_recall_score(c.recall_score);
    p->set_score(c.score);
  }
}

std::vector<recsys::Candidate> FromProto(
    const google::protobuf::RepeatedPtrField<grpc_recsys::Candidate>& in) {
  std::vector<recsys::Candidate> out;
  out.reserve(static_cast<std::size_t>(in.size()));
  for (const grpc_recsys::Candidate& p : in) {
    out.push_back(recsys::Candidate{p.id(), p.recall_score(), p.score()});
  }
  return out;
}

// The item embeddings of every id the servers know (0 to 1299), computed
// once: a stage's CPU time should be its model's, not the mock's set-up.
const std::vector<float>& Embedding(int64_t id) {
  static const std::vector<std::vector<float>>* const table = [] {
    auto* t = new std::vector<std::vector<float>>();
    for (int64_t i = 0; i < 1300; ++i) t->push_back(recsys::ItemEmbedding(i));
    return t;
  }();
  if (id >= 0 && static_cast<std::size_t>(id) < table->size()) {
    return (*table)[static_cast<std::size_t>(id)];
  }
  static thread_local std::vector<float> other;
  other = recsys::ItemEmbedding(id);
  return other;
}

float Dot(const std::vector<float>& a,
          const google::protobuf::RepeatedField<float>& b) {
  float dot = 0;
  for (int i = 0; i < b.size() && static_cast<std::size_t>(i) < a.size(); ++i) {
    dot += a[static_cast<std::size_t>(i)] * b[i];
  }
  return dot;
}

class FeatureService final : public grpc_recsys::Features::Service {
 public:
  explicit FeatureService(ServerState* state) : state_(state) {}
  ::grpc::Status Get(::grpc::ServerContext* ctx,
                     const grpc_recsys::FeatureRequest* req,
                     grpc_recsys::FeatureReply* reply) override {
    degrade::grpc::ServerCall call(ctx, state_->options);
    TellServedClass(ctx, call);
    if (!Work(*state_, call.deadline()))
      return call.Finish(TooLate("features"));
    // The in-process demo's personalised features: a base of 0.25 plus a
    // per-user offset.
    for (std::size_t i = 0; i < recsys::kFeatureDim; ++i) {
      reply->add_values(0.25f + 0.5f * recsys::Unit(req->user() * 7 + i));
    }
    return call.Finish();
  }

 private:
  ServerState* const state_;
};

// Two recall routes behind one service: "cf" (collaborative filtering: a
// per-user slice of a co-occurrence pool, whose every 60th item repeats so
// the merge has duplicates to drop) and "vec" (vector search: the items
// nearest to the user's features in a corpus of 1000).
class RecallService final : public grpc_recsys::Recall::Service {
 public:
  explicit RecallService(ServerState* state) : state_(state) {}
  ::grpc::Status Recall(::grpc::ServerContext* ctx,
                        const grpc_recsys::RecallRequest* req,
                        grpc_recsys::CandidateList* reply) override {
    degrade::grpc::ServerCall call(ctx, state_->options);
    TellServedClass(ctx, call);
    if (!Work(*state_, call.deadline()))
      return call.Finish(TooLate(state_->role));
    const std::size_t limit =
        req->limit() == 0 ? 120 : std::min<std::size_t>(req->limit(), 500);
    std::vector<recsys::Candidate> out;
    if (state_->role == "recall_cf") {
      constexpr int64_t kPool = 300;
      const int64_t shift = static_cast<int64_t>(req->user() % kPool);
      for (std::size_t k = 0; k < limit; ++k) {
        const int64_t i = (shift + static_cast<int64_t>(k)) % kPool;
        const int64_t id = (i % 60 == 59) ? i - 1 : i;
        out.push_back(recsys::Candidate{
            id, recsys::Unit(static_cast<uint64_t>(i) + 99) * 0.5f + 0.5f, 0});
      }
    } else {
      for (int64_t id = 300; id < 1300; ++id) {
        const float dot = Dot(Embedding(id), req->features());
        out.push_back(recsys::Candidate{
            id, 0.5f + 0.5f * static_cast<float>(std::tanh(dot)), 0});
      }
      std::stable_sort(
          out.begin(), out.end(),
          [](const recsys::Candidate& a, const recsys::Candidate& b) {
            return a.recall_score > b.recall_score;
          });
      out.resize(std::min(out.size(), limit));
    }
    ToProto(out, reply);
    return call.Finish();
  }

 private:
  ServerState* const state_;
};

class RankService final : public grpc_recsys::Rank::Service {
 public:
  explicit RankService(ServerState* state) : state_(state) {}
  ::grpc::Status Rank(::grpc::ServerContext* ctx,
                      const grpc_recsys::RankRequest* req,
                      grpc_recsys::CandidateList* reply) override {
    degrade::grpc::ServerCall call(ctx, state_->options);
    TellServedClass(ctx, call);
    if (!Work(*state_, call.deadline())) return call.Finish(TooLate("rank"));
    // The in-process demo's rule: default features say nothing about this
    // user, so their personal score weighs 0.2 instead of 0.8.
    const float w = req->default_features() ? 0.2f : 0.8f;
    std::vector<recsys::Candidate> items = FromProto(req->items());
    for (recsys::Candidate& c : items) {
      c.score =
          w * Dot(Embedding(c.id), req->features()) + (1 - w) * c.recall_score;
    }
    std::stable_sort(
        items.begin(), items.end(),
        [](const recsys::Candidate& a, const recsys::Candidate& b) {
          return a.score > b.score;
        });
    ToProto(items, reply);
    return call.Finish();
  }

 private:
  ServerState* const state_;
};

class RerankService final : public grpc_recsys::Rerank::Service {
 public:
  explicit RerankService(ServerState* state) : state_(state) {}
  ::grpc::Status Rerank(::grpc::ServerContext* ctx,
                        const grpc_recsys::RerankRequest* req,
                        grpc_recsys::CandidateList* reply) override {
    degrade::grpc::ServerCall call(ctx, state_->options);
    TellServedClass(ctx, call);
    if (!Work(*state_, call.deadline())) return call.Finish(TooLate("rerank"));
    // Diversity: drop duplicates, then interleave five categories (id % 5)
    // so that no category takes the first screen.
    std::vector<recsys::Candidate> unique =
        degrade::DedupOnly(FromProto(req->items()),
                           [](const recsys::Candidate& c) { return c.id; });
    std::array<std::vector<recsys::Candidate>, 5> by_category;
    for (const recsys::Candidate& c : unique) {
      by_category[static_cast<std::size_t>(((c.id % 5) + 5) % 5)].push_back(c);
    }
    std::vector<recsys::Candidate> out;
    for (std::size_t round = 0; out.size() < unique.size(); ++round) {
      for (const auto& bucket : by_category) {
        if (round < bucket.size()) out.push_back(bucket[round]);
      }
    }
    ToProto(out, reply);
    return call.Finish();
  }

 private:
  ServerState* const state_;
};

class ControlService final : public grpc_recsys::Control::Service {
 public:
  explicit ControlService(ServerState* state) : state_(state) {}
  ::grpc::Status SetLatency(::grpc::ServerContext* ctx,
                            const grpc_recsys::LatencyRequest* req,
                            grpc_recsys::LatencyReply* reply) override {
    // A remote change of the server's state: only the chaos driver's
    // certificate may make it, when the server runs TLS.
    if (state_->tls) {
      const degrade::PeerIdentity peer = degrade::grpc::PeerOf(*ctx);
      if (!peer.authenticated || std::find(peer.names.begin(), peer.names.end(),
                                           kChaosName) == peer.names.end()) {
        return ::grpc::Status(::grpc::StatusCode::PERMISSION_DENIED,
                              "Control/SetLatency: only the chaos driver's "
                              "certificate may change a server's latency");
      }
    }
    state_->added_latency_ms.store(req->added_latency_ms(),
                                   std::memory_order_relaxed);
    reply->set_role(state_->role);
    reply->set_added_latency_ms(req->added_latency_ms());
    return ::grpc::Status::OK;
  }

 private:
  ServerState* const state_;
};

int Usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s --role <%s> [--tls-dir DIR]\n", argv0,
               absl::StrJoin(kRoles, "|").c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string role;
  std::string tls_dir;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--role" && i + 1 < argc) {
      role = argv[++i];
    } else if (arg == "--tls-dir" && i + 1 < argc) {
      tls_dir = argv[++i];
    } else {
      std::fprintf(stderr, "grpc_recsys_server: unexpected argument '%s'\n",
                   argv[i]);
      return Usage(argv[0]);
    }
  }
  if (role.empty()) {
    std::fprintf(stderr, "grpc_recsys_server: --role is required\n");
    return Usage(argv[0]);
  }
  if (std::find(kRoles.begin(), kRoles.end(), role) == kRoles.end()) {
    std::fprintf(stderr,
                 "grpc_recsys_server: unknown role '%s' (the roles are %s)\n",
                 role.c_str(), absl::StrJoin(kRoles, ", ").c_str());
    return 2;
  }

  (void)Embedding(0);  // the table, before the first call's budget runs
  ServerState state;
  state.role = role;
  std::shared_ptr<::grpc::ServerCredentials> credentials =
      ::grpc::InsecureServerCredentials();
  if (!tls_dir.empty()) {
    const std::string ca = tls_certificates::ReadWholeFile(tls_dir + "/ca.crt");
    const std::string key =
        tls_certificates::ReadWholeFile(tls_dir + "/server.key");
    const std::string cert =
        tls_certificates::ReadWholeFile(tls_dir + "/server.crt");
    if (ca.empty() || key.empty() || cert.empty()) {
      std::fprintf(stderr,
                   "grpc_recsys_server: --tls-dir %s: ca.crt, server.crt and "
                   "server.key must be readable and non-empty\n",
                   tls_dir.c_str());
      return 2;
    }
    ::grpc::SslServerCredentialsOptions tls(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = ca;
    tls.pem_key_cert_pairs.push_back({key, cert});
    credentials = ::grpc::SslServerCredentials(tls);
    degrade::TrustPolicySettings trust;
    trust.peers = {{kFrontName, degrade::Criticality::kCriticalPlus}};
    state.options.trust = degrade::TrustPolicy::Create(trust).value();
    state.tls = true;
  }
  FeatureService features(&state);
  RecallService recall(&state);
  RankService rank(&state);
  RerankService rerank(&state);
  ControlService control(&state);

  ::grpc::ServerBuilder builder;
  int port = 0;
  // Loopback only, and a port of the kernel's choosing.
  builder.AddListeningPort("127.0.0.1:0", credentials, &port);
  if (role == "features") {
    builder.RegisterService(&features);
  } else if (role == "rank") {
    builder.RegisterService(&rank);
  } else if (role == "rerank") {
    builder.RegisterService(&rerank);
  } else {
    builder.RegisterService(&recall);
  }
  builder.RegisterService(&control);
  std::unique_ptr<::grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port <= 0) {
    std::fprintf(stderr,
                 "grpc_recsys_server --role %s: could not listen on "
                 "127.0.0.1 (gRPC's log above says why)\n",
                 role.c_str());
    return 1;
  }
  // The one line the parent waits for. Nothing else goes to stdout.
  std::printf("PORT %d\n", port);
  if (std::fflush(stdout) != 0) return 1;  // nobody is listening
  std::fprintf(stderr,
               "grpc_recsys_server --role %s: serving on 127.0.0.1:%d\n",
               role.c_str(), port);
  server->Wait();
  return 0;
}
