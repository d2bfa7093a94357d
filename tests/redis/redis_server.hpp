// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// A private redis-server for one test: started from PATH on a free loopback
// port, in a fresh temporary directory, with no persistence, and stopped
// (SIGTERM, then SIGKILL after a bound) by Stop() or the destructor — so
// also when the test fails. Never a fixed or shared port, never a system
// service.
//
//   RedisServer server;
//   ASSERT_OK(server.Start());                // fails clearly if it can't
//   server.Command({"ZADD", "hot", "2", "a"});   // a test's own client
//   ... server.port() ...
//   server.Stop();                            // Redis "goes down"
//   server.Start();                           // back, on the same port
//
// Spawned with posix_spawn (no fork of a multi-threaded, possibly
// sanitized, test process). Readiness and shutdown are polled against
// deadlines, never assumed after a sleep. Not thread-safe: one test thread
// drives it.

#ifndef DEGRADE_TESTS_REDIS_REDIS_SERVER_HPP_
#define DEGRADE_TESTS_REDIS_REDIS_SERVER_HPP_

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "degrade/redis/hot_list_source.hpp"
#include "support/child_process.hpp"

namespace degrade_tests {

class RedisServer {
 public:
  // `extra_args` are appended to the command line, e.g.
  // {"--requirepass", "secret"}.
  explicit RedisServer(std::vector<std::string> extra_args = {})
      : extra_args_(std::move(extra_args)) {
    for (std::size_t i = 0; i + 1 < extra_args_.size(); ++i) {
      if (extra_args_[i] == "--requirepass") password_ = extra_args_[i + 1];
    }
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() {
    Stop().IgnoreError();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  // The redis-server executable found on PATH, or "" if there is none.
  static std::string FindBinary() {
    const char* path = std::getenv("PATH");
    for (absl::string_view dir :
         absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
      if (dir.empty()) continue;
      std::string candidate = absl::StrCat(dir, "/redis-server");
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return "";
  }

  // Starts the server and waits until it answers PING. The first start
  // picks a free loopback port (retrying with another if a different
  // process takes it between the check and the bind); later starts reuse
  // it, as a restarted Redis would.
  absl::Status Start() {
    if (pid_ > 0) return absl::FailedPreconditionError("already running");
    if (binary_.empty()) binary_ = FindBinary();
    if (binary_.empty()) {
      return absl::NotFoundError("redis-server is not on PATH");
    }
    if (dir_.empty()) {
      absl::StatusOr<std::string> dir = MakeTempDir("degrade-redis-");
      if (!dir.ok()) return dir.status();
      dir_ = *dir;
    }
    const bool pick_port = port_ == 0;
    absl::Status last;
    for (int attempt = 0; attempt < (pick_port ? 5 : 1); ++attempt) {
      if (pick_port) {
        absl::StatusOr<int> port = FreeLoopbackPort();
        if (!port.ok()) return port.status();
        port_ = *port;
      }
      last = SpawnAndWait();
      if (last.ok() || !absl::IsAborted(last)) return last;  // not a bind race
    }
    return last;
  }

  // Stops the server (SIGTERM; SIGKILL if it has not exited within 10 s).
  // A stopped (SIGSTOPped) server is continued first. No-op if not running.
  absl::Status Stop() {
    if (pid_ <= 0) return absl::OkStatus();
    ::kill(pid_, SIGTERM);
    ::kill(pid_, SIGCONT);
    ReapWithin(pid_, absl::Seconds(10), /*group=*/false);
    pid_ = -1;
    return absl::OkStatus();
  }

  // SIGSTOP / SIGCONT: a server that hangs (the kernel still accepts
  // connections for it, but nothing answers).
  void Freeze() {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void Thaw() {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }

  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  const std::string& dir() const { return dir_; }

  // Runs `commands` on one fresh connection (after AUTH when the server was
  // started with --requirepass), each with `timeout`, and returns the last
  // reply as text: a status or bulk string as is, an integer in decimal, an
  // error as "ERR:<text>", an array as its elements joined by ' '.
  absl::StatusOr<std::string> Run(
      std::vector<std::vector<std::string>> commands,
      absl::Duration timeout = absl::Seconds(5)) const {
    degrade::detail::redis::ContextPtr c(
        redisConnectWithTimeout("127.0.0.1", port_, absl::ToTimeval(timeout)));
    if (c == nullptr || c->err != 0) {
      return absl::UnavailableError(
          absl::StrCat("connect to 127.0.0.1:", port_, ": ",
                       c == nullptr ? "out of memory" : c->errstr));
    }
    redisSetTimeout(c.get(), absl::ToTimeval(timeout));
    if (!password_.empty()) {
      commands.insert(commands.begin(),
                      std::vector<std::string>{"AUTH", password_});
    }
    std::string text;
    for (const std::vector<std::string>& argv : commands) {
      std::vector<const char*> args;
      std::vector<std::size_t> lens;
      for (const std::string& a : argv) {
        args.push_back(a.data());
        lens.push_back(a.size());
      }
      degrade::detail::redis::ReplyPtr r(static_cast<redisReply*>(
          redisCommandArgv(c.get(), static_cast<int>(args.size()), args.data(),
                           lens.data())));
      if (r == nullptr) {
        return absl::UnavailableError(
            absl::StrCat(argv.empty() ? "" : argv[0], ": ", c->errstr));
      }
      text = Text(*r);
    }
    return text;
  }

  // One command; see Run().
  absl::StatusOr<std::string> Command(
      std::vector<std::string> argv,
      absl::Duration timeout = absl::Seconds(5)) const {
    return Run({std::move(argv)}, timeout);
  }

  // The server's log so far (for failure messages).
  std::string Log() const {
    std::ifstream in(LogPath());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  static std::string Text(const redisReply& r) {
    switch (r.type) {
      case REDIS_REPLY_INTEGER:
        return std::to_string(r.integer);
      case REDIS_REPLY_NIL:
        return "(nil)";
      case REDIS_REPLY_ERROR:
        return absl::StrCat("ERR:", std::string(r.str, r.len));
      case REDIS_REPLY_ARRAY: {
        std::string out;
        for (std::size_t i = 0; i < r.elements; ++i) {
          absl::StrAppend(&out, i == 0 ? "" : " ", Text(*r.element[i]));
        }
        return out;
      }
      default:
        return std::string(r.str, r.len);
    }
  }

  std::string LogPath() const { return dir_ + "/redis.log"; }

  // ABORTED when the port was taken (the caller may try another one).
  absl::Status SpawnAndWait() {
    std::vector<std::string> args = {binary_,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--dir",
                                     dir_,
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--logfile",
                                     "",
                                     "--enable-debug-command",
                                     "local"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    absl::StatusOr<pid_t> pid = SpawnLogged(std::move(args), LogPath(),
                                            /*own_group=*/false);
    if (!pid.ok()) return pid.status();
    pid_ = *pid;

    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (true) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        const std::string text = Log();
        if (text.find("Address already in use") != std::string::npos) {
          return absl::AbortedError(
              absl::StrCat("port ", port_, " was taken: ", text));
        }
        return absl::InternalError(
            absl::StrCat("redis-server exited during start-up (status ", status,
                         "); log:\n", text));
      }
      absl::StatusOr<std::string> pong =
          Command({"PING"}, absl::Milliseconds(200));
      if (pong.ok() && *pong == "PONG") return absl::OkStatus();
      if (absl::Now() > deadline) {
        Stop().IgnoreError();
        return absl::DeadlineExceededError(
            absl::StrCat("redis-server did not answer PING on port ", port_,
                         " within 20s; log:\n", Log()));
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

  std::vector<std::string> extra_args_;
  std::string password_;  // from --requirepass, for Run()
  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_REDIS_REDIS_SERVER_HPP_
