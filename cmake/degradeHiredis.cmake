# degradeHiredis.cmake: find hiredis (the C Redis client) for degrade::redis.
#
# degrade_find_hiredis() sets, in the caller's scope:
#   DEGRADE_HIREDIS_FOUND     TRUE if hiredis/hiredis.h and libhiredis were found
#   DEGRADE_HIREDIS_VERSION   e.g. 0.14.1 (from pkg-config or the header)
# and, when found, creates the GLOBAL imported target degrade::hiredis.
#
# Used by degrade's own CMakeLists.txt and, installed next to
# degradeConfig.cmake, by the package config when the `redis` component is
# asked for. pkg-config (if present) only supplies search hints: its
# imported target would also carry -D_FILE_OFFSET_BITS=64 into every user's
# build, which the client API does not need. Debian's
# HiredisConfig.cmake defines no target, so it is not used either.
#
# Debian 12: apt-get install libhiredis-dev (0.14.1). hiredis 1.x works too.
include_guard(GLOBAL)

macro(degrade_find_hiredis)
  if(TARGET degrade::hiredis)
    set(DEGRADE_HIREDIS_FOUND TRUE)
  else()
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(_DEGRADE_PC_HIREDIS QUIET hiredis)
    endif()
    # pkg-config's includedir is .../include/hiredis; the header is included
    # as <hiredis/hiredis.h>, so search its parent too.
    set(_degrade_hiredis_hints "")
    foreach(_dir IN LISTS _DEGRADE_PC_HIREDIS_INCLUDEDIR _DEGRADE_PC_HIREDIS_INCLUDE_DIRS)
      get_filename_component(_parent "${_dir}" DIRECTORY)
      list(APPEND _degrade_hiredis_hints "${_dir}" "${_parent}")
    endforeach()
    find_path(DEGRADE_HIREDIS_INCLUDE_DIR hiredis/hiredis.h HINTS ${_degrade_hiredis_hints})
    find_library(DEGRADE_HIREDIS_LIBRARY NAMES hiredis HINTS ${_DEGRADE_PC_HIREDIS_LIBDIR}
                                                             ${_DEGRADE_PC_HIREDIS_LIBRARY_DIRS})
    mark_as_advanced(DEGRADE_HIREDIS_INCLUDE_DIR DEGRADE_HIREDIS_LIBRARY)

    if(DEGRADE_HIREDIS_INCLUDE_DIR AND DEGRADE_HIREDIS_LIBRARY)
      set(DEGRADE_HIREDIS_FOUND TRUE)
      if(_DEGRADE_PC_HIREDIS_VERSION)
        set(DEGRADE_HIREDIS_VERSION "${_DEGRADE_PC_HIREDIS_VERSION}")
      else()
        file(STRINGS "${DEGRADE_HIREDIS_INCLUDE_DIR}/hiredis/hiredis.h" _degrade_hiredis_defines
             REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) [0-9]+")
        set(DEGRADE_HIREDIS_VERSION "")
        foreach(_part IN ITEMS MAJOR MINOR PATCH)
          string(REGEX MATCH "HIREDIS_${_part} ([0-9]+)" _m "${_degrade_hiredis_defines}")
          list(APPEND DEGRADE_HIREDIS_VERSION "${CMAKE_MATCH_1}")
        endforeach()
        string(REPLACE ";" "." DEGRADE_HIREDIS_VERSION "${DEGRADE_HIREDIS_VERSION}")
      endif()
      # An imported target's include directories are system directories in
      # its users' builds, so hiredis's headers never trip their warnings.
      add_library(degrade::hiredis UNKNOWN IMPORTED GLOBAL)
      set_target_properties(
        degrade::hiredis PROPERTIES IMPORTED_LOCATION "${DEGRADE_HIREDIS_LIBRARY}"
                                    INTERFACE_INCLUDE_DIRECTORIES "${DEGRADE_HIREDIS_INCLUDE_DIR}")
    else()
      set(DEGRADE_HIREDIS_FOUND FALSE)
    endif()
  endif()
endmacro()
