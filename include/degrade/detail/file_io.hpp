// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: detail/file_io.hpp
// -----------------------------------------------------------------------------
//
// `ReadFileCapped()`: the one file reader of degrade, used for config files,
// default-feature files and hot-list baselines. It reads a whole regular file
// of at most `max_bytes` and refuses anything else with a status that says
// what the file is (the caller's `what`: "config file", "feature file",
// "hot-list file") and its path, escaped:
//
//   missing, unreadable         the errno-derived status (NOT_FOUND,
//                               PERMISSION_DENIED, ...): "cannot open
//                               feature file '/data/avg.json': No such file
//                               or directory"
//   a directory, FIFO, device   FAILED_PRECONDITION, "... is not a regular
//                               file" (a FIFO is opened without blocking)
//   over `max_bytes`            INVALID_ARGUMENT, refused after reading one
//                               byte past the cap, not the whole file
//
//   absl::StatusOr<std::string> text =
//       detail::ReadFileCapped(path, kMaxConfigBytes, "config file");
//   if (!text.ok()) return text.status();
//
// POSIX systems read with open/fstat/read (so a non-regular file is refused
// before it is read); elsewhere with stdio, which cannot tell a regular file
// apart. The size is never taken from the file's metadata: the file may
// change under us, and some filesystems report 0.
//
// Thread-safe: no state.

#ifndef DEGRADE_DETAIL_FILE_IO_HPP_
#define DEGRADE_DETAIL_FILE_IO_HPP_

#include <cerrno>
#include <cstddef>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define DEGRADE_DETAIL_POSIX_IO 1
#else
#include <cstdio>
#define DEGRADE_DETAIL_POSIX_IO 0
#endif

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// ReadFileCapped()
//
// The content of the regular file at `path`, or an error naming `what` and
// the path (see the file comment). REQUIRES: `what` is a short noun phrase
// ("config file").
inline absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                                  std::size_t max_bytes,
                                                  absl::string_view what);

// ---- Implementation details -------------------------------------------------

// The one message for a file over the cap, on either platform.
inline absl::Status FileTooLargeError(absl::string_view name,
                                      absl::string_view what,
                                      std::size_t max_bytes) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": ", what, " is larger than ", max_bytes,
                   " bytes; refusing to read it (is this the right file?)"));
}

inline absl::Status FileErrnoError(int err, absl::string_view verb,
                                   absl::string_view what,
                                   absl::string_view name) {
  return absl::ErrnoToStatus(
      err, absl::StrCat("cannot ", verb, " ", what, " '", name, "'"));
}

#if DEGRADE_DETAIL_POSIX_IO

inline absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                                  std::size_t max_bytes,
                                                  absl::string_view what) {
  const std::string name = Printable(path);
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the
  // S_ISREG check below then refuses it. It has no effect on regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return FileErrnoError(errno, "open", what, name);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return FileErrnoError(errno, "stat", what, name);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " '", name, "' is not a regular file"));
  }
  // Read to EOF rather than trusting st_size; stop one byte past the cap.
  std::string content;
  char buf[16384];
  while (content.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return FileErrnoError(err, "read", what, name);
    }
    content.append(buf, static_cast<std::size_t>(n));
  }
  if (content.size() > max_bytes) {
    return FileTooLargeError(name, what, max_bytes);
  }
  return content;
}

#else  // !DEGRADE_DETAIL_POSIX_IO

inline absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                                  std::size_t max_bytes,
                                                  absl::string_view what) {
  const std::string name = Printable(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return FileErrnoError(errno, "open", what, name);
  std::string content;
  char buf[16384];
  while (content.size() <= max_bytes) {
    const std::size_t n = std::fread(buf, 1, sizeof(buf), f);
    content.append(buf, n);
    if (n < sizeof(buf)) break;
  }
  const int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (err != 0) return FileErrnoError(err, "read", what, name);
  if (content.size() > max_bytes) {
    return FileTooLargeError(name, what, max_bytes);
  }
  return content;
}

#endif  // DEGRADE_DETAIL_POSIX_IO

}  // namespace detail
DEGRADE_NAMESPACE_END

#undef DEGRADE_DETAIL_POSIX_IO

#endif  // DEGRADE_DETAIL_FILE_IO_HPP_
