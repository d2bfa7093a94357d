// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: with_fallback.hpp
// -----------------------------------------------------------------------------
//
// The fallback combinators: a stage's call behind a `CircuitBreaker<T>`, and
// its Plan B when the call fails, tagged so that everything downstream knows
// the answer is lossy (`StageResult::is_default()` and a `DegradationTrace`
// entry naming the stage and why). `WithFallback` is the general form; the
// ranking and re-ranking stages have their Plan B built in:
//
//   WithFallback         any stage: the fallback value (a value, or a
//                        callable returning one, e.g. `DefaultFeatures::
//                        Fallback()` or `HotList::Fallback()`)
//   RankOrFallback       ranking: skip the model, `OrderByRecallScore`
//   RerankOrFallback     re-ranking: only remove duplicates, `DedupOnly`
//
// Any failure becomes the fallback: the breaker open, too many half-open
// trials, the call's error, an exception it threw. A limiter put in front
// (`WithFallback(limiter, breaker, ...)`: a RateLimiter, a ClusterQuota, or
// any callable returning absl::Status) is asked before a closed breaker and
// behind an open or half-open one, so a call the breaker rejects spends no
// permit; its refusal is served by Plan B tagged `rate_limited` and is
// neither a failure nor a success of the breaker, so a dependency we chose
// not to call is not counted as failing.
//
//   degrade::CircuitBreaker<std::vector<float>> feature_cb(settings);
//   absl::StatusOr<degrade::StageResult<std::vector<float>>> f =
//       degrade::WithFallback(feature_cb, "features",
//                             [&] { return feature_client.Get(user); },
//                             defaults->Fallback());
//   // f->is_default() is true and f->trace() is "v1;features=open" while
//   // the feature service's breaker is open.
//
//   degrade::StageResult<std::vector<Item>> ranked = degrade::RankOrFallback(
//       f->trace(), rank_cb, "rank",
//       [&](const std::vector<Item>& c) { return ranker.Rank(c); },
//       std::move(recalled), [](const Item& i) { return i.recall_score; });
//   // ranked.trace() carries the features entry too: traces flow stage to
//   // stage.
//
// The fallback may be a value, a no-argument callable, or a callable taking
// the failure's `const absl::Status&`. A fallback that itself can fail
// (returns `absl::StatusOr<T>`, as `DefaultFeatures::Fallback()` does before
// its first successful load) makes `WithFallback` return
// `absl::StatusOr<StageResult<T>>`; otherwise it returns `StageResult<T>`.
//
// Nothing here throws. Exceptions thrown by the wrapped call are caught by
// the breaker and counted as failures; the fallback and the key/score/id
// functions are expected not to throw (they are the last line of defence, and
// catching there would need a third answer). The header compiles with
// -fno-exceptions.
//
// Thread safety: the functions are thread-safe when the callables they are
// given are (the breaker is).

#ifndef DEGRADE_WITH_FALLBACK_HPP_
#define DEGRADE_WITH_FALLBACK_HPP_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/stage_result.hpp"
#include "degrade/status.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {

// What a fallback of type `Fb` produces for `T`: the callable's result, or
// `T` for a plain value. Defined here, ahead of the declarations, because
// their return types are computed from it.
template <typename T, typename Fb>
auto InvokeFallback(Fb& fb, const absl::Status& failure) {
  if constexpr (std::is_invocable_v<Fb&, const absl::Status&>) {
    return std::invoke(fb, failure);
  } else if constexpr (std::is_invocable_v<Fb&>) {
    (void)failure;
    return std::invoke(fb);
  } else {
    static_assert(std::is_constructible_v<T, Fb&>,
                  "WithFallback: the fallback must be a value convertible to "
                  "T, a callable taking no arguments or const absl::Status&, "
                  "returning T or absl::StatusOr<T>");
    (void)failure;
    return T(fb);
  }
}

template <typename T, typename Fb>
using FallbackOutput =
    decltype(InvokeFallback<T>(std::declval<Fb&>(), absl::Status()));

// Whether the fallback can fail (returns absl::StatusOr<T>).
template <typename T, typename Fb>
inline constexpr bool kFallibleFallback =
    kIsStatusOrOf<FallbackOutput<T, Fb>, T>;

template <typename T, typename Fb>
using WithFallbackResult =
    std::conditional_t<kFallibleFallback<T, Fb>, absl::StatusOr<StageResult<T>>,
                       StageResult<T>>;

// How a limiter in front of a breaker is asked: `Admit()` (RateLimiter),
// `TryAcquire()` returning a status (redis::ClusterQuota), or a call
// (a lambda, e.g. over a KeyedRateLimiter and a key). Each yields OK or
// the refusal.
template <typename G, typename = void>
struct HasStatusAdmit : std::false_type {};
template <typename G>
struct HasStatusAdmit<
    G, std::enable_if_t<
           std::is_same_v<decltype(std::declval<G&>().Admit()), absl::Status>>>
    : std::true_type {};
template <typename G, typename = void>
struct HasStatusTryAcquire : std::false_type {};
template <typename G>
struct HasStatusTryAcquire<
    G, std::enable_if_t<std::is_same_v<
           decltype(std::declval<G&>().TryAcquire()), absl::Status>>>
    : std::true_type {};
template <typename G, typename = void>
struct HasGiveBack : std::false_type {};
template <typename G>
struct HasGiveBack<G, std::void_t<decltype(std::declval<G&>().GiveBack(
                          std::declval<int64_t>()))>> : std::true_type {};
template <typename G>
inline constexpr bool kIsAdmissionGate =
    HasStatusAdmit<G>::value || HasStatusTryAcquire<G>::value ||
    std::is_invocable_r_v<absl::Status, G&>;

template <typename G>
absl::Status AskGate(G& gate, absl::string_view stage) {
  // A gate that throws (a user's limiter lambda) is a failure like any
  // other: Plan B, tagged exception, and the call is not made.
  return InvokeOr(
      [&gate]() -> absl::Status {
        if constexpr (HasStatusAdmit<G>::value) {
          return gate.Admit();
        } else if constexpr (HasStatusTryAcquire<G>::value) {
          return gate.TryAcquire();
        } else {
          return std::invoke(gate);
        }
      },
      [stage](absl::string_view what) {
        return CallableExceptionError(
            absl::StrCat("the limiter in front of '", stage, "'"), what);
      });
}

}  // namespace detail

// WithFallback()
//
// Runs `call` through `breaker.Execute` (so it is admitted or rejected by the
// breaker, its outcome is counted, and an exception it throws becomes a
// failure). On success returns `StageResult<T>::Fresh(value)`. On any failure
// returns `StageResult<T>::Fallback(fallback_value, stage,
// ReasonFromStatus(status))`, where `fallback` is one of:
//
//   * a callable `(const absl::Status& failure) -> T or StatusOr<T>`,
//   * a callable `() -> T or StatusOr<T>`,
//   * a value convertible to `T` (copied on each failure).
//
// If the fallback returns `absl::StatusOr<T>`, the result is
// `absl::StatusOr<StageResult<T>>`: the fallback's error, its message naming
// the stage and both causes, when both plans fail.
//
// Preconditions: `stage` is a valid stage name (`IsValidStageName`; an
// invalid one is counted as dropped in the trace, not recorded). `call` takes
// no arguments and returns `T` or `absl::StatusOr<T>`. `fallback` must not
// throw.
//
// Thread-safe if `call` and `fallback` are.
template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback);

// WithFallback(upstream, ...)
//
// As above, with the upstream stage's trace merged in (upstream entries
// first, see `StageResult::MergeUpstream`), so a request's trace accumulates
// every stage that degraded. `upstream` is a `DegradationTrace` or the
// upstream `StageResult<U>` (see `UpstreamTrace`). A fresh result carries
// the upstream trace but is not `is_default()`.
template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(UpstreamTrace upstream,
                                                     CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback);

// WithFallback(limiter, breaker, ...)
//
// A limiter in front of the call: asks `limiter` (its `Admit()`, else its
// `TryAcquire()` returning absl::Status, else `limiter()`) before a closed
// breaker, and only once the breaker admits the call when it is open or
// half-open, so a call the breaker rejects spends no permit. When the
// limiter refuses, `call` is not run and the refusal is neither a failure
// nor a success of the dependency (before a closed breaker the breaker
// never sees it; behind one it counts as excluded and a half-open trial
// slot is given back), and the result is
// the fallback tagged `DegradeReason::kRateLimited` (a refusal that is not
// a rate limit's, `IsRateLimited`, is tagged `kShed`; a limiter that throws
// is tagged `kException`). A fallible fallback
// receives the refusal, retry-after included, as `failure`. When the
// limiter admits, this is `WithFallback(breaker, stage, call, fallback)`;
// the permit is spent whatever the call's outcome (a limit on calls made,
// as resilience4j and Guava count them).
//
// Preconditions: as WithFallback; `limiter` is one of the three shapes.
// Thread-safe if `limiter`, `call` and `fallback` are (RateLimiter,
// KeyedRateLimiter and ClusterQuota are).
template <typename T, typename Limiter, typename Call, typename Fallback,
          typename = std::enable_if_t<detail::kIsAdmissionGate<Limiter>>>
detail::WithFallbackResult<T, Fallback> WithFallback(Limiter& limiter,
                                                     CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback);

// As above, with the upstream stage's trace merged in.
template <typename T, typename Limiter, typename Call, typename Fallback,
          typename = std::enable_if_t<detail::kIsAdmissionGate<Limiter>>>
detail::WithFallbackResult<T, Fallback> WithFallback(
    UpstreamTrace upstream, Limiter& limiter, CircuitBreaker<T>& breaker,
    absl::string_view stage, Call&& call, Fallback fallback);

// OrderByRecallScore()
//
// The ranking stage's Plan B: `candidates` ordered by `score_of(candidate)`
// (convertible to double), highest first; ties keep their recall order
// (stable). NaN scores go last, so a bad score can't break the sort's
// ordering contract.
//
// Thread-safe if `score_of` is. `score_of` must not throw.
template <typename Candidate, typename ScoreOf>
std::vector<Candidate> OrderByRecallScore(std::vector<Candidate> candidates,
                                          ScoreOf score_of);

// DedupOnly()
//
// The re-ranking stage's Plan B: `items` in their order with repeated ids
// removed, the first occurrence winning. `id_of(item)` returns an id with a
// `std::hash` specialisation and `==`; ids are copied into a set.
//
// Thread-safe if `id_of` is. `id_of` must not throw.
template <typename Item, typename IdOf>
std::vector<Item> DedupOnly(std::vector<Item> items, IdOf id_of);

// RankOrFallback()
//
// Runs `rank_call(const std::vector<Candidate>&)` (returning the ranked
// `std::vector<Candidate>` or a StatusOr of it) through `breaker`; on any
// failure returns the candidates ordered by `OrderByRecallScore(score_of)`,
// tagged `stage`. The overload taking `upstream` (a trace or a result, see
// `UpstreamTrace`) merges that trace in.
//
// Thread-safe if the callables are.
template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    CircuitBreaker<std::vector<Candidate>>& breaker, absl::string_view stage,
    RankCall&& rank_call, std::vector<Candidate> candidates, ScoreOf score_of);

template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    UpstreamTrace upstream, CircuitBreaker<std::vector<Candidate>>& breaker,
    absl::string_view stage, RankCall&& rank_call,
    std::vector<Candidate> candidates, ScoreOf score_of);

// RerankOrFallback()
//
// Runs `rerank_call(const std::vector<Item>&)` through `breaker`; on any
// failure returns `DedupOnly(items, id_of)`, tagged `stage`. The overload
// taking `upstream` (a trace or a result) merges that trace in.
//
// Thread-safe if the callables are.
template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    RerankCall&& rerank_call, std::vector<Item> items, IdOf id_of);

template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    UpstreamTrace upstream, CircuitBreaker<std::vector<Item>>& breaker,
    absl::string_view stage, RerankCall&& rerank_call, std::vector<Item> items,
    IdOf id_of);

// ---- Implementation details -------------------------------------------------

namespace detail {

// Plan B of every combinator (WithFallback here, FanOutRecall in
// fan_out.hpp): the fallback's value for `failure`, or, when a fallible
// fallback fails too, its error with the fallback's code (which says why
// there is no answer at all) and a message naming `stage`, what failed first
// (`describe_failure()`, only called then) and the fallback's own cause.
template <typename T, typename Fb, typename DescribeFailure>
absl::StatusOr<T> RunPlanB(Fb& fallback, const absl::Status& failure,
                           absl::string_view stage,
                           DescribeFailure&& describe_failure) {
  if constexpr (kFallibleFallback<T, Fb>) {
    absl::StatusOr<T> plan_b = InvokeFallback<T>(fallback, failure);
    if (!plan_b.ok()) {
      return Reworded(plan_b.status(),
                      absl::StrCat("stage '", stage, "': ", describe_failure(),
                                   " and so did its fallback: ",
                                   plan_b.status().message()));
    }
    return plan_b;
  } else {
    (void)stage;
    (void)describe_failure;
    return T(InvokeFallback<T>(fallback, failure));
  }
}

// The breaker's outcome made a StageResult: the value, or Plan B for the
// failure. `upstream` may be null.
template <typename T, typename Fb>
WithFallbackResult<T, Fb> FinishWithFallback(const DegradationTrace* upstream,
                                             absl::StatusOr<T> fresh,
                                             absl::string_view stage,
                                             Fb& fallback) {
  if (fresh.ok()) {
    // The happy path: no allocation beyond the value itself, no lock beyond
    // what the breaker takes.
    return upstream == nullptr
               ? StageResult<T>::Fresh(*std::move(fresh))
               : StageResult<T>::From(*upstream, *std::move(fresh));
  }
  const absl::Status& failure = fresh.status();
  absl::StatusOr<T> plan_b = RunPlanB<T>(fallback, failure, stage, [&] {
    return absl::StrCat("the call failed (", failure.ToString(), ")");
  });
  if constexpr (kFallibleFallback<T, Fb>) {
    if (!plan_b.ok()) return plan_b.status();
  }
  StageResult<T> r = StageResult<T>::Fallback(*std::move(plan_b), stage,
                                              ReasonFromStatus(failure));
  if (upstream != nullptr) r.MergeUpstream(*upstream);
  return r;
}

// The shared body of every WithFallback overload. `upstream` may be null.
template <typename T, typename Call, typename Fb>
WithFallbackResult<T, Fb> RunWithFallback(const DegradationTrace* upstream,
                                          CircuitBreaker<T>& breaker,
                                          absl::string_view stage, Call& call,
                                          Fb& fallback) {
  return FinishWithFallback<T>(upstream, breaker.Execute(call), stage,
                               fallback);
}

// Behind a breaker that is not closed, the limiter is asked once the
// breaker has admitted the call, so a call the breaker rejects spends no
// permit (an open breaker in front of a fleet quota would otherwise spend
// the fleet's tokens on calls never made, and find the burst gone when it
// closes). A refusal is then reported to the breaker as excluded: neither
// a failure nor a success, and a half-open trial slot is given back.
struct GatedExecute {
  template <typename T>
  static bool Closed(const CircuitBreaker<T>& breaker) {
    return breaker.core_.last_state() == State::kClosed;
  }
  template <typename T, typename G, typename F>
  static ResultOf<T> Run(CircuitBreaker<T>& breaker, G& gate,
                         absl::string_view stage, F& f, absl::Status* refusal) {
    Ticket ticket;
    if (const absl::Status* rejected = breaker.core_.Acquire(&ticket)) {
      return ResultOf<T>(*rejected);
    }
    absl::Status admitted = AskGate(gate, stage);
    if (!admitted.ok()) {
      breaker.core_.Complete(ticket, admitted, CallVerdict::kExcluded);
      *refusal = std::move(admitted);
      return ResultOf<T>(*refusal);
    }
    return breaker.Run(ticket, f);
  }
  // The limiter first (its refusals never reach the breaker's counts),
  // then the breaker; a permit taken for a call the breaker then rejects
  // (it opened meanwhile) is given back where the limiter can take it
  // (`GiveBack(n)`: RateLimiter).
  template <typename T, typename G, typename F>
  static ResultOf<T> RunLimiterFirst(CircuitBreaker<T>& breaker, G& gate,
                                     absl::string_view stage, F& f,
                                     absl::Status* refusal) {
    absl::Status admitted = AskGate(gate, stage);
    if (!admitted.ok()) {
      *refusal = std::move(admitted);
      return ResultOf<T>(*refusal);
    }
    Ticket ticket;
    if (const absl::Status* rejected = breaker.core_.Acquire(&ticket)) {
      if constexpr (HasGiveBack<G>::value) gate.GiveBack(int64_t{1});
      return ResultOf<T>(*rejected);
    }
    return breaker.Run(ticket, f);
  }
};

// Plan B for a limiter's refusal (the breaker counted nothing).
template <typename T, typename Fb>
WithFallbackResult<T, Fb> RefusedWithFallback(const DegradationTrace* upstream,
                                              absl::string_view stage,
                                              const absl::Status& refusal,
                                              Fb& fallback) {
  absl::StatusOr<T> plan_b = RunPlanB<T>(fallback, refusal, stage, [&] {
    return absl::StrCat("the limiter refused the call (", refusal.ToString(),
                        ")");
  });
  if constexpr (kFallibleFallback<T, Fb>) {
    if (!plan_b.ok()) return plan_b.status();
  }
  const DegradeReason why = IsRateLimited(refusal) ? DegradeReason::kRateLimited
                            : IsCallableException(refusal)
                                ? DegradeReason::kException
                                : DegradeReason::kShed;
  StageResult<T> r = StageResult<T>::Fallback(*std::move(plan_b), stage, why);
  if (upstream != nullptr) r.MergeUpstream(*upstream);
  return r;
}

template <typename T, typename Limiter, typename Call, typename Fb>
WithFallbackResult<T, Fb> RunLimitedWithFallback(
    const DegradationTrace* upstream, Limiter& limiter,
    CircuitBreaker<T>& breaker, absl::string_view stage, Call& call,
    Fb& fallback) {
  absl::Status refusal;
  // The common case, a closed breaker: the limiter first.
  absl::StatusOr<T> fresh =
      GatedExecute::Closed(breaker)
          ? GatedExecute::RunLimiterFirst(breaker, limiter, stage, call,
                                          &refusal)
          : GatedExecute::Run(breaker, limiter, stage, call, &refusal);
  if (!refusal.ok()) {
    return RefusedWithFallback<T>(upstream, stage, refusal, fallback);
  }
  return FinishWithFallback<T>(upstream, std::move(fresh), stage, fallback);
}

// Runs `stage_call(items)` through the breaker; on failure applies
// `plan_b(std::move(items))`. `upstream` may be null.
template <typename Item, typename StageCall, typename PlanB>
StageResult<std::vector<Item>> RunListStage(
    const DegradationTrace* upstream,
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    StageCall& stage_call, std::vector<Item> items, PlanB plan_b) {
  // The call sees `items` by const reference, so they are still ours to
  // fall back on.
  // std::as_const: a call that takes the list by mutable reference does not
  // compile, rather than empty or reorder the Plan B it would fall back on.
  auto call = [&stage_call, &items] {
    return std::invoke(stage_call, std::as_const(items));
  };
  auto fallback = [&items, &plan_b]() -> std::vector<Item> {
    return plan_b(std::move(items));
  };
  return RunWithFallback<std::vector<Item>>(upstream, breaker, stage, call,
                                            fallback);
}

}  // namespace detail

template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback) {
  return detail::RunWithFallback<T>(nullptr, breaker, stage, call, fallback);
}

template <typename T, typename Call, typename Fallback>
detail::WithFallbackResult<T, Fallback> WithFallback(UpstreamTrace upstream,
                                                     CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback) {
  return detail::RunWithFallback<T>(&upstream.trace(), breaker, stage, call,
                                    fallback);
}

template <typename T, typename Limiter, typename Call, typename Fallback,
          typename>
detail::WithFallbackResult<T, Fallback> WithFallback(Limiter& limiter,
                                                     CircuitBreaker<T>& breaker,
                                                     absl::string_view stage,
                                                     Call&& call,
                                                     Fallback fallback) {
  return detail::RunLimitedWithFallback<T>(nullptr, limiter, breaker, stage,
                                           call, fallback);
}

template <typename T, typename Limiter, typename Call, typename Fallback,
          typename>
detail::WithFallbackResult<T, Fallback> WithFallback(
    UpstreamTrace upstream, Limiter& limiter, CircuitBreaker<T>& breaker,
    absl::string_view stage, Call&& call, Fallback fallback) {
  return detail::RunLimitedWithFallback<T>(&upstream.trace(), limiter, breaker,
                                           stage, call, fallback);
}

template <typename Candidate, typename ScoreOf>
std::vector<Candidate> OrderByRecallScore(std::vector<Candidate> candidates,
                                          ScoreOf score_of) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&score_of](const Candidate& a, const Candidate& b) {
                     const double sa = static_cast<double>(score_of(a));
                     const double sb = static_cast<double>(score_of(b));
                     if (std::isnan(sa)) return false;
                     if (std::isnan(sb)) return true;
                     return sa > sb;
                   });
  return candidates;
}

template <typename Item, typename IdOf>
std::vector<Item> DedupOnly(std::vector<Item> items, IdOf id_of) {
  using Id = std::decay_t<std::invoke_result_t<IdOf&, const Item&>>;
  // std::unordered_set rather than absl::flat_hash_set: the latter needs a
  // compiled Abseil library that degrade::degrade does not link, and this is
  // the fallback path, not the hot one.
  std::unordered_set<Id> seen;
  seen.reserve(items.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!seen.insert(std::invoke(id_of, items[i])).second) continue;
    if (kept != i) items[kept] = std::move(items[i]);
    ++kept;
  }
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(kept), items.end());
  return items;
}

template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    CircuitBreaker<std::vector<Candidate>>& breaker, absl::string_view stage,
    RankCall&& rank_call, std::vector<Candidate> candidates, ScoreOf score_of) {
  return detail::RunListStage<Candidate>(
      nullptr, breaker, stage, rank_call, std::move(candidates),
      [&score_of](std::vector<Candidate> c) {
        return OrderByRecallScore(std::move(c), score_of);
      });
}

template <typename Candidate, typename RankCall, typename ScoreOf>
StageResult<std::vector<Candidate>> RankOrFallback(
    UpstreamTrace upstream, CircuitBreaker<std::vector<Candidate>>& breaker,
    absl::string_view stage, RankCall&& rank_call,
    std::vector<Candidate> candidates, ScoreOf score_of) {
  return detail::RunListStage<Candidate>(
      &upstream.trace(), breaker, stage, rank_call, std::move(candidates),
      [&score_of](std::vector<Candidate> c) {
        return OrderByRecallScore(std::move(c), score_of);
      });
}

template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    CircuitBreaker<std::vector<Item>>& breaker, absl::string_view stage,
    RerankCall&& rerank_call, std::vector<Item> items, IdOf id_of) {
  return detail::RunListStage<Item>(
      nullptr, breaker, stage, rerank_call, std::move(items),
      [&id_of](std::vector<Item> v) { return DedupOnly(std::move(v), id_of); });
}

template <typename Item, typename RerankCall, typename IdOf>
StageResult<std::vector<Item>> RerankOrFallback(
    UpstreamTrace upstream, CircuitBreaker<std::vector<Item>>& breaker,
    absl::string_view stage, RerankCall&& rerank_call, std::vector<Item> items,
    IdOf id_of) {
  return detail::RunListStage<Item>(
      &upstream.trace(), breaker, stage, rerank_call, std::move(items),
      [&id_of](std::vector<Item> v) { return DedupOnly(std::move(v), id_of); });
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_WITH_FALLBACK_HPP_
