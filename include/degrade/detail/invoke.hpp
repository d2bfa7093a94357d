// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The exception boundary, written once. degrade never throws, but the
// callables it runs for users (a breaker's call, a manager's signal source, a
// hot list's refresh, a predicate, an observer, a log sink) may. Whatever
// they throw stops here and becomes one of two things:
//
//   * a status, for a callable whose result is a status: always UNKNOWN with
//     the `callable_exception` payload that IsCallableException() reads, and
//     a message naming where it was called and what was thrown, whether the
//     callable was a breaker's call, a signal source or a hot-list refresh;
//   * a fixed answer, for a predicate (`SafePredicate`), or nothing, for a
//     callback (`CallQuietly`).
//
// With -fno-exceptions the same functions compile to plain calls. Also here:
// the small result traits every combinator shares (`ResultOf`, `StatusOf`,
// `Unwrapped`, `IsStatusOrOf`).

#ifndef DEGRADE_DETAIL_INVOKE_HPP_
#define DEGRADE_DETAIL_INVOKE_HPP_

#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/macros.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// `absl::StatusOr<T>`, or `absl::Status` for `void`.
template <typename T>
using ResultOf =
    std::conditional_t<std::is_void_v<T>, absl::Status, absl::StatusOr<T>>;

// The T of a callable returning T or absl::StatusOr<T> (void for Status).
template <typename R>
struct Unwrapped {
  using type = R;
};
template <typename T>
struct Unwrapped<absl::StatusOr<T>> {
  using type = T;
};
template <>
struct Unwrapped<absl::Status> {
  using type = void;
};

template <typename R, typename T>
inline constexpr bool kIsStatusOrOf =
    std::is_same_v<std::decay_t<R>, absl::StatusOr<T>>;

inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// Runs `f()`. If it throws, returns `on_throw(what)` instead, where `what`
// is the exception's what() (or a sentence saying it was not a
// std::exception). `on_throw` must not throw. The one try/catch of the
// library: everything below is built on it.
template <typename F, typename OnThrow>
auto InvokeOr(F&& f, OnThrow&& on_throw) {
#if DEGRADE_HAS_EXCEPTIONS
  try {
    return std::invoke(std::forward<F>(f));
  } catch (const std::exception& e) {
    return std::invoke(std::forward<OnThrow>(on_throw),
                       absl::string_view(e.what()));
  } catch (...) {
    return std::invoke(
        std::forward<OnThrow>(on_throw),
        absl::string_view("an exception not derived from std::exception"));
  }
#else
  (void)on_throw;
  return std::invoke(std::forward<F>(f));
#endif
}

// Calls `f(args...)`, swallowing anything it throws: a logging or observing
// callback must not break the component calling it, nor silence the
// callbacks after it.
template <typename F, typename... Args>
void CallQuietly(const F& f, const Args&... args) {
  InvokeOr([&] { (void)std::invoke(f, args...); }, [](absl::string_view) {});
}

// Runs a user predicate, turning a throw into `on_throw`.
template <typename F, typename... Args>
bool SafePredicate(const F& f, bool on_throw, const Args&... args) {
  return InvokeOr([&] { return static_cast<bool>(std::invoke(f, args...)); },
                  [on_throw](absl::string_view) { return on_throw; });
}

// `f()`'s result as ResultOf<T>: a T or StatusOr<T> for a T result, void or
// Status for a void one; a static_assert names what was expected otherwise.
template <typename T, typename F>
ResultOf<T> InvokeToResult(F& f) {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_void_v<T>) {
    if constexpr (std::is_void_v<R>) {
      std::invoke(f);
      return absl::OkStatus();
    } else {
      static_assert(std::is_convertible_v<R, absl::Status>,
                    "degrade: the callable must return void or absl::Status");
      return std::invoke(f);
    }
  } else {
    static_assert(!std::is_same_v<std::decay_t<R>, absl::Status>,
                  "degrade: the callable returns absl::Status; return "
                  "absl::StatusOr<T> (or use a void result type)");
    static_assert(std::is_convertible_v<R, absl::StatusOr<T>>,
                  "degrade: the callable must return T or absl::StatusOr<T>");
    return absl::StatusOr<T>(std::invoke(f));
  }
}

// Runs `f` for a ResultOf<T>, turning a throw into the one status shape of
// the library (CallableExceptionError: UNKNOWN with the callable_exception
// payload), its message naming where it was called: `kind` alone
// ("CallWithTimeout"), or `kind 'name'` ("circuit breaker 'recall'"), plus
// `what_for` if given ("source for 'gpu_util'"). Nothing is formatted unless
// something was thrown.
template <typename T, typename F>
ResultOf<T> InvokeCatching(F& f, absl::string_view kind,
                           absl::string_view name = absl::string_view(),
                           absl::string_view what_for = absl::string_view()) {
  return InvokeOr([&f]() -> ResultOf<T> { return InvokeToResult<T>(f); },
                  [&](absl::string_view what) -> ResultOf<T> {
                    std::string where(kind);
                    if (!name.empty()) absl::StrAppend(&where, " '", name, "'");
                    if (!what_for.empty())
                      absl::StrAppend(&where, ": ", what_for);
                    return CallableExceptionError(where, what);
                  });
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_INVOKE_HPP_
