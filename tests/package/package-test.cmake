# Driver for the package consumer tests (see tests/CMakeLists.txt).
#
#   cmake -DACTION=install -DBUILD_DIR=<degrade build> -DPREFIX=<dir> [-DCONFIG=<cfg>] -P package-test.cmake
#       Installs a fresh copy of the build tree into <dir>.
#
#   cmake -DACTION=consumer -DSOURCE_DIR=<consumer src> -DBINARY_DIR=<dir>
#         -DGENERATOR=<gen> -DCXX_COMPILER=<c++> [-DBUILD_TYPE=<cfg>]
#         [-DPREFIX_PATH=<a|b|...>] [-DEXTRA_ARGS=<-Dvar=value|...>] -P package-test.cmake
#       Configures, builds and runs the consumer in a fresh <dir>; fails if any
#       step fails or the consumer exits non-zero.
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  string(REPLACE ";" " " pretty "${ARGN}")
  message(STATUS "[package-test] ${what}: ${pretty}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[package-test] ${what} failed (${rc})")
  endif()
endfunction()

if(ACTION STREQUAL "install")
  file(REMOVE_RECURSE "${PREFIX}")
  set(config_args "")
  if(CONFIG)
    set(config_args --config "${CONFIG}")
  endif()
  run_step("install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args})
  if(NOT EXISTS "${PREFIX}/include/degrade")
    message(FATAL_ERROR "[package-test] no include/degrade under ${PREFIX}")
  endif()
  file(GLOB_RECURSE configs "${PREFIX}/*/degradeConfig.cmake")
  if(NOT configs)
    message(FATAL_ERROR "[package-test] no degradeConfig.cmake under ${PREFIX}")
  endif()
  message(STATUS "[package-test] installed; config at ${configs}")

elseif(ACTION STREQUAL "consumer")
  file(REMOVE_RECURSE "${BINARY_DIR}")
  if(NOT BUILD_TYPE)
    set(BUILD_TYPE Debug)
  endif()
  set(configure_args -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}"
                     "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
  # The generator's own program, as the degrade build found it (a Ninja
  # that is not on PATH).
  if(MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  if(PREFIX_PATH)
    string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
    list(REMOVE_ITEM prefix_path "")
    string(REPLACE ";" "\\;" prefix_path "${prefix_path}")
    list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix_path}")
  endif()
  if(EXTRA_ARGS)
    string(REPLACE "|" ";" extra "${EXTRA_ARGS}")
    list(APPEND configure_args ${extra})
  endif()
  run_step("configure" "${CMAKE_COMMAND}" ${configure_args})
  # Two jobs: ctest already runs two tests at a time on CI's two cores, and
  # Ninja would otherwise start one job per core plus two.
  run_step("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --config "${BUILD_TYPE}" --parallel 2)
  # The consumer projects name their executable `consumer`.
  set(exe "${BINARY_DIR}/consumer")
  if(NOT EXISTS "${exe}" AND EXISTS "${BINARY_DIR}/${BUILD_TYPE}/consumer")
    set(exe "${BINARY_DIR}/${BUILD_TYPE}/consumer")
  endif()
  run_step("run" "${exe}")

else()
  message(FATAL_ERROR "package-test.cmake: ACTION must be install or consumer, got '${ACTION}'")
endif()
