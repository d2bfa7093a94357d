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
// Not thread-safe: one generator per owner, under the owner's lock.

#ifndef DEGRADE_DETAIL_SPLITMIX_HPP_
#define DEGRADE_DETAIL_SPLITMIX_HPP_

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

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed = 0) : state_(seed) {}

  uint64_t Next() {
    const uint64_t out = SplitMix64Step(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return out;
  }

  // Uniform in [0, 1), with the 53 bits a double holds.
  double NextUnit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
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
