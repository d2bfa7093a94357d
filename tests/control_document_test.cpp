// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The control document's format (control_document.hpp): a valid document
// parses to the values it says, and every bad input the fleet-control issue
// lists (malformed JSON, an unknown key, a version that is not an integer,
// an expires_at in the past or unparseable, a level out of range, an
// oversize value) is INVALID_ARGUMENT naming the source, the JSON path, the
// value and the rule.

#include "degrade/control_document.hpp"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::testing::HasSubstr;

std::string Rfc(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_full, t, absl::UTCTimeZone());
}

class ControlDocumentTest : public ::testing::Test {
 protected:
  absl::Status Parse(const std::string& text) {
    return ParseControlDocument(text, "ctl.json", now_).status();
  }
  const absl::Time now_ = absl::FromUnixSeconds(1'780'000'000);
  const std::string later_ = Rfc(now_ + absl::Hours(1));
};

TEST_F(ControlDocumentTest, AValidDocumentParses) {
  const std::string text = absl::StrCat(
      R"({"degrade_control": {"version": 42, "expires_at": ")", later_,
      R"(", "reason": "INC-1", "managers": {"m": {"level": 2,
      "features_off": ["a", "b"]}}, "breakers_open": {"x": true, "y": ")",
      Rfc(now_ + absl::Minutes(10)), R"("}}})");
  absl::StatusOr<ControlDocument> d = ParseControlDocument(text, "t", now_);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->version, 42u);
  EXPECT_EQ(d->expires_at, now_ + absl::Hours(1));
  EXPECT_EQ(d->managers.at("m").level, 2);
  EXPECT_EQ(d->managers.at("m").features_off,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d->breakers_open.at("x"), now_ + absl::Hours(1));
  EXPECT_EQ(d->breakers_open.at("y"), now_ + absl::Minutes(10));
}

TEST_F(ControlDocumentTest, TheLargestVersionIsTwoToThe53) {
  const std::string text = absl::StrCat(
      R"({"degrade_control": {"version": 9007199254740992, "expires_at": ")",
      later_, R"(", "reason": "r"}})");
  absl::StatusOr<ControlDocument> d = ParseControlDocument(text, "t", now_);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->version, kMaxControlVersion);
}

TEST_F(ControlDocumentTest, EveryBadInputIsRefusedWithPathValueAndRule) {
  const std::string head =
      absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": ")",
                   later_, R"(", "reason": "r")");
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{", "ctl.json"},
      {"", "control document is empty"},
      {"[]", "(top level)"},
      {R"({"degrade_kontrol": {}})", "degrade_kontrol"},
      {R"({"degrade_control": {}})", "degrade_control.version = (missing)"},
      {absl::StrCat(head, R"(, "verison": 2}})"),
       "degrade_control.verison = 2: unknown key"},
      {absl::StrCat(R"({"degrade_control": {"version": "42", "expires_at": ")",
                    later_, R"(", "reason": "r"}})"),
       "degrade_control.version = \"42\": must be an integer"},
      {absl::StrCat(R"({"degrade_control": {"version": 4.5, "expires_at": ")",
                    later_, R"(", "reason": "r"}})"),
       "degrade_control.version = 4.5: must be an integer"},
      {absl::StrCat(R"({"degrade_control": {"version": 0, "expires_at": ")",
                    later_, R"(", "reason": "r"}})"),
       "degrade_control.version = 0: must be >= 1"},
      {absl::StrCat(
           R"({"degrade_control": {"version": 18446744073709551615, "expires_at": ")",
           later_, R"(", "reason": "r"}})"),
       "degrade_control.version = 18446744073709551615: must be <= "
       "9007199254740992 (2^53)"},
      {absl::StrCat(
           R"({"degrade_control": {"version": 9007199254740993, "expires_at": ")",
           later_, R"(", "reason": "r"}})"),
       "degrade_control.version = 9007199254740993: must be <="},
      {absl::StrCat(R"({"degrade_control": {"version": -3, "expires_at": ")",
                    later_, R"(", "reason": "r"}})"),
       "degrade_control.version = -3: must be >= 1"},
      {R"({"degrade_control": {"version": 1, "expires_at": "tomorrow", "reason": "r"}})",
       "degrade_control.expires_at = \"tomorrow\": not an RFC 3339 time"},
      {absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": ")",
                    Rfc(now_ - absl::Seconds(1)), R"(", "reason": "r"}})"),
       "is in the past"},
      {absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": ")",
                    Rfc(now_), R"(", "reason": "r"}})"),
       "is in the past"},
      {absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": ")",
                    later_, R"(", "reason": ""}})"),
       "degrade_control.reason = \"\": must be 1 to 1024 bytes"},
      {absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": ")",
                    later_, R"(", "reason": ")", std::string(1025, 'r'),
                    R"("}})"),
       "must be 1 to 1024 bytes"},
      {absl::StrCat(head, R"(, "managers": {"m": {"level": -1}}}})"),
       "degrade_control.managers.m.level = -1: must be in [1, 64]"},
      {absl::StrCat(head, R"(, "managers": {"m": {"level": 65}}}})"),
       "degrade_control.managers.m.level = 65: must be in [1, 64]"},
      {absl::StrCat(head, R"(, "managers": {"m": {"level": 0}}}})"),
       "a floor of 0 holds nothing"},
      {absl::StrCat(
           head,
           R"(, "managers": {"m": {"features_off": ["all_non_critical"]}}}})"),
       "degrade_control.managers.m.features_off[0] = \"all_non_critical\": is "
       "the config's wildcard"},
      {absl::StrCat(R"({"degrade_control": {"version": 1, "expires_at": )",
                    R"("2262-04-12T00:00:00Z", "reason": "r"}})"),
       "must be before 2262-04-11T23:47:16.854775806Z"},
      {absl::StrCat(head, R"(, "managers": {"m": {"level": "2"}}}})"),
       "degrade_control.managers.m.level = \"2\": must be an integer level"},
      {absl::StrCat(head, R"(, "managers": {"m": {}}}})"),
       "asks nothing of the manager"},
      {absl::StrCat(head, R"(, "managers": {"m": {"levle": 2}}}})"),
       "degrade_control.managers.m.levle = 2: unknown key"},
      {absl::StrCat(head,
                    R"(, "managers": {"m": {"features_off": ["a", "a"]}}}})"),
       "duplicate feature name"},
      {absl::StrCat(head, R"(, "breakers_open": {"b": false}}})"),
       "degrade_control.breakers_open.b = false: false forces nothing"},
      {absl::StrCat(head, R"(, "breakers_open": {"b": ")",
                    Rfc(now_ + absl::Hours(2)), R"("}}})"),
       "is after expires_at"},
      {absl::StrCat(head, R"(, "breakers_open": ["b"]}})"),
       "must be an object: breaker -> time or true (got an array)"},
      {absl::StrCat(head, R"(, "version": 2}})"), "duplicate"},
      {std::string(kMaxControlBytes + 1, ' '),
       "bytes; at most 65536 (64 KiB) are accepted"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text.substr(0, 200));
    const absl::Status s = Parse(c.text);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_TRUE(absl::StartsWith(s.message(), "ctl.json")) << s.message();
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
