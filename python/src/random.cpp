// kiln.core.random: keys, seed, split, bits, uniform, normal, multivariate_normal, randint,
// bernoulli, truncated_normal, gumbel, categorical, laplace, permutation (kiln/random.h).
//
// Python scalars become arrays as in MLX (an int int32, a float float32, a complex
// complex64) before the sampler converts them to its dtype, so that bounds round as MLX's
// do and seeded programs reproduce MLX's numbers.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "helpers.h"
#include "kiln/random.h"

namespace kiln::python {

namespace {

constexpr const char* kKeyArg =
    "    key (array, optional): A key from :func:`key` or :func:`split`. Without one, the\n"
    "        global key (reset by :func:`seed`) is split.\n";

std::string doc(const std::string& body, const std::string& args, const std::string& returns) {
  return body + "\n\nArgs:\n" + args + kKeyArg + "\nReturns:\n    array: " + returns + "\n";
}

array scalar_or_array(const ScalarOrArray& v) {
  return to_array(v.obj);
}

std::optional<array> optional_array(const std::optional<ScalarOrArray>& v) {
  return v ? std::optional<array>(to_array(v->obj)) : std::nullopt;
}

}  // namespace

void init_random(py::module_& parent) {
  auto m = parent.def_submodule("random", R"doc(
    Random sampling with explicit keys (JAX's model, MLX's API): every sampler takes an
    optional ``key``; with one, the result depends only on the key and the arguments.
    Bits come from the counter-based Threefry-2x32 generator, laid out as MLX lays them
    out, and every sampler rounds as MLX's does: a key or a seed gives MLX's numbers.
  )doc");
  auto stream = py::arg("stream") = py::none();
  auto key = py::arg("key") = py::none();
  auto shape0 = py::arg("shape") = std::vector<int>{};
  auto dtype_or = [](const std::optional<Dtype>& d, Dtype fallback) {
    return d.value_or(fallback);
  };

  m.def("key", &random::key, py::arg("seed"), R"doc(
    A key for the given seed: a ``uint32`` array of shape ``(2,)``.

    Args:
        seed (int): A non-negative integer below 2**64.
  )doc");
  m.def("seed", &random::seed, py::arg("seed"), R"doc(
    Resets the global key to ``key(seed)``; samplers called without a key continue from it.
  )doc");
  m.def(
      "split", [](const array& k, int num, StreamOrDevice s) { return random::split(k, num, s); },
      py::arg("key"), py::arg("num") = 2, py::kw_only(), stream, R"doc(
    ``num`` new keys derived from ``key``, as an array of shape ``(num, 2)``: the key's
    first ``8 * num`` random bytes.

    Raises:
        ValueError: ``num`` is negative or ``key`` is not a ``(2,)`` uint32 array.
  )doc");
  m.def(
      "bits",
      [](const ShapeArg& shape, int width, std::optional<array> k, StreamOrDevice s) {
        return random::bits(to_shape(shape), width, k, s);
      },
      shape0, py::arg("width") = 4, key, py::kw_only(), stream,
      doc("Uniformly random bits: unsigned integers of ``width`` bytes (MLX's C++\n"
          "``random::bits``).",
          "    shape (int or Sequence[int]): The shape.\n"
          "    width (int): Bytes per element: 1, 2, 4 or 8 (uint8 ... uint64).\n",
          "The bits.")
          .c_str());
  m.def(
      "uniform",
      [=](const ScalarOrArray& low, const ScalarOrArray& high, const ShapeArg& shape,
          std::optional<Dtype> dtype, std::optional<array> k, StreamOrDevice s) {
        return random::uniform(scalar_or_array(low), scalar_or_array(high), to_shape(shape),
                               dtype_or(dtype, float32), k, s);
      },
      py::arg("low") = 0, py::arg("high") = 1, shape0, py::arg("dtype") = float32, key,
      py::kw_only(), stream,
      doc("Uniform samples in ``[low, high)`` (a sample may round onto ``high``, as in\n"
          "MLX); gradients flow to ``low`` and ``high``.",
          "    low (array or scalar): Lower bound, broadcast to ``shape``.\n"
          "    high (array or scalar): Upper bound, broadcast to ``shape``.\n"
          "    shape (int or Sequence[int]): The shape.\n"
          "    dtype (Dtype, optional): A real floating type (float32).\n",
          "The samples. ValueError for a non-floating dtype or bounds that do not broadcast.")
          .c_str());
  m.def(
      "normal",
      [=](const ShapeArg& shape, std::optional<Dtype> dtype,
          const std::optional<ScalarOrArray>& loc, const std::optional<ScalarOrArray>& scale,
          std::optional<array> k, StreamOrDevice s) {
        return random::normal_impl(to_shape(shape), dtype_or(dtype, float32), optional_array(loc),
                                   optional_array(scale), k, s);
      },
      shape0, py::arg("dtype") = float32, py::arg("loc") = py::none(),
      py::arg("scale") = py::none(), key, py::kw_only(), stream,
      doc("Normal samples with mean ``loc`` and standard deviation ``scale``.",
          "    shape (int or Sequence[int]): The shape.\n"
          "    dtype (Dtype, optional): A real floating type or complex64 (float32).\n"
          "    loc (scalar or array, optional): The mean (0).\n"
          "    scale (scalar or array, optional): The standard deviation (1).\n",
          "The samples. ValueError for another dtype or loc/scale that do not broadcast.")
          .c_str());
  m.def(
      "multivariate_normal",
      [=](const array& mean, const array& cov, const ShapeArg& shape, std::optional<Dtype> dtype,
          std::optional<array> k, StreamOrDevice s) {
        return random::multivariate_normal(mean, cov, to_shape(shape), dtype_or(dtype, float32), k,
                                           s);
      },
      py::arg("mean"), py::arg("cov"), shape0, py::arg("dtype") = float32, key, py::kw_only(),
      stream,
      doc("Jointly normal samples with means ``mean`` and covariances ``cov`` (positive\n"
          "semi-definite; the result is unspecified otherwise).",
          "    mean (array): Shape ``(..., n)``.\n"
          "    cov (array): Shape ``(..., n, n)``; its batch shape broadcasts with mean's.\n"
          "    shape (Sequence[int]): Broadcasts with the batch shapes (``[]``).\n"
          "    dtype (Dtype, optional): Only float32.\n",
          "The samples, of the broadcast batch shape + ``(n,)``.")
          .c_str());
  m.def(
      "randint",
      [=](const ScalarOrArray& low, const ScalarOrArray& high, const ShapeArg& shape,
          std::optional<Dtype> dtype, std::optional<array> k, StreamOrDevice s) {
        return random::randint(scalar_or_array(low), scalar_or_array(high), to_shape(shape),
                               dtype_or(dtype, int32), k, s);
      },
      py::arg("low"), py::arg("high"), shape0, py::arg("dtype") = int32, key, py::kw_only(), stream,
      doc("Integers uniform in ``[low, high)`` (``low`` where ``high <= low``).",
          "    low (array or scalar): Lower bound, broadcast to ``shape``.\n"
          "    high (array or scalar): Upper bound (excluded), broadcast to ``shape``.\n"
          "    shape (int or Sequence[int]): The shape.\n"
          "    dtype (Dtype, optional): An integer type or bool (int32).\n",
          "The samples. ValueError for an inexact dtype or bounds that do not broadcast.")
          .c_str());
  m.def(
      "bernoulli",
      [](const ScalarOrArray& p, std::optional<ShapeArg> shape, std::optional<array> k,
         StreamOrDevice s) {
        array pa = scalar_or_array(p);
        return shape ? random::bernoulli(pa, to_shape(*shape), k, s) : random::bernoulli(pa, k, s);
      },
      py::arg("p") = 0.5, py::arg("shape") = py::none(), key, py::kw_only(), stream,
      doc("Booleans that are true with probability ``p``.",
          "    p (array or scalar): The probability (floating), broadcast to ``shape``.\n"
          "    shape (int or Sequence[int], optional): The shape; ``p``'s by default.\n",
          "``bool`` samples.")
          .c_str());
  m.def(
      "truncated_normal",
      [=](const ScalarOrArray& lower, const ScalarOrArray& upper, std::optional<ShapeArg> shape,
          std::optional<Dtype> dtype, std::optional<array> k, StreamOrDevice s) {
        array lo = scalar_or_array(lower), hi = scalar_or_array(upper);
        Dtype t = dtype_or(dtype, float32);
        return shape ? random::truncated_normal(lo, hi, to_shape(*shape), t, k, s)
                     : random::truncated_normal(lo, hi, t, k, s);
      },
      py::arg("lower"), py::arg("upper"), py::arg("shape") = py::none(), py::arg("dtype") = float32,
      key, py::kw_only(), stream,
      doc("Standard normal samples conditioned on ``[lower, upper]``.",
          "    lower (array or scalar): Lower bound.\n"
          "    upper (array or scalar): Upper bound.\n"
          "    shape (int or Sequence[int], optional): The shape; the bounds' broadcast\n"
          "        shape by default.\n"
          "    dtype (Dtype, optional): A real floating type (float32).\n",
          "The samples.")
          .c_str());
  m.def(
      "gumbel",
      [=](const ShapeArg& shape, std::optional<Dtype> dtype, std::optional<array> k,
          StreamOrDevice s) {
        return random::gumbel(to_shape(shape), dtype_or(dtype, float32), k, s);
      },
      shape0, py::arg("dtype") = float32, key, py::kw_only(), stream,
      doc("Standard Gumbel samples, ``-log(-log(u))`` for ``u`` uniform in [0, 1).",
          "    shape (int or Sequence[int]): The shape.\n"
          "    dtype (Dtype, optional): A real floating type (float32).\n",
          "The samples.")
          .c_str());
  m.def(
      "categorical",
      [](const array& logits, int axis, std::optional<ShapeArg> shape,
         std::optional<int> num_samples, std::optional<array> k, StreamOrDevice s) {
        if (shape && num_samples) {
          throw std::invalid_argument("[categorical] Give at most one of shape and num_samples.");
        }
        if (shape) return random::categorical(logits, axis, to_shape(*shape), k, s);
        if (num_samples) return random::categorical(logits, axis, *num_samples, k, s);
        if (k) return random::categorical(logits, axis, *k, s);
        return random::categorical(logits, axis, s);
      },
      py::arg("logits"), py::arg("axis") = -1, py::arg("shape") = py::none(),
      py::arg("num_samples") = py::none(), key, py::kw_only(), stream,
      doc("Indices drawn from the categorical distributions whose unnormalized log\n"
          "probabilities lie along ``axis`` of ``logits``.",
          "    logits (array): Unnormalized log probabilities.\n"
          "    axis (int): The axis of the categories.\n"
          "    shape (Sequence[int], optional): The result shape, to which ``logits``'s shape\n"
          "        without ``axis`` must broadcast.\n"
          "    num_samples (int, optional): Draw this many samples per distribution (a new\n"
          "        last axis).\n",
          "``uint32`` indices.")
          .c_str());
  m.def(
      "laplace",
      [=](const ShapeArg& shape, std::optional<Dtype> dtype, float loc, float scale,
          std::optional<array> k, StreamOrDevice s) {
        return random::laplace(to_shape(shape), dtype_or(dtype, float32), loc, scale, k, s);
      },
      shape0, py::arg("dtype") = float32, py::arg("loc") = 0.0f, py::arg("scale") = 1.0f, key,
      py::kw_only(), stream,
      doc("Laplace samples with location ``loc`` and scale ``scale``.",
          "    shape (int or Sequence[int]): The shape.\n"
          "    dtype (Dtype, optional): A real floating type (float32).\n"
          "    loc (float): The location (mean).\n"
          "    scale (float): The scale ``b`` (standard deviation ``sqrt(2) b``).\n",
          "The samples. ValueError for a non-floating dtype.")
          .c_str());
  m.def(
      "permutation",
      [](const py::object& x, int axis, std::optional<array> k, StreamOrDevice s) {
        // An int (not a bool, not an array that converts to one) asks for arange(x).
        if (PyLong_Check(x.ptr()) && !PyBool_Check(x.ptr())) {
          return random::permutation(x.cast<int>(), k, s);
        }
        return random::permutation(to_array(x), axis, k, s);
      },
      py::arg("x"), py::arg("axis") = 0, key, py::kw_only(), stream,
      doc("A random permutation of ``arange(x)``, or ``x`` with its entries along ``axis``\n"
          "randomly permuted.",
          "    x (int or array): The length, or the array to permute.\n"
          "    axis (int): The axis to permute along (0).\n",
          "The permutation (``uint32``), or the permuted array.")
          .c_str());
}

}  // namespace kiln::python
