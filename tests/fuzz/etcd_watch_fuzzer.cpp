// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// libFuzzer entry point for etcd_watch_fuzz.hpp (see it for what is
// checked). Built by the `fuzz` preset when the etcd adapter is (it needs
// cpp-httplib); run with `./cmake/run.sh fuzz [seconds]`.

#include "fuzz/etcd_watch_fuzz.hpp"

DEGRADE_FUZZ_TARGET(degrade_fuzz::FuzzEtcdWatch)
