// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/grpc_recsys/children.hpp
// -----------------------------------------------------------------------------
//
// The demo's server processes: started, killed, paused and resumed by the
// driver, and never left behind. A chaos demo that leaks a SIGSTOPped
// server on a shared CI machine is worse than no demo, so every way out is
// covered:
//   * the normal way: ~Children() SIGKILLs and reaps every child;
//   * SIGINT / SIGTERM to the driver: a handler SIGKILLs every live child
//     (kill() is async-signal-safe; the pids sit in a fixed array of
//     atomics), then re-raises the signal with its default action;
//   * the driver crashing or being SIGKILLed itself: each child sets
//     PR_SET_PDEATHSIG(SIGKILL) right after fork(), before exec, and checks
//     that its parent has not already gone in between.
// PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the
// process; so REQUIRES: Start() is called from a thread that lives as long
// as the children (the driver's main thread).
//
// A child reports its port by printing "PORT <n>" on stdout, which is a
// pipe to the parent; its stderr goes to a log file of its own in a
// temporary directory, so a child that fails says why in the driver's error
// (the log's last lines are quoted) rather than somewhere on the terminal.
// Every wait is bounded: the port line (start_timeout), the reaping of a
// killed child (5 s). An unknown binary, a child that exits before
// reporting a port, and one that never reports it are errors naming the
// child and the cause.
//
// Not thread-safe: one thread (the driver's chaos script) starts and stops
// children. The signal handler is the exception, and only reads the pids.

#ifndef DEGRADE_EXAMPLES_GRPC_RECSYS_CHILDREN_HPP_
#define DEGRADE_EXAMPLES_GRPC_RECSYS_CHILDREN_HPP_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace grpc_recsys {

namespace detail {

// The live children's pids, for the signal handler: a fixed array, so the
// handler never allocates or locks. 0 is an empty slot.
inline constexpr std::size_t kMaxChildren = 64;
inline std::array<std::atomic<pid_t>, kMaxChildren> g_live_children{};

inline void KillChildrenAndReraise(int sig) {
  for (std::atomic<pid_t>& slot : g_live_children) {
    const pid_t pid = slot.load();
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

inline void InstallSignalHandlersOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = &KillChildrenAndReraise;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      // A signal the driver was started ignoring (nohup) stays ignored.
      struct sigaction old;
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
        continue;
      }
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

inline bool Remember(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_live_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return true;
  }
  return false;
}

inline void Forget(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_live_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

// "exited with status 2", "was killed by signal 9".
inline std::string DescribeWait(int wstatus) {
  if (WIFEXITED(wstatus))
    return absl::StrCat("exited with status ", WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus))
    return absl::StrCat("was killed by signal ", WTERMSIG(wstatus));
  return absl::StrCat("changed state (wait status ", wstatus, ")");
}

// Reaps `pid`, waiting at most `limit`: its wait status, 0 when it is no
// child of ours (any more), or -1 when it is still running after `limit`.
inline int ReapWithin(pid_t pid, absl::Duration limit) {
  const absl::Time give_up = absl::Now() + limit;
  for (;;) {
    int wstatus = 0;
    const pid_t r = ::waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return wstatus;
    if (r < 0 && errno != EINTR) return 0;  // not our child any more
    if (absl::Now() >= give_up) return -1;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// The last `max_bytes` of the file at `path`, trimmed, or a note saying it
// is empty.
inline std::string Tail(const std::string& path, std::size_t max_bytes = 600) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > max_bytes)
    text = "..." + text.substr(text.size() - max_bytes);
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) return "(its log is empty)";
  return absl::StrCat("its log ", path, " ends:\n  ", trimmed);
}

}  // namespace detail

// One running child.
struct Child {
  std::string name;  // e.g. "rank"
  pid_t pid = 0;
  int port = 0;
  std::string log_path;
  bool paused = false;
};

// Children
//
// The set of children the driver runs, keyed by name. See the file comment.
class Children {
 public:
  // `start_timeout` bounds the wait for each child's "PORT <n>" line.
  explicit Children(absl::Duration start_timeout = absl::Seconds(10))
      : start_timeout_(start_timeout) {
    detail::InstallSignalHandlersOnce();
    // An inherited SIGCHLD = SIG_IGN would make the kernel reap the
    // children itself, and waitpid() could not tell a death from a run.
    ::signal(SIGCHLD, SIG_DFL);
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(
        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/grpc_recsys.XXXXXX");
    if (::mkdtemp(dir.data()) != nullptr) log_dir_ = dir;
  }

  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

  // Kills and reaps every child; removes the logs unless KeepLogs() was
  // called. (An error already quotes the end of the log it is about.)
  ~Children() {
    KillAll();
    if (!keep_logs_ && !log_dir_.empty()) {
      for (const std::string& f : log_files_) ::unlink(f.c_str());
      ::rmdir(log_dir_.c_str());
    }
  }

  // Starts `binary args...` as the child `name` (which must not be running)
  // and waits for its port. Errors: NOT_FOUND for a binary that does not
  // exist or is not executable; INTERNAL when fork or pipe fail, or the
  // child exits before reporting a port (with its exit status and log);
  // DEADLINE_EXCEEDED when no port came within start_timeout (the child is
  // killed). REQUIRES: see the file comment about the calling thread.
  absl::StatusOr<Child> Start(const std::string& name,
                              const std::string& binary,
                              const std::vector<std::string>& args) {
    if (running_.count(name) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("child '", name, "' is already running"));
    }
    if (::access(binary.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(
          "server binary '", binary,
          "' does not exist or is not executable: ", std::strerror(errno)));
    }
    if (log_dir_.empty()) {
      return absl::InternalError(
          "could not create a temporary directory for the children's logs");
    }
    const std::string log_path =
        absl::StrCat(log_dir_, "/", name, ".", ++started_, ".log");
    log_files_.push_back(log_path);
    const int log_fd = ::open(log_path.c_str(),
                              O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int pipe_fds[2];
    if (log_fd < 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      const std::string why = std::strerror(errno);
      if (log_fd >= 0) ::close(log_fd);
      return absl::InternalError(absl::StrCat("starting '", name, "': ", why));
    }
    // Everything the child needs is built before fork(): after it, in a
    // multi-threaded parent, the child may only call async-signal-safe
    // functions until exec.
    std::vector<std::string> argv_strings = {binary};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    static constexpr char kExecFailed[] = "grpc_recsys: exec failed\n";

    const pid_t parent = ::getpid();
    // Signals blocked across fork(): until exec the child runs the parent's
    // handler, which would SIGKILL the parent's other servers, so the child
    // resets the handlers before it unblocks them; the parent unblocks
    // once the new pid is remembered, so a SIGINT meanwhile kills it too.
    sigset_t all, before;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &before);
    const pid_t pid = ::fork();
    if (pid < 0) {
      const std::string why = std::strerror(errno);
      ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
      ::close(log_fd);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      return absl::InternalError(absl::StrCat("fork for '", name, "': ", why));
    }
    if (pid == 0) {
      // The child. Die with the parent, even if it is already gone.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(pipe_fds[1], STDOUT_FILENO);  // dup2 clears close-on-exec
      ::dup2(log_fd, STDERR_FILENO);
      ::execv(binary.c_str(), argv.data());
      (void)!::write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
      ::_exit(127);
    }
    ::close(log_fd);
    ::close(pipe_fds[1]);
    const bool remembered = detail::Remember(pid);
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (!remembered) {
      ::kill(pid, SIGKILL);
      detail::ReapWithin(pid, absl::Seconds(5));
      ::close(pipe_fds[0]);
      return absl::ResourceExhaustedError("more than 64 live children");
    }
    Child child{name, pid, 0, log_path, false};
    absl::StatusOr<int> port = ReadPort(child, pipe_fds[0]);
    ::close(pipe_fds[0]);  // the child writes nothing more there
    if (!port.ok()) return port.status();
    child.port = *port;
    running_[name] = child;
    return child;
  }

  // SIGKILLs the child `name` and reaps it (a paused child too).
  absl::Status Kill(const std::string& name) {
    auto it = running_.find(name);
    if (it == running_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("child '", name, "' is not running"));
    }
    const pid_t pid = it->second.pid;
    running_.erase(it);
    ::kill(pid, SIGKILL);
    // Forgotten before it is reaped: once reaped, its pid may be reused,
    // and the signal handler must never SIGKILL a stranger.
    detail::Forget(pid);
    const int wstatus = detail::ReapWithin(pid, absl::Seconds(5));
    if (wstatus == -1) {
      return absl::InternalError(
          absl::StrCat("child '", name, "' (pid ", pid,
                       ") did not die within 5 s of SIGKILL"));
    }
    return absl::OkStatus();
  }

  // SIGSTOP / SIGCONT: a hung backend, and its return.
  absl::Status Pause(const std::string& name) {
    return Signal(name, SIGSTOP, true);
  }
  absl::Status Resume(const std::string& name) {
    return Signal(name, SIGCONT, false);
  }

  // OK while every child is still running; otherwise names the first one
  // that exited, how, and its log. Doesn't wait.
  absl::Status CheckAlive() {
    for (auto it = running_.begin(); it != running_.end(); ++it) {
      int wstatus = 0;
      if (::waitpid(it->second.pid, &wstatus, WNOHANG) == it->second.pid) {
        const Child c = it->second;
        detail::Forget(c.pid);
        running_.erase(it);
        return absl::InternalError(
            absl::StrCat("server '", c.name, "' (pid ", c.pid, ") ",
                         detail::DescribeWait(wstatus), " unexpectedly; ",
                         detail::Tail(c.log_path)));
      }
    }
    return absl::OkStatus();
  }

  void KillAll() {
    std::vector<std::string> names;
    for (const auto& [name, c] : running_) names.push_back(name);
    for (const std::string& name : names) (void)Kill(name);
  }

  const std::string& log_dir() const { return log_dir_; }
  // Keeps the logs after destruction (e.g. after a failed run).
  void KeepLogs() { keep_logs_ = true; }

 private:
  // Reads "PORT <n>\n" from `fd` within start_timeout_.
  absl::StatusOr<int> ReadPort(const Child& child, int fd) {
    const absl::Time give_up = absl::Now() + start_timeout_;
    std::string got;
    for (;;) {
      if (const std::size_t nl = got.find('\n'); nl != std::string::npos) {
        absl::string_view line =
            absl::StripAsciiWhitespace(absl::string_view(got).substr(0, nl));
        int port = 0;
        if (absl::ConsumePrefix(&line, "PORT ") &&
            absl::SimpleAtoi(line, &port) && port > 0 && port < 65536) {
          return port;
        }
        return Fail(child, absl::InternalError(absl::StrCat(
                               "server '", child.name, "' printed '",
                               got.substr(0, nl), "' instead of 'PORT <n>'")));
      }
      const absl::Duration left = give_up - absl::Now();
      if (left <= absl::ZeroDuration()) {
        return Fail(child, absl::DeadlineExceededError(absl::StrCat(
                               "server '", child.name, "' (pid ", child.pid,
                               ") did not report its port within ",
                               absl::FormatDuration(start_timeout_), "; ",
                               detail::Tail(child.log_path))));
      }
      pollfd p{fd, POLLIN, 0};
      const int ready =
          ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;  // the timeout is checked above
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      // EOF: the child closed stdout, which means it is exiting.
      const int wstatus = detail::ReapWithin(child.pid, absl::Seconds(2));
      absl::Status why = absl::InternalError(absl::StrCat(
          "server '", child.name, "' (pid ", child.pid, ") ",
          wstatus == -1 ? std::string("closed its stdout")
                        : detail::DescribeWait(wstatus),
          " before reporting its port; ", detail::Tail(child.log_path)));
      if (wstatus == -1) return Fail(child, std::move(why));
      // Reaped: its pid is free for reuse, so it is never signalled again.
      detail::Forget(child.pid);
      return why;
    }
  }

  // Kills the half-started child (if it still runs) and returns `why`.
  absl::Status Fail(const Child& child, absl::Status why) {
    ::kill(child.pid, SIGKILL);
    detail::Forget(child.pid);  // before the reap: see Kill()
    detail::ReapWithin(child.pid, absl::Seconds(5));
    return why;
  }

  absl::Status Signal(const std::string& name, int sig, bool paused) {
    auto it = running_.find(name);
    if (it == running_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("child '", name, "' is not running"));
    }
    if (::kill(it->second.pid, sig) != 0) {
      return absl::InternalError(absl::StrCat("signal ", sig, " to '", name,
                                              "': ", std::strerror(errno)));
    }
    it->second.paused = paused;
    return absl::OkStatus();
  }

  const absl::Duration start_timeout_;
  std::string log_dir_;
  std::vector<std::string> log_files_;
  std::map<std::string, Child> running_;
  int started_ = 0;
  bool keep_logs_ = false;
};

}  // namespace grpc_recsys

#endif  // DEGRADE_EXAMPLES_GRPC_RECSYS_CHILDREN_HPP_
