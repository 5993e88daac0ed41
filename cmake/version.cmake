# The version is defined once, in include/accel/accel.h (ACCEL_VERSION_MAJOR/MINOR/PATCH
# and ACCEL_ABI_VERSION); this reads it so the SONAME and packages follow the header.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../include/accel/accel.h" _accel_version_lines
     REGEX "^#define ACCEL_(VERSION_MAJOR|VERSION_MINOR|VERSION_PATCH|ABI_VERSION) +[0-9]+")
foreach(_line IN LISTS _accel_version_lines)
  string(REGEX MATCH "^#define (ACCEL_[A-Z_]+) +([0-9]+)" _ "${_line}")
  set(${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
if(NOT DEFINED ACCEL_VERSION_MAJOR OR NOT DEFINED ACCEL_ABI_VERSION)
  message(FATAL_ERROR "could not read the version macros from include/accel/accel.h")
endif()
set(ACCEL_VERSION "${ACCEL_VERSION_MAJOR}.${ACCEL_VERSION_MINOR}.${ACCEL_VERSION_PATCH}")
