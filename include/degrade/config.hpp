// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: config.hpp
// -----------------------------------------------------------------------------
//
// Reads a `DegradationConfig` from JSON, applies it to a running
// `DegradationManager`, and keeps a manager in step with a file on disk, so
// thresholds can change without a redeploy. The format is the seed article's,
// which loads as is:
//
//   {
//     "degradation": {
//       "level1": {"trigger": {"gpu_util": 0.85, "queue_length": 20},
//                  "disable": ["semantic_cache", "debug_log"]},
//       "level2": {"trigger": {"gpu_util": 0.95, "queue_length": 50},
//                  "disable": ["personalization", "ab_test"]},
//       "level3": {"trigger": {"queue_length": 100, "avg_latency_ms": 3000},
//                  "disable": ["all_non_critical"]}
//     }
//   }
//
// Optional keys beyond the article (each maps to the `DegradationConfig` /
// `LevelSpec` field of the same name, see degradation_config.hpp):
//
//   "degradation": "name" (string), "recover_ratio" (number), "hold",
//                  "enter_after", "cooldown" (durations), "critical" (array of
//                  feature names)
//   "levelN":      "recover" (object: signal -> number), "hold",
//                  "enter_after" (durations)
//
// Durations are strings with a unit: "60s", "500ms", "1m30s", "250us", "2h".
// Level keys are exactly `level1` .. `levelN`, N in 1..kMaxLevels, with no
// gaps; the key becomes `LevelSpec::name`. Key order never matters.
//
// Why so strict: a config pushed from a config centre is applied to every
// instance of a service at once, and a typo that silently drops a trigger
// ("gpu_utl") or a level ("levle2") disarms the protection exactly when it is
// needed. So every key must be known, every value must have the right type,
// and the whole config is validated (including `ValidateDegradationConfig()`'s
// semantic rules) before anything is returned. A rejected config leaves the
// manager on its last good one. Every error is INVALID_ARGUMENT and reads
//
//   <source>: <json path> = <offending value>: <rule broken>
//
// for example
//
//   /etc/svc/degrade.json: degradation.level2.trigger.gpu_util = "0.95":
//   must be a number (got a string)
//
// Nothing here throws or needs exceptions: the JSON is parsed with
// nlohmann's non-throwing entry points and every value's type is checked
// before it is read, so the header compiles and behaves the same with
// -fno-exceptions, and malformed input of any shape is a status, not an abort.
//
//   degrade::DegradationManager manager;
//   degrade::ConfigFileWatcher watcher("/etc/svc/degrade.json", &manager);
//   absl::Status first = watcher.PollOnce();   // apply it now, see the error
//   watcher.Start(absl::Seconds(10));          // then follow the file
//
// Thread safety: the free functions are thread-safe (they share no state;
// `ReloadJson()` is as thread-safe as `DegradationManager::Reload()`).
// `ConfigFileWatcher` is thread-safe; see its comment.

#ifndef DEGRADE_CONFIG_HPP_
#define DEGRADE_CONFIG_HPP_

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define DEGRADE_CONFIG_POSIX_IO 1
#else
#include <cstdio>
#define DEGRADE_CONFIG_POSIX_IO 0
#endif

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/degradation_config.hpp"
#include "degrade/degradation_manager.hpp"
#include "degrade/detail/mutex.hpp"
#include "degrade/detail/periodic_worker.hpp"
#include "degrade/version.hpp"
#include "nlohmann/json.hpp"

DEGRADE_NAMESPACE_BEGIN

// The largest config text or file accepted, 1 MiB. A real config is a few
// kilobytes; anything near this is a wrong file (a log, a binary) and is
// refused before it is parsed or even fully read.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

// ParseDegradationConfig()
//
// Parses and validates `json_text` (format in the file comment). `source`
// names the text in error messages, typically a file path or "configcenter:
// <key>". Returns the config only if every check passes; otherwise
// INVALID_ARGUMENT naming the source, the JSON path, the value and the rule.
//
// Thread-safe.
absl::StatusOr<DegradationConfig> ParseDegradationConfig(
    absl::string_view json_text, absl::string_view source = "<json>");

// LoadDegradationConfigFile()
//
// Reads the file at `path` and parses it with `source = path`. A file that
// cannot be opened or read gives the errno-derived status (NOT_FOUND for a
// missing file, PERMISSION_DENIED, ...), its message naming the path and the
// system's error text; a path that is not a regular file (a directory, a
// FIFO) gives FAILED_PRECONDITION; a file over kMaxConfigBytes gives
// INVALID_ARGUMENT without reading the rest of it.
//
// Thread-safe.
absl::StatusOr<DegradationConfig> LoadDegradationConfigFile(
    const std::string& path);

// ReloadJson()
//
// Parses `json_text` and hands the result to `manager.Reload()`. A parse or
// validation error goes to `manager.RejectReload()` instead, so it is counted
// and logged exactly like a config the manager refused, and the manager keeps
// serving its last good config. Returns OK or that error.
//
// Thread-safe (as `DegradationManager::Reload()`).
absl::Status ReloadJson(DegradationManager& manager,
                        absl::string_view json_text,
                        absl::string_view source = "<json>");

// ConfigFileWatcher
//
// Keeps `manager` on the config in the file at `path`. Each poll re-opens the
// file BY PATH and compares its whole content with the content of the
// previous successful read; only changed content is parsed and applied. That
// covers every way config files get updated:
//
//   * rewritten in place;
//   * replaced by rename (write a temp file, rename it over the path): the
//     path now names a new inode, which a re-open sees;
//   * behind a swapped symlink, as Kubernetes mounts a ConfigMap:
//     `path` -> `..data/config.json`, where `..data` -> `..2026_01_01_xx`
//     is replaced atomically by a new timestamped directory.
//
// Comparing content (not mtime or inode) makes it immune to coarse
// timestamps, to clocks set back, and to touches that change nothing. Not
// re-applying unchanged content matters: `Reload()` restarts the recovery
// holds, so a watcher that reloaded every period would keep a manager with
// a 60 s hold and a 10 s poll from ever stepping down.
// A rewrite in place is not atomic: a poll can see it half written, reject
// it, and pick up the whole file on the next poll. Prefer rename.
//
// Errors never disturb the manager's config:
//   * unchanged content: nothing happens; the poll returns the status that
//     content got when it was first seen (OK if it was applied);
//   * content that fails to parse or validate: rejected through
//     `ReloadJson()` (counted and logged by the manager once, not on every
//     poll, since unchanged content is not re-applied);
//   * the file missing or unreadable: the old config stays, the poll returns
//     the error, and the error is reported to `manager->RejectReload()` only
//     when it differs from the previous poll's, so a deleted file is logged
//     once, not every period. When the file comes back with content other
//     than the applied one, it is applied.
//
// The watcher only knows about its own file: a `Reload()` from elsewhere
// (a config centre) is not undone, and is replaced only when the file's
// content next changes.
//
// Thread safety: every member is thread-safe. Polls (`PollOnce()` and the
// background thread's) are serialised, so configs are applied in the order
// they were read. A poll calls the manager, which runs its log sink and
// observers on the polling thread; those must not call `PollOnce()`,
// `Start()` or `Stop()` on this watcher (the poll holds the poll lock, and
// Stop() would wait for the very poll that is calling it). The manager must
// outlive the watcher.
class ConfigFileWatcher {
 public:
  // REQUIRES: `manager` is not null and outlives the watcher.
  ConfigFileWatcher(std::string path, DegradationManager* manager)
      : path_(std::move(path)), manager_(manager) {}

  ConfigFileWatcher(const ConfigFileWatcher&) = delete;
  ConfigFileWatcher& operator=(const ConfigFileWatcher&) = delete;

  // Stops the background thread, if any.
  ~ConfigFileWatcher() { Stop(); }

  // Reads the file once and applies it if its content changed (see the class
  // comment for what happens on each kind of error). Returns the outcome,
  // which is also stored for `last_status()`.
  absl::Status PollOnce();

  // Starts a background thread that polls at once and then every `period`
  // until `Stop()`. Calling it while running restarts the thread with the
  // new period. `period` is clamped to [1ms, 1 year]; polling a
  // configuration file faster than a millisecond is never the intent.
  void Start(absl::Duration period);

  // Stops the background thread and waits for it (at most for the poll in
  // progress); a sleeping thread wakes at once. No-op when not running.
  void Stop();

  // Configs this watcher has applied (`Reload()` returned OK).
  uint64_t reloads() const { return reloads_.load(std::memory_order_relaxed); }
  // Errors this watcher has reported to the manager: contents the manager
  // rejected, and changes of read error. Repeats are not counted (see above).
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }
  // The outcome of the latest poll; OK before the first.
  absl::Status last_status() const {
    detail::MutexLock lock(&status_mu_);
    return last_status_;
  }
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  DegradationManager* const manager_;

  // Serialises polls; guards what the last poll saw.
  detail::Mutex poll_mu_;
  // The content of the last successful read, and the status it got when it
  // was first seen (nullopt before the first successful read).
  std::optional<std::string> last_content_ ABSL_GUARDED_BY(poll_mu_);
  absl::Status last_content_status_ ABSL_GUARDED_BY(poll_mu_);
  // The previous poll's read error; OK when that read succeeded.
  absl::Status last_read_error_ ABSL_GUARDED_BY(poll_mu_);

  // Separate from poll_mu_ so `last_status()` never waits for a file read
  // or a reload.
  mutable detail::Mutex status_mu_;
  absl::Status last_status_ ABSL_GUARDED_BY(status_mu_);

  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> errors_{0};

  // Last, so that it stops before anything its polls touch is destroyed.
  detail::PeriodicWorker worker_;
};

// ---- Implementation details -------------------------------------------------

namespace detail {
namespace config_json {

using Json = nlohmann::json;

// JSON nesting deeper than this is refused by the syntax pass. The format
// needs four levels; the cap keeps every later walk (and nlohmann's own
// recursive dump/compare) far from the stack limit on hostile input.
inline constexpr std::size_t kMaxDepth = 32;

// Longest rendering of an offending value in a message.
inline constexpr std::size_t kMaxValueChars = 80;

// A path segment: `.key` for identifier-like keys, `["key"]` otherwise, so a
// key with dots or spaces can't be mistaken for nesting.
inline std::string AppendKey(absl::string_view parent, absl::string_view key) {
  bool plain = !key.empty();
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '-') {
      plain = false;
      break;
    }
  }
  if (plain) {
    return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
  }
  // dump() of a string escapes quotes and control characters; `replace`
  // turns invalid UTF-8 into U+FFFD instead of throwing.
  return absl::StrCat(
      parent, "[",
      Json(std::string(key))
          .dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace),
      "]");
}

// `text` made safe to embed in a status message that may end up in a JSON
// log line: control characters escaped, invalid UTF-8 replaced by U+FFFD
// (a JSON encoder would refuse it, and nlohmann's aborts without
// exceptions). Valid UTF-8, such as a Chinese file name, is kept. Needed
// for the source name and for nlohmann's parse errors, which quote the raw
// bytes they stopped at.
inline std::string Printable(absl::string_view text) {
  bool clean = true;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) clean = false;
  }
  if (clean) return std::string(text);
  std::string quoted = Json(std::string(text))
                           .dump(-1, ' ', /*ensure_ascii=*/false,
                                 Json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);  // drop the quotes dump() adds
}

inline std::string AppendIndex(absl::string_view parent, std::size_t i) {
  return absl::StrCat(parent, "[", i, "]");
}

inline const char* TypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

// The offending value as it would appear in the JSON, shortened. Containers
// are summarised rather than dumped: dump() recurses.
inline std::string Describe(const Json& j) {
  if (j.is_object()) {
    return j.empty() ? "{}"
                     : absl::StrCat("{...} (", j.size(),
                                    j.size() == 1 ? " key)" : " keys)");
  }
  if (j.is_array()) {
    return j.empty() ? "[]"
                     : absl::StrCat("[...] (", j.size(),
                                    j.size() == 1 ? " element)" : " elements)");
  }
  std::string s =
      j.dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
  if (s.size() > kMaxValueChars) {  // ASCII only, so any cut is clean
    s.resize(kMaxValueChars);
    s += "...";
  }
  return s;
}

inline absl::Status ErrorWithText(absl::string_view source,
                                  absl::string_view path,
                                  absl::string_view value,
                                  absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", path, " = ", value, ": ", rule));
}

inline absl::Status Error(absl::string_view source, absl::string_view path,
                          const Json& value, absl::string_view rule) {
  return ErrorWithText(source, path, Describe(value), rule);
}

inline absl::Status WrongType(absl::string_view source, absl::string_view path,
                              const Json& value, absl::string_view wanted) {
  return Error(
      source, path, value,
      absl::StrCat("must be ", wanted, " (got ", TypeName(value), ")"));
}

inline absl::Status UnknownKey(absl::string_view source, absl::string_view path,
                               const Json& value, absl::string_view allowed) {
  return Error(source, path, value,
               absl::StrCat("unknown key (allowed: ", allowed, ")"));
}

// SyntaxCheck
//
// A first, event-only pass over the text (nothing is built): it reports
// malformed JSON with nlohmann's byte position and message (the DOM parser's
// non-throwing mode only says "discarded"), duplicate object keys (which the
// DOM parser would silently resolve to the last one, hiding a copy-paste
// error such as two "level2"s), and nesting deeper than kMaxDepth.
class SyntaxCheck final : public nlohmann::json_sax<Json> {
 public:
  // `source` is already Printable().
  explicit SyntaxCheck(absl::string_view source) : source_(source) {}

  absl::Status status() const { return status_; }

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t) override { return Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(); }
  bool number_float(number_float_t, const string_t&) override {
    return Scalar();
  }
  bool string(string_t&) override { return Scalar(); }
  bool binary(binary_t&) override { return Scalar(); }

  bool start_object(std::size_t) override { return Open(/*object=*/true); }
  bool start_array(std::size_t) override { return Open(/*object=*/false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& val) override {
    Frame& f = frames_.back();
    f.key = val;
    if (!f.keys.insert(val).second) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          source_, ": ", Path(),
          ": duplicate key (JSON object keys must be "
          "unique; the parser would silently keep only the last one)"));
      return false;
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& ex) override {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(source_, ": malformed JSON at byte ", position, ": ",
                     Printable(ex.what())));
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::size_t next_index = 0;  // arrays: the index the next value gets
    std::string key;             // objects: the current key
    std::set<std::string> keys;  // objects: keys seen so far
  };

  // The path of the value being parsed now.
  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      path = f.object ? AppendKey(path, f.key)
                      : AppendIndex(path, f.next_index - 1);
    }
    return path.empty() ? "(top level)" : path;
  }

  void CountValue() {
    if (!frames_.empty() && !frames_.back().object) {
      ++frames_.back().next_index;
    }
  }

  bool Scalar() {
    CountValue();
    return true;
  }

  bool Open(bool object) {
    CountValue();
    if (frames_.size() >= kMaxDepth) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(source_, ": ", Path(), ": JSON nested more than ",
                       kMaxDepth, " levels deep"));
      return false;
    }
    frames_.push_back(Frame{object, 0, {}, {}});
    return true;
  }

  bool Close() {
    frames_.pop_back();
    return true;
  }

  std::string source_;
  std::vector<Frame> frames_;
  absl::Status status_;
};

// Typed readers. Each checks the type before reading, so nothing can throw.

inline absl::Status ReadNumber(absl::string_view source, absl::string_view path,
                               const Json& j, double* out) {
  if (!j.is_number()) return WrongType(source, path, j, "a number");
  const double v = j.get<double>();
  // nlohmann refuses float literals that overflow ("1e400"), but a huge
  // integer literal can still become a double; guard anyway.
  if (!std::isfinite(v)) {
    return Error(source, path, j, "must be a finite number");
  }
  *out = v;
  return absl::OkStatus();
}

inline absl::Status ReadString(absl::string_view source, absl::string_view path,
                               const Json& j, std::string* out) {
  if (!j.is_string()) return WrongType(source, path, j, "a string");
  *out = j.get_ref<const std::string&>();
  return absl::OkStatus();
}

inline absl::Status ReadDuration(absl::string_view source,
                                 absl::string_view path, const Json& j,
                                 absl::Duration* out) {
  constexpr absl::string_view kFormat =
      "a duration is a number with a unit (ns, us, ms, s, m, h), e.g. "
      "\"60s\", \"500ms\", \"1m30s\"";
  if (!j.is_string()) {
    return WrongType(source, path, j,
                     absl::StrCat("a duration string; ", kFormat));
  }
  const std::string& text = j.get_ref<const std::string&>();
  absl::Duration d;
  const bool parsed = absl::ParseDuration(text, &d);
  if (parsed &&
      (d == absl::InfiniteDuration() || d == -absl::InfiniteDuration())) {
    return Error(source, path, j, "must be a finite duration");
  }
  double bare;
  if (absl::SimpleAtod(text, &bare) && std::isfinite(bare)) {
    // "60", "0", "1.5": seconds? milliseconds? Make the author say.
    return Error(source, path, j,
                 absl::StrCat("a duration needs a unit; ", kFormat));
  }
  if (!parsed) {
    return Error(source, path, j,
                 absl::StrCat("not a valid duration; ", kFormat));
  }
  if (d < absl::ZeroDuration()) {
    return Error(source, path, j, "must not be negative");
  }
  *out = d;
  return absl::OkStatus();
}

// An array of distinct, non-empty strings.
inline absl::Status ReadNameList(absl::string_view source,
                                 absl::string_view path, const Json& j,
                                 absl::string_view what,
                                 std::vector<std::string>* out) {
  if (!j.is_array()) {
    return WrongType(source, path, j,
                     absl::StrCat("an array of ", what, " names"));
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    const std::string p = AppendIndex(path, i);
    std::string name;
    if (absl::Status s = ReadString(source, p, e, &name); !s.ok()) return s;
    if (name.empty()) {
      return Error(source, p, e,
                   absl::StrCat(what, " names must not be empty"));
    }
    if (!seen.insert(name).second) {
      return Error(source, p, e,
                   absl::StrCat("duplicate ", what, " name in this list"));
    }
    out->push_back(std::move(name));
  }
  return absl::OkStatus();
}

// An object of signal name -> number.
inline absl::Status ReadThresholds(absl::string_view source,
                                   absl::string_view path, const Json& j,
                                   std::map<std::string, double>* out) {
  if (!j.is_object()) {
    return WrongType(source, path, j, "an object of signal name -> number");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    double v = 0;
    if (absl::Status s =
            ReadNumber(source, AppendKey(path, it.key()), it.value(), &v);
        !s.ok()) {
      return s;
    }
    (*out)[it.key()] = v;
  }
  return absl::OkStatus();
}

// Parses a level key: "level1" .. "level<kMaxLevels>" -> 1 .. kMaxLevels.
// Returns 0 and sets `*problem` for a key that starts with "level" but is
// not one; returns -1 for any other key.
inline int LevelNumber(absl::string_view key, std::string* problem) {
  if (!absl::StartsWith(key, "level")) return -1;
  const absl::string_view digits = key.substr(5);
  const std::string range = absl::StrCat("level1 to level", kMaxLevels);
  bool all_digits = !digits.empty();
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) all_digits = false;
  }
  if (!all_digits) {
    *problem = absl::StrCat("not a level key: levels are named ", range);
    return 0;
  }
  if (digits.size() > 1 && digits[0] == '0') {
    *problem =
        absl::StrCat("level numbers have no leading zeros (", range, ")");
    return 0;
  }
  if (digits.size() > 2) {  // also keeps the arithmetic below from overflowing
    *problem = absl::StrCat("at most ", kMaxLevels, " levels (", range, ")");
    return 0;
  }
  int n = 0;
  for (char c : digits) n = n * 10 + (c - '0');
  if (n == 0) {
    *problem = absl::StrCat("level numbers start at 1 (", range, ")");
    return 0;
  }
  if (n > kMaxLevels) {
    *problem = absl::StrCat("at most ", kMaxLevels, " levels (", range, ")");
    return 0;
  }
  return n;
}

inline absl::Status ReadLevel(absl::string_view source, absl::string_view path,
                              const Json& j, LevelSpec* level) {
  constexpr absl::string_view kAllowed =
      "trigger, recover, disable, hold, enter_after";
  if (!j.is_object()) return WrongType(source, path, j, "an object");
  if (j.find("trigger") == j.end()) {
    return ErrorWithText(source, AppendKey(path, "trigger"), "(missing)",
                         "every level needs a trigger object of signal name -> "
                         "threshold");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string p = AppendKey(path, key);
    absl::Status s;
    if (key == "trigger") {
      s = ReadThresholds(source, p, v, &level->enter);
    } else if (key == "recover") {
      s = ReadThresholds(source, p, v, &level->recover);
    } else if (key == "disable") {
      s = ReadNameList(source, p, v, "feature", &level->disable);
    } else if (key == "hold") {
      absl::Duration d;
      s = ReadDuration(source, p, v, &d);
      if (s.ok()) level->hold = d;
    } else if (key == "enter_after") {
      absl::Duration d;
      s = ReadDuration(source, p, v, &d);
      if (s.ok()) level->enter_after = d;
    } else {
      s = UnknownKey(source, p, v, kAllowed);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

inline absl::Status ReadDegradation(absl::string_view source, const Json& d,
                                    DegradationConfig* config) {
  const std::string path = "degradation";
  const std::string allowed =
      absl::StrCat("level1 to level", kMaxLevels,
                   ", name, recover_ratio, hold, enter_after, cooldown, "
                   "critical");
  if (!d.is_object()) return WrongType(source, path, d, "an object");

  // Key order is irrelevant: nlohmann's objects iterate in sorted key order,
  // and levels are collected by number before they are read.
  std::map<int, const Json*> levels;
  for (auto it = d.begin(); it != d.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    const std::string p = AppendKey(path, key);
    absl::Status s;
    std::string problem;
    if (key == "name") {
      s = ReadString(source, p, v, &config->name);
      if (s.ok() && config->name.empty()) {
        s = Error(source, p, v, "must not be empty");
      }
    } else if (key == "recover_ratio") {
      s = ReadNumber(source, p, v, &config->recover_ratio);
    } else if (key == "hold") {
      s = ReadDuration(source, p, v, &config->hold);
    } else if (key == "enter_after") {
      s = ReadDuration(source, p, v, &config->enter_after);
    } else if (key == "cooldown") {
      s = ReadDuration(source, p, v, &config->cooldown);
    } else if (key == "critical") {
      s = ReadNameList(source, p, v, "feature", &config->critical);
      for (std::size_t i = 0; s.ok() && i < config->critical.size(); ++i) {
        if (config->critical[i] == kAllNonCritical) {
          s = Error(source, AppendIndex(p, i), v[i],
                    "must name a feature; all_non_critical is only "
                    "meaningful in a level's disable list");
        }
      }
    } else if (const int n = LevelNumber(key, &problem); n > 0) {
      levels[n] = &v;
    } else if (n == 0) {
      s = Error(source, p, v, problem);
    } else {
      s = UnknownKey(source, p, v, allowed);
    }
    if (!s.ok()) return s;
  }

  if (levels.empty()) {
    return Error(source, path, d,
                 absl::StrCat("needs at least one level (level1 to level",
                              kMaxLevels, ")"));
  }
  // Contiguous from 1: the highest number present must equal the count.
  for (int n = 1; n <= levels.rbegin()->first; ++n) {
    if (levels.count(n) == 0) {
      return ErrorWithText(
          source, absl::StrCat(path, ".level", n), "(missing)",
          absl::StrCat("levels must be numbered contiguously from "
                       "level1, but level",
                       levels.rbegin()->first, " is present"));
    }
  }
  for (const auto& [n, json] : levels) {
    LevelSpec level;
    level.name = absl::StrCat("level", n);
    if (absl::Status s = ReadLevel(source, absl::StrCat(path, ".", level.name),
                                   *json, &level);
        !s.ok()) {
      return s;
    }
    config->levels.push_back(std::move(level));
  }
  return absl::OkStatus();
}

}  // namespace config_json

#if DEGRADE_CONFIG_POSIX_IO

// Reads a whole regular file of at most `max_bytes`.
inline absl::StatusOr<std::string> ReadConfigFile(const std::string& path,
                                                  std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; the
  // S_ISREG check below then refuses it. It has no effect on regular files.
  const std::string name = config_json::Printable(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot open config file '", name, "'"));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot stat config file '", name, "'"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("config file '", name, "' is not a regular file"));
  }
  // Read to EOF rather than trusting st_size: the file may change under us,
  // and some filesystems report 0. Stop one byte past the cap.
  std::string content;
  char buf[16384];
  while (content.size() <= max_bytes) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return absl::ErrnoToStatus(
          err, absl::StrCat("cannot read config file '", name, "'"));
    }
    content.append(buf, static_cast<std::size_t>(n));
  }
  if (content.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": config file is larger than ", max_bytes,
                     " bytes; refusing to read it (is this the right file?)"));
  }
  return content;
}

#else  // !DEGRADE_CONFIG_POSIX_IO

inline absl::StatusOr<std::string> ReadConfigFile(const std::string& path,
                                                  std::size_t max_bytes) {
  const std::string name = config_json::Printable(path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot open config file '", name, "'"));
  }
  std::string content;
  char buf[16384];
  while (content.size() <= max_bytes) {
    const std::size_t n = std::fread(buf, 1, sizeof(buf), f);
    content.append(buf, n);
    if (n < sizeof(buf)) break;
  }
  const int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (err != 0) {
    return absl::ErrnoToStatus(
        err, absl::StrCat("cannot read config file '", name, "'"));
  }
  if (content.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": config file is larger than ", max_bytes,
                     " bytes; refusing to read it (is this the right file?)"));
  }
  return content;
}

#endif  // DEGRADE_CONFIG_POSIX_IO

}  // namespace detail

inline absl::StatusOr<DegradationConfig> ParseDegradationConfig(
    absl::string_view json_text, absl::string_view source_name) {
  namespace cj = detail::config_json;
  const std::string source = cj::Printable(source_name);
  if (json_text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": config is ", json_text.size(), " bytes; at most ",
        kMaxConfigBytes, " (1 MiB) are accepted"));
  }
  if (const std::size_t nul = json_text.find('\0');
      nul != absl::string_view::npos) {
    // nlohmann stops reading at a NUL, which would accept anything after it.
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": config contains a NUL byte at offset ", nul));
  }
  if (absl::StripAsciiWhitespace(json_text).empty()) {
    // Said plainly: this is what a config file caught mid-write looks like.
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": config is empty"));
  }
  const char* const begin = json_text.data();
  const char* const end = begin + json_text.size();
  {
    cj::SyntaxCheck check(source);
    if (!cj::Json::sax_parse(begin, end, &check) || !check.status().ok()) {
      absl::Status s = check.status();
      if (s.ok()) {  // defensive: the parser stopped without saying why
        s = absl::InvalidArgumentError(
            absl::StrCat(source, ": malformed JSON"));
      }
      return s;
    }
  }
  const cj::Json root =
      cj::Json::parse(begin, end, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {  // the syntax pass accepted it; defensive
    return absl::InvalidArgumentError(absl::StrCat(source, ": malformed JSON"));
  }
  if (!root.is_object()) {
    return cj::WrongType(source, "(top level)", root,
                         "an object with a \"degradation\" key");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() != "degradation") {
      return cj::UnknownKey(source, cj::AppendKey("", it.key()), it.value(),
                            "degradation");
    }
  }
  const auto d = root.find("degradation");
  if (d == root.end()) {
    return cj::ErrorWithText(
        source, "degradation", "(missing)",
        "the top-level object needs a \"degradation\" key");
  }
  DegradationConfig config;
  if (absl::Status s = cj::ReadDegradation(source, *d, &config); !s.ok()) {
    return s;
  }
  // The semantic rules (rising thresholds, recover <= enter, ...) live in one
  // place; their messages already name the JSON path.
  if (absl::Status s = ValidateDegradationConfig(config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", s.message()));
  }
  return config;
}

inline absl::StatusOr<DegradationConfig> LoadDegradationConfigFile(
    const std::string& path) {
  absl::StatusOr<std::string> content =
      detail::ReadConfigFile(path, kMaxConfigBytes);
  if (!content.ok()) return content.status();
  return ParseDegradationConfig(*content, path);
}

inline absl::Status ReloadJson(DegradationManager& manager,
                               absl::string_view json_text,
                               absl::string_view source) {
  absl::StatusOr<DegradationConfig> config =
      ParseDegradationConfig(json_text, source);
  if (!config.ok()) return manager.RejectReload(config.status());
  return manager.Reload(*std::move(config));
}

inline absl::Status ConfigFileWatcher::PollOnce() {
  absl::Status result;
  {
    detail::MutexLock lock(&poll_mu_);
    absl::StatusOr<std::string> content =
        detail::ReadConfigFile(path_, kMaxConfigBytes);
    if (!content.ok()) {
      result = content.status();
      // Report a read error once, not every period: only when it is new.
      if (result != last_read_error_) {
        manager_->RejectReload(result).IgnoreError();
        errors_.fetch_add(1, std::memory_order_relaxed);
      }
      last_read_error_ = result;
    } else {
      last_read_error_ = absl::OkStatus();
      if (last_content_.has_value() && *last_content_ == *content) {
        result = last_content_status_;
      } else {
        result = ReloadJson(*manager_, *content, path_);
        (result.ok() ? reloads_ : errors_)
            .fetch_add(1, std::memory_order_relaxed);
        last_content_ = *std::move(content);
        last_content_status_ = result;
      }
    }
    // Still under poll_mu_, so overlapping polls publish in poll order.
    detail::MutexLock status_lock(&status_mu_);
    last_status_ = result;
  }
  return result;
}

inline void ConfigFileWatcher::Start(absl::Duration period) {
  // The result of each poll is kept in last_status() and reported through
  // the manager.
  worker_.Restart(period, [this] { PollOnce().IgnoreError(); });
}

inline void ConfigFileWatcher::Stop() { worker_.Stop(); }

DEGRADE_NAMESPACE_END

#undef DEGRADE_CONFIG_POSIX_IO

#endif  // DEGRADE_CONFIG_HPP_
