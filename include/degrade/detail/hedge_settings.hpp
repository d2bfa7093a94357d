// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Forwards to degrade/hedge_settings.hpp, where HedgeSettings now lives:
// kept for one release so that code naming the old path still compiles.

#ifndef DEGRADE_DETAIL_HEDGE_SETTINGS_HPP_
#define DEGRADE_DETAIL_HEDGE_SETTINGS_HPP_

#include "degrade/hedge_settings.hpp"  // IWYU pragma: export

#endif  // DEGRADE_DETAIL_HEDGE_SETTINGS_HPP_
