# Symbol hygiene of the shipped binaries (issue #7): what a shared object
# exports is its ABI, so nothing may leak by accident.
#   libmvrt:   exports exactly the functions the public headers declare with
#              MVRT_API (all named mvrt_*): no internal helper, no symbol of a
#              static library linked in, and no declared function missing.
#   a plugin:  exports exactly the entry point mvrt_backend_plugin_entry_v1
#              (the loader dlsym's nothing else; anything more could clash
#              with the application's or another plugin's symbols).
# Symbols some linkers define in every shared object (_init, _fini, _edata,
# _end, __bss_start and the ARM spellings) are tolerated, by exact name.
#
# usage: cmake -DNM=nm [-DLIBMVRT=libmvrt.so -DHEADERS=dir/with/mvrt/headers]
#              [-DPLUGINS=a.so|b.so] -P check_symbols.cmake
# Prints "PASS" or fails naming every offending symbol; prints "SKIP: ..." (a
# CTest skip) when nm is not available.
cmake_minimum_required(VERSION 3.20)

set(TOOLCHAIN_SYMBOLS _init _fini _edata _end __bss_start
    __bss_start__ __bss_end__ _bss_end__ __end__)
set(PLUGIN_ENTRY mvrt_backend_plugin_entry_v1)

if(NOT NM OR NOT EXISTS "${NM}")
  message("SKIP: no nm (CMAKE_NM='${NM}')")
  return()
endif()

# Defined dynamic symbols of a shared object, version suffixes removed.
function(exported_symbols file out_var)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "FAIL: ${file} does not exist")
  endif()
  execute_process(COMMAND "${NM}" -D --defined-only "${file}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${NM} -D --defined-only ${file}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(names "")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>[@[@]version]"
    if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ @]+)")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(NOT line STREQUAL "")
      message(FATAL_ERROR "FAIL: cannot parse nm output line '${line}' of ${file}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(REMOVE_ITEM names ${TOOLCHAIN_SYMBOLS})
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

set(failures "")

if(LIBMVRT)
  exported_symbols("${LIBMVRT}" exported)
  # Functions the public headers declare: MVRT_API <type> [*]mvrt_name(...
  file(GLOB headers "${HEADERS}/*.h")
  if(NOT headers)
    message(FATAL_ERROR "FAIL: no headers in '${HEADERS}'")
  endif()
  set(declared "")
  foreach(h IN LISTS headers)
    file(READ "${h}" text)
    string(REGEX MATCHALL "MVRT_API[^;({}#]*[ *]mvrt_[a-z0-9_]+[ \n]*\\(" decls "${text}")
    foreach(d IN LISTS decls)
      string(REGEX MATCH "mvrt_[a-z0-9_]+[ \n]*\\($" name "${d}")
      string(REGEX REPLACE "[ \n]*\\($" "" name "${name}")
      list(APPEND declared "${name}")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES declared)
  list(LENGTH declared n_declared)
  if(n_declared LESS 10)
    message(FATAL_ERROR "FAIL: found only ${n_declared} MVRT_API declarations in ${HEADERS}")
  endif()
  foreach(s IN LISTS exported)
    if(NOT s MATCHES "^mvrt_")
      list(APPEND failures "libmvrt exports '${s}' (only mvrt_* may be exported)")
    elseif(NOT s IN_LIST declared)
      list(APPEND failures "libmvrt exports '${s}', which no public header declares with MVRT_API")
    endif()
  endforeach()
  foreach(s IN LISTS declared)
    if(NOT s IN_LIST exported)
      list(APPEND failures "'${s}' is declared with MVRT_API but libmvrt does not export it")
    endif()
  endforeach()
  list(LENGTH exported n)
  message(STATUS "libmvrt: ${n} exported symbols, ${n_declared} declared")
endif()

string(REPLACE "|" ";" PLUGINS "${PLUGINS}")
foreach(p IN LISTS PLUGINS)
  exported_symbols("${p}" exported)
  get_filename_component(pname "${p}" NAME)
  if(NOT PLUGIN_ENTRY IN_LIST exported)
    list(APPEND failures "${pname} does not export ${PLUGIN_ENTRY}")
  endif()
  list(REMOVE_ITEM exported ${PLUGIN_ENTRY})
  foreach(s IN LISTS exported)
    list(APPEND failures "${pname} exports '${s}' (a plugin exports only ${PLUGIN_ENTRY})")
  endforeach()
  message(STATUS "${pname}: checked")
endforeach()

if(failures)
  list(LENGTH failures n)
  string(REPLACE ";" "\n  " text "${failures}")
  message(FATAL_ERROR "FAIL: ${n} symbol problem(s):\n  ${text}")
endif()
message(STATUS "PASS")
