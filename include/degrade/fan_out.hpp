// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: fan_out.hpp
// -----------------------------------------------------------------------------
//
// Recall as a fan-out. Recall is really several routes (collaborative
// filtering, vector search, a "fresh items" route, ...), and one sick route
// should cost the request that route's candidates, not the whole recall
// stage. `FanOutRecall` calls each route behind its own circuit breaker,
// merges the candidates of the routes that answered, and serves the hot list
// only when every route failed:
//
//   Routes answered   Result
//   ---------------   ----------------------------------------------------
//   all               the merged candidates; not a default, no new entries
//   some              the merged candidates of those that answered; not a
//                     default, but partially degraded: the trace names each
//                     missing route as "recall.<route>" with its reason
//   none              the fallback (e.g. `HotList::Fallback()`);
//                     `is_default()`, the trace names "recall" and every
//                     route
//
//   degrade::CircuitBreaker<std::vector<Item>> cf_cb(cf_settings);
//   degrade::CircuitBreaker<std::vector<Item>> vec_cb(vec_settings);
//   std::vector<degrade::RecallRoute<Item>> routes = {
//       {"cf", &cf_cb, [&] { return cf_client.Recall(user); }},
//       {"vec", &vec_cb, [&] { return ann_index.Search(embedding); }},
//   };
//   // At start-up: route names must fit "recall.<route>" in a stage name.
//   if (!degrade::ValidateRecallRoutes(routes).ok()) { /* refuse to start */ }
//
//   absl::StatusOr<degrade::StageResult<std::vector<Item>>> recalled =
//       degrade::FanOutRecall(features.trace(), routes, hot.Fallback(),
//                             degrade::DedupCandidatesById(
//                                 [](const Item& i) { return i.id; }));
//   // While the vector index is down: recalled->is_default() is false and
//   // recalled->trace() is "v1;recall.vec=open" (after any upstream entries).
//
// Merging. The merge policy is a callable taking the answered routes' lists,
// in route order, as `std::vector<std::vector<Candidate>>&&` and returning
// the merged `std::vector<Candidate>`. Two are provided: `ConcatCandidates`
// (the default: concatenation in route order, duplicates kept, for callers
// who dedup later or whose routes cannot overlap) and
// `DedupCandidatesById(id_of)` (concatenation, then repeated ids removed,
// the first occurrence winning, so the earlier route's copy is the one
// kept: list routes in order of trust). A route that answers with an empty
// list has answered (its breaker counted a success); to treat "no
// candidates" as a failure, return an error from the route's call.
//
// Sequential calls. Routes are called one after another, in route order, on
// the caller's thread, so the stage's latency is the sum of the routes'.
// Bound each route with a deadline: pass a `Deadline` into the route's
// client, or wrap a blocking client in `CallWithTimeout` (deadline.hpp)
// inside the route's `call`, so its breaker counts a timeout as a failure.
// A concurrent fan-out can be built on the same pieces, with each route's
// `breaker->Execute(call)` submitted to a deadline.hpp `Executor` and the
// results merged as here; this version keeps to one thread so it adds no
// threads, locks or lifetime rules of its own.
//
// Trace names. A failed route is recorded as the stage "recall.<route>", so a
// route name is 1 to `kMaxRecallRouteNameLength` (8) bytes from
// [A-Za-z0-9_.-]: "recall." takes 7 of a stage name's 15 bytes. Route names
// must also be distinct, or two routes would share one trace entry. Invalid
// routes are refused before any route is called (see `ValidateRecallRoutes`).
// When every route failed, the stage "recall" is recorded first, with the
// reason of the first route's failure (the route-order root cause), then the
// routes; recording "recall" first means a trace that fills up (capacity 8,
// with upstream entries ahead) still names the fallback, and the routes that
// do not fit are counted in `dropped()`.
//
// Nothing here throws. Exceptions thrown by a route's call are caught by its
// breaker and recorded as "exception"; the merge policy, `id_of` and the
// fallback must not throw. The header compiles with -fno-exceptions.
//
// Thread safety: the free functions are thread-safe when the routes' calls,
// the merge policy and the fallback are (the breakers are). The routes are
// only read.

#ifndef DEGRADE_FAN_OUT_HPP_
#define DEGRADE_FAN_OUT_HPP_

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/circuit_breaker.hpp"
#include "degrade/deadline.hpp"
#include "degrade/detail/status_payload.hpp"
#include "degrade/hedge.hpp"
#include "degrade/hot_list.hpp"  // HotList::Fallback(), the usual fallback
#include "degrade/stage_result.hpp"
#include "degrade/version.hpp"
#include "degrade/with_fallback.hpp"

DEGRADE_NAMESPACE_BEGIN

// The stage recorded when every route failed and the fallback served.
inline constexpr absl::string_view kRecallStage = "recall";
// Prefix of a failed route's stage: "recall.<route>".
inline constexpr absl::string_view kRecallRouteStagePrefix = "recall.";
// The longest route name, so that "recall.<route>" is a valid stage name.
inline constexpr std::size_t kMaxRecallRouteNameLength =
    kMaxStageNameLength - kRecallRouteStagePrefix.size();

// RecallRoute<Candidate>
//
// One recall route: its name (in traces as "recall.<name>"), the breaker in
// front of it, and the call, which returns the route's candidates or an
// error (it may also return plain `std::vector<Candidate>`, converted by
// `std::function`). The breaker is not owned and must outlive every
// `FanOutRecall` using the route; one breaker per route, so that one route's
// failures never open another's.
//
// Hedging (hedge.hpp), per route and optional: with `hedge` and `executor`
// set, the route's call runs as `Hedge(*breaker, *hedge, *executor, call)`
// instead of `breaker->Execute(call)`: attempts on the executor, a hedge
// after the policy's delay, the first success the route's answer, each
// attempt admitted and counted by the breaker (a cancelled loser as
// excluded). The call is then copied into the attempts and may still run
// after FanOutRecall has returned, so it must own what it uses (capture by
// value), and the policy, breaker and executor must outlive its tasks.
template <typename Candidate>
struct RecallRoute {
  std::string name;
  CircuitBreaker<std::vector<Candidate>>* breaker = nullptr;
  std::function<absl::StatusOr<std::vector<Candidate>>()> call;
  HedgePolicy* hedge = nullptr;  // not owned; null: not hedged
  Executor* executor = nullptr;  // not owned; required with `hedge`
};

// ValidateRecallRoutes()
//
// OK when `routes` can be fanned out: at least one route; each name 1 to
// `kMaxRecallRouteNameLength` bytes from [A-Za-z0-9_.-] and distinct from
// the others; each breaker non-null; each call non-empty. Otherwise
// INVALID_ARGUMENT naming the first bad route (index and name, escaped) and
// the cause. A hedged route (`hedge` set) needs an executor. Meant for
// start-up checks; `FanOutRecall` runs it too.
//
// Thread-safe.
template <typename Candidate>
absl::Status ValidateRecallRoutes(
    const std::vector<RecallRoute<Candidate>>& routes) {
  if (routes.empty()) {
    return absl::InvalidArgumentError(
        "recall fan-out: no routes (a fan-out needs at least one)");
  }
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const RecallRoute<Candidate>& r = routes[i];
    const auto bad = [&](absl::string_view cause) {
      return absl::InvalidArgumentError(
          absl::StrCat("recall fan-out: route ", i, " '",
                       detail::QuoteForMessage(r.name), "': ", cause));
    };
    // Length first: StageNameProblem would measure against the 15 bytes of a
    // whole stage name, not the 8 left for a route.
    if (r.name.size() > kMaxRecallRouteNameLength) {
      return bad(absl::StrCat(
          "the route name is ", r.name.size(), " bytes, more than the ",
          kMaxRecallRouteNameLength, " that fit in the stage name '",
          kRecallRouteStagePrefix, "<route>'"));
    }
    if (std::string problem = detail::StageNameProblem(r.name);
        !problem.empty()) {
      return bad(absl::StrCat("invalid route name: ", problem));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (routes[j].name == r.name) {
        return bad(absl::StrCat("the name is already used by route ", j));
      }
    }
    if (r.breaker == nullptr) return bad("the breaker is null");
    if (!r.call) return bad("the call is empty");
    if (r.hedge != nullptr && r.executor == nullptr) {
      return bad("the route is hedged but its executor is null");
    }
  }
  return absl::OkStatus();
}

// ConcatCandidates
//
// The default merge policy: the answered routes' candidates concatenated in
// route order, duplicates kept. Thread-safe.
struct ConcatCandidates {
  template <typename Candidate>
  std::vector<Candidate> operator()(
      std::vector<std::vector<Candidate>>&& answers) const {
    // The common case of a single answer (or the first one) is moved, not
    // copied.
    if (answers.empty()) return {};
    std::size_t total = 0;
    for (const auto& a : answers) total += a.size();
    std::vector<Candidate> out = std::move(answers.front());
    out.reserve(total);
    for (std::size_t i = 1; i < answers.size(); ++i) {
      for (auto& c : answers[i]) out.push_back(std::move(c));
    }
    return out;
  }
};

// DedupCandidatesById()
//
// A merge policy: concatenation in route order, then `DedupOnly(id_of)`
// (with_fallback.hpp): repeated ids removed, the first occurrence (the earlier
// route's) winning. `id_of(const Candidate&)` returns an id with a
// `std::hash` specialisation and `==`, and must not throw.
//
// Thread-safe if `id_of` is.
template <typename IdOf>
auto DedupCandidatesById(IdOf id_of) {
  return [id_of = std::move(id_of)](auto&& answers) {
    return DedupOnly(ConcatCandidates()(std::move(answers)), id_of);
  };
}

namespace detail {

// The shared body of the FanOutRecall overloads. `upstream` may be null.
template <typename Candidate, typename Fb, typename Merge>
absl::StatusOr<StageResult<std::vector<Candidate>>> RunFanOutRecall(
    const DegradationTrace* upstream,
    const std::vector<RecallRoute<Candidate>>& routes, Fb& fallback,
    Merge& merge) {
  using List = std::vector<Candidate>;
  // Refused before any call: a bad name would otherwise surface only as a
  // dropped trace entry, on the bad day a route fails.
  if (absl::Status valid = ValidateRecallRoutes(routes); !valid.ok()) {
    return valid;
  }

  std::vector<List> answers;
  answers.reserve(routes.size());
  // Failed routes, in route order: (index, status). Kept whole so the
  // fallback and the error message can name every cause.
  std::vector<std::pair<std::size_t, absl::Status>> failures;
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const RecallRoute<Candidate>& route = routes[i];
    // Execute() rejects without calling while the breaker is open, counts
    // the outcome, and turns a throw into a status.
    absl::StatusOr<List> got =
        route.hedge != nullptr
            ? Hedge(*route.breaker, *route.hedge, *route.executor, route.call)
            : route.breaker->Execute(route.call);
    if (got.ok()) {
      answers.push_back(*std::move(got));
    } else {
      failures.emplace_back(i, got.status());
    }
  }

  const auto record_routes = [&](DegradationTrace* trace) {
    for (const auto& [index, status] : failures) {
      trace->Add(absl::StrCat(kRecallRouteStagePrefix, routes[index].name),
                 ReasonFromStatus(status));
    }
  };

  if (!answers.empty()) {
    // Some route answered: its candidates beat the hot list, even when they
    // are fewer, because they are about this user.
    List merged = std::invoke(merge, std::move(answers));
    StageResult<List> r =
        upstream == nullptr
            ? StageResult<List>::Fresh(std::move(merged))
            : StageResult<List>::From(*upstream, std::move(merged));
    record_routes(r.mutable_trace());
    return r;
  }

  // Every route failed. The fallback sees the first route's status (code
  // and payloads kept, so IsBreakerOpen() and friends still answer) with a
  // message naming every route's failure.
  std::string causes;
  for (const auto& [index, status] : failures) {
    absl::StrAppend(&causes, causes.empty() ? "" : "; ",
                    kRecallRouteStagePrefix, routes[index].name, ": ",
                    status.ToString());
  }
  const absl::Status& first = failures.front().second;
  const absl::Status failure =
      Reworded(first, absl::StrCat("every recall route failed (", causes, ")"));
  const DegradeReason reason = ReasonFromStatus(first);

  absl::StatusOr<List> plan_b = RunPlanB<List>(
      fallback, failure, kRecallStage,
      [&causes] { return absl::StrCat("every route failed (", causes, ")"); });
  if (!plan_b.ok()) return plan_b.status();
  StageResult<List> r =
      StageResult<List>::Fallback(*std::move(plan_b), kRecallStage, reason);
  record_routes(r.mutable_trace());
  if (upstream != nullptr) r.MergeUpstream(*upstream);
  return r;
}

}  // namespace detail

// FanOutRecall()
//
// Calls each route's `call` through its `breaker->Execute` (sequentially, in
// route order; see the file comment) and returns:
//
//   * some route answered: `merge(answers)` (the answered routes' lists in
//     route order), not `is_default()`; each failed route recorded as
//     "recall.<route>" with `ReasonFromStatus(its status)` (open, too_many,
//     exception, timeout, error). With every route answering, the trace is
//     empty.
//   * every route failed: the fallback's list, `is_default()`; the trace
//     names "recall" (the first route's reason) then every route.
//
// `fallback` is, as for `WithFallback`: a value convertible to
// `std::vector<Candidate>`, a callable `()` or `(const absl::Status&)`
// returning the list or `absl::StatusOr` of it (e.g. `HotList::Fallback()`).
// The status it is given has the first route's code and payloads and a
// message naming every route's failure.
//
// Returns an error, without serving anything, when:
//   * `ValidateRecallRoutes(routes)` fails (INVALID_ARGUMENT; no route is
//     called), or
//   * every route failed and the fallback returned an error: the
//     fallback's code, the message naming the stage, every route's
//     failure and the fallback's.
//
// Preconditions: each route's breaker outlives the call. `merge` and
// `fallback` must not throw. `merge` is a callable
// `(std::vector<std::vector<Candidate>>&&) -> std::vector<Candidate>`,
// `ConcatCandidates` by default.
//
// Thread-safe if the routes' calls, `merge` and `fallback` are.
template <typename Candidate, typename Fallback,
          typename Merge = ConcatCandidates>
absl::StatusOr<StageResult<std::vector<Candidate>>> FanOutRecall(
    const std::vector<RecallRoute<Candidate>>& routes, Fallback fallback,
    Merge merge = Merge()) {
  return detail::RunFanOutRecall<Candidate>(nullptr, routes, fallback, merge);
}

// FanOutRecall(upstream, ...)
//
// As above, with the upstream stage's trace merged in first (upstream
// entries ahead of recall's; see `StageResult::MergeUpstream`). `upstream`
// is a `DegradationTrace` or the upstream `StageResult<U>`, whose value is
// not read (see `UpstreamTrace`). A result from answered routes carries the
// upstream trace but is not `is_default()`.
template <typename Candidate, typename Fallback,
          typename Merge = ConcatCandidates>
absl::StatusOr<StageResult<std::vector<Candidate>>> FanOutRecall(
    UpstreamTrace upstream, const std::vector<RecallRoute<Candidate>>& routes,
    Fallback fallback, Merge merge = Merge()) {
  return detail::RunFanOutRecall<Candidate>(&upstream.trace(), routes, fallback,
                                            merge);
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_FAN_OUT_HPP_
