// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The alignment that keeps a hot atomic on a cache line of its own, so that
// threads writing neighbouring counters do not take the line from each other
// (false sharing). 64 bytes on the x86-64 and ARM64 servers degrade targets;
// std::hardware_destructive_interference_size would say the same but warns on
// g++ 12 when used in a header (its value may differ between translation
// units compiled with different -mtune).

#ifndef DEGRADE_DETAIL_CACHE_LINE_HPP_
#define DEGRADE_DETAIL_CACHE_LINE_HPP_

#include <cstddef>

#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

inline constexpr std::size_t kCacheLine = 64;

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_CACHE_LINE_HPP_
