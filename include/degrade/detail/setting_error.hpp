// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The one wording of a bad setting for the components that validate their
// settings in a Create() (retry budget, retrier, throttler):
//
//   retry budget 'recall': setting 'ttl' = 500ms is invalid: must be in [1s, 60s]
//
//   return detail::SettingError(who, "ttl", absl::FormatDuration(s.ttl),
//                               "must be in [1s, 60s]");
//
// Pure; thread-safe.

#ifndef DEGRADE_DETAIL_SETTING_ERROR_HPP_
#define DEGRADE_DETAIL_SETTING_ERROR_HPP_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// "<kind> '<name>'", the name made printable: who a SettingError is about.
inline std::string SettingOwner(absl::string_view kind, absl::string_view name) {
  return absl::StrCat(kind, " '", Printable(name), "'");
}

// INVALID_ARGUMENT: "<who>: setting '<setting>' = <value> is invalid: <rule>".
template <typename Value>
absl::Status SettingError(absl::string_view who, absl::string_view setting,
                          const Value& value, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(
      who, ": setting '", setting, "' = ", value, " is invalid: ", rule));
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SETTING_ERROR_HPP_
