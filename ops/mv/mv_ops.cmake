# MambaVision ops (layernorm, linear, dwconv1d, attention, conv2d, window,
# pool): one folder each under ops/, with <op>_reference.c (double),
# <op>_cpu.c (CPU kernel) and <op>_gpu.cuh (the GPU kernel source compiled by
# both GPU backends). ops/mv/ holds the dispatchers shared by all of them.
set(MVRT_MV_OP_DIRS layernorm linear dwconv1d attention conv2d window pool)
set(_mvrt_mv_ref_sources ${PROJECT_SOURCE_DIR}/ops/mv/mv_reference.c)
set(_mvrt_mv_cpu_sources ${PROJECT_SOURCE_DIR}/ops/mv/mv_cpu.c)
foreach(_op IN LISTS MVRT_MV_OP_DIRS)
  file(GLOB _r CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/${_op}/*_reference.c)
  file(GLOB _c CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/${_op}/*_cpu.c)
  list(APPEND _mvrt_mv_ref_sources ${_r})
  list(APPEND _mvrt_mv_cpu_sources ${_c})
endforeach()

add_library(mvrt_mv_reference STATIC ${_mvrt_mv_ref_sources})
set_target_properties(mvrt_mv_reference PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(mvrt_mv_reference PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/ops/common)
if(UNIX)
  target_link_libraries(mvrt_mv_reference PUBLIC m)
endif()

add_library(mvrt_mv_cpu STATIC ${_mvrt_mv_cpu_sources})
set_target_properties(mvrt_mv_cpu PROPERTIES
  POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden C_EXTENSIONS ON)
target_compile_options(mvrt_mv_cpu PRIVATE -O3 -ffp-contract=fast)
target_include_directories(mvrt_mv_cpu PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/ops/common)
if(OpenMP_C_FOUND)
  target_link_libraries(mvrt_mv_cpu PUBLIC OpenMP::OpenMP_C)
endif()
if(UNIX)
  target_link_libraries(mvrt_mv_cpu PUBLIC m)
endif()

# OpenBLAS for the CPU linear when present (Debian: libopenblas-dev); the
# build works without it (mvrt's own SGEMM). MVRT_WITH_OPENBLAS=OFF forces
# the built-in one.
option(MVRT_WITH_OPENBLAS "Use OpenBLAS for the CPU linear when found" ON)
set(MVRT_CPU_GEMM "builtin")
if(MVRT_WITH_OPENBLAS)
  find_path(MVRT_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread)
  find_library(MVRT_OPENBLAS_LIBRARY NAMES openblas)
  if(MVRT_CBLAS_INCLUDE_DIR AND MVRT_OPENBLAS_LIBRARY)
    target_include_directories(mvrt_mv_cpu PRIVATE ${MVRT_CBLAS_INCLUDE_DIR})
    target_link_libraries(mvrt_mv_cpu PUBLIC ${MVRT_OPENBLAS_LIBRARY})
    target_compile_definitions(mvrt_mv_cpu PRIVATE MVRT_HAVE_OPENBLAS=1)
    set(MVRT_CPU_GEMM "openblas")
  endif()
endif()
message(STATUS "mvrt: CPU linear uses ${MVRT_CPU_GEMM} SGEMM")
