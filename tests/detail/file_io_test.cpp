// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail/file_io.hpp: ReadFileCapped reads whole regular files up to the
// cap, and refuses a missing file, a directory, a FIFO (without blocking)
// and a file over the cap, each with the status a caller acts on and a
// message naming what the file is and its path, escaped.

#include "degrade/detail/file_io.hpp"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

using ::degrade::detail::ReadFileCapped;
using ::degrade_tests::TempDir;
using ::degrade_tests::WriteInPlace;
using ::testing::HasSubstr;

TEST(ReadFileCappedTest, ReadsWholeFilesUpToTheCap) {
  TempDir dir("file_io_test");
  const std::string path = dir.Path("f.bin");
  // Larger than one read() and with every byte value, NULs included.
  std::string content;
  for (int i = 0; i < 40000; ++i) content += static_cast<char>(i % 256);
  WriteInPlace(path, content);
  absl::StatusOr<std::string> got =
      ReadFileCapped(path, content.size(), "test file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, content);  // exactly at the cap is accepted

  const std::string empty = dir.Path("empty");
  WriteInPlace(empty, "");
  got = ReadFileCapped(empty, 10, "test file");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "");
}

TEST(ReadFileCappedTest, RefusesWhatIsNotAReadableRegularFileUnderTheCap) {
  TempDir dir("file_io_test");
  const std::string missing = dir.Path("missing.json");
  const std::string directory = dir.Path("d");
  ASSERT_EQ(::mkdir(directory.c_str(), 0700), 0);
  const std::string fifo = dir.Path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // no writer: must not block
  const std::string big = dir.Path("big.json");
  WriteInPlace(big, std::string(101, 'x'));

  const struct {
    std::string path;
    absl::StatusCode code;
    std::string message;
  } cases[] = {
      {missing, absl::StatusCode::kNotFound,
       absl::StrCat("cannot open feature file '", missing,
                    "': No such file or directory")},
      {directory, absl::StatusCode::kFailedPrecondition,
       absl::StrCat("feature file '", directory, "' is not a regular file")},
      {fifo, absl::StatusCode::kFailedPrecondition,
       absl::StrCat("feature file '", fifo, "' is not a regular file")},
      {big, absl::StatusCode::kInvalidArgument,
       absl::StrCat(big,
                    ": feature file is larger than 100 bytes; refusing to "
                    "read it (is this the right file?)")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path);
    const absl::Status s = ReadFileCapped(c.path, 100, "feature file").status();
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST(ReadFileCappedTest, PermissionDeniedIsReportedAsSuch) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  TempDir dir("file_io_test");
  const std::string path = dir.Path("secret.json");
  WriteInPlace(path, "{}");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  const absl::Status s = ReadFileCapped(path, 100, "config file").status();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("cannot open config file '", path, "'")));
}

TEST(ReadFileCappedTest, ThePathIsEscapedInMessages) {
  const std::string path = "/nonexistent/a\nb\xff.json";
  const absl::Status s = ReadFileCapped(path, 100, "hot-list file").status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("cannot open hot-list file '/nonexistent/a\\nb"
                        "\xef\xbf\xbd.json'"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
