// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: control_document.hpp
// -----------------------------------------------------------------------------
//
// The incident kill switch as data. During an incident an operator needs
// one action that reaches every instance of a service within seconds,
// expires by itself, and cannot be undone by a config centre re-pushing an
// old value. A control document is that action: one JSON object, written to
// a file (a ConfigMap) or an etcd key, that every instance applies through a
// `FleetControl` (fleet_control.hpp). This header is its format and rules;
// it knows no manager and no breaker.
//
//   {
//     "degrade_control": {
//       "version": 42,
//       "expires_at": "2026-12-04T22:00:00Z",
//       "reason": "INC-1234: ranker saturated, shedding rerank",
//       "managers": {
//         "recsys": {"level": 2, "features_off": ["semantic_cache"]}
//       },
//       "breakers_open": {"rank": "2026-12-04T21:30:00Z", "rerank": true}
//     }
//   }
//
// `version` is an integer in [1, 2^53] (kMaxControlVersion) and only ever
// grows: an instance refuses a version older than the one it applied, so a
// stale re-push changes nothing. `expires_at` is an absolute RFC 3339 time (a
// relative TTL would restart on every re-push); a document already expired is
// refused, and one in force stops applying at that instant. `reason` (required,
// non-empty) is carried by every log line the document causes. `managers`
// holds, per manager name, a floor under the level (the signals still
// raise it above) and features to switch off; `breakers_open` forces breakers
// open until a time (not after `expires_at`) or, with `true`, until
// `expires_at`. Every key but `version`, `expires_at` and `reason` is optional;
// unknown keys are refused, as in the config (config_parse.hpp): a typo in a
// kill switch must not silently switch nothing.
//
//   absl::StatusOr<degrade::ControlDocument> doc =
//       degrade::ParseControlDocument(text, "etcd: /degrade/control",
//                                     clock.Now());
//   if (!doc.ok()) return doc.status();  // names the path, value and rule
//
// Errors are INVALID_ARGUMENT and read like the config's:
//
//   etcd: /degrade/control: degrade_control.expires_at =
//   "2026-12-04T20:00:00Z": is in the past (now 2026-12-04T21:00:00Z)
//
// Thread safety: the functions are thread-safe; they share no state.

#ifndef DEGRADE_CONTROL_DOCUMENT_HPP_
#define DEGRADE_CONTROL_DOCUMENT_HPP_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/json_document.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest control document accepted, 64 KiB: a real one is a few
// hundred bytes, and a config centre's value near this is a wrong key.
inline constexpr std::size_t kMaxControlBytes = std::size_t{64} << 10;

// The highest `version` a document may carry: 2^53, the largest integer
// every JSON reader (JavaScript, jq) keeps exact. Versions only grow, so a
// document at 2^64 - 1 (a typo, a -1 through an unsigned cast) would be
// the last one any instance ever applied until it restarts; above 2^53 a
// document is refused instead. Counters, Unix seconds, milliseconds and
// microseconds fit; Unix nanoseconds do not.
inline constexpr uint64_t kMaxControlVersion = uint64_t{1} << 53;

// What a control document asks of one manager.
struct ManagerControlSpec {
  std::optional<int> level;               // a floor under the level, >= 1
  std::vector<std::string> features_off;  // distinct, non-empty names
};

// ControlDocument
//
// A parsed, validated control document. Plain value: thread-compatible.
struct ControlDocument {
  uint64_t version = 0;
  absl::Time expires_at;
  std::string reason;
  std::map<std::string, ManagerControlSpec> managers;
  // Breaker name -> until when it is held open (<= expires_at).
  std::map<std::string, absl::Time> breakers_open;
};

// ParseControlDocument()
//
// Parses and validates `json_text` (format in the file comment) at time
// `now`, which `expires_at` and every breaker's time must be after.
// `source` names the text in errors. INVALID_ARGUMENT naming the source,
// the JSON path, the value and the rule on any fault; a text over
// kMaxControlBytes is refused before it is parsed.
//
// Thread-safe.
absl::StatusOr<ControlDocument> ParseControlDocument(
    absl::string_view json_text, absl::string_view source, absl::Time now);

// ---- Implementation details -------------------------------------------------

namespace detail {
namespace control {

namespace json = detail::json;

inline constexpr std::size_t kMaxReasonBytes = 1024;

// `t` as RFC 3339 in UTC with a `Z`, as documents and logs write it.
inline std::string UtcText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

// The last time a breaker can hold (its clock counts int64 nanoseconds).
inline absl::Time LastControlTime() {
  return absl::FromUnixNanos(std::numeric_limits<int64_t>::max() - 1);
}
// The deepest level a document may name: a manager's levels are at most
// kMaxLevels (degradation_config.hpp); the manager checks its own count.
inline constexpr int kMaxControlLevel = 64;

inline absl::Status ReadTime(absl::string_view source, absl::string_view path,
                             const json::Json& j, absl::Time now,
                             absl::Time* out) {
  if (!j.is_string()) {
    return json::WrongType(source, path, j,
                           "an RFC 3339 time string, e.g. "
                           "\"2026-12-04T22:00:00Z\"");
  }
  std::string error;
  absl::Time t;
  if (!absl::ParseTime(absl::RFC3339_full, j.get_ref<const std::string&>(), &t,
                       &error)) {
    return json::Error(source, path, j,
                       absl::StrCat("not an RFC 3339 time (", error,
                                    "), e.g. \"2026-12-04T22:00:00Z\""));
  }
  if (t == absl::InfiniteFuture() || t == absl::InfinitePast()) {
    return json::Error(source, path, j, "must be a finite time");
  }
  if (t > LastControlTime()) {
    return json::Error(
        source, path, j,
        absl::StrCat("must be before ", UtcText(LastControlTime()),
                     " (the breakers' clocks end there)"));
  }
  // Whole nanoseconds, as the managers and breakers keep time: a breaker
  // is released by the time it was given, compared exactly.
  t = absl::FromUnixNanos(absl::ToUnixNanos(t));
  if (!(t > now)) {
    return json::Error(source, path, j,
                       absl::StrCat("is in the past (now ", UtcText(now), ")"));
  }
  *out = t;
  return absl::OkStatus();
}

inline absl::Status ReadManager(absl::string_view source,
                                absl::string_view path, const json::Json& j,
                                ManagerControlSpec* out) {
  if (!j.is_object()) {
    return json::WrongType(source, path, j,
                           "an object with \"level\" and/or \"features_off\"");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string p = json::AppendKey(path, it.key());
    if (it.key() == "level") {
      const json::Json& v = it.value();
      if (!v.is_number_integer()) {
        return json::WrongType(source, p, v, "an integer level");
      }
      const int64_t level = v.get<int64_t>();
      if (level < 1 || level > kMaxControlLevel) {
        return json::Error(
            source, p, v,
            absl::StrCat("must be in [1, ", kMaxControlLevel,
                         "]: a floor under the manager's level (the manager "
                         "checks its own levels; a floor of 0 holds nothing, "
                         "leave \"level\" out)"));
      }
      out->level = static_cast<int>(level);
    } else if (it.key() == "features_off") {
      if (absl::Status s = json::ReadNameList(source, p, it.value(), "feature",
                                              &out->features_off);
          !s.ok()) {
        return s;
      }
      for (std::size_t i = 0; i < out->features_off.size(); ++i) {
        if (out->features_off[i] == kAllNonCritical) {
          return json::Error(
              source, json::AppendIndex(p, i), it.value()[i],
              "is the config's wildcard, not a feature: name the features, "
              "or set the level whose config switches them off");
        }
      }
    } else {
      return json::UnknownKey(source, p, it.value(), "level, features_off");
    }
  }
  if (!out->level && out->features_off.empty()) {
    return json::Error(source, path, j,
                       "asks nothing of the manager (give \"level\" or "
                       "\"features_off\", or leave the manager out)");
  }
  return absl::OkStatus();
}

inline absl::Status ReadBody(absl::string_view source, const json::Json& body,
                             absl::Time now, ControlDocument* doc) {
  constexpr absl::string_view kRoot = "degrade_control";
  if (!body.is_object()) {
    return json::WrongType(source, kRoot, body, "an object");
  }
  const json::Json* breakers = nullptr;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string p = json::AppendKey(kRoot, it.key());
    const json::Json& v = it.value();
    if (it.key() == "version") {
      if (!v.is_number_integer()) {
        return json::WrongType(source, p, v, "an integer");
      }
      if (v.is_number_unsigned() ? v.get<uint64_t>() == 0
                                 : v.get<int64_t>() < 1) {
        return json::Error(source, p, v, "must be >= 1");
      }
      if (v.is_number_unsigned() && v.get<uint64_t>() > kMaxControlVersion) {
        return json::Error(source, p, v,
                           "must be <= 9007199254740992 (2^53): versions only "
                           "grow, so a larger one would block every later "
                           "document");
      }
      doc->version = v.get<uint64_t>();
    } else if (it.key() == "expires_at") {
      if (absl::Status s = ReadTime(source, p, v, now, &doc->expires_at);
          !s.ok()) {
        return s;
      }
    } else if (it.key() == "reason") {
      if (absl::Status s = json::ReadString(source, p, v, &doc->reason);
          !s.ok()) {
        return s;
      }
      if (doc->reason.empty() || doc->reason.size() > kMaxReasonBytes) {
        return json::Error(source, p, v,
                           absl::StrCat("must be 1 to ", kMaxReasonBytes,
                                        " bytes: say why, for the log"));
      }
    } else if (it.key() == "managers") {
      if (!v.is_object()) {
        return json::WrongType(source, p, v, "an object: manager -> control");
      }
      for (auto m = v.begin(); m != v.end(); ++m) {
        const std::string mp = json::AppendKey(p, m.key());
        if (m.key().empty()) {
          return json::Error(source, mp, m.value(), "empty manager name");
        }
        if (absl::Status s =
                ReadManager(source, mp, m.value(), &doc->managers[m.key()]);
            !s.ok()) {
          return s;
        }
      }
    } else if (it.key() == "breakers_open") {
      if (!v.is_object()) {
        return json::WrongType(source, p, v,
                               "an object: breaker -> time or true");
      }
      breakers = &v;  // read after expires_at, which `true` refers to
    } else {
      return json::UnknownKey(
          source, p, v, "version, expires_at, reason, managers, breakers_open");
    }
  }
  for (const char* key : {"version", "expires_at", "reason"}) {
    if (body.find(key) == body.end()) {
      return json::ErrorWithText(source, json::AppendKey(kRoot, key),
                                 "(missing)", "is required");
    }
  }
  if (breakers == nullptr) return absl::OkStatus();
  const std::string bp = json::AppendKey(kRoot, "breakers_open");
  for (auto b = breakers->begin(); b != breakers->end(); ++b) {
    const std::string p = json::AppendKey(bp, b.key());
    const json::Json& v = b.value();
    if (b.key().empty()) return json::Error(source, p, v, "empty breaker name");
    absl::Time until = doc->expires_at;
    if (v.is_boolean()) {
      if (!v.get<bool>()) {
        return json::Error(source, p, v,
                           "false forces nothing: leave the breaker out");
      }
    } else if (absl::Status s = ReadTime(source, p, v, now, &until); !s.ok()) {
      return s;
    } else if (until > doc->expires_at) {
      return json::Error(source, p, v,
                         "is after expires_at: the document's end ends "
                         "everything it forces");
    }
    doc->breakers_open[b.key()] = until;
  }
  return absl::OkStatus();
}

}  // namespace control
}  // namespace detail

inline absl::StatusOr<ControlDocument> ParseControlDocument(
    absl::string_view json_text, absl::string_view source_name,
    absl::Time now) {
  namespace json = detail::json;
  const std::string source = detail::Printable(source_name);
  absl::StatusOr<json::Json> body =
      json::ParseEnvelope(json_text, source, "control document",
                          kMaxControlBytes, "degrade_control");
  if (!body.ok()) return body.status();
  ControlDocument doc;
  if (absl::Status s = detail::control::ReadBody(source, *body, now, &doc);
      !s.ok()) {
    return s;
  }
  return doc;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_CONTROL_DOCUMENT_HPP_
