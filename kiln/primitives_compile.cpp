// The primitives of compile: placeholders, shape-following broadcasts and Compiled's
// device-independent parts (shapes, transforms, the unfused fallback). Code generation is in
// backend/{cpu,cuda}/compiled.cpp.
#include "kiln/primitives_compile.h"

#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <typeindex>
#include <unordered_map>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives.h"
#include "kiln/transforms.h"
#include "kiln/utils.h"

namespace kiln {

// ---------------------------------------------------------------- CompileInput
// Device independent: there is nothing to compute, only a user mistake to report.
void CompileInput::eval_cpu(const std::vector<array>&, array& out) {
  throw std::invalid_argument(
      msg("[compile] Attempting to eval an array without a primitive: an array of shape ",
          shape_str(out.shape()),
          " computed from the inputs of a function that compile is tracing (eval, item, "
          "tolist or a conversion inside the function). A compiled function cannot read the "
          "values of its inputs; if the array is state the function reads or updates, capture "
          "it with compile's inputs= and outputs=."));
}
void CompileInput::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

// ---------------------------------------------------------------- BroadcastLike
namespace {

Shape broadcast_all(const std::vector<array>& inputs) {
  Shape s;
  for (const auto& in : inputs) s = broadcast_shapes(s, in.shape(), "broadcast_to");
  return s;
}

// Strides viewing `in` broadcast to `shape` (NumPy's rule: aligned at the last axis).
Strides broadcast_strides(const array& in, const Shape& shape) {
  const size_t added = shape.size() - in.ndim();
  Strides strides(shape.size(), 0);
  for (size_t i = 0; i < in.ndim(); ++i) {
    if (in.shape()[i] == shape[i + added]) strides[i + added] = in.strides()[i];
  }
  return strides;
}

}  // namespace

std::vector<Shape> BroadcastLike::output_shapes(const std::vector<array>& inputs) {
  if (ignore_last_ == 0) return {broadcast_all(inputs)};
  const size_t k = static_cast<size_t>(ignore_last_);
  auto lead = [&](const Shape& s) { return Shape(s.begin(), s.end() - std::min(k, s.size())); };
  Shape out;
  for (const auto& in : inputs) out = broadcast_shapes(out, lead(in.shape()), "broadcast_to");
  const Shape& x = inputs[0].shape();
  out.insert(out.end(), x.end() - std::min(k, x.size()), x.end());
  return {out};
}

bool BroadcastLike::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const BroadcastLike*>(&other);
  return o && o->ignore_last_ == ignore_last_;
}

void BroadcastLike::eval_cpu(const std::vector<array>& inputs, array& out) {
  const Strides strides = broadcast_strides(inputs[0], out.shape());
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.copy_shared_buffer(inputs[0], strides, flags, data_size);
}
void BroadcastLike::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

std::vector<array> BroadcastLike::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents,
                                      const std::vector<int>& argnums) {
  const Shape shape = output_shapes(primals)[0];
  if (argnums.empty() || argnums[0] != 0) return {detail::zeros_view(shape, primals[0].dtype())};
  return {broadcast_to(tangents[0], shape, stream())};
}

std::vector<array> BroadcastLike::vjp(const std::vector<array>& primals,
                                      const std::vector<array>& cotangents,
                                      const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int a : argnums) {
    const array& p = primals[a];
    if (a != 0) {
      out.push_back(detail::zeros_view(p.shape(), p.dtype(), stream()));
      continue;
    }
    // Sum over the added leading axes and the stretched size-1 axes.
    const Shape& target = cotangents[0].shape();
    const int added = static_cast<int>(target.size() - p.ndim());
    std::vector<int> axes;
    for (int i = 0; i < static_cast<int>(target.size()); ++i) {
      if (i < added || (p.shape()[i - added] == 1 && target[i] != 1)) axes.push_back(i);
    }
    array g = axes.empty() ? cotangents[0] : sum(cotangents[0], axes, true, stream());
    out.push_back(reshape(g, p.shape(), stream()));
  }
  return out;
}

std::pair<std::vector<array>, std::vector<int>> BroadcastLike::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  // Every input gets the mapped axis first (size 1 where unmapped), after padding its other
  // axes to the common rank, so that broadcasting aligns the unmapped axes as before.
  size_t rank = 0;
  for (size_t i = 0; i < inputs.size(); ++i)
    rank = std::max(rank, inputs[i].ndim() - (axes[i] >= 0 ? 1 : 0));
  std::vector<array> moved;
  for (size_t i = 0; i < inputs.size(); ++i) {
    array x = axes[i] >= 0 ? moveaxis(inputs[i], axes[i], 0, stream())
                           : expand_dims(inputs[i], 0, stream());
    Shape padded{x.shape()[0]};
    padded.insert(padded.end(), rank - (x.ndim() - 1), 1);
    padded.insert(padded.end(), x.shape().begin() + 1, x.shape().end());
    moved.push_back(reshape(x, padded, stream()));
  }
  for (size_t i = 1; i < moved.size(); ++i) moved[i] = stop_gradient(moved[i], stream());
  auto prim = std::make_shared<BroadcastLike>(stream(), ignore_last_);
  const Shape shape = prim->output_shapes(moved)[0];
  return {{array(shape, inputs[0].dtype(), prim, moved)}, {0}};
}

// ---------------------------------------------------------------- FusedTape, Compiled

Dtype FusedTape::dtype(int v) const {
  const int n = static_cast<int>(input_dtypes.size());
  if (v < n) return input_dtypes[v];
  if (v < first_op()) return literals[v - n].dtype();
  return ops[v - first_op()].dtype;
}

namespace {

std::string literal_hex(const array& a) {
  std::ostringstream os;
  const auto* p = static_cast<const unsigned char*>(a.data<void>());
  for (size_t i = 0; i < a.itemsize(); ++i)
    os << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(p[i]);
  return os.str();
}

}  // namespace

Compiled::Compiled(Stream stream, FusedTape tape, std::optional<Shape> fixed_shape,
                   std::string label)
    : Primitive(stream), tape_(std::move(tape)), fixed_shape_(std::move(fixed_shape)) {
  std::ostringstream key, name;
  name << "Compiled";
  for (size_t i = 0; i < tape_.num_inputs(); ++i)
    key << "i" << tape_.input_dtypes[i] << (tape_.shape_only[i] ? "s" : "") << ";";
  for (const auto& l : tape_.literals) key << "l" << l.dtype() << ":" << literal_hex(l) << ";";
  for (const auto& op : tape_.ops) {
    key << detail::fused_functor(*op.prim) << "->" << op.dtype << "(";
    for (int a : op.args) key << a << ",";
    key << ");";
    name << op.prim->name();
  }
  key << "o";
  for (int o : tape_.outputs) key << o << ",";
  code_key_ = key.str();
  name_ = label.empty() ? name.str() : std::move(label);
}

void Compiled::print(std::ostream& os) {
  os << name_;
}

bool Compiled::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Compiled*>(&other);
  return o && o->code_key_ == code_key_ && o->fixed_shape_ == fixed_shape_;
}

std::vector<Shape> Compiled::output_shapes(const std::vector<array>& inputs) {
  Shape shape;
  if (fixed_shape_) {
    shape = *fixed_shape_;
    for (const auto& in : inputs) {
      if (broadcast_shapes(in.shape(), shape, "compile") != shape) {
        throw std::invalid_argument(msg("[compile] An input of shape ", shape_str(in.shape()),
                                        " cannot be broadcast to the shape ", shape_str(shape),
                                        " the compiled function computes with."));
      }
    }
  } else {
    for (const auto& in : inputs) shape = broadcast_shapes(shape, in.shape(), "compile");
  }
  return std::vector<Shape>(tape_.outputs.size(), shape);
}

std::vector<array> Compiled::unfused(const std::vector<array>& inputs) const {
  const Shape shape = const_cast<Compiled*>(this)->output_shapes(inputs)[0];
  std::vector<array> vals;
  vals.reserve(tape_.num_inputs() + tape_.literals.size() + tape_.ops.size());
  for (const auto& in : inputs) vals.push_back(broadcast_to(in, shape, stream()));
  for (const auto& l : tape_.literals) vals.push_back(broadcast_to(l, shape, stream()));
  for (const auto& op : tape_.ops) {
    std::vector<array> args;
    for (int a : op.args) args.push_back(vals[a]);
    vals.emplace_back(shape, op.dtype, op.prim, std::move(args));
  }
  std::vector<array> outs;
  for (int o : tape_.outputs) outs.push_back(vals[o]);
  return outs;
}

std::vector<array> Compiled::run_unfused(const std::vector<array>& inputs, const Shape& shape,
                                         const std::function<void(const array&)>& keep) const {
  const bool gpu = device().type == Device::gpu;
  std::vector<array> vals;
  vals.reserve(tape_.num_inputs() + tape_.literals.size() + tape_.ops.size());
  for (const auto& in : inputs) vals.push_back(detail::broadcast_view(in, shape));
  for (const auto& l : tape_.literals) vals.push_back(detail::broadcast_view(l, shape));
  for (const auto& op : tape_.ops) {
    std::vector<array> args;
    for (int a : op.args) args.push_back(vals[a]);
    std::vector<array> out{array(shape, op.dtype, op.prim, args)};
    if (gpu)
      op.prim->eval_gpu(args, out);
    else
      op.prim->eval_cpu(args, out);
    out[0].set_status(array::Status::available);
    out[0].detach();
    vals.push_back(std::move(out[0]));
  }
  if (keep)
    for (const auto& v : vals) keep(v);
  std::vector<array> outs;
  for (int o : tape_.outputs) outs.push_back(vals[o]);
  return outs;
}

// ---------------------------------------------------------------- transforms of nodes that
// stand for other ops (Compiled, CompiledGroup, CompiledGraph): those ops' transforms.

std::vector<array> detail::unfused_jvp(const ArrayFn& unfused, const std::vector<array>& primals,
                                       const std::vector<array>& tangents,
                                       const std::vector<int>& argnums, const Stream& s) {
  std::vector<array> all;
  for (const auto& p : primals) all.push_back(detail::zeros_view(p.shape(), p.dtype(), s));
  for (size_t i = 0; i < argnums.size(); ++i) all[argnums[i]] = tangents[i];
  return kiln::jvp(unfused, primals, all).second;
}

std::vector<array> detail::unfused_vjp(const ArrayFn& unfused, const std::vector<array>& primals,
                                       const std::vector<array>& cotangents,
                                       const std::vector<int>& argnums) {
  auto grads = kiln::vjp(unfused, primals, cotangents).second;
  std::vector<array> out;
  for (int a : argnums) out.push_back(grads[a]);
  return out;
}

std::pair<std::vector<array>, std::vector<int>> detail::unfused_vmap(
    const ArrayFn& unfused, const std::vector<array>& inputs, const std::vector<int>& axes) {
  auto outs = kiln::vmap(unfused, axes)(inputs);
  return {outs, std::vector<int>(outs.size(), 0)};
}

std::vector<array> Compiled::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums) {
  return detail::unfused_jvp([this](const auto& x) { return unfused(x); }, primals, tangents,
                             argnums, stream());
}

std::vector<array> Compiled::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  return detail::unfused_vjp([this](const auto& x) { return unfused(x); }, primals, cotangents,
                             argnums);
}

std::pair<std::vector<array>, std::vector<int>> Compiled::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  return detail::unfused_vmap([this](const auto& x) { return unfused(x); }, inputs, axes);
}

// ---------------------------------------------------------------- CompiledGroup

CompiledGroup::CompiledGroup(Stream stream, std::vector<std::shared_ptr<Compiled>> members,
                             std::vector<int> num_inputs)
    : Primitive(stream), members_(std::move(members)) {
  if (members_.empty() || num_inputs.size() != members_.size()) {
    throw std::invalid_argument("[compile] A compiled group needs members and their inputs.");
  }
  input_offsets_.push_back(0);
  output_offsets_.push_back(0);
  for (size_t m = 0; m < members_.size(); ++m) {
    input_offsets_.push_back(input_offsets_.back() + num_inputs[m]);
    output_offsets_.push_back(output_offsets_.back() +
                              static_cast<int>(members_[m]->tape().outputs.size()));
  }
  name_ = std::string("CompiledGroup") + members_[0]->name();
}

bool CompiledGroup::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const CompiledGroup*>(&other);
  if (!o || o->members_.size() != members_.size() || o->input_offsets_ != input_offsets_)
    return false;
  for (size_t m = 0; m < members_.size(); ++m)
    if (!members_[m]->is_equivalent(*o->members_[m])) return false;
  return true;
}

namespace {

// The slice [begin, end) of `v`.
std::vector<array> part(const std::vector<array>& v, int begin, int end) {
  return {v.begin() + begin, v.begin() + end};
}

}  // namespace

std::vector<Shape> CompiledGroup::output_shapes(const std::vector<array>& inputs) {
  std::vector<Shape> shapes;
  for (size_t m = 0; m < members_.size(); ++m) {
    auto s = members_[m]->output_shapes(part(inputs, input_offsets_[m], input_offsets_[m + 1]));
    shapes.insert(shapes.end(), s.begin(), s.end());
  }
  return shapes;
}

std::vector<array> CompiledGroup::unfused(const std::vector<array>& inputs) const {
  std::vector<array> outs;
  for (size_t m = 0; m < members_.size(); ++m) {
    auto o = members_[m]->unfused(part(inputs, input_offsets_[m], input_offsets_[m + 1]));
    outs.insert(outs.end(), o.begin(), o.end());
  }
  return outs;
}

std::vector<array> CompiledGroup::jvp(const std::vector<array>& primals,
                                      const std::vector<array>& tangents,
                                      const std::vector<int>& argnums) {
  return detail::unfused_jvp([this](const auto& x) { return unfused(x); }, primals, tangents,
                             argnums, stream());
}

std::vector<array> CompiledGroup::vjp(const std::vector<array>& primals,
                                      const std::vector<array>& cotangents,
                                      const std::vector<int>& argnums, const std::vector<array>&) {
  return detail::unfused_vjp([this](const auto& x) { return unfused(x); }, primals, cotangents,
                             argnums);
}

std::pair<std::vector<array>, std::vector<int>> CompiledGroup::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  return detail::unfused_vmap([this](const auto& x) { return unfused(x); }, inputs, axes);
}

// ---------------------------------------------------------------- helpers

namespace detail {

array broadcast_like(const array& x, const array& like, StreamOrDevice s) {
  if (!in_shapeless_trace() || x.shape() == like.shape()) return broadcast_to(x, like.shape(), s);
  auto stream = to_stream(s);
  broadcast_shapes(x.shape(), like.shape(), "broadcast_to");  // throws when they cannot
  return array(like.shape(), x.dtype(), std::make_shared<BroadcastLike>(stream),
               {x, stop_gradient(like, stream)});
}

array matrix_stack(const array& x, StreamOrDevice s) {
  const int nd = static_cast<int>(x.ndim());
  if (nd < 2) {
    throw std::invalid_argument(
        msg("[matrix_stack] Expected at least 2 dimensions; got ", shape_str(x.shape()), "."));
  }
  if (nd == 3) return x;
  const int M = x.shape(-2), K = x.shape(-1);
  int64_t B = 1;
  for (int d = 0; d < nd - 2; ++d) B *= x.shape(d);
  // A matrix gains a leading axis (expand_dims follows it in shapeless traces); several
  // batch axes merge into one, whose size a plain reshape could not recompute.
  if (nd == 2) return expand_dims(x, 0, s);
  const Shape shape{static_cast<int32_t>(B), M, K};
  if (!in_shapeless_trace() || static_cast<int64_t>(M) * K == 0) return reshape(x, shape, s);
  return array(shape, x.dtype(),
               std::make_shared<Reshape>(to_stream(s), shape, /*infer=*/0,
                                         std::vector<int>{-1, nd - 2, nd - 1}),
               {x});
}

array broadcast_view(const array& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  const Strides strides = broadcast_strides(a, shape);
  auto [flags, data_size] = array::layout(shape, strides);
  array out(shape, a.dtype(), std::make_shared<Broadcast>(to_stream(StreamOrDevice{}), shape), {a});
  out.copy_shared_buffer(a, strides, flags, data_size);
  out.set_status(array::Status::available);
  out.detach();
  return out;
}

namespace {

const std::unordered_map<std::type_index, const char*>& functors() {
  static const auto* m = new std::unordered_map<std::type_index, const char*>{
#define KILN_FUSABLE(NAME) {typeid(NAME), #NAME},
      // unary
      KILN_FUSABLE(Abs) KILN_FUSABLE(Negative) KILN_FUSABLE(Sign) KILN_FUSABLE(Square)
          KILN_FUSABLE(Sqrt) KILN_FUSABLE(Rsqrt) KILN_FUSABLE(Exp) KILN_FUSABLE(Expm1)
              KILN_FUSABLE(Log) KILN_FUSABLE(Log1p) KILN_FUSABLE(Log2) KILN_FUSABLE(Log10)
                  KILN_FUSABLE(Sin) KILN_FUSABLE(Cos) KILN_FUSABLE(Tan) KILN_FUSABLE(ArcSin)
                      KILN_FUSABLE(ArcCos) KILN_FUSABLE(ArcTan) KILN_FUSABLE(Sinh)
                          KILN_FUSABLE(Cosh) KILN_FUSABLE(Tanh) KILN_FUSABLE(ArcSinh)
                              KILN_FUSABLE(ArcCosh) KILN_FUSABLE(ArcTanh) KILN_FUSABLE(Erf)
                                  KILN_FUSABLE(ErfInv) KILN_FUSABLE(Sigmoid) KILN_FUSABLE(Floor)
                                      KILN_FUSABLE(Ceil) KILN_FUSABLE(Trunc) KILN_FUSABLE(Round)
                                          KILN_FUSABLE(LogicalNot) KILN_FUSABLE(BitwiseInvert)
                                              KILN_FUSABLE(IsNaN) KILN_FUSABLE(IsInf)
                                                  KILN_FUSABLE(IsFinite) KILN_FUSABLE(IsPosInf)
                                                      KILN_FUSABLE(IsNegInf) KILN_FUSABLE(Real)
                                                          KILN_FUSABLE(Imag) KILN_FUSABLE(Conjugate)
      // binary
      KILN_FUSABLE(Add) KILN_FUSABLE(Subtract) KILN_FUSABLE(Multiply) KILN_FUSABLE(Divide)
          KILN_FUSABLE(FloorDivide) KILN_FUSABLE(Remainder) KILN_FUSABLE(Power) KILN_FUSABLE(
              Maximum) KILN_FUSABLE(Minimum) KILN_FUSABLE(ArcTan2) KILN_FUSABLE(LogAddExp)
              KILN_FUSABLE(Equal) KILN_FUSABLE(NotEqual) KILN_FUSABLE(Less) KILN_FUSABLE(LessEqual)
                  KILN_FUSABLE(Greater) KILN_FUSABLE(GreaterEqual) KILN_FUSABLE(LogicalAnd)
                      KILN_FUSABLE(LogicalOr) KILN_FUSABLE(BitwiseAnd) KILN_FUSABLE(BitwiseOr)
                          KILN_FUSABLE(BitwiseXor) KILN_FUSABLE(LeftShift) KILN_FUSABLE(RightShift)
      // ternary, conversion
      KILN_FUSABLE(Select) KILN_FUSABLE(AsType)
#undef KILN_FUSABLE
  };
  return *m;
}

}  // namespace

bool is_fusable_elementwise(const Primitive& p) {
  return functors().count(typeid(p)) > 0;
}

std::string fused_functor(const Primitive& p) {
  auto it = functors().find(typeid(p));
  if (it == functors().end()) return p.name();
  if (auto* e = dynamic_cast<const Equal*>(&p); e && e->equal_nan()) return "EqualNaN";
  return it->second;
}

bool compile_debug() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_DEBUG_COMPILE");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

}  // namespace detail

}  // namespace kiln
