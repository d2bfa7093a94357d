// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/sigpipe.hpp: while a ScopedSigpipeBlock lives, a SIGPIPE
// directed at the thread stays pending instead of killing the process; the
// destructor discards the one raised meanwhile, restores the thread's mask
// and errno, and leaves alone a SIGPIPE that was pending before it.

#include "degrade/detail/sigpipe.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::detail::ScopedSigpipeBlock;

bool SigpipePending() {
  sigset_t pending;
  sigemptyset(&pending);
  return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

bool SigpipeBlocked() {
  sigset_t mask;
  sigemptyset(&mask);
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

TEST(ScopedSigpipeBlockTest, ASigpipeRaisedInsideIsDiscarded) {
  ASSERT_FALSE(SigpipeBlocked());
  ASSERT_FALSE(SigpipePending());
  {
    ScopedSigpipeBlock block;
    EXPECT_TRUE(SigpipeBlocked());
    ASSERT_EQ(pthread_kill(pthread_self(), SIGPIPE), 0);  // as a write would
    EXPECT_TRUE(SigpipePending()) << "blocked: pending, not delivered";
    errno = EPIPE;
  }
  EXPECT_EQ(errno, EPIPE) << "the destructor keeps errno";
  EXPECT_FALSE(SigpipePending());
  EXPECT_FALSE(SigpipeBlocked()) << "the thread's mask is restored";
}

TEST(ScopedSigpipeBlockTest, AnAlreadyBlockedSigpipeStaysBlocked) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &pipe, &old), 0);
  // One pending before the block: not ours to discard.
  ASSERT_EQ(pthread_kill(pthread_self(), SIGPIPE), 0);
  { ScopedSigpipeBlock block; }
  EXPECT_TRUE(SigpipeBlocked());
  EXPECT_TRUE(SigpipePending()) << "a SIGPIPE pending before is left alone";
  // Clean up: take the pending signal, then restore the mask.
  const struct timespec zero = {0, 0};
  EXPECT_EQ(sigtimedwait(&pipe, nullptr, &zero), SIGPIPE);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
