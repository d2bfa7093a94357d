// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Replays each fuzz target's committed corpus (tests/fuzz/corpus/<target>/:
// the seeds, and every input a fuzzer ever crashed on) through the target's
// entry function, so those inputs are exercised in every build, with g++ as
// well as clang, and under the sanitizer presets. A target aborts on a
// broken invariant, which fails this test.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/config_fuzz.hpp"
#include "fuzz/control_document_fuzz.hpp"
#include "fuzz/default_features_fuzz.hpp"
#ifdef DEGRADE_FUZZ_HAVE_ETCD
#include "fuzz/etcd_watch_fuzz.hpp"
#endif
#include "fuzz/hot_list_baseline_fuzz.hpp"
#include "fuzz/request_class_fuzz.hpp"
#include "fuzz/segment_defaults_fuzz.hpp"
#include "fuzz/settings_fuzz.hpp"
#include "fuzz/trace_decode_fuzz.hpp"
#include "fuzz/trace_trailer_fuzz.hpp"
#include "gtest/gtest.h"

namespace degrade_fuzz {
namespace DEGRADE_TEST_UNIT {

using FuzzFn = int (*)(const uint8_t*, std::size_t);

struct Target {
  const char* corpus;  // directory under tests/fuzz/corpus
  FuzzFn fn;
};

void PrintTo(const Target& t, std::ostream* os) { *os << t.corpus; }

class ReplayCorpusTest : public ::testing::TestWithParam<Target> {};

TEST_P(ReplayCorpusTest, EveryCommittedInputPassesTheTarget) {
  const std::filesystem::path dir =
      std::filesystem::path(DEGRADE_FUZZ_CORPUS_DIR) / GetParam().corpus;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 4u) << "a corpus needs a handful of seeds";
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.string());
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << file;
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    EXPECT_EQ(GetParam().fn(reinterpret_cast<const uint8_t*>(bytes.data()),
                            bytes.size()),
              0);
  }
}

// The empty input, which a corpus file can't hold usefully.
TEST_P(ReplayCorpusTest, EmptyInputPassesTheTarget) {
  const uint8_t none = 0;
  EXPECT_EQ(GetParam().fn(&none, 0), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Targets, ReplayCorpusTest,
    ::testing::Values(Target{"config", &FuzzConfig},
                      Target{"trace_decode", &FuzzTraceDecode},
                      Target{"default_features", &FuzzDefaultFeatures},
                      Target{"hot_list_baseline", &FuzzHotListBaseline},
                      Target{"settings", &FuzzSettings},
                      Target{"segment_defaults", &FuzzSegmentDefaults},
                      Target{"request_class", &FuzzRequestClass},
                      Target{"trace_trailer", &FuzzTraceTrailer},
                      Target{"control_document", &FuzzControlDocument}),
    [](const ::testing::TestParamInfo<Target>& info) {
      return std::string(info.param.corpus);
    });

#ifdef DEGRADE_FUZZ_HAVE_ETCD
// Built with the etcd adapter only: the watch stream's reader needs
// cpp-httplib.
INSTANTIATE_TEST_SUITE_P(EtcdTargets, ReplayCorpusTest,
                         ::testing::Values(Target{"etcd_watch",
                                                  &FuzzEtcdWatch}),
                         [](const ::testing::TestParamInfo<Target>& info) {
                           return std::string(info.param.corpus);
                         });
#endif

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade_fuzz
