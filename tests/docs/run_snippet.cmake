# Runs one runnable docs snippet and compares its standard output with the
# ```text output block that follows it in the page (see snippets.cmake).
#
#   cmake -DEXE=<program> -DEXPECTED=<file or -> -DWHERE=<page:line> -P run_snippet.cmake
#
# Trailing spaces on each line and trailing newlines are ignored; everything
# else must match exactly. Standard error is shown only on failure.
foreach(var EXE EXPECTED WHERE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_snippet.cmake: -D${var}=... is required")
  endif()
endforeach()

if(NOT EXISTS "${EXE}")
  get_filename_component(target "${EXE}" NAME)
  message(FATAL_ERROR "${WHERE}: ${EXE} is not built (cmake --build <dir> --target ${target})")
endif()
execute_process(
  COMMAND "${EXE}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 60)

function(_normalise var)
  set(s "${${var}}")
  string(REGEX REPLACE "[ \t\r]+\n" "\n" s "${s}")
  string(REGEX REPLACE "[ \t\r\n]+$" "" s "${s}")
  set(${var} "${s}" PARENT_SCOPE)
endfunction()

# The details verbatim (message(FATAL_ERROR) would re-flow them), then the
# verdict.
if(NOT rc STREQUAL "0")
  message("--- stdout ---\n${out}\n--- stderr ---\n${err}")
  message(FATAL_ERROR "${WHERE}: the snippet exited with ${rc}")
endif()
if(NOT EXPECTED STREQUAL "-")
  file(READ "${EXPECTED}" want)
  _normalise(want)
  _normalise(out)
  if(NOT out STREQUAL want)
    message("--- the page says ---\n${want}\n--- the snippet printed ---\n${out}\n"
            "--- stderr ---\n${err}")
    message(FATAL_ERROR "${WHERE}: the snippet's output differs from the ```text output block after it")
  endif()
endif()
message(STATUS "${WHERE}: ok")
