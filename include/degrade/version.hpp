// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: version.hpp
// -----------------------------------------------------------------------------
//
// The library's version, and the versioned inline namespace every public name
// lives in. Users write `degrade::CircuitBreaker`; the linker sees
// `degrade::v0_1::CircuitBreaker`. Two copies of degrade of different
// versions linked into one binary (a service and a vendored dependency, say)
// then define different symbols instead of silently breaking the
// one-definition rule, and a translation unit that includes headers of two
// versions is warned at compile time.
//
//   #include "degrade/version.hpp"
//   static_assert(DEGRADE_VERSION >= 100, "needs degrade 0.1 or later");
//   std::printf("degrade %s\n", DEGRADE_VERSION_STRING);
//
// The ABI namespace changes with the minor version while the major version
// is 0 (any 0.x release may change layouts), and with the major version from
// 1.0 on. Thread safety: nothing here has state.

// Deliberately outside the include guard: a second copy of this header from
// another version has the same guard, so only here can it notice the first.
#if defined(DEGRADE_VERSION_MAJOR) &&                            \
    (DEGRADE_VERSION_MAJOR != 0 || DEGRADE_VERSION_MINOR != 1 || \
     DEGRADE_VERSION_PATCH != 0)
#warning "degrade: headers of two different versions are included together"
#endif

#ifndef DEGRADE_VERSION_HPP_
#define DEGRADE_VERSION_HPP_

// Kept equal to project(VERSION) in CMakeLists.txt (a hygiene test checks).
#define DEGRADE_VERSION_MAJOR 0
#define DEGRADE_VERSION_MINOR 1
#define DEGRADE_VERSION_PATCH 0
// major * 10000 + minor * 100 + patch, for comparisons in #if.
#define DEGRADE_VERSION                                          \
  (DEGRADE_VERSION_MAJOR * 10000 + DEGRADE_VERSION_MINOR * 100 + \
   DEGRADE_VERSION_PATCH)

#define DEGRADE_DETAIL_STRINGIFY2(x) #x
#define DEGRADE_DETAIL_STRINGIFY(x) DEGRADE_DETAIL_STRINGIFY2(x)
#define DEGRADE_VERSION_STRING                    \
  DEGRADE_DETAIL_STRINGIFY(DEGRADE_VERSION_MAJOR) \
  "." DEGRADE_DETAIL_STRINGIFY(                   \
      DEGRADE_VERSION_MINOR) "." DEGRADE_DETAIL_STRINGIFY(DEGRADE_VERSION_PATCH)

// The inline namespace of this version's ABI.
#define DEGRADE_ABI_NAMESPACE v0_1

// Every header opens and closes `degrade` with these, so that everything is
// declared inside the versioned inline namespace.
#define DEGRADE_NAMESPACE_BEGIN \
  namespace degrade {           \
  inline namespace DEGRADE_ABI_NAMESPACE {
#define DEGRADE_NAMESPACE_END \
  }                           \
  }

#endif  // DEGRADE_VERSION_HPP_
