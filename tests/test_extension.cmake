# The extension test (ctest extension.axpby, registered by cmake/kiln_install.cmake): builds
# examples/extensions/axpby out of tree against an installed kiln, as a user would, and runs
# its pytest suite (on the CPU; its GPU cases run where a GPU is present). With CUDA, also
# checks that a kernel source that fails to compile is reported with its file and line.
#
#   cmake -DKILN_BUILD_DIR=... -DKILN_SOURCE_DIR=... -DKILN_PYTHON=... -DKILN_PYTHONPATH=...
#         [-DKILN_GENERATOR=Ninja] [-DKILN_CXX_COMPILER=...] [-DKILN_CXX_COMPILER_LAUNCHER=...]
#         -P tests/test_extension.cmake
#
# Works in <build>/extension-test (kept between runs, so a rerun rebuilds only what changed).

foreach(var KILN_BUILD_DIR KILN_SOURCE_DIR KILN_PYTHON KILN_PYTHONPATH)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "test_extension.cmake: -D${var}=... is required")
  endif()
endforeach()

set(work ${KILN_BUILD_DIR}/extension-test)
set(prefix ${work}/prefix)
set(example ${KILN_SOURCE_DIR}/examples/extensions/axpby)
set(package ${work}/python/kiln_sample_extensions)

# Runs a command; stops the test with its output when it fails.
function(run what)
  cmake_parse_arguments(ARG "" "WORKING_DIRECTORY;OUTPUT" "COMMAND" ${ARGN})
  if(NOT ARG_WORKING_DIRECTORY)
    set(ARG_WORKING_DIRECTORY ${work})
  endif()
  message(STATUS "[extension] ${what}")
  execute_process(COMMAND ${ARG_COMMAND} WORKING_DIRECTORY ${ARG_WORKING_DIRECTORY}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[extension] ${what} failed (${rc}):\n${out}")
  endif()
  if(ARG_OUTPUT)
    set(${ARG_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

set(cmake_args -DCMAKE_BUILD_TYPE=Release)
if(KILN_GENERATOR)
  list(APPEND cmake_args -G ${KILN_GENERATOR})
endif()
if(KILN_CXX_COMPILER)
  list(APPEND cmake_args -DCMAKE_CXX_COMPILER=${KILN_CXX_COMPILER})
endif()
if(KILN_CXX_COMPILER_LAUNCHER)
  list(APPEND cmake_args -DCMAKE_CXX_COMPILER_LAUNCHER=${KILN_CXX_COMPILER_LAUNCHER})
endif()

# ---------------------------------------------------------------- install
file(MAKE_DIRECTORY ${work})
run("install kiln into ${prefix}"
  COMMAND ${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${prefix}
          --component development)
foreach(f lib/cmake/Kiln/KilnConfig.cmake lib/cmake/Kiln/kiln_extension.cmake lib/libkiln.so
          include/kiln/extension.h include/kiln/backend/cuda/device/indexing.cuh)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "[extension] the installation lacks ${f}")
  endif()
endforeach()

# The build tree's own package, which `python -m kiln --cmake-dir` reports when kiln is
# imported from there.
run("python -m kiln --cmake-dir"
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${KILN_PYTHONPATH} KILN_CMAKE_DIR=
          ${KILN_PYTHON} -m kiln --cmake-dir
  OUTPUT cmake_dir)
string(STRIP "${cmake_dir}" cmake_dir)
if(NOT EXISTS ${cmake_dir}/KilnConfig.cmake)
  message(FATAL_ERROR "[extension] python -m kiln --cmake-dir printed '${cmake_dir}', "
                      "which holds no KilnConfig.cmake")
endif()
# The extension and kiln.core must use one libkiln: the module must come from this build.
file(REAL_PATH ${cmake_dir} cmake_dir)
file(REAL_PATH ${KILN_BUILD_DIR} build_dir)
if(NOT cmake_dir STREQUAL build_dir)
  message(FATAL_ERROR "[extension] kiln._core in ${KILN_PYTHONPATH} was built by ${cmake_dir}, "
                      "not by this build (${build_dir}): build the target _core here first.")
endif()

# ---------------------------------------------------------------- build the example
file(MAKE_DIRECTORY ${package})
configure_file(${example}/kiln_sample_extensions/__init__.py ${package}/__init__.py COPYONLY)
run("configure examples/extensions/axpby against the installed kiln"
  COMMAND ${CMAKE_COMMAND} -S ${example} -B ${work}/axpby ${cmake_args}
          -DKiln_DIR=${prefix}/lib/cmake/Kiln -DPython_EXECUTABLE=${KILN_PYTHON}
          -DCMAKE_LIBRARY_OUTPUT_DIRECTORY=${package}
  OUTPUT configure_log)
string(REGEX MATCH "kiln_sample_extensions: [^\n]*" summary "${configure_log}")
message(STATUS "[extension] ${summary}")
run("build examples/extensions/axpby" COMMAND ${CMAKE_COMMAND} --build ${work}/axpby -j 2)

# ---------------------------------------------------------------- a kernel that does not compile
string(FIND "${summary}" "CUDA backend: ON" with_cuda)
if(with_cuda GREATER -1)
  set(fixture ${KILN_SOURCE_DIR}/tests/extension/broken_kernel)
  run("configure tests/extension/broken_kernel"
    COMMAND ${CMAKE_COMMAND} -S ${fixture} -B ${work}/broken_kernel ${cmake_args}
            -DKiln_DIR=${prefix}/lib/cmake/Kiln)
  run("build tests/extension/broken_kernel" COMMAND ${CMAKE_COMMAND} --build ${work}/broken_kernel)
  run("compile broken.cu" COMMAND ${work}/broken_kernel/compile_broken OUTPUT log)
  # NVRTC names the extension's file on disk and the line of the error (broken.cu: line 5).
  string(FIND "${log}" "${fixture}/broken.cu(5): error" at)
  if(at EQUAL -1)
    message(FATAL_ERROR
      "[extension] the compile error does not name ${fixture}/broken.cu(5):\n${log}")
  endif()
  message(STATUS "[extension] the compile error names broken.cu(5)")
else()
  message(STATUS "[extension] kiln without CUDA: the kernel compile check is skipped")
endif()

# ---------------------------------------------------------------- the example's tests
run("pytest examples/extensions/axpby/tests"
  COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${work}/python:${KILN_PYTHONPATH}"
          ${KILN_PYTHON} -m pytest -q -p no:cacheprovider ${example}/tests
  OUTPUT pytest_log)
string(REGEX MATCH "[^\n]*(passed|failed)[^\n]*" pytest_summary "${pytest_log}")
message(STATUS "[extension] ${pytest_summary}")
