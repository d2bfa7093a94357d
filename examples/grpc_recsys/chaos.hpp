// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/grpc_recsys/chaos.hpp
// -----------------------------------------------------------------------------
//
// The driver of the multi-process demo, shared by the demo's main
// (grpc_recsys) and its test (tests/grpc/grpc_recsys_test.cpp), so that the
// test asserts on the very run the demo prints.
//
// RunChaos() starts the five servers (children.hpp), points the front
// (front.hpp) at them, and sends open-loop traffic (traffic.hpp): request i is
// due at t0 + i / qps whether or not earlier ones have come back, and its
// latency is measured from that due time, so a stalled front shows up as
// latency instead of as fewer requests (no coordinated omission). Meanwhile the
// chaos script below runs, one phase every `phase_length`, each starting
// with its action:
//
//   1 baseline                 nothing
//   2 recall_cf killed         SIGKILL the cf recall route
//   3 recall_cf restarted      a new process, on a new port
//   4 rank paused              SIGSTOP the ranker: a hung backend
//   5 rank resumed             SIGCONT
//   6 features slowed          +250 ms per call (Control/SetLatency)
//   7 features back to normal  +0 ms
//   8 everything killed        SIGKILL all five
//   9 everything restarted     five new processes
//
// Each phase's report is computed from the responses to the requests due
// in it: non-empty share, fully personalised share (nothing degraded),
// mean degradation depth, which stages degraded and why (the features
// stage with its rung: "features:open/stale-1m"), what the features ladder
// served (fresh, the user's own stale features, a segment's or the global
// mean) and its calls per second to the features server, the breakers'
// states at its end, p50/p99/max latency; and, for the phases that begin
// with a server's return (3, 5, 7, 9), the time from that return to the
// first fully personalised response.
//
// The bounds the test asserts, and why they hold on a loaded machine:
//   * PausedRankP99Bound: the rank budget + 50 ms. A request waits for the
//     paused ranker at most its budget (the gRPC deadline), and then serves
//     recall-score order; the other stages add a few ms.
//   * RecoveryBound: the breaker's open timeout plus one probe. When the
//     server returns, its breaker is open with at most `breaker_timeout`
//     left, or a probe sent to the dead server is still in flight and fails
//     within one stage budget and reopens it. After that the next request
//     (one request interval) probes, and is itself the first full response
//     when the probe succeeds; a request takes at most the sum of its
//     stage budgets. Plus 500 ms of scheduling slack for a loaded 2-core
//     machine running other tests.
//
// Every wait is bounded: a server's port line (start_timeout), its
// channel's connection (connect_timeout), control calls (2 s), a killed
// child's reaping (5 s), and each request by its stage budgets.

#ifndef DEGRADE_EXAMPLES_GRPC_RECSYS_CHAOS_HPP_
#define DEGRADE_EXAMPLES_GRPC_RECSYS_CHAOS_HPP_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "children.hpp"
#include "degrade/breaker_types.hpp"
#include "degrade/degrade_reason.hpp"
#include "front.hpp"
#include "recsys.grpc.pb.h"
#include "recsys/pipeline.hpp"
#include "traffic.hpp"
#include "trust.hpp"

namespace grpc_recsys {

struct ChaosOptions {
  // The grpc_recsys_server binary.
  std::string server_binary;
  // Requests per second, open loop.
  double qps = 200;
  absl::Duration phase_length = absl::Seconds(6);
  absl::Duration breaker_timeout = absl::Seconds(2);
  // What "features slowed" adds to each feature call (its budget is 50 ms).
  absl::Duration slow_latency = absl::Milliseconds(250);
  // Bounds on a server's "PORT <n>" line and on its channel's connection.
  absl::Duration start_timeout = absl::Seconds(10);
  absl::Duration connect_timeout = absl::Seconds(5);
  // Threads serving requests: 64 covers 200 requests/s with every stage
  // at its budget (0.3 s); main.cpp raises it for a higher --qps.
  int workers = 64;
  uint64_t seed = 42;
  // Mutual TLS between the front and the servers, which trust only the
  // front (trust.hpp); false runs plain TCP.
  bool tls = true;
};

// The test's run: 3 s phases (27 s of traffic) and a 1 s breaker timeout,
// longer than the scheduling slack in RecoveryBound(), so that a recovery
// that needed a second open period (a failed probe after the return)
// overruns the bound. A phase that begins with a return lasts at least
// until its bound has passed (RunChaos), however long the restart took.
inline ChaosOptions ShortOptions(std::string server_binary) {
  ChaosOptions o;
  o.server_binary = std::move(server_binary);
  o.phase_length = absl::Milliseconds(3000);
  o.breaker_timeout = absl::Seconds(1);
  return o;
}

enum class Action {
  kNone,
  kKill,
  kRestart,
  kPause,
  kResume,
  kSlow,
  kUnslow,
  kKillAll,
  kRestartAll
};

struct PhasePlan {
  const char* name;
  Action action;
  Backend target;  // for the single-server actions
};

inline const std::vector<PhasePlan>& ChaosScript() {
  static const std::vector<PhasePlan>* const script =
      new std::vector<PhasePlan>{
          {"baseline", Action::kNone, kFeatures},
          {"recall_cf killed (SIGKILL)", Action::kKill, kRecallCf},
          {"recall_cf restarted", Action::kRestart, kRecallCf},
          {"rank paused (SIGSTOP)", Action::kPause, kRank},
          {"rank resumed (SIGCONT)", Action::kResume, kRank},
          {"features slowed", Action::kSlow, kFeatures},
          {"features back to normal", Action::kUnslow, kFeatures},
          {"everything killed (SIGKILL)", Action::kKillAll, kFeatures},
          {"everything restarted", Action::kRestartAll, kFeatures},
      };
  return *script;
}

inline FrontOptions FrontOptionsFor(const ChaosOptions& o) {
  FrontOptions f;
  f.breaker_timeout = o.breaker_timeout;
  return f;
}

inline absl::Duration PausedRankP99Bound(const FrontOptions& f) {
  return f.budgets[kRank] + absl::Milliseconds(50);
}

inline constexpr absl::Duration kSchedulingSlack = absl::Milliseconds(500);

inline absl::Duration RecoveryBound(const ChaosOptions& o) {
  const FrontOptions f = FrontOptionsFor(o);
  absl::Duration longest = absl::ZeroDuration();
  absl::Duration request = absl::ZeroDuration();
  for (absl::Duration b : f.budgets) {
    longest = std::max(longest, b);
    request += b;
  }
  return o.breaker_timeout + longest + absl::Seconds(1.0 / o.qps) + request +
         kSchedulingSlack;
}

struct PhaseReport {
  std::string name;
  Action action = Action::kNone;
  std::string did;  // what the action did, e.g. "SIGKILL pid 1234"
  uint64_t requests = 0;
  uint64_t non_empty = 0;
  uint64_t full = 0;  // nothing degraded
  double mean_depth = 0;
  // "stage:reason" -> requests, in request order of the stages.
  std::vector<std::pair<std::string, uint64_t>> degraded;
  std::array<degrade::State, kBackends> breakers{};
  absl::Duration p50, p99, max;
  // For the phases that start with a server's return.
  bool server_returned = false;
  absl::Duration return_took;  // the restart/resume itself
  std::optional<absl::Duration> time_to_full;
  // From the return to the first response due after it in which no stage
  // of the returned server(s) degraded: what the returned server's breaker
  // decides. (Full personalisation can also wait for an unrelated breaker
  // that load tripped.)
  std::optional<absl::Duration> time_to_back;
  uint64_t degraded_after_full = 0;  // requests due after the first full one
  // What the features ladder served (fresh, the user's own stale features,
  // the segment's mean, the global mean), and the calls it made to the
  // features server per second during the phase.
  uint64_t features_fresh = 0;
  uint64_t features_stale = 0;
  uint64_t features_segment = 0;
  uint64_t features_global = 0;
  double feature_calls_per_second = 0;
  double non_empty_percent() const { return Percent(non_empty); }
  double full_percent() const { return Percent(full); }

 private:
  double Percent(uint64_t n) const {
    return requests == 0
               ? 0.0
               : 100.0 * static_cast<double>(n) / static_cast<double>(requests);
  }
};

struct ChaosReport {
  ChaosOptions options;
  std::vector<PhaseReport> phases;
  absl::Duration traffic_time;
  uint64_t malformed_trailers = 0;
  // With TLS: what the servers did with each kind of caller.
  std::optional<TrustReport> trust;
};

namespace detail {

// Where a stage sorts in a report: request order.
inline int StageOrder(absl::string_view entry) {
  static constexpr std::array<absl::string_view, 6> kOrder = {
      "features:", "recall:", "recall.cf:", "recall.vec:", "rank:", "rerank:"};
  for (std::size_t i = 0; i < kOrder.size(); ++i) {
    if (absl::StartsWith(entry, kOrder[i])) return static_cast<int>(i);
  }
  return static_cast<int>(kOrder.size());
}

inline absl::Duration Quantile(std::vector<absl::Duration>& v, double q) {
  if (v.empty()) return absl::ZeroDuration();
  std::sort(v.begin(), v.end());
  std::size_t rank =
      static_cast<std::size_t>(q * static_cast<double>(v.size()));
  return v[std::min(rank, v.size() - 1)];
}

// The trace entries a backend's failure leaves: "recall:" too for a recall
// route, since both routes down is the hot list's "recall" entry.
inline bool EntryIsFrom(absl::string_view entry, Backend b) {
  switch (b) {
    case kFeatures:
      return absl::StartsWith(entry, "features:");
    case kRecallCf:
      return absl::StartsWith(entry, "recall.cf:") ||
             absl::StartsWith(entry, "recall:");
    case kRecallVec:
      return absl::StartsWith(entry, "recall.vec:") ||
             absl::StartsWith(entry, "recall:");
    case kRank:
      return absl::StartsWith(entry, "rank:");
    case kRerank:
      return absl::StartsWith(entry, "rerank:");
    default:
      return true;
  }
}

// Fills `phase`'s figures from the samples due in [from, to). `back` are
// the backends that returned at `returned`.
inline void Summarise(const std::vector<Sample>& samples, absl::Time from,
                      absl::Time to, std::optional<absl::Time> returned,
                      const std::vector<Backend>& back, PhaseReport* phase) {
  std::map<std::pair<int, std::string>, uint64_t> degraded;
  std::vector<absl::Duration> latencies;
  uint64_t depth_sum = 0;
  std::optional<absl::Time> first_full_due;
  for (const Sample& s : samples) {
    if (s.due < from || s.due >= to) continue;
    ++phase->requests;
    if (s.non_empty) ++phase->non_empty;
    if (s.depth == 0) ++phase->full;
    depth_sum += s.depth;
    latencies.push_back(s.done - s.due);
    for (const std::string& e : s.entries) ++degraded[{StageOrder(e), e}];
    if (degrade::IsStaleTier(s.features)) {
      ++phase->features_stale;
    } else if (s.features == degrade::FallbackTier::kSegment) {
      ++phase->features_segment;
    } else if (s.features == degrade::FallbackTier::kGlobal) {
      ++phase->features_global;
    } else if (std::none_of(s.entries.begin(), s.entries.end(),
                            [](const std::string& e) {
                              return EntryIsFrom(e, kFeatures);
                            })) {
      ++phase->features_fresh;
    }
    if (returned.has_value() && s.due >= *returned && s.depth == 0) {
      const absl::Duration took = s.done - *returned;
      if (!phase->time_to_full.has_value() || took < *phase->time_to_full) {
        phase->time_to_full = took;
        first_full_due = s.due;
      }
    }
    if (returned.has_value() && s.due >= *returned && s.non_empty &&
        std::none_of(s.entries.begin(), s.entries.end(),
                     [&](const std::string& e) {
                       return std::any_of(back.begin(), back.end(),
                                          [&](Backend b) {
                                            return EntryIsFrom(e, b);
                                          });
                     })) {
      const absl::Duration took = s.done - *returned;
      if (!phase->time_to_back.has_value() || took < *phase->time_to_back) {
        phase->time_to_back = took;
      }
    }
  }
  if (first_full_due.has_value()) {
    for (const Sample& s : samples) {
      if (s.due > *first_full_due && s.due < to && s.depth != 0)
        ++phase->degraded_after_full;
    }
  }
  phase->mean_depth = phase->requests == 0
                          ? 0.0
                          : static_cast<double>(depth_sum) /
                                static_cast<double>(phase->requests);
  for (const auto& [key, n] : degraded)
    phase->degraded.emplace_back(key.second, n);
  phase->p50 = Quantile(latencies, 0.50);
  phase->p99 = Quantile(latencies, 0.99);
  phase->max = latencies.empty() ? absl::ZeroDuration() : latencies.back();
}

// Sets `role`'s added latency through its Control service.
inline absl::Status SetLatency(
    int port, absl::string_view role, absl::Duration latency,
    std::shared_ptr<::grpc::ChannelCredentials> credentials) {
  auto channel = DemoChannel(port, std::move(credentials));
  ::grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  LatencyRequest req;
  req.set_added_latency_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(latency)));
  LatencyReply reply;
  const ::grpc::Status s = Control::Stub(channel).SetLatency(&ctx, req, &reply);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("Control/SetLatency on ", role, ": ", s.error_message()));
  }
  return absl::OkStatus();
}

}  // namespace detail

// RunChaos(options, progress)
//
// The whole run, as the file comment describes; `progress` (may be null)
// gets a line per action as it happens. Returns the report, or the first
// error that stopped the run (a server that could not start or connect, or
// that died unexpectedly), naming the server and the cause. Every child is
// stopped before it returns, either way. REQUIRES: called from a thread
// that outlives the run (children.hpp: PR_SET_PDEATHSIG).
inline absl::StatusOr<ChaosReport> RunChaos(const ChaosOptions& options,
                                            std::FILE* progress = nullptr) {
  if (!(options.qps > 0) || options.phase_length <= absl::ZeroDuration() ||
      options.workers <= 0) {
    return absl::InvalidArgumentError(
        "qps, phase length and workers must be positive");
  }
  const auto say = [&](const std::string& line) {
    if (progress != nullptr) std::fprintf(progress, "%s\n", line.c_str());
  };
  // Destroyed in reverse: the traffic stops, then the front goes, then
  // every child is killed.
  Children children(options.start_timeout);
  std::optional<DemoTls> tls;
  // The keys go with the run, whether or not the logs are kept.
  struct RemoveOnExit {
    std::string dir;
    ~RemoveOnExit() {
      std::error_code ignored;
      if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
    }
  } keys;
  if (options.tls) {
    absl::StatusOr<DemoTls> made = MakeDemoTls(children.log_dir());
    keys.dir = children.log_dir() + "/tls";
    if (!made.ok()) return made.status();
    tls = *std::move(made);
  }
  // The chaos driver's own certificate: the only one the servers let
  // change their latency.
  const auto control = [&] {
    return tls.has_value() ? ClientCredentials(&*tls, tls->chaos)
                           : ::grpc::InsecureChannelCredentials();
  };
  FrontOptions front_options = FrontOptionsFor(options);
  if (tls.has_value()) {
    front_options.credentials = ClientCredentials(&*tls, tls->front);
  }
  Front front(front_options);
  std::array<int, kBackends> ports{};
  std::array<pid_t, kBackends> pids{};

  // An error stops the run; the servers' logs are kept for it.
  const auto failed = [&](absl::string_view phase, const absl::Status& s) {
    children.KeepLogs();
    return absl::Status(s.code(),
                        absl::StrCat(phase, ": ", s.message(),
                                     " (the servers' logs are kept in ",
                                     children.log_dir(), ")"));
  };
  const auto start = [&](Backend b) -> absl::Status {
    const std::string role(kRoles[b]);
    std::vector<std::string> args = {"--role", role};
    if (tls.has_value()) {
      args.push_back("--tls-dir");
      args.push_back(tls->dir);
    }
    absl::StatusOr<Child> c = children.Start(role, options.server_binary, args);
    if (!c.ok()) return c.status();
    ports[b] = c->port;
    pids[b] = c->pid;
    return front.Connect(b, c->port, options.connect_timeout);
  };
  for (std::size_t b = 0; b < kBackends; ++b) {
    if (absl::Status s = start(static_cast<Backend>(b)); !s.ok()) {
      // A binary that is not there has no log to keep.
      if (absl::IsNotFound(s)) return s;
      return failed("starting the servers", s);
    }
    say(absl::StrCat("started ", kRoles[b], ": pid ", pids[b],
                     ", 127.0.0.1:", ports[b]));
  }

  detail::Traffic traffic(&front, options.qps, options.workers, options.seed);
  const std::vector<PhasePlan>& script = ChaosScript();
  std::vector<PhaseReport> phases(script.size());
  std::vector<absl::Time> starts(script.size());
  std::vector<std::optional<absl::Time>> returns(script.size());
  std::vector<uint64_t> feature_calls(script.size() + 1);
  const absl::Time t0 = absl::Now();
  traffic.Start();
  for (std::size_t k = 0; k < script.size(); ++k) {
    const PhasePlan& plan = script[k];
    PhaseReport& phase = phases[k];
    phase.name = plan.name;
    phase.action = plan.action;
    starts[k] = absl::Now();
    feature_calls[k] = front.ladder_stats().store_calls;
    const std::string role(kRoles[plan.target]);
    absl::Status s;
    switch (plan.action) {
      case Action::kNone:
        phase.did = "nothing";
        break;
      case Action::kKill:
        phase.did =
            absl::StrCat("SIGKILL ", role, " (pid ", pids[plan.target], ")");
        s = children.Kill(role);
        break;
      case Action::kPause:
        phase.did =
            absl::StrCat("SIGSTOP ", role, " (pid ", pids[plan.target], ")");
        s = children.Pause(role);
        break;
      case Action::kResume:
        phase.did =
            absl::StrCat("SIGCONT ", role, " (pid ", pids[plan.target], ")");
        s = children.Resume(role);
        break;
      case Action::kSlow:
        phase.did =
            absl::StrCat(role, " +", absl::FormatDuration(options.slow_latency),
                         " per call (Control/SetLatency)");
        s = detail::SetLatency(ports[plan.target], role, options.slow_latency,
                               control());
        break;
      case Action::kUnslow:
        phase.did = absl::StrCat(role, " +0 ms per call (Control/SetLatency)");
        s = detail::SetLatency(ports[plan.target], role, absl::ZeroDuration(),
                               control());
        break;
      case Action::kRestart:
        s = start(plan.target);
        phase.did =
            absl::StrCat("started ", role, " again: pid ", pids[plan.target],
                         ", 127.0.0.1:", ports[plan.target]);
        break;
      case Action::kKillAll:
        phase.did = "SIGKILL all five servers";
        children.KillAll();
        break;
      case Action::kRestartAll:
        phase.did = "started all five again, on new ports";
        for (std::size_t b = 0; b < kBackends && s.ok(); ++b)
          s = start(static_cast<Backend>(b));
        break;
    }
    if (!s.ok()) return failed(absl::StrCat("phase '", plan.name, "'"), s);
    if (plan.action == Action::kRestart || plan.action == Action::kResume ||
        plan.action == Action::kUnslow || plan.action == Action::kRestartAll) {
      returns[k] = absl::Now();
      phase.server_returned = true;
      phase.return_took = *returns[k] - starts[k];
    }
    say(absl::StrCat("[",
                     absl::FormatDuration(
                         absl::Trunc(starts[k] - t0, absl::Milliseconds(1))),
                     "] phase ", k + 1, ": ", plan.name, ": ", phase.did));
    // A phase lasts its length from its start, and one that began with a
    // return at least until its recovery bound (and a request more) has
    // passed, so a slow restart cannot leave the bound no room to be met.
    absl::Time phase_end = starts[k] + options.phase_length;
    if (returns[k].has_value()) {
      phase_end = std::max(phase_end, *returns[k] + RecoveryBound(options) +
                                          absl::Seconds(2.0 / options.qps));
    }
    absl::SleepFor(std::max(absl::ZeroDuration(), phase_end - absl::Now()));
    for (std::size_t b = 0; b < kBackends; ++b) {
      phase.breakers[b] = front.BreakerState(static_cast<Backend>(b));
    }
    if (absl::Status alive = children.CheckAlive(); !alive.ok()) {
      return failed(absl::StrCat("phase '", plan.name, "'"), alive);
    }
  }
  const absl::Time end = absl::Now();
  feature_calls[script.size()] = front.ladder_stats().store_calls;
  traffic.Stop();

  ChaosReport report;
  report.options = options;
  report.traffic_time = end - t0;
  report.malformed_trailers = front.malformed_trailers();
  if (tls.has_value()) report.trust = CheckTrust(*tls, ports[kFeatures]);
  const std::vector<detail::Sample> samples = traffic.TakeSamples();
  for (std::size_t k = 0; k < phases.size(); ++k) {
    const absl::Time to = k + 1 < phases.size() ? starts[k + 1] : end;
    std::vector<Backend> back;
    if (script[k].action == Action::kRestartAll) {
      for (std::size_t b = 0; b < kBackends; ++b) {
        back.push_back(static_cast<Backend>(b));
      }
    } else {
      back.push_back(script[k].target);
    }
    detail::Summarise(samples, starts[k], to, returns[k], back, &phases[k]);
    phases[k].feature_calls_per_second =
        static_cast<double>(feature_calls[k + 1] - feature_calls[k]) /
        absl::ToDoubleSeconds(to - starts[k]);
  }
  report.phases = std::move(phases);
  return report;
}

// PrintReport(out, report)
//
// Each phase's figures, then a one-line-per-phase table.
inline void PrintReport(std::FILE* out, const ChaosReport& r) {
  const auto ms = [](absl::Duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", absl::ToDoubleMilliseconds(d));
    return std::string(buf);
  };
  for (std::size_t k = 0; k < r.phases.size(); ++k) {
    const PhaseReport& p = r.phases[k];
    std::fprintf(out, "\n== phase %zu: %s ==\n", k + 1, p.name.c_str());
    std::fprintf(out, "  %-22s %s\n", "action", p.did.c_str());
    std::fprintf(out, "  %-22s %llu\n", "requests",
                 static_cast<unsigned long long>(p.requests));
    std::fprintf(out, "  %-22s %.1f%%\n", "non-empty", p.non_empty_percent());
    std::fprintf(out, "  %-22s %.1f%%\n", "fully personalised",
                 p.full_percent());
    std::fprintf(out, "  %-22s %.2f\n", "mean depth", p.mean_depth);
    std::vector<std::string> degraded;
    for (const auto& [what, n] : p.degraded)
      degraded.push_back(absl::StrCat(what, " ", n));
    std::fprintf(
        out, "  %-22s %s\n", "degraded (stage:why)",
        degraded.empty() ? "-" : absl::StrJoin(degraded, ", ").c_str());
    std::fprintf(
        out, "  %-22s fresh %llu, stale %llu, segment %llu, global %llu\n",
        "features by rung", static_cast<unsigned long long>(p.features_fresh),
        static_cast<unsigned long long>(p.features_stale),
        static_cast<unsigned long long>(p.features_segment),
        static_cast<unsigned long long>(p.features_global));
    std::fprintf(out, "  %-22s %.1f a second\n", "features server calls",
                 p.feature_calls_per_second);
    std::vector<std::string> states;
    for (std::size_t b = 0; b < kBackends; ++b) {
      states.push_back(
          absl::StrCat(kTraceNames[b], "=", degrade::StateName(p.breakers[b])));
    }
    std::fprintf(out, "  %-22s %s\n", "breakers at end",
                 absl::StrJoin(states, " ").c_str());
    std::fprintf(out, "  %-22s p50 %s, p99 %s, max %s\n", "latency",
                 ms(p.p50).c_str(), ms(p.p99).c_str(), ms(p.max).c_str());
    if (p.server_returned) {
      std::fprintf(out, "  %-22s %s after the return (bound %s)\n",
                   "returned server used",
                   p.time_to_back.has_value() ? ms(*p.time_to_back).c_str()
                                              : "never",
                   ms(RecoveryBound(r.options)).c_str());
      std::fprintf(
          out, "  %-22s %s after the return (the return took %s; bound %s)%s\n",
          "back to full",
          p.time_to_full.has_value() ? ms(*p.time_to_full).c_str() : "never",
          ms(p.return_took).c_str(), ms(RecoveryBound(r.options)).c_str(),
          p.degraded_after_full == 0
              ? ""
              : absl::StrCat("; ", p.degraded_after_full, " degraded after")
                    .c_str());
    }
  }
  if (r.trust.has_value()) PrintTrust(out, *r.trust);
  std::fprintf(out,
               "\n| phase | requests | non-empty | full | mean depth | p50 | "
               "p99 | back to full |\n");
  std::fprintf(out, "|---|---|---|---|---|---|---|---|\n");
  for (std::size_t k = 0; k < r.phases.size(); ++k) {
    const PhaseReport& p = r.phases[k];
    std::fprintf(
        out, "| %zu %s | %llu | %.1f%% | %.1f%% | %.2f | %s | %s | %s |\n",
        k + 1, p.name.c_str(), static_cast<unsigned long long>(p.requests),
        p.non_empty_percent(), p.full_percent(), p.mean_depth,
        ms(p.p50).c_str(), ms(p.p99).c_str(),
        !p.server_returned           ? "-"
        : p.time_to_full.has_value() ? ms(*p.time_to_full).c_str()
                                     : "never");
  }
}

}  // namespace grpc_recsys

#endif  // DEGRADE_EXAMPLES_GRPC_RECSYS_CHAOS_HPP_
