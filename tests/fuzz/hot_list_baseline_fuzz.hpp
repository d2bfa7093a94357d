// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the hot-list baseline loader (`HotList<Item>::LoadBaseline`
// for string and int64 ids), on a file holding the fuzzed bytes. Any bytes
// in: a published snapshot or a status, never a crash, a hang or a leak.
// Beyond that it checks the loader against an independent oracle (nlohmann's
// own DOM parse): the file is taken exactly when it is a NUL-free JSON array
// of at least one id of the right type, the snapshot is then its first top_n
// ids, and otherwise the serving snapshot is the very same one, with the
// error counted and kept in `last_status()`.

#ifndef DEGRADE_TESTS_FUZZ_HOT_LIST_BASELINE_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_HOT_LIST_BASELINE_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "degrade/hot_list.hpp"
#include "fuzz/fuzz_support.hpp"
#include "nlohmann/json.hpp"

namespace degrade_fuzz {

// What LoadBaseline should publish for `text`, or nullopt if it should
// refuse it.
template <typename Item>
std::optional<std::vector<Item>> ExpectedBaseline(absl::string_view text) {
  if (text.find('\0') != absl::string_view::npos) return std::nullopt;
  const nlohmann::json root = nlohmann::json::parse(
      text.begin(), text.end(), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_array() || root.empty()) {
    return std::nullopt;
  }
  std::vector<Item> items;
  for (const nlohmann::json& v : root) {
    if constexpr (std::is_same_v<Item, std::string>) {
      if (!v.is_string()) return std::nullopt;
      items.push_back(v.get<std::string>());
    } else {
      if (!v.is_number_integer()) return std::nullopt;
      if (v.is_number_unsigned() &&
          v.get<uint64_t>() >
              static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      items.push_back(v.get<int64_t>());
    }
  }
  return items;
}

template <typename Item>
void CheckBaseline(const std::string& path, absl::string_view text, Item seed) {
  constexpr std::size_t kTopN = 5;
  degrade::HotListOptions<Item> options;
  options.top_n = kTopN;
  options.name = "fuzz";
  degrade::HotList<Item> hot(options);
  DEGRADE_FUZZ_CHECK(hot.Publish({seed}).ok(), "Publish");
  const typename degrade::HotList<Item>::Snapshot before = hot.snapshot();

  const absl::Status s = hot.LoadBaseline(path);
  std::optional<std::vector<Item>> expected = ExpectedBaseline<Item>(text);
  DEGRADE_FUZZ_CHECK(s.ok() == expected.has_value(), s.ToString());
  if (s.ok()) {
    if (expected->size() > kTopN) expected->resize(kTopN);
    DEGRADE_FUZZ_CHECK(*hot.snapshot() == *expected, "published other ids");
    DEGRADE_FUZZ_CHECK(hot.failures() == 0, hot.failures());
  } else {
    CheckStillServing(hot, before, hot.failures(), s);
  }
}

inline int FuzzHotListBaseline(const uint8_t* data, std::size_t size) {
  static const ScratchFile file("hot-list");
  file.Write(data, size);
  const absl::string_view text = AsText(data, size);
  CheckBaseline<std::string>(file.path(), text, "seed");
  CheckBaseline<int64_t>(file.path(), text, 42);
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_HOT_LIST_BASELINE_FUZZ_HPP_
