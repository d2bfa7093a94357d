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
// from the build tree (the fleet test's instances run threads TSan must
// see). A program from elsewhere (redis-server, etcd, python3) starts its
// threads as usual, and drops the variable so that its children do too.
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
  guarding = root != nullptr && root[0] != '\0' && n > 0 &&
             std::strncmp(exe, root, std::strlen(root)) == 0;
  if (!guarding) unsetenv("LD_PRELOAD");
}

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

}  // namespace

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                              void* (*start)(void*), void* arg) {
  if (!guarding) {
    static const CreateFn real =
        reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
    if (real == nullptr) return EAGAIN;
    return real(thread, attr, start, arg);
  }
  const char* target = std::getenv("DEGRADE_THREAD_GUARD_TARGET");
  char message[5000];
  const int n = std::snprintf(
      message, sizeof message,
      "\ndegrade thread guard: %s started a thread while running test "
      "executable '%s', which is not labelled `concurrency`, so "
      "ThreadSanitizer never runs it. Add LABELS concurrency to its "
      "degrade_add_test() in tests/CMakeLists.txt.\n",
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
