// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/json_text.hpp: JsonEscape over a table of inputs (the characters
// JSON must escape, the controls, valid UTF-8 of every length kept as it
// is, and invalid UTF-8 of every kind replaced by U+FFFD one byte at a
// time), Utf8SequenceLength on its own, JsonTime's format, and Printable for
// status messages, which must say exactly what nlohmann's replacing dump
// says (it did, before it stopped depending on nlohmann) over a table of
// awkward inputs and a fixed-seed sample of random bytes.

#include "degrade/detail/json_text.hpp"

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

struct EscapeCase {
  std::string in;
  std::string out;
};

TEST(JsonEscapeTest, EscapesTable) {
  const std::vector<EscapeCase> table = {
      {"", ""},
      {"plain ascii 123", "plain ascii 123"},
      {"say \"hi\"", "say \\\"hi\\\""},
      {"C:\\path", "C:\\\\path"},
      {"a/b", "a/b"},  // '/' may stay as it is
      {"line\nnext", "line\\nnext"},
      {"cr\r", "cr\\r"},
      {"tab\t", "tab\\t"},
      {std::string("nul\0", 4), "nul\\u0000"},
      {"\x01\x1f", "\\u0001\\u001f"},
      {"\x08\x0c", "\\b\\f"},  // \b and \f in their short forms
      {"\x7f", "\x7f"},                // DEL is not a control for JSON
      // Valid UTF-8 is kept byte for byte.
      {"caf\xc3\xa9", "caf\xc3\xa9"},            // 2 bytes: e-acute
      {"\xe2\x82\xac", "\xe2\x82\xac"},          // 3 bytes: euro sign
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},  // 4 bytes: U+1F600
      {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},  // U+10FFFF, the last
      {"\xed\x9f\xbf", "\xed\x9f\xbf"},          // U+D7FF, below surrogates
      // Invalid UTF-8: each byte that does not start a valid sequence
      // becomes U+FFFD, and the bytes after it are looked at again.
      {"\x80", "\\ufffd"},  // lone continuation
      {"a\xbf"
       "b",
       "a\\ufffdb"},                              // continuation mid-text
      {"\xc0\x80", "\\ufffd\\ufffd"},             // overlong NUL
      {"\xc1\xbf", "\\ufffd\\ufffd"},             // overlong 2-byte
      {"\xe0\x80\x80", "\\ufffd\\ufffd\\ufffd"},  // overlong 3-byte
      {"\xf0\x80\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // overlong 4
      {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},             // surrogate U+D800
      {"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // > U+10FFFF
      {"\xf5\x80", "\\ufffd\\ufffd"},  // never a lead byte
      {"\xff", "\\ufffd"},
      {"\xe2\x82", "\\ufffd\\ufffd"},  // cut at the end
      {"\xc3"
       "a",
       "\\ufffda"},  // lead, then ASCII
      {"\xe2\x82"
       "\"",
       "\\ufffd\\ufffd\\\""},                   // cut before a quote
      {"ok\xc3\xa9\xc3", "ok\xc3\xa9\\ufffd"},  // valid, then cut
  };
  for (const EscapeCase& c : table) {
    EXPECT_EQ(JsonEscape(c.in), c.out) << absl::CHexEscape(c.in);
  }
}

TEST(JsonEscapeTest, OutputIsAlwaysPrintableAsciiOrValidUtf8) {
  // Every single byte and every pair of bytes: the output never holds a
  // raw control or a byte that starts no valid sequence.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 7) {
      const std::string in = {static_cast<char>(a), static_cast<char>(b)};
      const std::string out = JsonEscape(in);
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto c = static_cast<unsigned char>(out[i]);
        ASSERT_GE(c, 0x20) << absl::CHexEscape(in);
        if (c >= 0x80) {
          const std::size_t n = Utf8SequenceLength(out, i);
          ASSERT_GT(n, 0u) << absl::CHexEscape(in);
          i += n - 1;
        }
      }
    }
  }
}

TEST(Utf8SequenceLengthTest, Table) {
  struct Case {
    std::string s;
    std::size_t at;
    std::size_t length;
  };
  const std::vector<Case> table = {
      {"\xc2\x80", 0, 2},
      {"\xdf\xbf", 0, 2},
      {"\xe0\xa0\x80", 0, 3},
      {"\xef\xbf\xbf", 0, 3},
      {"\xf0\x90\x80\x80", 0, 4},
      {"x\xc3\xa9", 1, 2},
      {"a", 0, 0},  // ASCII is not a multi-byte sequence
      {"\x80", 0, 0},
      {"\xc2", 0, 0},
      {"\xc2\x41", 0, 0},
      {"\xe0\x9f\xbf", 0, 0},
      {"\xed\xbf\xbf", 0, 0},
      {"\xf4\x90\x80\x80", 0, 0},
      {"\xf0\x90\x80", 0, 0},
  };
  for (const Case& c : table) {
    EXPECT_EQ(Utf8SequenceLength(c.s, c.at), c.length)
        << absl::CHexEscape(c.s) << " at " << c.at;
  }
}

TEST(JsonTimeTest, IsUtcWithMilliseconds) {
  EXPECT_EQ(JsonTime(absl::UnixEpoch()), "1970-01-01T00:00:00.000Z");
  const absl::Time t =
      absl::FromCivil(absl::CivilSecond(2026, 4, 1, 12, 34, 56),
                      absl::UTCTimeZone()) +
      absl::Microseconds(789999);
  EXPECT_EQ(JsonTime(t), "2026-04-01T12:34:56.789Z");  // truncated, not rounded
}


// ---- Printable: what status messages quote ----

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

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
