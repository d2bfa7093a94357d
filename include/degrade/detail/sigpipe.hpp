// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/sigpipe.hpp
// -----------------------------------------------------------------------------
//
// `ScopedSigpipeBlock`: a write to a socket the other end closed raises
// SIGPIPE, whose default action kills the process. A library must not
// install a process-wide handler behind its user's back, so the adapters
// that write to sockets (Redis, etcd: cpp-httplib does not pass
// MSG_NOSIGNAL) block the signal on the calling thread for the duration of
// a request instead, and discards one that the fetch caused (it is directed at
// the writing thread, so it stays pending there until unblocked). A SIGPIPE
// that was already pending before is left alone.
//
//   {
//     detail::ScopedSigpipeBlock no_sigpipe;
//     redisCommandArgv(...);  // EPIPE, not death, if the server went away
//   }
//
// POSIX only (pthread_sigmask, sigtimedwait). Affects only the calling
// thread; errno is preserved across the destructor.

#ifndef DEGRADE_DETAIL_SIGPIPE_HPP_
#define DEGRADE_DETAIL_SIGPIPE_HPP_

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// Blocks SIGPIPE on the calling thread while alive and, on destruction,
// discards a SIGPIPE that became pending meanwhile, then restores the
// thread's signal mask. Neither copyable nor movable; use on one thread.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;
  ~ScopedSigpipeBlock() {
    if (!blocked_) return;
    const int saved_errno = errno;
    sigset_t pending;
    sigemptyset(&pending);
    if (!was_pending_ && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE)) {
      const struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved_errno;
  }

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SIGPIPE_HPP_
