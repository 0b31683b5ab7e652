// Devices and streams: cpu, gpu, Device, Stream, default_device, set_default_device,
// default_stream, set_default_stream, new_stream, stream(...) (a context manager),
// synchronize, is_available.
#include <pybind11/native_enum.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/utsname.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "bindings.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/backend/gpu.h"
#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/backend/kernels/host_compiler.h"
#include "kiln/device.h"
#if KILN_WITH_CUDA
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/jit.h"
#endif

namespace kiln::python {

namespace {

template <typename T>
std::string to_string(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Streams made by Python's new_stream belong to the thread that made it, as in MLX: another
// thread entering `with stream(s)` gets a RuntimeError (new_thread_local_stream gives every
// thread its own; new_thread_unsafe_stream one without an owner).
struct StreamOwners {
  std::mutex mu;
  std::map<int, std::thread::id> owner;  // by stream index
};
StreamOwners& stream_owners() {
  static auto* o = new StreamOwners;
  return *o;
}

Stream new_owned_stream(Device d) {
  Stream s = new_stream(d);
  auto& o = stream_owners();
  std::lock_guard lk(o.mu);
  o.owner[s.index] = std::this_thread::get_id();
  return s;
}

void check_stream_owner(const Stream& s) {
  auto& o = stream_owners();
  std::lock_guard lk(o.mu);
  auto it = o.owner.find(s.index);
  if (it != o.owner.end() && it->second != std::this_thread::get_id()) {
    throw std::runtime_error("[stream] " + to_string(s) +
                             " was created by new_stream on another thread and belongs to it; use "
                             "new_thread_local_stream for a stream every thread can use.");
  }
}

// `with kiln.core.stream(s):` makes `s` (or a device's default stream) the default for
// the ops inside, and restores the previous defaults on exit.
class StreamContext {
 public:
  explicit StreamContext(StreamOrDevice target) : target_(target) {
    if (std::holds_alternative<std::monostate>(target_)) {
      throw std::invalid_argument("[stream] Expected a Stream or a Device, got None.");
    }
  }

  void enter() {
    prev_device_ = default_device();
    if (auto* s = std::get_if<Stream>(&target_)) {
      check_stream_owner(*s);
      prev_stream_ = default_stream(s->device);
      set_default_device(s->device);
      set_default_stream(*s);
    } else {
      set_default_device(std::get<Device>(target_));
    }
  }

  void exit() {
    if (prev_stream_) set_default_stream(*prev_stream_);
    if (prev_device_) set_default_device(*prev_device_);
    prev_stream_.reset();
    prev_device_.reset();
  }

 private:
  StreamOrDevice target_;
  std::optional<Device> prev_device_;
  std::optional<Stream> prev_stream_;
};

// A stream that is a different kiln stream on each thread using it (MLX's
// new_thread_local_stream): each thread's stream is created on its first use.
struct ThreadLocalStream {
  Device device;
  uint64_t id;

  Stream resolve() const {
    auto& mine = streams();
    auto it = mine.find(id);
    if (it == mine.end()) it = mine.emplace(id, new_stream(device)).first;
    return it->second;
  }
  static std::map<uint64_t, Stream>& streams() {
    thread_local std::map<uint64_t, Stream> per_thread;
    return per_thread;
  }
};

std::atomic<uint64_t> next_thread_local_id{1};

// The processor's model name from /proc/cpuinfo ("model name", or "Hardware"/"CPU part" on
// some ARM kernels); "cpu" where the file says nothing usable.
std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    if (key == "model name" || key == "Hardware") {
      auto start = line.find_first_not_of(" \t", colon + 1);
      if (start != std::string::npos) return line.substr(start);
    }
  }
  return "cpu";
}

// The machine architecture as `uname -m` prints it.
std::string cpu_architecture() {
  struct utsname u;
  if (uname(&u) == 0) return u.machine;
  return "unknown";
}

}  // namespace

void init_device(py::module_& m) {
  py::native_enum<Device::DeviceType>(m, "DeviceType", "enum.Enum",
                                      "The kind of a device: ``cpu`` or ``gpu``.")
      .value("cpu", Device::cpu)
      .value("gpu", Device::gpu)
      .export_values()
      .finalize();

  py::class_<Device>(m, "Device", R"doc(
    A device: its type (``kiln.core.cpu`` or ``kiln.core.gpu``) and index. Wherever a
    Device is expected, a DeviceType may be given (``kiln.core.gpu`` means GPU 0).
  )doc")
      .def(py::init<Device::DeviceType, int>(), py::arg("type"), py::arg("index") = 0)
      .def_readonly("type", &Device::type)
      .def_readonly("index", &Device::index)
      .def("__repr__", &to_string<Device>)
      .def("__eq__",
           [](const Device& a, py::object b) {
             if (py::isinstance<Device>(b)) return a == b.cast<Device>();
             if (py::isinstance<Device::DeviceType>(b))
               return a == Device(b.cast<Device::DeviceType>());
             return false;
           })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; });
  py::implicitly_convertible<Device::DeviceType, Device>();

  py::class_<Stream> stream_class(m, "Stream", R"doc(
    An ordered queue of work on one device. Work on different streams may overlap; kiln
    inserts the waits a graph needs across streams. Create one with :func:`new_stream`.
  )doc");
  stream_class.def_readonly("device", &Stream::device)
      .def_readonly("index", &Stream::index)
      .def("__repr__", &to_string<Stream>)
      .def("__eq__",
           [](const Stream& a, py::object b) {
             return py::isinstance<Stream>(b) && a == b.cast<Stream>();
           })
      .def("__hash__", [](const Stream& s) { return s.index; });

  m.def("default_device", &default_device, R"doc(
    The device ops run on when none is given: the GPU when one is usable, else the CPU.
    The environment variable ``KILN_DEVICE=cpu|gpu`` overrides the initial choice.
  )doc");
  m.def("set_default_device", &set_default_device, py::arg("device"), R"doc(
    Makes ``device`` the default device. ValueError if it is not available.
  )doc");
  m.def("is_available", &is_available, py::arg("device"), R"doc(
    Whether ops can run on ``device``: always for the CPU, for the GPU when a CUDA driver
    and device are present.
  )doc");
  m.def("default_stream", &default_stream, py::arg("device"), R"doc(
    The default stream of ``device``. ValueError if the device is not available.
  )doc");
  m.def("set_default_stream", &set_default_stream, py::arg("stream"), R"doc(
    Makes ``stream`` the default stream of its device.
  )doc");
  m.def("new_stream", &new_owned_stream, py::arg("device"), R"doc(
    A new stream on ``device``, owned by the calling thread: entering ``stream(s)`` on
    another thread raises RuntimeError (as MLX). ValueError if the device is not available.
  )doc");
  m.def("new_thread_unsafe_stream", &new_stream, py::arg("device"), R"doc(
    A new stream on ``device`` that any thread may use (the caller orders the work of the
    threads sharing it).
  )doc");

  py::class_<ThreadLocalStream>(m, "ThreadLocalStream", R"doc(
    A stream that stands for a separate stream on each thread that uses it, created on the
    thread's first use. Pass it wherever a stream is accepted. See
    :func:`new_thread_local_stream`.
  )doc")
      .def_readonly("device", &ThreadLocalStream::device)
      .def("__repr__", [](const ThreadLocalStream& t) {
        return "ThreadLocalStream(" + to_string(t.device) + ")";
      });
  // Resolved to the calling thread's stream wherever a Stream is expected.
  stream_class.def(py::init([](const ThreadLocalStream& t) { return t.resolve(); }));
  py::implicitly_convertible<ThreadLocalStream, Stream>();
  m.def(
      "new_thread_local_stream",
      [](Device d) {
        default_stream(d);  // ValueError now, not at first use, when d is unavailable
        return ThreadLocalStream{d, next_thread_local_id++};
      },
      py::arg("device"), R"doc(
    A :class:`ThreadLocalStream` on ``device``: each thread using it gets its own stream, so
    threads evaluating independent graphs do not serialize on one queue.
  )doc");
  m.def(
      "clear_streams",
      []() {
        {
          py::gil_scoped_release nogil;
          synchronize();
        }
        ThreadLocalStream::streams().clear();
      },
      R"doc(
    Waits for all submitted work and forgets the calling thread's thread-local streams (a
    later use creates new ones).
  )doc");
  m.def(
      "device_count",
      [](Device::DeviceType t) { return t == Device::cpu ? 1 : gpu::device_count(); },
      py::arg("device_type"), R"doc(
    The number of devices of ``device_type``: 1 for the CPU, the number of CUDA GPUs (0
    without a driver or a CUDA build) for the GPU.
  )doc");

  py::class_<StreamContext>(m, "StreamContext", R"doc(
    The context manager returned by :func:`stream`.
  )doc")
      .def(py::init<StreamOrDevice>(), py::arg("s"))
      .def("__enter__", [](StreamContext& c) { c.enter(); })
      .def("__exit__", [](StreamContext& c, py::args) { c.exit(); });
  m.def(
      "stream", [](StreamOrDevice s) { return StreamContext(s); }, py::arg("s"), R"doc(
    A context manager that makes ``s`` the default stream (and its device the default
    device) inside a ``with`` block.

    Args:
        s (Stream or Device): The stream, or a device whose default stream to use.

    Example:
        >>> with kiln.core.stream(kiln.core.cpu):
        ...     y = x + 1   # runs on the CPU
  )doc");

  m.def(
      "synchronize",
      [](StreamOrDevice s) {
        py::gil_scoped_release nogil;
        if (std::holds_alternative<std::monostate>(s))
          synchronize();
        else
          synchronize(to_stream(s));
      },
      py::arg("stream") = py::none(), R"doc(
    Blocks until the work submitted to ``stream`` (a stream, or a device for its default
    stream; without one, every stream) has finished. As in MLX, an error raised by work that
    :func:`async_eval` submitted, and that no array has raised yet, is raised here (once).
  )doc");

  // Diagnostics (python -m kiln info).
  m.def(
      "device_info",
      [](std::optional<Device> d) {
        Device dev = d ? *d : default_device();
        py::dict info;
        if (dev.type == Device::cpu) {
          info["device_name"] = cpu_model_name();
          info["architecture"] = cpu_architecture();
          info["threads"] = cpu::num_threads();
          return info;
        }
        default_stream(dev);  // throws, with the reason, when the GPU is not available
#if KILN_WITH_CUDA
        auto& ctx = gpu::device_context(dev.index);
        int cc = ctx.compute_capability();
        info["device_name"] = ctx.name();
        info["memory_size"] = ctx.total_memory();
        info["compute_capability"] = std::to_string(cc / 10) + "." + std::to_string(cc % 10);
        info["architecture"] = ctx.target();
        info["sm_count"] = ctx.sm_count();
#endif
        return info;
      },
      py::arg("device") = py::none(), R"doc(
    A dict describing ``device`` (default: the default device). For a GPU: ``device_name``,
    ``memory_size`` (bytes), ``compute_capability`` ("9.0"), ``architecture`` (what NVRTC
    compiles for, "sm_90") and ``sm_count``; for the CPU: ``device_name`` (the processor's model name), ``architecture`` (as
    ``uname -m``: "x86_64", "aarch64") and ``threads``.
    ValueError for a GPU that is not available.
  )doc");
  m.def(
      "kernel_toolchain",
      []() {
        py::dict info;
#if KILN_WITH_CUDA
        auto [major, minor] = gpu::nvrtc_version();
        info["nvrtc_version"] = std::to_string(major) + "." + std::to_string(minor);
#else
        info["nvrtc_version"] = py::none();
#endif
        try {
          info["host_compiler"] = kernels::host_compiler().identity;
        } catch (const std::exception& e) {
          info["host_compiler"] = py::none();
          info["host_compiler_error"] = std::string(e.what());
        }
        info["cache_dir"] = kernels::cache_dir();
        return info;
      },
      R"doc(
    What compiles custom kernels, as a dict: ``nvrtc_version`` ("12.8"; None in a build
    without CUDA), ``host_compiler`` (the C++ compiler of CPU kernels with its version line;
    None and ``host_compiler_error`` when there is none), and ``cache_dir``, the on-disk
    kernel cache ("" when it is off: KILN_CACHE=0).
  )doc");
}

}  // namespace kiln::python
