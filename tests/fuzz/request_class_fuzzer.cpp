// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// libFuzzer entry point for request_class_fuzz.hpp (see it for what is
// checked). Built by the `fuzz` preset; run with `./cmake/run.sh fuzz
// [seconds]`.

#include "fuzz/request_class_fuzz.hpp"

DEGRADE_FUZZ_TARGET(degrade_fuzz::FuzzRequestClass)
