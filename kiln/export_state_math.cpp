// Export codecs of the matrix, factorization, convolution, FFT, random and quantized
// primitives.
#include "kiln/export_state.h"
#include "kiln/primitives_conv.h"
#include "kiln/primitives_factor.h"
#include "kiln/primitives_fft.h"
#include "kiln/primitives_linalg.h"
#include "kiln/primitives_quantized.h"
#include "kiln/primitives_random.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

void write_quant(StateWriter& w, const QuantParams& p) {
  w.s(quant_mode_name(p.mode)).i(p.group_size).i(p.bits);
}

QuantParams read_quant(StateReader& in) {
  std::string mode = in.s();
  QuantParams p{};
  try {
    p.mode = quant_mode_from_string("import_function", mode);
  } catch (const std::exception&) {
    in.fail("an unknown quantization mode '" + mode + "'");
  }
  p.group_size = in.i32();
  p.bits = in.i32();
  if (p.group_size <= 0 || p.bits <= 0 || p.bits > 8) in.fail("bad group size or bits");
  return p;
}

}  // namespace

void ExportAccess::register_math(Registry& r) {
  r.add_plain<Matmul>("Matmul");
  r.add<AddMM>(
      "AddMM", [](const AddMM& p, StateWriter& w) { w.f(p.alpha()).f(p.beta()); },
      [](StateReader& in, Stream s) {
        float alpha = static_cast<float>(in.f());
        float beta = static_cast<float>(in.f());
        return std::make_shared<AddMM>(s, alpha, beta);
      });

  // Factorizations and solves.
  r.add<Cholesky>(
      "Cholesky", [](const Cholesky& p, StateWriter& w) { w.b(p.upper()); },
      [](StateReader& in, Stream s) { return std::make_shared<Cholesky>(s, in.b()); });
  r.add<Inverse>(
      "Inverse", [](const Inverse& p, StateWriter& w) { w.b(p.tri()).b(p.upper()); },
      [](StateReader& in, Stream s) {
        bool tri = in.b();
        bool upper = in.b();
        return std::make_shared<Inverse>(s, tri, upper);
      });
  r.add_plain<LUF>("LUF");
  r.add_plain<QRF>("QRF");
  r.add<SVD>(
      "SVD", [](const SVD& p, StateWriter& w) { w.b(p.compute_uv()); },
      [](StateReader& in, Stream s) { return std::make_shared<SVD>(s, in.b()); });
  r.add<Eigh>(
      "Eigh",
      [](const Eigh& p, StateWriter& w) { w.s(std::string(1, p.uplo())).b(p.compute_vectors()); },
      [](StateReader& in, Stream s) {
        std::string uplo = in.s();
        bool vectors = in.b();
        if (uplo != "L" && uplo != "U") in.fail("uplo '" + uplo + "'");
        return std::make_shared<Eigh>(s, uplo[0], vectors);
      });
  r.add<Eig>(
      "Eig", [](const Eig& p, StateWriter& w) { w.b(p.compute_vectors()); },
      [](StateReader& in, Stream s) { return std::make_shared<Eig>(s, in.b()); });
  r.add_plain<Solve>("Solve");
  r.add<SolveTriangular>(
      "SolveTriangular", [](const SolveTriangular& p, StateWriter& w) { w.b(p.upper()); },
      [](StateReader& in, Stream s) { return std::make_shared<SolveTriangular>(s, in.b()); });

  // Convolution (forward and the two gradient modes its vjp builds).
  r.add<Convolution>(
      "Convolution",
      [](const Convolution& p, StateWriter& w) {
        const ConvParams& c = p.params();
        w.ints(c.stride).ints(c.pad_lo).ints(c.pad_hi).ints(c.kernel_dilation);
        w.ints(c.input_dilation).i(c.groups).b(c.flip);
        w.i(static_cast<int>(p.mode())).ints(p.other_shape());
      },
      [](StateReader& in, Stream s) {
        ConvParams c;
        c.stride = in.ints32();
        c.pad_lo = in.ints32();
        c.pad_hi = in.ints32();
        c.kernel_dilation = in.ints32();
        c.input_dilation = in.ints32();
        c.groups = in.i32();
        c.flip = in.b();
        int64_t mode = in.i();
        Shape other = in.ints32();
        const size_t n = c.stride.size();
        if (c.pad_lo.size() != n || c.pad_hi.size() != n || c.kernel_dilation.size() != n ||
            c.input_dilation.size() != n || c.groups < 1 || mode < 0 || mode > 2)
          in.fail("inconsistent convolution parameters");
        return std::make_shared<Convolution>(s, std::move(c), static_cast<Convolution::Mode>(mode),
                                             std::move(other));
      });

  r.add<FFT>(
      "FFT",
      [](const FFT& p, StateWriter& w) {
        w.ints(p.axes()).b(p.inverse()).b(p.real()).i(p.n_last()).f(p.scale());
      },
      [](StateReader& in, Stream s) {
        std::vector<int> axes = in.ints32();
        bool inverse = in.b();
        bool real = in.b();
        int n_last = in.i32();
        double scale = in.f();
        return std::make_shared<FFT>(s, std::move(axes), inverse, real, n_last, scale);
      });

  // Random: the key is an input (a constant of the trace when it is the global key).
  r.add<RandomBits>(
      "RandomBits", [](const RandomBits& p, StateWriter& w) { w.ints(p.shape()).i(p.width()); },
      [](StateReader& in, Stream s) {
        Shape shape = in.ints32();
        int width = in.i32();
        if (width != 1 && width != 2 && width != 4 && width != 8) in.fail("bit width");
        return std::make_shared<RandomBits>(s, std::move(shape), width);
      });
  r.add_plain<ErfF32>("ErfF32");
  r.add_plain<ErfInvF32>("ErfInvF32");

  // Quantization.
  r.add<Quantize>(
      "Quantize", [](const Quantize& p, StateWriter& w) { write_quant(w, p.params()); },
      [](StateReader& in, Stream s) { return std::make_shared<Quantize>(s, read_quant(in)); });
  r.add<Dequantize>(
      "Dequantize",
      [](const Dequantize& p, StateWriter& w) {
        write_quant(w, p.p_);
        w.b(p.global_).d(p.out_);
      },
      [](StateReader& in, Stream s) {
        QuantParams q = read_quant(in);
        bool global = in.b();
        Dtype out = in.d();
        return std::make_shared<Dequantize>(s, q, global, out);
      });
  r.add<QuantizedMatmul>(
      "QuantizedMatmul",
      [](const QuantizedMatmul& p, StateWriter& w) {
        write_quant(w, p.params());
        w.b(p.transpose()).b(p.has_global_scale());
      },
      [](StateReader& in, Stream s) {
        QuantParams q = read_quant(in);
        bool transpose = in.b();
        bool global = in.b();
        return std::make_shared<QuantizedMatmul>(s, q, transpose, global);
      });
}

}  // namespace kiln
