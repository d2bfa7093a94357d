// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The one pseudo-random generator of the library: SplitMix64 (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", 2014). It is tiny,
// has no bad seeds, and is fully determined by its seed, which is what the
// users need: the breaker's backoff jitter, the mock backends' error rates
// and the demos must repeat exactly under a FakeClock. `StableHash` gives a
// seed from a name that is the same with every compiler and standard library
// (std::hash is not).
//
// `UnitFromBits` is the one way a draw becomes a uniform number in [0, 1).
//
// SplitMix64 is not thread-safe: one generator per owner, under the owner's
// lock. CounterStream is thread-safe and lock-free.

#ifndef DEGRADE_DETAIL_SPLITMIX_HPP_
#define DEGRADE_DETAIL_SPLITMIX_HPP_

#include <atomic>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// One SplitMix64 step from `x`: a well-mixed 64-bit value, so that the k-th
// draw of a seed can be a pure function of (seed, k).
constexpr uint64_t SplitMix64Step(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits of `bits`, the precision a
// double holds: every value is exact and 1 is never reached, so `u < p`
// is always true at p = 1 and never at p = 0.
constexpr double UnitFromBits(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed = 0) : state_(seed) {}

  uint64_t Next() {
    const uint64_t out = SplitMix64Step(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return out;
  }

  // Uniform in [0, 1) (UnitFromBits).
  double NextUnit() { return UnitFromBits(Next()); }

 private:
  uint64_t state_;
};

// Draws shared by threads with no lock: the k-th draw is
// SplitMix64Step(seed + k), a pure function of (seed, k), so a
// single-threaded run repeats exactly and concurrent callers only change
// who gets which draw. One relaxed fetch_add per draw.
class CounterStream {
 public:
  explicit CounterStream(uint64_t seed) : seed_(seed) {}

  // Uniform in [0, 1) (UnitFromBits).
  double NextUnit() {
    const uint64_t k = draws_.fetch_add(1, std::memory_order_relaxed);
    return UnitFromBits(SplitMix64Step(seed_ + k));
  }

 private:
  const uint64_t seed_;
  std::atomic<uint64_t> draws_{0};
};

// FNV-1a over the bytes of `s`: stable across platforms, for seeds.
inline uint64_t StableHash(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SPLITMIX_HPP_
