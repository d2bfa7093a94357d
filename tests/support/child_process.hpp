// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What the real-server fixtures (tests/redis/redis_server.hpp,
// tests/etcd/etcd_server.hpp) share: a free loopback port, spawning a server
// with its output appended to a log file, reaping it within a bound, and a
// fresh temporary directory for it to run in. Spawned with posix_spawn (no
// fork of a multi-threaded, possibly sanitized, test process). For tests
// only; each function is thread-safe.

#ifndef DEGRADE_TESTS_SUPPORT_CHILD_PROCESS_HPP_
#define DEGRADE_TESTS_SUPPORT_CHILD_PROCESS_HPP_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

extern char** environ;

namespace degrade_tests {

// A free loopback TCP port (bound and released: another process may take it
// before the caller binds it, which the fixtures handle by retrying).
inline absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok =
      ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    return absl::InternalError(
        absl::StrCat("bind 127.0.0.1:0: ", std::strerror(saved)));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

// A fresh directory `<temp dir>/<prefix>XXXXXX` (the caller removes it).
inline absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  std::string tmpl = absl::StrCat(
      std::filesystem::temp_directory_path().string(), "/", prefix, "XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  return tmpl;
}

// Starts `args[0]` (a path, or a name looked up on PATH) with `args`, stdin
// from /dev/null and stdout and stderr appended to `log`; in a process group
// of its own when `own_group` (so it can be signalled as a group).
//
// The child is started through util-linux's `setpriv --pdeathsig KILL` when
// it is there (it is on every Debian), so it is killed when the spawning
// thread dies: a test process killed with SIGKILL or Ctrl-C, which runs no
// destructor, leaves no server behind. REQUIRES: called from a thread that
// outlives the child (the test's main thread), since the signal follows the
// thread, not the process.
inline absl::StatusOr<pid_t> SpawnLogged(std::vector<std::string> args,
                                         const std::string& log,
                                         bool own_group) {
  if (::access("/usr/bin/setpriv", X_OK) == 0) {
    args.insert(args.begin(),
                {"/usr/bin/setpriv", "--pdeathsig", "KILL", "--"});
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = -1;
  const int rc =
      ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("posix_spawn ", args[0], ": ", std::strerror(rc)));
  }
  return pid;
}

// Waits for `pid` to exit (after the caller signalled it); SIGKILLs it (its
// group when `group`) if it has not within `bound`. Always reaps it.
// Returns its wait status (see waitpid(2)), or -1 when it was not a child
// left to reap (already reaped).
inline int ReapWithin(pid_t pid, absl::Duration bound, bool group) {
  const absl::Time deadline = absl::Now() + bound;
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (absl::Now() > deadline) {
      ::kill(group ? -pid : pid, SIGKILL);
      pid_t k;
      while ((k = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
      }
      return k == pid ? status : -1;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_CHILD_PROCESS_HPP_
