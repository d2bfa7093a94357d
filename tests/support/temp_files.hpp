// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Files for tests that read files: a fresh temporary directory removed with
// everything in it, and the two ways a file gets replaced in production (in
// place, or by rename over the old one). For tests only; not thread-safe
// unless said.

#ifndef DEGRADE_TESTS_SUPPORT_TEMP_FILES_HPP_
#define DEGRADE_TESTS_SUPPORT_TEMP_FILES_HPP_

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace degrade_tests {

// A fresh directory under the test temp dir, removed with everything in it.
class TempDir {
 public:
  explicit TempDir(absl::string_view prefix = "degrade_test") {
    std::string templ = ::testing::TempDir();
    if (templ.empty() || templ.back() != '/') templ += '/';
    absl::StrAppend(&templ, prefix, "_XXXXXX");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const char* dir = ::mkdtemp(buf.data());
    EXPECT_NE(dir, nullptr) << "mkdtemp(" << templ << ") failed";
    path_ = dir == nullptr ? templ : std::string(dir);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  std::string Path(absl::string_view name) const {
    return absl::StrCat(path_, "/", name);
  }

 private:
  std::string path_;
};

// Truncates and rewrites the file in place (same inode).
inline void WriteInPlace(const std::string& path, absl::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  ASSERT_TRUE(out) << "writing " << path;
}

// Writes a temp file next to `path` and renames it over `path`: readers see
// the old file or the new one, never a mix (a new inode each time).
inline void WriteByRename(const std::string& path, absl::string_view content) {
  const std::string tmp = path + ".tmp";
  WriteInPlace(tmp, content);
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0) << "rename to " << path;
}

// A file a loader must refuse: its content, or none at all (`missing`), and
// a substring the refusal must contain.
struct BadFile {
  std::string name;
  std::string content;  // unused when `missing`
  std::string fault;    // a substring the message must contain
  bool missing = false;
};

// Writes `content` to `name` in a directory of this process's own and
// returns its path. The directory is per process because ctest runs each test
// as its own process, in parallel: with one shared directory, a test's SetUp
// rewriting "good.json" raced a sibling reading it (seen in CI as a reload of
// a valid file failing). Removed at exit.
inline std::string WriteTempFile(const std::string& name,
                                 const std::string& content) {
  static const TempDir dir("degrade_files");
  const std::string path = dir.Path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  return path;
}

}  // namespace degrade_tests

#endif  // DEGRADE_TESTS_SUPPORT_TEMP_FILES_HPP_
