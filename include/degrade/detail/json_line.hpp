// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The one builder of degrade's JSON event lines. Every component's line
// (breaker transitions, the manager's level changes, escalations, fallbacks
// served, fleet control) is built here, so the escaping, the number and time
// spellings and the "time first" rule cannot drift from one component to the
// next. The members come out in call order: the order is part of each line's
// documented format (docs/metrics.md), so callers state it by calling.
//
//   std::string line = JsonLine("control_applied", now)
//                          .Str("source", source)
//                          .Int("version", version)
//                          .Done();
//   // {"time":"2026-12-05T07:51:05.991Z","event":"control_applied",
//   //  "source":"...","version":7}
//
// Keys are the caller's literals and are written as they are; values are
// escaped (Str), spelled exactly (Num, Int) or formatted (Time). One string
// is built in place: no DOM, no nlohmann, so layer 0 can use it.
//
// Thread safety: a JsonLine is a value one thread builds; nothing is shared.

#ifndef DEGRADE_DETAIL_JSON_LINE_HPP_
#define DEGRADE_DETAIL_JSON_LINE_HPP_

#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

class JsonLine {
 public:
  // {"time":"<time>","event":"<event>", ...: an event line.
  JsonLine(absl::string_view event, absl::Time time) : JsonLine(time) {
    Str("event", event);
  }

  // {"time":"<time>", ...: for a line that names its owner before the event
  // (the manager's: "manager" comes second in its documented format).
  explicit JsonLine(absl::Time time) : JsonLine() { Time("time", time); }

  // {...: a plain object, e.g. one nested in a line with Raw().
  JsonLine() : out_("{") {}

  // "key":"value", the value escaped (invalid UTF-8 becomes U+FFFD).
  JsonLine& Str(absl::string_view key, absl::string_view value) {
    Key(key);
    out_ += '"';
    AppendJsonEscaped(&out_, value);
    out_ += '"';
    return *this;
  }

  // "key":value for any integer type, signed or not, at its full range.
  template <typename Integer>
  JsonLine& Int(absl::string_view key, Integer value) {
    static_assert(std::is_integral_v<Integer> &&
                      !std::is_same_v<Integer, bool> &&
                      !std::is_same_v<Integer, char>,
                  "JsonLine::Int takes an integer");
    Key(key);
    absl::StrAppend(&out_, value);
    return *this;
  }

  // "key":value in the shortest text that reads back as exactly `value`;
  // null for NaN and the infinities, which JSON cannot spell.
  JsonLine& Num(absl::string_view key, double value) {
    return Raw(key, JsonNumber(value));
  }

  // "key":"2026-12-05T07:51:05.991Z" (UTC, milliseconds).
  JsonLine& Time(absl::string_view key, absl::Time t) {
    return Str(key, JsonTime(t));
  }

  // "key":json, `json` written as it is: a nested object (TripReason's) or
  // a number already spelled.
  JsonLine& Raw(absl::string_view key, absl::string_view json) {
    Key(key);
    out_.append(json.data(), json.size());
    return *this;
  }

  // The line, closed. The builder is spent.
  std::string Done() {
    out_ += '}';
    return std::move(out_);
  }

 private:
  void Key(absl::string_view key) {
    if (out_.size() > 1) out_ += ',';
    out_ += '"';
    out_.append(key.data(), key.size());
    out_ += "\":";
  }

  std::string out_;
};

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_JSON_LINE_HPP_
