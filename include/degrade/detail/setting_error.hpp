// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The one wording of a bad setting, for every component that validates its
// settings (breaker, admission, queue, limiter, retry budget, retrier,
// throttler, hedge, the Redis hot-list source):
//
//   retry budget 'recall': setting 'ttl' = 500ms is invalid: must be >= 1s
//
//   const detail::SettingOwner who("retry budget", s.name);
//   if (...) return who.Invalid("ttl", absl::FormatDuration(s.ttl),
//                               "must be >= 1s");
//
// Users grep logs for "is invalid", so every component words it alike, and
// the owner's name is always Printable(): a name with a newline or bad
// UTF-8 must not be able to split or forge a log line.
//
// Pure; thread-safe.

#ifndef DEGRADE_DETAIL_SETTING_ERROR_HPP_
#define DEGRADE_DETAIL_SETTING_ERROR_HPP_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// INVALID_ARGUMENT: "<who>: setting '<setting>' = <value> is invalid: <rule>".
template <typename Value>
absl::Status SettingError(absl::string_view who, absl::string_view setting,
                          const Value& value, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(
      who, ": setting '", setting, "' = ", value, " is invalid: ", rule));
}

// Who a setting error is about: "<kind> '<name>'", the name made printable.
class SettingOwner {
 public:
  SettingOwner(absl::string_view kind, absl::string_view name)
      : who_(absl::StrCat(kind, " '", Printable(name), "'")) {}

  // An owner that no single name identifies (a Redis source is its host,
  // port and key): `who` as given, each user-supplied part already
  // Printable().
  static SettingOwner Described(std::string who) {
    return SettingOwner(std::move(who));
  }

  const std::string& who() const { return who_; }

  template <typename Value>
  absl::Status Invalid(absl::string_view setting, const Value& value,
                       absl::string_view rule) const {
    return SettingError(who_, setting, value, rule);
  }

  // For a setting whose value cannot be printed (a callback):
  // "<who>: setting '<setting>' is invalid: <rule>".
  absl::Status Invalid(absl::string_view setting,
                       absl::string_view rule) const {
    return absl::InvalidArgumentError(
        absl::StrCat(who_, ": setting '", setting, "' is invalid: ", rule));
  }

 private:
  explicit SettingOwner(std::string who) : who_(std::move(who)) {}

  std::string who_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_SETTING_ERROR_HPP_
