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
// With EtcdServerOptions it serves HTTPS (and requires client certificates)
// and issues short-lived simple auth tokens; Ctl() runs etcdctl against it
// (users, roles, `auth enable`); tests/etcd/etcd_pki.hpp makes the files.
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
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/etcd/client.hpp"
#include "support/child_process.hpp"

namespace degrade_tests {

#ifndef DEGRADE_ETCD_BINARY
#define DEGRADE_ETCD_BINARY "etcd"
#endif
#ifndef DEGRADE_ETCDCTL_BINARY
#define DEGRADE_ETCDCTL_BINARY "etcdctl"
#endif

// How an EtcdServer serves its clients. Empty: plain HTTP, no auth.
struct EtcdServerOptions {
  // HTTPS on the client URL with this certificate and key (PEM).
  std::string cert_file;
  std::string key_file;
  // With TLS: client certificates signed by this CA are required
  // (--client-cert-auth --trusted-ca-file).
  std::string trusted_ca_file;
  // > 0: --auth-token=simple --auth-token-ttl=<this> (seconds).
  int auth_token_ttl_s = 0;
  // What Start() and Ctl() present: the CA that signed `cert_file`, and a
  // client certificate and key (required with `trusted_ca_file`).
  std::string client_ca_file;
  std::string client_cert_file;
  std::string client_key_file;
  // Whether Start() and ClientOptions() check etcd's certificate names the
  // endpoint's host (off for a certificate issued to another name).
  bool client_verify_server_name = true;
};

class EtcdServer {
 public:
  EtcdServer() = default;
  explicit EtcdServer(EtcdServerOptions options)
      : options_(std::move(options)) {}
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
  bool tls() const { return !options_.cert_file.empty(); }

  // Client options for this server: its endpoint, and with TLS the
  // options' CA and client certificate; `user`/`password` as given.
  degrade::etcd::EtcdClientOptions ClientOptions(
      std::string user = "", std::string password = "") const {
    degrade::etcd::EtcdClientOptions o;
    o.endpoint = endpoint();
    o.connect_timeout = absl::Milliseconds(500);
    o.request_timeout = absl::Seconds(2);
    if (tls()) {
      o.tls.enabled = true;
      o.tls.ca_file = options_.client_ca_file;
      o.tls.cert_file = options_.client_cert_file;
      o.tls.key_file = options_.client_key_file;
      o.tls.verify_server_name = options_.client_verify_server_name;
    }
    o.user = std::move(user);
    o.password = std::move(password);
    return o;
  }

  // Runs `etcdctl <args>` against this server (with its TLS files, and
  // `--user` once set by set_ctl_user) and waits up to 20 s for it; its
  // output on failure.
  absl::Status Ctl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        DEGRADE_ETCDCTL_BINARY,
        absl::StrCat("--endpoints=", tls() ? "https" : "http", "://",
                     endpoint()),
        "--dial-timeout=5s", "--command-timeout=10s"};
    if (tls()) {
      argv.push_back("--cacert=" + options_.client_ca_file);
      argv.push_back("--cert=" + options_.client_cert_file);
      argv.push_back("--key=" + options_.client_key_file);
    }
    if (!ctl_user_.empty()) argv.push_back("--user=" + ctl_user_);
    for (std::string& a : args) argv.push_back(std::move(a));
    const std::string log = dir_ + "/etcdctl.log";
    std::error_code ignored;
    std::filesystem::remove(log, ignored);
    const std::string what = absl::StrJoin(argv, " ");
    absl::StatusOr<pid_t> pid = SpawnLogged(argv, log, /*own_group=*/false);
    if (!pid.ok()) return pid.status();
    const int status = ReapWithin(*pid, absl::Seconds(20), /*group=*/false);
    std::ifstream in(log);
    std::stringstream out;
    out << in.rdbuf();
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return absl::InternalError(absl::StrCat("`", what, "` failed (status ",
                                              status, "): ", out.str()));
    }
    return absl::OkStatus();
  }
  // "user:password" for later Ctl() calls (once auth is enabled).
  void set_ctl_user(std::string user_password) {
    ctl_user_ = std::move(user_password);
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
    const std::string client =
        absl::StrCat(tls() ? "https" : "http", "://127.0.0.1:", client_port_);
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
    if (tls()) {
      args.push_back("--cert-file=" + options_.cert_file);
      args.push_back("--key-file=" + options_.key_file);
      if (!options_.trusted_ca_file.empty()) {
        args.push_back("--client-cert-auth");
        args.push_back("--trusted-ca-file=" + options_.trusted_ca_file);
      }
    }
    if (options_.auth_token_ttl_s > 0) {
      args.push_back("--auth-token=simple");
      args.push_back(
          absl::StrCat("--auth-token-ttl=", options_.auth_token_ttl_s));
    }
    absl::StatusOr<pid_t> pid =
        SpawnLogged(std::move(args), dir_ + "/etcd.log", /*own_group=*/true);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;

    degrade::etcd::EtcdClientOptions probe_options = ClientOptions();
    probe_options.connect_timeout = absl::Milliseconds(200);
    probe_options.request_timeout = absl::Milliseconds(500);
    degrade::etcd::EtcdClient probe(probe_options);
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
      // Answered: also etcd's own refusal once auth is on ("user name
      // is empty"), which only a running etcd gives.
      absl::StatusOr<degrade::etcd::RangeResult> r = probe.Range("");
      if (r.ok() || absl::StrContains(r.status().message(), "etcdserver:")) {
        return absl::OkStatus();
      }
      if (absl::Now() > deadline) {
        Kill();
        return absl::DeadlineExceededError(
            absl::StrCat("etcd did not answer on ", endpoint(),
                         " within 20s; log:\n", Log()));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }

  EtcdServerOptions options_;
  std::string ctl_user_;
  std::string dir_;
  std::string token_ = "etcd-cluster";  // etcd's default
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_ETCD_ETCD_SERVER_HPP_
