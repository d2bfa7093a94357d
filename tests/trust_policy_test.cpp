// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// degrade/trust_policy.hpp: who may claim which class. The default caps
// everyone at CRITICAL; a name counts only when authenticated; an address
// rule is asked only when no name rule matched; a function decides first
// and falls through when it throws or answers out of range; bad rules are
// refused with the rule named; a claim is lowered, never raised.

#include "degrade/trust_policy.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "degrade/request_class.hpp"
#include "gtest/gtest.h"

namespace degrade {
namespace DEGRADE_TEST_UNIT {

RequestClass Claim(Criticality c, uint8_t cohort = 3) {
  RequestClass rc;
  rc.criticality = c;
  rc.cohort = cohort;
  return rc;
}

PeerIdentity Named(std::string name, bool authenticated = true) {
  PeerIdentity p;
  p.authenticated = authenticated;
  p.names = {std::move(name)};
  p.address = "10.0.0.9";
  return p;
}

TEST(TrustPolicyTest, TheDefaultCapsEveryoneAtCritical) {
  const TrustPolicy policy;
  bool lowered = false;
  RequestClass rc =
      policy.Apply(Claim(Criticality::kCriticalPlus, 7), Named("x"), &lowered);
  EXPECT_TRUE(lowered);
  EXPECT_EQ(rc.criticality, Criticality::kCritical);
  EXPECT_EQ(rc.cohort, 7);  // the cohort is kept
  rc = policy.Apply(Claim(Criticality::kCritical), Named("x"), &lowered);
  EXPECT_FALSE(lowered);
  EXPECT_EQ(rc.criticality, Criticality::kCritical);
  rc = policy.Apply(Claim(Criticality::kSheddable), PeerIdentity{}, &lowered);
  EXPECT_FALSE(lowered);  // a claim is lowered, never raised
  EXPECT_EQ(rc.criticality, Criticality::kSheddable);
  EXPECT_FALSE(policy.trusts_all());
  EXPECT_TRUE(TrustPolicy::TrustAll().trusts_all());
  EXPECT_EQ(TrustPolicy::TrustAll().CapFor(PeerIdentity{}),
            Criticality::kCriticalPlus);
}

TEST(TrustPolicyTest, ANameCountsOnlyWhenTheTransportVerifiedIt) {
  TrustPolicySettings s;
  s.peers = {{"front.mesh", Criticality::kCriticalPlus}};
  const TrustPolicy policy = TrustPolicy::Create(s).value();
  EXPECT_EQ(policy.CapFor(Named("front.mesh")), Criticality::kCriticalPlus);
  EXPECT_EQ(policy.CapFor(Named("front.mesh", /*authenticated=*/false)),
            Criticality::kCritical);
  EXPECT_EQ(policy.CapFor(Named("front.mesh.evil")), Criticality::kCritical);
  EXPECT_EQ(policy.CapFor(Named("FRONT.MESH")), Criticality::kCritical);
}

TEST(TrustPolicyTest, APeerWithSeveralNamesGetsItsBestCapAndRulesMayDemote) {
  TrustPolicySettings s;
  s.peers = {{"batch.mesh", Criticality::kSheddable},
             {"front.mesh", Criticality::kCriticalPlus}};
  const TrustPolicy policy = TrustPolicy::Create(s).value();
  PeerIdentity both = Named("batch.mesh");
  both.names.push_back("front.mesh");
  EXPECT_EQ(policy.CapFor(both), Criticality::kCriticalPlus);
  // A rule can pin a noisy client below what unnamed peers get.
  bool lowered = false;
  const RequestClass rc = policy.Apply(Claim(Criticality::kCritical),
                                       Named("batch.mesh"), &lowered);
  EXPECT_TRUE(lowered);
  EXPECT_EQ(rc.criticality, Criticality::kSheddable);
}

TEST(TrustPolicyTest, AnAddressRuleIsAskedOnlyWhenNoNameMatched) {
  TrustPolicySettings s;
  s.peers = {{"batch.mesh", Criticality::kSheddablePlus}};
  s.addresses = {{"10.0.0.9", Criticality::kCriticalPlus}};
  const TrustPolicy policy = TrustPolicy::Create(s).value();
  EXPECT_EQ(policy.CapFor(Named("batch.mesh")), Criticality::kSheddablePlus);
  EXPECT_EQ(policy.CapFor(Named("other")), Criticality::kCriticalPlus);
  PeerIdentity elsewhere = Named("other");
  elsewhere.address = "10.0.0.10";
  EXPECT_EQ(policy.CapFor(elsewhere), Criticality::kCritical);
  EXPECT_EQ(policy.CapFor(PeerIdentity{}), Criticality::kCritical);
}

TEST(TrustPolicyTest, AFunctionDecidesFirstAndFallsThroughWhenItCannot) {
  TrustPolicySettings s;
  s.addresses = {{"10.0.0.9", Criticality::kSheddablePlus}};
  s.others = Criticality::kSheddable;
  s.decide = [](const PeerIdentity& p) -> std::optional<Criticality> {
    if (p.names.empty()) return std::nullopt;
    if (p.names[0] == "throws") throw std::runtime_error("lookup failed");
    if (p.names[0] == "garbage") return static_cast<Criticality>(9);
    if (p.names[0] == "vip") return Criticality::kCriticalPlus;
    return std::nullopt;
  };
  const TrustPolicy policy = TrustPolicy::Create(s).value();
  EXPECT_FALSE(policy.trusts_all());
  EXPECT_EQ(policy.CapFor(Named("vip")), Criticality::kCriticalPlus);
  // Falling through: the address rule, then `others`.
  EXPECT_EQ(policy.CapFor(Named("nobody")), Criticality::kSheddablePlus);
  EXPECT_EQ(policy.CapFor(Named("throws")), Criticality::kSheddablePlus);
  EXPECT_EQ(policy.CapFor(Named("garbage")), Criticality::kSheddablePlus);
  PeerIdentity none;
  EXPECT_EQ(policy.CapFor(none), Criticality::kSheddable);
}

TEST(TrustPolicyTest, BadRulesAreRefusedNamingTheRule) {
  TrustPolicySettings empty_match;
  empty_match.peers = {{"", Criticality::kCriticalPlus}};
  absl::Status s = TrustPolicy::Create(empty_match).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("peers[0]"), absl::string_view::npos) << s;

  TrustPolicySettings twice;
  twice.addresses = {{"10.0.0.1", Criticality::kCritical},
                     {"10.0.0.1", Criticality::kCriticalPlus}};
  s = TrustPolicy::Create(twice).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("addresses[1]"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("twice"), absl::string_view::npos) << s;

  TrustPolicySettings out_of_range;
  out_of_range.peers = {{"a", static_cast<Criticality>(4)}};
  EXPECT_EQ(TrustPolicy::Create(out_of_range).status().code(),
            absl::StatusCode::kInvalidArgument);
  TrustPolicySettings bad_others;
  bad_others.others = static_cast<Criticality>(200);
  EXPECT_EQ(TrustPolicy::Create(bad_others).status().code(),
            absl::StatusCode::kInvalidArgument);
  TrustPolicySettings too_long;
  too_long.peers = {{std::string(1025, 'a'), Criticality::kCritical}};
  EXPECT_EQ(TrustPolicy::Create(too_long).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TrustPolicyTest, CopiesShareTheRules) {
  TrustPolicySettings s;
  s.peers = {{"front.mesh", Criticality::kCriticalPlus}};
  const TrustPolicy a = TrustPolicy::Create(s).value();
  TrustPolicy b;
  b = a;
  EXPECT_EQ(b.CapFor(Named("front.mesh")), Criticality::kCriticalPlus);
}

}  // namespace DEGRADE_TEST_UNIT
}  // namespace degrade
