// Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
//
// Preloaded (LD_PRELOAD) into every gtest executable that does NOT carry the
// `concurrency` label, in builds without a sanitizer (tests/CMakeLists.txt,
// DEGRADE_THREAD_LABEL_GUARD). ThreadSanitizer builds and runs only the
// tests labelled `concurrency` (CI's time goes to compiling, see HACKING.md),
// so a test that starts a thread without that label would silently escape
// it. This library turns that mistake into a failing test: a thread started
// by one of this build's own programs ends the process with status 86 and a
// message naming the label to add.
//
// "This build's own programs": the test itself, and the programs it starts
// from the build tree, directly or through a shell (the fleet test's
// instances run threads TSan must see). A program from elsewhere
// (redis-server, etcd, python3, sh) starts its threads as usual; the
// variable stays set so that what it starts is judged the same way. The
// library brings no libstdc++ into those programs (linked --as-needed).
//
// Its own test, hygiene.thread_label_guard, fails if it stops nothing.
//
// Works where pthread_create is looked up dynamically (glibc: std::thread
// and std::async reach it through libstdc++'s gthread layer).

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

bool guarding = false;
char exe[4096] = "?";

__attribute__((constructor)) void DecideWhetherToGuard() {
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  const char* root = std::getenv("DEGRADE_THREAD_GUARD_ROOT");
  if (root == nullptr || root[0] == '\0' || n <= 0) return;
  // /proc/self/exe is resolved; the root may be reached through a link.
  char resolved[4096];
  if (realpath(root, resolved) == nullptr) return;
  const size_t len = std::strlen(resolved);
  guarding = std::strncmp(exe, resolved, len) == 0 &&
             (exe[len] == '/' || (len == 1 && resolved[0] == '/'));
}

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*),
                         void*);

// Looked up on each call rather than cached in a function-local static,
// whose guard variable would pull libstdc++ into every preloaded program.
CreateFn RealCreate() {
  return reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
}

}  // namespace

// Exported whatever the build's visibility preset: a hidden definition
// would intercept nothing.
extern "C" __attribute__((visibility("default"))) int pthread_create(
    pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
    void* arg) {
  if (!guarding) {
    const CreateFn real = RealCreate();
    if (real == nullptr) return EAGAIN;
    return real(thread, attr, start, arg);
  }
  const char* target = std::getenv("DEGRADE_THREAD_GUARD_TARGET");
  char message[5000];
  const int n = std::snprintf(
      message, sizeof message,
      "\ndegrade thread guard: %s started a thread while running test "
      "executable '%s', which is not labelled `concurrency`, so "
      "ThreadSanitizer never runs it. Add LABELS concurrency to the "
      "degrade_add_test() of its file in tests/CMakeLists.txt.\n",
      exe, target != nullptr ? target : "?");
  if (n > 0) {
    const size_t len = static_cast<size_t>(n) < sizeof message
                           ? static_cast<size_t>(n)
                           : sizeof message - 1;
    (void)!write(2, message, len);
  }
  // At once, without static destructors that might wait for the thread.
  _exit(86);
}
