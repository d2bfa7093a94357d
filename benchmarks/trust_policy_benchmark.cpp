// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// What the trust policy adds to a call that claims a class: TrustPolicy::
// Apply with the default policy (no peer read), with 100 name rules and a
// peer of two names (an mTLS front end), and with 100 address rules and an
// IPv4 or an IPv6 peer (the address is put in canonical form per call),
// against decoding the claim itself (DecodeRequestClass), which every such
// call already pays. Apply must allocate nothing.
// Compare with: python3 benchmarks/trust_policy_ratios.py <binary>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "alloc_counter.hpp"
#include "degrade/request_class.hpp"
#include "degrade/trust_policy.hpp"
#include "run_counted.hpp"

namespace {

using degrade_bench::RunCounted;

constexpr int kRules = 100;

const degrade::TrustPolicy& ByName() {
  static const auto* p = [] {
    degrade::TrustPolicySettings s;
    for (int i = 0; i < kRules; ++i) {
      s.peers.push_back({absl::StrCat("front-", i, ".ranking.svc"),
                         degrade::Criticality::kCriticalPlus});
    }
    auto made = degrade::TrustPolicy::Create(std::move(s));
    if (!made.ok()) std::abort();
    return new degrade::TrustPolicy(*std::move(made));
  }();
  return *p;
}

const degrade::TrustPolicy& ByAddress() {
  static const auto* p = [] {
    degrade::TrustPolicySettings s;
    for (int i = 0; i < kRules; ++i) {
      s.addresses.push_back({absl::StrCat("10.0.", i, ".7"),
                             degrade::Criticality::kCriticalPlus});
    }
    s.addresses.push_back({"fd00::7", degrade::Criticality::kCriticalPlus});
    auto made = degrade::TrustPolicy::Create(std::move(s));
    if (!made.ok()) std::abort();
    return new degrade::TrustPolicy(*std::move(made));
  }();
  return *p;
}

degrade::RequestClass Claim() {
  degrade::RequestClass rc;
  rc.criticality = degrade::Criticality::kCriticalPlus;
  rc.cohort = 9;
  return rc;
}

void BM_DecodeClaim(benchmark::State& state) {
  const std::string text = "CRITICAL_PLUS:9";
  RunCounted(state, [&] {
    auto rc = degrade::DecodeRequestClass(text);
    benchmark::DoNotOptimize(rc);
  });
}

void BM_ApplyDefault(benchmark::State& state) {
  const degrade::TrustPolicy policy;
  const degrade::PeerIdentity nobody;
  const degrade::RequestClass claim = Claim();
  RunCounted(state, [&] {
    auto rc = policy.Apply(claim, nobody);
    benchmark::DoNotOptimize(rc);
  });
}

void BM_ApplyByName(benchmark::State& state) {
  const degrade::TrustPolicy& policy = ByName();
  degrade::PeerIdentity peer;
  peer.authenticated = true;
  peer.names = {"front-42.ranking.svc", "spiffe://mesh/ranking/front"};
  peer.address = "10.1.2.3";
  const degrade::RequestClass claim = Claim();
  RunCounted(state, [&] {
    auto rc = policy.Apply(claim, peer);
    benchmark::DoNotOptimize(rc);
  });
}

void BM_ApplyByAddressV4(benchmark::State& state) {
  const degrade::TrustPolicy& policy = ByAddress();
  degrade::PeerIdentity peer;
  peer.address = "10.0.42.7";
  const degrade::RequestClass claim = Claim();
  RunCounted(state, [&] {
    auto rc = policy.Apply(claim, peer);
    benchmark::DoNotOptimize(rc);
  });
}

void BM_ApplyByAddressV6(benchmark::State& state) {
  const degrade::TrustPolicy& policy = ByAddress();
  degrade::PeerIdentity peer;
  peer.address = "fd00:0:0:0:0:0:0:7";
  const degrade::RequestClass claim = Claim();
  RunCounted(state, [&] {
    auto rc = policy.Apply(claim, peer);
    benchmark::DoNotOptimize(rc);
  });
}

}  // namespace

BENCHMARK(BM_DecodeClaim)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_ApplyDefault)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_ApplyByName)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_ApplyByAddressV4)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_ApplyByAddressV6)->UseRealTime()->Threads(1)->Threads(2);

BENCHMARK_MAIN();
