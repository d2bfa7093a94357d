// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/json_document.hpp
// -----------------------------------------------------------------------------
//
// The one way degrade reads a JSON document: the config parser
// (config_parse.hpp), the default-features loader (default_features.hpp) and
// the hot-list baseline loader (hot_list.hpp) all go through
// `ParseJsonDocument()` and the typed readers below, so they refuse the same
// hostile input the same way and their messages share one shape:
//
//   <source>: <json path> = <offending value>: <rule broken>
//
// `ParseJsonDocument(text, source, what)` runs the pipeline every document
// needs before its schema is looked at:
//
//   1. a NUL byte anywhere is refused (nlohmann stops reading at one, which
//      would accept whatever follows it);
//   2. blank text is refused, saying plainly that the `what` ("config",
//      "feature file", "hot-list file") is empty: that is what a file caught
//      mid-write looks like;
//   3. a SAX pass (`SyntaxCheck`, which builds nothing) reports malformed
//      JSON with its byte offset, duplicate object keys, and nesting deeper
//      than kMaxDepth;
//   4. the DOM is built with nlohmann's non-throwing parse.
//
//   const std::string source = Printable(path);
//   absl::StatusOr<json::Json> root =
//       json::ParseJsonDocument(text, source, "feature file");
//   if (!root.ok()) return root.status();
//   if (!root->is_array()) {
//     return json::WrongType(source, "(top level)", *root, "an array");
//   }
//   double first = 0;
//   absl::Status s = json::ReadNumber(source, json::AppendIndex("", 0),
//                                     (*root)[0], &first);
//
// Nothing here throws or needs exceptions: every value's type is checked
// before it is read, so the header behaves the same with -fno-exceptions and
// malformed input of any shape is a status. `ParseEnvelope()` adds what
// degrade's own documents (the config, the control document) share: a byte
// cap and one named root key. Everything is a pure function of
// its arguments (thread-safe); `SyntaxCheck` is one pass's state.

#ifndef DEGRADE_DETAIL_JSON_DOCUMENT_HPP_
#define DEGRADE_DETAIL_JSON_DOCUMENT_HPP_

#include <cmath>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"
#include "nlohmann/json.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace json {

using Json = nlohmann::json;

// JSON nesting deeper than this is refused by the syntax pass. The format
// needs four levels; the cap keeps every later walk (and nlohmann's own
// recursive dump/compare) far from the stack limit on hostile input.
inline constexpr std::size_t kMaxDepth = 32;

// Longest rendering of an offending value in a message.
inline constexpr std::size_t kMaxValueChars = 80;

// A path segment: `.key` for identifier-like keys, `["key"]` otherwise, so a
// key with dots or spaces can't be mistaken for nesting.
inline std::string AppendKey(absl::string_view parent, absl::string_view key) {
  // A 1 MB key must not make a 1 MB path: keep a prefix, say how long.
  if (key.size() > kMaxNameChars) {
    return absl::StrCat(parent, "[\"", Abbreviated(key, kMaxNameChars), "\"]");
  }
  bool plain = !key.empty();
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '-') {
      plain = false;
      break;
    }
  }
  if (plain) {
    return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
  }
  // dump() of a string escapes quotes and control characters; `replace`
  // turns invalid UTF-8 into U+FFFD instead of throwing.
  return absl::StrCat(
      parent, "[",
      Json(std::string(key))
          .dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace),
      "]");
}

inline std::string AppendIndex(absl::string_view parent, std::size_t i) {
  return absl::StrCat(parent, "[", i, "]");
}

inline const char* TypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

// The offending value as it would appear in the JSON, shortened. Containers
// are summarised rather than dumped: dump() recurses.
inline std::string Describe(const Json& j) {
  if (j.is_object()) {
    return j.empty() ? "{}"
                     : absl::StrCat("{...} (", j.size(),
                                    j.size() == 1 ? " key)" : " keys)");
  }
  if (j.is_array()) {
    return j.empty() ? "[]"
                     : absl::StrCat("[...] (", j.size(),
                                    j.size() == 1 ? " element)" : " elements)");
  }
  std::string s =
      j.dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
  if (s.size() > kMaxValueChars) {  // ASCII only, so any cut is clean
    s.resize(kMaxValueChars);
    s += "...";
  }
  return s;
}

inline absl::Status ErrorWithText(absl::string_view source,
                                  absl::string_view path,
                                  absl::string_view value,
                                  absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", path, " = ", value, ": ", rule));
}

inline absl::Status Error(absl::string_view source, absl::string_view path,
                          const Json& value, absl::string_view rule) {
  return ErrorWithText(source, path, Describe(value), rule);
}

inline absl::Status WrongType(absl::string_view source, absl::string_view path,
                              const Json& value, absl::string_view wanted) {
  return Error(
      source, path, value,
      absl::StrCat("must be ", wanted, " (got ", TypeName(value), ")"));
}

inline absl::Status UnknownKey(absl::string_view source, absl::string_view path,
                               const Json& value, absl::string_view allowed) {
  return Error(source, path, value,
               absl::StrCat("unknown key (allowed: ", allowed, ")"));
}

// SyntaxCheck
//
// A first, event-only pass over the text (nothing is built): it reports
// malformed JSON with nlohmann's byte position and message (the DOM parser's
// non-throwing mode only says "discarded"), duplicate object keys (which the
// DOM parser would silently resolve to the last one, hiding a copy-paste
// error such as two "level2"s), and nesting deeper than kMaxDepth.
class SyntaxCheck final : public nlohmann::json_sax<Json> {
 public:
  // `source` is already Printable().
  explicit SyntaxCheck(absl::string_view source) : source_(source) {}

  absl::Status status() const { return status_; }

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t) override { return Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(); }
  bool number_float(number_float_t, const string_t&) override {
    return Scalar();
  }
  bool string(string_t&) override { return Scalar(); }
  bool binary(binary_t&) override { return Scalar(); }

  bool start_object(std::size_t) override { return Open(/*object=*/true); }
  bool start_array(std::size_t) override { return Open(/*object=*/false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& val) override {
    Frame& f = frames_.back();
    f.key = val;
    if (!f.keys.insert(val).second) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          source_, ": ", Path(),
          ": duplicate key (JSON object keys must be "
          "unique; the parser would silently keep only the last one)"));
      return false;
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& ex) override {
    // The parser quotes the last token it read, which can be the whole
    // input: keep the message to a line.
    status_ = absl::InvalidArgumentError(
        absl::StrCat(source_, ": malformed JSON at byte ", position, ": ",
                     Abbreviated(ex.what(), 4 * kMaxValueChars)));
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::size_t next_index = 0;  // arrays: the index the next value gets
    std::string key;             // objects: the current key
    std::set<std::string> keys;  // objects: keys seen so far
  };

  // The path of the value being parsed now.
  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      path = f.object ? AppendKey(path, f.key)
                      : AppendIndex(path, f.next_index - 1);
    }
    return path.empty() ? "(top level)" : path;
  }

  void CountValue() {
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().next_index;
    }
  }

  bool Scalar() {
    CountValue();
    return true;
  }

  bool Open(bool object) {
    CountValue();
    if (frames_.size() >= kMaxDepth) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(source_, ": ", Path(), ": JSON nested more than ",
                       kMaxDepth, " levels deep"));
      return false;
    }
    frames_.push_back(Frame{object, 0, {}, {}});
    return true;
  }

  bool Close() {
    frames_.pop_back();
    return true;
  }

  std::string source_;
  std::vector<Frame> frames_;
  absl::Status status_;
};

// Typed readers. Each checks the type before reading, so nothing can throw.

inline absl::Status ReadNumber(absl::string_view source, absl::string_view path,
                               const Json& j, double* out) {
  if (!j.is_number()) return WrongType(source, path, j, "a number");
  const double v = j.get<double>();
  // nlohmann refuses float literals that overflow ("1e400"), but a huge
  // integer literal can still become a double; guard anyway.
  if (!std::isfinite(v)) {
    return Error(source, path, j, "must be a finite number");
  }
  *out = v;
  return absl::OkStatus();
}

inline absl::Status ReadString(absl::string_view source, absl::string_view path,
                               const Json& j, std::string* out) {
  if (!j.is_string()) return WrongType(source, path, j, "a string");
  *out = j.get_ref<const std::string&>();
  return absl::OkStatus();
}

inline absl::Status ReadDuration(absl::string_view source,
                                 absl::string_view path, const Json& j,
                                 absl::Duration* out) {
  constexpr absl::string_view kFormat =
      "a duration is a number with a unit (ns, us, ms, s, m, h), e.g. "
      "\"60s\", \"500ms\", \"1m30s\"";
  if (!j.is_string()) {
    return WrongType(source, path, j,
                     absl::StrCat("a duration string; ", kFormat));
  }
  const std::string& text = j.get_ref<const std::string&>();
  absl::Duration d;
  const bool parsed = absl::ParseDuration(text, &d);
  if (parsed &&
      (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration())) {
    return Error(source, path, j, "must be a finite duration");
  }
  double bare;
  if (absl::SimpleAtod(text, &bare) && std::isfinite(bare)) {
    // "60", "0", "1.5": seconds? milliseconds? Make the author say.
    return Error(source, path, j,
                 absl::StrCat("a duration needs a unit; ", kFormat));
  }
  if (!parsed) {
    return Error(source, path, j,
                 absl::StrCat("not a valid duration; ", kFormat));
  }
  if (d < absl::ZeroDuration()) {
    return Error(source, path, j, "must not be negative");
  }
  *out = d;
  return absl::OkStatus();
}

// An array of distinct, non-empty strings.
inline absl::Status ReadNameList(absl::string_view source,
                                 absl::string_view path, const Json& j,
                                 absl::string_view what,
                                 std::vector<std::string>* out) {
  if (!j.is_array()) {
    return WrongType(source, path, j,
                     absl::StrCat("an array of ", what, " names"));
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    const std::string p = AppendIndex(path, i);
    std::string name;
    if (absl::Status s = ReadString(source, p, e, &name); !s.ok()) return s;
    if (name.empty()) {
      return Error(source, p, e,
                   absl::StrCat(what, " names must not be empty"));
    }
    if (!seen.insert(name).second) {
      return Error(source, p, e,
                   absl::StrCat("duplicate ", what, " name in this list"));
    }
    out->push_back(std::move(name));
  }
  return absl::OkStatus();
}

// ParseJsonDocument()
//
// Parses `text` into a DOM through the pipeline in the file comment. Errors
// are INVALID_ARGUMENT starting with `source` (already Printable), and name
// `what` the document is where the fault is the document as a whole (a NUL
// byte, blank text): "<source>: <what> is empty".
inline absl::StatusOr<Json> ParseJsonDocument(absl::string_view text,
                                              absl::string_view source,
                                              absl::string_view what) {
  if (const std::size_t nul = text.find('\0'); nul != absl::string_view::npos) {
    // nlohmann stops reading at a NUL, which would accept anything after it.
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", what, " contains a NUL byte at offset ", nul));
  }
  if (absl::StripAsciiWhitespace(text).empty()) {
    // Said plainly: this is what a file caught mid-write (or truncated by a
    // failed copy) looks like.
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", what, " is empty"));
  }
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  {
    SyntaxCheck check(source);
    if (!Json::sax_parse(begin, end, &check) || !check.status().ok()) {
      absl::Status s = check.status();
      if (s.ok()) {  // defensive: the parser stopped without saying why
        s = absl::InvalidArgumentError(
            absl::StrCat(source, ": malformed JSON"));
      }
      return s;
    }
  }
  Json root =
      Json::parse(begin, end, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {  // the syntax pass accepted it; defensive
    return absl::InvalidArgumentError(absl::StrCat(source, ": malformed JSON"));
  }
  // in_place: Json converts implicitly to almost anything, absl::Status
  // included, so the converting constructors would be ambiguous.
  return absl::StatusOr<Json>(absl::in_place, std::move(root));
}

// " (1 MiB)", " (64 KiB)": a cap said the way its author chose it; nothing
// for a size that is not a whole number of either.
inline std::string RoundSize(std::size_t bytes) {
  constexpr std::size_t kKiB = std::size_t{1} << 10;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  if (bytes != 0 && bytes % kMiB == 0) {
    return absl::StrCat(" (", bytes / kMiB, " MiB)");
  }
  if (bytes != 0 && bytes % kKiB == 0) {
    return absl::StrCat(" (", bytes / kKiB, " KiB)");
  }
  return "";
}

// ParseEnvelope()
//
// The envelope of degrade's own documents, `{"<root_key>": ...}` with no
// other top-level key: the root key says which document this is, so a
// control document handed to the config parser (or a typo at the top) is
// refused by name instead of being read as an empty config. Text over
// `max_bytes` is refused before it is parsed, so a runaway file costs no
// DOM. Then ParseJsonDocument (`source` already Printable, `what` as
// there), and the value under `root_key`, whose schema is the caller's.
// Errors are INVALID_ARGUMENT starting with `source`.
inline absl::StatusOr<Json> ParseEnvelope(absl::string_view text,
                                          absl::string_view source,
                                          absl::string_view what,
                                          std::size_t max_bytes,
                                          absl::string_view root_key) {
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", what, " is ", text.size(), " bytes; at most ", max_bytes,
        RoundSize(max_bytes), " are accepted"));
  }
  absl::StatusOr<Json> parsed = ParseJsonDocument(text, source, what);
  if (!parsed.ok()) return parsed.status();
  Json& root = *parsed;
  if (!root.is_object()) {
    return WrongType(source, "(top level)", root,
                     absl::StrCat("an object with a \"", root_key, "\" key"));
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (absl::string_view(it.key()) != root_key) {
      return UnknownKey(source, AppendKey("", it.key()), it.value(), root_key);
    }
  }
  const auto body = root.find(std::string(root_key));
  if (body == root.end()) {
    return ErrorWithText(
        source, root_key, "(missing)",
        absl::StrCat("the top-level object needs a \"", root_key, "\" key"));
  }
  return absl::StatusOr<Json>(absl::in_place, std::move(*body));
}

}  // namespace json
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_JSON_DOCUMENT_HPP_
