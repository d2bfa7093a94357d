// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the fleet control document parser (`ParseControlDocument`),
// which reads what an operator (or anyone who can write the etcd key or the
// ConfigMap) published. Any bytes in: a document or an INVALID_ARGUMENT
// status. Beyond that it checks:
//
//   * an accepted document keeps every rule of the format: version in
//     [1, 2^53], expires_at after now, a reason of 1 to 1024 bytes, managers
//     and breakers with non-empty names, levels in [1, 64], distinct
//     non-empty features that are not the config's wildcard, each breaker
//     held open after now and not past expires_at;
//   * it re-validates: written back as JSON it parses to the same document,
//     and at its own expiry instant the same text is refused naming
//     degrade_control.expires_at (a breaker's time likewise names it);
//   * the size bound holds at the byte: padded with whitespace to
//     kMaxControlBytes it is still accepted, one byte more is refused; and
//     an accepted text nests no deeper than the format does;
//   * a refusal starts with the source, is bounded and printable, and once
//     the envelope is read it names the field under degrade_control.

#ifndef DEGRADE_TESTS_FUZZ_CONTROL_DOCUMENT_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_CONTROL_DOCUMENT_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/control_document.hpp"
#include "degrade/degradation_config.hpp"
#include "degrade/detail/json_document.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

// The instant every fuzzed document is read at; the seeds expire an hour
// later.
inline absl::Time ControlFuzzNow() {
  return absl::FromUnixSeconds(1796418000);  // 2026-12-04T21:00:00Z
}

// The longest refusal: a path of abbreviated keys (at most kMaxDepth of
// them, each at most ~64 escaped characters), a described value and a rule.
inline constexpr std::size_t kMaxControlError = 16384;

// The deepest nesting of a valid document:
// {"degrade_control": {"managers": {"m": {"features_off": [ ...
inline constexpr int kMaxControlNesting = 5;

// Bracket nesting outside strings; exact for well-formed JSON.
inline int JsonNesting(absl::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

// `doc` written back in the document format.
inline std::string WriteControlDocument(const degrade::ControlDocument& doc) {
  namespace json = degrade::detail::json;
  using degrade::detail::control::UtcText;
  json::Json body = json::Json::object();
  body["version"] = doc.version;
  body["expires_at"] = UtcText(doc.expires_at);
  body["reason"] = doc.reason;
  if (!doc.managers.empty()) {
    json::Json managers = json::Json::object();
    for (const auto& [name, spec] : doc.managers) {
      json::Json m = json::Json::object();
      if (spec.level) m["level"] = *spec.level;
      if (!spec.features_off.empty()) m["features_off"] = spec.features_off;
      managers[name] = std::move(m);
    }
    body["managers"] = std::move(managers);
  }
  if (!doc.breakers_open.empty()) {
    json::Json breakers = json::Json::object();
    for (const auto& [name, until] : doc.breakers_open) {
      breakers[name] = UtcText(until);
    }
    body["breakers_open"] = std::move(breakers);
  }
  json::Json root = json::Json::object();
  root["degrade_control"] = std::move(body);
  return root.dump(-1, ' ', /*ensure_ascii=*/false,
                   json::Json::error_handler_t::strict);
}

inline bool SameControlDocument(const degrade::ControlDocument& a,
                                const degrade::ControlDocument& b) {
  if (a.version != b.version || a.expires_at != b.expires_at ||
      a.reason != b.reason || a.breakers_open != b.breakers_open ||
      a.managers.size() != b.managers.size()) {
    return false;
  }
  for (const auto& [name, spec] : a.managers) {
    const auto it = b.managers.find(name);
    if (it == b.managers.end() || it->second.level != spec.level ||
        it->second.features_off != spec.features_off) {
      return false;
    }
  }
  return true;
}

inline void CheckControlRules(const degrade::ControlDocument& doc,
                              absl::Time now) {
  DEGRADE_FUZZ_CHECK(
      doc.version >= 1 && doc.version <= degrade::kMaxControlVersion,
      doc.version);
  DEGRADE_FUZZ_CHECK(doc.expires_at > now, absl::FormatTime(doc.expires_at));
  DEGRADE_FUZZ_CHECK(
      doc.expires_at <= degrade::detail::control::LastControlTime(),
      absl::FormatTime(doc.expires_at));
  DEGRADE_FUZZ_CHECK(
      absl::FromUnixNanos(absl::ToUnixNanos(doc.expires_at)) == doc.expires_at,
      "expires_at is not whole nanoseconds");
  DEGRADE_FUZZ_CHECK(!doc.reason.empty() && doc.reason.size() <= 1024,
                     doc.reason.size());
  for (const auto& [name, spec] : doc.managers) {
    DEGRADE_FUZZ_CHECK(!name.empty(), "empty manager name");
    DEGRADE_FUZZ_CHECK(spec.level || !spec.features_off.empty(), name);
    if (spec.level) {
      DEGRADE_FUZZ_CHECK(*spec.level >= 1 && *spec.level <= 64, *spec.level);
    }
    for (std::size_t i = 0; i < spec.features_off.size(); ++i) {
      const std::string& f = spec.features_off[i];
      DEGRADE_FUZZ_CHECK(!f.empty(), name, " feature ", i);
      DEGRADE_FUZZ_CHECK(f != degrade::kAllNonCritical, name);
      for (std::size_t k = 0; k < i; ++k) {
        DEGRADE_FUZZ_CHECK(spec.features_off[k] != f, "duplicate ", f);
      }
    }
  }
  for (const auto& [name, until] : doc.breakers_open) {
    DEGRADE_FUZZ_CHECK(!name.empty(), "empty breaker name");
    DEGRADE_FUZZ_CHECK(until > now && until <= doc.expires_at, name);
  }
}

inline void CheckControlRefusal(const absl::Status& s) {
  DEGRADE_FUZZ_CHECK_REFUSED(s);
  DEGRADE_FUZZ_CHECK(s.message().size() <= kMaxControlError,
                     s.message().size());
  DEGRADE_FUZZ_CHECK(IsPrintableUtf8(s.message()), s.message());
}

inline int FuzzControlDocument(const uint8_t* data, std::size_t size) {
  const absl::string_view text = AsText(data, size);
  const absl::Time now = ControlFuzzNow();

  const absl::StatusOr<degrade::ControlDocument> doc =
      degrade::ParseControlDocument(text, "fuzz", now);
  if (!doc.ok()) {
    CheckControlRefusal(doc.status());
    // Past the envelope, every fault is a field under the root key.
    const absl::StatusOr<degrade::detail::json::Json> envelope =
        degrade::detail::json::ParseEnvelope(text, "fuzz", "control document",
                                             degrade::kMaxControlBytes,
                                             "degrade_control");
    if (envelope.ok()) {
      DEGRADE_FUZZ_CHECK(
          absl::StartsWith(doc.status().message(), "fuzz: degrade_control"),
          doc.status().message());
    }
    return 0;
  }
  CheckControlRules(*doc, now);
  DEGRADE_FUZZ_CHECK(JsonNesting(text) <= kMaxControlNesting,
                     JsonNesting(text));

  // Written back, it reads the same.
  const std::string written = WriteControlDocument(*doc);
  const absl::StatusOr<degrade::ControlDocument> again =
      degrade::ParseControlDocument(written, "fuzz", now);
  DEGRADE_FUZZ_CHECK(again.ok(), written, ": ", again.status().ToString());
  DEGRADE_FUZZ_CHECK(SameControlDocument(*again, *doc), written);

  // At its expiry it is refused, for that reason; at its earliest breaker's
  // release (before the expiry), for that breaker.
  const absl::StatusOr<degrade::ControlDocument> expired =
      degrade::ParseControlDocument(text, "fuzz", doc->expires_at);
  DEGRADE_FUZZ_CHECK(!expired.ok(), "accepted at its expiry");
  CheckControlRefusal(expired.status());
  DEGRADE_FUZZ_CHECK(absl::StartsWith(expired.status().message(),
                                      "fuzz: degrade_control.expires_at = "),
                     expired.status().message());
  absl::Time first_release = doc->expires_at;
  for (const auto& [name, until] : doc->breakers_open) {
    if (until < first_release) first_release = until;
  }
  if (first_release < doc->expires_at) {
    const absl::StatusOr<degrade::ControlDocument> released =
        degrade::ParseControlDocument(text, "fuzz", first_release);
    DEGRADE_FUZZ_CHECK(!released.ok(), "accepted at a breaker's release");
    DEGRADE_FUZZ_CHECK(absl::StartsWith(released.status().message(),
                                        "fuzz: degrade_control.breakers_open"),
                       released.status().message());
  }

  // The byte cap, at the byte.
  if (size <= degrade::kMaxControlBytes) {
    std::string padded(text);
    padded.resize(degrade::kMaxControlBytes, ' ');
    const absl::StatusOr<degrade::ControlDocument> at_cap =
        degrade::ParseControlDocument(padded, "fuzz", now);
    DEGRADE_FUZZ_CHECK(at_cap.ok() && SameControlDocument(*at_cap, *doc),
                       at_cap.status().ToString());
    padded.push_back(' ');
    const absl::StatusOr<degrade::ControlDocument> over =
        degrade::ParseControlDocument(padded, "fuzz", now);
    DEGRADE_FUZZ_CHECK(!over.ok(), "accepted over kMaxControlBytes");
    CheckControlRefusal(over.status());
  }
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_CONTROL_DOCUMENT_FUZZ_HPP_
