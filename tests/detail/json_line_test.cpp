// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/json_line.hpp: the exact bytes of lines built with every kind of
// member (time first, members in call order), values escaped as JsonEscape
// escapes them (quotes, controls, invalid UTF-8), numbers at the extremes
// (int64 and uint64 limits, non-finite doubles as null, doubles that read
// back exactly), and every line parsing as the object it was meant to be.

#include "degrade/detail/json_line.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

const absl::Time kT = absl::FromUnixMillis(1764921065991);  // 2025-12-05

TEST(JsonLineTest, EventLineHasTimeThenEventThenMembersInCallOrder) {
  const std::string line = JsonLine("control_applied", kT)
                               .Str("source", "etcd /svc")
                               .Int("version", 7)
                               .Str("reason", "INC-1")
                               .Done();
  EXPECT_EQ(line,
            R"({"time":"2025-12-05T07:51:05.991Z","event":"control_applied",)"
            R"("source":"etcd /svc","version":7,"reason":"INC-1"})");
}

TEST(JsonLineTest, TimeOnlyLineLetsTheOwnerComeBeforeTheEvent) {
  EXPECT_EQ(JsonLine(kT).Str("manager", "m").Str("event", "x").Done(),
            R"({"time":"2025-12-05T07:51:05.991Z","manager":"m","event":"x"})");
}

TEST(JsonLineTest, PlainObjects) {
  EXPECT_EQ(JsonLine().Done(), "{}");
  EXPECT_EQ(JsonLine().Int("a", 1).Done(), R"({"a":1})");
  const std::string nested = JsonLine().Str("rule", "custom").Done();
  EXPECT_EQ(JsonLine().Raw("trip", nested).Num("rate", 0.5).Done(),
            R"({"trip":{"rule":"custom"},"rate":0.5})");
}

TEST(JsonLineTest, StringsAreEscapedAsJsonEscapeDoes) {
  const std::string awkward = std::string("say \"hi\"\\\n\t\x01\0", 13) +
                              "caf\xc3\xa9 \x80 \xc0\x80 \xed\xa0\x80";
  const std::string line = JsonLine().Str("v", awkward).Done();
  EXPECT_EQ(line, "{\"v\":\"" + JsonEscape(awkward) + "\"}");
  EXPECT_EQ(line, R"({"v":"say \"hi\"\\\n\t\u0001\u0000caf)"
                  "\xc3\xa9"
                  R"( \ufffd \ufffd\ufffd \ufffd\ufffd\ufffd"})");
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["v"].get<std::string>().substr(0, 13),
            std::string("say \"hi\"\\\n\t\x01\0", 13));
}

TEST(JsonLineTest, IntegersAtTheirExtremes) {
  const std::string line =
      JsonLine()
          .Int("min64", std::numeric_limits<int64_t>::min())
          .Int("max64", std::numeric_limits<int64_t>::max())
          .Int("maxu64", std::numeric_limits<uint64_t>::max())
          .Int("zero", 0u)
          .Int("neg", -1)
          .Done();
  EXPECT_EQ(line,
            R"({"min64":-9223372036854775808,"max64":9223372036854775807,)"
            R"("maxu64":18446744073709551615,"zero":0,"neg":-1})");
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["min64"].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(j["maxu64"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
}

TEST(JsonLineTest, DoublesExactAndNonFiniteAsNull) {
  const double tenth = 0.1;
  const double tiny = std::numeric_limits<double>::denorm_min();
  const std::string line =
      JsonLine()
          .Num("tenth", tenth)
          .Num("tiny", tiny)
          .Num("big", 1e300)
          .Num("nan", std::nan(""))
          .Num("inf", std::numeric_limits<double>::infinity())
          .Num("ninf", -std::numeric_limits<double>::infinity())
          .Done();
  EXPECT_EQ(line, R"({"tenth":0.1,"tiny":5e-324,"big":1e+300,"nan":null,)"
                  R"("inf":null,"ninf":null})");
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["tenth"].get<double>(), tenth);
  EXPECT_EQ(j["tiny"].get<double>(), tiny);
  EXPECT_TRUE(j["nan"].is_null());
}

TEST(JsonLineTest, TimesAreUtcWithMilliseconds) {
  EXPECT_EQ(JsonLine()
                .Time("epoch", absl::UnixEpoch())
                .Time("t", kT + absl::Microseconds(999))
                .Done(),
            R"({"epoch":"1970-01-01T00:00:00.000Z",)"
            R"("t":"2025-12-05T07:51:05.991Z"})");
}

TEST(JsonLineTest, KeysComeOutInCallOrderEvenWhenRepeated) {
  // The builder never sorts or de-duplicates: the call order is the
  // documented format.
  EXPECT_EQ(JsonLine().Int("b", 1).Int("a", 2).Int("b", 3).Done(),
            R"({"b":1,"a":2,"b":3})");
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
