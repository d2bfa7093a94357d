// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// JSON text helpers shared by every component that writes log lines or
// snapshots by hand (the hot paths build a line with absl::StrCat rather than
// through a JSON library: one allocation, no DOM), and `Printable`, which
// makes any bytes (a path, a Redis member, a parser's error text) safe to
// put in a status message. None of it needs nlohmann/json.

#ifndef DEGRADE_DETAIL_JSON_TEXT_HPP_
#define DEGRADE_DETAIL_JSON_TEXT_HPP_

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN
namespace detail {

// How much of a UTF-8 sequence starts at s[i]: `need`, the length its lead
// byte announces (0 for a byte that cannot start one), and `have`, how many
// of its bytes are there and well-formed (overlong forms, surrogates and
// code points past U+10FFFF are refused at the second byte, as the Unicode
// standard's table of well-formed sequences does). The sequence is valid
// when have == need.
struct Utf8Prefix {
  std::size_t need = 0;
  std::size_t have = 0;
};

inline Utf8Prefix Utf8PrefixAt(absl::string_view s, std::size_t i) {
  const auto byte = [&s](std::size_t k) {
    return static_cast<unsigned char>(s[k]);
  };
  const unsigned char c = byte(i);
  // The range the second byte must fall in; later bytes are 0x80..0xBF.
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  Utf8Prefix p;
  if (c >= 0xC2 && c <= 0xDF) {
    p.need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    p.need = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    p.need = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return p;
  }
  p.have = 1;
  while (p.have < p.need && i + p.have < s.size()) {
    const unsigned char b = byte(i + p.have);
    if (b < lo || b > hi) break;
    lo = 0x80;
    hi = 0xBF;
    ++p.have;
  }
  return p;
}

// The length of the valid UTF-8 sequence starting at s[i], or 0.
inline std::size_t Utf8SequenceLength(absl::string_view s, std::size_t i) {
  const Utf8Prefix p = Utf8PrefixAt(s, i);
  return p.have == p.need ? p.need : 0;
}

// Appends ASCII character `c` as it stands in a JSON string: quotes,
// backslashes and control characters escaped (the short forms where JSON
// has one, \u00XX otherwise), anything else as is.
inline void AppendJsonEscapedAscii(std::string* out, unsigned char c) {
  switch (c) {
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    case '\b':
      *out += "\\b";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
    default:
      if (c < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        *out += "\\u00";
        *out += kHex[c >> 4];
        *out += kHex[c & 0xF];
      } else {
        *out += static_cast<char>(c);
      }
  }
}

// Appends `s` escaped for a JSON string literal (without the quotes).
// Invalid UTF-8 becomes U+FFFD, so a log line stays valid JSON whatever a
// name contains.
inline void AppendJsonEscaped(std::string* out, absl::string_view s) {
  out->reserve(out->size() + s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        *out += "\\ufffd";
      } else {
        out->append(s.data() + i, n);
        i += n - 1;
      }
      continue;
    }
    AppendJsonEscapedAscii(out, c);
  }
}

// As AppendJsonEscaped, as a new string.
inline std::string JsonEscape(absl::string_view s) {
  std::string out;
  AppendJsonEscaped(&out, s);
  return out;
}

// `text` made safe to embed in a status message that may end up in a JSON
// log line. Text of printable ASCII only is returned as is (the common case:
// a path, a key). Anything else is escaped as a JSON string's contents
// (quotes, backslashes and control characters), valid UTF-8 such as a
// Chinese file name is kept, and each ill-formed sequence becomes one U+FFFD
// (written as the character, not as an escape), so the message is valid
// UTF-8 whatever the bytes were. This is what nlohmann's
// dump(-1, ' ', false, error_handler_t::replace) makes of the string, without
// the quotes, written without nlohmann so that headers which never parse
// JSON can use it (json_text_test checks the two agree).
inline std::string Printable(absl::string_view text) {
  bool clean = true;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) clean = false;
  }
  if (clean) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      AppendJsonEscapedAscii(&out, c);
      ++i;
      continue;
    }
    const Utf8Prefix p = Utf8PrefixAt(text, i);
    if (p.need != 0 && p.have == p.need) {
      out.append(text.data() + i, p.need);
    } else {
      out += "\xEF\xBF\xBD";  // one U+FFFD for the whole ill-formed prefix
    }
    i += p.have == 0 ? 1 : p.have;
  }
  return out;
}

// `text` made Printable and cut to at most `max_bytes` of it (at a UTF-8
// boundary), with "... (N bytes)" saying how long it was: a value from the
// outside (a 1 MB key, a parser's quote of a 1 MB token) must not turn one
// error message or log line into a megabyte.
inline std::string Abbreviated(absl::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return Printable(text);
  std::size_t cut = max_bytes;
  // Back off to the start of a UTF-8 sequence (continuation bytes are
  // 10xxxxxx), so the kept part is not cut inside a character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  std::string out = Printable(text.substr(0, cut));
  out += "... (";
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

// Longest key or name quoted in a message (see Abbreviated).
inline constexpr std::size_t kMaxNameChars = 64;

// A path segment in messages: `parent.key` for short identifier-like keys,
// `parent["key"]` otherwise (escaped, abbreviated), so a key with dots,
// quotes or control characters can neither be mistaken for nesting nor
// forge a line.
inline std::string KeyPath(absl::string_view parent, absl::string_view key) {
  bool plain = !key.empty() && key.size() <= kMaxNameChars;
  for (char c : key) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z');
    if (!alnum && c != '_' && c != '-') plain = false;
  }
  std::string out(parent);
  if (plain) {
    if (!out.empty()) out += '.';
    out.append(key.data(), key.size());
    return out;
  }
  out += "[\"";
  out += Abbreviated(key, kMaxNameChars);
  out += "\"]";
  return out;
}

// `v` as a JSON number, in the shortest text that reads back as exactly `v`
// (StrCat's six significant digits could print a value and the threshold
// it crossed alike); "null" for NaN or an infinity, which JSON cannot spell.
inline std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// `v` for a message: the shortest text that reads back as exactly `v`, and
// "nan", "inf" or "-inf" as absl::StrCat spells those.
inline std::string ExactNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return JsonNumber(v);
}

inline std::string JsonTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

}  // namespace detail
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_DETAIL_JSON_TEXT_HPP_
