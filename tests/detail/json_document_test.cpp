// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/json_document.hpp: the one JSON document pipeline, table-driven
// over malformed documents (NUL bytes, blank text, duplicate keys, nesting
// too deep, truncation, garbage), each refused with the source, `what` the
// document is, and the place; the typed readers over values of every wrong
// type; and the path and value rendering the messages share.

#include "degrade/detail/json_document.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::detail::Utf8SequenceLength;
using ::degrade::detail::json::AppendIndex;
using ::degrade::detail::json::AppendKey;
using ::degrade::detail::json::Describe;
using ::degrade::detail::json::ErrorWithText;
using ::degrade::detail::json::Json;
using ::degrade::detail::json::kMaxDepth;
using ::degrade::detail::json::kMaxValueChars;
using ::degrade::detail::json::ParseEnvelope;
using ::degrade::detail::json::ParseJsonDocument;
using ::degrade::detail::json::ReadDuration;
using ::degrade::detail::json::ReadNameList;
using ::degrade::detail::json::ReadNumber;
using ::degrade::detail::json::ReadString;
using ::degrade::detail::json::UnknownKey;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Whether `s` can go into a JSON log line as is: valid UTF-8 and no control
// characters.
bool IsLoggable(absl::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20) return false;
    if (c >= 0x80) {
      const std::size_t n = Utf8SequenceLength(s, i);
      if (n == 0) return false;
      i += n - 1;
    }
  }
  return true;
}

struct MalformedDocument {
  std::string name;  // the test's name suffix
  std::string text;
  std::vector<std::string> fragments;  // each must be in the message
};

std::ostream& operator<<(std::ostream& os, const MalformedDocument& d) {
  return os << d.name;
}

std::vector<MalformedDocument> MalformedDocuments() {
  return {
      {"Empty", "", {"src: hot-list file is empty"}},
      {"Blank", " \t\r\n ", {"src: hot-list file is empty"}},
      {"NulAtTheStart",
       std::string("\0[1]", 4),
       {"src: hot-list file contains a NUL byte at offset 0"}},
      {"NulAfterAValidDocument",
       std::string("[1]\0garbage", 11),
       {"contains a NUL byte at offset 3"}},
      {"DuplicateTopLevelKey",
       R"({"a": 1, "b": 2, "a": 3})",
       {"src: a: duplicate key", "would silently keep only the last one"}},
      {"DuplicateNestedKey",
       R"({"x": [{"k": 1}, {"k": 2, "k": 3}]})",
       {"src: x[1].k: duplicate key"}},
      {"DuplicateOddKey",
       R"({"a.b": {"c d": 1, "c d": 2}})",
       {"src: [\"a.b\"][\"c d\"]: duplicate key"}},
      {"TooDeep",
       absl::StrCat(std::string(40, '['), std::string(40, ']')),
       {"src: [0][0][0]", "nested more than 32 levels deep"}},
      {"TooDeepObjects",
       [] {
         std::string s;
         for (int i = 0; i < 40; ++i) s += R"({"k":)";
         s += "1";
         s += std::string(40, '}');
         return s;
       }(),
       {"src: k.k.k", "nested more than 32 levels deep"}},
      {"Truncated",
       R"({"dimension": 4, "values": [1, 2,)",
       {"src: malformed JSON at byte 34", "unexpected end of input"}},
      {"TruncatedString", R"(["abc)", {"malformed JSON at byte"}},
      {"TrailingGarbage", "[1] x", {"malformed JSON", "expected end of input"}},
      {"TrailingComma", "[1, 2,]", {"malformed JSON", "syntax error"}},
      {"SingleQuotes", "['a']", {"malformed JSON at byte 2"}},
      {"Comment", "// ids\n[1]", {"malformed JSON at byte 1"}},
      {"NumberOverflow", "[1e400]", {"malformed JSON", "1e400", "overflow"}},
      {"InvalidUtf8", "[\"a\xff\"]", {"malformed JSON", "invalid string"}},
      {"BareWord", "hot", {"malformed JSON"}},
  };
}

class MalformedDocumentTest
    : public ::testing::TestWithParam<MalformedDocument> {};

TEST_P(MalformedDocumentTest, IsRefusedNamingTheSourceAndTheFault) {
  const MalformedDocument& d = GetParam();
  absl::StatusOr<Json> parsed =
      ParseJsonDocument(d.text, "src", "hot-list file");
  ASSERT_FALSE(parsed.ok()) << d.text;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(parsed.status().message());
  EXPECT_THAT(message, StartsWith("src: "));
  for (const std::string& f : d.fragments) EXPECT_THAT(message, HasSubstr(f));
  EXPECT_TRUE(IsLoggable(message)) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedDocumentTest, ::testing::ValuesIn(MalformedDocuments()),
    [](const ::testing::TestParamInfo<MalformedDocument>& info) {
      return info.param.name;
    });

TEST(ParseJsonDocumentTest, WellFormedDocumentsOfEveryShapeParse) {
  for (absl::string_view text :
       {"[]", "{}", "0", "\"s\"", "null", " [1, 2.5, -3, true, null] ",
        R"({"a": {"b": [{"c": "d"}]}, "e": 1})"}) {
    absl::StatusOr<Json> parsed = ParseJsonDocument(text, "src", "document");
    EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status();
  }
  // Exactly kMaxDepth levels are allowed.
  const std::string deepest =
      absl::StrCat(std::string(kMaxDepth, '['), std::string(kMaxDepth, ']'));
  EXPECT_TRUE(ParseJsonDocument(deepest, "src", "document").ok());
  // Keys equal in different objects are not duplicates.
  absl::StatusOr<Json> twins =
      ParseJsonDocument(R"([{"k": 1}, {"k": 2}])", "src", "document");
  ASSERT_TRUE(twins.ok()) << twins.status();
  EXPECT_EQ((*twins)[1]["k"], 2);
}

TEST(ParseJsonDocumentTest, WhatNamesTheDocumentInWholeDocumentErrors) {
  for (absl::string_view what : {"config", "feature file", "hot-list file"}) {
    EXPECT_EQ(ParseJsonDocument("", "/p", what).status().message(),
              absl::StrCat("/p: ", what, " is empty"));
    EXPECT_EQ(
        ParseJsonDocument(std::string("\0", 1), "/p", what).status().message(),
        absl::StrCat("/p: ", what, " contains a NUL byte at offset 0"));
  }
}

// ---- The envelope -----------------------------------------------------------

struct Envelope {
  std::string name;  // the test's name suffix
  std::string text;
  std::size_t max_bytes;
  std::string what;
  // The whole message, or empty: accepted, and `body` is the root key's
  // value, dumped.
  std::string message;
  std::string body;
};

std::ostream& operator<<(std::ostream& os, const Envelope& e) {
  return os << e.name;
}

std::vector<Envelope> Envelopes() {
  constexpr std::size_t kCap = 64;
  // Exactly at the cap: `{"doc": "xx...x"}` padded to kCap bytes.
  const std::string at_cap =
      absl::StrCat(R"({"doc": ")", std::string(kCap - 11, 'x'), R"("})");
  return {
      {"ObjectUnderTheRootKey", R"({"doc": {"k": 1}})", kCap, "document", "",
       R"({"k":1})"},
      {"AnyValueUnderTheRootKey", R"({"doc": [3]})", kCap, "document", "",
       "[3]"},
      {"ExactlyAtTheCap", at_cap, kCap, "document", "",
       absl::StrCat("\"", std::string(kCap - 11, 'x'), "\"")},
      {"OneByteOverTheCap", at_cap + " ", kCap, "document",
       "src: document is 65 bytes; at most 64 are accepted", ""},
      // The cap comes first: garbage that big is not worth a parse.
      {"GarbageOverTheCap", std::string(kCap + 1, '{'), kCap, "document",
       "src: document is 65 bytes; at most 64 are accepted", ""},
      // The config's and the control document's caps, as their messages
      // have always said them.
      {"MiBCap", std::string((std::size_t{1} << 20) + 1, ' '),
       std::size_t{1} << 20, "config",
       "src: config is 1048577 bytes; at most 1048576 (1 MiB) are accepted",
       ""},
      {"KiBCap", std::string((std::size_t{64} << 10) + 1, ' '),
       std::size_t{64} << 10, "control document",
       "src: control document is 65537 bytes; at most 65536 (64 KiB) are "
       "accepted",
       ""},
      {"Blank", " \n", kCap, "control document",
       "src: control document is empty", ""},
      {"TopLevelArray", "[1]", kCap, "document",
       "src: (top level) = [...] (1 element): must be an object with a "
       "\"doc\" key (got an array)",
       ""},
      {"TopLevelString", R"("doc")", kCap, "document",
       "src: (top level) = \"doc\": must be an object with a \"doc\" key "
       "(got a string)",
       ""},
      {"KeyBesideTheRoot", R"({"doc": {}, "extra": 1})", kCap, "document",
       "src: extra = 1: unknown key (allowed: doc)", ""},
      // A stray key sorting before the root key is caught as well.
      {"KeyBeforeTheRoot", R"({"a b": [], "doc": {}})", kCap, "document",
       "src: [\"a b\"] = []: unknown key (allowed: doc)", ""},
      {"OnlyAnotherKey", R"({"degrade_control": {}})", kCap, "document",
       "src: degrade_control = {}: unknown key (allowed: doc)", ""},
      {"EmptyObject", "{}", kCap, "document",
       "src: doc = (missing): the top-level object needs a \"doc\" key", ""},
  };
}

class EnvelopeTest : public ::testing::TestWithParam<Envelope> {};

TEST_P(EnvelopeTest, AcceptsOnlyTheRootKeyWithinTheCap) {
  const Envelope& e = GetParam();
  absl::StatusOr<Json> body =
      ParseEnvelope(e.text, "src", e.what, e.max_bytes, "doc");
  if (e.message.empty()) {
    ASSERT_TRUE(body.ok()) << body.status();
    EXPECT_EQ(body->dump(), e.body);
    return;
  }
  ASSERT_FALSE(body.ok()) << body->dump();
  EXPECT_EQ(body.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(body.status().message());
  EXPECT_EQ(message, e.message);
  EXPECT_TRUE(IsLoggable(message)) << message;
}

INSTANTIATE_TEST_SUITE_P(Table, EnvelopeTest, ::testing::ValuesIn(Envelopes()),
                         [](const ::testing::TestParamInfo<Envelope>& info) {
                           return info.param.name;
                         });

TEST(ParseEnvelopeTest, TheRootKeyAndSourceComeFromTheCaller) {
  // A config handed to the control parser is refused by the key it
  // carries; the source is quoted as given.
  EXPECT_EQ(ParseEnvelope(R"({"degradation": {}})", "/etc/c.json",
                          "control document", 1024, "degrade_control")
                .status()
                .message(),
            "/etc/c.json: degradation = {}: unknown key (allowed: "
            "degrade_control)");
  absl::StatusOr<Json> body =
      ParseEnvelope(R"({"degradation": {"a": [1, 2]}})", "/etc/c.json",
                    "config", 1024, "degradation");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ((*body)["a"][1], 2);
  // Malformed text is ParseJsonDocument's to report, in its words.
  EXPECT_THAT(
      std::string(ParseEnvelope(R"({"doc": )", "src", "document", 1024, "doc")
                      .status()
                      .message()),
      StartsWith("src: malformed JSON at byte 9: "));
}

// ---- Typed readers ----------------------------------------------------------

struct WrongValue {
  std::string json;
  std::string got;  // how the message names its type
};

TEST(TypedReaderTest, EveryWrongTypeIsNamedWithItsValue) {
  const std::vector<WrongValue> values = {
      {"null", "got null"},      {"true", "got a boolean"},
      {"\"7\"", "got a string"}, {"7", "got a number"},
      {"-7", "got a number"},    {"7.5", "got a number"},
      {"[7]", "got an array"},   {"{\"k\": 7}", "got an object"},
  };
  for (const WrongValue& v : values) {
    SCOPED_TRACE(v.json);
    const Json j = Json::parse(v.json);
    double number = 0;
    std::string text;
    absl::Duration duration;
    std::vector<std::string> names;
    const absl::Status statuses[] = {
        j.is_number() ? absl::OkStatus() : ReadNumber("src", "p", j, &number),
        j.is_string() ? absl::OkStatus() : ReadString("src", "p", j, &text),
        j.is_string() ? absl::OkStatus()
                      : ReadDuration("src", "p", j, &duration),
        j.is_array() ? absl::OkStatus()
                     : ReadNameList("src", "p", j, "feature", &names),
    };
    for (const absl::Status& s : statuses) {
      if (s.ok()) continue;  // the reader for this very type
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(
          std::string(s.message()),
          StartsWith(absl::StrCat("src: p = ", Describe(j), ": must be ")));
      EXPECT_THAT(std::string(s.message()), HasSubstr(v.got));
    }
  }
}

TEST(TypedReaderTest, ValuesOfTheRightTypeAreRead) {
  double number = 0;
  ASSERT_TRUE(ReadNumber("src", "p", Json::parse("2.5"), &number).ok());
  EXPECT_EQ(number, 2.5);
  ASSERT_TRUE(ReadNumber("src", "p", Json::parse("-3"), &number).ok());
  EXPECT_EQ(number, -3);
  std::string text;
  ASSERT_TRUE(ReadString("src", "p", Json::parse("\"x\""), &text).ok());
  EXPECT_EQ(text, "x");
  absl::Duration d;
  ASSERT_TRUE(ReadDuration("src", "p", Json::parse("\"1m30s\""), &d).ok());
  EXPECT_EQ(d, absl::Seconds(90));
  std::vector<std::string> names;
  ASSERT_TRUE(
      ReadNameList("src", "p", Json::parse(R"(["a", "b"])"), "feature", &names)
          .ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
}

TEST(TypedReaderTest, DurationsNeedAUnitAndAFiniteNonNegativeValue) {
  const struct {
    const char* json;
    const char* rule;
  } cases[] = {
      {"\"60\"", "a duration needs a unit"},
      {"\"0\"", "a duration needs a unit"},
      {"\"soon\"", "not a valid duration"},
      {"\"5d\"", "not a valid duration"},
      {"\"inf\"", "must be a finite duration"},
      {"\"-1s\"", "must not be negative"},
  };
  for (const auto& c : cases) {
    absl::Duration d;
    const absl::Status s = ReadDuration("src", "hold", Json::parse(c.json), &d);
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat("src: hold = ", c.json, ": ", c.rule)));
  }
}

TEST(TypedReaderTest, NameListsRefuseEmptyAndRepeatedNames) {
  std::vector<std::string> names;
  EXPECT_THAT(std::string(ReadNameList("src", "d", Json::parse(R"(["a", ""])"),
                                       "feature", &names)
                              .message()),
              HasSubstr("src: d[1] = \"\": feature names must not be empty"));
  names.clear();
  EXPECT_THAT(
      std::string(ReadNameList("src", "d", Json::parse(R"(["a", "b", "a"])"),
                               "feature", &names)
                      .message()),
      HasSubstr("src: d[2] = \"a\": duplicate feature name in this list"));
  names.clear();
  EXPECT_THAT(std::string(ReadNameList("src", "d", Json::parse("[1]"),
                                       "feature", &names)
                              .message()),
              HasSubstr("src: d[0] = 1: must be a string (got a number)"));
}

// ---- Paths and values in messages ------------------------------------------

TEST(JsonPathTest, PlainKeysNestWithDotsAndOthersAreQuoted) {
  EXPECT_EQ(AppendKey("", "degradation"), "degradation");
  EXPECT_EQ(AppendKey("degradation", "level1"), "degradation.level1");
  EXPECT_EQ(AppendKey("a", "gpu-util_2"), "a.gpu-util_2");
  EXPECT_EQ(AppendKey("a", "b.c"), "a[\"b.c\"]");
  EXPECT_EQ(AppendKey("a", ""), "a[\"\"]");
  EXPECT_EQ(AppendKey("a", "q\"\n"), "a[\"q\\\"\\n\"]");
  EXPECT_EQ(AppendKey("a", "\xe4\xb8\xad"), "a[\"\\u4e2d\"]");
  EXPECT_EQ(AppendIndex("values", 3), "values[3]");
  EXPECT_EQ(AppendIndex("", 0), "[0]");
}

TEST(JsonPathTest, ValuesAreShownShortAndContainersSummarised) {
  EXPECT_EQ(Describe(Json::parse("1.5")), "1.5");
  EXPECT_EQ(Describe(Json::parse("\"x\"")), "\"x\"");
  EXPECT_EQ(Describe(Json::parse("[]")), "[]");
  EXPECT_EQ(Describe(Json::parse("[1]")), "[...] (1 element)");
  EXPECT_EQ(Describe(Json::parse("[1, 2]")), "[...] (2 elements)");
  EXPECT_EQ(Describe(Json::parse("{}")), "{}");
  EXPECT_EQ(Describe(Json::parse(R"({"a": 1, "b": 2})")), "{...} (2 keys)");
  const std::string long_value = Describe(Json(std::string(500, 'x')));
  EXPECT_EQ(long_value.size(), kMaxValueChars + 3);
  EXPECT_EQ(long_value.substr(long_value.size() - 6), "xxx...");
  EXPECT_EQ(UnknownKey("src", "k", Json(1), "a, b").message(),
            "src: k = 1: unknown key (allowed: a, b)");
  EXPECT_EQ(ErrorWithText("src", "k", "(missing)", "needed").message(),
            "src: k = (missing): needed");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
