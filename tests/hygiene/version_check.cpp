// Hygiene check: degrade/version.hpp agrees with project(VERSION) in
// CMakeLists.txt (passed in by tests/CMakeLists.txt), and every public name is
// declared in the versioned inline namespace.
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "degrade/degrade.hpp"

static_assert(DEGRADE_VERSION_MAJOR == DEGRADE_EXPECTED_MAJOR,
              "version.hpp's major version differs from CMakeLists.txt");
static_assert(DEGRADE_VERSION_MINOR == DEGRADE_EXPECTED_MINOR,
              "version.hpp's minor version differs from CMakeLists.txt");
static_assert(DEGRADE_VERSION_PATCH == DEGRADE_EXPECTED_PATCH,
              "version.hpp's patch version differs from CMakeLists.txt");
static_assert(DEGRADE_VERSION == DEGRADE_EXPECTED_MAJOR * 10000 +
                                     DEGRADE_EXPECTED_MINOR * 100 +
                                     DEGRADE_EXPECTED_PATCH,
              "DEGRADE_VERSION is not major * 10000 + minor * 100 + patch");
// Users name degrade::X; the ABI namespace is where X really lives.
static_assert(std::is_same_v<degrade::CircuitBreaker<int>,
                             degrade::DEGRADE_ABI_NAMESPACE::CircuitBreaker<int>>,
              "public names must live in the versioned inline namespace");

int main() {
  if (std::strcmp(DEGRADE_VERSION_STRING, DEGRADE_EXPECTED_STRING) != 0) {
    std::fprintf(stderr, "DEGRADE_VERSION_STRING is %s, CMakeLists.txt says %s\n",
                 DEGRADE_VERSION_STRING, DEGRADE_EXPECTED_STRING);
    return 1;
  }
  return 0;
}
