// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// JSON text helpers shared by every component that writes log lines or
// snapshots by hand (the hot paths build a line with absl::StrCat rather than
// through a JSON library: one allocation, no DOM).

#ifndef DEGRADE_DETAIL_JSON_TEXT_HPP_
#define DEGRADE_DETAIL_JSON_TEXT_HPP_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// The length of the valid UTF-8 sequence starting at s[i], or 0.
inline std::size_t Utf8SequenceLength(absl::string_view s, std::size_t i) {
  const auto byte = [&s](std::size_t k) {
    return static_cast<unsigned char>(s[k]);
  };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  unsigned int min = 0;
  unsigned int cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1Fu, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0Fu, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// Escapes `s` for a JSON string literal (without the quotes). Invalid UTF-8
// becomes U+FFFD, so a log line stays valid JSON whatever a name contains.
inline std::string JsonEscape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      const std::size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\\ufffd";
      } else {
        out.append(s.data() + i, n);
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

inline std::string JsonTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_JSON_TEXT_HPP_
