// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: trip.hpp
// -----------------------------------------------------------------------------
//
// Trip rules: when a breaker opens. A `trip::Rule` reads the `Counts` of the
// current generation and says whether to open. The state machine, the rule
// and the window that counts are three separate parts: a rate rule reads
// the window the settings chose (`SlidingWindow`).
//
// The library's rules (`ConsecutiveFailures`, `FailureRate`, `SlowCallRate`
// and `AnyOf` of them) are values whose parameters can be seen, so that
// validation can refuse a resilience4j percentage typed as is
// (`FailureRate(50.0, 5)` would never trip), the breaker can cap a rate
// rule's minimum at what its window can hold, and an open breaker can say
// which rule opened it and what it saw (`Check`, `TripReason`). Any other
// callable `bool(const Counts&)` is still a rule (kCustom), opaque to all
// of that.
//
// When the breaker asks:
//   * a rule with a rate part is asked after every recorded outcome,
//     successes too, once its minimum number of calls is reached, as in
//     resilience4j (`decides_on_every_outcome`);
//   * `ConsecutiveFailures` and a custom rule keep gobreaker's contract:
//     asked after each closed-state failure (and slow call) only.
// With a count window of N the effective minimum of each rate part is
// min(minimum_calls, N) (resilience4j: min(minimumNumberOfCalls,
// slidingWindowSize)), so "window 10, minimum 100" still trips; the
// breaker applies it with `CappedAt` when it normalises its settings.
//
//   degrade::BreakerSettings s;
//   s.window = degrade::SlidingWindow::Count(100);
//   // Open when half of the last 100 calls failed (once 20 were seen), or
//   // on 10 failures in a row, whichever comes first.
//   s.ready_to_trip = degrade::trip::AnyOf(
//       degrade::trip::FailureRate(0.5, /*minimum_calls=*/20),
//       degrade::trip::ConsecutiveFailures(10));
//   absl::Status ok = s.ready_to_trip.Validate();  // OK
//   degrade::trip::FailureRate(50.0, 5).Validate();
//   // INVALID_ARGUMENT: rates are fractions in (0, 1]: for 50% write 0.5
//
// Thread safety: a Rule is an immutable value; copies share one immutable
// implementation, and every const member may be called from any number of
// threads at once. A custom rule's callable is called as the breaker calls
// it (one call at a time, see breaker_settings.hpp), so a callable with
// state needs no lock of its own.

#ifndef DEGRADE_TRIP_HPP_
#define DEGRADE_TRIP_HPP_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if __has_include(<charconv>)
#include <charconv>
#endif

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/breaker_types.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {
struct TripRuleImpl;

template <typename F>
struct IsStdFunction : std::false_type {};
template <typename Sig>
struct IsStdFunction<std::function<Sig>> : std::true_type {};
}  // namespace detail

namespace trip {

// Rule
//
// A trip rule: a library rule with visible parameters, an AnyOf of rules,
// a user's predicate (kCustom), or empty. Cheap to copy (one shared
// pointer). Thread-compatible as a variable, thread-safe as a value (see
// the file comment).
class Rule {
 public:
  enum class Kind : uint8_t {
    kEmpty,
    kConsecutiveFailures,
    kFailureRate,
    kSlowCallRate,
    kAnyOf,
    kCustom,
  };

  // An empty rule: in settings, "use the default rule".
  Rule() = default;
  Rule(std::nullptr_t) {}  // NOLINT: `s.ready_to_trip = nullptr` as before

  // Any callable bool(const Counts&) that is not a Rule becomes a kCustom
  // rule, so lambdas, function pointers and std::function keep working
  // where a std::function used to be. A null function pointer or an empty
  // std::function gives an empty Rule, as assigning one did. A
  // std::function that wraps a library rule is opaque: kCustom.
  template <typename F,
            typename = std::enable_if_t<
                !std::is_same_v<std::decay_t<F>, Rule> &&
                !std::is_same_v<std::decay_t<F>, std::nullptr_t> &&
                std::is_copy_constructible_v<std::decay_t<F>> &&
                std::is_invocable_r_v<bool, const std::decay_t<F>&,
                                      const Counts&>>>
  Rule(F f);  // NOLINT: implicit, as std::function was

  // Whether the rule is not empty.
  explicit operator bool() const { return impl_ != nullptr; }
  friend bool operator==(const Rule& r, std::nullptr_t) { return !r; }
  friend bool operator==(std::nullptr_t, const Rule& r) { return !r; }
  friend bool operator!=(const Rule& r, std::nullptr_t) {
    return static_cast<bool>(r);
  }
  friend bool operator!=(std::nullptr_t, const Rule& r) {
    return static_cast<bool>(r);
  }

  // gobreaker's contract: true to open. REQUIRES: not empty (an empty rule
  // answers false rather than throwing as an empty std::function did).
  // A custom callable's exception propagates.
  bool operator()(const Counts& c) const { return Check(c, nullptr); }

  // The same decision; when it trips and `why` is not null, `*why` is set
  // to the rule that tripped and what it saw (for AnyOf: the first part, in
  // order, that trips). `*why` is left alone when it does not trip. A
  // custom callable's exception propagates: the breaker catches it (a
  // throw means no trip) and this never does.
  bool Check(const Counts& c, TripReason* why) const;

  Kind kind() const;
  // kFailureRate, kSlowCallRate: the threshold; otherwise 0.
  double rate() const;
  // kFailureRate, kSlowCallRate: the least window_calls at which it can
  // trip, after any CappedAt (and at least 1); otherwise 0.
  uint64_t minimum_calls() const;
  // kConsecutiveFailures: n; otherwise 0.
  uint64_t failures() const;
  // kAnyOf: the parts as given, empty ones included; otherwise none.
  const std::vector<Rule>& parts() const;
  // For messages: "failure_rate(0.5, minimum_calls=20)",
  // "slow_call_rate(0.8, minimum_calls=50)", "consecutive_failures(6)",
  // "any_of(<part>, <part>)", "custom", "empty". Rates are written in the
  // shortest form that reads back exactly, so 1.0000001 is not shown as 1.
  std::string Describe() const;

  // Whether the rule has a rate part, so that the breaker must ask it after
  // successes too (resilience4j). Custom and consecutive: false (gobreaker's
  // contract: asked after failures only).
  bool decides_on_every_outcome() const;
  // The smallest window_calls at which any rate part can trip (the least of
  // their minimum_calls()); UINT64_MAX when there is no rate part.
  uint64_t calls_to_decide() const;
  // The lowest failure-rate (slow-call-rate) threshold among the rate
  // parts, or nullopt when there is none: the rate-based half-open policy
  // and the threshold events read them.
  std::optional<double> failure_rate_threshold() const;
  std::optional<double> slow_call_rate_threshold() const;
  // Bits for the rate parts at or over their threshold for `c` with their
  // minimum reached: kFailureRateExceeded, kSlowCallRateExceeded.
  static constexpr uint8_t kFailureRateExceeded = 1;
  static constexpr uint8_t kSlowCallRateExceeded = 2;
  uint8_t RatesExceeded(const Counts& c) const;

  // This rule with every rate part's minimum_calls capped at `calls`
  // (resilience4j's min(minimumNumberOfCalls, slidingWindowSize)); other
  // parts unchanged. A `calls` of 0 is read as 1. Shares the implementation
  // when nothing changes.
  Rule CappedAt(uint64_t calls) const;

  // OK, or INVALID_ARGUMENT saying which part ("part 2", "part 2.1" for a
  // nested AnyOf) and why: a rate outside (0, 1] or not finite (with a hint
  // when it looks like a percentage: "rates are fractions in (0, 1]: for 50%
  // write 0.5"), minimum_calls of 0, ConsecutiveFailures(0), an AnyOf with
  // no non-empty part, an empty rule. Empty parts of an AnyOf are skipped,
  // as they are when deciding. A custom rule is always valid.
  absl::Status Validate() const;

 private:
  friend Rule ConsecutiveFailures(uint64_t n);
  friend Rule FailureRate(double rate, uint64_t minimum_calls);
  friend Rule SlowCallRate(double rate, uint64_t minimum_calls);
  static Rule RateRule(Kind kind, double rate, uint64_t minimum_calls);
  friend Rule AnyOf(std::vector<Rule> rules);

  explicit Rule(std::shared_ptr<const detail::TripRuleImpl> impl)
      : impl_(std::move(impl)) {}
  static Rule Custom(std::function<bool(const Counts&)> f);
  absl::Status ValidateAt(const std::string& where) const;

  std::shared_ptr<const detail::TripRuleImpl> impl_;
};

// Trips when `n` failures in a row have been seen. gobreaker's default is
// "more than 5", that is `ConsecutiveFailures(6)`, which is also the
// breaker's default rule. Valid for n >= 1.
Rule ConsecutiveFailures(uint64_t n);

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` of them failed. `rate` is a fraction in (0, 1]: 50% is 0.5.
// The default minimum is resilience4j's, 100; with a count window of N the
// effective minimum is min(minimum_calls, N).
Rule FailureRate(double rate, uint64_t minimum_calls = 100);

// Trips when the window holds at least `minimum_calls` calls and at least
// `rate` (a fraction in (0, 1]) of them were slower than
// `slow_call_duration`. Minimum as for FailureRate.
Rule SlowCallRate(double rate, uint64_t minimum_calls = 100);

// Trips when any of `rules` trips; empty rules are skipped (an AnyOf of
// empty rules never trips, and Validate refuses it).
Rule AnyOf(std::vector<Rule> rules);

template <typename... Rules>
Rule AnyOf(Rule first, Rules... rest) {
  return AnyOf(std::vector<Rule>{std::move(first), Rule(std::move(rest))...});
}

}  // namespace trip

// ---- Implementation details ----

namespace detail {

struct TripRuleImpl {
  trip::Rule::Kind kind = trip::Rule::Kind::kEmpty;
  double rate = 0;
  // As given (0 is kept so that Validate can refuse it); deciding reads at
  // least 1.
  uint64_t minimum_calls = 0;
  uint64_t failures = 0;
  std::vector<trip::Rule> parts;
  std::function<bool(const Counts&)> custom;
};

template <typename F>
bool IsNullCallable(const F& f) {
  if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
    return f == nullptr;
  } else if constexpr (IsStdFunction<F>::value) {
    return !f;
  } else {
    return false;
  }
}

inline bool IsRateKind(trip::Rule::Kind k) {
  return k == trip::Rule::Kind::kFailureRate ||
         k == trip::Rule::Kind::kSlowCallRate;
}

// Whether rate part `r` is at or over its threshold for `c`.
inline bool RateReached(const TripRuleImpl& r, const Counts& c) {
  const double seen = r.kind == trip::Rule::Kind::kFailureRate
                          ? c.failure_rate()
                          : c.slow_call_rate();
  return c.window_calls >= std::max<uint64_t>(r.minimum_calls, 1) &&
         seen >= r.rate;
}

// The shortest text that reads back as `x` (locale-free), for messages.
inline std::string ShortestDouble(double x) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), x);
  if (r.ec == std::errc()) return std::string(buf, r.ptr);
#endif
  return absl::StrCat(x);
}

// `percent` / 100 written by moving the decimal point of its shortest text
// two places left, so that 33.3 reads "0.333" rather than the double
// nearest to it. REQUIRES: 1 < percent <= 100 (written without exponent).
inline std::string PercentAsFraction(double percent) {
  const std::string text = ShortestDouble(percent);
  const std::size_t dot = std::min(text.find('.'), text.size());
  const std::string digits = text.substr(0, dot) +
                             (dot < text.size() ? text.substr(dot + 1) : "");
  const std::ptrdiff_t point = static_cast<std::ptrdiff_t>(dot) - 2;
  std::string out =
      point <= 0 ? "0." + std::string(static_cast<std::size_t>(-point), '0') +
                       digits
                 : digits.substr(0, static_cast<std::size_t>(point)) + "." +
                       digits.substr(static_cast<std::size_t>(point));
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out;
}

inline std::optional<double> LowestThreshold(const trip::Rule& r,
                                             trip::Rule::Kind rate_kind) {
  if (r.kind() == rate_kind) return r.rate();
  std::optional<double> lowest;
  for (const trip::Rule& p : r.parts()) {
    const std::optional<double> t = LowestThreshold(p, rate_kind);
    if (t && (!lowest || *t < *lowest)) lowest = t;
  }
  return lowest;
}

}  // namespace detail

namespace trip {

template <typename F, typename>
Rule::Rule(F f) {
  if (detail::IsNullCallable(f)) return;
  *this = Custom(std::function<bool(const Counts&)>(std::move(f)));
}

inline Rule Rule::Custom(std::function<bool(const Counts&)> f) {
  auto impl = std::make_shared<detail::TripRuleImpl>();
  impl->kind = Kind::kCustom;
  impl->custom = std::move(f);
  return Rule(std::move(impl));
}

inline bool Rule::Check(const Counts& c, TripReason* why) const {
  if (!impl_) return false;
  const detail::TripRuleImpl& r = *impl_;
  // The reason is built only on a trip: a rate rule is asked after every
  // outcome, and a copy of Counts on each would be most of its cost.
  const auto tripped = [&](TripReason::Rule rule, double value,
                           double threshold) {
    if (why != nullptr) {
      why->rule = rule;
      why->value = value;
      why->threshold = threshold;
      why->calls = c.window_calls;
      why->counts = c;
    }
    return true;
  };
  switch (r.kind) {
    case Kind::kEmpty:
      return false;
    case Kind::kConsecutiveFailures:
      if (c.consecutive_failures < r.failures) return false;
      return tripped(TripReason::Rule::kConsecutiveFailures,
                     static_cast<double>(c.consecutive_failures),
                     static_cast<double>(r.failures));
    case Kind::kFailureRate:
      if (!detail::RateReached(r, c)) return false;
      return tripped(TripReason::Rule::kFailureRate, c.failure_rate(), r.rate);
    case Kind::kSlowCallRate:
      if (!detail::RateReached(r, c)) return false;
      return tripped(TripReason::Rule::kSlowCallRate, c.slow_call_rate(),
                     r.rate);
    case Kind::kAnyOf:
      for (const Rule& part : r.parts) {
        if (part.Check(c, why)) return true;
      }
      return false;
    case Kind::kCustom:
      if (!r.custom(c)) return false;
      return tripped(TripReason::Rule::kCustom, 0, 0);
  }
  return false;
}

inline Rule::Kind Rule::kind() const {
  return impl_ ? impl_->kind : Kind::kEmpty;
}

inline double Rule::rate() const {
  return impl_ && detail::IsRateKind(impl_->kind) ? impl_->rate : 0.0;
}

inline uint64_t Rule::minimum_calls() const {
  return impl_ && detail::IsRateKind(impl_->kind)
             ? std::max<uint64_t>(impl_->minimum_calls, 1)
             : 0;
}

inline uint64_t Rule::failures() const {
  return kind() == Kind::kConsecutiveFailures ? impl_->failures : 0;
}

inline const std::vector<Rule>& Rule::parts() const {
  static const std::vector<Rule>* const kNone = new std::vector<Rule>;
  return kind() == Kind::kAnyOf ? impl_->parts : *kNone;
}

inline std::string Rule::Describe() const {
  switch (kind()) {
    case Kind::kEmpty:
      return "empty";
    case Kind::kConsecutiveFailures:
      return absl::StrCat("consecutive_failures(", impl_->failures, ")");
    case Kind::kFailureRate:
    case Kind::kSlowCallRate:
      return absl::StrCat(
          kind() == Kind::kFailureRate ? "failure_rate(" : "slow_call_rate(",
          detail::ShortestDouble(impl_->rate),
          ", minimum_calls=", impl_->minimum_calls, ")");
    case Kind::kAnyOf: {
      std::string out = "any_of(";
      for (std::size_t i = 0; i < impl_->parts.size(); ++i) {
        absl::StrAppend(&out, i == 0 ? "" : ", ", impl_->parts[i].Describe());
      }
      out += ")";
      return out;
    }
    case Kind::kCustom:
      break;
  }
  return "custom";
}

inline bool Rule::decides_on_every_outcome() const {
  return calls_to_decide() != std::numeric_limits<uint64_t>::max();
}

inline uint64_t Rule::calls_to_decide() const {
  if (detail::IsRateKind(kind())) return minimum_calls();
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (const Rule& p : parts()) least = std::min(least, p.calls_to_decide());
  return least;
}

inline std::optional<double> Rule::failure_rate_threshold() const {
  return detail::LowestThreshold(*this, Kind::kFailureRate);
}

inline std::optional<double> Rule::slow_call_rate_threshold() const {
  return detail::LowestThreshold(*this, Kind::kSlowCallRate);
}

inline uint8_t Rule::RatesExceeded(const Counts& c) const {
  switch (kind()) {
    case Kind::kFailureRate:
      return detail::RateReached(*impl_, c) ? kFailureRateExceeded : 0;
    case Kind::kSlowCallRate:
      return detail::RateReached(*impl_, c) ? kSlowCallRateExceeded : 0;
    default:
      break;
  }
  uint8_t bits = 0;
  for (const Rule& p : parts()) bits |= p.RatesExceeded(c);
  return bits;
}

inline Rule Rule::CappedAt(uint64_t calls) const {
  const uint64_t cap = std::max<uint64_t>(calls, 1);
  if (detail::IsRateKind(kind())) {
    if (impl_->minimum_calls <= cap) return *this;
    auto capped = std::make_shared<detail::TripRuleImpl>(*impl_);
    capped->minimum_calls = cap;
    return Rule(std::move(capped));
  }
  if (kind() != Kind::kAnyOf) return *this;
  std::vector<Rule> parts;
  parts.reserve(impl_->parts.size());
  bool changed = false;
  for (const Rule& p : impl_->parts) {
    parts.push_back(p.CappedAt(cap));
    changed = changed || parts.back().impl_ != p.impl_;
  }
  return changed ? AnyOf(std::move(parts)) : *this;
}

inline absl::Status Rule::Validate() const { return ValidateAt(""); }

inline absl::Status Rule::ValidateAt(const std::string& where) const {
  const auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        where.empty() ? std::string(why)
                      : absl::StrCat(where, " (", Describe(), "): ", why));
  };
  switch (kind()) {
    case Kind::kEmpty:
      return refuse("an empty rule decides nothing");
    case Kind::kConsecutiveFailures:
      if (impl_->failures == 0) {
        return refuse("consecutive_failures needs n >= 1");
      }
      return absl::OkStatus();
    case Kind::kFailureRate:
    case Kind::kSlowCallRate: {
      const double rate = impl_->rate;
      if (!(rate > 0.0 && rate <= 1.0)) {  // NaN fails this too
        if (rate > 1.0 && rate <= 100.0) {
          return refuse(absl::StrCat(
              "rates are fractions in (0, 1]: for ",
              detail::ShortestDouble(rate), "% write ",
              detail::PercentAsFraction(rate)));
        }
        return refuse("rates are fractions in (0, 1]");
      }
      if (impl_->minimum_calls == 0) {
        return refuse("minimum_calls must be at least 1");
      }
      return absl::OkStatus();
    }
    case Kind::kAnyOf: {
      bool any = false;
      for (std::size_t i = 0; i < impl_->parts.size(); ++i) {
        const Rule& p = impl_->parts[i];
        if (!p) continue;  // skipped when deciding, too
        any = true;
        const std::string path =
            where.empty() ? absl::StrCat("part ", i + 1)
                          : absl::StrCat(where, ".", i + 1);
        absl::Status s = p.ValidateAt(path);
        if (!s.ok()) return s;
      }
      if (!any) return refuse("any_of needs at least one rule that is not empty");
      return absl::OkStatus();
    }
    case Kind::kCustom:
      break;
  }
  return absl::OkStatus();
}

inline Rule ConsecutiveFailures(uint64_t n) {
  auto impl = std::make_shared<detail::TripRuleImpl>();
  impl->kind = Rule::Kind::kConsecutiveFailures;
  impl->failures = n;
  return Rule(std::move(impl));
}

inline Rule Rule::RateRule(Kind kind, double rate, uint64_t minimum_calls) {
  auto impl = std::make_shared<detail::TripRuleImpl>();
  impl->kind = kind;
  impl->rate = rate;
  impl->minimum_calls = minimum_calls;
  return Rule(std::move(impl));
}

inline Rule FailureRate(double rate, uint64_t minimum_calls) {
  return Rule::RateRule(Rule::Kind::kFailureRate, rate, minimum_calls);
}

inline Rule SlowCallRate(double rate, uint64_t minimum_calls) {
  return Rule::RateRule(Rule::Kind::kSlowCallRate, rate, minimum_calls);
}

inline Rule AnyOf(std::vector<Rule> rules) {
  auto impl = std::make_shared<detail::TripRuleImpl>();
  impl->kind = Rule::Kind::kAnyOf;
  impl->parts = std::move(rules);
  return Rule(std::move(impl));
}

}  // namespace trip
DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TRIP_HPP_
