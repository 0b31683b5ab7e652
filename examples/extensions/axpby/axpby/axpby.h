// axpby: z = alpha * x + beta * y as a kiln operation with its own primitive, built outside
// kiln against its installed headers (README.md walks through every part).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/extension.h"

namespace kiln_ext {

///////////////////////////////////////////////////////////////////////////////
// Operation
///////////////////////////////////////////////////////////////////////////////

/**
 * Scale and sum two vectors element-wise
 * z = alpha * x + beta * y
 *
 * Follow numpy style broadcasting between x and y
 * Inputs are upcasted to floats if needed
 *
 * The result has the broadcast shape of x and y and their promoted dtype: float32, float16,
 * bfloat16 or complex64 (integer and bool inputs become float32). Throws
 * std::invalid_argument tagged [axpby] for shapes that do not broadcast and for float64.
 **/
kiln::array axpby(const kiln::array& x,        // Input array x
                  const kiln::array& y,        // Input array y
                  const float alpha,           // Scaling factor for x
                  const float beta,            // Scaling factor for y
                  kiln::StreamOrDevice s = {}  // Stream on which to schedule the operation
);

#ifdef KILN_WITH_CUDA
/**
 * Compiles GPU kernels `kernels` (e.g. "axpby_general_float32") of the kernel library
 * `library` for `target` with NVRTC, without a GPU and without kiln's caches: what CI checks.
 * Throws kiln::gpu::CompileError with the compiler's log (the file and line in axpby.cu), or
 * std::runtime_error tagged [axpby] when the library's sources were not embedded.
 */
void compile_kernels(const std::vector<std::string>& kernels, const std::string& target = "sm_90",
                     const std::string& library = "kiln_ext");
#endif

///////////////////////////////////////////////////////////////////////////////
// Primitive
///////////////////////////////////////////////////////////////////////////////

class Axpby : public kiln::UnaryPrimitive {
 public:
  explicit Axpby(kiln::Stream stream, float alpha, float beta)
      : kiln::UnaryPrimitive(stream), alpha_(alpha), beta_(beta) {}

  /**
   * A primitive must know how to evaluate itself on the CPU/GPU
   * for the given inputs and populate the output array.
   *
   * To avoid unnecessary allocations, the evaluation function
   * is responsible for allocating space for the array.
   */
  void eval_cpu(const std::vector<kiln::array>& inputs, kiln::array& out) override;
  void eval_gpu(const std::vector<kiln::array>& inputs, kiln::array& out) override;

  /** The Jacobian-vector product. */
  std::vector<kiln::array> jvp(const std::vector<kiln::array>& primals,
                               const std::vector<kiln::array>& tangents,
                               const std::vector<int>& argnums) override;

  /** The vector-Jacobian product. */
  std::vector<kiln::array> vjp(const std::vector<kiln::array>& primals,
                               const std::vector<kiln::array>& cotangents,
                               const std::vector<int>& argnums,
                               const std::vector<kiln::array>& outputs) override;

  /**
   * The primitive must know how to vectorize itself across
   * the given axes. The output is a pair containing the arrays
   * representing the vectorized computation and the axis which
   * corresponds to the output vectorized dimension.
   */
  std::pair<std::vector<kiln::array>, std::vector<int>> vmap(const std::vector<kiln::array>& inputs,
                                                             const std::vector<int>& axes) override;

  /** The name, in errors and graph printing. */
  KILN_PRIMITIVE_NAME(Axpby)

  /** Print the primitive. */
  void print(std::ostream& os) override {
    os << "Axpby(alpha=" << alpha_ << ", beta=" << beta_ << ")";
  }

  /** Equivalence check **/
  bool is_equivalent(const kiln::Primitive& other) const override;

  /** The output has the (broadcast) shape of the inputs. */
  std::vector<kiln::Shape> output_shapes(const std::vector<kiln::array>& inputs) override {
    return {inputs[0].shape()};
  }

 private:
  float alpha_;
  float beta_;

  /** Fall back implementation for evaluation on CPU */
  void eval(const std::vector<kiln::array>& inputs, kiln::array& out);
};

}  // namespace kiln_ext
