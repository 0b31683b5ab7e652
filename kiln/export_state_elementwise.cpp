// Export codecs of the elementwise primitives (unary, binary, ternary): all but Equal have
// no parameters.
#include "kiln/export_state.h"
#include "kiln/primitives_binary.h"
#include "kiln/primitives_ternary.h"
#include "kiln/primitives_unary.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

void ExportAccess::register_elementwise(Registry& r) {
  r.add_plain<Abs>("Abs");
  r.add_plain<Negative>("Negative");
  r.add_plain<Sign>("Sign");
  r.add_plain<Square>("Square");
  r.add_plain<Sqrt>("Sqrt");
  r.add_plain<Rsqrt>("Rsqrt");
  r.add_plain<Exp>("Exp");
  r.add_plain<Expm1>("Expm1");
  r.add_plain<Log>("Log");
  r.add_plain<Log1p>("Log1p");
  r.add_plain<Log2>("Log2");
  r.add_plain<Log10>("Log10");
  r.add_plain<Sin>("Sin");
  r.add_plain<Cos>("Cos");
  r.add_plain<Tan>("Tan");
  r.add_plain<ArcSin>("ArcSin");
  r.add_plain<ArcCos>("ArcCos");
  r.add_plain<ArcTan>("ArcTan");
  r.add_plain<Sinh>("Sinh");
  r.add_plain<Cosh>("Cosh");
  r.add_plain<Tanh>("Tanh");
  r.add_plain<ArcSinh>("ArcSinh");
  r.add_plain<ArcCosh>("ArcCosh");
  r.add_plain<ArcTanh>("ArcTanh");
  r.add_plain<Erf>("Erf");
  r.add_plain<ErfInv>("ErfInv");
  r.add_plain<Sigmoid>("Sigmoid");
  r.add_plain<Floor>("Floor");
  r.add_plain<Ceil>("Ceil");
  r.add_plain<Trunc>("Trunc");
  r.add_plain<Round>("Round");
  r.add_plain<ToFP8>("ToFP8");
  r.add_plain<FromFP8>("FromFP8");
  r.add_plain<LogicalNot>("LogicalNot");
  r.add_plain<BitwiseInvert>("BitwiseInvert");
  r.add_plain<IsNaN>("IsNaN");
  r.add_plain<IsInf>("IsInf");
  r.add_plain<IsFinite>("IsFinite");
  r.add_plain<IsPosInf>("IsPosInf");
  r.add_plain<IsNegInf>("IsNegInf");
  r.add_plain<Real>("Real");
  r.add_plain<Imag>("Imag");
  r.add_plain<Conjugate>("Conjugate");
  r.add_plain<Add>("Add");
  r.add_plain<Subtract>("Subtract");
  r.add_plain<Multiply>("Multiply");
  r.add_plain<Divide>("Divide");
  r.add_plain<FloorDivide>("FloorDivide");
  r.add_plain<Remainder>("Remainder");
  r.add_plain<Power>("Power");
  r.add_plain<Maximum>("Maximum");
  r.add_plain<Minimum>("Minimum");
  r.add_plain<ArcTan2>("ArcTan2");
  r.add_plain<LogAddExp>("LogAddExp");
  r.add_plain<NotEqual>("NotEqual");
  r.add_plain<Less>("Less");
  r.add_plain<LessEqual>("LessEqual");
  r.add_plain<Greater>("Greater");
  r.add_plain<GreaterEqual>("GreaterEqual");
  r.add_plain<LogicalAnd>("LogicalAnd");
  r.add_plain<LogicalOr>("LogicalOr");
  r.add_plain<BitwiseAnd>("BitwiseAnd");
  r.add_plain<BitwiseOr>("BitwiseOr");
  r.add_plain<BitwiseXor>("BitwiseXor");
  r.add_plain<LeftShift>("LeftShift");
  r.add_plain<RightShift>("RightShift");
  r.add_plain<Select>("Select");
  r.add<Equal>(
      "Equal", [](const Equal& p, StateWriter& w) { w.b(p.equal_nan()); },
      [](StateReader& in, Stream s) { return std::make_shared<Equal>(s, in.b()); });
}

}  // namespace kiln
