# Install rules for the header-only degrade library.
#
# Produces, under the install prefix:
#   include/degrade/...                                    the headers
#   share/cmake/degrade/degradeConfig.cmake                find_package(degrade CONFIG)
#   share/cmake/degrade/degradeConfigVersion.cmake         SameMajorVersion, arch independent
#   share/cmake/degrade/degradeTargets.cmake               imported target degrade::degrade
# and, only when the Redis adapter is built (DEGRADE_HAVE_REDIS):
#   include/degrade/redis/...                              its header
#   share/cmake/degrade/degradeRedisTargets.cmake          imported target degrade::redis
#   share/cmake/degrade/degradeHiredis.cmake               finds hiredis for it
# and, only when the gRPC adapter is built (DEGRADE_HAVE_GRPC):
#   include/degrade/grpc/...                               its headers
#   share/cmake/degrade/degradeGrpcTargets.cmake           imported target degrade::grpc
#   share/cmake/degrade/degradeGrpc.cmake                  finds gRPC and protobuf for it
# and, only when the etcd adapter is built (DEGRADE_HAVE_ETCD):
#   include/degrade/etcd/...                               its headers
#   share/cmake/degrade/degradeEtcdTargets.cmake           imported target degrade::etcd
#   share/cmake/degrade/degradeHttplib.cmake               finds cpp-httplib for it
# The package config loads each adapter's two files only for
# find_package(degrade COMPONENTS redis), COMPONENTS grpc or COMPONENTS etcd,
# so the core package never looks for hiredis, gRPC or cpp-httplib.
include_guard(GLOBAL)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DEGRADE_INSTALL_CMAKEDIR
    "${CMAKE_INSTALL_DATADIR}/cmake/degrade"
    CACHE STRING "Install directory for degrade's CMake package files, relative to the prefix")
mark_as_advanced(DEGRADE_INSTALL_CMAKEDIR)

set(_degrade_header_excludes "")
if(NOT DEGRADE_HAVE_REDIS)
  list(APPEND _degrade_header_excludes PATTERN "redis" EXCLUDE)
endif()
if(NOT DEGRADE_HAVE_GRPC)
  list(APPEND _degrade_header_excludes PATTERN "grpc" EXCLUDE)
endif()
if(NOT DEGRADE_HAVE_ETCD)
  list(APPEND _degrade_header_excludes PATTERN "etcd" EXCLUDE)
endif()
install(
  DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  COMPONENT degrade_Development
  FILES_MATCHING
  PATTERN "*.hpp"
  PATTERN "*.h" ${_degrade_header_excludes})

install(TARGETS degrade EXPORT degradeTargets)

install(
  EXPORT degradeTargets
  NAMESPACE degrade::
  DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
  COMPONENT degrade_Development)

if(DEGRADE_HAVE_REDIS)
  install(TARGETS degrade_redis EXPORT degradeRedisTargets)
  install(
    EXPORT degradeRedisTargets
    NAMESPACE degrade::
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
  install(
    FILES "${PROJECT_SOURCE_DIR}/cmake/degradeHiredis.cmake"
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
endif()

if(DEGRADE_HAVE_GRPC)
  install(TARGETS degrade_grpc EXPORT degradeGrpcTargets)
  install(
    EXPORT degradeGrpcTargets
    NAMESPACE degrade::
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
  install(
    FILES "${PROJECT_SOURCE_DIR}/cmake/degradeGrpc.cmake"
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
endif()

if(DEGRADE_HAVE_ETCD)
  install(TARGETS degrade_etcd EXPORT degradeEtcdTargets)
  install(
    EXPORT degradeEtcdTargets
    NAMESPACE degrade::
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
  install(
    FILES "${PROJECT_SOURCE_DIR}/cmake/degradeHttplib.cmake"
    DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
    COMPONENT degrade_Development)
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/degradeConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/degradeConfig.cmake"
  INSTALL_DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}")

write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/degradeConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion
  ARCH_INDEPENDENT)

install(
  FILES "${PROJECT_BINARY_DIR}/degradeConfig.cmake"
        "${PROJECT_BINARY_DIR}/degradeConfigVersion.cmake"
  DESTINATION "${DEGRADE_INSTALL_CMAKEDIR}"
  COMPONENT degrade_Development)
