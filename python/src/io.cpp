// Array I/O (kiln/io.h): load, save, savez, savez_compressed, save_safetensors, save_gguf,
// with MLX's names, arguments and return types. Files are paths (str or os.PathLike) or
// binary file objects (readinto/seek/tell to read, write to write).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/io.h"
#include "kiln/io/common.h"
#include "kiln/utils.h"

namespace kiln::python {

namespace {

// A path given as str or os.PathLike, or nullopt for anything else.
std::optional<std::string> as_path(const py::object& file) {
  if (py::isinstance<py::str>(file)) return file.cast<std::string>();
  if (py::hasattr(file, "__fspath__")) {
    py::object p = py::module_::import("os").attr("fsdecode")(file);
    return p.cast<std::string>();
  }
  return std::nullopt;
}

bool is_readable(const py::object& f) {
  return py::hasattr(f, "readinto") && py::hasattr(f, "seek") && py::hasattr(f, "tell");
}
bool is_writable(const py::object& f) {
  return py::hasattr(f, "write");
}

std::string type_name(const py::handle& h) {
  return Py_TYPE(h.ptr())->tp_name;
}

// A Python binary file object as an io::Reader. Offsets count from where the file was when
// it was passed (as np.load reads from the current position). Reads take the GIL.
class PyFileReader : public io::Reader {
 public:
  explicit PyFileReader(py::object file) : file_(std::move(file)) {
    base_ = file_.attr("tell")().cast<size_t>();
    size_t end = file_.attr("seek")(0, 2).cast<size_t>();
    file_.attr("seek")(base_, 0);
    size_ = end >= base_ ? end - base_ : 0;
  }
  ~PyFileReader() override {
    if (!Py_IsInitialized()) {
      file_.release();  // the interpreter is gone; nothing to release
      return;
    }
    py::gil_scoped_acquire gil;
    file_ = py::object();
  }
  size_t size() override { return size_; }
  std::string label() const override { return "python file object"; }
  void read(char* data, size_t n, size_t offset) override {
    py::gil_scoped_acquire gil;
    file_.attr("seek")(base_ + offset, 0);
    size_t done = 0;
    while (done < n) {
      size_t k = std::min<size_t>(n - done, size_t(1) << 30);
      py::object view = py::reinterpret_steal<py::object>(
          PyMemoryView_FromMemory(data + done, static_cast<Py_ssize_t>(k), PyBUF_WRITE));
      py::object got = file_.attr("readinto")(view);
      size_t m = got.is_none() ? 0 : got.cast<size_t>();
      if (m == 0) {
        throw std::runtime_error(msg("[load] Unable to read ", n, " bytes at offset ", offset,
                                     " of a python file object: it ended after ", done, "."));
      }
      done += m;
    }
  }

 private:
  py::object file_;
  size_t base_ = 0, size_ = 0;
};

// A Python binary file object as an io::Writer (write(), called with the GIL).
class PyFileWriter : public io::Writer {
 public:
  PyFileWriter(py::object file, std::string op) : file_(std::move(file)), op_(std::move(op)) {}
  ~PyFileWriter() override {
    if (!Py_IsInitialized()) {
      file_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    file_ = py::object();
  }
  void write(const char* data, size_t n) override {
    py::gil_scoped_acquire gil;
    while (n > 0) {
      size_t k = std::min<size_t>(n, size_t(1) << 30);
      py::object view = py::reinterpret_steal<py::object>(
          PyMemoryView_FromMemory(const_cast<char*>(data), static_cast<Py_ssize_t>(k), PyBUF_READ));
      py::object put = file_.attr("write")(view);
      // Buffered files write everything and return the count; raw files may write less.
      size_t m = put.is_none() ? k : put.cast<size_t>();
      if (m == 0)
        throw std::runtime_error("[" + op_ + "] Failed to write to a python file object.");
      data += m;
      n -= m;
      written_ += m;
    }
  }
  size_t tell() override { return written_; }
  std::string label() const override { return "python file object"; }

 private:
  py::object file_;
  std::string op_;
  size_t written_ = 0;
};

// `missing_is_invalid`: ValueError rather than RuntimeError when the file cannot be opened
// (MLX's types: ValueError for .npz and .gguf, RuntimeError for .npy and .safetensors).
std::shared_ptr<io::Reader> reader_for(const py::object& file, const char* op,
                                       bool missing_is_invalid = false) {
  if (auto path = as_path(file)) return io::open_file(*path, missing_is_invalid);
  if (is_readable(file)) return std::make_shared<PyFileReader>(file);
  throw std::invalid_argument(std::string("[") + op +
                              "] Input must be a file-like object opened in binary mode, or "
                              "string; got " +
                              type_name(file) + ".");
}

// A writer for a file object; paths go to the C++ overloads taking a path (which append
// the format's extension and replace the file only once it is complete).
std::shared_ptr<io::Writer> writer_for(const py::object& file, const char* op) {
  if (is_writable(file)) return std::make_shared<PyFileWriter>(file, op);
  throw std::invalid_argument(std::string("[") + op +
                              "] Input must be a file-like object, or string; got " +
                              type_name(file) + ".");
}

// Arrays read lazily from a Python file object must be read now, while it is open (and
// with the GIL released: the reads take it).
template <typename Map>
void eval_all(Map& arrays) {
  for (auto& [k, a] : arrays) eval_nogil(a);
}

// A name or string read from a file as str; bytes that are not UTF-8 are a damaged file.
py::str utf8(const std::string& s, const char* what) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
  if (!o) {
    PyErr_Clear();
    throw std::runtime_error(std::string("[load] ") + what + " '" + io::printable(s) +
                             "' is not valid UTF-8.");
  }
  return py::reinterpret_steal<py::str>(o);
}

py::dict to_dict(const std::unordered_map<std::string, array>& m) {
  py::dict d;
  for (const auto& [k, v] : m) d[utf8(k, "The array name")] = py::cast(v);
  return d;
}

py::dict meta_to_dict(const std::unordered_map<std::string, GGUFMetaData>& m) {
  py::dict d;
  for (const auto& [k, v] : m) {
    py::str key = utf8(k, "The metadata key");
    if (auto* a = std::get_if<array>(&v)) {
      d[key] = py::cast(*a);
    } else if (auto* s = std::get_if<std::string>(&v)) {
      d[key] = utf8(*s, "The metadata string");
    } else if (auto* l = std::get_if<std::vector<std::string>>(&v)) {
      py::list out;
      for (const auto& x : *l) out.append(utf8(x, "The metadata string"));
      d[key] = out;
    }
  }
  return d;
}

std::string infer_format(const py::object& file) {
  std::string name;
  if (auto path = as_path(file)) {
    name = *path;
  } else if (is_readable(file)) {
    if (!py::hasattr(file, "name")) {
      throw std::invalid_argument(
          "[load] Could not infer the file format of a file object without a name; pass "
          "format='npy', 'npz', 'safetensors' or 'gguf'.");
    }
    py::object n = file.attr("name");
    if (!py::isinstance<py::str>(n)) {
      throw std::invalid_argument("[load] Could not infer file format from extension");
    }
    name = n.cast<std::string>();
  } else {
    throw std::invalid_argument(
        "[load] Input must be a file-like object opened in binary mode, or string; got " +
        type_name(file) + ".");
  }
  size_t dot = name.find_last_of('.');
  size_t slash = name.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    throw std::invalid_argument("[load] Could not infer file format from extension of '" + name +
                                "'.");
  }
  return name.substr(dot + 1);
}

py::object load(const py::object& file, std::optional<std::string> format, bool return_metadata,
                StreamOrDevice s) {
  std::string fmt = format ? *format : infer_format(file);
  if (fmt != "npy" && fmt != "npz" && fmt != "safetensors" && fmt != "gguf") {
    throw std::invalid_argument("[load] Unknown file format " + fmt +
                                " (kiln reads npy, npz, safetensors and gguf).");
  }
  if (return_metadata && (fmt == "npy" || fmt == "npz")) {
    throw std::invalid_argument("[load] metadata not supported for format " + fmt);
  }
  bool own = as_path(file).has_value();
  auto in = reader_for(file, "load", fmt == "npz" || fmt == "gguf");
  if (fmt == "npy") {
    array a = kiln::load(in, s);
    if (!own) eval_nogil(a);
    return py::cast(a);
  }
  if (fmt == "npz") {
    std::unordered_map<std::string, array> arrays;
    {
      // Reads (and inflates) the members now; reading a Python file object takes the GIL.
      py::gil_scoped_release nogil;
      arrays = load_npz(in, s);
    }
    return to_dict(arrays);
  }
  if (fmt == "safetensors") {
    auto [arrays, metadata] = load_safetensors(in, s);
    if (!own) eval_all(arrays);
    if (!return_metadata) return to_dict(arrays);
    py::dict meta;
    for (const auto& [k, v] : metadata)
      meta[utf8(k, "The metadata key")] = utf8(v, "The metadata value");
    return py::make_tuple(to_dict(arrays), meta);
  }
  GGUFLoad loaded;
  {
    py::gil_scoped_release nogil;
    loaded = load_gguf(in, s);
  }
  if (!own) eval_all(loaded.first);
  if (!return_metadata) return to_dict(loaded.first);
  return py::make_tuple(to_dict(loaded.first), meta_to_dict(loaded.second));
}

void save(const py::object& file, const py::object& arr) {
  if (!is_array(arr)) {
    throw py::type_error("[save] arr must be an array; got " + type_name(arr) + ".");
  }
  const array& a = array_ref(arr);
  if (auto path = as_path(file)) {
    py::gil_scoped_release nogil;
    return kiln::save(*path, a);
  }
  auto out = writer_for(file, "save");
  py::gil_scoped_release nogil;
  kiln::save(out, a);
}

void savez_impl(const py::object& file, const py::args& args, const py::kwargs& kwargs,
                bool compressed) {
  std::vector<std::pair<std::string, array>> arrays;
  auto as_array = [](const py::handle& h, const std::string& name) -> array {
    if (!is_array(h)) {
      throw py::type_error("[savez] Array '" + name + "' must be an array; got " + type_name(h) +
                           ".");
    }
    return array_ref(h);
  };
  for (const auto& [k, v] : kwargs) {
    std::string name = k.cast<std::string>();
    arrays.emplace_back(name, as_array(v, name));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "arr_" + std::to_string(i);
    if (kwargs.contains(name)) {
      throw std::invalid_argument("[savez] Cannot use un-named variables and keyword " + name);
    }
    arrays.emplace_back(name, as_array(args[i], name));
  }
  if (auto path = as_path(file)) {
    py::gil_scoped_release nogil;
    return savez(*path, arrays, compressed);
  }
  auto out = writer_for(file, "savez");
  py::gil_scoped_release nogil;
  savez(out, arrays, compressed);
}

void save_safetensors_py(const py::object& file, const py::dict& arrays,
                         std::optional<py::dict> metadata) {
  std::unordered_map<std::string, std::string> meta;
  if (metadata) {
    for (const auto& [k, v] : *metadata) {
      if (!py::isinstance<py::str>(k) || !py::isinstance<py::str>(v)) {
        throw std::invalid_argument(
            "[save_safetensors] Metadata must be a dictionary with string keys and values");
      }
      meta.emplace(k.cast<std::string>(), v.cast<std::string>());
    }
  }
  std::unordered_map<std::string, array> map;
  for (const auto& [k, v] : arrays) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("[save_safetensors] Array names must be str; got " + type_name(k) + ".");
    }
    if (!is_array(v)) {
      throw py::type_error("[save_safetensors] '" + k.cast<std::string>() +
                           "' must be an array; got " + type_name(v) + ".");
    }
    map.emplace(k.cast<std::string>(), array_ref(v));
  }
  if (auto path = as_path(file)) {
    py::gil_scoped_release nogil;
    return save_safetensors(*path, std::move(map), std::move(meta));
  }
  auto out = writer_for(file, "save_safetensors");
  py::gil_scoped_release nogil;
  save_safetensors(out, std::move(map), std::move(meta));
}

void save_gguf_py(const py::object& file, const py::dict& arrays,
                  std::optional<py::dict> metadata) {
  std::unordered_map<std::string, GGUFMetaData> meta;
  if (metadata) {
    for (const auto& [k, v] : *metadata) {
      if (!py::isinstance<py::str>(k)) {
        throw py::type_error("[save_gguf] Metadata keys must be str; got " + type_name(k) + ".");
      }
      std::string key = k.cast<std::string>();
      if (is_array(v)) {
        meta.emplace(key, array_ref(v));
      } else if (py::isinstance<py::str>(v)) {
        meta.emplace(key, v.cast<std::string>());
      } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        std::vector<std::string> strs;
        for (const auto& x : v) {
          if (!py::isinstance<py::str>(x)) {
            throw py::type_error("[save_gguf] Metadata '" + key +
                                 "' must be a list of str; it holds " + type_name(x) + ".");
          }
          strs.push_back(x.cast<std::string>());
        }
        meta.emplace(key, std::move(strs));
      } else {
        throw py::type_error("[save_gguf] Metadata '" + key +
                             "' must be an array, a str or a list of str; got " + type_name(v) +
                             ".");
      }
    }
  }
  std::unordered_map<std::string, array> map;
  for (const auto& [k, v] : arrays) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("[save_gguf] Array names must be str; got " + type_name(k) + ".");
    }
    if (!is_array(v)) {
      throw py::type_error("[save_gguf] '" + k.cast<std::string>() + "' must be an array; got " +
                           type_name(v) + ".");
    }
    map.emplace(k.cast<std::string>(), array_ref(v));
  }
  if (auto path = as_path(file)) {
    py::gil_scoped_release nogil;
    return save_gguf(*path, std::move(map), std::move(meta));
  }
  auto out = writer_for(file, "save_gguf");
  py::gil_scoped_release nogil;
  save_gguf(out, std::move(map), std::move(meta));
}

}  // namespace

void init_io(py::module_& m) {
  m.def("load", &load, py::arg("file"), py::pos_only(), py::arg("format") = py::none(),
        py::arg("return_metadata") = false, py::kw_only(), py::arg("stream") = py::none(), R"doc(
    Load array(s) from a binary file.

    The supported formats are ``.npy``, ``.npz``, ``.safetensors``, and ``.gguf``.

    Data stored raw (``.npy``, ``.safetensors``, unquantized ``.gguf`` tensors) is read
    lazily: the header is checked now and each array reads its bytes straight into its own
    buffer when it is evaluated (from a file object: at once). ``.npz`` members are read and
    checked against their CRC-32 now.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        format (str, optional): Format of the file. If ``None``, the format is inferred
          from the file extension. Supported formats: ``npy``, ``npz``, ``safetensors``
          and ``gguf``. Default: ``None``.
        return_metadata (bool, optional): Load the metadata for formats which support
          metadata (``safetensors``: a dict of str; ``gguf``: arrays, str or lists of
          str). The metadata will be returned as an additional dictionary. Default:
          ``False``.
        stream (Stream, optional): Where the data is read; default: the CPU.

    Returns:
        array, dict, or tuple: A single array if loading from a ``.npy`` file or a dict
        mapping names to arrays if loading from a ``.npz``, ``.safetensors`` or ``.gguf``
        file. If ``return_metadata`` is ``True`` a tuple ``(arrays, metadata)`` is
        returned.

    Raises:
        ValueError: an unknown format, metadata asked of npy/npz, a dtype kiln cannot hold.
        RuntimeError: a missing, truncated or corrupt file (the message says what is wrong).

    GGUF tensors of type Q4_0, Q4_1, Q4_K and Q8_0 load as MLX loads them: ``name`` holds
    the packed values (uint32) and ``name[:-7] + ".scales"`` / ``".biases"`` the float16
    scale and bias of each group of 32 (see :func:`dequantize`).
  )doc");
  m.def("save", &save, py::arg("file"), py::arg("arr"), R"doc(
    Save the array to a binary file in ``.npy`` format (``.npy`` is appended to a path
    without it). Every dtype; bfloat16 is written with descr ``'<V2'`` as MLX does.

    Args:
        file (str, pathlib.Path, file): File to which the array is saved
        arr (array): Array to be saved.
  )doc");
  m.def(
      "savez",
      [](const py::object& file, const py::args& args, const py::kwargs& kwargs) {
        savez_impl(file, args, kwargs, false);
      },
      py::arg("file"), R"doc(
    Save several arrays to a binary file in uncompressed ``.npz`` format (``.npz`` is
    appended to a path without it).

    .. code-block:: python

        import kiln.core as mx

        x = mx.ones((10, 10))
        mx.savez("my_path.npz", x=x)

    Args:
        file (file, str, pathlib.Path): Path to file to which the arrays are saved.
        *args (arrays): Arrays to be saved, named ``arr_0``, ``arr_1``, ...
        **kwargs (arrays): Arrays to be saved. Each array will be saved with the associated
          keyword as the output file name.
  )doc");
  m.def(
      "savez_compressed",
      [](const py::object& file, const py::args& args, const py::kwargs& kwargs) {
        savez_impl(file, args, kwargs, true);
      },
      py::arg("file"), R"doc(
    Save several arrays to a binary file in compressed (deflated) ``.npz`` format.

    Args:
        file (file, str, pathlib.Path): Path to file to which the arrays are saved.
        *args (arrays): Arrays to be saved, named ``arr_0``, ``arr_1``, ...
        **kwargs (arrays): Arrays to be saved. Each array will be saved with the associated
          keyword as the output file name.
  )doc");
  m.def("save_safetensors", &save_safetensors_py, py::arg("file"), py::arg("arrays"),
        py::arg("metadata") = py::none(), R"doc(
    Save array(s) to a binary file in ``.safetensors`` format (``.safetensors`` is appended
    to a path without it). Every dtype (float64 as F64, complex64 as C64).

    See the `Safetensors documentation <https://huggingface.co/docs/safetensors/index>`_
    for more information on the format.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        arrays (dict(str, array)): The dictionary of names to arrays to be saved.
        metadata (dict(str, str), optional): The dictionary of metadata to be saved.
  )doc");
  m.def("save_gguf", &save_gguf_py, py::arg("file"), py::arg("arrays"),
        py::arg("metadata") = py::none(), R"doc(
    Save array(s) to a binary file in ``.gguf`` format (``.gguf`` is appended to a path
    without it). Tensor dtypes: float32, float16, bfloat16, float64, int8, int16, int32
    and int64.

    See the `GGUF documentation
    <https://github.com/ggerganov/ggml/blob/master/docs/gguf.md>`_ for more information on
    the format.

    Args:
        file (file, str, pathlib.Path): File in which the array is saved.
        arrays (dict(str, array)): The dictionary of names to arrays to be saved.
        metadata (dict(str, Union[array, str, list(str)]), optional): The dictionary of
          metadata to be saved. The values can be a scalar or 1D :obj:`array` (integer,
          bool, float32 or float64), a :obj:`str`, or a :obj:`list` of :obj:`str`.
  )doc");
}

}  // namespace kiln::python
