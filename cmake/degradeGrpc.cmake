# degradeGrpc.cmake: find gRPC C++ and protobuf for degrade::grpc.
#
# degrade_find_grpc() sets, in the caller's scope:
#   DEGRADE_GRPC_FOUND     TRUE if gRPC's CMake package (gRPC::grpc++) and
#                          protobuf were found
#   DEGRADE_GRPC_VERSION   e.g. 1.51.1
# The targets it relies on are gRPC's and protobuf's own imported targets
# (gRPC::grpc++, gRPC::grpc_cpp_plugin, protobuf::libprotobuf,
# protobuf::protoc). Used by degrade's build and, installed, by
# degradeConfig.cmake when the `grpc` component is requested, so that
# find_package(degrade) alone never looks for gRPC.
#
# Debian 12: apt-get install libgrpc++-dev libprotobuf-dev protobuf-compiler
# protobuf-compiler-grpc (gRPC 1.51.1, protobuf 3.21.12).

macro(degrade_find_grpc)
  if(TARGET gRPC::grpc++ AND TARGET protobuf::libprotobuf)
    set(DEGRADE_GRPC_FOUND TRUE)
  else()
    set(DEGRADE_GRPC_FOUND FALSE)
    # Protobuf first: gRPC's package config expects protobuf's targets.
    find_package(Protobuf QUIET)
    # Debian's gRPC package config (libgrpc-dev) stops the whole configure
    # with a hard error when its plugins (protobuf-compiler-grpc) are not
    # installed, QUIET or not: look for the plugin first, so that a missing
    # one means "not found", as AUTO promises.
    find_program(DEGRADE_GRPC_CPP_PLUGIN grpc_cpp_plugin)
    mark_as_advanced(DEGRADE_GRPC_CPP_PLUGIN)
    if(Protobuf_FOUND AND DEGRADE_GRPC_CPP_PLUGIN)
      find_package(gRPC CONFIG QUIET)
    endif()
    if(Protobuf_FOUND AND TARGET gRPC::grpc++ AND TARGET protobuf::libprotobuf)
      set(DEGRADE_GRPC_FOUND TRUE)
    endif()
  endif()
  set(DEGRADE_GRPC_VERSION "${gRPC_VERSION}")
endmacro()
