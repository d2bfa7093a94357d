// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A private etcd for one test: started on free loopback ports (client and
// peer) with its data directory in a fresh temporary directory, and stopped
// by Stop() or the destructor — so also when the test fails. Never a fixed or
// shared port, never a system service.
//
//   EtcdServer etcd;
//   ASSERT_TRUE(etcd.Start().ok());      // waits until it answers a Range
//   ... etcd.endpoint() ...              // "127.0.0.1:<port>"
//   etcd.Kill();                         // SIGKILL: etcd "crashes"
//   ASSERT_TRUE(etcd.Restart().ok());    // same data dir, same ports
//   etcd.Wipe("other-token");            // SIGKILL, data dir gone: the
//   ASSERT_TRUE(etcd.Start().ok());      //   next start makes a new cluster
//
// The process runs in a process group of its own, signalled as a group.
// Spawned with posix_spawn (support/child_process.hpp).
// Readiness and shutdown are polled against deadlines, never assumed after a
// sleep. Not thread-safe: one test thread drives it.

#ifndef DEGRADE_TESTS_ETCD_ETCD_SERVER_HPP_
#define DEGRADE_TESTS_ETCD_ETCD_SERVER_HPP_

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/etcd/client.hpp"
#include "support/child_process.hpp"

namespace degrade_tests {

#ifndef DEGRADE_ETCD_BINARY
#define DEGRADE_ETCD_BINARY "etcd"
#endif

class EtcdServer {
 public:
  EtcdServer() = default;
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;
  ~EtcdServer() {
    Stop();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  // Starts etcd and waits (up to 20 s) until it answers a Range. The first
  // start picks free ports (retrying with others if they were taken between
  // the check and the bind); later starts reuse them and the data dir.
  absl::Status Start() {
    if (pid_ > 0) return absl::FailedPreconditionError("already running");
    if (dir_.empty()) {
      absl::StatusOr<std::string> dir = MakeTempDir("degrade-etcd-");
      if (!dir.ok()) return dir.status();
      dir_ = *dir;
    }
    const bool pick = client_port_ == 0;
    absl::Status last;
    for (int attempt = 0; attempt < (pick ? 5 : 1); ++attempt) {
      if (pick) {
        absl::StatusOr<int> c = FreeLoopbackPort();
        absl::StatusOr<int> p = FreeLoopbackPort();
        if (!c.ok()) return c.status();
        if (!p.ok()) return p.status();
        if (*c == *p) continue;
        client_port_ = *c;
        peer_port_ = *p;
      }
      last = SpawnAndWait();
      if (last.ok() || !absl::IsAborted(last)) return last;
    }
    return last;
  }

  // Kill() then Start() on the same data dir and ports.
  absl::Status Restart() {
    Kill();
    return Start();
  }

  // SIGTERM to the process group; SIGKILL if it has not exited within 10 s.
  void Stop() { Signal(SIGTERM, absl::Seconds(10)); }

  // SIGKILL to the process group, and reaps it: a crash.
  void Kill() { Signal(SIGKILL, absl::Seconds(10)); }

  // Kill(), then removes the data directory: the next Start() makes a new
  // cluster on the same ports, its revisions starting again at 1. Its
  // cluster_id is the old one's unless `cluster_token` differs (etcd
  // derives the id from the token and the member's peer URL).
  void Wipe(std::string cluster_token) {
    Kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_ + "/data", ignored);
    token_ = std::move(cluster_token);
  }

  std::string endpoint() const {
    return absl::StrCat("127.0.0.1:", client_port_);
  }
  int client_port() const { return client_port_; }
  bool running() const { return pid_ > 0; }

  // The server's output so far (for failure messages).
  std::string Log() const {
    std::ifstream in(dir_ + "/etcd.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  void Signal(int sig, absl::Duration bound) {
    if (pid_ <= 0) return;
    ::kill(-pid_, sig);
    ReapWithin(pid_, bound, /*group=*/true);
    pid_ = -1;
  }

  // ABORTED when a port was taken (the caller may try others).
  absl::Status SpawnAndWait() {
    const std::string client = absl::StrCat("http://127.0.0.1:", client_port_);
    const std::string peer = absl::StrCat("http://127.0.0.1:", peer_port_);
    std::vector<std::string> args = {DEGRADE_ETCD_BINARY,
                                     "--name=t",
                                     "--data-dir=" + dir_ + "/data",
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=t=" + peer,
                                     "--initial-cluster-state=new",
                                     "--initial-cluster-token=" + token_,
                                     "--logger=zap",
                                     "--log-level=warn",
                                     "--enable-v2=false"};
    absl::StatusOr<pid_t> pid =
        SpawnLogged(std::move(args), dir_ + "/etcd.log", /*own_group=*/true);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;

    degrade::etcd::EtcdClient probe(degrade::etcd::EtcdClientOptions{
        endpoint(), absl::Milliseconds(200), absl::Milliseconds(500)});
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (true) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        const std::string text = Log();
        if (text.find("address already in use") != std::string::npos) {
          return absl::AbortedError(absl::StrCat("a port was taken: ", text));
        }
        return absl::InternalError(absl::StrCat(
            "etcd exited during start-up (status ", status, "); log:\n", text));
      }
      if (probe.Range("").ok()) return absl::OkStatus();
      if (absl::Now() > deadline) {
        Kill();
        return absl::DeadlineExceededError(absl::StrCat(
            "etcd did not answer on ", endpoint(), " within 20s; log:\n", Log()));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  std::string dir_;
  std::string token_ = "etcd-cluster";  // etcd's default
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_ETCD_ETCD_SERVER_HPP_
