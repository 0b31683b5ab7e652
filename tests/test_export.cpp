// export_function / exporter / import_function: round trips of many primitive kinds against
// direct evaluation on fresh random inputs, every codec's state round trip, keyword inputs,
// several traces per file, shapeless traces, shared constants, transformations of imported
// functions, and damaged files (missing, truncated, corrupt, foreign, other versions).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kiln/backend/gpu.h"
#include "kiln/compile.h"
#include "kiln/distributed/primitives.h"
#include "kiln/export.h"
#include "kiln/export_state.h"
#include "kiln/fast.h"
#include "kiln/fft.h"
#include "kiln/linalg.h"
#include "kiln/primitives_compile.h"
#include "kiln/primitives_custom.h"
#include "kiln/quantized.h"
#include "kiln/random.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_export_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string read_file(const std::string& path) {
  std::ifstream is(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(is), {});
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  os.write(data.data(), static_cast<std::streamsize>(data.size()));
}

struct Case {
  std::string name;
  ArrayFn fn;
  std::function<std::vector<array>()> inputs;  // fresh random inputs per call
  bool exact = false;
  double tol = 1e-5;  // relative; fused kernels against their composed fallback differ more
};

array rnd(Shape s, double lo = -2, double hi = 2) {
  return test::random_array(std::move(s), float32, lo, hi);
}

array spd(int n) {
  array a = rnd({n, n});
  return add(matmul(a, transpose(a)), multiply(array(static_cast<float>(n)), eye(n, n, 0)));
}

std::vector<Case> cases() {
  auto idx = [](Shape s, int hi) {
    return astype(test::random_array(std::move(s), float32, 0, hi - 0.01), int32);
  };
  std::vector<Case> c;
  c.push_back({"unary",
               [](auto x) {
                 return std::vector{abs(sin(x[0])), exp(x[0]), erf(x[0])};
               },
               [] {
                 return std::vector{rnd({3, 4})};
               }});
  c.push_back({"log_family",
               [](auto x) {
                 return std::vector{log(x[0]), log2(x[0]), log10(x[0]), log1p(x[0])};
               },
               [] { return std::vector{rnd({5}, 0.1, 3)}; }});
  c.push_back({"binary_broadcast",
               [](auto x) {
                 return std::vector{add(x[0], x[1]),          power(abs(x[0]), x[1]),
                                    maximum(x[0], x[1]),      equal(x[0], x[1]),
                                    floor_divide(x[0], x[1]), remainder(x[0], x[1])};
               },
               [] {
                 return std::vector{rnd({2, 3}), rnd({3}, 0.5, 2)};
               }});
  c.push_back({"integer_bits",
               [](auto x) {
                 return std::vector{left_shift(x[0], x[1]), bitwise_xor(x[0], x[1])};
               },
               [idx] {
                 return std::vector{idx({6}, 100), idx({6}, 5)};
               },
               true});
  c.push_back({"where_cast",
               [](auto x) {
                 return std::vector{where(greater(x[0], x[1]), x[0], x[1]), astype(x[0], int32),
                                    astype(x[1], float16)};
               },
               [] {
                 return std::vector{rnd({4, 4}), rnd({4, 4})};
               }});
  c.push_back({"reductions",
               [](auto x) {
                 return std::vector{sum(x[0], 1),       max(x[0], 0),
                                    argmax(x[0], 1),    var(x[0], 0),
                                    logsumexp(x[0], 1), all(greater(x[0], array(0.0f)), 1)};
               },
               [] {
                 return std::vector{rnd({3, 5})};
               }});
  c.push_back({"scans",
               [](auto x) {
                 return std::vector{cumsum(x[0], 1), cumsum(x[0], 0, true, false), cummax(x[0], 1),
                                    logcumsumexp(x[0], 1)};
               },
               [] {
                 return std::vector{rnd({3, 5})};
               }});
  c.push_back({"layout",
               [](auto x) {
                 array t = transpose(x[0], {1, 0});
                 return std::vector{reshape(t, {2, 6}),
                                    slice(x[0], {1, 0}, {3, 4}, {1, 2}),
                                    concatenate({x[0], x[0]}, 0),
                                    broadcast_to(x[1], {3, 4}),
                                    slice_update(x[0], x[1], {0, 0}, {1, 4}),
                                    as_strided(x[0], {2, 2}, {1, 4}, 1)};
               },
               [] {
                 return std::vector{rnd({3, 4}), rnd({1, 4})};
               },
               true});
  c.push_back({"creation",
               [](auto x) {
                 return std::vector{add(x[0], arange(0.0, 4.0, 1.0)),
                                    add(x[0], linspace(0.0, 1.0, 4)), tril(x[1], -1), triu(x[1], 1),
                                    add(x[1], eye(4, 4, 1))};
               },
               [] {
                 return std::vector{rnd({4}), rnd({4, 4})};
               },
               true});
  c.push_back({"indexing",
               [](auto x) {
                 return std::vector{take(x[0], x[1], 0), take_along_axis(x[0], x[2], 0),
                                    put_along_axis(x[0], x[2], x[3], 0),
                                    scatter_add(x[0], {x[1]}, expand_dims(x[3], 1), {0})};
               },
               [idx] {
                 return std::vector{rnd({4, 4}), idx({2}, 4), idx({2, 4}, 4), rnd({2, 4})};
               },
               true});
  c.push_back({"sorting",
               [](auto x) {
                 return std::vector{sort(x[0], 1),     argsort(x[0], 1),
                                    topk(x[0], 2, 1),  partition(x[0], 2, 1),
                                    median(x[0], {1}), searchsorted(sort(x[1], 0), x[0], "right")};
               },
               [] {
                 return std::vector{rnd({3, 6}), rnd({10})};
               },
               true});
  c.push_back({"matmul",
               [](auto x) {
                 return std::vector{matmul(x[0], x[1]), addmm(x[2], x[0], x[1], 0.5f, 2.0f)};
               },
               [] {
                 return std::vector{rnd({2, 3, 4}), rnd({4, 5}), rnd({3, 5})};
               }});
  c.push_back(
      {"conv",
       [](auto x) {
         return std::vector{conv1d(x[0], x[1], 2, 1), conv2d(x[2], x[3], {1, 1}, {1, 1})};
       },
       [] {
         return std::vector{rnd({2, 9, 3}), rnd({4, 3, 3}), rnd({1, 6, 6, 2}), rnd({3, 3, 3, 2})};
       }});
  c.push_back(
      {"fft",
       [](auto x) {
         return std::vector{abs(fft::fft(astype(x[0], complex64))), fft::irfft(fft::rfft(x[0]))};
       },
       [] {
         return std::vector{rnd({3, 8})};
       }});
  c.push_back({"linalg",
               [](auto x) {
                 const Device cpu = Device::cpu;  // factorizations run on the CPU
                 auto [q, r] = linalg::qr(x[1], cpu);
                 return std::vector{linalg::inv(x[0], cpu),
                                    linalg::cholesky(x[0], false, cpu),
                                    matmul(q, r),
                                    linalg::eigvalsh(x[0], "L", cpu),
                                    linalg::svd(x[1], false, cpu)[0],
                                    linalg::solve(x[0], x[1], cpu)};
               },
               [] {
                 return std::vector{spd(4), rnd({4, 4})};
               }});
  c.push_back(
      {"random_with_key_input",
       [](auto x) {
         return std::vector{random::uniform({3, 2}, x[0]), random::normal({5}, x[0])};
       },
       [] { return std::vector{random::key(static_cast<uint64_t>(test::rng()() % 100000))}; },
       true});
  c.push_back({"quantized",
               [](auto x) {
                 auto q = quantize(x[1], 32, 4);
                 return std::vector{quantized_matmul(x[0], q[0], q[1], q[2], true, 32, 4),
                                    dequantize(q[0], q[1], q[2], 32, 4)};
               },
               [] {
                 return std::vector{rnd({2, 64}), rnd({8, 64})};
               }});
  c.push_back({"fast_fallbacks",
               [](auto x) {
                 return std::vector{fast::rms_norm(x[0], x[1], 1e-5f),
                                    fast::layer_norm(x[0], x[1], x[1], 1e-5f), softmax(x[0], -1)};
               },
               [] {
                 return std::vector{rnd({3, 8}), rnd({8})};
               },
               false, 2e-4});
  return c;
}

void expect_same(const std::vector<array>& got, const std::vector<array>& want, bool exact,
                 const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(what + " output " + std::to_string(i));
    ASSERT_EQ(got[i].shape(), want[i].shape());
    ASSERT_EQ(got[i].dtype(), want[i].dtype());
    if (exact || !issubdtype(want[i].dtype(), inexact)) {
      EXPECT_TRUE(array_equal(got[i], want[i], true).item<bool>());
    } else {
      auto g = test::to_double(got[i]), w = test::to_double(want[i]);
      for (size_t j = 0; j < g.size(); ++j)
        EXPECT_NEAR(g[j], w[j], tol * (1 + std::abs(w[j]))) << j;
    }
  }
}

}  // namespace

TEST(Export, RoundTripsMatchDirectEvaluation) {
  const std::string path = temp_path("cases.kilnfn");
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    export_function(path, c.fn, c.inputs());
    ImportedFunction f = import_function(path);
    for (int round = 0; round < 2; ++round) {
      auto x = c.inputs();  // fresh inputs, not the example ones
      expect_same(f(x), c.fn(x), c.exact, c.name, c.tol);
    }
  }
  std::remove(path.c_str());
}

// Every primitive of every case: saved state -> primitive -> saved state is the identity,
// and the rebuilt primitive is equivalent to the original.
TEST(Export, EveryCodecRoundTripsItsState) {
  const auto& reg = export_detail::registry();
  int checked = 0;
  for (const auto& c : cases()) {
    auto x = c.inputs();
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (const auto& a : x) {
      shapes.push_back(a.shape());
      dtypes.push_back(a.dtype());
    }
    ReplayProgram p = detail::trace_for_export(c.fn, shapes, dtypes, x, false);
    for (const auto& st : p.steps) {
      const auto* codec = reg.by_type(*st.prim);
      if (!codec || !codec->load) continue;  // fast ops: rebuilt through their op or fallback
      export_detail::StateWriter w;
      codec->save(*st.prim, w);
      auto state = w.take();
      export_detail::StateReader r(state, codec->key);
      auto back = codec->load(r, st.prim->stream());
      r.done();
      export_detail::StateWriter w2;
      codec->save(*back, w2);
      EXPECT_EQ(w2.take(), state) << codec->key;
      EXPECT_EQ(std::string(back->name()), std::string(st.prim->name()));
      ++checked;
    }
  }
  EXPECT_GT(checked, 60);
}

TEST(Export, KeywordInputsMatchByName) {
  const std::string path = temp_path("kw.kilnfn");
  KwargsFn fn = [](const std::vector<array>& a, const Kwargs& kw) {
    return std::vector{subtract(add(a[0], kw.at("y")), multiply(array(2.0f), kw.at("z")))};
  };
  export_function(path, fn, {rnd({3})}, {{"z", rnd({3})}, {"y", rnd({3})}});
  ImportedFunction f = import_function(path);
  array a = rnd({3}), y = rnd({3}), z = rnd({3});
  expect_same(f({a}, {{"y", y}, {"z", z}}), fn({a}, {{"y", y}, {"z", z}}), false, "kw");
  EXPECT_THROW(f(std::vector<array>{a, y, z}), std::invalid_argument);
  EXPECT_THROW(f({a}, {{"y", y}, {"w", z}}), std::invalid_argument);
  EXPECT_THROW(f({a}, {{"y", y}, {"z", astype(z, int32)}}), std::invalid_argument);
  EXPECT_THROW(f({rnd({4})}, {{"y", y}, {"z", z}}), std::invalid_argument);
  try {
    f({a});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[import_function]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("\"z\""), std::string::npos);
  }
  std::remove(path.c_str());
}

TEST(Export, ExporterWritesSeveralTracesAndSharesConstants) {
  const std::string path = temp_path("multi.kilnfn");
  array big = rnd({64, 256});
  big.eval();
  KwargsFn fn = [big](const std::vector<array>& a, const Kwargs& kw) {
    array out = big;
    for (const auto& x : a) out = add(out, x);
    if (kw.count("s")) out = multiply(out, kw.at("s"));
    return std::vector{out};
  };
  {
    FunctionExporter e = exporter(path, fn);
    e(std::vector<array>{});
    e({rnd({256})});
    e(std::vector<array>{rnd({256}), rnd({64, 1})});
    e({rnd({256})}, {{"s", rnd({})}});
    e.close();
    EXPECT_THROW(e({rnd({256})}), std::runtime_error);
  }
  // The constant is stored once for the four traces.
  EXPECT_LT(std::filesystem::file_size(path), big.nbytes() + 8192);
  ImportedFunction f = import_function(path);
  EXPECT_EQ(f.num_traces(), 4u);
  for (auto x :
       {std::vector<array>{}, std::vector{rnd({256})}, std::vector{rnd({256}), rnd({64, 1})}}) {
    expect_same(f(x), fn(x, {}), false, "trace");
  }
  array s = rnd({});
  array x = rnd({256});
  expect_same(f({x}, {{"s", s}}), fn({x}, {{"s", s}}), false, "kw trace");
  std::remove(path.c_str());
}

TEST(Export, ShapelessTracesFollowInputShapes) {
  const std::string path = temp_path("shapeless.kilnfn");
  ArrayFn fn = [](const std::vector<array>& x) {
    array y = matmul(x[0], x[1]);
    return std::vector{sum(exp(y), -1), reshape(y, {-1}), add(x[0], array(1.0f))};
  };
  export_function(path, fn, {rnd({2, 3, 4}), rnd({4, 5})}, true);
  ImportedFunction f = import_function(path);
  EXPECT_TRUE(f.shapeless());
  for (Shape s : {Shape{2, 3, 4}, Shape{1, 7, 4}, Shape{5, 1, 4}}) {
    auto x = std::vector{rnd(s), rnd({4, 5})};
    expect_same(f(x), fn(x), false, "shapeless");
  }
  // Ranks must match.
  EXPECT_THROW(f(std::vector<array>{rnd({3, 4}), rnd({4, 5})}), std::invalid_argument);
  std::remove(path.c_str());
}

TEST(Export, ConstantsAndMetadataAreKept) {
  const std::string path = temp_path("consts.kilnfn");
  array w = test::random_array({3, 3}, float64);
  array k = astype(test::random_array({3}, float32, 0, 100), int64);
  ArrayFn fn = [w, k](const std::vector<array>& x) {
    return std::vector{add(matmul(x[0], w), astype(k, float64))};
  };
  export_function(path, fn, {test::random_array({2, 3}, float64)}, false, "{\"a\": 1}");
  ImportedFunction f = import_function(path);
  EXPECT_EQ(f.metadata(), "{\"a\": 1}");
  auto x = std::vector{test::random_array({2, 3}, float64)};
  expect_same(f(x), fn(x), true, "constants");
  std::remove(path.c_str());
}

TEST(Export, ImportedFunctionsTransformAndCompile) {
  const std::string path = temp_path("grad.kilnfn");
  ArrayFn fn = [](const std::vector<array>& x) {
    return std::vector{sum(multiply(sin(x[0]), x[1]))};
  };
  export_function(path, fn, {rnd({4}), rnd({4})});
  ImportedFunction f = import_function(path);
  ArrayFn imported = [f](const std::vector<array>& x) { return f(x); };
  auto x = std::vector{rnd({4}), rnd({4})};
  auto [v1, g1] = value_and_grad(imported, std::vector<int>{0, 1})(x);
  auto [v2, g2] = value_and_grad(fn, std::vector<int>{0, 1})(x);
  expect_same(v1, v2, false, "value");
  expect_same(g1, g2, false, "grad");
  auto vm = vmap(imported, {0, -1})({rnd({3, 4}), x[1]});
  EXPECT_EQ(vm[0].shape(), Shape({3}));
  auto c = compile(imported)(x);
  expect_same(c, fn(x), false, "compiled");
  std::remove(path.c_str());
}

TEST(Export, CallbackShowsTheGraph) {
  std::vector<std::string> names;
  std::vector<ExportCallbackInput::Value> log_args;
  size_t n_inputs = 0, n_keywords = 0;
  export_function(
      [&](const ExportCallbackInput& e) {
        if (e.type == "inputs") n_inputs = e.arrays.size();
        if (e.type == "keyword_inputs") n_keywords = e.keywords.size();
        if (e.type == "primitive") {
          names.push_back(e.name);
          if (e.name == "Log") log_args = e.arguments;
        }
      },
      [](const std::vector<array>& a, const Kwargs& kw) {
        return std::vector{astype(log(abs(subtract(a[0], kw.at("y")))), int32)};
      },
      {array(1.0f)}, {{"y", array(2.0f)}});
  EXPECT_EQ(n_inputs, 2u);
  EXPECT_EQ(n_keywords, 1u);
  EXPECT_EQ(names, (std::vector<std::string>{"Subtract", "Abs", "Log", "AsType"}));
  ASSERT_EQ(log_args.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(log_args[0]), 2);  // MLX's Log base e
}

namespace {
// A primitive with no codec (as an extension's would be).
class NoCodec : public UnaryPrimitive {
 public:
  explicit NoCodec(Stream s) : UnaryPrimitive(s) {}
  void eval_cpu(const std::vector<array>& in, array& out) override {
    out.copy_shared_buffer(in[0]);
  }
  void eval_gpu(const std::vector<array>& in, array& out) override {
    out.copy_shared_buffer(in[0]);
  }
  const char* name() const override { return "NoCodecPrimitive"; }
};
}  // namespace

TEST(Export, UnexportablePrimitiveIsNamed) {
  const std::string path = temp_path("nocodec.kilnfn");
  ArrayFn fn = [](const std::vector<array>& x) {
    return std::vector{array(x[0].shape(), x[0].dtype(),
                             std::make_shared<NoCodec>(to_stream(StreamOrDevice{})), {x[0]})};
  };
  try {
    export_function(path, fn, {rnd({2})});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[export_function]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NoCodecPrimitive"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing half-written is left
}

TEST(Export, DamagedFilesThrowCleanly) {
  const std::string path = temp_path("damaged.kilnfn");
  ArrayFn fn = [](const std::vector<array>& x) { return std::vector{exp(add(x[0], x[0]))}; };
  export_function(path, fn, {rnd({8})});
  const std::string good = read_file(path);
  auto expect_runtime = [&](const std::string& bytes, const std::string& needle) {
    write_file(path, bytes);
    try {
      import_function(path);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("[import_function]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  EXPECT_THROW(import_function(temp_path("does_not_exist.kilnfn")), std::runtime_error);
  // Every truncation.
  for (size_t n = 0; n < good.size(); n += 7) {
    write_file(path, good.substr(0, n));
    EXPECT_THROW(import_function(path), std::runtime_error) << n;
  }
  expect_runtime(good + "x", "corrupt");
  expect_runtime("MLXFN\0\0\0" + good.substr(8), "not a function exported by kiln");
  std::string v2 = good;
  v2[8] = 2;
  expect_runtime(v2, "format version 2");
  // Every single-byte flip after the magic and version is caught (checksums, counts).
  for (size_t i = 12; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    write_file(path, bad);
    try {
      ImportedFunction f = import_function(path);
      // Only the trace count can change without a checksum: then it reads past the end.
      ADD_FAILURE() << "flip at " << i << " not detected";
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
  }
  std::remove(path.c_str());
}

TEST(Export, CustomKernelIsRecompiledOnImport) {
  const std::string path = temp_path("kernel.kilnfn");
  auto kernel = fast::metal_kernel("export_axpy", {"a", "b"}, {"out"},
                                   "uint i = thread_position_in_grid.x;\n"
                                   "out[i] = a[i] * T(SCALE) + b[i];\n");
  ArrayFn fn = [kernel](const std::vector<array>& x) {
    return kernel({x[0], x[1]}, {x[0].shape()}, {x[0].dtype()}, {x[0].size(), 1, 1}, {32, 1, 1},
                  {{"T", float32}, {"SCALE", 3}}, std::nullopt, false, test::test_device());
  };
  export_function(path, fn, {rnd({40}), rnd({40})});
  ImportedFunction f = import_function(path);
  auto x = std::vector{rnd({40}), rnd({40})};
  expect_same(f(x), {add(multiply(x[0], array(3.0f)), x[1])}, false, "kernel");
  std::remove(path.c_str());
}

// As MLX: a kernel called for the GPU can be exported on a machine without one (recorded, not
// run, with its compile options); calling it outside an export, evaluating it inside one, and
// importing the file here are refused with the reason.
TEST(Export, GpuKernelExportsWithoutAGpu) {
  if (gpu::is_available()) GTEST_SKIP() << "needs a machine without a GPU";
  const std::string path = temp_path("gpu_kernel.kilnfn");
  for (auto flavour : {fast::KernelFlavour::metal, fast::KernelFlavour::cuda}) {
    const bool metal = flavour == fast::KernelFlavour::metal;
    auto kernel = metal ? fast::metal_kernel(
                              "export_gpu_exp", {"a"}, {"out"},
                              "uint i = thread_position_in_grid.x;\nout[i] = metal::exp(a[i]);", "",
                              true, false, {fast::MathMode::fast})
                        : fast::cuda_kernel("export_gpu_exp", {"a"}, {"out"},
                                            "int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                            "if (i < a_size) out[i] = expf(a[i]);",
                                            "", true, false, 0, {fast::MathMode::relaxed});
    ArrayFn fn = [kernel](const std::vector<array>& x) {
      auto out = kernel({x[0]}, {x[0].shape()}, {x[0].dtype()}, {x[0].size(), 1, 1}, {32, 1, 1}, {},
                        std::nullopt, false, Device(Device::gpu));
      return std::vector<array>{multiply(out[0], array(2.0f))};
    };
    array x = rnd({37});
    EXPECT_THROW(fn({x}), std::invalid_argument);  // no GPU to run it on
    ReplayProgram p = detail::trace_for_export(fn, {x.shape()}, {x.dtype()}, {x}, false);
    int kernels = 0;
    for (const auto& st : p.steps) {
      const auto* k = dynamic_cast<const CustomKernel*>(st.prim.get());
      if (!k) continue;
      ++kernels;
      EXPECT_EQ(k->stream().device.type, Device::gpu);
      EXPECT_EQ(k->spec().math_mode, metal ? fast::MathMode::fast : fast::MathMode::relaxed);
    }
    EXPECT_EQ(kernels, 1);
    for (bool shapeless : {false, true}) {
      export_function(path, fn, {x}, shapeless);
      try {
        import_function(path)({x});
        ADD_FAILURE() << "a GPU kernel was imported without a GPU";
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("on the GPU"), std::string::npos) << e.what();
      }
    }
    ArrayFn evaluates = [&fn](const std::vector<array>& x) {
      auto out = fn({ones({4})});
      eval(out);
      return std::vector<array>{add(x[0], out[0])};
    };
    try {
      export_function(path, evaluates, {rnd({4})});
      ADD_FAILURE() << "a placeholder GPU kernel was evaluated";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("[eval]"), std::string::npos) << e.what();
    }
  }
  std::remove(path.c_str());
}

// Exporting, importing and calling leave nothing behind (constants of closed exporters and
// of dropped imported functions are freed).
TEST(Export, NoMemoryGrowth) {
  const std::string path = temp_path("leak.kilnfn");
  auto active = [] {
    synchronize();
    return get_active_memory(test::test_device());
  };
  auto round = [&] {
    array w = rnd({256, 64});
    w.eval();
    ArrayFn fn = [w](const std::vector<array>& x) { return std::vector{matmul(x[0], w)}; };
    export_function(path, fn, {rnd({4, 256})}, true);
    ImportedFunction f = import_function(path);
    auto out = f(std::vector<array>{rnd({3, 256})});
    eval(out);
    auto g = grad([f](const std::vector<array>& x) { return sum(f(x)[0]); })(
        std::vector<array>{rnd({2, 256})});
    eval(g);
  };
  round();
  const size_t before = active();
  for (int i = 0; i < 50; ++i) round();
  EXPECT_EQ(active(), before);
  std::remove(path.c_str());
}

// Collectives save their reduction and peer and rebind to the importing process's world
// group; a group of another size is refused.
TEST(Export, CollectivesRoundTripTheirState) {
  const auto& reg = export_detail::registry();
  distributed::Group g = distributed::init();
  const Stream s = to_stream(StreamOrDevice{});
  std::vector<std::shared_ptr<Primitive>> prims = {
      std::make_shared<distributed::AllReduce>(s, g, distributed::detail::ReduceOp::max),
      std::make_shared<distributed::GroupedAllSum>(s, g),
      std::make_shared<distributed::GroupedAllMean>(s, g),
      std::make_shared<distributed::AllGather>(s, g),
      std::make_shared<distributed::ReduceScatter>(s, g),
      std::make_shared<distributed::Send>(s, g, 0),
      std::make_shared<distributed::Recv>(s, g, 0)};
  for (const auto& p : prims) {
    const auto* codec = reg.by_type(*p);
    ASSERT_NE(codec, nullptr) << p->name();
    export_detail::StateWriter w;
    codec->save(*p, w);
    auto state = w.take();
    export_detail::StateReader r(state, codec->key);
    auto back = codec->load(r, s);
    r.done();
    EXPECT_EQ(std::string(back->name()), p->name());
    state[0] = int64_t{g.size() + 1};
    export_detail::StateReader bad(state, codec->key);
    EXPECT_THROW(codec->load(bad, s), std::runtime_error);
  }
  // A sum and a mean over the same group are different nodes (compile must not merge them).
  EXPECT_FALSE(prims[1]->is_equivalent(*prims[2]));
  EXPECT_FALSE(prims[2]->is_equivalent(*prims[1]));
}
