# promtool_check_metrics.cmake: `promtool check metrics` on the Prometheus
# exposition the recommendation demo writes at its end.
#
#   cmake -DDEMO=<recsys_pipeline> -DPROMTOOL=<promtool> -DWORK_DIR=<dir>
#         -P promtool_check_metrics.cmake
#
# Runs `DEMO --metrics-out WORK_DIR/recsys_pipeline.prom`, checks that the
# file has the families the demo exports, then feeds it to
# `promtool check metrics` on stdin. Fails on a non-zero exit from either, or
# on any output from promtool: it prints lint problems ("... no help text",
# "... should have "_total" suffix", exit 3) and parse errors (exit 1), and
# nothing at all for a clean exposition.
cmake_minimum_required(VERSION 3.25)

foreach(var DEMO PROMTOOL WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "promtool_check_metrics: -D${var}=... is required")
  endif()
endforeach()

file(MAKE_DIRECTORY "${WORK_DIR}")
set(exposition "${WORK_DIR}/recsys_pipeline.prom")
file(REMOVE "${exposition}")

execute_process(
  COMMAND "${DEMO}" --metrics-out "${exposition}"
  RESULT_VARIABLE demo_rc
  OUTPUT_VARIABLE demo_out
  ERROR_VARIABLE demo_out
  TIMEOUT 120)
if(NOT demo_rc EQUAL 0)
  message(FATAL_ERROR "${DEMO} --metrics-out ${exposition} failed (${demo_rc}):\n${demo_out}")
endif()
if(NOT EXISTS "${exposition}")
  message(FATAL_ERROR "${DEMO} did not write ${exposition}:\n${demo_out}")
endif()

file(READ "${exposition}" text)
foreach(family degrade_breaker_state degrade_breaker_calls_total
               degrade_fallbacks_total degrade_request_degraded_stages
               degrade_hot_list_items degrade_default_features_age_seconds
               degrade_default_features_reloads_total)
  if(NOT text MATCHES "# TYPE ${family} ")
    message(FATAL_ERROR "${exposition} has no ${family} family:\n${text}")
  endif()
endforeach()

execute_process(
  COMMAND "${PROMTOOL}" check metrics
  INPUT_FILE "${exposition}"
  RESULT_VARIABLE promtool_rc
  OUTPUT_VARIABLE promtool_out
  ERROR_VARIABLE promtool_out
  TIMEOUT 60)
string(STRIP "${promtool_out}" promtool_out)
if(NOT promtool_rc EQUAL 0 OR NOT promtool_out STREQUAL "")
  message(FATAL_ERROR "promtool check metrics < ${exposition}: exit ${promtool_rc}\n${promtool_out}")
endif()

string(REGEX MATCHALL "\n[a-z_]+[{ ]" samples "\n${text}")
list(LENGTH samples n)
message(STATUS "promtool check metrics: ${exposition} is clean (${n} samples)")
