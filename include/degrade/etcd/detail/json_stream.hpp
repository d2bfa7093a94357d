// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Cuts a stream of JSON objects (etcd's /v3/watch response: one object per
// message, whitespace between, chunk boundaries anywhere) into whole
// objects, by brace depth outside strings. It does not validate JSON: each
// object it yields is parsed by the caller. Not thread-safe: one stream's
// state.

#ifndef DEGRADE_ETCD_DETAIL_JSON_STREAM_HPP_
#define DEGRADE_ETCD_DETAIL_JSON_STREAM_HPP_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {
namespace etcd {

class JsonObjectSplitter {
 public:
  explicit JsonObjectSplitter(std::size_t max_object_bytes)
      : max_(max_object_bytes) {}

  // Feeds `data`; calls `on_object(absl::string_view)` for each object it
  // completes, stopping (returning OK) as soon as one returns false. A byte
  // other than whitespace between objects, or an object over the maximum,
  // is INTERNAL or RESOURCE_EXHAUSTED (the stream is then unusable).
  template <typename F>
  absl::Status Feed(absl::string_view data, F&& on_object, bool* stopped) {
    *stopped = false;
    for (const char c : data) {
      if (depth_ > 0) buffer_.push_back(c);
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"' && depth_ > 0) {
        in_string_ = true;
      } else if (c == '{') {
        if (depth_++ == 0) buffer_.assign(1, c);
      } else if (c == '}' && depth_ > 0 && --depth_ == 0) {
        const bool go_on = on_object(absl::string_view(buffer_));
        buffer_.clear();
        if (!go_on) {
          *stopped = true;
          return absl::OkStatus();
        }
      } else if (depth_ == 0 && c != '\n' && c != '\r' && c != ' ' &&
                 c != '\t') {
        return absl::InternalError(
            absl::StrCat("unexpected byte '", absl::CHexEscape({&c, 1}),
                         "' between messages"));
      }
      if (buffer_.size() > max_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("a message over ", max_, " bytes"));
      }
    }
    return absl::OkStatus();
  }

  // Inside an object: a stream ending now was truncated.
  bool inside() const { return depth_ > 0; }

 private:
  const std::size_t max_;
  std::string buffer_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace etcd
}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_ETCD_DETAIL_JSON_STREAM_HPP_
