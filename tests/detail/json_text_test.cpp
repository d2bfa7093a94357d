// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/json_text.hpp: the UTF-8 table behind every escaper (well-formed
// sequences, overlongs, surrogates, truncation), JsonEscape for log lines,
// and Printable for status messages, which must say exactly what nlohmann's
// replacing dump says (it did, before it stopped depending on nlohmann) over
// a table of awkward inputs and a fixed-seed sample of random bytes.

#include "degrade/detail/json_text.hpp"

#include <cstddef>
#include <random>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace degrade {
namespace {

using ::degrade::detail::JsonEscape;
using ::degrade::detail::JsonTime;
using ::degrade::detail::Printable;
using ::degrade::detail::Utf8PrefixAt;
using ::degrade::detail::Utf8SequenceLength;

// What Printable replaced (config.hpp's, before it moved here): printable
// ASCII as is, anything else nlohmann's replacing dump without the quotes.
std::string NlohmannPrintable(absl::string_view text) {
  bool clean = true;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) clean = false;
  }
  if (clean) return std::string(text);
  std::string quoted = nlohmann::json(std::string(text))
                           .dump(-1, ' ', /*ensure_ascii=*/false,
                                 nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

TEST(Utf8Test, SequencesAreMeasuredAsTheStandardDefinesThem) {
  const struct {
    const char* bytes;
    std::size_t need;
    std::size_t have;
  } cases[] = {
      {"a", 0, 0},                 // ASCII: not a sequence lead
      {"\x80", 0, 0},              // a lone continuation byte
      {"\xc0\x80", 0, 0},          // C0, C1 never lead (overlong)
      {"\xc3\xa9", 2, 2},          // é
      {"\xc3", 2, 1},              // truncated at the end
      {"\xc3(", 2, 1},             // broken by ASCII
      {"\xe2\x82\xac", 3, 3},      // €
      {"\xe0\x80\x80", 3, 1},      // overlong three-byte form
      {"\xed\xa0\x80", 3, 1},      // a surrogate
      {"\xe2\x82", 3, 2},          // truncated
      {"\xf0\x9f\x98\x80", 4, 4},  // an emoji
      {"\xf0\x80\x80\x80", 4, 1},  // overlong four-byte form
      {"\xf4\x90\x80\x80", 4, 1},  // past U+10FFFF
      {"\xf5\x80\x80\x80", 0, 0},  // never a lead
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bytes);
    const detail::Utf8Prefix p = Utf8PrefixAt(c.bytes, 0);
    EXPECT_EQ(p.need, c.need);
    EXPECT_EQ(p.have, c.have);
    EXPECT_EQ(Utf8SequenceLength(c.bytes, 0),
              c.need != 0 && c.need == c.have ? c.need : 0u);
  }
}

TEST(PrintableTest, PlainAsciiIsReturnedAsIs) {
  EXPECT_EQ(Printable("/etc/svc/degrade.json"), "/etc/svc/degrade.json");
  // Quotes and backslashes alone do not need escaping in a message.
  EXPECT_EQ(Printable(R"(a "b" \c)"), R"(a "b" \c)");
  EXPECT_EQ(Printable(""), "");
}

TEST(PrintableTest, AgreesWithNlohmannOnAwkwardInput) {
  const std::string cases[] = {
      "caf\xc3\xa9 /data/\xe4\xb8\xad\xe6\x96\x87.json",  // valid UTF-8 kept
      "new\nline\ttab\rret\bbs\fff",
      std::string("nul\0byte", 8),
      "\x01\x1f\x7f",
      "quote\" back\\slash \xc3\xa9",
      "bad\xff byte",
      "trunc\xe2\x82",
      "trunc\xe2\x82 then more",
      "\xc0\xafoverlong",
      "\xed\xa0\x80surrogate",
      "\xf4\x90\x80\x80too big",
      "\x80\x80\x80",
      "\xf0\x9f\x98\x80 emoji",
  };
  for (const std::string& c : cases) {
    SCOPED_TRACE(JsonEscape(c));
    EXPECT_EQ(Printable(c), NlohmannPrintable(c));
  }
  EXPECT_EQ(Printable("bad\xff"), "bad\xef\xbf\xbd");
  EXPECT_EQ(Printable("a\nb"), "a\\nb");
}

TEST(PrintableTest, AgreesWithNlohmannOnRandomBytes) {
  std::mt19937 rng(1234567);  // deterministic
  std::uniform_int_distribution<int> length(0, 24);
  // Mostly bytes that make UTF-8 interesting, some ASCII.
  const unsigned char kBytes[] = {'a',  ' ',  '"',  '\\', '\n', 0x00, 0x1f,
                                  0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xdf, 0xe0,
                                  0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
                                  0x9f, 0xa0, 0x90, 0x8f};
  std::uniform_int_distribution<std::size_t> pick(0, sizeof(kBytes) - 1);
  for (int i = 0; i < 5000; ++i) {
    std::string s(static_cast<std::size_t>(length(rng)), '\0');
    for (char& c : s) c = static_cast<char>(kBytes[pick(rng)]);
    ASSERT_EQ(Printable(s), NlohmannPrintable(s)) << JsonEscape(s);
  }
}

TEST(JsonEscapeTest, EscapesForAJsonStringLiteral) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("q\"b\\n\n"), "q\\\"b\\\\n\\n");
  EXPECT_EQ(JsonEscape(std::string("\0\x01", 2)), "\\u0000\\u0001");
  EXPECT_EQ(JsonEscape("caf\xc3\xa9"), "caf\xc3\xa9");
  // Each byte of an ill-formed sequence is replaced, escaped.
  EXPECT_EQ(JsonEscape("x\xe2\x82y"), "x\\ufffd\\ufffdy");
  const nlohmann::json parsed =
      nlohmann::json::parse("\"" + JsonEscape("a\b\f\x7f\xff") + "\"");
  EXPECT_EQ(parsed.get<std::string>(), "a\b\f\x7f\xef\xbf\xbd");
}

TEST(JsonTimeTest, IsUtcWithMilliseconds) {
  EXPECT_EQ(JsonTime(absl::FromUnixMillis(1767225600123)),
            "2026-01-01T00:00:00.123Z");
}

}  // namespace
}  // namespace degrade
