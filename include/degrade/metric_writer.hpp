// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: metric_writer.hpp
// -----------------------------------------------------------------------------
//
// What a collector writes its samples into, and the rules that keep a
// Prometheus exposition valid whatever a collector writes: metric and label
// names are checked, counters must end in `_total` and never go down, a
// family has one type, a label set appears once, histogram bounds ascend.
// A sample that breaks a rule is dropped and counted (the registry exports
// the count as degrade_metrics_dropped_samples_total), so one bad collector
// cannot make Prometheus refuse the whole scrape.
//
// A custom component registers a collector with MetricsRegistry::Register:
//
//   auto registration = registry.Register(
//       "queue", "ingest", [&q](degrade::MetricWriter& w) {
//         w.Gauge("ingest_queue_length", "Requests waiting.",
//                 {{"queue", w.component()}}, q.size());
//         w.Counter("ingest_dropped_total", "Requests dropped.",
//                   {{"queue", w.component()}}, q.dropped());
//       });
//
// Thread safety: a MetricWriter is not thread-safe (one per scrape); the
// free functions are.

#ifndef DEGRADE_METRIC_WRITER_HPP_
#define DEGRADE_METRIC_WRITER_HPP_

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "degrade/detail/json_text.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// Label names and values of one sample, in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge" or "histogram".
inline absl::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// Whether `name` is a valid Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
inline bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Whether `name` is a valid label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting
// with "__" (reserved for Prometheus itself) and not "le" (histograms).
inline bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::string_view(name).substr(0, 2) == "__" ||
      name == "le") {
    return false;
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

namespace detail {

struct MetricSample {
  MetricLabels labels;
  double value = 0.0;
  // Histograms only: upper bounds (ascending, finite) and the count of each
  // bucket (not cumulative), one more than the bounds (the +Inf bucket).
  std::vector<double> bounds;
  std::vector<uint64_t> buckets;
};

struct MetricFamily {
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

// Shortest text that reads back as `v`; integers without a decimal point;
// "NaN", "+Inf", "-Inf" as the exposition format spells them.
inline std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// Escapes `s` for a label value (`quotes`) or a HELP text. Invalid UTF-8
// becomes U+FFFD: Prometheus refuses the whole scrape over one bad byte, and
// names can come from anywhere (a BreakerFamily key from a request).
inline void AppendEscaped(std::string* out, absl::string_view s, bool quotes) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        *out += "\xEF\xBF\xBD";
      } else {
        out->append(s.data() + i, n);
        i += n - 1;
      }
    } else if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quotes && c == '"') {
      *out += "\\\"";
    } else {
      *out += c;
    }
  }
}

inline void AppendLabels(std::string* out, const MetricLabels& labels,
                         absl::string_view le = absl::string_view()) {
  if (labels.empty() && le.empty()) return;
  *out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) *out += ',';
    first = false;
    absl::StrAppend(out, name, "=\"");
    AppendEscaped(out, value, /*quotes=*/true);
    *out += '"';
  }
  if (!le.empty()) {
    absl::StrAppend(out, first ? "" : ",", "le=\"", le, "\"");
  }
  *out += '}';
}

}  // namespace detail

// MetricWriter
//
// What a collector writes its samples into. Samples of one family may come
// from many components (every breaker writes `degrade_breaker_state`); the
// writer merges them under one HELP and TYPE. A sample that would make the
// exposition invalid (a bad metric or label name, a counter not ending in
// `_total` or with a negative or NaN value, a label name used twice, a type
// different from the family's, a label set the family already has,
// histogram bounds not ascending) is dropped and counted in
// `degrade_metrics_dropped_samples_total`.
//
// Not thread-safe: one writer per scrape.
class MetricWriter {
 public:
  void Counter(absl::string_view name, absl::string_view help,
               MetricLabels labels, double value) {
    // A counter only goes up from zero: NaN or a negative value is a bug in
    // the collector, and Prometheus would read it as a reset.
    if (name.size() < 6 || name.substr(name.size() - 6) != "_total" ||
        !(value >= 0)) {
      ++dropped_;
      return;
    }
    Add(name, help, MetricType::kCounter, Sample(std::move(labels), value));
  }

  void Gauge(absl::string_view name, absl::string_view help,
             MetricLabels labels, double value) {
    Add(name, help, MetricType::kGauge, Sample(std::move(labels), value));
  }

  // `bounds`: finite, strictly ascending upper bounds; `buckets`: the count
  // of observations in each bucket (not cumulative), bounds.size() + 1 of
  // them, the last being the +Inf bucket; `sum`: the sum of observations.
  void Histogram(absl::string_view name, absl::string_view help,
                 MetricLabels labels, absl::Span<const double> bounds,
                 absl::Span<const uint64_t> buckets, double sum) {
    bool ok = buckets.size() == bounds.size() + 1;
    for (std::size_t i = 0; ok && i < bounds.size(); ++i) {
      ok = std::isfinite(bounds[i]) && (i == 0 || bounds[i] > bounds[i - 1]);
    }
    if (!ok) {
      ++dropped_;
      return;
    }
    detail::MetricSample s = Sample(std::move(labels), sum);
    s.bounds.assign(bounds.begin(), bounds.end());
    s.buckets.assign(buckets.begin(), buckets.end());
    Add(name, help, MetricType::kHistogram, std::move(s));
  }

  // Samples dropped so far (see the class comment).
  uint64_t dropped() const { return dropped_; }

  // The name the component being collected is registered under (see
  // MetricsRegistry::Register): the value for its identifying label.
  const std::string& component() const { return component_; }

 private:
  friend class MetricsRegistry;

  static detail::MetricSample Sample(MetricLabels labels, double value) {
    detail::MetricSample s;
    s.labels = std::move(labels);
    s.value = value;
    return s;
  }

  void Add(absl::string_view name, absl::string_view help, MetricType type,
           detail::MetricSample sample) {
    if (!IsValidMetricName(name)) {
      ++dropped_;
      return;
    }
    for (std::size_t i = 0; i < sample.labels.size(); ++i) {
      bool ok = IsValidLabelName(sample.labels[i].first);
      for (std::size_t j = 0; ok && j < i; ++j) {
        ok = sample.labels[j].first != sample.labels[i].first;
      }
      if (!ok) {
        ++dropped_;
        return;
      }
    }
    if (ClashesWithAHistogram(name, type)) {
      ++dropped_;
      return;
    }
    auto it = families_.find(name);
    if (it == families_.end()) {
      detail::MetricFamily f;
      f.help = std::string(help);
      f.type = type;
      it = families_.emplace(std::string(name), std::move(f)).first;
    } else if (it->second.type != type) {
      ++dropped_;
      return;
    } else if (it->second.help.empty()) {
      it->second.help = std::string(help);
    }
    it->second.samples.push_back(std::move(sample));
  }

  // A histogram `h` is exposed as h_bucket, h_sum and h_count: a family of
  // one of those names beside it would be read as a second HELP for `h`.
  bool ClashesWithAHistogram(absl::string_view name, MetricType type) const {
    static constexpr absl::string_view kSuffixes[] = {"_bucket", "_sum",
                                                      "_count"};
    for (absl::string_view suffix : kSuffixes) {
      if (type == MetricType::kHistogram &&
          families_.count(absl::StrCat(name, suffix)) != 0) {
        return true;
      }
      if (name.size() > suffix.size() &&
          name.substr(name.size() - suffix.size()) == suffix) {
        const auto it =
            families_.find(name.substr(0, name.size() - suffix.size()));
        if (it != families_.end() && it->second.type == MetricType::kHistogram) {
          return true;
        }
      }
    }
    return false;
  }

  // Sorts every family's samples by labels and drops repeated label sets
  // (in any order of the labels: {a,b} is {b,a}), keeping the first written.
  void Finish() {
    for (auto& [name, family] : families_) {
      auto& samples = family.samples;
      std::stable_sort(
          samples.begin(), samples.end(),
          [](const detail::MetricSample& a, const detail::MetricSample& b) {
            return a.labels < b.labels;
          });
      std::set<MetricLabels> seen;
      const auto last = std::remove_if(
          samples.begin(), samples.end(),
          [&seen](const detail::MetricSample& s) {
            MetricLabels key = s.labels;
            std::sort(key.begin(), key.end());
            return !seen.insert(std::move(key)).second;
          });
      dropped_ += static_cast<uint64_t>(samples.end() - last);
      samples.erase(last, samples.end());
    }
  }

  std::map<std::string, detail::MetricFamily, std::less<>> families_;
  uint64_t dropped_ = 0;
  std::string component_;
};

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_METRIC_WRITER_HPP_
