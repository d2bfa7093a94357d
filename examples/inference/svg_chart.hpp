// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: examples/inference/svg_chart.hpp
// -----------------------------------------------------------------------------
//
// A small, self-contained SVG line-chart writer: panels stacked over one
// shared x axis, each with its own y axis (linear or log), line or step
// series (a NaN y is a gap), dashed reference lines, a legend, and labelled
// background bands (the phases of a load pattern). No dependency beyond
// Abseil's string formatting; the output is plain SVG 1.1 that browsers and
// GitHub render as is.
//
//   inference::svg::Chart chart;
//   chart.title = "...";
//   inference::svg::Panel& p = chart.panels.emplace_back();
//   p.title = "p99 latency";
//   p.log_y = true;
//   p.series.push_back({"with shedding", "#1f77b4", points});
//   std::string text = inference::svg::Render(chart);

#ifndef DEGRADE_EXAMPLES_INFERENCE_SVG_CHART_HPP_
#define DEGRADE_EXAMPLES_INFERENCE_SVG_CHART_HPP_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace inference {
namespace svg {

struct Point {
  double x = 0.0;
  double y = 0.0;  // NaN: no value here (the line breaks)
};

struct Series {
  std::string label;          // empty: left out of the legend
  std::string color;          // an SVG colour: "#1f77b4", "gray"
  std::vector<Point> points;  // in increasing x
  double width = 1.5;
  bool dashed = false;
  bool step = false;  // hold each y until the next point's x
};

struct Tick {
  double value = 0.0;
  std::string label;
};

struct Panel {
  std::string title;
  double height = 170.0;  // of the plot area, in pixels
  bool log_y = false;     // values <= 0 are gaps on a log axis
  // The y range; taken from the data (and 0 on a linear axis) while
  // y_max <= y_min.
  double y_min = 0.0;
  double y_max = 0.0;
  std::vector<Tick> y_ticks;  // empty: chosen automatically
  std::vector<Series> series;
};

// A labelled background stripe over [from, to) of the x axis, across every
// panel; bands alternate between two shades.
struct Band {
  double from = 0.0;
  double to = 0.0;
  std::string label;
};

struct Chart {
  std::string title;
  std::string subtitle;
  std::string x_label;
  double width = 960.0;  // of the whole image, in pixels
  // The x range; taken from the data while x_max <= x_min.
  double x_min = 0.0;
  double x_max = 0.0;
  std::vector<Tick> x_ticks;  // empty: chosen automatically
  std::vector<Band> bands;
  std::vector<Panel> panels;
};

// `text` with the five XML special characters escaped.
inline std::string Escape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// About `target` round-numbered ticks (steps of 1, 2 or 5 times a power of
// ten) covering [lo, hi].
inline std::vector<Tick> NiceTicks(double lo, double hi, int target = 6) {
  std::vector<Tick> ticks;
  if (!(hi > lo) || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {2.0, 5.0, 10.0}) {
    if (step >= raw) break;
    step = m * magnitude;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9;
       v += step) {
    const double value = std::abs(v) < step * 1e-9 ? 0.0 : v;
    ticks.push_back({value, absl::StrFormat("%g", value)});
  }
  return ticks;
}

namespace internal {

inline std::string Num(double v) { return absl::StrFormat("%.1f", v); }

inline void AppendText(std::string& out, double x, double y,
                       absl::string_view text, absl::string_view attributes) {
  absl::StrAppend(&out, "<text x=\"", Num(x), "\" y=\"", Num(y), "\"",
                  attributes.empty() ? "" : " ", attributes, ">", Escape(text),
                  "</text>\n");
}

inline void AppendLine(std::string& out, double x1, double y1, double x2,
                       double y2, absl::string_view attributes) {
  absl::StrAppend(&out, "<line x1=\"", Num(x1), "\" y1=\"", Num(y1), "\" x2=\"",
                  Num(x2), "\" y2=\"", Num(y2), "\" ", attributes, "/>\n");
}

// Maps data values to pixels along one axis.
struct Axis {
  double lo = 0.0;
  double hi = 1.0;
  double pixel_lo = 0.0;  // where lo lands
  double pixel_hi = 1.0;  // where hi lands
  bool log = false;

  // The value on the axis' own scale (log10 on a log axis), NaN if none.
  double Scaled(double v) const {
    if (std::isnan(v)) return v;
    if (!log) return v;
    return v > 0.0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN();
  }
  double Pixel(double v) const {
    const double s = Scaled(v);
    const double a = Scaled(lo);
    const double b = Scaled(hi);
    return pixel_lo + (s - a) / (b - a) * (pixel_hi - pixel_lo);
  }
};

// The y range of a panel: its own, or the data's.
inline void PanelRange(const Panel& p, double* lo, double* hi) {
  if (p.y_max > p.y_min) {
    *lo = p.y_min;
    *hi = p.y_max;
    return;
  }
  *lo = std::numeric_limits<double>::infinity();
  *hi = -std::numeric_limits<double>::infinity();
  for (const Series& s : p.series) {
    for (const Point& pt : s.points) {
      if (std::isnan(pt.y) || (p.log_y && pt.y <= 0.0)) continue;
      *lo = std::min(*lo, pt.y);
      *hi = std::max(*hi, pt.y);
    }
  }
  if (!(*hi >= *lo)) {  // no data
    *lo = p.log_y ? 1.0 : 0.0;
    *hi = p.log_y ? 10.0 : 1.0;
  }
  if (p.log_y) {
    *lo = std::pow(10.0, std::floor(std::log10(*lo)));
    *hi = std::pow(10.0, std::ceil(std::log10(*hi)));
    if (!(*hi > *lo)) *hi = *lo * 10.0;
  } else {
    *lo = std::min(*lo, 0.0);
    if (!(*hi > *lo)) *hi = *lo + 1.0;
  }
}

// The polylines of one series (split at gaps), in pixels.
inline std::vector<std::string> Polylines(const Series& s, const Axis& x,
                                          const Axis& y) {
  std::vector<std::string> lines;
  std::string current;
  double last_y = 0.0;
  const auto flush = [&] {
    if (!current.empty()) lines.push_back(current);
    current.clear();
  };
  for (const Point& p : s.points) {
    const double py = y.Pixel(p.y);
    if (std::isnan(py) || std::isnan(p.x)) {
      flush();
      continue;
    }
    const double px = x.Pixel(p.x);
    if (s.step && !current.empty()) {
      absl::StrAppend(&current, " ", Num(px), ",", Num(last_y));
    }
    absl::StrAppend(&current, current.empty() ? "" : " ", Num(px), ",",
                    Num(py));
    last_y = py;
  }
  flush();
  return lines;
}

}  // namespace internal

// The chart as an SVG document.
inline std::string Render(const Chart& chart) {
  using internal::AppendLine;
  using internal::AppendText;
  using internal::Num;
  constexpr double kLeft = 78.0;
  constexpr double kRight = 24.0;
  constexpr double kPanelGap = 46.0;  // room for each panel's title
  constexpr double kBottom = 56.0;
  const double top = chart.subtitle.empty() ? 48.0 : 66.0;
  const double plot_width = chart.width - kLeft - kRight;

  // The x range.
  internal::Axis x{chart.x_min, chart.x_max, kLeft, kLeft + plot_width, false};
  if (!(x.hi > x.lo)) {
    x.lo = std::numeric_limits<double>::infinity();
    x.hi = -std::numeric_limits<double>::infinity();
    for (const Panel& p : chart.panels) {
      for (const Series& s : p.series) {
        for (const Point& pt : s.points) {
          x.lo = std::min(x.lo, pt.x);
          x.hi = std::max(x.hi, pt.x);
        }
      }
    }
    if (!(x.hi > x.lo)) x.lo = 0.0, x.hi = 1.0;
  }
  const std::vector<Tick> x_ticks =
      chart.x_ticks.empty() ? NiceTicks(x.lo, x.hi, 10) : chart.x_ticks;

  double height = top;
  for (const Panel& p : chart.panels) height += kPanelGap + p.height;
  height += kBottom;

  std::string out;
  absl::StrAppend(&out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                  Num(chart.width), "\" height=\"", Num(height),
                  "\" viewBox=\"0 0 ", Num(chart.width), " ", Num(height),
                  "\" font-family=\"Helvetica, Arial, sans-serif\" "
                  "font-size=\"12\">\n");
  absl::StrAppend(&out, "<title>", Escape(chart.title), "</title>\n");
  absl::StrAppend(&out, "<rect x=\"0\" y=\"0\" width=\"", Num(chart.width),
                  "\" height=\"", Num(height), "\" fill=\"white\"/>\n");
  AppendText(out, kLeft, 24.0, chart.title,
             "font-size=\"17\" font-weight=\"bold\" fill=\"#222\"");
  if (!chart.subtitle.empty()) {
    AppendText(out, kLeft, 44.0, chart.subtitle, "fill=\"#555\"");
  }

  double panel_top = top;
  for (std::size_t i = 0; i < chart.panels.size(); ++i) {
    const Panel& p = chart.panels[i];
    const double y0 = panel_top + kPanelGap;  // top of the plot area
    const double y1 = y0 + p.height;          // bottom
    internal::Axis y{0.0, 1.0, y1, y0, p.log_y};
    internal::PanelRange(p, &y.lo, &y.hi);
    const std::string clip = absl::StrCat("plot", i);
    absl::StrAppend(&out, "<g>\n<clipPath id=\"", clip, "\"><rect x=\"",
                    Num(kLeft), "\" y=\"", Num(y0), "\" width=\"",
                    Num(plot_width), "\" height=\"", Num(p.height),
                    "\"/></clipPath>\n");
    AppendText(out, kLeft, y0 - 10.0, p.title,
               "font-size=\"13\" font-weight=\"bold\" fill=\"#222\"");

    // Bands, then the grid, then the data, then the frame and legend.
    for (std::size_t b = 0; b < chart.bands.size(); ++b) {
      const Band& band = chart.bands[b];
      const double bx0 = std::max(x.Pixel(band.from), kLeft);
      const double bx1 = std::min(x.Pixel(band.to), kLeft + plot_width);
      if (!(bx1 > bx0)) continue;
      absl::StrAppend(&out, "<rect x=\"", Num(bx0), "\" y=\"", Num(y0),
                      "\" width=\"", Num(bx1 - bx0), "\" height=\"",
                      Num(p.height), "\" fill=\"",
                      b % 2 == 0 ? "#f7f7f7" : "#ececec", "\"/>\n");
      if (i == 0 && !band.label.empty()) {
        AppendText(out, (bx0 + bx1) / 2.0, y0 + 14.0, band.label,
                   "text-anchor=\"middle\" font-size=\"11\" fill=\"#777\"");
      }
    }
    std::vector<Tick> y_ticks = p.y_ticks;
    if (y_ticks.empty() && !p.log_y) y_ticks = NiceTicks(y.lo, y.hi, 5);
    if (y_ticks.empty() && p.log_y) {
      for (double v = y.lo; v <= y.hi * 1.0001; v *= 10.0) {
        y_ticks.push_back({v, absl::StrFormat("%g", v)});
      }
    }
    for (const Tick& t : y_ticks) {
      const double py = y.Pixel(t.value);
      if (std::isnan(py) || py < y0 - 0.5 || py > y1 + 0.5) continue;
      AppendLine(out, kLeft, py, kLeft + plot_width, py,
                 "stroke=\"#d0d0d0\" stroke-width=\"1\"");
      AppendText(out, kLeft - 6.0, py + 4.0, t.label,
                 "text-anchor=\"end\" fill=\"#444\"");
    }
    for (const Tick& t : x_ticks) {
      const double px = x.Pixel(t.value);
      if (px < kLeft - 0.5 || px > kLeft + plot_width + 0.5) continue;
      AppendLine(out, px, y0, px, y1, "stroke=\"#e0e0e0\" stroke-width=\"1\"");
      if (i + 1 == chart.panels.size()) {
        AppendLine(out, px, y1, px, y1 + 5.0, "stroke=\"#444\"");
        AppendText(out, px, y1 + 18.0, t.label,
                   "text-anchor=\"middle\" fill=\"#444\"");
      }
    }
    absl::StrAppend(&out, "<g clip-path=\"url(#", clip, ")\" fill=\"none\">\n");
    for (const Series& s : p.series) {
      for (const std::string& points : internal::Polylines(s, x, y)) {
        absl::StrAppend(&out, "<polyline points=\"", points, "\" stroke=\"",
                        Escape(s.color), "\" stroke-width=\"", Num(s.width),
                        "\"", s.dashed ? " stroke-dasharray=\"6 4\"" : "",
                        " stroke-linejoin=\"round\"/>\n");
      }
    }
    absl::StrAppend(&out, "</g>\n<rect x=\"", Num(kLeft), "\" y=\"", Num(y0),
                    "\" width=\"", Num(plot_width), "\" height=\"",
                    Num(p.height),
                    "\" fill=\"none\" stroke=\"#888\" stroke-width=\"1\"/>\n");

    // The legend: top right of the plot, one row per labelled series.
    std::vector<const Series*> labelled;
    std::size_t longest = 0;
    for (const Series& s : p.series) {
      if (s.label.empty()) continue;
      labelled.push_back(&s);
      longest = std::max(longest, s.label.size());
    }
    if (!labelled.empty()) {
      const double row = 16.0;
      const double w = 40.0 + 6.4 * static_cast<double>(longest);
      const double h = 8.0 + row * static_cast<double>(labelled.size());
      const double lx = kLeft + plot_width - w - 8.0;
      const double ly = y0 + 22.0;
      absl::StrAppend(&out, "<rect x=\"", Num(lx), "\" y=\"", Num(ly),
                      "\" width=\"", Num(w), "\" height=\"", Num(h),
                      "\" fill=\"white\" fill-opacity=\"0.88\" "
                      "stroke=\"#bbb\"/>\n");
      for (std::size_t k = 0; k < labelled.size(); ++k) {
        const Series& s = *labelled[k];
        const double ry = ly + 4.0 + row * (static_cast<double>(k) + 0.5);
        AppendLine(out, lx + 8.0, ry, lx + 32.0, ry,
                   absl::StrCat("stroke=\"", Escape(s.color),
                                "\" stroke-width=\"", Num(s.width + 0.5), "\"",
                                s.dashed ? " stroke-dasharray=\"6 4\"" : ""));
        AppendText(out, lx + 38.0, ry + 4.0, s.label, "fill=\"#222\"");
      }
    }
    absl::StrAppend(&out, "</g>\n");
    panel_top = y1;
  }
  AppendText(out, kLeft + plot_width / 2.0, panel_top + 40.0, chart.x_label,
             "text-anchor=\"middle\" fill=\"#222\"");
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace svg
}  // namespace inference

#endif  // DEGRADE_EXAMPLES_INFERENCE_SVG_CHART_HPP_
