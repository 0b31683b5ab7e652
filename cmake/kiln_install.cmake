# Installation and the CMake package that extensions use (find_package(Kiln CONFIG)).
#
# `cmake --install <build> [--prefix P] [--component development]` installs:
#   P/include/kiln/...           every header (kiln/**/*.h) and the device headers (*.cuh)
#   P/lib/libkiln.so
#   P/lib/cmake/Kiln/            KilnConfig.cmake (+ version, targets, kiln_extension.cmake)
# `pip install .` installs the same into the package directory (setup.py installs this
# component next to "python"), where `python -m kiln --cmake-dir` finds it. The build tree
# holds a package too (KilnConfig.cmake at its top), using the headers of the source tree:
# `python -m kiln --cmake-dir` points there when kiln is imported from the source tree.
#
# The package gives Kiln::kiln (alias kiln), Kiln::cblas (the BLAS kiln links, with cblas.h)
# and kiln_add_kernel_sources. Included from the root CMakeLists.txt after the subdirectories.

include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR lib/cmake/Kiln)
set(KILN_INSTALL_COMPONENT development)

# Extensions compile kiln's headers, which need C++20.
target_compile_features(kiln INTERFACE cxx_std_20)

install(TARGETS kiln EXPORT KilnTargets
  LIBRARY DESTINATION lib COMPONENT ${KILN_INSTALL_COMPONENT})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kiln/ DESTINATION include/kiln
  COMPONENT ${KILN_INSTALL_COMPONENT}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR}
  COMPONENT ${KILN_INSTALL_COMPONENT})

# What KilnConfig.cmake.in needs to know about this build.
set(KILN_CONFIG_WITH_CUDA ${KILN_WITH_CUDA})
set(KILN_CONFIG_BLAS_LIBRARIES "${BLAS_LIBRARIES}")
set(KILN_CONFIG_CBLAS_INCLUDE "${KILN_CBLAS_INCLUDE}")

write_basic_package_version_file(${CMAKE_BINARY_DIR}/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

# Installed package.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/install/KilnConfig.cmake
  INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/install/KilnConfig.cmake
  ${CMAKE_BINARY_DIR}/KilnConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/kiln_extension.cmake
  DESTINATION ${KILN_INSTALL_CMAKEDIR} COMPONENT ${KILN_INSTALL_COMPONENT})

# Build-tree package: the same files at the top of the build directory.
export(EXPORT KilnTargets NAMESPACE Kiln:: FILE ${CMAKE_BINARY_DIR}/KilnTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/KilnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_BINARY_DIR} INSTALL_PREFIX ${CMAKE_BINARY_DIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln_extension.cmake
  ${CMAKE_BINARY_DIR}/kiln_extension.cmake COPYONLY)

# ---------------------------------------------------------------- the extension test
# Installs into a prefix under the build tree, builds examples/extensions/axpby against it
# (out of tree, as a user would) and runs its pytest suite on the CPU: tests/test_extension.cmake.
if(KILN_BUILD_TESTS AND TARGET _core)
  find_package(Python 3.9 REQUIRED COMPONENTS Interpreter)
  get_filename_component(_kiln_python_path ${KILN_PYTHON_OUTPUT_DIR} DIRECTORY)
  add_test(NAME extension.axpby
    COMMAND ${CMAKE_COMMAND}
            -DKILN_BUILD_DIR=${CMAKE_BINARY_DIR}
            -DKILN_SOURCE_DIR=${PROJECT_SOURCE_DIR}
            -DKILN_PYTHON=${Python_EXECUTABLE}
            -DKILN_PYTHONPATH=${_kiln_python_path}
            -DKILN_GENERATOR=${CMAKE_GENERATOR}
            -DKILN_CXX_COMPILER=${CMAKE_CXX_COMPILER}
            -DKILN_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}
            -P ${PROJECT_SOURCE_DIR}/tests/test_extension.cmake)
  set_tests_properties(extension.axpby PROPERTIES TIMEOUT 900 ENVIRONMENT "KILN_POISON=1")
endif()
