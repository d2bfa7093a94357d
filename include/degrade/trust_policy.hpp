// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: trust_policy.hpp
// -----------------------------------------------------------------------------
//
// Who may claim which request class. Overload control sheds by the class a
// request carries (request_class.hpp), and the class arrives from the
// caller: in gRPC metadata, in an HTTP header. DAGOR and Google's
// criticality propagation assume a trusted front end set it; at an edge,
// or from another team's misbehaving client, a caller that sends
// CRITICAL_PLUS on every request defeats the whole shedding order. A
// `TrustPolicy` decides, per call, the most important criticality the
// caller may claim (its *cap*), from what the transport proved about the
// caller (`PeerIdentity`):
//   * by name: an mTLS peer whose certificate names it (a SAN or, with no
//     SAN, the common name), e.g. "front.ranking.svc";
//   * by address: a peer connecting from an allow-listed IP. Only as
//     trustworthy as the network (TCP makes a forged source address hard to
//     complete a call from, not impossible on a shared segment): for a
//     loopback sidecar or a private link, not for the internet;
//   * by a function the service supplies, which sees the whole identity.
// A claim above the cap is lowered to the cap, never refused (the request
// is still worth serving, at the class it may have) and never silently
// honoured: the caller of Apply() learns it was lowered, and the gRPC
// server counts it (degrade_grpc_server_class_capped_total).
//
// The default is safe: a peer that no rule names may claim at most
// CRITICAL, the class an unlabelled call gets by default, so no caller
// gains anything by forging a class, and CRITICAL_PLUS is reserved to the
// peers a rule names. `TrustPolicy::TrustAll()` restores "believe every
// claim"; it is for a back end only trusted front ends can reach, and it
// must be asked for by name. Only the criticality is capped: the cohort
// orders calls inside a class, and an unlabelled call already gets cohort
// 0, the best.
//
//   degrade::TrustPolicySettings s;
//   s.peers = {{"front.ranking.svc", degrade::Criticality::kCriticalPlus}};
//   s.addresses = {{"127.0.0.1", degrade::Criticality::kCriticalPlus}};
//   absl::StatusOr<degrade::TrustPolicy> trust =
//       degrade::TrustPolicy::Create(std::move(s));
//   if (!trust.ok()) return trust.status();   // names the rule at fault
//   degrade::PeerIdentity peer;               // from the transport
//   peer.authenticated = true;
//   peer.names = {"batch.jobs.svc"};
//   bool lowered = false;
//   degrade::RequestClass rc = trust->Apply(claimed, peer, &lowered);
//   // claimed CRITICAL_PLUS from batch.jobs.svc: rc is CRITICAL, lowered
//
// Thread safety: a TrustPolicy is immutable once built; Apply() and
// CapFor() may be called from any thread, and copies share the rules.

#ifndef DEGRADE_TRUST_POLICY_HPP_
#define DEGRADE_TRUST_POLICY_HPP_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "degrade/detail/invoke.hpp"
#include "degrade/detail/json_text.hpp"
#include "degrade/request_class.hpp"
#include "degrade/version.hpp"

DEGRADE_NAMESPACE_BEGIN

namespace detail {
// An IP address as its family and bytes, so that every spelling of one
// address ("::1", "0:0::0001") is the same key.
using IpKey = std::array<unsigned char, 1 + sizeof(in6_addr)>;
}  // namespace detail

// PeerIdentity
//
// What the transport proved about the caller of one call. `names` count
// only when `authenticated` is true (the transport verified them, e.g. a
// client certificate chained to the server's trusted CA); `address` is
// the peer's IP as text ("127.0.0.1", "::1"), never a proof of identity.
struct PeerIdentity {
  bool authenticated = false;
  // The certificate's subject alternative names (DNS, URI, e-mail), or its
  // common name when it has none.
  std::vector<std::string> names;
  std::string address;
};

// One allow-list entry: a peer name or an address, and the most important
// criticality it may claim.
struct TrustRule {
  std::string match;
  Criticality cap = Criticality::kCriticalPlus;
};

// TrustPolicySettings
struct TrustPolicySettings {
  // Authenticated peer names and their caps. A peer with several names
  // gets the most important cap among them. A rule may also cap a peer
  // below `others` (a batch client pinned to SHEDDABLE).
  std::vector<TrustRule> peers;
  // Peer addresses (one IPv4 or IPv6 address each, compared in canonical
  // form; Create() refuses a port, a range or a host name) and their caps;
  // asked only for a peer that no name rule matched.
  std::vector<TrustRule> addresses;
  // Asked first when set: the cap for `peer`, or nullopt to fall through
  // to the rules (so does one that throws). It runs on the serving
  // thread of every call, so it should be quick.
  std::function<std::optional<Criticality>(const PeerIdentity& peer)> decide;
  // The cap of a peer nothing above matched: CRITICAL, what an unlabelled
  // call gets by default. (grpc::ServerCall also ranks such a peer's claim
  // no higher than its default class, should that be lower.)
  Criticality others = Criticality::kCritical;
};

// TrustPolicy
//
// Immutable and cheap to copy (copies share the rules).
class TrustPolicy {
 public:
  // The safe default: every peer capped at CRITICAL.
  TrustPolicy() : TrustPolicy(std::make_shared<Rules>()) {}

  // Validates `settings`: INVALID_ARGUMENT naming the rule for an empty or
  // over-long match (more than 1,024 bytes), an address rule that is not
  // one IPv4 or IPv6 address, a duplicate (two spellings of one address
  // included), or a criticality out of range.
  static absl::StatusOr<TrustPolicy> Create(TrustPolicySettings settings);

  // Every claim believed. For a back end that only trusted front ends can
  // reach; never for a server at an edge.
  static TrustPolicy TrustAll() {
    auto rules = std::make_shared<Rules>();
    rules->others = Criticality::kCriticalPlus;
    return TrustPolicy(std::move(rules));
  }

  // The most important criticality `peer` may claim.
  Criticality CapFor(const PeerIdentity& peer) const;

  // The class to admit `claimed` by: its criticality lowered to the cap
  // when above it (the cohort kept). `*lowered` (when non-null) says
  // whether it was.
  RequestClass Apply(const RequestClass& claimed, const PeerIdentity& peer,
                     bool* lowered = nullptr) const {
    const Criticality cap = CapFor(peer);
    RequestClass out = claimed;
    const bool above =
        static_cast<int>(claimed.criticality) < static_cast<int>(cap);
    if (above) out.criticality = cap;
    if (lowered != nullptr) *lowered = above;
    return out;
  }

  // Whether every claim is believed (TrustAll, or `others` CRITICAL_PLUS
  // with no rule and no function that could lower a peer below it): a
  // server may then skip the policy.
  bool trusts_all() const {
    return rules_->others == Criticality::kCriticalPlus && !reads_peer();
  }

  // The cap of a peer that no rule or function places elsewhere.
  Criticality others() const { return rules_->others; }

  // Whether the cap can differ from peer to peer (a name or address rule,
  // or a function). When not, every peer gets `others`, and a server may
  // apply the policy to an empty PeerIdentity without reading the peer.
  bool reads_peer() const {
    return static_cast<bool>(rules_->decide) || !rules_->peers.empty() ||
           !rules_->addresses.empty();
  }

 private:
  struct Rules {
    absl::flat_hash_map<std::string, Criticality> peers;
    absl::flat_hash_map<detail::IpKey, Criticality> addresses;
    std::function<std::optional<Criticality>(const PeerIdentity&)> decide;
    Criticality others = Criticality::kCritical;
  };
  explicit TrustPolicy(std::shared_ptr<const Rules> rules)
      : rules_(std::move(rules)) {}

  std::shared_ptr<const Rules> rules_;
};

// ---- Implementation --------------------------------------------------------

namespace detail {

// `text` as exactly one IPv4 or IPv6 address, into `key`; false for
// anything else: a range, a host name or an address with its port never
// matches a peer, so a rule written that way is refused rather than
// silently never applying. Parses only (no formatting, no allocation): it
// runs per call.
inline bool ParseIp(absl::string_view text, IpKey* key) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return false;
  char in[INET6_ADDRSTRLEN];
  text.copy(in, text.size());
  in[text.size()] = '\0';
  key->fill(0);
  if (::inet_pton(AF_INET, in, key->data() + 1) == 1) {
    (*key)[0] = 4;
    return true;
  }
  if (::inet_pton(AF_INET6, in, key->data() + 1) == 1) {
    (*key)[0] = 6;
    return true;
  }
  return false;
}

// Adds `rules` to `into` (keyed by name, or by IpKey for addresses).
template <typename Key>
absl::Status AddTrustRules(const std::vector<TrustRule>& rules,
                           absl::string_view field,
                           absl::flat_hash_map<Key, Criticality>* into) {
  constexpr std::size_t kMaxMatch = 1024;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const TrustRule& r = rules[i];
    const std::string where =
        absl::StrCat("trust policy: ", field, "[", i, "]");
    if (r.match.empty() || r.match.size() > kMaxMatch) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": match must be 1 to ", kMaxMatch,
                       " bytes, got ", r.match.size()));
    }
    if (static_cast<std::size_t>(r.cap) >= kNumCriticalities) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": cap ", static_cast<int>(r.cap),
                       " is not a criticality (0..3)"));
    }
    Key match;
    if constexpr (std::is_same_v<Key, IpKey>) {
      if (!ParseIp(r.match, &match)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": \"", Abbreviated(r.match, 64),
            "\" is not one IPv4 or IPv6 address (no port, range or host "
            "name: a rule matches the peer's address exactly)"));
      }
    } else {
      match = r.match;
    }
    if (!into->emplace(std::move(match), r.cap).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": \"", Abbreviated(r.match, 64), "\" is listed twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace detail

inline absl::StatusOr<TrustPolicy> TrustPolicy::Create(
    TrustPolicySettings settings) {
  auto rules = std::make_shared<Rules>();
  absl::Status s =
      detail::AddTrustRules(settings.peers, "peers", &rules->peers);
  if (!s.ok()) return s;
  s = detail::AddTrustRules(settings.addresses, "addresses", &rules->addresses);
  if (!s.ok()) return s;
  if (static_cast<std::size_t>(settings.others) >= kNumCriticalities) {
    return absl::InvalidArgumentError(
        absl::StrCat("trust policy: others ", static_cast<int>(settings.others),
                     " is not a criticality (0..3)"));
  }
  rules->decide = std::move(settings.decide);
  rules->others = settings.others;
  return TrustPolicy(std::move(rules));
}

inline Criticality TrustPolicy::CapFor(const PeerIdentity& peer) const {
  const Rules& r = *rules_;
  if (r.decide) {
    // A function that throws, or answers out of range, decides nothing:
    // the rules below still apply.
    std::optional<Criticality> c = detail::InvokeOr(
        [&] { return r.decide(peer); },
        [](absl::string_view) { return std::optional<Criticality>(); });
    if (c.has_value() && static_cast<std::size_t>(*c) < kNumCriticalities) {
      return *c;
    }
  }
  if (peer.authenticated && !r.peers.empty()) {
    bool found = false;
    Criticality best = Criticality::kSheddable;
    for (const std::string& name : peer.names) {
      auto it = r.peers.find(name);
      if (it == r.peers.end()) continue;
      if (!found || static_cast<int>(it->second) < static_cast<int>(best)) {
        best = it->second;
      }
      found = true;
    }
    if (found) return best;
  }
  if (!peer.address.empty() && !r.addresses.empty()) {
    // Compared in canonical form, as the rules were stored.
    detail::IpKey ip;
    auto it = detail::ParseIp(peer.address, &ip) ? r.addresses.find(ip)
                                                 : r.addresses.end();
    if (it != r.addresses.end()) return it->second;
  }
  return r.others;
}

DEGRADE_NAMESPACE_END

#endif  // DEGRADE_TRUST_POLICY_HPP_
