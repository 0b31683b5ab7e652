# The libraries behind array I/O (kiln/io/): nlohmann-json (header only) for safetensors
# headers and zlib for .npz. Found on the system first, else under KILN_DEPS_PREFIX: a
# folder of Debian/Ubuntu packages unpacked with `dpkg -x` (scripts/fetch-deps.sh fills
# build/deps, the default, for machines without network). Both stay private to libkiln.

set(KILN_DEPS_PREFIX "${PROJECT_SOURCE_DIR}/build/deps" CACHE PATH
    "Folder with unpacked .deb packages (usr/include, usr/lib) searched after the system")
set(_kiln_deps_include "${KILN_DEPS_PREFIX}/usr/include")
set(_kiln_deps_lib "${KILN_DEPS_PREFIX}/usr/lib/x86_64-linux-gnu" "${KILN_DEPS_PREFIX}/usr/lib"
    "${KILN_DEPS_PREFIX}/lib/x86_64-linux-gnu")

find_path(KILN_NLOHMANN_JSON_INCLUDE nlohmann/json.hpp HINTS ${_kiln_deps_include})
if(NOT KILN_NLOHMANN_JSON_INCLUDE)
  message(FATAL_ERROR
    "kiln: nlohmann/json.hpp not found. Install nlohmann-json3-dev (scripts/setup.sh does), or "
    "run scripts/fetch-deps.sh on a machine with network and pass -DKILN_DEPS_PREFIX=<its build/deps>.")
endif()

find_path(KILN_ZLIB_INCLUDE zlib.h HINTS ${_kiln_deps_include})
# Shared only (a static libz.a is not built for a shared libkiln); libz.so.1 on machines
# without zlib1g-dev, whose libz.so symlink is missing (or dangling in build/deps).
find_library(KILN_ZLIB_LIBRARY NAMES libz.so libz.so.1 HINTS ${_kiln_deps_lib})
if(NOT KILN_ZLIB_INCLUDE OR NOT KILN_ZLIB_LIBRARY)
  message(FATAL_ERROR
    "kiln: zlib not found (zlib.h: ${KILN_ZLIB_INCLUDE}, library: ${KILN_ZLIB_LIBRARY}). Install "
    "zlib1g-dev, or run scripts/fetch-deps.sh and pass -DKILN_DEPS_PREFIX=<its build/deps>.")
endif()

function(kiln_link_io_deps target)
  target_include_directories(${target} SYSTEM PRIVATE ${KILN_NLOHMANN_JSON_INCLUDE} ${KILN_ZLIB_INCLUDE})
  target_link_libraries(${target} PRIVATE ${KILN_ZLIB_LIBRARY})
endfunction()
message(STATUS "kiln: array I/O with nlohmann-json from ${KILN_NLOHMANN_JSON_INCLUDE}, zlib ${KILN_ZLIB_LIBRARY}")
