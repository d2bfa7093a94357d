// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/fallback/feature_vector.hpp
// -----------------------------------------------------------------------------
//
// The rules a feature vector read from JSON must meet, written once for the
// feature stage's Plan-B files: the global average (`DefaultFeatures`,
// `{"dimension": 4, "values": [...]}`) and the per-segment averages
// (`SegmentDefaults`, `{"dimension": 4, "segments": {"US|ios|3": [...]}}`).
// Both files spell the dimension the same way and each vector the same way,
// so both refuse the same bad number with the same words:
//
//   absl::StatusOr<std::size_t> dim =
//       detail::ReadFeatureDimension(source, root, expected_dimension);
//   if (!dim.ok()) return dim.status();
//   std::vector<float> values;
//   absl::Status s = detail::ReadFeatureValues(
//       source, "values", root["values"], *dim, &values);
//
// A value is taken when it rounds to a finite float (`DoubleToFiniteFloat`):
// an overflow would become inf and poison every score.
//
// Thread-safe: pure functions of their arguments.

#ifndef DEGRADE_DETAIL_FALLBACK_FEATURE_VECTOR_HPP_
#define DEGRADE_DETAIL_FALLBACK_FEATURE_VECTOR_HPP_

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_document.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The largest dimension accepted, so a corrupt "dimension" can't make us
// reserve gigabytes (kMaxFeatureDimension in default_features.hpp).
inline constexpr std::size_t kFeatureDimensionCap = std::size_t{1} << 24;

// `d` as a float, into `*out`, when it rounds to a finite one (round to
// nearest); false for NaN, infinities and magnitudes that round to inf.
inline bool DoubleToFiniteFloat(double d, float* out) {
  // Halfway between FLT_MAX and the next power of two, 2^128 - 2^103
  // (exact in a double): below it d rounds to FLT_MAX or less, at it the
  // tie goes to the even neighbour, 2^128, which is infinity.
  constexpr double kRoundsToInfinity = 0x1.ffffffp+127;
  if (!std::isfinite(d) || std::fabs(d) >= kRoundsToInfinity) return false;
  // Clamped by hand: a double beyond FLT_MAX does not fit a float, and
  // converting it is undefined behaviour even when it would round down.
  const double kFltMax = static_cast<double>(FLT_MAX);
  *out = d > kFltMax    ? FLT_MAX
         : d < -kFltMax ? -FLT_MAX
                        : static_cast<float>(d);
  return true;
}

// The "dimension" key of `root` (an object): a positive integer up to
// kFeatureDimensionCap, equal to `expected_dimension` unless that is 0.
// Errors are INVALID_ARGUMENT starting with `source`.
inline absl::StatusOr<std::size_t> ReadFeatureDimension(
    absl::string_view source, const json::Json& root,
    std::size_t expected_dimension) {
  const auto dim_it = root.find("dimension");
  if (dim_it == root.end()) {
    return json::ErrorWithText(
        source, "dimension", "(missing)",
        "the top-level object needs a \"dimension\" key");
  }
  if (!dim_it->is_number_integer()) {
    return json::WrongType(source, "dimension", *dim_it, "a positive integer");
  }
  // nlohmann stores non-negative integers as unsigned; a negative one is
  // signed.
  if (!dim_it->is_number_unsigned() || dim_it->get<uint64_t>() == 0 ||
      dim_it->get<uint64_t>() > kFeatureDimensionCap) {
    return json::Error(source, "dimension", *dim_it,
                       absl::StrCat("must be in 1..", kFeatureDimensionCap));
  }
  const auto dimension = static_cast<std::size_t>(dim_it->get<uint64_t>());
  if (expected_dimension != 0 && dimension != expected_dimension) {
    return json::Error(
        source, "dimension", *dim_it,
        absl::StrCat("the model expects dimension ", expected_dimension));
  }
  return dimension;
}

// `v`, found at `path`, as `dimension` floats appended to `*out` (cleared
// first): a non-empty array of exactly `dimension` JSON numbers, each
// rounding to a finite float. Errors are INVALID_ARGUMENT naming `source`,
// the path (down to the element) and the rule; `*out` is then unspecified.
inline absl::Status ReadFeatureValues(absl::string_view source,
                                      absl::string_view path,
                                      const json::Json& v,
                                      std::size_t dimension,
                                      std::vector<float>* out) {
  if (!v.is_array()) {
    return json::WrongType(source, path, v, "an array of numbers");
  }
  if (v.empty()) {
    return json::ErrorWithText(source, path, "[]",
                               "is empty; a default vector needs values");
  }
  if (v.size() != dimension) {
    return json::ErrorWithText(
        source, path, absl::StrCat("(", v.size(), " values)"),
        absl::StrCat("has ", v.size(), " values but \"dimension\" is ",
                     dimension));
  }
  out->clear();
  out->reserve(dimension);
  for (std::size_t i = 0; i < dimension; ++i) {
    const json::Json& e = v[i];
    if (!e.is_number()) {
      return json::WrongType(source, json::AppendIndex(path, i), e, "a number");
    }
    float f;
    // The JSON parser already refuses literals beyond double range (1e400).
    if (!DoubleToFiniteFloat(e.get<double>(), &f)) {
      return json::Error(source, json::AppendIndex(path, i), e,
                         "is not a finite number within float range");
    }
    out->push_back(f);
  }
  return absl::OkStatus();
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_FALLBACK_FEATURE_VECTOR_HPP_
