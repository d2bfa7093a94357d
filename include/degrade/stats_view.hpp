// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: stats_view.hpp
// -----------------------------------------------------------------------------
//
// The component's side of the telemetry seam (telemetry.hpp is the hub's).
// A component that wants to be exported keeps its counters anyway; what it
// offers a `Telemetry` is a read-only *view* of them, and what it keeps in
// return is a `TelemetryAttachment`, which it destroys before itself:
//
//   * `StatsView<S>`: a name and a snapshot `S stats()`, the whole interface
//     of most components' views (`AdmissionView`, `QueueView`, `HedgeView`,
//     `HotListView`, ... are aliases of it);
//   * `ComponentView`: the base of every `StatsView`, which a telemetry
//     narrows with `As<S>()`. A component that is not one of the kinds
//     `Telemetry` names attaches through `Telemetry::AttachComponent`, so
//     adding a component adds no virtual to the hub;
//   * `TelemetryAttachment`: the base of whatever a telemetry hands back.
//
// A component declares its stats struct and alias beside itself
// (`overload_stats.hpp`, `retry_stats.hpp`, `hedge_stats.hpp`,
// `hot_list_stats.hpp`), holds a `detail::OwnerView` member, and attaches in
// its constructor with `detail::Attach` (telemetry.hpp) at the hub's one
// generic entry, `Telemetry::AttachComponent`:
//
//   struct PoolStats { uint64_t accepted = 0; uint64_t refused = 0; };
//   using PoolView = degrade::StatsView<PoolStats>;
//
//   class Pool {
//    public:
//     explicit Pool(degrade::Telemetry* metrics)
//         : telemetry_(degrade::detail::Attach(
//               metrics, &degrade::Telemetry::AttachComponent, view_)) {}
//     const std::string& name() const;
//     PoolStats stats() const;              // read by a scrape, any thread
//    private:
//     const degrade::detail::OwnerView<Pool, PoolStats> view_{this};
//     std::unique_ptr<degrade::TelemetryAttachment> telemetry_;  // last
//   };
//
// and the registry learns to write it in one place
// (`detail/metrics/component_writers.hpp`).
//
// Thread safety: a view's functions may be called from any thread while its
// attachment lives, and never change the component. `OwnerView` adds no
// state of its own: it is as thread-safe as its owner's `name()` and
// `stats()`.

#ifndef DEGRADE_STATS_VIEW_HPP_
#define DEGRADE_STATS_VIEW_HPP_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

// TelemetryAttachment
//
// What a telemetry keeps for one component; the component owns it and
// destroys it before itself. Destroying it must stop every use of the view
// (waiting for a read in progress, if need be). Thread safety: owned by one
// component; its destructor runs once, on the thread destroying it.
class TelemetryAttachment {
 public:
  virtual ~TelemetryAttachment() = default;
};

template <class S>
class StatsView;

namespace detail {

// What `ComponentView::As` compares to tell stats types apart without RTTI
// (services build with -fno-rtti too): the compiler's own spelling of this
// function, which names `S`. Not the address of a static per type: a
// service built with -fvisibility=hidden has one copy of every inline
// static per shared object, so a component made in one and a registry in
// another would never match. Within one shared object the pointers are
// equal (one instantiation), and the text is compared only across them. A
// type with internal linkage (an anonymous namespace, a local class) is
// never matched by text: two such types may be spelled alike in two files.
template <class S>
const char* StatsKey() {
#if defined(_MSC_VER) && !defined(__clang__)
  return __FUNCSIG__;
#else
  return __PRETTY_FUNCTION__;
#endif
}

inline bool SameStatsKey(const char* a, const char* b) {
  if (a == b) return true;
  const absl::string_view x(a);
  if (x != absl::string_view(b)) return false;
  // GCC: "... [with S = ns::T]", Clang: "... [S = ns::T]". Another
  // spelling is matched by address only.
  const std::size_t at = x.find("S = ");
  if (at == absl::string_view::npos) return false;
  const absl::string_view type = x.substr(at + 4);
  // Only a type named with its namespace: Clang spells a local class by its
  // bare name. Never one with internal linkage: GCC writes "{anonymous}",
  // Clang "(anonymous namespace)", and a local class "f()::Local".
  const auto has = [type](absl::string_view part) {
    return type.find(part) != absl::string_view::npos;
  };
  return has("::") && !has("{anonymous}") && !has("anonymous namespace") &&
         !has(")::");
}

}  // namespace detail

// ComponentView
//
// Any component's view, whatever its stats type: what
// `Telemetry::AttachComponent` receives. A telemetry narrows it to the
// stats types it knows with `As<S>()` and ignores the rest, so a new
// component reaches every telemetry without a new virtual in `Telemetry`.
//
// Thread safety: as the `StatsView` it is. Only `StatsView<S>` derives
// from it (its constructor is private to that template).
class ComponentView {
 public:
  // The component's name, as its options gave it (a registry may export it
  // under a unique variant, "name#2").
  virtual const std::string& name() const = 0;

  // This view as a `StatsView<S>`, or null when its stats are of another
  // type.
  template <class S>
  const StatsView<S>* As() const {
    if (!detail::SameStatsKey(stats_key(), detail::StatsKey<S>())) {
      return nullptr;
    }
    return static_cast<const StatsView<S>*>(this);
  }

 protected:
  ~ComponentView() = default;

 private:
  template <class>
  friend class StatsView;
  ComponentView() = default;
  virtual const char* stats_key() const = 0;
};

// StatsView<S>
//
// A component as its telemetry may read it: its name and a snapshot of its
// counters. `S` is a plain value (copyable, default-constructible).
//
// Thread safety: both functions are thread-safe and never change the
// component. REQUIRES: called only while the attachment the view was
// offered with lives. Not destroyed through this type (the protected,
// non-virtual destructor): the component owns its view.
template <class S>
class StatsView : public ComponentView {
 public:
  using Stats = S;

  // A snapshot of the component's counters; taken without blocking the
  // component's hot path for long.
  virtual S stats() const = 0;

 protected:
  StatsView() = default;
  ~StatsView() = default;

 private:
  const char* stats_key() const final { return detail::StatsKey<S>(); }
};

namespace detail {

// OwnerView<Owner, S, Base>
//
// The view a component holds as a member: forwards `name()` to
// `owner->name()` and `stats()` to `(owner->*read)()` (by default
// `Owner::stats`, which must then be public). `Base` is `StatsView<S>` or an
// interface derived from it that adds functions (`ManagerView`); a derived
// class implements those and reads the owner through `owner()`.
//
// REQUIRES: `owner` outlives the view, and the view is only read while the
// owner is complete (the owner attaches last in its constructor and detaches
// first in its destructor). Thread-safe as `Owner::name()` and `read` are.
template <class Owner, class S, class Base = StatsView<S>>
class OwnerView : public Base {
 public:
  using Read = S (Owner::*)() const;

  explicit OwnerView(const Owner* owner)
      : owner_(owner), read_(&Owner::stats) {}
  OwnerView(const Owner* owner, Read read) : owner_(owner), read_(read) {}

  OwnerView(const OwnerView&) = delete;
  OwnerView& operator=(const OwnerView&) = delete;

  const std::string& name() const final { return owner_->name(); }
  S stats() const final { return (owner_->*read_)(); }

 protected:
  const Owner* owner() const { return owner_; }

 private:
  const Owner* const owner_;
  const Read read_;
};

}  // namespace detail

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_STATS_VIEW_HPP_
