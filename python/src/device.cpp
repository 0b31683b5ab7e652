// Devices and streams: cpu, gpu, Device, Stream, default_device, set_default_device,
// default_stream, set_default_stream, new_stream, stream(...) (a context manager),
// synchronize, is_available.
#include <pybind11/native_enum.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <sstream>

#include "bindings.h"
#include "kiln/device.h"

namespace kiln::python {

namespace {

template <typename T>
std::string to_string(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
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

  py::class_<Stream>(m, "Stream", R"doc(
    An ordered queue of work on one device. Work on different streams may overlap; kiln
    inserts the waits a graph needs across streams. Create one with :func:`new_stream`.
  )doc")
      .def_readonly("device", &Stream::device)
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
  m.def("new_stream", &new_stream, py::arg("device"), R"doc(
    A new stream on ``device``. ValueError if the device is not available.
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
      [](std::optional<Stream> s) {
        py::gil_scoped_release nogil;
        if (s)
          synchronize(*s);
        else
          synchronize();
      },
      py::arg("stream") = py::none(), R"doc(
    Blocks until the work submitted to ``stream`` (or, without a stream, to every stream)
    has finished.
  )doc");
}

}  // namespace kiln::python
