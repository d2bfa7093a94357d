# degradeHttplib.cmake: find cpp-httplib for degrade::etcd and the examples.
#
# degrade_find_httplib() sets, in the caller's scope:
#   DEGRADE_HTTPLIB_FOUND   TRUE if httplib.h (and its library, if it has one)
#                           was found
#   DEGRADE_HTTPLIB_HOW     what was found, for status messages
# and, when found, creates the GLOBAL imported target degrade::httplib.
#
# Looked for in order: upstream's CMake config (httplib::httplib), the
# pkg-config module cpp-httplib (Debian's package ships no CMake config and a
# split header whose definitions live in libcpp-httplib.so; the .pc file also
# carries the library's feature macros, which must match how it was built),
# then the bare header plus the library if there is one (a header-only
# httplib.h needs none). The include directory is a SYSTEM one: httplib.h is
# not clean under degrade's -Wpedantic -Werror. Installed next to
# degradeConfig.cmake, which calls it for find_package(degrade COMPONENTS
# etcd).
#
# Debian 12: apt-get install libcpp-httplib-dev (0.11.4).
include_guard(GLOBAL)

macro(degrade_find_httplib)
  if(TARGET degrade::httplib)
    set(DEGRADE_HTTPLIB_FOUND TRUE)
  else()
    set(DEGRADE_HTTPLIB_FOUND FALSE)
    set(_degrade_httplib_link "")
    find_package(httplib CONFIG QUIET)
    if(TARGET httplib::httplib)
      set(_degrade_httplib_link httplib::httplib)
      set(DEGRADE_HTTPLIB_HOW "httplib CMake config")
    else()
      find_package(PkgConfig QUIET)
      if(PKG_CONFIG_FOUND)
        pkg_check_modules(DEGRADE_CPP_HTTPLIB QUIET IMPORTED_TARGET GLOBAL cpp-httplib)
      endif()
      if(TARGET PkgConfig::DEGRADE_CPP_HTTPLIB)
        set(_degrade_httplib_link PkgConfig::DEGRADE_CPP_HTTPLIB)
        set(DEGRADE_HTTPLIB_HOW "pkg-config cpp-httplib ${DEGRADE_CPP_HTTPLIB_VERSION}")
      else()
        find_path(DEGRADE_HTTPLIB_INCLUDE_DIR httplib.h)
        find_library(DEGRADE_HTTPLIB_LIBRARY NAMES cpp-httplib)
        mark_as_advanced(DEGRADE_HTTPLIB_INCLUDE_DIR DEGRADE_HTTPLIB_LIBRARY)
        if(DEGRADE_HTTPLIB_INCLUDE_DIR)
          set(_degrade_httplib_link "")
          if(DEGRADE_HTTPLIB_LIBRARY)
            set(_degrade_httplib_link "${DEGRADE_HTTPLIB_LIBRARY}")
          endif()
          set(DEGRADE_HTTPLIB_HOW "${DEGRADE_HTTPLIB_INCLUDE_DIR}/httplib.h")
          set(DEGRADE_HTTPLIB_FOUND TRUE)
        endif()
      endif()
    endif()
    if(_degrade_httplib_link OR DEGRADE_HTTPLIB_FOUND)
      add_library(degrade::httplib INTERFACE IMPORTED GLOBAL)
      if(DEGRADE_HTTPLIB_INCLUDE_DIR)
        set_target_properties(degrade::httplib PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                          "${DEGRADE_HTTPLIB_INCLUDE_DIR}")
      endif()
      find_package(Threads REQUIRED)
      set_target_properties(degrade::httplib PROPERTIES INTERFACE_LINK_LIBRARIES
                                                        "${_degrade_httplib_link};Threads::Threads")
      set(DEGRADE_HTTPLIB_FOUND TRUE)
    endif()
  endif()
endmacro()
