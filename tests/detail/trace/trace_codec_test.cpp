// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The text encoding of a degradation trace: the codec's functions on their
// own (tables of fields <-> text, dropped counts, stage-name problems) and
// through DegradationTrace::Encode/Decode (round trips, a table of malformed
// input, the input limit, truncations and byte mutations of valid
// encodings).

#include "degrade/detail/trace/trace_codec.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/degradation_trace.hpp"
#include "degrade/degrade_reason.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trace_test_support.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::testing_support::TraceOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

using R = DegradeReason;

// ---- The codec on its own --------------------------------------------------

using detail::TraceEntryView;
using detail::TraceFields;

TraceFields FieldsOf(std::vector<TraceEntryView> entries, uint16_t dropped) {
  TraceFields f;
  for (const TraceEntryView& e : entries) f.entries[f.size++] = e;
  f.dropped = dropped;
  return f;
}

std::vector<std::pair<std::string, DegradeReason>> Named(const TraceFields& f) {
  std::vector<std::pair<std::string, DegradeReason>> out;
  for (const TraceEntryView& e : f.named()) {
    out.emplace_back(std::string(e.stage), e.reason);
  }
  return out;
}

struct FieldsCase {
  std::vector<TraceEntryView> entries;
  uint16_t dropped;
  std::string text;
};

const std::vector<FieldsCase>& FieldsTable() {
  static const auto* const table = new std::vector<FieldsCase>{
      {{}, 0, "v1"},
      {{}, 1, "v1;+1"},
      {{}, 9, "v1;+9"},
      {{}, 10, "v1;+10"},
      {{}, 65535, "v1;+65535"},
      {{{"features", R::kBreakerOpen}}, 0, "v1;features=open"},
      {{{"a", R::kTooManyRequests}, {"b", R::kTimeout}},
       0,
       "v1;a=too_many;b=timeout"},
      {{{"c", R::kError}, {"d", R::kException}, {"e", R::kShed}},
       0,
       "v1;c=error;d=exception;e=shed"},
      {{{"f", R::kUpstream}, {"g", R::kInvalid}},
       100,
       "v1;f=upstream;g=invalid;+100"},
      {{{"h", R::kRateLimited}}, 0, "v1;h=rate_limited"},
      {{{"feature-service", R::kBreakerOpen}}, 0, "v1;feature-service=open"},
      {{{"Rank.v2_B-9", R::kShed}}, 12345, "v1;Rank.v2_B-9=shed;+12345"},
  };
  return *table;
}

TEST(TraceCodecTest, EncodesFieldsTable) {
  for (const FieldsCase& c : FieldsTable()) {
    const TraceFields f = FieldsOf(c.entries, c.dropped);
    EXPECT_EQ(detail::TraceEncodedSize(f), c.text.size()) << c.text;
    char buf[detail::kTraceMaxEncodedSize];
    const std::size_t n = detail::EncodeTraceTo(f, buf, sizeof(buf));
    EXPECT_EQ(std::string(buf, n), c.text);
    // One byte short: nothing at all, never a truncated encoding.
    std::memset(buf, '#', sizeof(buf));
    EXPECT_EQ(detail::EncodeTraceTo(f, buf, c.text.size() - 1), 0u) << c.text;
    EXPECT_EQ(buf[0], '#') << c.text;
    EXPECT_EQ(detail::EncodeTraceTo(f, nullptr, sizeof(buf)), 0u) << c.text;
  }
}

TEST(TraceCodecTest, DecodesFieldsTable) {
  for (const FieldsCase& c : FieldsTable()) {
    TraceFields f;
    const absl::Status s = detail::DecodeTrace(c.text, &f);
    ASSERT_TRUE(s.ok()) << c.text << ": " << s;
    EXPECT_EQ(Named(f), Named(FieldsOf(c.entries, c.dropped))) << c.text;
    EXPECT_EQ(f.dropped, c.dropped) << c.text;
    // The decoded stages are views into the text, not copies.
    for (const TraceEntryView& e : f.named()) {
      EXPECT_GE(e.stage.data(), c.text.data()) << c.text;
      EXPECT_LE(e.stage.data() + e.stage.size(), c.text.data() + c.text.size())
          << c.text;
    }
  }
}

TEST(TraceCodecTest, ParsesTheDroppedCountTable) {
  struct Case {
    std::string token;
    int value;  // -1: refused
    std::string cause;
  };
  const std::vector<Case> cases = {
      {"+1", 1, ""},
      {"+9", 9, ""},
      {"+10", 10, ""},
      {"+65535", 65535, ""},
      {"+", -1, "'+' is not followed by a count"},
      {"+0", -1, "zero or has a leading zero"},
      {"+00", -1, "zero or has a leading zero"},
      {"+01", -1, "zero or has a leading zero"},
      {"+65536", -1, "more than 65535"},
      {"+99999", -1, "more than 65535"},
      {"+100000", -1, "more than 65535"},
      {"+1a", -1, "not a decimal number"},
      {"+ 1", -1, "not a decimal number"},
      {"+-1", -1, "not a decimal number"},
      {"++1", -1, "not a decimal number"},
  };
  for (const Case& c : cases) {
    uint16_t dropped = 7;
    const absl::Status s = detail::ParseTraceDropped(40, c.token, &dropped);
    if (c.value >= 0) {
      ASSERT_TRUE(s.ok()) << c.token << ": " << s;
      EXPECT_EQ(dropped, c.value) << c.token;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.token;
      EXPECT_THAT(s.message(), HasSubstr(c.cause)) << c.token;
      EXPECT_THAT(s.message(), HasSubstr("at offset 40")) << c.token;
      EXPECT_EQ(dropped, 7) << c.token << ": left alone on error";
    }
  }
}

TEST(TraceCodecTest, StageNameProblemTable) {
  struct Case {
    std::string name;
    std::string problem;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"a", ""},
      {"feature-service", ""},
      {"A.b_C-9", ""},
      {"", "the stage name is empty"},
      {"abcdefghijklmnop",
       "the stage name is 16 bytes, more than the 15 "
       "allowed"},
      {"a b",
       "the stage name has the byte ' ' at index 1, outside "
       "[A-Za-z0-9_.-]"},
      {"a=b", "the byte '=' at index 1"},
      {"a;b", "the byte ';' at index 1"},
      {"+", "the byte '+' at index 0"},
      {std::string("a\0", 2), "the byte '\\x00' at index 1"},
      {"\xff", "the byte '\\xff' at index 0"},
  };
  for (const Case& c : cases) {
    const std::string problem = detail::StageNameProblem(c.name);
    if (c.problem.empty()) {
      EXPECT_EQ(problem, "") << c.name;
    } else {
      EXPECT_THAT(problem, HasSubstr(c.problem)) << c.name;
    }
    // The public check agrees with the codec's.
    EXPECT_EQ(IsValidStageName(c.name), problem.empty()) << c.name;
  }
}

TEST(TraceCodecTest, QuoteForMessageEscapesAndCaps) {
  EXPECT_EQ(detail::QuoteForMessage("rank"), "rank");
  EXPECT_EQ(detail::QuoteForMessage(std::string("a\n\0z", 4)), "a\\n\\x00z");
  EXPECT_EQ(detail::QuoteForMessage(std::string(32, 'x')),
            std::string(32, 'x'));
  EXPECT_EQ(detail::QuoteForMessage(std::string(33, 'x')),
            std::string(32, 'x') + "...");
}

TEST(TraceCodecTest, DigitCountTable) {
  const std::vector<std::pair<unsigned, std::size_t>> table = {
      {0, 1}, {1, 1}, {9, 1}, {10, 2}, {99, 2}, {100, 3}, {65535, 5}};
  for (const auto& [v, digits] : table) {
    EXPECT_EQ(detail::DigitCount(v), digits) << v;
  }
}

TEST(TraceCodecTest, UnknownReasonErrorListsEveryToken) {
  TraceFields f;
  const absl::Status s = detail::DecodeTrace("v1;rank=slow", &f);
  ASSERT_FALSE(s.ok());
  std::string expected = "expected one of ";
  for (DegradeReason r : kAllDegradeReasons) {
    if (r != kAllDegradeReasons.front()) expected += ", ";
    absl::StrAppend(&expected, ReasonName(r));
  }
  EXPECT_THAT(s.message(), HasSubstr(expected + ")"));
  EXPECT_THAT(s.message(),
              HasSubstr("open, too_many, timeout, error, exception, shed, "
                        "upstream, invalid, rate_limited)"));
}

TEST(TraceCodecTest, TheLongestEncodingIsTheDocumentedMaximum) {
  EXPECT_EQ(detail::kTraceMaxEncodedSize,
            2u + 8u * (1u + 15u + 1u + 12u + 1u + 9u) + 2u + 5u);
  EXPECT_EQ(DegradationTrace::kMaxEncodedSize, detail::kTraceMaxEncodedSize);
  EXPECT_EQ(kTraceCapacity, 8u);
  EXPECT_EQ(kMaxStageNameLength, 15u);
  EXPECT_EQ(kMaxDecodeInput, 1024u);
}

// ---- Encoding --------------------------------------------------------------

TEST(TraceEncodingTest, EncodesAndDecodesTable) {
  struct Case {
    std::vector<std::pair<std::string, DegradeReason>> adds;
    std::string encoded;
  };
  const std::vector<Case> cases = {
      {{}, "v1"},
      {{{"features", R::kBreakerOpen}}, "v1;features=open"},
      {{{"features", R::kBreakerOpen}, {"recall", R::kTimeout}},
       "v1;features=open;recall=timeout"},
      {{{"a", R::kTooManyRequests},
        {"b", R::kError},
        {"c", R::kException},
        {"d", R::kShed},
        {"e", R::kUpstream},
        {"f", R::kInvalid},
        {"g", R::kRateLimited}},
       "v1;a=too_many;b=error;c=exception;d=shed;e=upstream;f=invalid;"
       "g=rate_limited"},
      {{{"Rank.v2_B-9", R::kShed}, {"bad name", R::kError}},
       "v1;Rank.v2_B-9=shed;+1"},
      {{{"", R::kError}}, "v1;+1"},
  };
  for (const Case& c : cases) {
    DegradationTrace t;
    for (const auto& [stage, reason] : c.adds) t.Add(stage, reason);
    EXPECT_EQ(t.Encode(), c.encoded);
    EXPECT_EQ(t.EncodedSize(), c.encoded.size());
    const absl::StatusOr<DegradationTrace> d =
        DegradationTrace::Decode(c.encoded);
    ASSERT_TRUE(d.ok()) << c.encoded << ": " << d.status();
    EXPECT_EQ(*d, t) << c.encoded;
  }
}

TEST(TraceEncodingTest, LongestTraceFillsExactlyTheMaximumSize) {
  DegradationTrace t;
  for (std::size_t i = 0; i < kTraceCapacity; ++i) {
    t.Add(absl::StrCat("stage-name-000", i), R::kRateLimited,
          i % 2 == 0 ? FallbackTier::kStale10m : FallbackTier::kStaleOld);
  }
  ASSERT_EQ(t.size(), kTraceCapacity);
  t.Add("one-more", R::kError);             // dropped: 1
  for (int i = 0; i < 16; ++i) t.Merge(t);  // 2^16, saturated
  ASSERT_EQ(t.dropped(), 65535u);
  const std::string s = t.Encode();
  EXPECT_EQ(s.size(), DegradationTrace::kMaxEncodedSize);
  const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, t);
}

// A ladder's rung travels as the entry's third part; an entry without one
// encodes exactly as before tiers existed, so every older trace still reads.
TEST(TraceEncodingTest, FallbackTiersRoundTripAndOldEntriesAreUnchanged) {
  DegradationTrace t;
  t.Add("features", R::kBreakerOpen, FallbackTier::kStale10m);
  t.Add("embed", R::kTimeout, FallbackTier::kSegment);
  t.Add("recall", R::kShed);
  t.Add("rank", R::kError, FallbackTier::kGlobal);
  const std::string s = t.Encode();
  EXPECT_EQ(s,
            "v1;features=open/stale-10m;embed=timeout/segment;recall=shed;"
            "rank=error/global");
  const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, t);
  EXPECT_EQ(d->TierFor("features"), FallbackTier::kStale10m);
  EXPECT_EQ(d->TierFor("recall"), FallbackTier::kUnspecified);
  EXPECT_EQ(d->TierFor("absent"), FallbackTier::kUnspecified);
  // The tier is part of the entry's identity.
  DegradationTrace other;
  other.Add("features", R::kBreakerOpen, FallbackTier::kStale1h);
  DegradationTrace same_but_tier;
  same_but_tier.Add("features", R::kBreakerOpen);
  EXPECT_NE(other, same_but_tier);
  // A tier off the enumeration (a bad cast) is recorded as none.
  DegradationTrace cast;
  cast.Add("features", R::kError, static_cast<FallbackTier>(200));
  EXPECT_EQ(cast.Encode(), "v1;features=error");
}

TEST(TraceEncodingTest, RejectsMalformedTiersWithTheCause) {
  for (absl::string_view bad :
       {"v1;features=open/", "v1;features=open/stale", "v1;features=open/x",
        "v1;features=open/global/global", "v1;features=/global",
        "v1;features=open/GLOBAL", "v1;features=open/stale-1m;rank=error/"}) {
    const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(bad);
    EXPECT_FALSE(d.ok()) << bad;
  }
  const absl::Status s =
      DegradationTrace::Decode("v1;features=open/stale-2m").status();
  EXPECT_THAT(s.message(), HasSubstr("at offset 17"));
  EXPECT_THAT(s.message(), HasSubstr("unknown fallback tier (expected one of "
                                     "stale-1m, stale-10m, stale-1h, "
                                     "stale-old, segment, global)"));
}

TEST(TraceEncodingTest, EncodeToWritesAllOrNothing) {
  DegradationTrace t;
  t.Add("features", R::kBreakerOpen);
  const std::string want = "v1;features=open";
  char buf[DegradationTrace::kMaxEncodedSize];
  std::memset(buf, '#', sizeof(buf));
  EXPECT_EQ(t.EncodeTo(buf, want.size() - 1), 0u);
  EXPECT_EQ(buf[0], '#');  // nothing written
  EXPECT_EQ(t.EncodeTo(nullptr, 100), 0u);
  ASSERT_EQ(t.EncodeTo(buf, want.size()), want.size());
  EXPECT_EQ(std::string(buf, want.size()), want);
}

TEST(TraceEncodingTest, AppendToAppends) {
  DegradationTrace t;
  t.Add("rank", R::kShed);
  std::string header = "x-degradation: ";
  t.AppendTo(&header);
  EXPECT_EQ(header, "x-degradation: v1;rank=shed");
}

// Random valid traces: duplicates, invalid names, overflow and saturating
// dropped counts all appear. Both directions must round-trip exactly.
TEST(TraceEncodingTest, RandomValidTracesRoundTrip) {
  std::mt19937 rng(20260401);
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
  const auto pick = [&rng](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
  };
  std::size_t saw_overflow = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    DegradationTrace t;
    std::vector<std::string> used;
    const std::size_t adds = pick(14);
    for (std::size_t i = 0; i < adds; ++i) {
      std::string name;
      const std::size_t kind = pick(10);
      if (kind == 0 && !used.empty()) {
        name = used[pick(used.size())];  // a duplicate
      } else if (kind == 1) {
        name = "bad name";  // invalid: dropped
      } else {
        const std::size_t len = 1 + pick(kMaxStageNameLength);
        for (std::size_t j = 0; j < len; ++j)
          name += alphabet[pick(alphabet.size())];
      }
      used.push_back(name);
      t.Add(name, static_cast<DegradeReason>(1 + pick(9)),
            static_cast<FallbackTier>(pick(kAllFallbackTiers.size() + 1)));
    }
    if (pick(20) == 0) {
      const std::size_t doublings = pick(18);
      for (std::size_t i = 0; i < doublings; ++i) t.Merge(t);
    }
    if (t.overflowed()) ++saw_overflow;
    const std::string s = t.Encode();
    ASSERT_EQ(s.size(), t.EncodedSize());
    ASSERT_LE(s.size(), DegradationTrace::kMaxEncodedSize);
    const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
    ASSERT_TRUE(d.ok()) << s << ": " << d.status();
    ASSERT_EQ(*d, t) << s;
    ASSERT_EQ(d->Encode(), s);
    ASSERT_EQ(d->depth(), t.depth());
  }
  EXPECT_GT(saw_overflow, 100u);  // the generator does exercise "+count"
}

TEST(TraceEncodingTest, RejectsMalformedEncodingsWithTheCause) {
  struct Case {
    std::string input;
    std::string cause;
  };
  std::string nine = "v1";
  for (int i = 0; i < 9; ++i) absl::StrAppend(&nine, ";s", i, "=error");
  const std::vector<Case> cases = {
      {"", "bad version"},
      {"v2;features=open", "bad version"},
      {"V1", "bad version"},
      {" v1", "bad version"},
      {std::string("v1\0", 3), "bad version"},
      {"v1;features", "missing '='"},
      {"v1;=open", "the stage name is empty"},
      {"v1;feat ures=open", "outside [A-Za-z0-9_.-]"},
      {std::string("v1;feat\0ures=open", 17), "'\\x00' at index 4"},
      {"v1;r\xc3\xa9=open", "'\\xc3' at index 1"},
      {"v1;stage-name-00016=open", "16 bytes, more than the 15"},
      {"v1;features=opened", "unknown reason token"},
      {"v1;features=OPEN", "unknown reason token"},
      {"v1;features=none", "unknown reason token"},
      {"v1;features=open=x", "unknown reason token"},
      {"v1;features=open\n", "unknown reason token"},
      {"v1;features=", "empty reason"},
      {"v1;features=open;features=timeout", "duplicate stage"},
      {nine, "too many entries (at most 8)"},
      {"v1;features=open;", "trailing ';'"},
      {"v1;", "trailing ';'"},
      {"v1;;features=open", "duplicate ';'"},
      {"v1;features=open;;recall=timeout", "duplicate ';'"},
      {"v1;+", "not followed by a count"},
      {"v1;+0", "zero or has a leading zero"},
      {"v1;+007", "zero or has a leading zero"},
      {"v1;+65536", "more than 65535"},
      {"v1;+9999999999999999999999", "more than 65535"},
      {"v1;+1x", "not a decimal number"},
      {"v1;+-1", "not a decimal number"},
      {"v1;+2;features=open", "must be the last"},
      {"v1;+2;+3", "must be the last"},
      {std::string(1025, 'v'), "1025 bytes, more than the 1024 allowed"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const Case& c : cases) {
    const absl::StatusOr<DegradationTrace> d =
        DegradationTrace::Decode(c.input);
    ASSERT_FALSE(d.ok()) << c.input;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.input;
    EXPECT_THAT(d.status().message(), HasSubstr(c.cause)) << c.input;
    EXPECT_THAT(d.status().message(), HasSubstr("degradation trace"))
        << c.input;
  }
}

TEST(TraceEncodingTest, ErrorsNameTheOffsetAndEscapeTheToken) {
  absl::StatusOr<DegradationTrace> d =
      DegradationTrace::Decode("v1;features=open;;x=error");
  EXPECT_THAT(d.status().message(), HasSubstr("at offset 17"));
  d = DegradationTrace::Decode("v1;features=opne");
  EXPECT_THAT(d.status().message(), HasSubstr("at offset 12, token 'opne'"));
  d = DegradationTrace::Decode(std::string("v1;a\nb\0=open", 12));
  const std::string msg(d.status().message());
  EXPECT_THAT(msg, HasSubstr("at offset 3, token 'a\\nb\\x00=open'"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_EQ(msg.find('\0'), std::string::npos);
  // A long hostile token is shown capped.
  d = DegradationTrace::Decode("v1;" + std::string(900, 'x'));
  EXPECT_THAT(d.status().message(), HasSubstr("..."));
  EXPECT_LT(d.status().message().size(), 200u);
}

TEST(TraceEncodingTest, InputLimitIsExactlyOneKibibyte) {
  // 1024 bytes is looked at (and refused for its content); 1025 is not.
  const std::string at_limit = "v1;" + std::string(1021, 'x');
  absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(at_limit);
  EXPECT_THAT(d.status().message(), HasSubstr("missing '='"));
  d = DegradationTrace::Decode(at_limit + "x");
  EXPECT_THAT(d.status().message(), HasSubstr("more than the 1024"));
}

// Decodes `s`: either a status (INVALID_ARGUMENT) or a trace that encodes
// back to exactly `s`.
void ExpectStatusOrExactTrace(const std::string& s) {
  const absl::StatusOr<DegradationTrace> d = DegradationTrace::Decode(s);
  if (d.ok()) {
    EXPECT_EQ(d->Encode(), s);
  } else {
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(d.status().message()), Not(IsEmpty()));
  }
}

std::vector<std::string> ValidEncodings() {
  DegradationTrace full = TraceOf(kTraceCapacity, R::kException);
  full.Add("overflow", R::kTimeout);
  return {"v1", "v1;features=open;recall=timeout;rank=shed;rerank=error",
          "v1;a=too_many;b=upstream;+12345", full.Encode()};
}

TEST(TraceEncodingTest, EveryTruncationDecodesToAStatusOrAnExactTrace) {
  std::size_t rejected = 0;
  for (const std::string& valid : ValidEncodings()) {
    for (std::size_t n = 0; n <= valid.size(); ++n) {
      const std::string prefix = valid.substr(0, n);
      ExpectStatusOrExactTrace(prefix);
      if (!DegradationTrace::Decode(prefix).ok()) ++rejected;
    }
  }
  EXPECT_GT(rejected, 50u);
  // A cut inside a token never decodes.
  EXPECT_FALSE(DegradationTrace::Decode("v1;features=ope").ok());
  EXPECT_FALSE(DegradationTrace::Decode("v1;features").ok());
  EXPECT_FALSE(DegradationTrace::Decode("v").ok());
}

TEST(TraceEncodingTest, EverySingleByteMutationDecodesSafely) {
  const char replacements[] = {'\0', ';', '=', '+', 'x', '0', ' ', '\xff'};
  for (const std::string& valid : ValidEncodings()) {
    for (std::size_t i = 0; i < valid.size(); ++i) {
      for (char c : replacements) {
        std::string m = valid;
        m[i] = c;
        ExpectStatusOrExactTrace(m);
        ExpectStatusOrExactTrace(valid.substr(0, i) + valid.substr(i + 1));
      }
    }
  }
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
