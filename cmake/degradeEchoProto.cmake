# degradeEchoProto.cmake: the gRPC test service's generated code, for the
# gRPC adapter's tests and benchmark (not installed).
#
# degrade_echo_proto_library(<target>) generates tests/grpc/echo.proto into
# ${CMAKE_CURRENT_BINARY_DIR}/grpc_gen with protoc and gRPC's C++ plugin,
# and builds it into the static library <target>. The library is built
# without degrade's warnings (it is protoc's code, not ours), and its
# directory is a SYSTEM include for the same reason. REQUIRES: the gRPC
# adapter was found (DEGRADE_HAVE_GRPC).
function(degrade_echo_proto_library target)
  set(proto "${PROJECT_SOURCE_DIR}/tests/grpc/echo.proto")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/grpc_gen")
  set(generated "${out}/echo.pb.cc" "${out}/echo.pb.h" "${out}/echo.grpc.pb.cc"
                "${out}/echo.grpc.pb.h")
  file(MAKE_DIRECTORY "${out}")
  add_custom_command(
    OUTPUT ${generated}
    COMMAND protobuf::protoc --proto_path=${PROJECT_SOURCE_DIR}/tests/grpc
            --cpp_out=${out} --grpc_out=${out}
            --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${proto}
    DEPENDS "${proto}" protobuf::protoc gRPC::grpc_cpp_plugin
    COMMENT "protoc: tests/grpc/echo.proto"
    VERBATIM)
  add_library(${target} STATIC "${out}/echo.pb.cc" "${out}/echo.grpc.pb.cc")
  target_include_directories(${target} SYSTEM PUBLIC "${out}")
  target_link_libraries(${target} PUBLIC gRPC::grpc++ protobuf::libprotobuf)
endfunction()
