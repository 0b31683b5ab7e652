// <metal_logging> for Metal bodies: os_log objects (os_log_default, or os_log(subsystem,
// category)) whose log, log_info, log_debug, log_error and log_fault print one line each,
// printf-style, through the target's printf (the GPU's device printf; the CPU runtime's).
// As with Metal's logging, every call is one line: the generator (signature.cpp) appends
// the newline to a literal format string, so that the line is printed whole. Included on
// demand on the GPU (the CPU prelude always has it).
// kiln-on-demand: os_log*
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

namespace metal {

struct os_log {
  os_log() = default;
  /** A log of a subsystem and category; both only name the log on Apple platforms. */
  KILN_HD constexpr os_log(const char*, const char*) {}

#ifdef __CUDACC__
#define KILN_OS_LOG_LEVEL(NAME)                           \
  template <typename... A>                                \
  KILN_HD void NAME(const char* format, A... args) const { \
    ::printf(format, args...);                            \
  }
#else
#define KILN_OS_LOG_LEVEL(NAME)                        \
  template <typename... A>                             \
  void NAME(const char* format, A... args) const {     \
    ::kiln_user::printf(format, args...);              \
  }
#endif
  KILN_OS_LOG_LEVEL(log)
  KILN_OS_LOG_LEVEL(log_info)
  KILN_OS_LOG_LEVEL(log_debug)
  KILN_OS_LOG_LEVEL(log_error)
  KILN_OS_LOG_LEVEL(log_fault)
#undef KILN_OS_LOG_LEVEL
};

#ifdef __CUDACC__
__device__ constexpr os_log os_log_default{};
#else
inline constexpr os_log os_log_default{};
#endif

}  // namespace metal
