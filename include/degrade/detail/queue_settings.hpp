// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Forwards to degrade/queue_settings.hpp, where QueueSettings now lives:
// kept for one release so that code naming the old path still compiles.

#ifndef DEGRADE_DETAIL_QUEUE_SETTINGS_HPP_
#define DEGRADE_DETAIL_QUEUE_SETTINGS_HPP_

#include "degrade/queue_settings.hpp"  // IWYU pragma: export

#endif  // DEGRADE_DETAIL_QUEUE_SETTINGS_HPP_
