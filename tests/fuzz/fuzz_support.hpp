// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Shared by the fuzz targets in this directory and by replay_corpus_test.cpp,
// which runs every target's entry function over its committed corpus in the
// normal (g++ and clang) builds.
//
// Each target lives in a header (`*_fuzz.hpp`) as a plain function
// `int FuzzX(const uint8_t* data, std::size_t size)`; its `*_fuzzer.cpp` is
// only `DEGRADE_FUZZ_TARGET(FuzzX)`, libFuzzer's entry point. A target checks
// invariants beyond "does not crash" and calls `Fail()` (which aborts, so
// libFuzzer reports the input and saves it) when one is broken.

#ifndef DEGRADE_TESTS_FUZZ_FUZZ_SUPPORT_HPP_
#define DEGRADE_TESTS_FUZZ_FUZZ_SUPPORT_HPP_

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace degrade_fuzz {

// Reports a broken invariant and aborts: libFuzzer records the input as a
// crash, and the replay test fails.
[[noreturn]] inline void Fail(const char* where, const std::string& what) {
  std::fprintf(stderr, "%s: invariant violated: %s\n", where, what.c_str());
  std::fflush(stderr);
  std::abort();
}

#define DEGRADE_FUZZ_STR2(x) #x
#define DEGRADE_FUZZ_STR(x) DEGRADE_FUZZ_STR2(x)
// Checks `cond`; the further arguments (at least one) are joined into the
// message with absl::StrCat.
#define DEGRADE_FUZZ_CHECK(cond, ...)                                 \
  do {                                                                \
    if (!(cond)) {                                                    \
      ::degrade_fuzz::Fail(__FILE__ ":" DEGRADE_FUZZ_STR(__LINE__),   \
                           ::absl::StrCat(#cond, ": ", __VA_ARGS__)); \
    }                                                                 \
  } while (false)

// A parser's refusal of fuzzed text given the source name "fuzz":
// INVALID_ARGUMENT, its message starting with that name.
#define DEGRADE_FUZZ_CHECK_REFUSED(status)                               \
  do {                                                                   \
    const ::absl::Status& refused_ = (status);                           \
    DEGRADE_FUZZ_CHECK(::absl::IsInvalidArgument(refused_),              \
                       refused_.ToString());                             \
    DEGRADE_FUZZ_CHECK(::absl::StartsWith(refused_.message(), "fuzz: "), \
                       refused_.message());                              \
  } while (false)

// After a refused load: `holder` (a DefaultFeatures or a HotList) still
// serves the very snapshot `before`, has counted the one refusal in
// `failures`, and reports `refusal` as its last status.
template <typename Holder, typename Snapshot>
void CheckStillServing(const Holder& holder, const Snapshot& before,
                       uint64_t failures, const absl::Status& refusal) {
  DEGRADE_FUZZ_CHECK(holder.snapshot() == before, "snapshot replaced");
  DEGRADE_FUZZ_CHECK(failures == 1, failures);
  DEGRADE_FUZZ_CHECK(holder.last_status() == refusal, "last_status");
  DEGRADE_FUZZ_CHECK(!refusal.message().empty(), "a refusal without a cause");
}

inline absl::string_view AsText(const uint8_t* data, std::size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

// True when `s` is well-formed UTF-8 with no C0 control byte: what may
// reach a (JSON) log line from a client's header. DEL is left as it is, as
// JSON does (detail/json_text.hpp).
inline bool IsPrintableUtf8(absl::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c < 0x20) return false;
      ++i;
      continue;
    }
    std::size_t need = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      need = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      need = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      need = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + need >= s.size()) return false;  // the sequence is cut off
    for (std::size_t k = 1; k <= need; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += need + 1;
  }
  return true;
}

// A file in $TMPDIR that the process rewrites with each input, for loaders
// that take a path. Created once per process (mkstemp), removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const char* stem) {
    const char* dir = std::getenv("TMPDIR");
    std::string templ = (dir != nullptr && *dir != '\0') ? dir : "/tmp";
    templ += "/degrade-fuzz-";
    templ += stem;
    templ += "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0) Fail("ScratchFile", std::string("mkstemp: ") + strerror(errno));
    ::close(fd);
    path_.assign(buf.data());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() { ::unlink(path_.c_str()); }

  const std::string& path() const { return path_; }

  // Replaces the file's content with `size` bytes. Written over the old
  // content and then cut to size, rather than opened with O_TRUNC: ext4
  // flushes a file truncated to zero and rewritten when it is closed
  // (auto_da_alloc), which would make every fuzz iteration wait for the disk.
  void Write(const uint8_t* data, std::size_t size) const {
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) Fail("ScratchFile", std::string("open: ") + strerror(errno));
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n =
          ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) Fail("ScratchFile", std::string("write: ") + strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      Fail("ScratchFile", std::string("ftruncate: ") + strerror(errno));
    }
    ::close(fd);
  }

 private:
  std::string path_;
};

}  // namespace degrade_fuzz

// libFuzzer's entry point, forwarding to `fn`.
#define DEGRADE_FUZZ_TARGET(fn)                                             \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    return fn(data, size);                                                  \
  }

#endif  // DEGRADE_TESTS_FUZZ_FUZZ_SUPPORT_HPP_
