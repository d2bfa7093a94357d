# Every test the docs name exists where they say it is.
#
#   cmake -DSOURCE_DIR=<repository root> -P check_test_refs.cmake
#
# docs/failure-modes.md names, for each bad input or fault, the test that
# shows what degrade does about it, written `file_test.cpp:Suite.Name` or,
# for one case of a parameterised test, `file_test.cpp:Prefix/Suite.Name/Case`
# (paths relative to tests/). This check reads every page (README.md,
# HACKING.md, docs/**/*.md), and fails naming each reference whose TEST,
# TEST_F or TEST_P (and INSTANTIATE_TEST_SUITE_P prefix, and the case name
# as a string literal) is not in that file, with the file it moved to if it
# is elsewhere under tests/.
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_test_refs.cmake: -DSOURCE_DIR=... is required")
endif()

file(GLOB_RECURSE pages RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/docs/*.md")
list(PREPEND pages README.md HACKING.md)
file(GLOB_RECURSE test_sources RELATIVE "${SOURCE_DIR}/tests" "${SOURCE_DIR}/tests/*.cpp")

# The tests/ sources with all whitespace removed, read once.
foreach(src IN LISTS test_sources)
  file(READ "${SOURCE_DIR}/tests/${src}" body)
  string(REGEX REPLACE "[ \t\r\n]+" "" body "${body}")
  set("_body_${src}" "${body}")
endforeach()

# Whether `src` (relative to tests/) defines the test `id`.
function(_defines src id out)
  set(found FALSE)
  if(DEFINED "_body_${src}")
    set(body "${_body_${src}}")
    if(id MATCHES "^([A-Za-z0-9_]+)/([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+)(/[A-Za-z0-9_]+)?$")
      set(prefix "${CMAKE_MATCH_1}")
      set(suite "${CMAKE_MATCH_2}")
      set(name "${CMAKE_MATCH_3}")
      string(REGEX REPLACE "^/" "" case "${CMAKE_MATCH_4}")
      string(FIND "${body}" "TEST_P(${suite},${name})" a)
      string(FIND "${body}" "INSTANTIATE_TEST_SUITE_P(${prefix},${suite}," b)
      set(c 0)
      if(NOT case STREQUAL "")
        string(FIND "${body}" "\"${case}\"" c)
      endif()
      if(a GREATER -1 AND b GREATER -1 AND c GREATER -1)
        set(found TRUE)
      endif()
    elseif(id MATCHES "^([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+)$")
      set(suite "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      foreach(macro TEST TEST_F)
        string(FIND "${body}" "${macro}(${suite},${name})" a)
        if(a GREATER -1)
          set(found TRUE)
        endif()
      endforeach()
    endif()
  endif()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

set(problems "")
set(checked 0)
foreach(page IN LISTS pages)
  if(NOT EXISTS "${SOURCE_DIR}/${page}")
    continue()
  endif()
  file(READ "${SOURCE_DIR}/${page}" text)
  string(REGEX MATCHALL "`[A-Za-z0-9_/]+_test\\.cpp:[A-Za-z0-9_./]+`" refs "${text}")
  foreach(ref IN LISTS refs)
    string(REGEX REPLACE "^`([^:]+):(.+)`$" "\\1" src "${ref}")
    string(REGEX REPLACE "^`([^:]+):(.+)`$" "\\2" id "${ref}")
    math(EXPR checked "${checked} + 1")
    _defines("${src}" "${id}" ok)
    if(ok)
      continue()
    endif()
    set(elsewhere "")
    foreach(other IN LISTS test_sources)
      _defines("${other}" "${id}" there)
      if(there)
        list(APPEND elsewhere "tests/${other}")
      endif()
    endforeach()
    if(elsewhere STREQUAL "")
      string(APPEND problems "\n  ${page}: ${src}:${id}: no such test under tests/")
    else()
      string(REPLACE ";" ", " elsewhere "${elsewhere}")
      string(APPEND problems "\n  ${page}: ${src}:${id}: not in tests/${src}; it is in ${elsewhere}")
    endif()
  endforeach()
endforeach()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "tests named by the docs are missing:${problems}")
endif()
message(STATUS "${checked} test references in the docs, all found")
