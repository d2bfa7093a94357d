// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Build-mode switches shared by the headers. The library never throws; these
// let it catch what user callables throw when exceptions are on, and compile
// cleanly with -fno-exceptions when they are off.

#ifndef DEGRADE_DETAIL_MACROS_HPP_
#define DEGRADE_DETAIL_MACROS_HPP_

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define DEGRADE_HAS_EXCEPTIONS 1
#else
#define DEGRADE_HAS_EXCEPTIONS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DEGRADE_LIKELY(x) (__builtin_expect(!!(x), 1))
#define DEGRADE_UNLIKELY(x) (__builtin_expect(!!(x), 0))
// For the few functions on a call's success path that the compiler's size
// heuristics would otherwise leave out of line (a measured cost; see
// docs/performance.md).
#define DEGRADE_ALWAYS_INLINE __attribute__((always_inline)) inline
#define DEGRADE_NOINLINE __attribute__((noinline))
#else
#define DEGRADE_LIKELY(x) (x)
#define DEGRADE_UNLIKELY(x) (x)
#define DEGRADE_ALWAYS_INLINE inline
#define DEGRADE_NOINLINE
#endif

#endif  // DEGRADE_DETAIL_MACROS_HPP_
