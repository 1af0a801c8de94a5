# Double-precision reference of the selective scan (forward and backward).
# Used by tests and tools to check every backend; never linked into libmvrt.
add_library(mvrt_scan_reference STATIC ${CMAKE_CURRENT_SOURCE_DIR}/scan_reference.c)
set_target_properties(mvrt_scan_reference PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(mvrt_scan_reference PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
if(UNIX)
  target_link_libraries(mvrt_scan_reference PUBLIC m)
endif()
