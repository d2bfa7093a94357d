// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Benchmarks whose baseline takes a std::mutex must run in a process that
// has more than one thread. Google Benchmark runs a one-thread benchmark on
// the main thread, and while a process has never started a thread glibc
// (2.34 and later) takes an uncontended pthread mutex without atomic
// instructions: about 4-5 ns a lock/unlock pair on the development VM
// instead of about 12 ns. No server that uses a queue or a concurrency
// limiter is single-threaded, so a baseline measured that way is one no
// user has (found by review of issue 15's figures). The atomics of the
// degrade rows cost the same either way.
//
// StartIdleThread() starts one thread that sleeps forever (detached: it
// never delays exit) and returns true, so that a benchmark file can call it
// from a namespace-scope initializer, before main runs any benchmark.

#ifndef DEGRADE_BENCHMARKS_MULTI_THREADED_HPP_
#define DEGRADE_BENCHMARKS_MULTI_THREADED_HPP_

#include <chrono>
#include <thread>

namespace degrade_bench {

inline bool StartIdleThread() {
  std::thread([] {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(24));
  }).detach();
  return true;
}

}  // namespace degrade_bench

#endif  // DEGRADE_BENCHMARKS_MULTI_THREADED_HPP_
