// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// detail::FileFollower with a recording policy: only changed content is
// handed to Apply() and a refused content's status is replayed, not
// re-applied; a read error is reported once per change; a missing file is
// either one more read error (the content stays remembered) or a state that
// forgets the content, as the policy says; PollOnce() from inside a poll is
// refused with the policy's words; and the background thread polls at once
// and follows a rename. Nothing sleeps: the thread tests wait on a
// TickCounter. The follower reads no clock, so no FakeClock is needed.

#include "degrade/detail/file_follower.hpp"

#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/temp_files.hpp"
#include "support/tick_counter.hpp"

namespace degrade {
namespace detail {
namespace DEGRADE_TEST_UNIT {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// What the hooks were asked, in order, and what they answer.
struct Script {
  std::vector<std::string> calls;  // "apply:<content>", "missing", "report:.."
  absl::Status apply_result;       // what Apply() returns
  std::optional<absl::Status> missing;  // what OnMissing() returns
  std::function<void()> during_apply;   // run inside Apply()
  degrade_tests::TickCounter* applies = nullptr;
};

struct Recording {
  static constexpr absl::string_view kOwner = "test follower";
  static constexpr absl::string_view kFile = "test file";
  static constexpr std::size_t kMaxBytes = 16;
  static constexpr absl::string_view kReentry = "PollOnce() from inside";

  absl::Status Apply(const std::string& /*path*/, const std::string& content) {
    script->calls.push_back(absl::StrCat("apply:", content));
    if (script->during_apply) script->during_apply();
    if (script->applies != nullptr) script->applies->Tick();
    return script->apply_result;
  }
  std::optional<absl::Status> OnMissing(const std::string& /*path*/) {
    script->calls.push_back("missing");
    return script->missing;
  }
  void ReportReadError(const absl::Status& error) {
    script->calls.push_back(
        absl::StrCat("report:", absl::StatusCodeToString(error.code())));
  }

  Script* script;
};

using Follower = FileFollower<Recording>;

const std::string kTooBig(Recording::kMaxBytes + 1, 'x');

class FileFollowerTest : public ::testing::Test {
 protected:
  void Remove() { ASSERT_EQ(std::remove(path_.c_str()), 0) << path_; }

  degrade_tests::TempDir dir_{"degrade_follower"};
  const std::string path_ = dir_.Path("followed.json");
  // Before the follower, so that its thread has stopped before they go.
  degrade_tests::TickCounter applies_;
  Script script_;
  Follower follower_{path_, Recording{&script_}};
};

TEST_F(FileFollowerTest, NothingIsReadBeforeTheFirstPoll) {
  EXPECT_TRUE(follower_.last_status().ok());
  EXPECT_EQ(follower_.applied(), 0u);
  EXPECT_EQ(follower_.errors(), 0u);
  EXPECT_EQ(follower_.path(), path_);
  EXPECT_THAT(script_.calls, IsEmpty());
}

TEST_F(FileFollowerTest, OnlyChangedContentIsAppliedAndAnOutcomeIsReplayed) {
  degrade_tests::WriteByRename(path_, "a");
  EXPECT_TRUE(follower_.PollOnce().ok());
  EXPECT_TRUE(follower_.PollOnce().ok());  // unchanged: not applied again
  EXPECT_EQ(follower_.applied(), 1u);

  // A refusal is returned again while the content stays, and counted once.
  const absl::Status refused = absl::InvalidArgumentError("no b");
  script_.apply_result = refused;
  degrade_tests::WriteInPlace(path_, "b");
  EXPECT_EQ(follower_.PollOnce(), refused);
  EXPECT_EQ(follower_.PollOnce(), refused);
  EXPECT_EQ(follower_.last_status(), refused);
  EXPECT_EQ(follower_.errors(), 1u);

  // Changed is measured against the last content, not any earlier one.
  script_.apply_result = absl::OkStatus();
  degrade_tests::WriteByRename(path_, "a");
  EXPECT_TRUE(follower_.PollOnce().ok());
  EXPECT_TRUE(follower_.last_status().ok());
  EXPECT_EQ(follower_.applied(), 2u);
  EXPECT_EQ(follower_.errors(), 1u);
  EXPECT_THAT(script_.calls, ElementsAre("apply:a", "apply:b", "apply:a"));
}

TEST_F(FileFollowerTest, AReadErrorIsReportedOncePerChange) {
  degrade_tests::WriteByRename(path_, kTooBig);
  const absl::Status too_big = follower_.PollOnce();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_big.message()), ::testing::HasSubstr(path_));
  EXPECT_EQ(follower_.PollOnce(), too_big);  // the same error: not reported
  EXPECT_EQ(follower_.last_status(), too_big);
  EXPECT_EQ(follower_.errors(), 1u);

  // A good read in between makes the same error new again.
  degrade_tests::WriteByRename(path_, "a");
  EXPECT_TRUE(follower_.PollOnce().ok());
  degrade_tests::WriteByRename(path_, kTooBig);
  EXPECT_EQ(follower_.PollOnce(), too_big);
  EXPECT_EQ(follower_.errors(), 2u);
  EXPECT_EQ(follower_.applied(), 1u);
  EXPECT_THAT(script_.calls, ElementsAre("report:INVALID_ARGUMENT", "apply:a",
                                         "report:INVALID_ARGUMENT"));
}

TEST_F(FileFollowerTest, AMissingFileCanBeOneMoreReadError) {
  script_.missing = std::nullopt;
  degrade_tests::WriteByRename(path_, "a");
  ASSERT_TRUE(follower_.PollOnce().ok());
  Remove();
  EXPECT_EQ(follower_.PollOnce().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(follower_.PollOnce().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(follower_.last_status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(follower_.errors(), 1u);
  // Another error is a change, and is reported.
  degrade_tests::WriteByRename(path_, kTooBig);
  EXPECT_EQ(follower_.PollOnce().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(follower_.errors(), 2u);

  // The content is still remembered: the same file coming back is not
  // applied again, and its first outcome is replayed.
  degrade_tests::WriteByRename(path_, "a");
  EXPECT_TRUE(follower_.PollOnce().ok());
  EXPECT_EQ(follower_.applied(), 1u);
  EXPECT_THAT(script_.calls,
              ElementsAre("apply:a", "missing", "report:NOT_FOUND", "missing",
                          "report:INVALID_ARGUMENT"));
}

TEST_F(FileFollowerTest, AMissingFileCanBeAStateThatForgetsTheContent) {
  // The policy's answer is the poll's outcome, whatever it is.
  const absl::Status absent = absl::UnavailableError("absent");
  script_.missing = absent;
  EXPECT_EQ(follower_.PollOnce(), absent);
  EXPECT_EQ(follower_.last_status(), absent);
  EXPECT_EQ(follower_.errors(), 0u);

  degrade_tests::WriteByRename(path_, "a");
  ASSERT_TRUE(follower_.PollOnce().ok());
  Remove();
  EXPECT_EQ(follower_.PollOnce(), absent);
  EXPECT_EQ(follower_.PollOnce(), absent);  // asked again, never reported
  EXPECT_EQ(follower_.errors(), 0u);
  // The same content after an absence is a new file: applied again.
  degrade_tests::WriteByRename(path_, "a");
  EXPECT_TRUE(follower_.PollOnce().ok());
  EXPECT_EQ(follower_.applied(), 2u);

  // An absence also ends a read error, so the same error later is new.
  degrade_tests::WriteByRename(path_, kTooBig);
  EXPECT_FALSE(follower_.PollOnce().ok());
  Remove();
  EXPECT_EQ(follower_.PollOnce(), absent);
  degrade_tests::WriteByRename(path_, kTooBig);
  EXPECT_FALSE(follower_.PollOnce().ok());
  EXPECT_EQ(follower_.errors(), 2u);
  EXPECT_THAT(script_.calls,
              ElementsAre("missing", "apply:a", "missing", "missing", "apply:a",
                          "report:INVALID_ARGUMENT", "missing",
                          "report:INVALID_ARGUMENT"));
}

TEST_F(FileFollowerTest, PollOnceFromInsideItsOwnPollIsRefused) {
  degrade_tests::WriteByRename(path_, "a");
  // Another follower is not this poll's: polling it from the hook works.
  const std::string other_path = dir_.Path("other.json");
  degrade_tests::WriteByRename(other_path, "o");
  Script other_script;
  Follower other(other_path, Recording{&other_script});

  absl::Status inner;
  absl::Status other_status = absl::UnknownError("not polled");
  script_.during_apply = [&] {
    inner = follower_.PollOnce();
    other_status = other.PollOnce();
  };
  EXPECT_TRUE(follower_.PollOnce().ok());
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(inner.message(), absl::StrCat("test follower '", path_,
                                          "': PollOnce() from inside"));
  // The refused call read nothing and stored nothing.
  EXPECT_TRUE(follower_.last_status().ok());
  EXPECT_EQ(follower_.applied(), 1u);
  EXPECT_THAT(script_.calls, ElementsAre("apply:a"));
  EXPECT_TRUE(other_status.ok()) << other_status;
  EXPECT_THAT(other_script.calls, ElementsAre("apply:o"));
}

TEST_F(FileFollowerTest, StartRefusesAPeriodOutOfRangeNamingTheFile) {
  const absl::Status s = follower_.Start(absl::ZeroDuration());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              StartsWith(absl::StrCat("test follower '", path_,
                                      "': Start(period = 0)")));
  EXPECT_THAT(script_.calls, IsEmpty());  // nothing was polled
}

TEST_F(FileFollowerTest, TheBackgroundThreadPollsAtOnceAndFollowsARename) {
  script_.applies = &applies_;
  degrade_tests::WriteByRename(path_, "a");
  // An hour: only the poll at once can have applied it.
  ASSERT_TRUE(follower_.Start(absl::Hours(1)).ok());
  ASSERT_TRUE(applies_.WaitFor(1));
  // Again while running: restarts with the new period, polling every
  // millisecond; only the changed content reaches Apply().
  ASSERT_TRUE(follower_.Start(absl::Milliseconds(1)).ok());
  degrade_tests::WriteByRename(path_, "b");
  ASSERT_TRUE(applies_.WaitFor(2));
  follower_.Stop();
  EXPECT_EQ(follower_.applied(), 2u);
  EXPECT_TRUE(follower_.last_status().ok());
  EXPECT_THAT(script_.calls, ElementsAre("apply:a", "apply:b"));
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace detail
}  // namespace degrade
