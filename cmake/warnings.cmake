# degrade_set_warnings(<target>)
#
# Strict warnings for degrade's OWN targets (tests, examples, benchmarks, the
# header self-containment checks). Never call this on the INTERFACE library
# target: INTERFACE compile options would leak into every consumer's build.
#
# -Wall -Wextra -Wpedantic are always on. -Werror only with DEGRADE_WERROR
# (ON in the presets and so in CI): a user building the examples with a newer
# compiler, whose new warnings we have not seen yet, still gets a build.
include_guard(GLOBAL)

option(DEGRADE_WERROR "Treat warnings as errors in degrade's own targets" OFF)

function(degrade_set_warnings target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "degrade_set_warnings: '${target}' is not a target")
  endif()
  get_target_property(type "${target}" TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    message(FATAL_ERROR "degrade_set_warnings: refusing to put warnings on INTERFACE target '${target}'")
  endif()
  if(MSVC)
    target_compile_options("${target}" PRIVATE /W4 /permissive-)
    if(DEGRADE_WERROR)
      target_compile_options("${target}" PRIVATE /WX)
    endif()
  else()
    target_compile_options("${target}" PRIVATE -Wall -Wextra -Wpedantic)
    if(DEGRADE_WERROR)
      target_compile_options("${target}" PRIVATE -Werror)
    endif()
    # Clang checks the ABSL_GUARDED_BY / lock annotations in detail/mutex.hpp.
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      target_compile_options("${target}" PRIVATE -Wthread-safety)
    endif()
  endif()
endfunction()
