// DLPack: the tensor exchange ABI (https://dmlc.github.io/dlpack/latest/c_api.html) and
// the Python protocol around it (__dlpack__, __dlpack_device__, from_dlpack), written from
// the specification (ABI version 1.0, with the pre-1.0 unversioned form for old consumers).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "kiln/array.h"

namespace py = pybind11;

namespace kiln::python {

// ---------------------------------------------------------------- the C ABI

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

inline constexpr uint32_t kDLPackMajorVersion = 1;
inline constexpr uint32_t kDLPackMinorVersion = 0;
inline constexpr uint64_t kDLPackFlagReadOnly = 1ull << 0;
inline constexpr uint64_t kDLPackFlagIsCopied = 1ull << 1;

// ---------------------------------------------------------------- the Python protocol

/** `array.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None)`: a capsule
 * sharing `a`'s buffer (evaluated first), read-only. BufferError for an unsupported device
 * request or a copy the array cannot make. */
py::capsule to_dlpack(array& a, py::object stream, py::object max_version, py::object dl_device,
                      py::object copy);

/** `from_dlpack(x, copy=None)`: an array sharing (or, with copy, copying at the call) the
 * memory of a DLPack producer or capsule. TypeError for an unsupported object or dtype,
 * BufferError for a device kiln cannot read. */
array from_dlpack(py::object obj, std::optional<bool> copy);

/** Blocks until work ordered before the legacy default stream of GPU `device` is done
 * (dlpack_cuda.cpp; BufferError without the CUDA backend). */
void cuda_sync_legacy_stream(int device);

/** A kiln array sharing the CUDA memory of `t` (zero-copy); `owner` releases it. */
array cuda_import(const DLTensor& t, Dtype dtype, std::shared_ptr<void> owner);

/** `array.__dlpack_device__()`: (kDLCUDA, index) when the evaluated data is on a GPU, else
 * (kDLCPU, 0). */
py::tuple dlpack_device(array& a);

}  // namespace kiln::python
