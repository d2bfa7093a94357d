// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz target: the etcd adapter's watch stream, as the JSON gateway sends it
// (POST /v3/watch: one JSON object per message, chunk boundaries anywhere),
// read by `JsonObjectSplitter` (etcd/detail/json_stream.hpp) and each
// message parsed by `ParseWatchMessage` (etcd/detail/watch_message.hpp);
// an HTTP error body by `WatchHttpError`. These are the watcher's whole
// reading of the network, without the watcher or a socket. The first byte
// picks the chunk size and where a consumer stops; the rest is the stream.
// Beyond "no crash" it checks:
//
//   * the split does not depend on the chunking: fed whole or a few bytes
//     at a time, the same objects and the same final status;
//   * every object is one '{'...'}' of at most the maximum; over it, or on a
//     stray byte between objects, the stream is RESOURCE_EXHAUSTED or
//     INTERNAL and yields nothing more;
//   * a consumer that stops after k objects gets exactly k + 1 calls;
//   * a parsed message is an error (never OK, nothing else set) or a result
//     (the compaction fields only when canceled); a refused one is INTERNAL
//     or DATA_LOSS, prefixed by the place, with a bounded message;
//   * an HTTP error is never OK and its message is bounded.

#ifndef DEGRADE_TESTS_FUZZ_ETCD_WATCH_FUZZ_HPP_
#define DEGRADE_TESTS_FUZZ_ETCD_WATCH_FUZZ_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/etcd/detail/json_stream.hpp"
#include "degrade/etcd/detail/watch_message.hpp"
#include "fuzz/fuzz_support.hpp"

namespace degrade_fuzz {

// Small, so that fuzzed streams reach it (the watcher's is 64 MiB).
inline constexpr std::size_t kMaxWatchObject = 512;
inline constexpr std::size_t kMaxWatchError = 2048;

struct SplitRun {
  std::vector<std::string> objects;
  absl::Status status;
  bool stopped = false;
  bool inside = false;
};

// Feeds `stream` `step` bytes at a time (0: all at once); the consumer
// stops after `stop_after` + 1 objects (or never, when negative).
inline SplitRun SplitStream(absl::string_view stream, std::size_t step,
                            int stop_after) {
  degrade::detail::etcd::JsonObjectSplitter splitter(kMaxWatchObject);
  SplitRun run;
  if (step == 0) step = stream.size() + 1;
  for (std::size_t i = 0; i < stream.size(); i += step) {
    bool stopped = true;
    run.status = splitter.Feed(
        stream.substr(i, step),
        [&](absl::string_view o) {
          run.objects.emplace_back(o);
          return stop_after < 0 ||
                 run.objects.size() <= static_cast<std::size_t>(stop_after);
        },
        &stopped);
    if (!run.status.ok()) break;
    if (stopped) {
      run.stopped = true;
      break;
    }
  }
  run.inside = splitter.inside();
  return run;
}

inline void CheckWatchMessage(absl::string_view text) {
  namespace etcd = degrade::detail::etcd;
  const absl::StatusOr<etcd::WatchMessage> msg =
      etcd::ParseWatchMessage(text, "fuzz");
  if (!msg.ok()) {
    const absl::Status& s = msg.status();
    DEGRADE_FUZZ_CHECK(absl::IsInternal(s) || absl::IsDataLoss(s),
                       s.ToString());
    DEGRADE_FUZZ_CHECK(absl::StartsWith(s.message(), "fuzz: "), s.message());
    DEGRADE_FUZZ_CHECK(s.message().size() <= kMaxWatchError,
                       s.message().size());
    return;
  }
  if (!msg->error.ok()) {
    DEGRADE_FUZZ_CHECK(
        absl::StartsWith(msg->error.message(), "fuzz: etcd error: "),
        msg->error.message());
    DEGRADE_FUZZ_CHECK(msg->error.message().size() <= kMaxWatchError,
                       msg->error.message().size());
    DEGRADE_FUZZ_CHECK(!absl::IsCancelled(msg->error), "CANCELLED kept");
    DEGRADE_FUZZ_CHECK(!msg->created && !msg->canceled && msg->events.empty() &&
                           msg->cluster_id == 0 && msg->header_revision == 0,
                       "an error message with a result");
    return;
  }
  if (!msg->canceled) {
    DEGRADE_FUZZ_CHECK(
        msg->compact_revision == 0 && msg->canceled_result.empty(),
        "compaction fields without canceled");
  }
}

inline int FuzzEtcdWatch(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const absl::string_view stream = AsText(data + 1, size - 1);
  const std::size_t step = data[0] % 8;  // 0: the whole stream at once
  const int stop_after = data[0] >> 4;

  const SplitRun whole = SplitStream(stream, 0, -1);
  for (const std::string& o : whole.objects) {
    DEGRADE_FUZZ_CHECK(o.size() >= 2 && o.front() == '{' && o.back() == '}', o);
    DEGRADE_FUZZ_CHECK(o.size() <= kMaxWatchObject, o.size());
  }
  if (!whole.status.ok()) {
    DEGRADE_FUZZ_CHECK(absl::IsInternal(whole.status) ||
                           absl::IsResourceExhausted(whole.status),
                       whole.status.ToString());
  }

  const SplitRun chunked = SplitStream(stream, step, -1);
  DEGRADE_FUZZ_CHECK(chunked.objects == whole.objects, "step ", step);
  DEGRADE_FUZZ_CHECK(chunked.status == whole.status, chunked.status.ToString(),
                     " vs ", whole.status.ToString());
  DEGRADE_FUZZ_CHECK(chunked.inside == whole.inside, "step ", step);

  const SplitRun stopping = SplitStream(stream, step, stop_after);
  const std::size_t want =
      whole.objects.size() > static_cast<std::size_t>(stop_after)
          ? static_cast<std::size_t>(stop_after) + 1
          : whole.objects.size();
  DEGRADE_FUZZ_CHECK(stopping.objects.size() == want, stopping.objects.size());
  DEGRADE_FUZZ_CHECK(stopping.stopped == (whole.objects.size() >
                                          static_cast<std::size_t>(stop_after)),
                     "stopped");
  for (std::size_t i = 0; i < want; ++i) {
    DEGRADE_FUZZ_CHECK(stopping.objects[i] == whole.objects[i], i);
  }

  // Each object as a message; the raw stream too, as one message.
  for (const std::string& o : whole.objects) CheckWatchMessage(o);
  CheckWatchMessage(stream);

  // The stream as an HTTP error body.
  const int http_status = 400 + data[0] % 200;
  const absl::Status http = degrade::detail::etcd::WatchHttpError(
      "fuzz", http_status, std::string(stream));
  DEGRADE_FUZZ_CHECK(!http.ok(), "an HTTP error read as OK");
  DEGRADE_FUZZ_CHECK(http.message().size() <= kMaxWatchError,
                     http.message().size());
  return 0;
}

}  // namespace degrade_fuzz

#endif  // DEGRADE_TESTS_FUZZ_ETCD_WATCH_FUZZ_HPP_
