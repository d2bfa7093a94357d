// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Forwards to degrade/limiter_settings.hpp, where LimiterSettings now lives:
// kept for one release so that code naming the old path still compiles.

#ifndef DEGRADE_DETAIL_LIMITER_SETTINGS_HPP_
#define DEGRADE_DETAIL_LIMITER_SETTINGS_HPP_

#include "degrade/limiter_settings.hpp"  // IWYU pragma: export

#endif  // DEGRADE_DETAIL_LIMITER_SETTINGS_HPP_
