// Unary elementwise ops: argument checks, dtype rules, graph construction.
//
// Dtype rules (MLX): transcendental functions promote integers and bool to float32;
// arithmetic keeps the dtype; rounding is the identity on integers; predicates give bool.
#include <cmath>
#include <complex>
#include <memory>

#include "kiln/ops.h"
#include "kiln/ops_complex.h"
#include "kiln/primitives_unary.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Transcendental functions compute in a floating type: integers and bool become float32.
Dtype inexact_dtype(Dtype d) {
  return is_inexact(d) ? d : float32;
}

template <typename P>
array make_unary(const array& a, Dtype out_dtype, const Stream& s) {
  return array(a.shape(), out_dtype, std::make_shared<P>(s), {a});
}

// A floating-point function of `a`: converts integers and bool to float32 first.
template <typename P>
array math(const array& a, StreamOrDevice sd) {
  auto s = to_stream(sd);
  Dtype dtype = inexact_dtype(a.dtype());
  return make_unary<P>(astype(a, dtype, s), dtype, s);
}

void reject_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(
        msg("[", op, "] Not defined for complex64 input; apply it to real(a) and imag(a)."));
  }
}

// Real-valued math (erf, erfinv): floating types only.
template <typename P>
array real_math(const array& a, StreamOrDevice s, const char* op) {
  reject_complex(a, op);
  return math<P>(a, s);
}

// Rounding: integers and bool are already integral.
template <typename P>
array rounding(const array& a, StreamOrDevice s, const char* op) {
  reject_complex(a, op);
  if (!is_floating_point(a.dtype())) return a;
  return make_unary<P>(a, a.dtype(), to_stream(s));
}

template <typename P>
array predicate(const array& a, StreamOrDevice s) {
  return make_unary<P>(a, bool_, to_stream(s));
}

}  // namespace

// ---------------------------------------------------------------- arithmetic

array abs(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_ || is_unsigned(a.dtype())) return a;
  return make_unary<Abs>(a, is_complex(a.dtype()) ? float32 : a.dtype(), to_stream(s));
}

array negative(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw std::invalid_argument(
        "[negative] The negative of a bool array is not defined; use logical_not.");
  }
  return make_unary<Negative>(a, a.dtype(), to_stream(s));
}

array sign(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) return a;  // sign(true) = 1 = true
  return make_unary<Sign>(a, a.dtype(), to_stream(s));
}

array square(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) return a;  // x * x = x for bool
  return make_unary<Square>(a, a.dtype(), to_stream(s));
}

array operator-(const array& a) {
  return negative(a);
}

// ---------------------------------------------------------------- floating-point math

array sqrt(const array& a, StreamOrDevice s) {
  return math<Sqrt>(a, s);
}
array rsqrt(const array& a, StreamOrDevice s) {
  return math<Rsqrt>(a, s);
}
array exp(const array& a, StreamOrDevice s) {
  return math<Exp>(a, s);
}
array expm1(const array& a, StreamOrDevice s) {
  return real_math<Expm1>(a, s, "expm1");
}
array log(const array& a, StreamOrDevice s) {
  return math<Log>(a, s);
}
array log1p(const array& a, StreamOrDevice s) {
  return math<Log1p>(a, s);
}
array log2(const array& a, StreamOrDevice s) {
  return math<Log2>(a, s);
}
array log10(const array& a, StreamOrDevice s) {
  return math<Log10>(a, s);
}
array sin(const array& a, StreamOrDevice s) {
  return math<Sin>(a, s);
}
array cos(const array& a, StreamOrDevice s) {
  return math<Cos>(a, s);
}
array tan(const array& a, StreamOrDevice s) {
  return math<Tan>(a, s);
}
array arcsin(const array& a, StreamOrDevice s) {
  return math<ArcSin>(a, s);
}
array arccos(const array& a, StreamOrDevice s) {
  return math<ArcCos>(a, s);
}
array arctan(const array& a, StreamOrDevice s) {
  return math<ArcTan>(a, s);
}
array sinh(const array& a, StreamOrDevice s) {
  return math<Sinh>(a, s);
}
array cosh(const array& a, StreamOrDevice s) {
  return math<Cosh>(a, s);
}
array tanh(const array& a, StreamOrDevice s) {
  return math<Tanh>(a, s);
}
array arcsinh(const array& a, StreamOrDevice s) {
  return math<ArcSinh>(a, s);
}
array arccosh(const array& a, StreamOrDevice s) {
  return math<ArcCosh>(a, s);
}
array arctanh(const array& a, StreamOrDevice s) {
  return math<ArcTanh>(a, s);
}
array sigmoid(const array& a, StreamOrDevice s) {
  return real_math<Sigmoid>(a, s, "sigmoid");
}
array erf(const array& a, StreamOrDevice s) {
  return real_math<Erf>(a, s, "erf");
}
array erfinv(const array& a, StreamOrDevice s) {
  return real_math<ErfInv>(a, s, "erfinv");
}

array reciprocal(const array& a, StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype dtype = inexact_dtype(a.dtype());
  return divide(array(1, dtype), a, stream);
}

// ---------------------------------------------------------------- rounding

array floor(const array& a, StreamOrDevice s) {
  return rounding<Floor>(a, s, "floor");
}
array ceil(const array& a, StreamOrDevice s) {
  return rounding<Ceil>(a, s, "ceil");
}
array trunc(const array& a, StreamOrDevice s) {
  return rounding<Trunc>(a, s, "trunc");
}

array round(const array& a, int decimals, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    // The real and imaginary parts round separately (NumPy, MLX).
    auto stream = to_stream(s);
    array re = round(real(a, stream), decimals, stream);
    array im = round(imag(a, stream), decimals, stream);
    return detail::complex_from_parts(re, im, stream);
  }
  if (decimals == 0) return rounding<Round>(a, s, "round");
  reject_complex(a, "round");
  auto stream = to_stream(s);
  if (!is_floating_point(a.dtype())) {
    if (decimals > 0) return a;
    // Negative decimals round integers to tens, hundreds, ...: computed in float64, which
    // is exact for every integer below 2^53.
    return astype(round(astype(a, float64, stream), decimals, stream), a.dtype(), stream);
  }
  // As NumPy: scale so the wanted digit is the units digit, round half to even, scale
  // back. Dividing by the exact power of ten (rather than multiplying by its inexact
  // reciprocal) gives the closest representable result more often. Half types scale in
  // float32, where 10^5 and beyond do not overflow.
  Dtype work = a.dtype() == float16 || a.dtype() == bfloat16 ? float32 : a.dtype();
  array x = astype(a, work, stream);
  array f(std::pow(10.0, std::abs(decimals)), work);
  array r =
      make_unary<Round>(decimals > 0 ? multiply(x, f, stream) : divide(x, f, stream), work, stream);
  r = decimals > 0 ? divide(r, f, stream) : multiply(r, f, stream);
  return astype(r, a.dtype(), stream);
}

// ---------------------------------------------------------------- logic and bits

array logical_not(const array& a, StreamOrDevice s) {
  return predicate<LogicalNot>(a, s);
}

array bitwise_invert(const array& a, StreamOrDevice s) {
  if (!is_integral(a.dtype())) {
    throw std::invalid_argument(
        msg("[bitwise_invert] Requires an integer or bool array; got ", a.dtype(), "."));
  }
  return make_unary<BitwiseInvert>(a, a.dtype(), to_stream(s));
}

array operator!(const array& a) {
  return logical_not(a);
}
array operator~(const array& a) {
  return bitwise_invert(a);
}

// ---------------------------------------------------------------- classification

array isnan(const array& a, StreamOrDevice s) {
  return predicate<IsNaN>(a, s);
}
array isinf(const array& a, StreamOrDevice s) {
  return predicate<IsInf>(a, s);
}
array isfinite(const array& a, StreamOrDevice s) {
  return predicate<IsFinite>(a, s);
}

// Complex inputs are tested on their real part, as MLX does.
array isposinf(const array& a, StreamOrDevice s) {
  if (!is_complex(a.dtype())) return predicate<IsPosInf>(a, s);
  // As MLX: equal to the infinity on the real axis, so the imaginary part must be 0.
  return logical_and(predicate<IsPosInf>(real(a, s), s), equal(imag(a, s), array(0.0f), s), s);
}

array isneginf(const array& a, StreamOrDevice s) {
  if (!is_complex(a.dtype())) return predicate<IsNegInf>(a, s);
  // As MLX: equal to the infinity on the real axis, so the imaginary part must be 0.
  return logical_and(predicate<IsNegInf>(real(a, s), s), equal(imag(a, s), array(0.0f), s), s);
}

// ---------------------------------------------------------------- complex parts

array real(const array& a, StreamOrDevice s) {
  if (!is_complex(a.dtype())) return a;
  return make_unary<Real>(a, float32, to_stream(s));
}

array imag(const array& a, StreamOrDevice s) {
  if (!is_complex(a.dtype())) return zeros_like(a, s);
  return make_unary<Imag>(a, float32, to_stream(s));
}

array conjugate(const array& a, StreamOrDevice s) {
  if (!is_complex(a.dtype())) return a;
  return make_unary<Conjugate>(a, a.dtype(), to_stream(s));
}

}  // namespace kiln
