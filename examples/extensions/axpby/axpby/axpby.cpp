// The axpby operation and the Axpby primitive: graph building, CPU evaluation (OpenBLAS's
// cblas_saxpby where it applies, else a strided loop), GPU evaluation (kernels of axpby.cu,
// compiled by kiln's JIT) and the transforms (jvp, vjp, vmap).
#include "axpby/axpby.h"

#include <cblas.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace kiln_ext {

// OpenBLAS's cblas.h declares a global type `bfloat16`: kiln's dtype is kiln::bfloat16 here.
using namespace kiln;

namespace {

bool is_supported(Dtype d) {
  return d == float32 || d == float16 || d == kiln::bfloat16 || d == complex64;
}

std::string unsupported_dtype(Dtype d) {
  return msg("[axpby] Unsupported dtype ", d,
             "; axpby supports float32, float16, bfloat16 and complex64.");
}

}  // namespace

///////////////////////////////////////////////////////////////////////////////
// Operation Implementation
///////////////////////////////////////////////////////////////////////////////

array axpby(const array& x,              // Input array x
            const array& y,              // Input array y
            const float alpha,           // Scaling factor for x
            const float beta,            // Scaling factor for y
            StreamOrDevice s /* = {} */  // Stream on which to schedule the operation
) {
  // Promote dtypes between x and y as needed
  auto promoted_dtype = promote_types(x.dtype(), y.dtype());

  // Upcast to float32 for non-floating point inputs x and y
  auto out_dtype =
      is_floating_point(promoted_dtype) ? promoted_dtype : promote_types(promoted_dtype, float32);
  if (!is_supported(out_dtype)) {
    throw std::invalid_argument(unsupported_dtype(out_dtype));
  }

  // The broadcast shape of x and y; the error names both shapes when there is none
  auto out_shape = broadcast_shapes(x.shape(), y.shape(), "axpby");

  // Cast x and y up to the determined dtype (on the same stream s)
  auto x_casted = astype(x, out_dtype, s);
  auto y_casted = astype(y, out_dtype, s);

  // Broadcast the shapes of x and y (on the same stream s)
  auto broadcasted_inputs = broadcast_arrays({x_casted, y_casted}, s);

  // Construct the array as the output of the Axpby primitive
  // with the broadcasted and upcasted arrays as inputs
  return array(
      /* Shape shape = */ out_shape,
      /* Dtype dtype = */ out_dtype,
      /* std::shared_ptr<Primitive> primitive = */
      std::make_shared<Axpby>(to_stream(s), alpha, beta),
      /* std::vector<array> inputs = */ broadcasted_inputs);
}

///////////////////////////////////////////////////////////////////////////////
// Primitive Common Backend Implementation
///////////////////////////////////////////////////////////////////////////////

// One element. Half types compute in float and round once; complex64 scales by real factors.
template <typename T>
T axpby_element(T x, T y, float alpha, float beta) {
  if constexpr (std::is_same_v<T, complex64_t>) {
    return alpha * x + beta * y;
  } else {
    return static_cast<T>(alpha * static_cast<float>(x) + beta * static_cast<float>(y));
  }
}

template <typename T>
void axpby_impl(const array& x, const array& y, array& out, float alpha_, float beta_) {
  // We only allocate memory when we are ready to fill the output
  // Storage::host takes the memory from kiln's caching host allocator
  out.set_data(Storage::host(out.nbytes()));

  // Collect input and output data pointers
  const T* x_ptr = x.data<T>();
  const T* y_ptr = y.data<T>();
  T* out_ptr = out.data<T>();

  // Merge the dimensions along which both inputs are contiguous (contiguous inputs become one
  // dimension), so that the loop below computes offsets once per row of the last one
  auto [shape, strides] = collapse_contiguous_dims<2>(out.shape(), {x.strides(), y.strides()});
  const int64_t row_size = shape.back();
  const int64_t x_step = strides[0].back();
  const int64_t y_step = strides[1].back();
  if (out.size() == 0) {
    return;
  }

  // Do the element-wise operation for each output, a row at a time
  for (size_t row_start = 0; row_start < out.size(); row_start += row_size) {
    // Map linear indices to offsets in x and y
    auto x_offset = elem_to_loc(row_start, shape, strides[0]);
    auto y_offset = elem_to_loc(row_start, shape, strides[1]);

    // We allocate the output to be contiguous and regularly strided
    // (defaults to row major) and hence it doesn't need additional mapping
    for (int64_t j = 0; j < row_size; j++) {
      out_ptr[row_start + j] =
          axpby_element(x_ptr[x_offset + j * x_step], y_ptr[y_offset + j * y_step], alpha_, beta_);
    }
  }
}

/** Fall back implementation for evaluation on CPU */
void Axpby::eval(const std::vector<array>& inputs, array& out) {
  // Check the inputs (registered in the op while constructing the out array)
  assert(inputs.size() == 2);
  auto& x = inputs[0];
  auto& y = inputs[1];

  // Dispatch to the correct dtype
  if (out.dtype() == float32) {
    return axpby_impl<float>(x, y, out, alpha_, beta_);
  } else if (out.dtype() == float16) {
    return axpby_impl<float16_t>(x, y, out, alpha_, beta_);
  } else if (out.dtype() == kiln::bfloat16) {
    return axpby_impl<bfloat16_t>(x, y, out, alpha_, beta_);
  } else if (out.dtype() == complex64) {
    return axpby_impl<complex64_t>(x, y, out, alpha_, beta_);
  } else {
    throw std::invalid_argument(unsupported_dtype(out.dtype()));
  }
}

///////////////////////////////////////////////////////////////////////////////
// Primitive CPU Backend Implementation
///////////////////////////////////////////////////////////////////////////////

template <typename T>
void axpby_impl_blas(const array& x, const array& y, array& out, float alpha_, float beta_) {
  // OpenBLAS provides cblas_saxpby which does
  // Y = (alpha * X) + (beta * Y) in place
  // To use it, we first copy the data in y over to the output array

  // This specialization requires both x and y be contiguous in the same mode
  // i.e: corresponding linear indices in both point to corresponding elements
  // The data in the output array is allocated to match the strides in y
  // such that x, y, and out are contiguous in the same mode and
  // no transposition is needed
  out.set_data(Storage::host(y.data_size() * out.itemsize()), y.data_size(), y.strides(),
               y.flags());

  // We then copy over the elements using the contiguous vector specialization
  cpu::copy_inplace(y, out, cpu::CopyType::vector);

  // Get x and y pointers for cblas_saxpby
  const T* x_ptr = x.data<T>();
  T* y_ptr = out.data<T>();

  T alpha = static_cast<T>(alpha_);
  T beta = static_cast<T>(beta_);

  // Call the inplace BLAS operator
  cblas_saxpby(
      /* N = */ static_cast<blasint>(out.size()),
      /* ALPHA = */ alpha,
      /* X = */ x_ptr,
      /* INCX = */ 1,
      /* BETA = */ beta,
      /* Y = */ y_ptr,
      /* INCY = */ 1);
}

/** Evaluate primitive on CPU using BLAS specializations */
void Axpby::eval_cpu(const std::vector<array>& inputs, array& out) {
  assert(inputs.size() == 2);
  auto& x = inputs[0];
  auto& y = inputs[1];

  // BLAS specialization for contiguous single precision float arrays (whose element count
  // fits BLAS's integer)
  if (out.dtype() == float32 &&
      ((x.flags().row_contiguous && y.flags().row_contiguous) ||
       (x.flags().col_contiguous && y.flags().col_contiguous)) &&
      out.size() <= static_cast<size_t>(std::numeric_limits<blasint>::max())) {
    axpby_impl_blas<float>(x, y, out, alpha_, beta_);
    return;
  }

  // Fall back to common backend if specializations are not available
  eval(inputs, out);
}

///////////////////////////////////////////////////////////////////////////////
// Primitive GPU Backend Implementation
///////////////////////////////////////////////////////////////////////////////

#ifdef KILN_WITH_CUDA

namespace {

// The kernel library kiln_add_kernel_sources embeds (CMakeLists.txt: TARGET kiln_ext).
constexpr const char* kKernelLibrary = "kiln_ext";
// Threads per block; the kernels are bound by memory, not by occupancy.
constexpr uint32_t kBlock = 256;

bool is_aligned_16(const array& a) {
  return gpu::device_address(a) % 16 == 0;
}

}  // namespace

void compile_kernels(const std::vector<std::string>& kernels, const std::string& target,
                     const std::string& library) {
  ext::compile_kernels(library, kernels, "axpby", target);
}

/** Evaluate primitive on GPU */
void Axpby::eval_gpu(const std::vector<array>& inputs, array& out) {
  // Prepare inputs
  assert(inputs.size() == 2);
  auto& x = inputs[0];
  auto& y = inputs[1];

  // Each primitive carries the stream it should execute on; its GPU side holds the
  // CUstream, the device, and the buffers its work in flight uses
  auto& s = gpu::device_stream(stream());

  // Inputs contiguous in the same mode: one flat, vectorized pass over their elements
  const bool contiguous = (x.flags().row_contiguous && y.flags().row_contiguous) ||
                          (x.flags().col_contiguous && y.flags().col_contiguous);

  // Allocate output memory (in x's layout when the pass is flat, else row-major)
  if (contiguous) {
    out.set_data(gpu::new_device_storage(x.data_size() * out.itemsize(), s), x.data_size(),
                 x.strides(), x.flags());
  } else {
    out.set_data(gpu::new_device_storage(out.nbytes(), s));
  }
  if (out.size() == 0) {
    return;
  }
  const std::string type = std::string(type_to_name(out.dtype()));
  const int64_t n = static_cast<int64_t>(out.size());

  if (contiguous) {
    // Resolve the kernel (an extern "C" function of axpby.cu) and compile it on first use
    auto kernel = ext::get_kernel(stream(), kKernelLibrary, "axpby_contiguous_" + type, "axpby");
    // Each thread moves 16 bytes of each operand (axpby.cu's Width); views at an odd offset
    // take the scalar path
    const int64_t width = 16 / static_cast<int64_t>(out.itemsize());
    const bool vec = is_aligned_16(x) && is_aligned_16(y) && is_aligned_16(out);
    gpu::launch_kernel(kernel, gpu::grid_1d((n + width - 1) / width, kBlock), {kBlock}, 0, s,
                       gpu::device_address(x), gpu::device_address(y), gpu::device_address(out),
                       alpha_, beta_, n, vec);
    return;
  }

  // Merge the dimensions along which both inputs are contiguous; kernels take at most
  // ext::kMaxDims of them by value
  auto [shape, strides] = collapse_contiguous_dims<2>(out.shape(), {x.strides(), y.strides()});
  const int ndim = static_cast<int>(shape.size());
  if (ndim > ext::kMaxDims) {
    throw std::invalid_argument(msg("[axpby] The GPU kernel takes at most ", ext::kMaxDims,
                                    " dimensions that cannot be merged; got ", ndim, " for shape ",
                                    shape_str(out.shape()), "."));
  }
  ext::Dims<int32_t> dims{};
  ext::Dims<int64_t> x_strides{}, y_strides{};
  int64_t x_span = 0, y_span = 0;  // the largest |offset| each input reaches
  for (int i = 0; i < ndim; ++i) {
    dims.v[i] = shape[i];
    x_strides.v[i] = strides[0][i];
    y_strides.v[i] = strides[1][i];
    x_span += (shape[i] - 1) * std::abs(strides[0][i]);
    y_span += (shape[i] - 1) * std::abs(strides[1][i]);
  }

  // 32-bit index arithmetic (cheaper divisions) unless an index or offset needs more
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  const bool large = n > kMax32 || std::max(x_span, y_span) > kMax32;
  auto kernel =
      ext::get_kernel(stream(), kKernelLibrary,
                      (large ? "axpby_general_large_" : "axpby_general_") + type, "axpby");

  // We launch 1 thread for each element of the output
  const auto grid = gpu::grid_1d(n, kBlock);
  const auto xp = gpu::device_address(x), yp = gpu::device_address(y),
             op = gpu::device_address(out);
  if (large) {
    gpu::launch_kernel(kernel, grid, {kBlock}, 0, s, xp, yp, op, alpha_, beta_, dims, x_strides,
                       y_strides, ndim, n);
  } else {
    gpu::launch_kernel(kernel, grid, {kBlock}, 0, s, xp, yp, op, alpha_, beta_, dims, x_strides,
                       y_strides, ndim, static_cast<int32_t>(n));
  }
}

#else

/** kiln was built without its CUDA backend: there is no GPU stream to run on. */
void Axpby::eval_gpu(const std::vector<array>& inputs, array& out) {
  throw std::runtime_error("[axpby] kiln was built without CUDA; run axpby on the CPU.");
}

#endif  // KILN_WITH_CUDA

///////////////////////////////////////////////////////////////////////////////
// Primitive Transforms
///////////////////////////////////////////////////////////////////////////////

/** The Jacobian-vector product. */
std::vector<array> Axpby::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>& argnums) {
  // Forward mode diff that pushes along the tangents
  // The jvp transform on the primitive can built with ops
  // that are scheduled on the same stream as the primitive

  // If argnums = {0}, we only push along x in which case the
  // jvp is just the tangent scaled by alpha
  // Similarly, if argnums = {1}, the jvp is just the tangent
  // scaled by beta
  if (argnums.size() == 1) {
    auto scale = argnums[0] == 0 ? alpha_ : beta_;
    auto scale_arr = array(scale, tangents[0].dtype());
    return {multiply(scale_arr, tangents[0], stream())};
  }
  // If, argnums = {0, 1}, we take contributions from both
  // which gives us jvp = tangent_x * alpha + tangent_y * beta
  // (tangents come in the order of argnums)
  const array& tx = argnums[0] == 0 ? tangents[0] : tangents[1];
  const array& ty = argnums[0] == 0 ? tangents[1] : tangents[0];
  return {axpby(tx, ty, alpha_, beta_, stream())};
}

/** The vector-Jacobian product. */
std::vector<array> Axpby::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>& argnums,
                              const std::vector<array>& outputs) {
  // Reverse mode diff: the inputs have the output's shape (the op broadcast them), so each
  // cotangent is the output's scaled by its input's factor
  const array& cotan = cotangents[0];
  std::vector<array> vjps;
  for (auto arg : argnums) {
    auto scale = arg == 0 ? alpha_ : beta_;
    auto scale_arr = array(scale, cotan.dtype());
    vjps.push_back(multiply(scale_arr, cotan, stream()));
  }
  return vjps;
}

/** Vectorize primitive along given axis */
std::pair<std::vector<array>, std::vector<int>> Axpby::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  // Axpby is elementwise, so the batch is one more dimension: move each mapped axis to the
  // front, and give an unmapped input a leading axis of size 1 that axpby broadcasts
  if (axes[0] < 0 && axes[1] < 0) {
    return {{axpby(inputs[0], inputs[1], alpha_, beta_, stream())}, {-1}};
  }
  auto batch_first = [&](int i) {
    return axes[i] >= 0 ? moveaxis(inputs[i], axes[i], 0, stream())
                        : expand_dims(inputs[i], 0, stream());
  };
  return {{axpby(batch_first(0), batch_first(1), alpha_, beta_, stream())}, {0}};
}

/** Equivalence check **/
bool Axpby::is_equivalent(const Primitive& other) const {
  if (typeid(other) != typeid(Axpby)) {
    return false;
  }
  const Axpby& r_other = static_cast<const Axpby&>(other);
  return alpha_ == r_other.alpha_ && beta_ == r_other.beta_;
}

}  // namespace kiln_ext
