// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// fleet_instance: one instance of a small recommendation service, held by
// fleet control over etcd. Run three of them against one etcd and every
// `etcdctl put` of a control document reaches all three within
// milliseconds; docs/fleet-control.md walks an operator through an incident
// with it, and tests/etcd/fleet_test.cpp measures it.
//
//   fleet_instance --endpoint 127.0.0.1:2379 --instance i1
//
// It follows two keys under the prefix with an `etcd::EtcdPrefixWatcher`:
//
//   <prefix>config    the manager's degradation config (config-format.md):
//                     each put is a ReloadJson(); a bad one is refused and
//                     the last good config keeps serving.
//   <prefix>control   the control document (fleet-control.md): each put is a
//                     FleetControl::Apply(); a delete lifts it (only the
//                     version this key put in force).
//
// Every line it prints on stdout is one JSON object: the FleetControl's and
// the manager's own log lines, the watcher's status changes
// ({"event":"etcd_status",...}), and a "state" line after every put or
// delete of either key and once per --heartbeat-ms (default 1000): the
// config in force, the control version, the level, the features, the
// breaker, the watcher's re-reads of the prefix (after an outage), and
// `mono_ns`, CLOCK_MONOTONIC in nanoseconds, which every process on one
// machine shares: the fleet test subtracts the moment it put a key from it.
// SIGTERM or SIGINT stops it cleanly.

#include <signal.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/etcd/watcher.hpp"
#include "degrade/fleet_control.hpp"
#include "nlohmann/json.hpp"

namespace {

// The features the state line reports; the config below gates them.
const char* const kFeatures[] = {"semantic_cache", "rerank",
                                 "personalization"};

// The config an instance starts with, until etcd holds one.
constexpr absl::string_view kInitialConfig = R"({"degradation": {
  "name": "built-in", "hold": "30s",
  "level1": {"trigger": {"load": 0.8}, "disable": ["semantic_cache"]},
  "level2": {"trigger": {"load": 0.9}, "disable": ["rerank"]},
  "level3": {"trigger": {"load": 0.97}, "disable": ["personalization"]}}})";

std::string Quote(absl::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t MonotonicNanos() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// stdout is shared by the watcher's thread, the manager's and main's.
std::mutex out_mu;
void PrintLine(absl::string_view line) {
  std::lock_guard<std::mutex> lock(out_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

struct Flags {
  std::string endpoint = "127.0.0.1:2379";
  std::string prefix = "/degrade/recsys/";
  std::string instance = "i1";
  int heartbeat_ms = 1000;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const absl::string_view name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--endpoint") {
      flags->endpoint = value;
    } else if (name == "--prefix") {
      flags->prefix = value;
    } else if (name == "--instance") {
      flags->instance = value;
    } else if (name == "--heartbeat-ms") {
      if (!absl::SimpleAtoi(value, &flags->heartbeat_ms) ||
          flags->heartbeat_ms < 10) {
        return false;
      }
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

class Instance {
 public:
  explicit Instance(const Flags& flags)
      : flags_(flags),
        manager_(ManagerOptionsFor()),
        rank_(BreakerSettingsFor()),
        control_(ControlOptionsFor()) {}

  absl::Status Init() {
    if (absl::Status s = degrade::ReloadJson(manager_, kInitialConfig,
                                             "built-in");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = control_.AddManager(&manager_); !s.ok()) return s;
    if (absl::Status s = control_.AddBreaker(&rank_); !s.ok()) return s;
    // A control document ends by itself at expires_at: the manager sees
    // that at its next evaluation, so it evaluates every 100 ms.
    return manager_.Start(absl::Milliseconds(100));
  }

  absl::Status Watch() {
    degrade::etcd::EtcdWatcherOptions o;
    o.endpoint = flags_.endpoint;
    o.prefix = flags_.prefix;
    o.max_value_bytes = 64 * 1024;
    o.backoff_max = absl::Seconds(1);  // back within a second of etcd
    o.on_put = [this](const std::string& key, const std::string& value,
                      int64_t revision) { OnPut(key, value, revision); };
    o.on_delete = [this](const std::string& key, int64_t revision) {
      OnDelete(key, revision);
    };
    o.on_status = [this](const absl::Status& s) {
      PrintLine(absl::StrCat(R"({"event":"etcd_status","instance":)",
                             Quote(flags_.instance),
                             R"(,"status":)",
                             Quote(s.ToString()), "}"));
    };
    watcher_ = std::make_unique<degrade::etcd::EtcdPrefixWatcher>(std::move(o));
    return watcher_->Start();
  }

  void Stop() {
    if (watcher_ != nullptr) watcher_->Stop();
    manager_.Stop();
  }

  // A heartbeat, consistent with the changes: it never prints halfway
  // through one (say the new control version with the old level).
  void Heartbeat() {
    std::lock_guard<std::mutex> lock(change_mu_);
    PrintState("heartbeat", 0);
  }

  void PrintState(absl::string_view cause, int64_t revision) {
    std::string features;
    for (const char* f : kFeatures) {
      absl::StrAppend(&features, features.empty() ? "" : ",", "\"", f,
                      "\":", manager_.Feature(f).enabled() ? "true" : "false");
    }
    const auto in_force = control_.in_force();
    PrintLine(absl::StrCat(
        R"({"event":"state","instance":)",
        Quote(flags_.instance),
        R"(,"mono_ns":)", MonotonicNanos(), R"(,"cause":")", cause,
        R"(","revision":)", revision, R"(,"config":)",
        Quote(manager_.config()->name),
        R"(,"control_version":)", in_force ? in_force->version : 0,
        R"(,"control_floor":)", control_.version(),
        R"(,"level":)", manager_.level(), R"(,"features":{)", features,
        R"(},"rank":")", rank_.forced_open() ? "forced_open" : "free",
        R"(","etcd_resyncs":)",
        watcher_ != nullptr ? watcher_->counters().resyncs : 0, "}"));
  }

 private:
  static degrade::ManagerOptions ManagerOptionsFor() {
    degrade::ManagerOptions o;
    o.name = "recsys";
    o.log_sink = PrintLine;
    return o;
  }
  static degrade::BreakerSettings BreakerSettingsFor() {
    degrade::BreakerSettings s;
    s.name = "rank";
    return s;
  }
  static degrade::FleetControlOptions ControlOptionsFor() {
    degrade::FleetControlOptions o;
    o.log_sink = PrintLine;
    return o;
  }

  // On the watcher's thread, one at a time.
  void OnPut(const std::string& key, const std::string& value,
             int64_t revision) {
    std::lock_guard<std::mutex> lock(change_mu_);
    const std::string source = absl::StrCat("etcd ", key);
    if (key == flags_.prefix + "config") {
      // Refused configs are logged by the manager; the old one serves.
      degrade::ReloadJson(manager_, value, source).IgnoreError();
      PrintState("config", revision);
    } else if (key == flags_.prefix + "control") {
      uint64_t version = 0;
      // Refusals are logged by the FleetControl; what was in force stays.
      if (control_.Apply(value, source, &version).ok()) {
        control_version_ = version;
      }
      PrintState("control", revision);
    }
  }

  void OnDelete(const std::string& key, int64_t revision) {
    std::lock_guard<std::mutex> lock(change_mu_);
    if (key == flags_.prefix + "config") {
      // No config is not a config: the last good one keeps serving.
      PrintState("config_deleted", revision);
      return;
    }
    if (key != flags_.prefix + "control") return;
    // Only what this key put in force (a document a file or another source
    // applied since is not the delete's to end), and only while it is:
    // one that already expired has nothing left to lift.
    const auto in_force = control_.in_force();
    if (control_version_ != 0 && in_force &&
        in_force->version == control_version_) {
      control_.Lift(absl::StrCat("etcd ", key), control_version_)
          .IgnoreError();
    }
    control_version_ = 0;
    PrintState("control_deleted", revision);
  }

  const Flags flags_;
  degrade::DegradationManager manager_;
  degrade::CircuitBreaker<int> rank_;
  degrade::FleetControl control_;
  std::mutex change_mu_;  // a change and its state line; heartbeats
  uint64_t control_version_ = 0;  // under change_mu_
  std::unique_ptr<degrade::etcd::EtcdPrefixWatcher> watcher_;
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: %s [--endpoint host:port] [--prefix /p/] "
                 "[--instance name] [--heartbeat-ms n]\n",
                 argv[0]);
    return 2;
  }
  // Blocked before any thread starts, so only sigtimedwait() below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Instance instance(flags);
  if (absl::Status s = instance.Init(); !s.ok()) {
    std::fprintf(stderr, "fleet_instance: %s\n", s.ToString().c_str());
    return 1;
  }
  instance.PrintState("start", 0);
  if (absl::Status s = instance.Watch(); !s.ok()) {
    std::fprintf(stderr, "fleet_instance: %s\n", s.ToString().c_str());
    return 1;
  }
  const timespec beat{flags.heartbeat_ms / 1000,
                      (flags.heartbeat_ms % 1000) * 1'000'000L};
  while (true) {
    const int sig = sigtimedwait(&stop, nullptr, &beat);
    if (sig == SIGTERM || sig == SIGINT) break;
    instance.Heartbeat();
  }
  instance.Stop();
  PrintLine(R"({"event":"stopped"})");
  return 0;
}
