// Code generation of compile's fused GPU kernels (Compiled::eval_gpu in compiled.cpp runs
// them): the dtype rules each op follows on the GPU, the CUDA source of a tape's kernels, and
// the CI catalog of representative tapes.
#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "kiln/backend/cuda/compiled.h"
#include "kiln/backend/cuda/dtype_rules.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/kernels/sha256.h"
#include "kiln/primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

using gpu::kFusedMaxDims;
using gpu::kFusedWork;

namespace {

// ---------------------------------------------------------------- dtype rules

using gpu::dtype_rules::any_dtype, gpu::dtype_rules::not_bool, gpu::dtype_rules::real,
    gpu::dtype_rules::integer, gpu::dtype_rules::is_bool, gpu::dtype_rules::floating,
    gpu::dtype_rules::inexact, gpu::dtype_rules::integral, gpu::dtype_rules::complex,
    gpu::dtype_rules::same, gpu::dtype_rules::wrapping, gpu::dtype_rules::bits_if_integral,
    gpu::dtype_rules::bool_as_uint8;

// An op as the eager GPU kernel runs it: the functor, the dtype it reads (the operands are
// converted to it, keeping their bits), whether operands swap, and the dtypes it takes.
struct Rule {
  std::string functor;
  Dtype (*kin)(Dtype) = same;
  bool swap = false;
  bool (*takes)(Dtype) = nullptr;
  // Results that need no kernel: integers are never NaN or infinite.
  const char* constant = nullptr;  // "false" or "true" for non-inexact inputs
  bool identity_unsigned = false;  // |x| of an unsigned integer
};

Rule rule_of(const std::string& f, Dtype in) {
  Rule r;
  r.functor = f;
  static const std::set<std::string> inexact_ops = {
      "Sqrt", "Rsqrt",   "Exp",     "Expm1",   "Log",     "Log1p",  "Log2", "Log10",
      "Sin",  "Cos",     "Tan",     "ArcSin",  "ArcCos",  "ArcTan", "Sinh", "Cosh",
      "Tanh", "ArcSinh", "ArcCosh", "ArcTanh", "Sigmoid", "Divide"};
  static const std::set<std::string> floating_ops = {"Erf",   "ErfInv", "Floor",   "Ceil",
                                                     "Trunc", "Round",  "ArcTan2", "LogAddExp"};
  if (inexact_ops.count(f)) {
    r.takes = inexact;
  } else if (floating_ops.count(f)) {
    r.takes = floating;
  } else if (f == "Abs") {
    r.takes = not_bool;
    r.identity_unsigned = true;
  } else if (f == "Negative" || f == "Square") {
    r.takes = not_bool;
    r.kin = wrapping;
  } else if (f == "Sign") {
    r.takes = not_bool;
  } else if (f == "LogicalNot") {
    r.takes = any_dtype;
    r.kin = bits_if_integral;
  } else if (f == "BitwiseInvert") {
    r.takes = integral;
    r.kin = wrapping;
  } else if (f == "IsNaN" || f == "IsInf") {
    r.takes = any_dtype;
    r.constant = "false";
  } else if (f == "IsPosInf" || f == "IsNegInf") {
    r.takes = real;
    r.constant = "false";
  } else if (f == "IsFinite") {
    r.takes = any_dtype;
    r.constant = "true";
  } else if (f == "Real" || f == "Imag" || f == "Conjugate") {
    r.takes = complex;
  } else if (f == "Add") {
    r.takes = any_dtype;
    r.kin = wrapping;
  } else if (f == "Subtract") {
    r.takes = not_bool;
    r.kin = wrapping;
  } else if (f == "Multiply") {
    r.takes = any_dtype;
    r.kin = bits_if_integral;
  } else if (f == "FloorDivide" || f == "Remainder" || f == "Maximum" || f == "Minimum" ||
             f == "Less" || f == "LessEqual") {
    r.takes = real;
    r.kin = bool_as_uint8;
  } else if (f == "Greater" || f == "GreaterEqual") {
    r.functor = f == "Greater" ? "Less" : "LessEqual";
    r.swap = true;
    r.takes = real;
    r.kin = bool_as_uint8;
  } else if (f == "Power") {
    r.takes = any_dtype;
    r.kin = bool_as_uint8;
  } else if (f == "Equal" || f == "NotEqual") {
    r.takes = any_dtype;
    r.kin = bits_if_integral;
  } else if (f == "EqualNaN") {
    if (is_inexact(in)) {
      r.takes = inexact;
    } else {
      r.functor = "Equal";
      r.takes = any_dtype;
      r.kin = bits_if_integral;
    }
  } else if (f == "LogicalAnd" || f == "LogicalOr") {
    r.functor = f == "LogicalAnd" ? "BitwiseAnd" : "BitwiseOr";
    r.takes = is_bool;
    r.kin = bits_if_integral;
  } else if (f == "BitwiseAnd" || f == "BitwiseOr" || f == "BitwiseXor") {
    r.takes = integral;
    r.kin = bits_if_integral;
  } else if (f == "LeftShift") {
    r.takes = integer;
    r.kin = bits_if_integral;
  } else if (f == "RightShift") {
    r.takes = integer;
  }
  return r;
}

std::string literal_expr(const array& a) {
  uint64_t bits = 0;
  std::memcpy(&bits, a.data<void>(), a.itemsize());
  std::ostringstream os;
  os << "kiln::bits_as<" << gpu::device_type(a.dtype()) << ">(static_cast<kiln::uint"
     << a.itemsize() * 8 << ">(0x" << std::hex << bits << "ull))";
  return os.str();
}

bool is_half_type(Dtype d) {
  return d == float16 || d == bfloat16;
}

// Ops with a packed half instruction (add/sub/mul.rn.{f16,bf16}x2): one instruction for two
// elements. Exactly the scalar result: a half product is exact in float, and float's 24 bits
// are >= 2p + 2 for a half type's p bits, so rounding to float and then to the half type
// never differs from one rounding (Figueroa, "When is double rounding innocuous?", 1995).
const char* packed_op(const FusedTape& t, const FusedTape::Op& op, const std::string& f) {
  if (!is_half_type(op.dtype)) return nullptr;
  for (int a : op.args)
    if (t.dtype(a) != op.dtype) return nullptr;
  if (f == "Add") return "add2";
  if (f == "Subtract") return "sub2";
  if (f == "Multiply") return "mul2";
  if (f == "Square") return "square2";
  return nullptr;
}

// The expression computing op `k` from the values named v<i>: one element, or with `pair` two
// neighbouring elements held in a kiln_fused::Pair (the vectorized kernel's packed path).
std::string op_expr(const FusedTape& t, const FusedTape::Op& op, bool pair) {
  const std::string f = detail::fused_functor(*op.prim);
  const std::string out = gpu::device_type(op.dtype);
  auto v = [](int i) { return std::string("v").append(std::to_string(i)); };
  // The expression `e` of one element `c` (lo or hi) of a pair, or of a scalar.
  auto elem = [&](const std::string& c, int i) { return pair ? c + "(" + v(i) + ")" : v(i); };
  auto each = [&](auto scalar) {
    return pair ? "kiln_fused::make2<" + out + ">(" + scalar("kiln_fused::lo") + ", " +
                      scalar("kiln_fused::hi") + ")"
                : scalar("");
  };
  if (f == "AsType")
    return pair ? "kiln_fused::cast2<" + out + ">(" + v(op.args[0]) + ")"
                : "kiln::cast<" + out + ">(" + v(op.args[0]) + ")";
  if (f == "Select") {
    return each([&](const std::string& c) {
      return elem(c, op.args[0]) + " ? " + elem(c, op.args[1]) + " : " + elem(c, op.args[2]);
    });
  }
  const Dtype in = t.dtype(op.args[0]);
  const Rule r = rule_of(f, in);
  if (!r.takes || !r.takes(in)) {
    throw std::invalid_argument(msg("[compile] The GPU kernels do not take ", f, " of ", in, "."));
  }
  if (r.constant && !is_inexact(in)) {
    return pair ? "kiln_fused::make2<" + out + ">(" + r.constant + ", " + r.constant + ")"
                : std::string(r.constant);
  }
  if (r.identity_unsigned && is_unsigned(in)) return v(op.args[0]);
  if (pair) {
    if (const char* p = packed_op(t, op, f)) {
      std::string e = std::string("kiln_fused::") + p + "(";
      for (size_t a = 0; a < op.args.size(); ++a) e += (a ? ", " : "") + v(op.args[a]);
      return e + ")";
    }
  }
  // Float add, subtract and multiply, never contracted with a neighbouring op.
  if ((in == float32 || in == float64) && op.args.size() == 2) {
    const char* p = in == float32 ? "__f" : "__d";
    const char* name = f == "Add"        ? "add_rn("
                       : f == "Subtract" ? "sub_rn("
                       : f == "Multiply" ? "mul_rn("
                                         : nullptr;
    if (name) {
      return each([&](const std::string& c) {
        return std::string(p) + name + elem(c, op.args[0]) + ", " + elem(c, op.args[1]) + ")";
      });
    }
  }
  const std::string kin = gpu::device_type(r.kin(in));
  std::vector<int> args = op.args;
  if (r.swap) std::swap(args[0], args[1]);
  std::string e =
      (pair ? "kiln_fused::apply2<" : "kiln::apply<") + out + ">(kiln::" + r.functor + "()";
  for (int a : args)
    e += pair ? ", kiln_fused::static_cast2<" + kin + ">(" + v(a) + ")"
              : ", static_cast<" + kin + ">(" + v(a) + ")";
  return e + ")";
}

// Whether the vectorized kernel computes pairs: some op has a packed instruction.
bool uses_pairs(const FusedTape& t, int vector_width) {
  if (vector_width % 2 != 0) return false;
  for (const auto& op : t.ops)
    if (op.prim && packed_op(t, op, detail::fused_functor(*op.prim))) return true;
  return false;
}

constexpr const char* kPrelude = R"(#include "kiln/backend/cuda/device/binary_ops.cuh"
#include "kiln/backend/cuda/device/indexing.cuh"
#include "kiln/backend/cuda/device/cast.cuh"
#include "kiln/backend/cuda/device/unary_ops.cuh"
#include "kiln/backend/cuda/device/pair.cuh"

namespace kiln_fused {

struct Shape {
  int v[KILN_FUSED_DIMS];
};
struct Strides {
  long long v[KILN_FUSED_DIMS];
};

}  // namespace kiln_fused
)";

std::string source_of(const FusedTape& t, const std::string& label) {
  const int ni = static_cast<int>(t.num_inputs()), first = t.first_op();
  std::vector<int> read;  // inputs the kernel reads
  for (int i = 0; i < ni; ++i)
    if (!t.shape_only[i]) read.push_back(i);
  auto in_type = [&](int i) { return gpu::device_type(t.input_dtypes[i]); };
  auto out_type = [&](size_t o) { return gpu::device_type(t.dtype(t.outputs[o])); };
  std::ostringstream os;
  os << "// kiln compile: " << label << "\n#define KILN_FUSED_DIMS " << kFusedMaxDims << "\n"
     << kPrelude << "\nnamespace kiln_fused {\n\n";
  // The computation of one element from its input values, shared by every kernel
  // (`compute`), and of two neighbouring elements for the vectorized kernel (`compute2`).
  const bool pairs = uses_pairs(t, gpu::fused_vector_width(t));
  for (bool pair : {false, true}) {
    if (pair && !pairs) break;
    auto type = [&](const std::string& T) { return pair ? "kiln_fused::Pair<" + T + ">" : T; };
    os << "__device__ __forceinline__ void compute" << (pair ? "2(" : "(");
    for (int i : read) os << "const " << type(in_type(i)) << " v" << i << ", ";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << type(out_type(o)) << "& r" << o << (o + 1 < t.outputs.size() ? ", " : "");
    os << ") {\n";
    for (size_t j = 0; j < t.literals.size(); ++j) {
      const std::string T = gpu::device_type(t.literals[j].dtype()),
                        lit = literal_expr(t.literals[j]);
      os << "  const " << type(T) << " v" << ni + j << " = "
         << (pair ? "kiln_fused::make2<" + T + ">(" + lit + ", " + lit + ")" : lit) << ";\n";
    }
    for (size_t k = 0; k < t.ops.size(); ++k) {
      const auto& op = t.ops[k];
      os << "  const " << type(gpu::device_type(op.dtype)) << " v" << first + k << " = "
         << op_expr(t, op, pair) << ";\n";
    }
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << "  r" << o << " = v" << t.outputs[o] << ";\n";
    os << "}\n\n";
  }
  // One element read through `at(k, i)` and written at i.
  os << "template <typename IdxT, typename At>\n__device__ __forceinline__ void element(IdxT i, ";
  for (int i : read) os << "const " << in_type(i) << "* __restrict__ in" << i << ", ";
  for (size_t o = 0; o < t.outputs.size(); ++o)
    os << out_type(o) << "* __restrict__ out" << o << ", ";
  os << "At at) {\n  compute(";
  for (int i : read) os << "in" << i << "[at(" << i << ", i)], ";
  for (size_t o = 0; o < t.outputs.size(); ++o)
    os << "out" << o << "[i]" << (o + 1 < t.outputs.size() ? ", " : "");
  os << ");\n}\n\n";

  auto params = [&](std::ostream& s) {
    for (int i : read) s << "const " << in_type(i) << "* __restrict__ in" << i << ", ";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      s << out_type(o) << "* __restrict__ out" << o << ", ";
  };
  auto call = [&](std::ostream& s) {
    for (int i : read) s << "in" << i << ", ";
    for (size_t o = 0; o < t.outputs.size(); ++o) s << "out" << o << ", ";
  };
  // contig: inputs row-contiguous in the output's shape, or one element (bit k of `scalar`).
  // Each thread takes kFusedWork elements a block apart (coalesced).
  os << "template <typename IdxT>\n__device__ __forceinline__ void contig_block(";
  params(os);
  os << "IdxT n, unsigned int scalar, IdxT block) {\n"
     << "  const IdxT base = block * (blockDim.x * " << kFusedWork << ") + threadIdx.x;\n"
     << "  auto at = [&](int k, IdxT i) -> IdxT { return (scalar >> k) & 1u ? IdxT(0) : i; };\n"
     << "#pragma unroll\n  for (int w = 0; w < " << kFusedWork << "; ++w) {\n"
     << "    const IdxT i = base + static_cast<IdxT>(w) * blockDim.x;\n"
     << "    if (i < n) element(i, ";
  call(os);
  os << "at);\n  }\n}\n\n";
  os << "template <typename IdxT>\n__global__ void contig(";
  params(os);
  os << "IdxT n, unsigned int scalar) {\n  contig_block<IdxT>(";
  call(os);
  os << "n, scalar, static_cast<IdxT>(blockIdx.x));\n}\n\n";
  // vec: as contig, N consecutive elements per thread moved with 16-byte accesses (every
  // pointer aligned); the last thread finishes a ragged tail element by element.
  os << "template <typename IdxT, int N>\n__device__ __forceinline__ void vec_block(";
  params(os);
  os << "IdxT n, unsigned int scalar, IdxT block) {\n"
     << "  const IdxT i0 = (block * blockDim.x + threadIdx.x) * N;\n"
     << "  if (i0 + N <= n) {\n";
  for (int i : read) {
    os << "    kiln::Vec<" << in_type(i) << ", N> x" << i << ";\n"
       << "    if ((scalar >> " << i << ") & 1u) {\n#pragma unroll\n"
       << "      for (int k = 0; k < N; ++k) x" << i << ".v[k] = in" << i << "[0];\n"
       << "    } else {\n      x" << i << " = kiln::load_vec<N>(in" << i << " + i0);\n    }\n";
  }
  for (size_t o = 0; o < t.outputs.size(); ++o)
    os << "    kiln::Vec<" << out_type(o) << ", N> y" << o << ";\n";
  if (pairs) {
    os << "#pragma unroll\n    for (int k = 0; k < N; k += 2) {\n";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << "      kiln_fused::Pair<" << out_type(o) << "> p" << o << ";\n";
    os << "      compute2(";
    for (int i : read) os << "kiln_fused::load2(x" << i << ".v + k), ";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << "p" << o << (o + 1 < t.outputs.size() ? ", " : "");
    os << ");\n";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << "      kiln_fused::store2(y" << o << ".v + k, p" << o << ");\n";
    os << "    }\n";
  } else {
    os << "#pragma unroll\n    for (int k = 0; k < N; ++k) compute(";
    for (int i : read) os << "x" << i << ".v[k], ";
    for (size_t o = 0; o < t.outputs.size(); ++o)
      os << "y" << o << ".v[k]" << (o + 1 < t.outputs.size() ? ", " : "");
    os << ");\n";
  }
  for (size_t o = 0; o < t.outputs.size(); ++o)
    os << "    kiln::store_vec<N>(out" << o << " + i0, y" << o << ");\n";
  os << "  } else {\n"
     << "    auto at = [&](int k, IdxT i) -> IdxT { return (scalar >> k) & 1u ? IdxT(0) : i; };\n"
     << "    for (IdxT i = i0; i < n; ++i) element(i, ";
  call(os);
  os << "at);\n  }\n}\n\n";
  os << "template <typename IdxT, int N>\n__global__ void vec(";
  params(os);
  os << "IdxT n, unsigned int scalar) {\n  vec_block<IdxT, N>(";
  call(os);
  os << "n, scalar, static_cast<IdxT>(blockIdx.x));\n}\n\n";
  // group: CompiledGroup's members, one segment each (the layout of gpu::fused_segment_bytes), in
  // one launch. A block finds its segment by binary search over the segments' first blocks and runs
  // the contig or vec body on its part of it (32-bit indices).
  os << "struct Segment {\n";
  for (int i : read) os << "  const " << in_type(i) << "* in" << i << ";\n";
  for (size_t o = 0; o < t.outputs.size(); ++o) os << "  " << out_type(o) << "* out" << o << ";\n";
  os << "  int n;\n  int first_block;\n  unsigned int scalar;\n  int vec;\n};\n"
     << "struct Segments {\n  Segment s[" << gpu::fused_group_capacity(t)
     << "];\n  int count;\n};\n\n"
     << "template <int N>\n__global__ void group(const __grid_constant__ Segments g) {\n"
     << "  const int b = static_cast<int>(blockIdx.x);\n"
     << "  int lo = 0, hi = g.count - 1;\n"
     << "  while (lo < hi) {\n"
     << "    const int mid = (lo + hi + 1) >> 1;\n"
     << "    if (g.s[mid].first_block <= b) lo = mid; else hi = mid - 1;\n"
     << "  }\n"
     << "  const Segment& sg = g.s[lo];\n";
  auto seg_call = [&](std::ostream& s) {
    for (int i : read) s << "sg.in" << i << ", ";
    for (size_t o = 0; o < t.outputs.size(); ++o) s << "sg.out" << o << ", ";
  };
  os << "  if (sg.vec) {\n    vec_block<int, N>(";
  seg_call(os);
  os << "sg.n, sg.scalar, b - sg.first_block);\n  } else {\n    contig_block<int>(";
  seg_call(os);
  os << "sg.n, sg.scalar, b - sg.first_block);\n  }\n}\n\n";
  // strided: any strides over `ndim` collapsed dimensions.
  os << "template <typename IdxT>\n__global__ void strided(";
  params(os);
  os << "IdxT n, int ndim, const __grid_constant__ Shape shape";
  for (int i : read) os << ", const __grid_constant__ Strides s" << i;
  os << ") {\n"
     << "  const IdxT base = static_cast<IdxT>(blockIdx.x) * (blockDim.x * " << kFusedWork
     << ") + threadIdx.x;\n"
     << "#pragma unroll\n  for (int w = 0; w < " << kFusedWork << "; ++w) {\n"
     << "    const IdxT i = base + static_cast<IdxT>(w) * blockDim.x;\n"
     << "    if (i >= n) continue;\n";
  for (int i : read) os << "    IdxT loc" << i << " = 0;\n";
  os << "    IdxT rem = i;\n"
     << "    for (int d = ndim - 1; d >= 0; --d) {\n"
     << "      const IdxT c = rem % static_cast<IdxT>(shape.v[d]);\n"
     << "      rem /= static_cast<IdxT>(shape.v[d]);\n";
  for (int i : read) os << "      loc" << i << " += c * static_cast<IdxT>(s" << i << ".v[d]);\n";
  os << "    }\n"
     << "    auto at = [&](int k, IdxT) -> IdxT {\n";
  for (int i : read) os << "      if (k == " << i << ") return loc" << i << ";\n";
  os << "      return IdxT(0);\n    };\n    element(i, ";
  call(os);
  os << "at);\n  }\n}\n\n";
  os << "}  // namespace kiln_fused\n";
  return os.str();
}

}  // namespace
// Elements per thread of the vectorized kernel: one 16-byte access of the widest operand.
int gpu::fused_vector_width(const FusedTape& t) {
  size_t widest = 1;
  for (size_t i = 0; i < t.num_inputs(); ++i)
    if (!t.shape_only[i]) widest = std::max<size_t>(widest, t.input_dtypes[i].size);
  for (int o : t.outputs) widest = std::max<size_t>(widest, t.dtype(o).size);
  return static_cast<int>(16 / widest);
}

// The kernels of a module, in the order eval_gpu indexes them.
std::vector<std::string> gpu::fused_kernel_names(const FusedTape& t) {
  const std::string n = std::to_string(fused_vector_width(t));
  return {"kiln_fused::contig<int>",         "kiln_fused::contig<long long>",
          "kiln_fused::strided<int>",        "kiln_fused::strided<long long>",
          "kiln_fused::vec<int, " + n + ">", "kiln_fused::vec<long long, " + n + ">"};
}

gpu::ModuleSource gpu::fused_module(const FusedTape& tape, const std::string& label) {
  std::string source = source_of(tape, label);
  const std::string hash = kernels::Sha256::hex(kernels::Sha256::hash(source)).substr(0, 16);
  return {"compiled_" + hash, std::move(source), fused_kernel_names(tape), {"-minimal"}};
}

// The same source; only the group kernel is instantiated (the others cost nothing there).
gpu::ModuleSource gpu::fused_group_module(const FusedTape& tape, const std::string& label) {
  ModuleSource m = fused_module(tape, label);
  m.name += "_group";
  m.kernels = {fused_group_kernel_name(tape)};
  return m;
}

std::string gpu::fused_group_kernel_name(const FusedTape& t) {
  return "kiln_fused::group<" + std::to_string(fused_vector_width(t)) + ">";
}

size_t gpu::fused_segment_bytes(const FusedTape& t) {
  size_t pointers = t.outputs.size();
  for (size_t i = 0; i < t.num_inputs(); ++i) pointers += t.shape_only[i] ? 0 : 1;
  return pointers * sizeof(void*) + 4 * sizeof(int32_t);
}

int gpu::fused_group_capacity(const FusedTape& t) {
  const size_t room = (kFusedGroupParamBytes - 8) / fused_segment_bytes(t);
  return static_cast<int>(std::clamp<size_t>(room, 1, kFusedGroupMaxSegments));
}

// Representative tapes for the CI catalog: per dtype, every unary and binary op the GPU takes
// on it (one output each), per source dtype every conversion, and a select; each compiled as
// the GPU would compile it (tests/test_jit.cpp's JitCatalog).
namespace {

void catalog(const gpu::ModuleSink& sink) {
  const Stream st(0, Device::cpu);
  const char* unary[] = {
      "Abs",      "Negative", "Sign",     "Square",     "Sqrt",          "Rsqrt",    "Exp",
      "Expm1",    "Log",      "Log1p",    "Log2",       "Log10",         "Sin",      "Cos",
      "Tan",      "ArcSin",   "ArcCos",   "ArcTan",     "Sinh",          "Cosh",     "Tanh",
      "ArcSinh",  "ArcCosh",  "ArcTanh",  "Erf",        "ErfInv",        "Sigmoid",  "Floor",
      "Ceil",     "Trunc",    "Round",    "LogicalNot", "BitwiseInvert", "IsNaN",    "IsInf",
      "IsFinite", "IsPosInf", "IsNegInf", "Real",       "Imag",          "Conjugate"};
  const char* binary[] = {"Add",        "Subtract",  "Multiply",     "Divide",     "FloorDivide",
                          "Remainder",  "Power",     "Maximum",      "Minimum",    "ArcTan2",
                          "LogAddExp",  "Equal",     "EqualNaN",     "NotEqual",   "Less",
                          "LessEqual",  "Greater",   "GreaterEqual", "LogicalAnd", "LogicalOr",
                          "BitwiseAnd", "BitwiseOr", "BitwiseXor",   "LeftShift",  "RightShift"};
  auto make = [&](const std::string& f) -> std::shared_ptr<Primitive> {
// clang-format off
#define KILN_CASE(NAME) \
  if (f == #NAME) return std::make_shared<NAME>(st);
    KILN_CASE(Abs)
    KILN_CASE(Negative)
    KILN_CASE(Sign)
    KILN_CASE(Square)
    KILN_CASE(Sqrt)
    KILN_CASE(Rsqrt)
    KILN_CASE(Exp)
    KILN_CASE(Expm1)
    KILN_CASE(Log)
    KILN_CASE(Log1p)
    KILN_CASE(Log2)
    KILN_CASE(Log10)
    KILN_CASE(Sin)
    KILN_CASE(Cos)
    KILN_CASE(Tan)
    KILN_CASE(ArcSin)
    KILN_CASE(ArcCos)
    KILN_CASE(ArcTan)
    KILN_CASE(Sinh)
    KILN_CASE(Cosh)
    KILN_CASE(Tanh)
    KILN_CASE(ArcSinh)
    KILN_CASE(ArcCosh)
    KILN_CASE(ArcTanh)
    KILN_CASE(Erf)
    KILN_CASE(ErfInv)
    KILN_CASE(Sigmoid)
    KILN_CASE(Floor)
    KILN_CASE(Ceil)
    KILN_CASE(Trunc)
    KILN_CASE(Round)
    KILN_CASE(LogicalNot)
    KILN_CASE(BitwiseInvert)
    KILN_CASE(IsNaN)
    KILN_CASE(IsInf)
    KILN_CASE(IsFinite)
    KILN_CASE(IsPosInf)
    KILN_CASE(IsNegInf)
    KILN_CASE(Real)
    KILN_CASE(Imag)
    KILN_CASE(Conjugate)
    KILN_CASE(Add)
    KILN_CASE(Subtract)
    KILN_CASE(Multiply)
    KILN_CASE(Divide)
    KILN_CASE(FloorDivide)
    KILN_CASE(Remainder)
    KILN_CASE(Power)
    KILN_CASE(Maximum)
    KILN_CASE(Minimum)
    KILN_CASE(ArcTan2)
    KILN_CASE(LogAddExp)
    KILN_CASE(NotEqual)
    KILN_CASE(Less)
    KILN_CASE(LessEqual)
    KILN_CASE(Greater)
    KILN_CASE(GreaterEqual)
    KILN_CASE(LogicalAnd)
    KILN_CASE(LogicalOr)
    KILN_CASE(BitwiseAnd)
    KILN_CASE(BitwiseOr)
    KILN_CASE(BitwiseXor)
    KILN_CASE(LeftShift)
    KILN_CASE(RightShift)
    // clang-format on
#undef KILN_CASE
    if (f == "Equal") return std::make_shared<Equal>(st, false);
    if (f == "EqualNaN") return std::make_shared<Equal>(st, true);
    return nullptr;
  };
  auto result = [](const std::string& f, Dtype d) {
    static const std::set<std::string> to_bool = {
        "LogicalNot", "IsNaN",    "IsInf", "IsFinite",  "IsPosInf", "IsNegInf",    "Equal",
        "EqualNaN",   "NotEqual", "Less",  "LessEqual", "Greater",  "GreaterEqual"};
    if (to_bool.count(f)) return bool_;
    if ((f == "Abs" || f == "Real" || f == "Imag") && d == complex64) return float32;
    return d;
  };
  for (Dtype d : all_dtypes) {
    FusedTape t;
    t.input_dtypes = {d, d};
    t.shape_only = {false, false};
    auto add = [&](const std::string& f, std::vector<int> args) {
      if (!rule_of(f, d).takes || !rule_of(f, d).takes(d)) return;
      t.ops.push_back({make(f), std::move(args), result(f, d)});
      t.outputs.push_back(t.first_op() + static_cast<int>(t.ops.size()) - 1);
    };
    for (const char* f : unary) add(f, {0});
    for (const char* f : binary) add(f, {0, 1});
    // Three of the six kernels, each kernel once and each index type once: the others differ
    // only in their index type, and each kernel of these large tapes costs seconds to compile.
    auto trimmed = [](gpu::ModuleSource m) {
      m.kernels = {m.kernels[0], m.kernels[3], m.kernels[4]};
      m.name += "_catalog";
      return m;
    };
    auto m = trimmed(gpu::fused_module(t, msg("catalog_ops_", d)));
    sink(m.name, m);
    // Every conversion from d, and a select on d with a literal.
    FusedTape c;
    c.input_dtypes = {d, bool_};
    c.shape_only = {false, false};
    c.literals = {array(1, d)};
    for (Dtype to : all_dtypes) {
      c.ops.push_back({std::make_shared<AsType>(st, to), {0}, to});
      c.outputs.push_back(c.first_op() + static_cast<int>(c.ops.size()) - 1);
    }
    c.ops.push_back({std::make_shared<Select>(st), {1, 0, 2}, d});
    c.outputs.push_back(c.first_op() + static_cast<int>(c.ops.size()) - 1);
    auto mc = trimmed(gpu::fused_module(c, msg("catalog_cast_", d)));
    mc.kernels.push_back(gpu::fused_group_kernel_name(c));
    sink(mc.name, mc);
  }
}

}  // namespace

KILN_GPU_MODULE_CATALOG(compiled, catalog);

}  // namespace kiln
