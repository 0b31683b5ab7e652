// DLPack export (array.__dlpack__) and import (kiln.core.from_dlpack), zero-copy both ways.
#include "dlpack.h"

#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "kiln/backend/gpu.h"

namespace kiln::python {

namespace {

[[noreturn]] void buffer_error(const std::string& m) {
  throw py::buffer_error(m);
}

bool python_is_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

DLDataType to_dl_dtype(Dtype d) {
  uint8_t bits = static_cast<uint8_t>(d.size * 8);
  switch (kind(d)) {
    case Dtype::Kind::b:
      return {kDLBool, 8, 1};
    case Dtype::Kind::u:
      return {kDLUInt, bits, 1};
    case Dtype::Kind::i:
      return {kDLInt, bits, 1};
    case Dtype::Kind::V:
      return {kDLBfloat, 16, 1};
    case Dtype::Kind::c:
      return {kDLComplex, 64, 1};
    case Dtype::Kind::f:
      return {kDLFloat, bits, 1};
  }
  return {kDLFloat, bits, 1};
}

Dtype from_dl_dtype(DLDataType t) {
  auto fail = [&]() -> Dtype {
    throw py::type_error(msg("[from_dlpack] Unsupported DLPack dtype (code ", int(t.code),
                             ", bits ", int(t.bits), ", lanes ", t.lanes, ")."));
  };
  if (t.lanes != 1) return fail();
  switch (t.code) {
    case kDLBool:
      return t.bits == 8 ? bool_ : fail();
    case kDLUInt:
      switch (t.bits) {
        case 8:
          return uint8;
        case 16:
          return uint16;
        case 32:
          return uint32;
        case 64:
          return uint64;
      }
      break;
    case kDLInt:
      switch (t.bits) {
        case 8:
          return int8;
        case 16:
          return int16;
        case 32:
          return int32;
        case 64:
          return int64;
      }
      break;
    case kDLFloat:
      switch (t.bits) {
        case 16:
          return float16;
        case 32:
          return float32;
        case 64:
          return float64;
      }
      break;
    case kDLBfloat:
      return t.bits == 16 ? bfloat16 : fail();
    case kDLComplex:
      return t.bits == 64 ? complex64 : fail();
  }
  return fail();
}

// ---------------------------------------------------------------- export

// Owns what an exported tensor points to: a handle on the array (keeping its buffer alive)
// and the shape and strides arrays.
struct ExportContext {
  array arr;
  std::vector<int64_t> shape{}, strides{};
  DLManagedTensor legacy{};
  DLManagedTensorVersioned versioned{};
};

void fill(DLTensor& t, ExportContext& ctx, void* data, int64_t byte_offset, DLDevice device) {
  t.data = data;
  t.device = device;
  t.ndim = static_cast<int32_t>(ctx.shape.size());
  t.dtype = to_dl_dtype(ctx.arr.dtype());
  t.shape = ctx.shape.data();
  t.strides = ctx.strides.data();
  t.byte_offset = static_cast<uint64_t>(byte_offset);
}

// Deletes the exported tensor unless a consumer took it (and renamed the capsule).
template <typename Managed>
void capsule_destructor(PyObject* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed: the consumer owns it
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m && m->deleter) m->deleter(m);
  PyErr_Restore(type, value, trace);
}

std::optional<DLDevice> parse_device(py::object dl_device) {
  if (dl_device.is_none()) return std::nullopt;
  auto t = dl_device.cast<py::tuple>();
  if (t.size() != 2)
    throw py::value_error("[__dlpack__] dl_device must be a (device_type, device_id) tuple.");
  return DLDevice{static_cast<DLDeviceType>(t[0].cast<int>()), t[1].cast<int32_t>()};
}

DLDevice device_of(const array& a) {
  if (a.has_storage() && a.storage().has_device()) {
    return {kDLCUDA, a.storage().device_copy()->device_index()};
  }
  return {kDLCPU, 0};
}

// ---------------------------------------------------------------- import

// Calls the producer's deleter (with the GIL: producers like NumPy and PyTorch release
// Python objects there) when kiln drops the imported buffer.
std::shared_ptr<void> take_ownership(void* managed, bool versioned) {
  return std::shared_ptr<void>(managed, [versioned](void* p) {
    if (!Py_IsInitialized() || python_is_finalizing()) return;  // the process is exiting
    py::gil_scoped_acquire gil;
    if (versioned) {
      auto* m = static_cast<DLManagedTensorVersioned*>(p);
      if (m->deleter) m->deleter(m);
    } else {
      auto* m = static_cast<DLManagedTensor*>(p);
      if (m->deleter) m->deleter(m);
    }
  });
}

array import_cpu(const DLTensor& t, Dtype dtype, std::shared_ptr<void> owner, bool will_copy) {
  Shape shape(t.shape, t.shape + t.ndim);
  Strides strides =
      t.strides ? Strides(t.strides, t.strides + t.ndim) : array::row_major_strides(shape);
  char* first = static_cast<char*>(t.data) + t.byte_offset;
  size_t size = shape_size(shape);
  if (size == 0) return zeros(shape, dtype);

  // The span of elements the view touches, from its lowest to its highest address.
  // Overlapping views (a broadcast, stride 0) are shared as they are, as kiln's own
  // broadcasts are.
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (shape[i] <= 1) continue;
    int64_t extent = strides[i] * (shape[i] - 1);
    if (extent < 0 && !will_copy) {
      // As MLX: a view with negative strides is not shared (copy=True copies it).
      throw py::value_error(msg("[from_dlpack] Cannot share a tensor with negative strides ",
                                shape_str(Shape(strides.begin(), strides.end())),
                                "; pass copy=True to copy it."));
    }
    (extent < 0 ? lo : hi) += extent;
  }
  const size_t span = static_cast<size_t>(hi - lo + 1);
  char* base = first + lo * static_cast<int64_t>(dtype.size);
  auto storage =
      Storage::wrap_host(base, span * dtype.size, [owner](void*) mutable { owner.reset(); });
  if (span < size) {
    // Overlapping elements: a strided view of the flat span, computed on the CPU, where it
    // shares the memory.
    array flat(storage, Shape{static_cast<int32_t>(span)}, dtype);
    array out = as_strided(flat, shape, strides, static_cast<size_t>(-lo), Device(Device::cpu));
    eval_nogil(out);
    return out;
  }
  array out(storage, shape, dtype);
  auto [flags, data_size] = array::layout(shape, strides);
  out.set_data(storage, data_size, strides, flags, -lo * static_cast<int64_t>(dtype.size));
  return out;
}

}  // namespace

array from_dlpack(py::object obj, std::optional<bool> copy) {
  py::object capsule;
  std::optional<DLDevice> producer;
  if (PyCapsule_CheckExact(obj.ptr())) {
    // A bare capsule: the caller is responsible for the data being ready.
    capsule = obj;
  } else {
    if (!py::hasattr(obj, "__dlpack__")) {
      throw py::type_error(
          "[from_dlpack] Expected an object with __dlpack__ or a DLPack capsule; got " +
          std::string(Py_TYPE(obj.ptr())->tp_name) + ".");
    }
    DLDevice dev{kDLCPU, 0};
    if (py::hasattr(obj, "__dlpack_device__")) {
      auto t = obj.attr("__dlpack_device__")().cast<py::tuple>();
      dev = {static_cast<DLDeviceType>(t[0].cast<int>()), t[1].cast<int32_t>()};
    }
    py::dict kwargs;
    if (dev.device_type == kDLCUDA) {
      if (!gpu::is_available()) {
        buffer_error("[from_dlpack] The tensor is on a CUDA device but kiln has no usable GPU: " +
                     gpu::unavailable_reason());
      }
      // The producer orders its work before the legacy default stream, which we wait for.
      kwargs["stream"] = 1;
      producer = dev;
    } else if (dev.device_type != kDLCPU && dev.device_type != kDLCUDAHost) {
      buffer_error(msg("[from_dlpack] Unsupported DLPack device type ", int(dev.device_type),
                       "; kiln reads CPU (1) and CUDA (2) tensors."));
    }
    try {
      capsule = obj.attr("__dlpack__")(**kwargs, py::arg("max_version") = py::make_tuple(
                                                     kDLPackMajorVersion, kDLPackMinorVersion));
    } catch (py::error_already_set& e) {
      // Producers from before DLPack 1.0 take no max_version.
      if (!e.matches(PyExc_TypeError)) throw;
      capsule = obj.attr("__dlpack__")(**kwargs);
    }
    if (producer) cuda_sync_legacy_stream(producer->device_id);
  }

  PyObject* cap = capsule.ptr();
  bool versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
  if (!versioned && !PyCapsule_IsValid(cap, "dltensor")) {
    throw py::value_error("[from_dlpack] Not a DLPack capsule, or one that was already consumed.");
  }
  void* managed = PyCapsule_GetPointer(cap, versioned ? "dltensor_versioned" : "dltensor");
  const DLTensor* tensor;
  if (versioned) {
    auto* m = static_cast<DLManagedTensorVersioned*>(managed);
    if (m->version.major > kDLPackMajorVersion) {
      buffer_error(msg("[from_dlpack] DLPack version ", m->version.major, ".", m->version.minor,
                       " is newer than the supported ", kDLPackMajorVersion, ".",
                       kDLPackMinorVersion, "."));
    }
    tensor = &m->dl_tensor;
  } else {
    tensor = &static_cast<DLManagedTensor*>(managed)->dl_tensor;
  }
  // The capsule is ours now: renaming it tells the producer's capsule destructor so.
  PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor");
  auto owner = take_ownership(managed, versioned);

  for (int i = 0; i < tensor->ndim; ++i) {
    if (tensor->shape[i] > std::numeric_limits<int32_t>::max()) {
      buffer_error(
          msg("[from_dlpack] Dimension ", i, " of size ", tensor->shape[i], " is too large."));
    }
  }
  Dtype dtype = from_dl_dtype(tensor->dtype);
  array out = [&] {
    switch (tensor->device.device_type) {
      case kDLCPU:
      case kDLCUDAHost:
      case kDLCUDAManaged:
        return import_cpu(*tensor, dtype, std::move(owner), copy.value_or(false));
      case kDLCUDA:
        return cuda_import(*tensor, dtype, std::move(owner));
    }
    buffer_error(
        msg("[from_dlpack] Unsupported DLPack device type ", int(tensor->device.device_type), "."));
  }();
  if (!copy.value_or(false)) return out;
  // The copy happens now, not lazily: a later in-place change of the producer's memory
  // must not show through.
  array c = kiln::copy(out);
  eval_nogil(c);
  return c;
}

py::capsule to_dlpack(array& self, py::object stream, py::object max_version, py::object dl_device,
                      py::object copy_obj) {
  array a = self;  // may become a copy below; `self` keeps its value
  std::optional<bool> copy;
  if (!copy_obj.is_none()) copy = copy_obj.cast<bool>();
  bool use_versioned = false;
  if (!max_version.is_none()) {
    auto v = max_version.cast<py::tuple>();
    use_versioned = v.size() >= 1 && v[0].cast<int>() >= 1;
  }
  eval_nogil(a);
  DLDevice have = device_of(a);
  DLDevice want = parse_device(dl_device).value_or(have);
  bool copied = false;
  if (copy.value_or(false)) {
    array c = kiln::copy(
        a, want.device_type == kDLCUDA ? Device(Device::gpu, want.device_id) : Device(Device::cpu));
    eval_nogil(c);
    a = c;
    copied = true;
    have = device_of(a);
  }
  if (want.device_type == kDLCUDA && have.device_type != kDLCUDA) {
    buffer_error(
        "[__dlpack__] The array's data is in host memory; it cannot be exported to a CUDA device "
        "without a copy (pass copy=True).");
  }
  if (want.device_type != kDLCUDA && want.device_type != kDLCPU) {
    buffer_error(msg("[__dlpack__] Unsupported DLPack device type ", int(want.device_type), "."));
  }

  auto* ctx = new ExportContext{a};
  std::unique_ptr<ExportContext> guard(ctx);
  ctx->shape.assign(a.shape().begin(), a.shape().end());
  ctx->strides.assign(a.strides().begin(), a.strides().end());
  void* data;
  DLDevice device = want;
  static char empty_data[64];
  if (a.size() == 0) {
    data = empty_data;
  } else if (want.device_type == kDLCUDA) {
    data = a.storage().device_copy()->ptr();
  } else {
    if (have.device_type == kDLCUDA && !a.storage().has_host() &&
        copy == std::optional<bool>(false)) {
      buffer_error(
          "[__dlpack__] The array's data is on the GPU; exporting it to the CPU needs a copy "
          "(copy=False was given).");
    }
    py::gil_scoped_release nogil;
    data = a.storage().host_ptr();  // a GPU array gets its host copy here
    device = {kDLCPU, 0};
  }
  int64_t offset = a.size() == 0 ? 0 : a.offset();
  (void)stream;  // the data is complete (evaluated and waited for), so any stream may read it

  py::capsule cap;
  if (use_versioned) {
    auto& m = ctx->versioned;
    m.version = {kDLPackMajorVersion, kDLPackMinorVersion};
    m.manager_ctx = ctx;
    m.deleter = [](DLManagedTensorVersioned* self) {
      delete static_cast<ExportContext*>(self->manager_ctx);
    };
    m.flags = kDLPackFlagReadOnly | (copied ? kDLPackFlagIsCopied : 0);
    fill(m.dl_tensor, *ctx, data, offset, device);
    cap = py::capsule(&m, "dltensor_versioned", [](PyObject* c) {
      capsule_destructor<DLManagedTensorVersioned>(c, "dltensor_versioned");
    });
  } else {
    auto& m = ctx->legacy;
    m.manager_ctx = ctx;
    m.deleter = [](DLManagedTensor* self) {
      delete static_cast<ExportContext*>(self->manager_ctx);
    };
    fill(m.dl_tensor, *ctx, data, offset, device);
    cap = py::capsule(&m, "dltensor",
                      [](PyObject* c) { capsule_destructor<DLManagedTensor>(c, "dltensor"); });
  }
  guard.release();
  return cap;
}

py::tuple dlpack_device(array& a) {
  eval_nogil(a);
  DLDevice d = device_of(a);
  return py::make_tuple(static_cast<int>(d.device_type), d.device_id);
}

void init_dlpack(py::module_& m) {
  m.def("from_dlpack", &from_dlpack, py::arg("x"), py::pos_only(), py::kw_only(),
        py::arg("copy") = py::none(), R"doc(
    An array sharing the memory of a DLPack tensor (zero-copy).

    ``x`` is any object with ``__dlpack__`` and ``__dlpack_device__`` (NumPy arrays,
    PyTorch, JAX and CuPy tensors, kiln arrays) or a DLPack capsule. The producer's memory
    stays alive as long as the kiln array (or anything computed lazily from it) needs it;
    kiln never writes to it. Views with non-negative strides are shared as they are,
    overlapping ones (broadcasts) included; as in MLX, a view with a negative stride raises
    ``ValueError`` unless ``copy=True``.

    Args:
        x: The tensor to import.
        copy (bool, optional): If ``True``, the result gets its own buffer, copied at
            the call (later changes of ``x`` do not show; any strides). If ``False`` or
            ``None`` (default), the memory is shared.

    Returns:
        array: An array with ``x``'s shape, dtype and values.

    Raises:
        TypeError: ``x`` does not support DLPack, or its dtype has no kiln counterpart.
        BufferError: ``x`` lives on a device kiln cannot read.
  )doc");
}

}  // namespace kiln::python
