// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// metrics_server: the recommendation demo's pipeline (recsys/pipeline.hpp)
// running its scripted outage in a loop, with its metrics served over HTTP
// for a real Prometheus to scrape.
//
//   GET /metrics       Prometheus text exposition 0.0.4 (RenderPrometheus)
//   GET /metrics.json  the same snapshot as JSON (RenderJson)
//   GET /healthz       "ok"
//   GET /              what is running, and these links
//
// A driver thread sends requests through the pipeline while HTTP worker
// threads render the metrics: the registry is the only thing they share,
// and it is thread-safe. The pipeline runs on a FakeClock that follows real
// time scaled so that each 20 s phase of the outage script lasts
// --phase-seconds. The driver sends at most --rate requests per second; like
// the demo's single client it waits for each request's simulated latency
// before the next, so at long phases it sends fewer.
//
// Besides the pipeline's breakers, hot list and stage metrics, the server
// runs a DegradationManager "recsys" fed with each request's degradation
// depth (the signal `degraded_stages`): level 1 when a request had a stage
// on its fallback, 2 at two stages, 3 at three or more; it steps down one
// level after 5 simulated seconds below a level's threshold.
//
// In front of the pipeline each request (its class from its user: the four
// criticalities in turn) passes an AdmissionController following that
// manager, whose level 3 admits nothing below CRITICAL, then takes a
// ConcurrencyLimiter permit and a trip through an AdmissionQueue, so the
// degrade_admission_*, degrade_limiter_* and degrade_queue_* series are
// scraped from real components too. A RetryBudget "front" is asked for a
// retry of every degraded request (the retry itself is not sent), for the
// degrade_retry_budget_* series. Every request also asks a RateLimiter
// "feature_store" (40 permits a simulated second) and a KeyedRateLimiter
// "per_user" (one a second per user, 64 users) for a permit; only their
// decisions are real (a refused request is still served), for the
// degrade_rate_limit_* and degrade_keyed_rate_limit_* series. Every
// admitted request also asks a last-known-good tier (a Ladder with its
// cache, coalescer, recovery ramp and segment defaults, all named
// "user_features"; metrics_server_extras.hpp) for its user's features from
// a simulated store that is down 3 s in every 10 s, for the
// degrade_ladder_*, degrade_stale_age_seconds, degrade_cache_*,
// degrade_coalesce_*, degrade_recovery_ramp_* and degrade_segment_defaults_*
// series.
//
// Every pass of the script runs on a fresh pipeline with a registry of its
// own, which /metrics serves from when the pass is ready (a scrape never
// sees a half-built pass), so counters restart with each pass, as after a
// process restart.
//
// `--hold-phase NAME` runs only that phase, pass after pass, each starting 1
// simulated second into the phase, so that its state has settled when it is
// first scraped. For example, with --hold-phase "recall down":
//
//   degrade_breaker_state{breaker="recall"}  2 (open; 1 for the instant
//                                             between the open timeout and
//                                             the next request's probe)
//   degrade_breaker_state{breaker="features"|"rank"|"rerank"}  0
//   degrade_level{manager="recsys"}          1
//
// and with "everything down" every breaker is 2 (or 1) and the level is 3.
//
// Usage:
//   metrics_server [--port N] [--bind ADDR] [--phase-seconds S] [--rate R]
//                  [--hold-phase NAME] [--duration-seconds S] [--quiet]
//                  [--control-file PATH] [--etcd HOST:PORT]
//                  [--nvml PATH] [--grpc]
//
//   --port N              0 picks a free port (default 9464)
//   --bind ADDR           default 127.0.0.1
//   --phase-seconds S     real seconds per phase of the script (default 10)
//   --rate R              at most R requests per second (default 200)
//   --hold-phase NAME     a phase name ("recall down", or recall_down) or
//                         index (0-6); default: the whole script, looping
//   --duration-seconds S  stop after S seconds; 0 (default) runs until
//                         SIGINT or SIGTERM
//   --quiet               no event log lines on stderr
//   --control-file PATH   follow a control document (fleet-control.md) in
//                         PATH with a ControlFileWatcher; absent, nothing
//   --etcd HOST:PORT      follow the prefix /degrade/control/ of that etcd
//                         with an etcd watcher feeding the FleetControl
//                         (only when built with degrade::etcd)
//   --nvml PATH           each pass loads a GPU source ("gpu0") from the
//                         NVML library PATH and reads it every 50th
//                         request, for the degrade_gpu_source_* series; a
//                         library that does not load is an error at start
//   --grpc                each pass runs a gRPC server on 127.0.0.1 and
//                         sends one call per request through a channel to
//                         it, for degrade_grpc_client_* and
//                         degrade_grpc_server_* (only when built with
//                         degrade::grpc)
//
// Every pass has a FleetControl over its manager ("recsys"), so the
// degrade_fleet_* series are always there; the watchers add
// degrade_file_watcher_* and degrade_etcd_watcher_* (an etcd nobody
// listens at shows the outage state).
//
// With --grpc (metrics_server_extras.hpp) the server side of each call is
// a degrade::grpc::ServerCall with an AdmissionController "features"
// following the pass's manager, so at level 3 it sheds the sheddable
// classes as the front door does; the calls
// carry the request's class, and every 20th a malformed one as well, which
// the server counts. With --nvml the source reads the library named, such
// as the test suite's fake NVML (tests/support/fake_nvml.cpp).
//
// Prints `listening on http://ADDR:PORT/metrics` on stdout once it accepts
// connections. SIGINT and SIGTERM stop it cleanly (exit status 0).

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/admission.hpp"
#include "degrade/admission_queue.hpp"
#include "degrade/clock.hpp"
#include "degrade/concurrency_limiter.hpp"
#include "degrade/control_watcher.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/event_log.hpp"
#include "degrade/fleet_control.hpp"
#include "degrade/keyed_rate_limit.hpp"
#include "degrade/metrics.hpp"
#include "degrade/rate_limit.hpp"
#include "degrade/request_class.hpp"
#include "degrade/retry_budget.hpp"
#if DEGRADE_METRICS_SERVER_ETCD
#include "degrade/etcd/watcher.hpp"
#endif
#include "httplib.h"
#include "metrics_server_extras.hpp"
#include "recsys/pipeline.hpp"

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr char kPrometheusContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

// How far into a held phase each pass starts (its warm-up, served before the
// pass is published).
constexpr absl::Duration kHoldWarmUp = absl::Seconds(1);

struct Options {
  std::string bind = "127.0.0.1";
  int port = 9464;
  double phase_seconds = 10;
  double rate = 200;
  std::optional<std::size_t> hold_phase;
  double duration_seconds = 0;
  bool quiet = false;
  std::string control_file;  // empty: none
  std::string etcd;          // empty: none
  std::string nvml;          // empty: no GPU source
  bool grpc = false;
};

// "Re-ranking throwing" -> "re_ranking_throwing".
std::string Slug(absl::string_view name) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::optional<std::size_t> FindPhase(absl::string_view name) {
  const std::vector<recsys::Phase>& script = recsys::OutageScript();
  std::size_t index = 0;
  if (absl::SimpleAtoi(name, &index)) {
    if (index < script.size()) return index;
    return std::nullopt;
  }
  for (std::size_t i = 0; i < script.size(); ++i) {
    if (Slug(script[i].name) == Slug(name)) return i;
  }
  return std::nullopt;
}

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--port N] [--bind ADDR] [--phase-seconds S] "
               "[--rate R] [--hold-phase NAME] [--duration-seconds S] "
               "[--quiet] [--control-file PATH] [--etcd HOST:PORT] "
               "[--nvml PATH] [--grpc]\nphases:",
               argv0);
  const std::vector<recsys::Phase>& script = recsys::OutageScript();
  for (std::size_t i = 0; i < script.size(); ++i) {
    std::fprintf(stderr, " %zu=\"%s\"", i, script[i].name.c_str());
  }
  std::fprintf(stderr, "\n");
}

// Parses argv into `o`; prints what is wrong and returns false on error.
bool ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    bool has_value = false;
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_value = true;
    }
    if (flag == "--quiet" && !has_value) {
      o->quiet = true;
      continue;
    }
    if (flag == "--grpc" && !has_value) {
#if !DEGRADE_METRICS_SERVER_GRPC
      std::fprintf(stderr, "--grpc: built without degrade::grpc\n");
      return false;
#endif
      o->grpc = true;
      continue;
    }
    if (flag == "-h" || flag == "--help") return false;
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", flag.c_str());
        return false;
      }
      value = argv[++i];
    }
    bool ok = true;
    if (flag == "--port") {
      ok =
          absl::SimpleAtoi(value, &o->port) && o->port >= 0 && o->port <= 65535;
    } else if (flag == "--bind") {
      o->bind = value;
      ok = !value.empty();
    } else if (flag == "--phase-seconds") {
      ok = absl::SimpleAtod(value, &o->phase_seconds) &&
           o->phase_seconds >= 0.01 && o->phase_seconds <= 86400;
    } else if (flag == "--rate") {
      ok = absl::SimpleAtod(value, &o->rate) && o->rate >= 0.1 &&
           o->rate <= 100000;
    } else if (flag == "--hold-phase") {
      o->hold_phase = FindPhase(value);
      ok = o->hold_phase.has_value();
    } else if (flag == "--control-file") {
      o->control_file = value;
      ok = !value.empty();
    } else if (flag == "--etcd") {
      o->etcd = value;
#if !DEGRADE_METRICS_SERVER_ETCD
      std::fprintf(stderr, "--etcd: built without degrade::etcd\n");
      return false;
#endif
    } else if (flag == "--nvml") {
      o->nvml = value;
      ok = !value.empty();
    } else if (flag == "--duration-seconds") {
      ok = absl::SimpleAtod(value, &o->duration_seconds) &&
           o->duration_seconds >= 0 && o->duration_seconds <= 1e7;
    } else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad value for %s: '%s'\n", flag.c_str(),
                   value.c_str());
      return false;
    }
  }
  return true;
}

// The manager's levels: how many stages of one request served a fallback.
degrade::DegradationConfig ManagerConfig() {
  degrade::DegradationConfig c;
  c.name = "recsys";
  c.hold = absl::Seconds(5);
  c.critical = {"recommendations"};
  const std::string signal = "degraded_stages";
  degrade::LevelSpec l1;
  l1.name = "level1";
  l1.enter = {{signal, 1}};
  l1.recover = {{signal, 0.5}};
  l1.disable = {"ab_tagging", "debug_log"};
  degrade::LevelSpec l2;
  l2.name = "level2";
  l2.enter = {{signal, 2}};
  l2.recover = {{signal, 1.5}};
  l2.disable = {"explanations"};
  degrade::LevelSpec l3;
  l3.name = "level3";
  l3.enter = {{signal, 3}};
  l3.recover = {{signal, 2.5}};
  l3.disable = {std::string(degrade::kAllNonCritical)};
  // Level 3 also refuses the sheddable classes at the door (the overload
  // trio below), so the admission series move with the outage.
  l3.admit = degrade::AdmitFloor{degrade::Criticality::kSheddablePlus, 0};
  c.levels = {l1, l2, l3};
  return c;
}

// One pass of the script (or of the held phase): its own simulated clock,
// registry, manager and pipeline. Members are destroyed in reverse order:
// the components unregister (waiting for a scrape collecting them) before
// the clock they read goes away.
struct Pass {
  Pass(uint64_t number, const Options& o) : number(number) {
    const bool quiet = o.quiet;
    degrade::EventLogOptions log;
    if (quiet) log.max_lines_per_key = 0;
    registry = std::make_shared<degrade::MetricsRegistry>(std::move(log));
    degrade::ManagerOptions mo;
    mo.name = "recsys";
    mo.clock = &clock;
    mo.metrics = registry.get();
    manager = std::make_unique<degrade::DegradationManager>(std::move(mo));
    const absl::Status s = manager->Reload(ManagerConfig());
    if (!s.ok()) {
      std::fprintf(stderr, "metrics_server: %s\n", s.ToString().c_str());
      std::abort();
    }
    pipeline =
        std::make_unique<recsys::Pipeline>(&clock, registry.get(), "recsys");

    degrade::AdmissionOptions ao;
    ao.name = "front";
    ao.manager = manager.get();
    ao.clock = &clock;
    ao.metrics = registry.get();
    admission = Must(degrade::AdmissionController::Create(ao));
    degrade::LimiterSettings ls;
    ls.name = "front";
    ls.min_limit = 4;
    ls.max_limit = 64;
    ls.metrics = registry.get();
    limiter = Must(degrade::ConcurrencyLimiter::Create(ls));
    degrade::QueueSettings qs;
    qs.name = "front";
    qs.capacity = 64;
    qs.clock = &clock;
    qs.metrics = registry.get();
    queue = Must(degrade::AdmissionQueue<uint64_t>::Create(qs));
    degrade::RetryBudgetSettings rs;
    rs.name = "front";
    rs.clock = &clock;
    rs.metrics = registry.get();
    budget = Must(degrade::RetryBudget::Create(rs));
    degrade::RateLimitSettings rl;
    rl.name = "feature_store";
    rl.rate = 40;
    rl.burst = 10;
    rl.clock = &clock;
    rl.metrics = registry.get();
    rate_limit = Must(degrade::RateLimiter::Create(rl));
    degrade::KeyedRateLimitSettings kl;
    kl.name = "per_user";
    kl.rate = 1;
    kl.burst = 2;
    kl.max_keys = 256;
    kl.clock = &clock;
    kl.metrics = registry.get();
    per_user = Must(degrade::KeyedRateLimiter<uint64_t>::Create(kl));
    last_good =
        Must(metrics_server::LastGoodTier::Start(&clock, registry.get()));
    StartFleet(o);
    if (!o.nvml.empty()) {
      gpu = Must(metrics_server::LoadGpu(o.nvml, registry.get()));
    }
#if DEGRADE_METRICS_SERVER_GRPC
    if (o.grpc) {
      grpc = Must(metrics_server::GrpcRoundTrip::Start(manager.get(), &clock,
                                                       registry.get()));
    }
#endif
  }

  // The fleet side: a FleetControl over the manager, fed by the control
  // file and the etcd prefix the options name. They use the real clock:
  // control documents carry real end times.
  void StartFleet(const Options& o) {
    degrade::FleetControlOptions fo;
    fo.name = "recsys";
    fo.metrics = registry.get();
    if (o.quiet) fo.log_sink = [](absl::string_view) {};
    fleet = std::make_unique<degrade::FleetControl>(std::move(fo));
    (void)fleet->AddManager(manager.get());
    if (!o.control_file.empty()) {
      degrade::ControlFileWatcherOptions co;
      co.name = "control";
      co.metrics = registry.get();
      control_file = std::make_unique<degrade::ControlFileWatcher>(
          o.control_file, fleet.get(), std::move(co));
      (void)control_file->PollOnce();  // in force before the first scrape
      (void)control_file->Start(absl::Seconds(1));
    }
#if DEGRADE_METRICS_SERVER_ETCD
    if (!o.etcd.empty()) {
      degrade::etcd::EtcdWatcherOptions eo;
      eo.endpoint = o.etcd;
      eo.prefix = "/degrade/control/";
      eo.metrics = registry.get();
      degrade::FleetControl* f = fleet.get();
      eo.on_put = [f](const std::string& key, const std::string& value,
                      int64_t) { (void)f->Apply(value, key); };
      eo.on_delete = [f](const std::string& key, int64_t) {
        (void)f->Lift(key);
      };
      etcd = std::make_unique<degrade::etcd::EtcdPrefixWatcher>(std::move(eo));
      (void)etcd->Start();  // refused only for bad options
    }
#endif
  }

  template <typename T>
  static T Must(absl::StatusOr<T> v) {
    if (!v.ok()) {
      std::fprintf(stderr, "metrics_server: %s\n", v.status().ToString().c_str());
      std::abort();
    }
    return *std::move(v);
  }

  const uint64_t number;
  degrade::FakeClock clock;
  std::shared_ptr<degrade::MetricsRegistry> registry;
  std::unique_ptr<degrade::DegradationManager> manager;
  std::unique_ptr<recsys::Pipeline> pipeline;
  // The overload-control trio in front of the pipeline: every request has a
  // class (from its user), passes the manager's floor, holds a permit and
  // goes through the queue, so their series are real in a scrape.
  std::unique_ptr<degrade::AdmissionController> admission;
  std::unique_ptr<degrade::ConcurrencyLimiter> limiter;
  std::unique_ptr<degrade::AdmissionQueue<uint64_t>> queue;
  // The retry budget a front would consult before sending a degraded
  // request again: every request deposits, every degraded one asks for a
  // retry. Only the budget's decision is real (no retry is sent); its
  // degrade_retry_budget_* series move with the outage, refusals piling up
  // once more than a fifth of requests degrade for longer than the floor
  // covers.
  std::unique_ptr<degrade::RetryBudget> budget;
  // Rate limits every request asks; only their decisions are real.
  std::unique_ptr<degrade::RateLimiter> rate_limit;
  std::unique_ptr<degrade::KeyedRateLimiter<uint64_t>> per_user;
  // The last-known-good tier over a simulated user feature store
  // (metrics_server_extras.hpp): every request asks it for the user's
  // features; its store has outages of its own.
  std::unique_ptr<metrics_server::LastGoodTier> last_good;
  // Declared after the manager they control, so destroyed before it; the
  // watchers after the FleetControl they feed.
  std::unique_ptr<degrade::FleetControl> fleet;
  std::unique_ptr<degrade::ControlFileWatcher> control_file;
#if DEGRADE_METRICS_SERVER_ETCD
  std::unique_ptr<degrade::etcd::EtcdPrefixWatcher> etcd;
#endif
  // --nvml and --grpc (metrics_server_extras.hpp). Last, so destroyed
  // first: the gRPC server shuts down before the manager and clock its
  // handlers use.
  std::unique_ptr<degrade::NvmlGpuSource> gpu;
#if DEGRADE_METRICS_SERVER_GRPC
  std::unique_ptr<metrics_server::GrpcRoundTrip> grpc;
#endif
  std::vector<uint64_t> popped;
  // Simulated time: where real time starts being mapped, and the end.
  absl::Time sim_start;
  absl::Time sim_end;
  SteadyClock::time_point real_start;
};

// Sends requests through the current pass on its own thread and publishes
// the registry of the pass to scrape.
class Driver {
 public:
  explicit Driver(const Options& o)
      : options_(o),
        tick_(std::chrono::duration_cast<SteadyClock::duration>(
            std::chrono::duration<double>(1.0 / o.rate))),
        sim_per_real_(absl::FDivDuration(recsys::kPhaseLength,
                                         absl::Seconds(o.phase_seconds))) {}

  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;
  ~Driver() { Stop(); }

  // Starts and publishes the first pass, then the driver thread.
  void Start() {
    pass_ = NewPass();
    thread_ = std::thread([this] { Loop(); });
  }

  void Stop() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }

  // The registry of the pass being served. Never null after Start().
  std::shared_ptr<degrade::MetricsRegistry> registry() const {
    std::lock_guard<std::mutex> lock(mu_);
    return published_;
  }

  // One line: the pass, the phase and the requests served so far.
  std::string Status() const {
    const std::size_t phase = phase_.load(std::memory_order_relaxed);
    return absl::StrCat(
        "pass ", passes_.load(std::memory_order_relaxed), ", phase ", phase,
        " \"", recsys::OutageScript()[phase].name, "\"",
        options_.hold_phase ? " (held)" : "", ", ",
        requests_.load(std::memory_order_relaxed), " requests served");
  }

 private:
  std::unique_ptr<Pass> NewPass() {
    auto pass = std::make_unique<Pass>(
        passes_.load(std::memory_order_relaxed) + 1, options_);
    const absl::Time t0 = pass->pipeline->ScriptStart();
    if (options_.hold_phase) {
      const int64_t p = static_cast<int64_t>(*options_.hold_phase);
      const absl::Time start = t0 + recsys::kPhaseLength * p;
      pass->sim_end = start + recsys::kPhaseLength;
      // The warm-up: the demo's request schedule, at full speed.
      for (absl::Time at = start; at < start + kHoldWarmUp;
           at = std::max(at + recsys::kRequestInterval, pass->clock.Now())) {
        if (pass->clock.Now() < at) pass->clock.Set(at);
        ServeOne(*pass);
      }
      pass->sim_start = pass->clock.Now();
    } else {
      pass->sim_start = t0;
      pass->sim_end = pass->pipeline->ScriptEnd();
    }
    pass->real_start = SteadyClock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      published_ = pass->registry;
    }
    passes_.store(pass->number, std::memory_order_relaxed);
    return pass;
  }

  void ServeOne(Pass& pass) {
    const uint64_t user = recsys::Mix(42 ^ recsys::Mix(user_seq_++)) % 100000;
    const degrade::RequestClass rc{
        static_cast<degrade::Criticality>(user % degrade::kNumCriticalities),
        static_cast<uint8_t>(user % degrade::kNumCohorts)};
    // The gRPC call goes before the front door, so that its server decides
    // every class (at level 3 it sheds what the door sheds).
#if DEGRADE_METRICS_SERVER_GRPC
    if (pass.grpc != nullptr) pass.grpc->Send(user, rc);
#endif
    const uint64_t served = requests_.load(std::memory_order_relaxed);
    if (pass.gpu != nullptr && served % metrics_server::kGpuReadEvery == 0) {
      (void)pass.gpu->Utilization();  // a failed read is counted by the source
    }
    if (!pass.admission->Admitted(rc)) {
      requests_.fetch_add(1, std::memory_order_relaxed);
      return;  // shed at the door: the pipeline never sees it
    }
    std::optional<degrade::LimiterPermit> permit = pass.limiter->TryAcquire(rc);
    uint64_t item = user;
    if (permit.has_value() &&
        pass.queue->Push(std::move(item), absl::InfiniteFuture(), rc).ok()) {
      pass.popped.clear();
      pass.queue->PopBatch(&pass.popped, 1);
    }
    const recsys::Response r = pass.pipeline->Serve(user);
    if (permit.has_value()) permit->Success(r.latency);
    pass.budget->Deposit();
    if (r.result.trace().depth() > 0) (void)pass.budget->TryWithdraw();
    (void)pass.rate_limit->TryAcquire();
    (void)pass.per_user->TryAcquire(user % 64);
    pass.last_good->Serve(user);
    // A signal the config uses and a finite value: cannot be rejected.
    (void)pass.manager->Observe("degraded_stages",
                                static_cast<double>(r.result.trace().depth()));
    absl::Duration rest;
    const int64_t phase =
        absl::IDivDuration(pass.clock.Now() - pass.pipeline->ScriptStart(),
                           recsys::kPhaseLength, &rest);
    const std::size_t last = recsys::OutageScript().size() - 1;
    phase_.store(
        std::min(static_cast<std::size_t>(std::max<int64_t>(phase, 0)), last),
        std::memory_order_relaxed);
    requests_.fetch_add(1, std::memory_order_relaxed);
  }

  void Loop() {
    SteadyClock::time_point next = SteadyClock::now();
    while (!stop_.load(std::memory_order_relaxed)) {
      std::this_thread::sleep_until(next);
      const SteadyClock::time_point now = SteadyClock::now();
      // After a stall (a loaded machine), carry on from now instead of
      // catching up with a burst.
      next = std::max(next + tick_, now);
      const absl::Time mapped =
          pass_->sim_start +
          absl::FromChrono(now - pass_->real_start) * sim_per_real_;
      if (mapped >= pass_->sim_end) {
        std::unique_ptr<Pass> old = std::move(pass_);
        pass_ = NewPass();
        old.reset();  // unregisters from the registry no longer published
        continue;
      }
      // The single client is still waiting for its previous request.
      if (pass_->clock.Now() > mapped) continue;
      pass_->clock.Set(mapped);
      ServeOne(*pass_);
    }
  }

  const Options options_;
  const SteadyClock::duration tick_;
  const double sim_per_real_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  // Driver thread only (and Start(), before the thread exists).
  std::unique_ptr<Pass> pass_;
  uint64_t user_seq_ = 0;

  mutable std::mutex mu_;
  std::shared_ptr<degrade::MetricsRegistry> published_;  // guarded by mu_

  std::atomic<uint64_t> passes_{0};
  std::atomic<std::size_t> phase_{0};
  std::atomic<uint64_t> requests_{0};
};

// Waits for SIGINT or SIGTERM (blocked in every thread, see main), the end
// of the run's duration, or `*done`. Returns what happened.
const char* WaitForStop(const sigset_t& signals,
                        std::optional<SteadyClock::time_point> deadline,
                        const std::atomic<bool>* done) {
  while (!done->load()) {
    if (deadline && SteadyClock::now() >= *deadline) return "duration elapsed";
    timespec wait{};
    wait.tv_nsec = 100 * 1000 * 1000;
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT) return "SIGINT";
    if (sig == SIGTERM) return "SIGTERM";
  }
  return "server stopped";
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals before any thread starts, so that every thread
  // inherits the mask and only sigtimedwait() sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    Usage(argv[0]);
    return 2;
  }
  // A GPU library that does not load is a clear error now, not an abort in
  // the first pass.
  if (!options.nvml.empty()) {
    const absl::StatusOr<std::unique_ptr<degrade::NvmlGpuSource>> gpu =
        metrics_server::LoadGpu(options.nvml, degrade::NoTelemetry());
    if (!gpu.ok()) {
      std::fprintf(stderr, "metrics_server: --nvml %s: %s\n",
                   options.nvml.c_str(), gpu.status().ToString().c_str());
      return 1;
    }
  }
  std::optional<SteadyClock::time_point> deadline;
  if (options.duration_seconds > 0) {
    deadline = SteadyClock::now() +
               std::chrono::duration_cast<SteadyClock::duration>(
                   std::chrono::duration<double>(options.duration_seconds));
  }

  Driver driver(options);
  driver.Start();

  httplib::Server server;
  // Prometheus keeps its connection alive between scrapes; a short idle
  // timeout bounds how long stop() waits for it.
  server.set_keep_alive_timeout(1);
  // No endpoint takes a body, and cpp-httplib would otherwise read any
  // body it is sent (to a POST anywhere) into memory: 413, unkept.
  server.set_payload_max_length(0);
  server.Get("/metrics",
             [&driver](const httplib::Request&, httplib::Response& res) {
               res.set_content(driver.registry()->RenderPrometheus(),
                               kPrometheusContentType);
             });
  server.Get("/metrics.json", [&driver](const httplib::Request&,
                                        httplib::Response& res) {
    res.set_content(driver.registry()->RenderJson(), "application/json");
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  server.Get("/", [&driver](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        absl::StrCat("degrade metrics_server: the recsys pipeline through its "
                     "scripted outage\n",
                     driver.Status(),
                     "\n\n/metrics       Prometheus text format 0.0.4\n"
                     "/metrics.json  the same as JSON\n/healthz\n"),
        "text/plain; charset=utf-8");
  });

  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.bind);
  } else if (!server.bind_to_port(options.bind, port)) {
    port = -1;
  }
  if (port <= 0) {
    std::fprintf(stderr, "metrics_server: cannot listen on %s:%d: %s\n",
                 options.bind.c_str(), options.port, std::strerror(errno));
    return 1;
  }
  std::printf("listening on http://%s:%d/metrics\n", options.bind.c_str(),
              port);
  std::fflush(stdout);

  std::atomic<bool> listen_returned{false};
  const char* why = "server stopped";
  std::thread stopper([&] {
    why = WaitForStop(signals, deadline, &listen_returned);
    // stop() only acts once listen_after_bind() is running.
    while (!listen_returned.load()) {
      if (server.is_running()) {
        server.stop();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const bool clean = server.listen_after_bind();
  listen_returned.store(true);
  stopper.join();
  driver.Stop();
  std::fprintf(stderr, "metrics_server: stopped (%s): %s\n", why,
               driver.Status().c_str());
  return clean ? 0 : 1;
}
