# Installs mvrt to a prefix, MOVES the prefix (relocatable: no build paths
# baked in), then builds and runs a C program against it twice: once through
# find_package(mvrt CONFIG), once through pkg-config; and runs the installed
# `mvrt info`. The program (examples/scan_forward.c) opens the best backend
# (the CPU plugin, found next to libmvrt) and runs a scan.
# usage: cmake -DBUILD_DIR= -DWORK= -DSOURCE= -DC_COMPILER= -DEXPECT= -P run_consumer.cmake
cmake_minimum_required(VERSION 3.20)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${ARGN}\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/staged --component Unspecified)
file(RENAME ${WORK}/staged ${WORK}/prefix)
set(P ${WORK}/prefix)
foreach(f include/mvrt/mvrt.h lib/cmake/mvrt/mvrtConfig.cmake lib/pkgconfig/mvrt.pc bin/mvrt)
  if(NOT EXISTS ${P}/${f})
    message(FATAL_ERROR "FAIL: ${f} missing from the installed tree")
  endif()
endforeach()

# the installed tool finds libmvrt and the plugins relative to itself
run(${P}/bin/mvrt info)
if(NOT last_out MATCHES "cpu: available")
  message(FATAL_ERROR "FAIL: installed mvrt info: ${last_out}")
endif()

# 1. find_package(mvrt CONFIG)
run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${WORK}/consumer-build
    -DCMAKE_PREFIX_PATH=${P} -DCONSUMER_SOURCE=${SOURCE} -DCMAKE_C_COMPILER=${C_COMPILER})
run(${CMAKE_COMMAND} --build ${WORK}/consumer-build)
run(${WORK}/consumer-build/consumer)
if(NOT last_out MATCHES "${EXPECT}")
  message(FATAL_ERROR "FAIL: find_package consumer printed: ${last_out}")
endif()
message(STATUS "find_package consumer: ${last_out}")

# 2. pkg-config
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "FAIL: pkg-config not found")
endif()
set(ENV{PKG_CONFIG_PATH} ${P}/lib/pkgconfig)
run(${PKG_CONFIG} --cflags --libs mvrt)
string(STRIP "${last_out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${C_COMPILER} -std=c11 ${SOURCE} ${flags} -Wl,-rpath,${P}/lib -o ${WORK}/consumer-pc)
run(${WORK}/consumer-pc)
if(NOT last_out MATCHES "${EXPECT}")
  message(FATAL_ERROR "FAIL: pkg-config consumer printed: ${last_out}")
endif()
message(STATUS "pkg-config consumer: ${last_out}")
message(STATUS "PASS")
