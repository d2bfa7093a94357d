// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/splitmix.hpp: the generator's first outputs for seed 0 are the
// published SplitMix64 reference values, StableHash gives the published
// FNV-1a 64 test vectors, and both are the same on every run, compiler and
// standard library (what the seeded demos and scripted backends rely on).

#include "degrade/detail/splitmix.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

TEST(SplitMix64Test, FirstOutputsForSeedZeroAreTheReferenceValues) {
  const std::vector<uint64_t> expected = {
      0xE220A8397B1DCDAFULL, 0x6E789E6AA1B965F4ULL, 0x06C45D188009454FULL,
      0xF88BB8A8724C81ECULL, 0x1B39896A51A8749BULL,
  };
  SplitMix64 rng;  // the default seed is 0
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rng.Next(), expected[i]) << "output " << i;
  }
}

TEST(SplitMix64Test, TheStepIsThePureFunctionBehindNext) {
  static_assert(SplitMix64Step(0) == 0xE220A8397B1DCDAFULL, "constexpr");
  EXPECT_EQ(SplitMix64Step(1), 0x910A2DEC89025CC1ULL);
  // The k-th output of seed s is SplitMix64Step(s + k * golden gamma).
  SplitMix64 rng(42);
  for (uint64_t k = 0; k < 100; ++k) {
    EXPECT_EQ(rng.Next(), SplitMix64Step(42 + k * 0x9E3779B97F4A7C15ULL)) << k;
  }
}

TEST(SplitMix64Test, SameSeedSameSequenceOtherSeedOtherSequence) {
  SplitMix64 a(7);
  SplitMix64 b(7);
  SplitMix64 c(8);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differ += x != c.Next() ? 1 : 0;
  }
  EXPECT_EQ(differ, 1000);
}

TEST(SplitMix64Test, NextUnitIsTheTop53BitsInZeroToOne) {
  SplitMix64 first;
  EXPECT_EQ(first.NextUnit(),
            static_cast<double>(0xE220A8397B1DCDAFULL >> 11) * 0x1.0p-53);
  SplitMix64 rng(123);
  double sum = 0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.NextUnit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  // The mean of 1e5 uniforms is 0.5 +- 0.0009 (one standard deviation).
  EXPECT_NEAR(sum / kDraws, 0.5, 0.01);
}

TEST(UnitFromBitsTest, TheTop53BitsScaledToZeroToOne) {
  struct Case {
    uint64_t bits;
    double want;
  };
  const Case cases[] = {
      {0, 0.0},
      {0x7FF, 0.0},  // the low 11 bits never count
      {uint64_t{1} << 11, 0x1.0p-53},
      {uint64_t{1} << 63, 0.5},
      {~uint64_t{0}, 1.0 - 0x1.0p-53},  // the largest: 1 is never reached
  };
  for (const Case& c : cases) {
    EXPECT_EQ(UnitFromBits(c.bits), c.want) << c.bits;
  }
  static_assert(UnitFromBits(~uint64_t{0}) < 1.0, "constexpr, below 1");
}

TEST(CounterStreamTest, TheKthDrawIsAPureFunctionOfSeedAndK) {
  CounterStream stream(99);
  for (uint64_t k = 0; k < 100; ++k) {
    EXPECT_EQ(stream.NextUnit(), UnitFromBits(SplitMix64Step(99 + k))) << k;
  }
  CounterStream again(99);
  CounterStream other(100);
  EXPECT_EQ(again.NextUnit(), UnitFromBits(SplitMix64Step(99)));
  // Seed s + 1 is seed s shifted by one draw: streams of adjacent seeds
  // overlap, which is why each owner takes a seed of its own.
  EXPECT_EQ(other.NextUnit(), UnitFromBits(SplitMix64Step(100)));
}

TEST(StableHashTest, KnownValues) {
  // FNV-1a 64-bit: the offset basis for "", then the published vectors.
  const std::vector<std::pair<std::string, uint64_t>> table = {
      {"", 0xCBF29CE484222325ULL},
      {"a", 0xAF63DC4C8601EC8CULL},
      {"foobar", 0x85944171F73967E8ULL},
      {"feature-service", 0x3C82A4ED86053E83ULL},
      {std::string("\xff\0", 2), 0x0A99A607B6F60BEAULL},  // bytes, not chars
  };
  for (const auto& [text, hash] : table) {
    EXPECT_EQ(StableHash(text), hash) << absl::string_view(text);
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
