// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// The thread-label guard's own test (tests/CMakeLists.txt,
// hygiene.thread_label_guard): a program of the build tree, without the
// `concurrency` label, that starts a thread. Run with the guard preloaded it
// must be stopped with the guard's message; if it prints "thread ran", the
// guard is not working in this build, and every label it checks is unchecked.

#include <cstdio>
#include <thread>

int main() {
  std::thread t([] { std::puts("thread ran: the guard did not stop it"); });
  t.join();
  return 0;
}
