// kiln.core.fast: custom kernels written as source strings (metal_kernel, cuda_kernel), as
// in MLX's mlx.core.fast, including the older call form of the seed documents (names taken
// from dicts at the call, outputs returned as a dict), and KernelCompileError.
#include <pybind11/stl.h>

#include <array>
#include <map>
#include <mutex>

#include "bindings.h"
#include "convert.h"
#include "kiln/fast.h"
#include "kiln/utils.h"

namespace kiln::python {

namespace {

using fast::KernelFlavour;
using fast::KernelFunction;
using fast::TemplateArg;
using TemplateArgs = std::vector<std::pair<std::string, TemplateArg>>;

std::string type_name(py::handle v) {
  return py::str(py::type::handle_of(v).attr("__name__"));
}

// The keywords of CustomKernel.__call__, parsed by hand: pybind11 looks each declared
// keyword up by a str it builds from the C name, which made up a third of the call's host
// cost. Keys from a call site are interned, so they are matched by identity first.
struct CallArgs {
  enum Key { inputs, output_shapes, output_dtypes, grid, threadgroup, templ, init_value,
             verbose, ensure_row_contiguous, stream, count };
  std::array<py::handle, count> v{};

  static const std::array<PyObject*, count>& keys() {
    static const auto k = [] {
      std::array<PyObject*, count> k{};
      const char* names[count] = {"inputs",      "output_shapes", "output_dtypes",
                                  "grid",        "threadgroup",   "template",
                                  "init_value",  "verbose",       "ensure_row_contiguous",
                                  "stream"};
      for (int i = 0; i < count; ++i) k[i] = PyUnicode_InternFromString(names[i]);
      return k;
    }();
    return k;
  }

  CallArgs(const char* tag, const py::args& args, const py::kwargs& kwargs) {
    if (!args.empty()) {
      throw py::type_error(msg("[", tag, "] A kernel takes keyword arguments only (inputs=, ",
                               "grid=, ...); got ", args.size(), " positional."));
    }
    const auto& k = keys();
    for (auto [key, value] : kwargs) {
      int i = 0;
      while (i < count && key.ptr() != k[i]) ++i;
      for (int j = 0; i == count && j < count; ++j)
        if (PyUnicode_Compare(key.ptr(), k[j]) == 0) i = j;
      if (i == count) {
        throw py::type_error(msg("[", tag, "] Unexpected keyword argument '",
                                 py::str(key).cast<std::string>(), "'."));
      }
      v[i] = value;
    }
    for (int i : {inputs, output_shapes, output_dtypes, grid, threadgroup}) {
      if (!v[i]) {
        throw py::type_error(msg("[", tag, "] Missing keyword argument '",
                                 py::str(k[i]).cast<std::string>(), "'."));
      }
    }
  }

  // An optional keyword as T (nullopt when absent or None); a wrong type is a TypeError.
  template <typename T>
  std::optional<T> get(const char* tag, Key key) const {
    if (!v[key] || v[key].is_none()) return std::nullopt;
    try {
      return v[key].cast<T>();
    } catch (const py::cast_error&) {
      throw py::type_error(msg("[", tag, "] Keyword argument '",
                               py::str(keys()[key]).cast<std::string>(), "' has the wrong type ",
                               py::str(py::type::handle_of(v[key]).attr("__name__"))
                                   .cast<std::string>(),
                               "."));
    }
  }
};

// A kernel as Python sees it. With names given at definition it wraps one KernelFunction;
// without them (the older form) the names come from the call's dicts, and each set of names
// (and ensure_row_contiguous) gets its own definition, kept for later calls.
class PyKernel {
 public:
  PyKernel(KernelFlavour flavour, std::string name,
           std::optional<std::vector<std::string>> input_names,
           std::optional<std::vector<std::string>> output_names, std::string source,
           std::string header, bool ensure_row_contiguous, bool atomic_outputs, int shared_memory,
           fast::CompileOptions options = {})
      : options_(options),
        flavour_(flavour),
        name_(std::move(name)),
        input_names_(std::move(input_names)),
        output_names_(std::move(output_names)),
        source_(std::move(source)),
        header_(std::move(header)),
        ensure_row_contiguous_(ensure_row_contiguous),
        atomic_outputs_(atomic_outputs),
        shared_memory_(shared_memory) {
    if (input_names_.has_value() != output_names_.has_value()) {
      throw std::invalid_argument(msg("[", tag(),
                                      "] Give both input_names and output_names, or "
                                      "neither (then the call's dicts name them)."));
    }
    // Named kernels are defined now, so bad names fail here.
    if (input_names_) named_ = &definition(*input_names_, *output_names_, ensure_row_contiguous_);
  }

  const std::string& name() const { return name_; }
  const char* tag() const {
    return flavour_ == KernelFlavour::metal ? "metal_kernel" : "cuda_kernel";
  }

  py::object call_kwargs(const py::args& args, const py::kwargs& kwargs) {
    CallArgs a(tag(), args, kwargs);
    using K = CallArgs;
    py::handle templ = a.v[K::templ] ? a.v[K::templ] : py::none();
    return call(a.v[K::inputs], a.v[K::output_shapes], a.v[K::output_dtypes], a.v[K::grid],
                a.v[K::threadgroup], templ, a.get<double>(tag(), K::init_value),
                a.get<bool>(tag(), K::verbose).value_or(false),
                a.get<bool>(tag(), K::ensure_row_contiguous),
                a.get<StreamOrDevice>(tag(), K::stream).value_or(StreamOrDevice{}));
  }

  py::object call(py::handle inputs, py::handle output_shapes, py::handle output_dtypes,
                  py::handle grid, py::handle threadgroup, py::handle templ,
                  std::optional<double> init_value, bool verbose,
                  std::optional<bool> ensure_row_contiguous, StreamOrDevice s) {
    const bool dict_form = py::isinstance<py::dict>(inputs);
    std::vector<std::string> in_names, out_names;
    std::vector<array> in;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    if (dict_form) {
      for (auto [k, v] : inputs.cast<py::dict>()) {
        in_names.push_back(k.cast<std::string>());
        in.push_back(input_array(v));
      }
      if (!py::isinstance<py::dict>(output_shapes) || !py::isinstance<py::dict>(output_dtypes)) {
        throw std::invalid_argument(msg("[", tag(),
                                        "] With inputs given as a dict, give "
                                        "output_shapes and output_dtypes as dicts too."));
      }
      auto dt = output_dtypes.cast<py::dict>();
      for (auto [k, v] : output_shapes.cast<py::dict>()) {
        std::string n = k.cast<std::string>();
        if (!dt.contains(k)) {
          throw std::invalid_argument(
              msg("[", tag(), "] Output '", n, "' has a shape but no dtype in output_dtypes."));
        }
        out_names.push_back(n);
        shapes.push_back(shape_of(v));
        dtypes.push_back(dtype_of(dt[k]));
      }
      if (dt.size() != out_names.size()) {
        throw std::invalid_argument(msg("[", tag(), "] output_shapes names ", out_names.size(),
                                        " outputs but output_dtypes ", dt.size(), "."));
      }
      if (input_names_) {
        // A named kernel called with dicts: inputs in the order of its names.
        in = reorder(in, in_names, *input_names_, "input");
        in_names = *input_names_;
        std::vector<Shape> s2;
        std::vector<Dtype> d2;
        for (const auto& n : *output_names_) {
          auto it = std::find(out_names.begin(), out_names.end(), n);
          if (it == out_names.end()) {
            throw std::invalid_argument(msg("[", tag(), "] Missing output '", n, "'."));
          }
          s2.push_back(shapes[it - out_names.begin()]);
          d2.push_back(dtypes[it - out_names.begin()]);
        }
        shapes = std::move(s2), dtypes = std::move(d2);
        out_names = *output_names_;
      }
    } else {
      if (!input_names_) {
        throw std::invalid_argument(msg("[", tag(), "] Kernel '", name_,
                                        "' was defined without input_names and output_names: "
                                        "pass inputs, output_shapes and output_dtypes as dicts."));
      }
      for (py::handle v : sequence(inputs, "inputs")) in.push_back(input_array(v));
      for (py::handle v : sequence(output_shapes, "output_shapes")) shapes.push_back(shape_of(v));
      for (py::handle v : sequence(output_dtypes, "output_dtypes")) dtypes.push_back(dtype_of(v));
    }
    const bool row_contiguous = ensure_row_contiguous.value_or(ensure_row_contiguous_);
    // A named kernel called with lists: its own definition, without building the names' key.
    const KernelFunction& fn =
        !dict_form && row_contiguous == ensure_row_contiguous_ ? *named_
        : dict_form ? definition(in_names, out_names, row_contiguous)
                    : definition(*input_names_, *output_names_, row_contiguous);
    std::optional<float> init;
    if (init_value) init = static_cast<float>(*init_value);
    std::vector<array> outs =
        fn(in, shapes, dtypes, triple(grid, "grid"), triple(threadgroup, "threadgroup"),
           template_args(templ), init, verbose, s);
    if (!dict_form) return py::cast(outs);
    py::dict d;
    for (size_t i = 0; i < outs.size(); ++i) d[py::str(out_names[i])] = py::cast(outs[i]);
    return d;
  }

  std::string compile(const std::vector<Dtype>& input_dtypes, const std::vector<int>& input_ndims,
                      const std::vector<Dtype>& output_dtypes, py::handle templ,
                      const std::string& target) {
    if (!input_names_) {
      throw std::invalid_argument(msg("[", tag(),
                                      "] compile() needs a kernel defined with "
                                      "input_names and output_names."));
    }
    const KernelFunction& fn = definition(*input_names_, *output_names_, ensure_row_contiguous_);
    TemplateArgs targs = template_args(templ);
    py::gil_scoped_release nogil;  // NVRTC or the host compiler may take a while
    return fn.compile(input_dtypes, input_ndims, output_dtypes, targs, target);
  }

 private:
  const KernelFunction& definition(const std::vector<std::string>& in,
                                   const std::vector<std::string>& out, bool row_contiguous) {
    std::string key;
    for (const auto& n : in) key += n + ",";
    key += ";";
    for (const auto& n : out) key += n + ",";
    key += row_contiguous ? "1" : "0";
    std::lock_guard lk(mu_);
    auto it = definitions_.find(key);
    if (it != definitions_.end()) return it->second;
    KernelFunction fn =
        flavour_ == KernelFlavour::metal
            ? fast::metal_kernel(name_, in, out, source_, header_, row_contiguous, atomic_outputs_,
                                 options_)
            : fast::cuda_kernel(name_, in, out, source_, header_, row_contiguous, atomic_outputs_,
                                shared_memory_, options_);
    return definitions_.emplace(key, std::move(fn)).first->second;
  }

  // An input: an array (or array-like), or a Python scalar as a 0-d bool, int32 or float32.
  array input_array(py::handle v) const {
    if (is_array(v)) return array_ref(v);
    if (PyBool_Check(v.ptr())) return array(v.cast<bool>());
    if (PyLong_Check(v.ptr())) {
      long long x = v.cast<long long>();
      if (x < INT32_MIN || x > INT32_MAX) {
        throw std::invalid_argument(
            msg("[", tag(), "] The integer input ", x, " does not fit in int32."));
      }
      return array(static_cast<int32_t>(x), int32);
    }
    if (PyFloat_Check(v.ptr())) return array(v.cast<float>(), float32);
    return to_array(v);
  }

  Shape shape_of(py::handle v) const {
    if (PyLong_Check(v.ptr())) return Shape{v.cast<int32_t>()};
    Shape s;
    for (py::handle d : sequence(v, "an output shape")) s.push_back(d.cast<int32_t>());
    return s;
  }

  Dtype dtype_of(py::handle v) const {
    if (!py::isinstance<Dtype>(v)) {
      throw std::invalid_argument(
          msg("[", tag(), "] Output dtypes must be kiln dtypes; got ", type_name(v), "."));
    }
    return v.cast<Dtype>();
  }

  py::list sequence(py::handle v, const char* what) const {
    if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) {
      throw std::invalid_argument(
          msg("[", tag(), "] ", what, " must be a list or tuple; got ", type_name(v), "."));
    }
    return py::list(py::reinterpret_borrow<py::object>(v));
  }

  std::tuple<int, int, int> triple(py::handle v, const char* what) const {
    py::list l = sequence(v, what);
    if (l.size() != 3) {
      throw std::invalid_argument(
          msg("[", tag(), "] ", what, " must have 3 entries (x, y, z); got ", l.size(), "."));
    }
    int x[3];
    for (int i = 0; i < 3; ++i) {
      if (!PyLong_Check(l[i].ptr())) {
        throw std::invalid_argument(msg("[", tag(), "] ", what, " must hold integers."));
      }
      long long n = l[i].cast<long long>();
      if (n < INT32_MIN || n > INT32_MAX) {
        throw std::invalid_argument(msg("[", tag(), "] ", what, " entry ", n, " is too large."));
      }
      x[i] = static_cast<int>(n);
    }
    return {x[0], x[1], x[2]};
  }

  // `template`: a list of (name, value) pairs or a dict; values are dtypes, ints or bools.
  TemplateArgs template_args(py::handle t) const {
    TemplateArgs out;
    if (t.is_none()) return out;
    std::vector<std::pair<py::object, py::object>> items;
    if (py::isinstance<py::dict>(t)) {
      for (auto [k, v] : t.cast<py::dict>())
        items.emplace_back(py::reinterpret_borrow<py::object>(k),
                           py::reinterpret_borrow<py::object>(v));
    } else {
      for (py::handle p : sequence(t, "template")) {
        py::list kv = sequence(p, "a template argument");
        if (kv.size() != 2) {
          throw std::invalid_argument(
              msg("[", tag(), "] A template argument is a (name, value) pair."));
        }
        items.emplace_back(kv[0], kv[1]);
      }
    }
    for (const auto& [k, v] : items) {
      std::string name = py::str(k);
      if (py::isinstance<Dtype>(v)) {
        out.emplace_back(name, v.cast<Dtype>());
      } else if (PyBool_Check(v.ptr())) {
        out.emplace_back(name, v.cast<bool>());
      } else if (PyLong_Check(v.ptr())) {
        long long n = v.cast<long long>();
        if (n < INT32_MIN || n > INT32_MAX) {
          throw std::invalid_argument(
              msg("[", tag(), "] Template argument '", name, "' = ", n, " does not fit in int."));
        }
        out.emplace_back(name, static_cast<int>(n));
      } else {
        throw std::invalid_argument(msg("[", tag(), "] Template argument '", name,
                                        "' must be a dtype, int or bool; got ", type_name(v), "."));
      }
    }
    return out;
  }

  std::vector<array> reorder(const std::vector<array>& v, const std::vector<std::string>& names,
                             const std::vector<std::string>& want, const char* what) const {
    if (names.size() != want.size()) {
      throw std::invalid_argument(msg("[", tag(), "] Kernel '", name_, "' takes ", want.size(), " ",
                                      what, "s; got ", names.size(), "."));
    }
    std::vector<array> out;
    for (const auto& n : want) {
      auto it = std::find(names.begin(), names.end(), n);
      if (it == names.end()) {
        throw std::invalid_argument(msg("[", tag(), "] Missing ", what, " '", n, "'."));
      }
      out.push_back(v[it - names.begin()]);
    }
    return out;
  }

  fast::CompileOptions options_;
  KernelFlavour flavour_;
  std::string name_;
  std::optional<std::vector<std::string>> input_names_, output_names_;
  std::string source_, header_;
  bool ensure_row_contiguous_, atomic_outputs_;
  int shared_memory_;
  std::mutex mu_;
  std::map<std::string, KernelFunction> definitions_;  // nodes never move: named_ stays valid
  const KernelFunction* named_ = nullptr;  // the definition with the names given at creation
};

// compile_options: a dict, as in MLX ({"math_mode": "safe" | "relaxed" | "fast"}).
fast::CompileOptions compile_options(const char* tag, py::handle o) {
  fast::CompileOptions opts;
  if (o.is_none()) return opts;
  if (!py::isinstance<py::dict>(o)) {
    throw std::invalid_argument(msg("[", tag, "] Expected `compile_options` to be a dict."));
  }
  for (auto [k, v] : o.cast<py::dict>()) {
    const std::string key = py::str(k);
    if (key != "math_mode") {
      throw std::invalid_argument(msg("[", tag, "] Unknown compile option `", key, "`."));
    }
    const std::string mode = py::isinstance<py::str>(v) ? v.cast<std::string>() : "";
    if (mode == "safe") {
      opts.math_mode = fast::MathMode::safe;
    } else if (mode == "relaxed") {
      opts.math_mode = fast::MathMode::relaxed;
    } else if (mode == "fast") {
      opts.math_mode = fast::MathMode::fast;
    } else {
      throw std::invalid_argument(
          msg("[", tag, "] Expected math_mode to be 'safe', 'relaxed', or 'fast'; got ",
              py::repr(v).cast<std::string>(), "."));
    }
  }
  return opts;
}

constexpr const char* kCallDoc = R"doc(
__call__(*, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None, verbose=False, ensure_row_contiguous=None, stream=None)

Runs the kernel (lazily: the outputs are computed at eval). Keyword arguments only.

Args:
    inputs (list[array | bool | int | float] | dict): The inputs, in the order of
        ``input_names``; Python scalars become 0-d bool, int32 or float32 arrays. A dict
        (the older form) names them, and the outputs are then returned as a dict.
    output_shapes (list[Sequence[int]] | dict): The shape of each output.
    output_dtypes (list[Dtype] | dict): The dtype of each output.
    grid (tuple[int, int, int]): Threads in the grid (not threadgroups), as in MLX.
    threadgroup (tuple[int, int, int]): Threads per threadgroup (block); at most 1024. A
        threadgroup larger than the grid shrinks to it.
    template (list[tuple[str, Dtype | int | bool]] | dict, optional): Template arguments.
    init_value (float, optional): Fills every output before the kernel runs; without it
        outputs start uninitialized.
    verbose (bool): Print the generated source.
    ensure_row_contiguous (bool, optional): Overrides the definition's setting (older form).
    stream (Stream | Device, optional): Where the kernel runs.

Returns:
    list[array] | dict[str, array]: The outputs.

Raises:
    ValueError: A wrong number of inputs, outputs, shapes or dtypes, a zero-sized grid, a
        threadgroup above 1024 threads, a template value that is not a dtype, int or bool.
    TypeError: A positional argument, an unknown or missing keyword, a value of the wrong
        type.
    KernelCompileError: The source does not compile (raised at eval).
)doc";

constexpr const char* kCompileDoc = R"doc(
Generates and compiles the kernel without running it, and returns the generated source.
Needs no GPU: CI and users without one check kernels this way.

Args:
    input_dtypes (list[Dtype]): The dtype of each input.
    input_ndims (list[int]): The number of dimensions of each input (0 for scalars).
    output_dtypes (list[Dtype]): The dtype of each output.
    template (list[tuple[str, Dtype | int | bool]] | dict, optional): Template arguments.
    target (str): A GPU architecture (``"sm_90"``, the default) or ``"cpu"``.

Raises:
    KernelCompileError: The source does not compile.
)doc";

}  // namespace

void init_fast_builtins(py::module_& f);  // fast_builtins.cpp

void init_fast(py::module_& m) {
  py::module_ f =
      m.def_submodule("fast", "Fused operations and custom kernels written as source strings.");
  init_fast_builtins(f);

  py::register_exception<fast::KernelCompileError>(f, "KernelCompileError", PyExc_RuntimeError);

  py::class_<PyKernel, std::shared_ptr<PyKernel>>(
      f, "CustomKernel", "A custom kernel from metal_kernel or cuda_kernel.")
      .def_property_readonly("name", &PyKernel::name)
      .def("__call__", &PyKernel::call_kwargs, kCallDoc)
      .def("compile", &PyKernel::compile, py::arg("input_dtypes"), py::arg("input_ndims"),
           py::arg("output_dtypes"), py::kw_only(), py::arg("template") = py::none(),
           py::arg("target") = "sm_90", kCompileDoc)
      .def("__repr__",
           [](const PyKernel& k) { return std::string(k.tag()) + "('" + k.name() + "')"; });

  f.def(
      "metal_kernel",
      [](const std::string& name, std::optional<std::vector<std::string>> input_names,
         std::optional<std::vector<std::string>> output_names, const std::string& source,
         const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
         py::object options) {
        return std::make_shared<PyKernel>(KernelFlavour::metal, name, std::move(input_names),
                                          std::move(output_names), source, header,
                                          ensure_row_contiguous, atomic_outputs, 0,
                                          compile_options("metal_kernel", options));
      },
      py::kw_only(), py::arg("name"), py::arg("input_names") = py::none(),
      py::arg("output_names") = py::none(), py::arg("source"), py::arg("header") = "",
      py::arg("ensure_row_contiguous") = true, py::arg("atomic_outputs") = false,
      py::arg("compile_options") = py::none(),
      R"doc(
A custom kernel from the body of a Metal Shading Language kernel, compiled for NVIDIA GPUs
(and the CPU) through kiln's Metal compatibility layer.

kiln generates the signature: the inputs (``const device T*``; 0-d inputs as ``const T&``),
the outputs (``device T*``, or ``device atomic<T>*`` with ``atomic_outputs``), the
``<input>_shape``, ``<input>_strides`` and ``<input>_ndim`` the source mentions, the Metal
attributes it uses (``thread_position_in_grid``, ...) and the template parameters of the
call. MLX's utilities (``elem_to_loc``, ...) are available.

Args:
    name (str): The kernel's name.
    input_names (list[str], optional): Parameter names of the inputs.
    output_names (list[str], optional): Parameter names of the outputs. Without names, the
        call passes inputs, output_shapes and output_dtypes as dicts (the older form).
    source (str): The body of the kernel.
    header (str): Code placed before the kernel (helpers, includes).
    ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default True.
    atomic_outputs (bool): Outputs are ``device atomic<T>*``. Default False.
    compile_options (dict, optional): ``{"math_mode": "safe" | "relaxed" | "fast"}``, as in
        MLX. ``"safe"`` (the default) keeps IEEE special values (``exp(-inf) == 0``) and
        correctly rounded division and square root; ``"relaxed"`` allows approximate
        division and square root and flushes subnormals; ``"fast"`` also uses the GPU's fast
        intrinsics (NVRTC ``--use_fast_math``; ``-ffast-math`` on the CPU, which assumes no
        infinities or NaN).

Returns:
    CustomKernel: A callable; also ``compile(...)`` to check it without running it.

Example:
    >>> source = '''
    ...     uint elem = thread_position_in_grid.x;
    ...     T tmp = inp[elem];
    ...     out[elem] = metal::exp(tmp);
    ... '''
    >>> kernel = mx.fast.metal_kernel(name="myexp", input_names=["inp"],
    ...                               output_names=["out"], source=source)
    >>> a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    >>> out = kernel(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
    ...              threadgroup=(256, 1, 1), output_shapes=[a.shape],
    ...              output_dtypes=[a.dtype])[0]
)doc");

  f.def(
      "cuda_kernel",
      [](const std::string& name, std::optional<std::vector<std::string>> input_names,
         std::optional<std::vector<std::string>> output_names, const std::string& source,
         const std::string& header, bool ensure_row_contiguous, bool atomic_outputs,
         int shared_memory, py::object options) {
        return std::make_shared<PyKernel>(KernelFlavour::cuda, name, std::move(input_names),
                                          std::move(output_names), source, header,
                                          ensure_row_contiguous, atomic_outputs, shared_memory,
                                          compile_options("cuda_kernel", options));
      },
      py::kw_only(), py::arg("name"), py::arg("input_names") = py::none(),
      py::arg("output_names") = py::none(), py::arg("source"), py::arg("header") = "",
      py::arg("ensure_row_contiguous") = true, py::arg("atomic_outputs") = false,
      py::arg("shared_memory") = 0, py::arg("compile_options") = py::none(),
      R"doc(
A custom kernel from the body of a CUDA C++ kernel.

The signature is generated as for ``metal_kernel`` (inputs ``const T*``, outputs ``T*``,
``<input>_shape``/``_strides``/``_ndim`` when mentioned, template parameters). The grid
runs ``ceil(grid / threadgroup)`` blocks, every thread of which runs: the body checks its
bounds. Element types are ``float16_t``, ``bfloat16_t``, ``float``, ``int32_t``, ...

Args:
    name (str): The kernel's name.
    input_names (list[str], optional): Parameter names of the inputs.
    output_names (list[str], optional): Parameter names of the outputs.
    source (str): The body of the kernel.
    header (str): Code placed before the kernel.
    ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default True.
    atomic_outputs (bool): Outputs are used with ``atomicAdd`` and friends. Default False.
    shared_memory (int): Bytes of dynamic shared memory (``extern __shared__``); above
        48 KB the kernel's limit is raised.
    compile_options (dict, optional): ``{"math_mode": ...}`` as for ``metal_kernel``.

Returns:
    CustomKernel: A callable; also ``compile(...)``.
)doc");
  f.def(
      "precompiled_cuda_kernel",
      [](const std::string& name, py::bytes compiled_source, py::object inputs,
         py::object output_shapes, py::object output_dtypes, py::object scalars,
         std::tuple<int, int, int> grid, std::tuple<int, int, int> threadgroup,
         int shared_memory, std::optional<double> init_value, bool ensure_row_contiguous,
         StreamOrDevice s) {
        const char* tag = "precompiled_cuda_kernel";
        auto seq = [&](py::object o, const char* what) {
          if (!py::isinstance<py::list>(o) && !py::isinstance<py::tuple>(o)) {
            throw std::invalid_argument(msg("[", tag, "] ", what, " must be a list or tuple; got ",
                                            type_name(o), "."));
          }
          return py::list(o);
        };
        std::vector<array> in;
        for (py::handle v : seq(inputs, "inputs")) {
          if (is_array(v)) {
            in.push_back(array_ref(v));
          } else if (PyBool_Check(v.ptr())) {
            in.emplace_back(v.cast<bool>());
          } else if (PyLong_Check(v.ptr())) {
            in.emplace_back(v.cast<int32_t>(), int32);
          } else if (PyFloat_Check(v.ptr())) {
            in.emplace_back(v.cast<float>(), float32);
          } else {
            in.push_back(to_array(v));
          }
        }
        std::vector<Shape> shapes;
        for (py::handle v : seq(output_shapes, "output_shapes")) {
          Shape sh;
          for (py::handle d : py::list(py::reinterpret_borrow<py::object>(v)))
            sh.push_back(d.cast<int32_t>());
          shapes.push_back(sh);
        }
        std::vector<Dtype> dtypes;
        for (py::handle v : seq(output_dtypes, "output_dtypes")) {
          if (!py::isinstance<Dtype>(v)) {
            throw std::invalid_argument(
                msg("[", tag, "] Output dtypes must be kiln dtypes; got ", type_name(v), "."));
          }
          dtypes.push_back(v.cast<Dtype>());
        }
        std::vector<fast::ScalarArg> sc;
        for (py::handle v : seq(scalars, "scalars")) {
          if (PyBool_Check(v.ptr())) {
            sc.emplace_back(v.cast<bool>());
          } else if (PyLong_Check(v.ptr())) {
            long long n = v.cast<long long>();
            if (n < INT32_MIN || n > INT32_MAX) {
              throw std::invalid_argument(
                  msg("[", tag, "] The scalar argument ", n, " does not fit in int32."));
            }
            sc.emplace_back(static_cast<int>(n));
          } else if (PyFloat_Check(v.ptr())) {
            sc.emplace_back(v.cast<float>());
          } else {
            throw std::invalid_argument(msg("[", tag, "] Invalid scalar argument type. Received ",
                                            type_name(v),
                                            " but must be one of bool, int or float."));
          }
        }
        std::optional<float> init;
        if (init_value) init = static_cast<float>(*init_value);
        std::vector<array> outs = fast::precompiled_cuda_kernel(
            name, std::string(compiled_source), in, shapes, dtypes, sc, grid, threadgroup,
            shared_memory, init, ensure_row_contiguous, s);
        return outs;
      },
      py::kw_only(), py::arg("name"), py::arg("compiled_source"), py::arg("inputs"),
      py::arg("output_shapes"), py::arg("output_dtypes"), py::arg("scalars"), py::arg("grid"),
      py::arg("threadgroup"), py::arg("shared_memory") = 0, py::arg("init_value") = py::none(),
      py::arg("ensure_row_contiguous") = false, py::arg("stream") = py::none(),
      R"doc(
Runs a precompiled CUDA kernel from PTX, a cubin or a fatbin (from Triton, CuTe DSL, nvcc,
...), as MLX's ``precompiled_cuda_kernel``.

The kernel ``name`` (its symbol in the image) takes a pointer per input, a pointer per
output, then ``scalars`` in order; trailing pointer parameters it declares beyond those
(Triton's scratch pointers) are passed as null. ``grid`` counts threads, as for
``metal_kernel``: ``ceil(grid / threadgroup)`` blocks of ``threadgroup`` threads run. GPU
streams only.

Args:
    name (str): The kernel's symbol.
    compiled_source (bytes): PTX text, a cubin or a fatbin.
    inputs (list[array | bool | int | float]): The inputs.
    output_shapes (list[Sequence[int]]): The shape of each output.
    output_dtypes (list[Dtype]): The dtype of each output.
    scalars (list[bool | int | float]): Scalar arguments (bool, int32, float32).
    grid (tuple[int, int, int]): Threads in the grid (not blocks).
    threadgroup (tuple[int, int, int]): Threads per block.
    shared_memory (int): Bytes of dynamic shared memory. Default 0.
    init_value (float, optional): Fills every output before the kernel runs.
    ensure_row_contiguous (bool): Copy inputs that are not row-contiguous. Default False.
    stream (Stream | Device, optional): A GPU stream.

Returns:
    list[array]: The outputs.

Raises:
    ValueError: The bytes are not PTX, a cubin or a fatbin; they hold no kernel ``name``;
        its parameters do not match the inputs, outputs and scalars; the image cannot run on
        the stream's GPU (a cubin for another architecture, PTX for a newer one); a CPU
        stream; bad shapes, grid or threadgroup.
    RuntimeError: The driver cannot load the image (at eval).
)doc");
}

}  // namespace kiln::python
