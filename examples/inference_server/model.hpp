// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The "GPU" of examples/inference_server: a CPU-bound batched model.
//
// A batch of n requests costs what the deterministic simulation
// (examples/inference/simulation.hpp) charges for it: a fixed overhead plus a
// per-request share, 60 + 32 * 3.75 = 180 ms for a full batch of 32. The work
// is a spin loop, not a sleep, so the model takes a core from the HTTP
// threads as a real one would take its host's CPU for pre- and
// post-processing.
//
// A batch ends on the clock, not after a fixed number of iterations: on a
// machine shared with other jobs, a fixed iteration count would take longer
// whenever the scheduler took the core away, and the server's capacity (the
// denominator of every goodput figure) would move with the neighbours' load.
// Calibrate() measures the loop's speed once at start-up so that the clock
// is read about every 50 us, not on every iteration; the fastest of several
// short trials is the least disturbed, so that is the one kept.
//
// Thread-compatible: one worker thread runs the batches.

#ifndef DEGRADE_EXAMPLES_INFERENCE_SERVER_MODEL_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_SERVER_MODEL_HPP_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace inference_server {

inline constexpr int kBatchSize = 32;

class SpinModel {
 public:
  // `full_batch_ms`: the cost of a batch of kBatchSize; a quarter of it (the
  // simulation's 60 of 180 ms) is paid by every batch, however small.
  explicit SpinModel(double full_batch_ms = 180.0)
      : overhead_ms_(full_batch_ms / 3.0),
        per_item_ms_(full_batch_ms * 2.0 / 3.0 / kBatchSize) {}

  // Measures iterations per millisecond: the best of `trials` runs of about
  // 20 ms each. Call once before Run(); it only sizes Run()'s chunks.
  void Calibrate(int trials = 7) {
    constexpr uint64_t kProbe = uint64_t{1} << 20;
    double best = 0;
    uint64_t probe = kProbe;
    for (int i = 0; i < trials; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      Spin(probe);
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
      if (ms > 0) best = std::max(best, static_cast<double>(probe) / ms);
      // Size the next probe to about 20 ms now that the speed is known.
      probe = std::max<uint64_t>(kProbe, static_cast<uint64_t>(best * 20));
    }
    iterations_per_ms_ = best > 0 ? best : 1e5;
  }

  double iterations_per_ms() const { return iterations_per_ms_; }
  double planned_ms(int n) const { return overhead_ms_ + n * per_item_ms_; }

  // Runs one batch of `n` requests (1..kBatchSize): spins until
  // planned_ms(n) have passed.
  void Run(int n) const {
    const auto end = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double, std::milli>(planned_ms(n)));
    const auto chunk = std::max<uint64_t>(1, static_cast<uint64_t>(iterations_per_ms_ / 20));
    while (std::chrono::steady_clock::now() < end) Spin(chunk);
  }

 private:
  static void Spin(uint64_t iterations) {
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < iterations; ++i) {
      x = x * 6364136223846793005u + 1442695040888963407u;
    }
    // A side effect the optimiser must keep, so the loop is not folded away.
    sink_.store(x, std::memory_order_relaxed);
  }

  static inline std::atomic<uint64_t> sink_{0};
  double overhead_ms_;
  double per_item_ms_;
  double iterations_per_ms_ = 1e5;
};

}  // namespace inference_server

#endif  // DEGRADE_EXAMPLES_INFERENCE_SERVER_MODEL_HPP_
