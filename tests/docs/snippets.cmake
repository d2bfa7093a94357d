# The docs' code blocks, extracted into translation units (see HACKING.md,
# "Code in the docs").
#
# degrade_scan_doc_page(<page> <out_dir>)
#
# Reads the markdown file <page> (relative to PROJECT_SOURCE_DIR) and writes
# every ```cpp block into <out_dir> as <stem>_<n>.cpp, where <stem> is the
# page's path with '/', '-' and '.' turned into '_' and <n> counts the page's
# cpp blocks from 1. Each generated file starts with a #line directive, so a
# compiler error points at the markdown line. A file is rewritten only when
# its content changes: editing a page recompiles the blocks whose text
# changed and, when lines were added or removed, those below (their #line).
#
# The fence's info string says what a block is:
#
#   ```cpp                  a complete translation unit. With `int main(`
#                           it is built and run as a test; otherwise it is
#                           compiled only.
#   ```cpp needs=a.hpp,b.hpp
#                           the same, but only once include/degrade/a.hpp
#                           and b.hpp exist (for an API that lands in a
#                           parallel change; drop the attribute once it has).
#   ```text output          the expected standard output of the runnable
#                           block just before it (the next fence after it).
#
# Any other language (text, sh, cmake, json, promql, mermaid, ...) is prose.
# `c++`, `cxx`, `cc`, `h` and `hpp` are refused, and so is an indented
# ```cpp fence: both would be C++ that nothing compiles.
#
# Appends to these variables in the caller's scope:
#   DEGRADE_DOC_COMPILE_ONLY  generated sources without main()
#   DEGRADE_DOC_RUNNABLE      "<name>|<source>|<expected or ->|<page>:<line>"
#   DEGRADE_DOC_SKIPPED       "<page>:<line> (needs <headers>)"
#   DEGRADE_DOC_GENERATED     every file written (to clean up stale ones)
include_guard(GLOBAL)

function(_degrade_doc_write path content)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()

function(degrade_scan_doc_page page out_dir)
  set(page_abs "${PROJECT_SOURCE_DIR}/${page}")
  file(READ "${page_abs}" text)
  string(REGEX REPLACE "\\.md$" "" stem "${page}")
  string(REGEX REPLACE "[/.-]" "_" stem "${stem}")

  set(compile_only "${DEGRADE_DOC_COMPILE_ONLY}")
  set(runnable "${DEGRADE_DOC_RUNNABLE}")
  set(skipped "${DEGRADE_DOC_SKIPPED}")
  set(generated "${DEGRADE_DOC_GENERATED}")

  set(line_no 0)
  set(fence "")          # the open fence's backticks, "" outside a block
  set(kind "")           # cpp | output | other
  set(block "")
  set(block_line 0)
  set(needs "")
  set(count 0)
  # After a runnable cpp block: its name|source, until the next fence opens.
  set(awaiting_output "")
  set(awaiting_skipped FALSE)

  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" nl)
    if(nl EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${nl} line)
      math(EXPR rest "${nl} + 1")
      string(SUBSTRING "${text}" ${rest} -1 text)
    endif()
    math(EXPR line_no "${line_no} + 1")
    set(where "${page}:${line_no}")

    if(fence STREQUAL "")
      # As in CommonMark, the info string of a backtick fence has no
      # backtick: "```` ```cpp ````" at the start of a line is inline code.
      if(NOT line MATCHES "^( *)(```+)[ ]*([^ `]*)([^`]*)$")
        continue()
      endif()
      set(indent "${CMAKE_MATCH_1}")
      set(fence "${CMAKE_MATCH_2}")
      set(lang "${CMAKE_MATCH_3}")
      string(STRIP "${CMAKE_MATCH_4}" attrs)
      set(block "")
      math(EXPR block_line "${line_no} + 1")
      set(needs "")
      if(lang MATCHES "^(c\\+\\+|C\\+\\+|cxx|cc|h|hpp)$")
        message(FATAL_ERROR "${where}: a ```${lang} block is C++ that nothing compiles; "
                            "use ```cpp (compiled) or ```text (illustration only)")
      endif()
      if(lang STREQUAL "cpp")
        if(NOT indent STREQUAL "")
          message(FATAL_ERROR "${where}: an indented ```cpp block is not compiled; "
                              "start the fence at column 0")
        endif()
        set(kind cpp)
        string(REGEX REPLACE "[ \t]+" ";" attr_list "${attrs}")
        foreach(attr IN LISTS attr_list)
          if(attr MATCHES "^needs=(.+)$")
            string(REPLACE "," ";" needs "${CMAKE_MATCH_1}")
          else()
            message(FATAL_ERROR "${where}: unknown ```cpp attribute '${attr}' (known: needs=)")
          endif()
        endforeach()
      elseif(lang STREQUAL "text" AND attrs STREQUAL "output")
        if(awaiting_output STREQUAL "" AND NOT awaiting_skipped)
          message(FATAL_ERROR "${where}: a ```text output block must come right after "
                              "a ```cpp block that has main()")
        endif()
        set(kind output)
      else()
        set(kind other)
      endif()
      if(NOT kind STREQUAL "output")
        set(awaiting_output "")
        set(awaiting_skipped FALSE)
      endif()
      continue()
    endif()

    # Inside a block: a closing fence is only backticks, at least as many.
    string(LENGTH "${fence}" fence_len)
    if(line MATCHES "^ *(```+) *$")
      string(LENGTH "${CMAKE_MATCH_1}" close_len)
      if(close_len GREATER_EQUAL fence_len)
        if(kind STREQUAL "cpp")
          math(EXPR count "${count} + 1")
          set(missing "")
          foreach(header IN LISTS needs)
            if(NOT EXISTS "${PROJECT_SOURCE_DIR}/include/${header}")
              list(APPEND missing "${header}")
            endif()
          endforeach()
          set(is_main FALSE)
          if(block MATCHES "(^|\n)[ ]*int[ ]+main[ ]*\\(")
            set(is_main TRUE)
          endif()
          if(NOT missing STREQUAL "")
            string(REPLACE ";" ", " missing "${missing}")
            list(APPEND skipped "${page}:${block_line} (needs ${missing})")
            set(awaiting_skipped ${is_main})
          else()
            set(name "${stem}_${count}")
            set(source "${out_dir}/${name}.cpp")
            _degrade_doc_write(
              "${source}"
              "// Generated from ${page}:${block_line} by tests/docs/snippets.cmake.\n// Edit the markdown, not this file.\n#line ${block_line} \"${page_abs}\"\n${block}")
            list(APPEND generated "${source}")
            if(is_main)
              set(awaiting_output "${name}|${source}")
              list(APPEND runnable "${name}|${source}|-|${page}:${block_line}")
            else()
              list(APPEND compile_only "${source}")
            endif()
          endif()
        elseif(kind STREQUAL "output" AND NOT awaiting_output STREQUAL "")
          string(REGEX REPLACE "\\|.*$" "" expected_name "${awaiting_output}")
          set(expected "${out_dir}/${expected_name}.expected")
          _degrade_doc_write("${expected}" "${block}")
          list(APPEND generated "${expected}")
          # The runnable entry was appended last: give it its expected output.
          list(POP_BACK runnable entry)
          string(REGEX REPLACE "\\|-\\|" "|${expected}|" entry "${entry}")
          list(APPEND runnable "${entry}")
          set(awaiting_output "")
        endif()
        set(fence "")
        continue()
      endif()
    endif()
    string(APPEND block "${line}\n")
  endwhile()

  if(NOT fence STREQUAL "")
    message(FATAL_ERROR "${page}: a ${fence} block opened at line ${block_line} is never closed")
  endif()

  set(DEGRADE_DOC_COMPILE_ONLY "${compile_only}" PARENT_SCOPE)
  set(DEGRADE_DOC_RUNNABLE "${runnable}" PARENT_SCOPE)
  set(DEGRADE_DOC_SKIPPED "${skipped}" PARENT_SCOPE)
  set(DEGRADE_DOC_GENERATED "${generated}" PARENT_SCOPE)
endfunction()
