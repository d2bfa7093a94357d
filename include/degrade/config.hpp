// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// -----------------------------------------------------------------------------
// File: config.hpp
// -----------------------------------------------------------------------------
//
// Thresholds as data: the degradation manager's levels, triggers and
// recovery rules live in a JSON file (or a config-centre entry) and change
// without a redeploy. This header is the whole config layer in one include,
// kept so that code written against it keeps compiling; new code can include
// the half it uses:
//
//   config_parse.hpp     `ParseDegradationConfig()`,
//   `LoadDegradationConfigFile()`,
//                        `kMaxConfigBytes`: the format, its rules and their
//                        messages. Pure functions of text; needs no manager.
//   config_watcher.hpp   `ReloadJson()`, `ConfigFileWatcher`: a config applied
//                        to a running `DegradationManager`, and a manager kept
//                        in step with a file (rewritten in place, renamed
//                        over, or behind a Kubernetes ConfigMap's symlinks).
//
// Either way a bad config never replaces a good one: it is refused with a
// status naming the source, the JSON path, the value and the rule, and the
// manager keeps serving its last good config.
//
//   degrade::DegradationManager manager;
//   degrade::ConfigFileWatcher watcher("/etc/svc/degrade.json", &manager);
//   absl::Status first = watcher.PollOnce();   // apply it now, see the error
//   watcher.Start(absl::Seconds(10));          // then follow the file
//
// Umbrella header: no library header includes it. Thread safety: see the two
// headers.

#ifndef DEGRADE_CONFIG_HPP_
#define DEGRADE_CONFIG_HPP_

#include "degrade/config_parse.hpp"    // IWYU pragma: export
#include "degrade/config_watcher.hpp"  // IWYU pragma: export

#endif  // DEGRADE_CONFIG_HPP_
