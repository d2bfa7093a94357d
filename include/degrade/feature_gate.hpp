// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: feature_gate.hpp
// -----------------------------------------------------------------------------
//
// The request-path side of degradation: a `FeatureGate` says whether one
// non-core feature (a cache write, a debug log, A/B tagging) may run right
// now, and `WhenEnabled` wraps a function so that it runs only while its
// gate is on and otherwise returns a fallback. A `DegradationManager`
// (degradation_manager.hpp) issues the gates and flips them as its level
// moves; code that is handed a gate and only asks needs just this header.
//
// `enabled()` is one relaxed atomic load with no branch, so a gate can sit
// on the hottest path. The answer is advisory: the level may change the
// moment it returns, and a request that saw "on" may finish the feature
// after the manager switched it off. Degradation sheds load statistically;
// it is not a lock.
//
//   degrade::FeatureGate cache = manager.Feature("semantic_cache");
//   if (cache.enabled()) cache_client.Write(key, value);
//
//   auto tag = degrade::WhenEnabled(
//       manager.Feature("ab_tag"),
//       [](const Request& r) { return Experiment::Tag(r); },
//       /*fallback=*/[] { return Tag::kControl; });
//   Tag t = tag(request);  // Tag::kControl while ab_tag is switched off
//
// The fallback of `WhenEnabled` (and of `When`, degradation_manager.hpp) is
// a value convertible to the wrapped function's result, or a callable taking
// no arguments that returns one. Unlike `WithFallback` (fallback.hpp), whose
// fallback may take the `const absl::Status&` that made the call fail, a
// switched-off gate has no failure to hand over.
//
// Thread safety: gates are immutable values; any number of threads may copy
// them and call `enabled()` while the manager changes levels. The wrappers
// are as thread-safe as the function and fallback they hold (both are called
// through const references).

#ifndef DEGRADE_FEATURE_GATE_HPP_
#define DEGRADE_FEATURE_GATE_HPP_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {
class GateTable;
}  // namespace detail

// FeatureGate
//
// A handle on one feature's on/off switch. `enabled()` is one relaxed atomic
// load: no lock, no allocation, no string hashing. Cheap to copy. A
// default-constructed gate is always enabled.
//
// Thread-safe: `enabled()`, `name()` and copies may run on any thread,
// concurrently with the manager flipping the switch. The relaxed load orders
// nothing else: a gate says whether to do optional work, it does not publish
// data. The result may be stale the moment it returns.
// REQUIRES: the manager that issued the gate outlives it.
class FeatureGate {
 public:
  FeatureGate() = default;

  // One relaxed load and nothing else: a default gate points at a shared
  // always-on switch rather than at null, so there is no branch to pay.
  bool enabled() const { return slot_->load(std::memory_order_relaxed); }
  explicit operator bool() const { return enabled(); }
  // The feature's name; empty for a default-constructed gate.
  absl::string_view name() const {
    return name_ == nullptr ? absl::string_view() : absl::string_view(*name_);
  }

 private:
  friend class detail::GateTable;
  FeatureGate(const std::atomic<bool>* slot, const std::string* name)
      : slot_(slot), name_(name) {}

  static const std::atomic<bool>* AlwaysOn() {
    static const std::atomic<bool> on{true};
    return &on;
  }

  const std::atomic<bool>* slot_ = AlwaysOn();
  const std::string* name_ = nullptr;
};

// WhenEnabled(gate, f, fallback)
//
// Returns a callable that runs `f` (with the caller's arguments) while
// `gate.enabled()`, and otherwise returns `fallback`: a value convertible to
// f's result, or the result of calling it if it is a callable taking no
// arguments. Omit `fallback` for functions returning void: they are skipped.
// The check is one atomic load, as current as `enabled()`. Thread-safe as
// far as `f` and `fallback` are (the wrapper calls both through const
// references). REQUIRES: the gate's manager outlives the wrapper.
template <typename F, typename Fallback>
auto WhenEnabled(FeatureGate gate, F f, Fallback fallback);
template <typename F>
auto WhenEnabled(FeatureGate gate, F f);

// ---- Implementation details ----

namespace detail {

// Stands for "no fallback": only a function returning void may be wrapped
// without one.
struct NoFallback {};

// Produces the fallback result of type R from the fallback of a `When` or
// `WhenEnabled` wrapper: a value convertible to R, or a callable taking no
// arguments that returns one. (WithFallback's resolver, fallback.hpp, also
// accepts a callable taking the failure status; a gate has none.)
// Always false, but only once instantiated: the static_asserts below fire
// for the wrapper that was called with an unusable fallback, not for all.
template <typename>
inline constexpr bool kUnusableFallback = false;

template <typename R, typename Fallback>
R FallbackResult(const Fallback& fallback) {
  if constexpr (std::is_invocable_v<const Fallback&>) {
    static_assert(
        std::is_convertible_v<std::invoke_result_t<const Fallback&>, R>,
        "degrade::When / WhenEnabled: the fallback callable must return a "
        "value convertible to the wrapped function's result");
    return std::invoke(fallback);
  } else if constexpr (std::is_convertible_v<const Fallback&, R>) {
    return fallback;
  } else if constexpr (std::is_same_v<Fallback, NoFallback>) {
    static_assert(kUnusableFallback<R>,
                  "degrade::When / WhenEnabled: a function that returns a "
                  "value needs a fallback; only functions returning void may "
                  "omit it");
  } else if constexpr (std::is_invocable_v<const Fallback&,
                                           const absl::Status&>) {
    static_assert(kUnusableFallback<R>,
                  "degrade::When / WhenEnabled: the fallback must take no "
                  "arguments: a switched-off gate has no failure status to "
                  "pass (a callable taking const absl::Status& is a "
                  "WithFallback fallback)");
  } else {
    static_assert(kUnusableFallback<R>,
                  "degrade::When / WhenEnabled: the fallback must be a value "
                  "convertible to the wrapped function's result, or a "
                  "callable taking no arguments that returns one");
  }
}

// The wrapper `When` and `WhenEnabled` return: `gate()` says whether `f`
// may run.
template <typename Gate, typename F, typename Fallback>
class Guarded {
 public:
  Guarded(Gate gate, F f, Fallback fallback)
      : gate_(std::move(gate)),
        f_(std::move(f)),
        fallback_(std::move(fallback)) {}

  template <typename... Args>
  auto operator()(Args&&... args) const
      -> std::invoke_result_t<const F&, Args&&...> {
    using R = std::invoke_result_t<const F&, Args&&...>;
    if (gate_()) return std::invoke(f_, std::forward<Args>(args)...);
    if constexpr (std::is_void_v<R>) {
      return;
    } else {
      return FallbackResult<R>(fallback_);
    }
  }

 private:
  Gate gate_;
  F f_;
  Fallback fallback_;
};

template <typename Gate, typename F, typename Fallback>
Guarded<Gate, F, Fallback> MakeGuarded(Gate gate, F f, Fallback fallback) {
  return Guarded<Gate, F, Fallback>(std::move(gate), std::move(f),
                                    std::move(fallback));
}

// The switches gates point into: one per feature name, created on first use
// and never moved or removed while the table lives, since gates keep
// pointers to them. Thread-compatible: its owner (a DegradationManager)
// calls it under its lock, while gates read the switches, atomics, without
// one.
class GateTable {
 public:
  // The gate of feature `name`; the switch of a feature new to the table
  // starts as `on`.
  FeatureGate Get(absl::string_view name, bool on) {
    auto it = slots_.find(std::string(name));
    if (it == slots_.end()) {
      auto slot = std::make_unique<Slot>();
      slot->name = std::string(name);
      slot->on.store(on, std::memory_order_relaxed);
      it = slots_.emplace(slot->name, std::move(slot)).first;
    }
    return FeatureGate(&it->second->on, &it->second->name);
  }

  // Sets every switch to `on(name)`.
  template <typename On>
  void SetAll(const On& on) {
    for (auto& [name, slot] : slots_) {
      slot->on.store(on(name), std::memory_order_relaxed);
    }
  }

  // Every feature, by name, and whether it is on.
  std::vector<std::pair<std::string, bool>> Snapshot() const {
    std::vector<std::pair<std::string, bool>> out;
    for (const auto& [name, slot] : slots_) {
      out.emplace_back(name, slot->on.load(std::memory_order_relaxed));
    }
    return out;
  }

 private:
  struct Slot {
    std::string name;
    std::atomic<bool> on{true};
  };
  std::map<std::string, std::unique_ptr<Slot>> slots_;
};

}  // namespace detail

template <typename F, typename Fallback>
auto WhenEnabled(FeatureGate gate, F f, Fallback fallback) {
  return detail::MakeGuarded([gate] { return gate.enabled(); }, std::move(f),
                             std::move(fallback));
}

template <typename F>
auto WhenEnabled(FeatureGate gate, F f) {
  return WhenEnabled(gate, std::move(f), detail::NoFallback{});
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_FEATURE_GATE_HPP_
