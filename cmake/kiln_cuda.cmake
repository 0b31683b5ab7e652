# Decides whether the CUDA backend is built (KILN_WITH_CUDA) and how it links.
# The backend needs NVRTC (and cuBLASLt for GEMM) at build time; the driver (libcuda.so.1)
# is loaded at run time, so the same build runs on machines without a GPU.
set(KILN_WITH_CUDA OFF)
if(NOT KILN_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc AND TARGET CUDA::cublasLt)
    set(KILN_WITH_CUDA ON)
  elseif(KILN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KILN_CUDA=ON but the CUDA toolkit (NVRTC, cuBLASLt) was not found")
  endif()
endif()
message(STATUS "kiln: CUDA backend ${KILN_WITH_CUDA}")

function(kiln_configure_cuda target)
  target_link_libraries(${target} PRIVATE CUDA::nvrtc CUDA::cublasLt)
  target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(${target} PUBLIC KILN_WITH_CUDA=1)
endfunction()
