# Finds the HIP toolchain that Debian 12 offers (ROCm 5.2 headers and
# libamdhip64 + Debian's clang-19) and prepares what gfx942 needs.
#
# Why not enable_language(HIP): CMake 3.25 looks for <root>/lib/cmake/hip-lang,
# which Debian lacks. A plain custom command calling clang++-19 is the least
# fragile way (see shared/notes/hip-toolchain.md).
#
# Why a generated device library: ROCm 5.2's bitcode has no
# oclc_isa_version_942.bc, which clang-19 needs for MI300X (gfx942). It is a
# one-constant LLVM module (@__oclc_ISA_version = 9402); we generate it in the
# build tree next to symlinks to Debian's bitcode files.
#
# Sets: MVRT_HIP_FOUND, MVRT_HIP_CLANG, MVRT_HIP_ROCM_PATH, MVRT_HIP_LIBRARY, MVRT_HIP_INCLUDE_DIR,
#       MVRT_HIP_DEVICE_LIB_DIR, MVRT_HIP_REASON (why not found).

set(MVRT_HIP_FOUND FALSE)
set(MVRT_HIP_REASON "")
set(MVRT_HIP_ARCHS "gfx90a;gfx942" CACHE STRING "AMD GPU targets of the HIP backend")

# A ROCm install (ROCM_PATH, /opt/rocm) wins over Debian's packages when both
# exist; every result can be overridden with -D<VAR>=... .
set(_mvrt_rocm_hints)
if(DEFINED ENV{ROCM_PATH})
  list(APPEND _mvrt_rocm_hints $ENV{ROCM_PATH})
endif()
list(APPEND _mvrt_rocm_hints /opt/rocm)
find_program(MVRT_HIP_CLANG NAMES clang++ PATHS ${_mvrt_rocm_hints} PATH_SUFFIXES llvm/bin lib/llvm/bin NO_DEFAULT_PATH)
find_program(MVRT_HIP_CLANG NAMES clang++-19 clang++-20 clang++-18)
find_path(MVRT_HIP_INCLUDE_DIR hip/hip_runtime.h HINTS ${_mvrt_rocm_hints} PATH_SUFFIXES include PATHS /usr/include)
find_library(MVRT_HIP_LIBRARY NAMES amdhip64 HINTS ${_mvrt_rocm_hints} PATH_SUFFIXES lib PATHS /usr/lib/x86_64-linux-gnu)
find_path(MVRT_HIP_BITCODE_DIR ocml.bc HINTS ${_mvrt_rocm_hints}
          PATH_SUFFIXES amdgcn/bitcode lib/llvm/lib/clang/19/lib/amdgcn/bitcode
          PATHS /usr/lib/x86_64-linux-gnu/amdgcn/bitcode)
# The ROCm root passed to clang (--rocm-path): the folder above include/.
get_filename_component(MVRT_HIP_ROCM_PATH "${MVRT_HIP_INCLUDE_DIR}/.." ABSOLUTE)
string(REGEX REPLACE "clang\\+\\+" "clang" _mvrt_hip_cc "${MVRT_HIP_CLANG}")

if(NOT MVRT_HIP_CLANG)
  set(MVRT_HIP_REASON "clang++-19 not found (apt-get install clang-19 lld-19)")
elseif(NOT MVRT_HIP_INCLUDE_DIR OR NOT MVRT_HIP_LIBRARY)
  set(MVRT_HIP_REASON "HIP runtime headers/library not found (apt-get install libamdhip64-dev)")
elseif(NOT MVRT_HIP_BITCODE_DIR)
  set(MVRT_HIP_REASON "AMD device libraries not found (apt-get install rocm-device-libs)")
else()
  set(MVRT_HIP_DEVICE_LIB_DIR ${CMAKE_BINARY_DIR}/hip-device-libs)
  file(MAKE_DIRECTORY ${MVRT_HIP_DEVICE_LIB_DIR})
  file(GLOB _mvrt_bitcode ${MVRT_HIP_BITCODE_DIR}/*.bc)
  foreach(_bc IN LISTS _mvrt_bitcode)
    get_filename_component(_name ${_bc} NAME)
    file(CREATE_LINK ${_bc} ${MVRT_HIP_DEVICE_LIB_DIR}/${_name} SYMBOLIC)
  endforeach()
  if(NOT EXISTS ${MVRT_HIP_BITCODE_DIR}/oclc_isa_version_942.bc)
    set(_ll ${MVRT_HIP_DEVICE_LIB_DIR}/oclc_isa_version_942.ll)
    file(WRITE ${_ll}
      "target triple = \"amdgcn-amd-amdhsa\"\n"
      "@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 9402, align 4\n")
    execute_process(
      COMMAND ${_mvrt_hip_cc} --target=amdgcn-amd-amdhsa -nogpulib -c -emit-llvm ${_ll}
              -o ${MVRT_HIP_DEVICE_LIB_DIR}/oclc_isa_version_942.bc
      RESULT_VARIABLE _rc ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
      set(MVRT_HIP_REASON "could not generate oclc_isa_version_942.bc: ${_err}")
    endif()
  endif()
  if(MVRT_HIP_REASON STREQUAL "")
    set(MVRT_HIP_FOUND TRUE)
  endif()
endif()

# mvrt_hip_compile(<out_object_var> <source> [DEPENDS ...]): compiles one HIP
# source for every MVRT_HIP_ARCHS target into one fat object.
function(mvrt_hip_compile out_var source)
  cmake_parse_arguments(ARG "" "" "DEPENDS;INCLUDES;DEFINES" ${ARGN})
  get_filename_component(_name ${source} NAME_WE)
  set(_obj ${CMAKE_CURRENT_BINARY_DIR}/${_name}.hip.o)
  set(_arch_flags "")
  foreach(_a IN LISTS MVRT_HIP_ARCHS)
    list(APPEND _arch_flags --offload-arch=${_a})
  endforeach()
  set(_inc_flags "")
  foreach(_i IN LISTS ARG_INCLUDES)
    list(APPEND _inc_flags -I${_i})
  endforeach()
  set(_def_flags "")
  foreach(_d IN LISTS ARG_DEFINES)
    list(APPEND _def_flags -D${_d})
  endforeach()
  add_custom_command(
    OUTPUT ${_obj}
    # -Wno-pass-failed: "#pragma unroll" over run-time trip counts is a hint
    # the AMD backend may not honour; it says so once per instantiation.
    COMMAND ${MVRT_HIP_CLANG} -x hip -std=c++17 -O3 -fPIC -fvisibility=hidden -Wall -Wno-pass-failed
            --rocm-path=${MVRT_HIP_ROCM_PATH} --rocm-device-lib-path=${MVRT_HIP_DEVICE_LIB_DIR}
            ${_arch_flags} -D__HIP_PLATFORM_AMD__ ${_def_flags} ${_inc_flags}
            -c ${source} -o ${_obj}
    DEPENDS ${source} ${ARG_DEPENDS}
    COMMENT "HIP: compiling ${_name} for ${MVRT_HIP_ARCHS}"
    VERBATIM)
  set(${out_var} ${_obj} PARENT_SCOPE)
endfunction()
