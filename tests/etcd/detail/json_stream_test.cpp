// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0

#include "degrade/etcd/detail/json_stream.hpp"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace DEGRADE_TEST_UNIT {

using degrade::detail::etcd::JsonObjectSplitter;
using ::testing::ElementsAre;

// Feeds `text` `step` bytes at a time; the objects seen.
std::vector<std::string> Split(const std::string& text, std::size_t step,
                               absl::Status* status, bool* inside) {
  JsonObjectSplitter s(1000);
  std::vector<std::string> out;
  bool stopped = false;
  for (std::size_t i = 0; i < text.size() && status->ok(); i += step) {
    *status = s.Feed(absl::string_view(text).substr(i, step),
                     [&](absl::string_view o) {
                       out.emplace_back(o);
                       return true;
                     },
                     &stopped);
  }
  *inside = s.inside();
  return out;
}

TEST(JsonObjectSplitterTest, CutsObjectsAtAnyChunkBoundary) {
  const std::string text =
      "{\"a\":{\"b\":\"}{\\\"\"}}\n{\"c\":1}\r\n {}";
  for (std::size_t step = 1; step <= text.size(); ++step) {
    SCOPED_TRACE(step);
    absl::Status st;
    bool inside = true;
    EXPECT_THAT(Split(text, step, &st, &inside),
                ElementsAre("{\"a\":{\"b\":\"}{\\\"\"}}", "{\"c\":1}", "{}"));
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_FALSE(inside);
  }
}

TEST(JsonObjectSplitterTest, TruncatedGarbageAndOversizeAreReported) {
  absl::Status st;
  bool inside = false;
  EXPECT_THAT(Split("{\"a\":[1,", 3, &st, &inside), ElementsAre());
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(inside);

  EXPECT_THAT(Split("{}x{}", 1, &st, &inside), ElementsAre("{}"));
  EXPECT_TRUE(absl::IsInternal(st)) << st;

  st = absl::OkStatus();
  Split("{\"k\":\"" + std::string(2000, 'v') + "\"}", 100, &st, &inside);
  EXPECT_TRUE(absl::IsResourceExhausted(st)) << st;
}

// Found by tests/fuzz/etcd_watch: the size was checked only after a byte
// was handled, so an object whose closing brace was its one byte over the
// maximum was handed on before the check. The maximum now holds exactly.
TEST(JsonObjectSplitterTest, AnObjectOneByteOverTheMaximumIsRefused) {
  const std::string at_max = "{\"k\":\"" + std::string(8, 'v') + "\"}";
  ASSERT_EQ(at_max.size(), 16u);
  for (const std::size_t step : {std::size_t{1}, at_max.size()}) {
    SCOPED_TRACE(step);
    for (const std::size_t max : {at_max.size(), at_max.size() - 1}) {
      JsonObjectSplitter s(max);
      std::vector<std::string> seen;
      bool stopped = false;
      absl::Status st;
      for (std::size_t i = 0; i < at_max.size() && st.ok(); i += step) {
        st = s.Feed(
            absl::string_view(at_max).substr(i, step),
            [&](absl::string_view o) {
              seen.emplace_back(o);
              return true;
            },
            &stopped);
      }
      if (max == at_max.size()) {
        EXPECT_TRUE(st.ok()) << st;
        EXPECT_THAT(seen, ElementsAre(at_max));
      } else {
        EXPECT_TRUE(absl::IsResourceExhausted(st)) << st;
        EXPECT_THAT(seen, ElementsAre());
      }
    }
  }
}

TEST(JsonObjectSplitterTest, StopsWhenTheCallbackSaysSo) {
  JsonObjectSplitter s(100);
  int seen = 0;
  bool stopped = false;
  absl::Status st = s.Feed("{}{}{}",
                           [&](absl::string_view) { return ++seen < 2; },
                           &stopped);
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(stopped);
  EXPECT_EQ(seen, 2);
}

}  // namespace DEGRADE_TEST_UNIT
