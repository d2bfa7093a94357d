// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/json_text.hpp: JsonEscape over a table of inputs (the characters
// JSON must escape, the controls, valid UTF-8 of every length kept as it
// is, and invalid UTF-8 of every kind replaced by U+FFFD one byte at a
// time), Utf8SequenceLength on its own, and JsonTime's format.

#include "degrade/detail/json_text.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace degrade {
namespace detail {
namespace {

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
      {"\x08\x0c", "\\u0008\\u000c"},  // \b and \f as \u escapes
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

}  // namespace
}  // namespace detail
}  // namespace degrade
