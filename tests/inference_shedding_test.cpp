// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The batched inference server of examples/inference_shedding.cpp
// (examples/inference/), driven through its default load pattern (up to 3x
// its fully featured capacity) on a FakeClock with the article's config:
//
//   * with shedding, p99 latency stays under a stated bound, far below the
//     run with every feature always on;
//   * the level does not flap on the noisy plateau;
//   * recovery is staged: one level per hold;
//   * the gates follow the config's levels;
//   * the same seed gives the same output;
//   * the SVG chart is well-formed XML.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "degrade/config.hpp"
#include "degrade/degradation_manager.hpp"
#include "gtest/gtest.h"
#include "inference/report.hpp"
#include "inference/simulation.hpp"
#include "inference/svg_chart.hpp"

namespace DEGRADE_TEST_UNIT {

using inference::Change;
using inference::Comparison;
using inference::Mode;
using inference::RunResult;
using inference::Summary;

// The bounds this test holds the demo to.
constexpr absl::Duration kShedP99Bound = absl::Seconds(1);
constexpr absl::Duration kShedMaxBound = absl::Milliseconds(1500);
// "Far below": the always-on run's p99 is at least this many times higher.
constexpr double kFarBelowFactor = 20.0;
// Level changes allowed while the load sits on the noisy plateau.
constexpr std::size_t kMaxPlateauChanges = 1;
// Seeds checked beyond the demo's own (seed 1).
constexpr uint64_t kOtherSeeds[] = {2, 3};

degrade::DegradationConfig LoadConfig() {
  absl::StatusOr<degrade::DegradationConfig> c =
      degrade::LoadDegradationConfigFile(INFERENCE_SHEDDING_CONFIG);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : degrade::DegradationConfig{};
}

// The demo's three runs, computed once for the whole suite.
const Comparison& Demo() {
  static const Comparison* const demo = [] {
    absl::StatusOr<Comparison> c = inference::RunComparison(LoadConfig(), 1);
    EXPECT_TRUE(c.ok()) << c.status();
    return new Comparison(c.ok() ? std::move(*c) : Comparison{});
  }();
  return *demo;
}

RunResult RunShedding(uint64_t seed) {
  inference::SimOptions o;
  o.seed = seed;
  o.config = LoadConfig();
  absl::StatusOr<RunResult> r = inference::Run(o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : RunResult{};
}

// The demo's shedding run alone, for the tests that need nothing else (each
// test runs in its own process under ctest).
const RunResult& Shedding() {
  static const RunResult* const run = new RunResult(RunShedding(1));
  return *run;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

// The hold that leaving `level` waits for.
absl::Duration HoldOf(const degrade::DegradationConfig& c, int level) {
  return c.levels[static_cast<std::size_t>(level) - 1].hold.value_or(c.hold);
}

// ---- The model ----------------------------------------------------------

TEST(InferenceModelTest, CapacitiesAndPatternAreWhatTheReportSays) {
  // 32 requests in 180 ms of core work.
  EXPECT_EQ(inference::BatchTime(32, absl::ZeroDuration()),
            absl::Milliseconds(180));
  EXPECT_NEAR(inference::CapacityRps(3), 32 / 0.180, 1e-9);
  // Each level raises the capacity; with every feature on, a request costs
  // a bit over twice a bare one.
  for (int level = 1; level <= 3; ++level) {
    EXPECT_GT(inference::CapacityRps(level), inference::CapacityRps(level - 1));
  }
  EXPECT_NEAR(inference::CapacityRps(3) / inference::CapacityRps(0), 2.19,
              0.01);
  // The pattern reaches 3x the fully featured capacity (3.5x in bursts).
  const inference::LoadPattern p = inference::DefaultPattern();
  const auto plateau = p.Span("noisy plateau");
  ASSERT_LT(plateau.first, plateau.second);
  for (absl::Duration t = plateau.first; t < plateau.second;
       t += absl::Seconds(1)) {
    ASSERT_NEAR(inference::LoadAt(p, 1, t), 3.0, 3.0 * 0.15 + 1e-9);
  }
  EXPECT_GE(p.Peak(), 3.45);
}

TEST(InferenceModelTest, EveryRunSeesTheSameRequests) {
  const Comparison& c = Demo();
  ASSERT_GT(c.shedding.arrivals.size(), 50000u);
  EXPECT_EQ(c.shedding.arrivals, c.features_only.arrivals);
  EXPECT_EQ(c.shedding.arrivals, c.always_on.arrivals);
  // Only the shedding run refuses anything.
  EXPECT_GT(c.shedding.refused.size(), 0u);
  EXPECT_TRUE(c.features_only.refused.empty());
  EXPECT_TRUE(c.always_on.refused.empty());
}

TEST(InferenceModelTest, GatesFollowTheConfigLevels) {
  // The level each non-core feature is documented to go off at is the one
  // the JSON config switches it off at.
  degrade::ManagerOptions options;
  degrade::FakeClock clock;
  options.clock = &clock;
  options.log_sink = [](absl::string_view) {};
  auto manager = degrade::DegradationManager::Create(LoadConfig(), options);
  ASSERT_TRUE(manager.ok()) << manager.status();
  for (int level = 0; level <= 3; ++level) {
    ASSERT_TRUE((*manager)->ForceLevel(level, absl::InfiniteDuration()).ok());
    for (const inference::NonCoreFeature& f : inference::kNonCoreFeatures) {
      EXPECT_EQ((*manager)->Enabled(f.name), level < f.level)
          << f.name << " at level " << level;
    }
    EXPECT_EQ((*manager)->Enabled(inference::kBestEffortTraffic),
              level < inference::kBestEffortLevel);
    for (const std::string& core : (*manager)->config()->critical) {
      EXPECT_TRUE((*manager)->Enabled(core)) << core;
    }
  }
  // And in the run, every sample's count of features on matches its level.
  for (const inference::Sample& s : Shedding().samples) {
    int expected = 0;
    for (const inference::NonCoreFeature& f : inference::kNonCoreFeatures) {
      expected += s.level < f.level ? 1 : 0;
    }
    ASSERT_EQ(s.features_on, expected) << "at t=" << s.t;
  }
}

TEST(InferenceModelTest, InvalidConfigIsAnError) {
  inference::SimOptions o;  // an empty config: no levels
  o.pattern.phases = {{"short", absl::Seconds(10), 0.5, 0.5}};
  absl::StatusOr<RunResult> r = inference::Run(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  o.mode = Mode::kAlwaysOn;  // needs no config
  r = inference::Run(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->answers.size(), 100u);
  EXPECT_TRUE(r->changes.empty());
}

// ---- Latency ----------------------------------------------------------------

TEST(InferenceSheddingTest, SheddingKeepsP99BoundedFarBelowAlwaysOn) {
  const Comparison& c = Demo();
  const Summary shed = inference::Summarize(c.shedding, inference::kTimeout);
  const Summary on = inference::Summarize(c.always_on, inference::kTimeout);
  const Summary features =
      inference::Summarize(c.features_only, inference::kTimeout);
  EXPECT_LT(shed.p99_ms, Ms(kShedP99Bound));
  EXPECT_LT(shed.max_ms, Ms(kShedMaxBound));
  EXPECT_EQ(shed.unserved, c.shedding.unserved.size());
  EXPECT_LT(shed.unserved, 50u);
  // Without shedding the queue backs up: seconds, then minutes.
  EXPECT_GT(on.p99_ms, kFarBelowFactor * shed.p99_ms);
  EXPECT_GT(on.p99_ms, 10000.0);
  EXPECT_GT(on.past_timeout, on.offered / 2);
  // Shedding features alone is not enough at 3x: the capacity only doubles.
  EXPECT_GT(features.p99_ms, 10000.0);
}

TEST(InferenceSheddingTest, BoundHoldsForOtherSeeds) {
  for (const uint64_t seed : kOtherSeeds) {
    const RunResult r = RunShedding(seed);
    const Summary s = inference::Summarize(r, inference::kTimeout);
    EXPECT_LT(s.p99_ms, Ms(kShedP99Bound)) << "seed " << seed;
    EXPECT_LT(s.max_ms, Ms(kShedMaxBound)) << "seed " << seed;
    EXPECT_LE(inference::ChangesIn(
                  r, inference::DefaultPattern().Span("noisy plateau")),
              kMaxPlateauChanges)
        << "seed " << seed;
  }
}

// ---- Level changes ----------------------------------------------------------

TEST(InferenceSheddingTest, NoFlappingOnTheNoisyPlateau) {
  const auto plateau = inference::DefaultPattern().Span("noisy plateau");
  EXPECT_LE(inference::ChangesIn(Shedding(), plateau), kMaxPlateauChanges);
  // The manager reached level 3 before the plateau and held it through it.
  for (const inference::Sample& s : Shedding().samples) {
    if (s.t >= plateau.first && s.t < plateau.second) {
      ASSERT_EQ(s.level, 3) << "at t=" << s.t;
    }
  }
  // The whole run: up (at most one change per level), and down one by one.
  EXPECT_LE(Shedding().changes.size(), 6u);
  // The log has exactly one level_change line per change.
  std::size_t lines = 0;
  for (const std::string& l : Shedding().log_lines) {
    if (l.find(R"("event":"level_change")") != std::string::npos) ++lines;
  }
  EXPECT_EQ(lines, Shedding().changes.size());
}

TEST(InferenceSheddingTest, RecoveryIsStagedOneLevelPerHold) {
  const degrade::DegradationConfig config = LoadConfig();
  const auto check = [&](const RunResult& r, uint64_t seed) {
    absl::Duration previous = absl::ZeroDuration();
    for (const Change& ch : r.changes) {
      if (ch.to < ch.from) {
        EXPECT_EQ(ch.reason, "recovered") << "seed " << seed;
        EXPECT_EQ(ch.to, ch.from - 1) << "seed " << seed << " t=" << ch.t;
        EXPECT_GE(ch.t - previous, HoldOf(config, ch.from))
            << "seed " << seed << " t=" << ch.t;
      }
      previous = ch.t;
    }
    // The load comes back down: the manager ends at level 0, every feature
    // on, having stepped 3 -> 2 -> 1 -> 0 after the ramp down began.
    const std::vector<Change> recovery = inference::FinalRecovery(r);
    ASSERT_EQ(recovery.size(), 3u) << "seed " << seed;
    for (std::size_t i = 0; i < recovery.size(); ++i) {
      EXPECT_EQ(recovery[i].from, 3 - static_cast<int>(i));
      EXPECT_GE(recovery[i].t,
                inference::DefaultPattern().Span("ramp down").first);
    }
    ASSERT_FALSE(r.samples.empty());
    EXPECT_EQ(r.samples.back().level, 0);
    EXPECT_EQ(r.samples.back().features_on,
              static_cast<int>(inference::kNumNonCore));
  };
  check(Shedding(), 1);
  check(RunShedding(kOtherSeeds[0]), kOtherSeeds[0]);
}

// ---- Determinism --------------------------------------------------------

TEST(InferenceSheddingTest, SameSeedSameOutput) {
  const degrade::DegradationConfig config = LoadConfig();
  absl::StatusOr<Comparison> again = inference::RunComparison(config, 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(inference::Report(*again, config, true),
            inference::Report(Demo(), config, true));
  EXPECT_EQ(inference::Chart(*again), inference::Chart(Demo()));
  // Another seed gives other requests.
  const RunResult other = RunShedding(kOtherSeeds[0]);
  EXPECT_NE(other.arrivals, Demo().shedding.arrivals);
}

// ---- The chart --------------------------------------------------------------

// A small XML well-formedness checker: one root element, every tag closed in
// order, attribute values quoted, no duplicate attributes, character data
// free of '<' and of '&' outside the five predefined entities and numeric
// references. Enough for the SVG our writer emits; not a general parser
// (no DOCTYPE, no CDATA).
struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
};

struct XmlCheck {
  std::string error;  // empty: well formed
  std::string root;
  std::vector<Element> elements;  // in document order
};

bool IsNameChar(char c, bool first) {
  const bool alpha =
      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return alpha || (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
}

// Whether the character data (or attribute value) `s` is valid.
bool ValidText(absl::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') return false;
    if (s[i] != '&') continue;
    const std::size_t end = s.find(';', i);
    if (end == absl::string_view::npos) return false;
    const absl::string_view ref = s.substr(i + 1, end - i - 1);
    const bool named = ref == "amp" || ref == "lt" || ref == "gt" ||
                       ref == "quot" || ref == "apos";
    if (!named && !(ref.size() > 1 && ref[0] == '#')) return false;
    i = end;
  }
  return true;
}

XmlCheck CheckXml(absl::string_view doc) {
  XmlCheck out;
  std::vector<std::string> open;
  std::size_t i = 0;
  const auto fail = [&](const std::string& why) {
    out.error = why + " at offset " + std::to_string(i);
    return out;
  };
  const auto skip_space = [&] {
    while (i < doc.size() && (doc[i] == ' ' || doc[i] == '\n' ||
                              doc[i] == '\t' || doc[i] == '\r')) {
      ++i;
    }
  };
  const auto read_name = [&] {
    const std::size_t start = i;
    while (i < doc.size() && IsNameChar(doc[i], i == start)) ++i;
    return std::string(doc.substr(start, i - start));
  };
  if (doc.substr(0, 5) == "<?xml") {
    i = doc.find("?>");
    if (i == absl::string_view::npos) return fail("unterminated declaration");
    i += 2;
  }
  bool root_done = false;
  while (i < doc.size()) {
    const std::size_t lt = doc.find('<', i);
    const absl::string_view text =
        doc.substr(i, lt == absl::string_view::npos ? lt : lt - i);
    if (!ValidText(text)) return fail("bad character data");
    if (open.empty() &&
        text.find_first_not_of(" \n\t\r") != absl::string_view::npos) {
      return fail("text outside the root element");
    }
    if (lt == absl::string_view::npos) break;
    i = lt + 1;
    if (doc.substr(i, 3) == "!--") {
      const std::size_t end = doc.find("-->", i);
      if (end == absl::string_view::npos) return fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (i < doc.size() && doc[i] == '/') {
      ++i;
      const std::string name = read_name();
      skip_space();
      if (i >= doc.size() || doc[i] != '>') return fail("bad end tag");
      ++i;
      if (open.empty() || open.back() != name) {
        return fail("</" + name + "> does not close <" +
                    (open.empty() ? std::string() : open.back()) + ">");
      }
      open.pop_back();
      if (open.empty()) root_done = true;
      continue;
    }
    Element e;
    e.name = read_name();
    if (e.name.empty()) return fail("bad tag name");
    if (open.empty()) {
      if (root_done) return fail("a second root element");
      out.root = e.name;
    }
    while (true) {
      const std::size_t before = i;
      skip_space();
      if (i >= doc.size()) return fail("unterminated tag");
      if (doc[i] == '>' || doc.substr(i, 2) == "/>") break;
      if (i == before) return fail("no space before an attribute");
      const std::string attr = read_name();
      if (attr.empty() || i >= doc.size() || doc[i] != '=') {
        return fail("bad attribute in <" + e.name + ">");
      }
      ++i;
      if (i >= doc.size() || (doc[i] != '"' && doc[i] != '\'')) {
        return fail("unquoted attribute " + attr);
      }
      const char quote = doc[i++];
      const std::size_t end = doc.find(quote, i);
      if (end == absl::string_view::npos) return fail("unterminated value");
      const absl::string_view value = doc.substr(i, end - i);
      if (!ValidText(value)) return fail("bad attribute value " + attr);
      if (!e.attributes.emplace(attr, std::string(value)).second) {
        return fail("duplicate attribute " + attr);
      }
      i = end + 1;
    }
    const bool empty = doc[i] == '/';
    i += empty ? 2 : 1;
    out.elements.push_back(e);
    if (empty) {
      if (open.empty()) root_done = true;
    } else {
      open.push_back(e.name);
    }
  }
  if (!open.empty()) return fail("<" + open.back() + "> is never closed");
  if (!root_done) return fail("no root element");
  return out;
}

TEST(XmlCheckTest, CatchesMalformedDocuments) {
  EXPECT_EQ(CheckXml(R"(<a x="1"><b/>t &amp; u</a>)").error, "");
  for (const char* bad : {
           "<a><b></a></b>",  // crossed
           "<a>",             // never closed
           "<a x=1/>",        // unquoted
           R"(<a x="1" x="2"/>)",
           "<a>&nbsp;</a>",  // unknown entity
           "<a>x < y</a>",
           "<a/><b/>",  // two roots
           "</a>",
           "",
       }) {
    EXPECT_NE(CheckXml(bad).error, "") << bad;
  }
}

TEST(InferenceChartTest, ChartIsWellFormedSvg) {
  const std::string svg = inference::Chart(Demo());
  const XmlCheck x = CheckXml(svg);
  ASSERT_EQ(x.error, "");
  EXPECT_EQ(x.root, "svg");
  std::map<std::string, int> count;
  for (const Element& e : x.elements) ++count[e.name];
  const Element& root = x.elements.front();
  EXPECT_EQ(root.attributes.at("xmlns"), "http://www.w3.org/2000/svg");
  double width = 0, height = 0;
  ASSERT_TRUE(absl::SimpleAtod(root.attributes.at("width"), &width));
  ASSERT_TRUE(absl::SimpleAtod(root.attributes.at("height"), &height));
  EXPECT_GT(width, 0);
  EXPECT_GT(height, 0);
  EXPECT_EQ(root.attributes.at("viewBox"),
            "0 0 " + root.attributes.at("width") + " " +
                root.attributes.at("height"));
  // Three panels (each clipped), the series, the labels.
  EXPECT_EQ(count["title"], 1);
  EXPECT_EQ(count["clipPath"], 3);
  EXPECT_GE(count["polyline"], 10);
  EXPECT_GE(count["text"], 30);
  // Every coordinate is a finite number inside the image.
  for (const Element& e : x.elements) {
    if (e.name != "polyline") continue;
    for (absl::string_view pair :
         absl::StrSplit(e.attributes.at("points"), ' ')) {
      const std::vector<absl::string_view> xy = absl::StrSplit(pair, ',');
      ASSERT_EQ(xy.size(), 2u) << pair;
      double px = 0, py = 0;
      ASSERT_TRUE(absl::SimpleAtod(xy[0], &px)) << pair;
      ASSERT_TRUE(absl::SimpleAtod(xy[1], &py)) << pair;
      EXPECT_TRUE(std::isfinite(px) && std::isfinite(py)) << pair;
      EXPECT_TRUE(px >= 0 && px <= width) << pair;
    }
  }
  // The legend names both runs; the bands name the phases.
  for (const char* label :
       {"with shedding", "always on", "noisy plateau", "ramp down"}) {
    EXPECT_NE(svg.find(std::string(">") + label + "<"), std::string::npos)
        << label;
  }
}

TEST(InferenceChartTest, TextIsEscaped) {
  inference::svg::Chart chart;
  chart.title = R"(a < b & "c" > 'd')";
  inference::svg::Panel& p = chart.panels.emplace_back();
  p.title = "<script>";
  p.log_y = true;
  // Gaps (NaN, and a value <= 0 on a log axis) break the line.
  const double nan = std::nan("");
  p.series.push_back(
      {"x & y", "red", {{0, 1}, {1, nan}, {2, 10}, {3, 0}, {4, 100}}});
  const std::string svg = inference::svg::Render(chart);
  const XmlCheck x = CheckXml(svg);
  ASSERT_EQ(x.error, "") << svg;
  EXPECT_NE(svg.find("a &lt; b &amp; &quot;c&quot; &gt; &apos;d&apos;"),
            std::string::npos);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  std::size_t polylines = 0;
  for (const Element& e : x.elements) polylines += e.name == "polyline";
  EXPECT_EQ(polylines, 3u);
}

}  // namespace DEGRADE_TEST_UNIT
