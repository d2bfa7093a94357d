// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/mutex.hpp: MutexLock excludes; CondVar::WaitFor with zero,
// negative, short and infinite timeouts (and budgets of centuries, which
// overflow steady_clock if handed to wait_for as they are), woken by a
// concurrent signal; SharedMutex lets readers in together and a writer in
// alone. Label concurrency (run under TSan). No timing is asserted: a wait
// that should end early is shown to end at all, and a "short" timeout only
// has to return false.

#include "degrade/detail/mutex.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Duration kPatience = absl::Seconds(60);  // a safety net only

class Flag {
 public:
  void Set() {
    MutexLock lock(&mu_);
    set_ = true;
    cv_.SignalAll();
  }
  bool WaitFor(absl::Duration timeout) {
    MutexLock lock(&mu_);
    return cv_.WaitFor(&mu_, timeout,
                       [this]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return set_; });
  }
  void Wait() {
    MutexLock lock(&mu_);
    cv_.Wait(&mu_,
             [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return set_; });
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
};

TEST(MutexTest, MutexLockExcludes) {
  Mutex mu;
  int counter = 0;  // guarded by mu; TSan checks the claim
  constexpr int kThreads = 4;
  constexpr int kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&mu, &counter] {
      for (int i = 0; i < kIncrements; ++i) {
        MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(&mu);
  EXPECT_EQ(counter, kThreads * kIncrements);
}

TEST(CondVarTest, WaitForAnUnmetPredicateTimesOutForEveryFiniteTimeout) {
  for (const absl::Duration timeout :
       {absl::ZeroDuration(), -absl::Seconds(1), -absl::InfiniteDuration(),
        absl::Nanoseconds(1), absl::Milliseconds(5)}) {
    Flag never;
    EXPECT_FALSE(never.WaitFor(timeout)) << absl::FormatDuration(timeout);
  }
}

TEST(CondVarTest, WaitForAMetPredicateReturnsAtOnceForEveryTimeout) {
  for (const absl::Duration timeout :
       {absl::ZeroDuration(), -absl::Seconds(1), absl::Milliseconds(5),
        absl::Hours(24 * 365 * 300), absl::InfiniteDuration()}) {
    Flag set;
    set.Set();
    EXPECT_TRUE(set.WaitFor(timeout)) << absl::FormatDuration(timeout);
  }
}

TEST(CondVarTest, ASignalEndsWaitsOfAnyLengthIncludingInfinite) {
  // Budgets past what steady_clock can add: they must wait for the signal,
  // not overflow into "already timed out".
  for (const absl::Duration timeout :
       {kPatience, absl::Hours(24 * 365 * 300), absl::InfiniteDuration()}) {
    Flag flag;
    Flag waiting;
    std::thread signaller([&flag, &waiting] {
      waiting.Wait();
      flag.Set();
    });
    waiting.Set();
    EXPECT_TRUE(flag.WaitFor(timeout)) << absl::FormatDuration(timeout);
    signaller.join();
  }
}

TEST(CondVarTest, WaitBlocksUntilThePredicateHolds) {
  Flag flag;
  std::atomic<bool> returned{false};
  std::thread waiter([&flag, &returned] {
    flag.Wait();
    returned.store(true);
  });
  flag.Set();
  waiter.join();
  EXPECT_TRUE(returned.load());
}

TEST(CondVarTest, SignalAllWakesEveryWaiter) {
  Flag flag;
  constexpr int kWaiters = 6;
  std::atomic<int> woken{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&flag, &woken] {
      if (flag.WaitFor(kPatience)) woken.fetch_add(1);
    });
  }
  flag.Set();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(woken.load(), kWaiters);
}

TEST(SharedMutexTest, ReadersHoldTheLockTogether) {
  // Each reader waits, inside its ReaderLock, until all of them are inside:
  // only possible if they hold it at the same time.
  SharedMutex smu;
  Mutex mu;
  CondVar cv;
  int inside = 0;  // guarded by mu
  constexpr int kReaders = 4;
  std::atomic<int> met{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < kReaders; ++i) {
    readers.emplace_back([&] {
      ReaderLock read(&smu);
      MutexLock lock(&mu);
      ++inside;
      cv.SignalAll();
      if (cv.WaitFor(&mu, kPatience,
                     [&inside]() { return inside == kReaders; })) {
        met.fetch_add(1);
      }
    });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(met.load(), kReaders);
}

TEST(SharedMutexTest, AWriterIsAlone) {
  SharedMutex smu;
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  std::atomic<int> violations{0};
  int value = 0;  // written under the writer lock, read under reader locks
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    const bool writer = t % 2 == 0;
    threads.emplace_back([&, writer] {
      for (int i = 0; i < 5000; ++i) {
        if (writer) {
          WriterLock lock(&smu);
          if (writers.fetch_add(1) != 0 || readers.load() != 0) {
            violations.fetch_add(1);
          }
          ++value;
          writers.fetch_sub(1);
        } else {
          ReaderLock lock(&smu);
          readers.fetch_add(1);
          if (writers.load() != 0 || value < 0) violations.fetch_add(1);
          readers.fetch_sub(1);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
  WriterLock lock(&smu);
  EXPECT_EQ(value, 2 * 5000);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
