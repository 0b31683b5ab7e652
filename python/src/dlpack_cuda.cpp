// The CUDA side of DLPack: importing tensors that live in GPU memory (zero-copy) and
// synchronizing with their producer. Without the CUDA backend, these raise BufferError.
#include <memory>

#include "convert.h"
#include "dlpack.h"

#if KILN_WITH_CUDA
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#endif

namespace kiln::python {

#if KILN_WITH_CUDA

namespace {

// Device memory owned by another framework, shared by a kiln Storage. The producer's
// deleter runs (through `owner`) when kiln no longer needs it; kiln's stream runtime keeps
// the Storage alive until the GPU work reading it has completed.
class ForeignDeviceCopy : public DeviceCopy {
 public:
  ForeignDeviceCopy(void* ptr, int device, std::shared_ptr<void> owner)
      : ptr_(ptr), device_(device), owner_(std::move(owner)) {}

  void* ptr() override { return ptr_; }
  int device_index() const override { return device_; }
  void copy_to_host(void* dst, size_t nbytes) override {
    gpu::device_context(device_).make_current();
    KILN_CU(cuMemcpyDtoH, dst, reinterpret_cast<CUdeviceptr>(ptr_), nbytes);
  }

 private:
  void* ptr_;
  int device_;
  std::shared_ptr<void> owner_;
};

}  // namespace

void cuda_sync_legacy_stream(int device) {
  // The producer made the legacy default stream wait for its work (we passed stream=1);
  // waiting for that stream on the host orders the data before any kiln stream reads it.
  py::gil_scoped_release nogil;
  gpu::device_context(device).make_current();
  KILN_CU(cuStreamSynchronize, CU_STREAM_LEGACY);
}

array cuda_import(const DLTensor& t, Dtype dtype, std::shared_ptr<void> owner) {
  Shape shape(t.shape, t.shape + t.ndim);
  Strides strides =
      t.strides ? Strides(t.strides, t.strides + t.ndim) : array::row_major_strides(shape);
  int device = t.device.device_id;
  Device gpu_device(Device::gpu, device);
  size_t size = shape_size(shape);
  if (size == 0) return zeros(shape, dtype, gpu_device);
  char* first = static_cast<char*>(t.data) + t.byte_offset;
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (shape[i] <= 1) continue;
    int64_t extent = strides[i] * (shape[i] - 1);
    (extent < 0 ? lo : hi) += extent;
  }
  size_t span = static_cast<size_t>(hi - lo + 1);
  char* base = first + lo * static_cast<int64_t>(dtype.size);
  auto storage = Storage::device(
      std::make_unique<ForeignDeviceCopy>(base, device, std::move(owner)), span * dtype.size);
  if (array::layout(shape, strides).first.row_contiguous) return array(storage, shape, dtype);
  // Other layouts: a view over the span, on the GPU (no copy).
  array flat(storage, Shape{static_cast<int32_t>(span)}, dtype);
  return as_strided(flat, shape, strides, static_cast<size_t>(-lo), gpu_device);
}

#else

void cuda_sync_legacy_stream(int) {
  throw py::buffer_error("[from_dlpack] kiln was built without CUDA; it cannot read GPU tensors.");
}

array cuda_import(const DLTensor&, Dtype, std::shared_ptr<void>) {
  throw py::buffer_error("[from_dlpack] kiln was built without CUDA; it cannot read GPU tensors.");
}

#endif

}  // namespace kiln::python
