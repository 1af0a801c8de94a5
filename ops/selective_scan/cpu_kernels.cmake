# Vectorized CPU kernels of the selective scan -> static library mvrt_scan_cpu.
# scan_cpu_impl.h is compiled once per instruction set, each file with its
# own -m flags; scan_cpu.c picks one at run time (__builtin_cpu_supports).
set(_mvrt_scan_dir ${CMAKE_CURRENT_SOURCE_DIR})
set(_mvrt_scan_cpu_sources ${_mvrt_scan_dir}/scan_cpu.c ${_mvrt_scan_dir}/scan_cpu_generic.c
                            ${_mvrt_scan_dir}/scan_cpu_complex.c)
set(_mvrt_scan_x86 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i.86|x86)$")
  set(_mvrt_scan_x86 ON)
  list(APPEND _mvrt_scan_cpu_sources ${_mvrt_scan_dir}/scan_cpu_avx2.c ${_mvrt_scan_dir}/scan_cpu_avx512.c)
  set_source_files_properties(${_mvrt_scan_dir}/scan_cpu_avx2.c PROPERTIES
    COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
  set_source_files_properties(${_mvrt_scan_dir}/scan_cpu_avx512.c PROPERTIES
    COMPILE_OPTIONS "-mavx512f;-mavx2;-mfma;-mf16c;-mprefer-vector-width=512")
endif()

add_library(mvrt_scan_cpu STATIC ${_mvrt_scan_cpu_sources})
set_target_properties(mvrt_scan_cpu PROPERTIES
  POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
# GCC/Clang vector extensions need GNU C; FMA contraction is what makes the
# recurrence fast (-std=c11 would turn it off).
set_target_properties(mvrt_scan_cpu PROPERTIES C_EXTENSIONS ON)
target_compile_options(mvrt_scan_cpu PRIVATE -O3 -ffp-contract=fast)
if(_mvrt_scan_x86)
  target_compile_definitions(mvrt_scan_cpu PRIVATE MVRT_SCAN_HAVE_X86)
endif()
target_include_directories(mvrt_scan_cpu PUBLIC ${PROJECT_SOURCE_DIR} ${_mvrt_scan_dir})
if(OpenMP_C_FOUND)
  target_link_libraries(mvrt_scan_cpu PUBLIC OpenMP::OpenMP_C)
endif()
if(UNIX)
  target_link_libraries(mvrt_scan_cpu PUBLIC m)
endif()
