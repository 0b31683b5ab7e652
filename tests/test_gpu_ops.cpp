// The cross-device table (ggml's test-backend-ops): every op of kiln/ops.h, and the samplers
// of kiln/random.h, runs on fresh random inputs on the CPU and on the GPU, and the GPU's
// results must match the CPU's within the tolerance of their dtype.
//
// One row per op and variant (gpu_ops_table.h; the rows are in test_gpu_ops_table.cpp): the
// op's name, a function of the inputs and of the case's dtype `t`, the inputs' shapes, domains
// and layouts, and the dtypes to run it on (one test case each:
// CrossDevice/Ops.MatchesCpu/<op>_<variant>_<dtype>). Adding an op is adding a row.
// A row whose primitive has no GPU kernel yet skips with "no GPU kernel yet" (and one whose
// op has not landed, with the op's own message); CrossDeviceTable.EveryOpHasARow fails when
// an op of ops.h has no row. Without a GPU every case still runs its CPU side, so a broken
// row shows up in CI, then skips.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "gpu_ops_table.h"
#include "kiln/random.h"
#include "test_utils.h"

#ifdef KILN_WITH_CUDA
#include "kiln/backend/gpu.h"
#endif

using namespace kiln;

namespace {

using namespace gpu_ops;

struct Case {
  const Row* row;
  Dtype dtype;
  std::string name;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

// A readable test-name part for an op: operator+ -> operator_plus.
std::string op_word(const Row& r) {
  static const std::map<std::string, std::string> words = {
      {"<<", "lshift"}, {">>", "rshift"}, {"<=", "le"},  {">=", "ge"},  {"==", "eq"},
      {"!=", "ne"},     {"&&", "land"},   {"||", "lor"}, {"+", "plus"}, {"-", "minus"},
      {"*", "times"},   {"/", "div"},     {"%", "mod"},  {"<", "lt"},   {">", "gt"},
      {"!", "not"},     {"~", "invert"},  {"&", "and"},  {"|", "or"},   {"^", "xor"}};
  if (r.op.rfind("operator", 0) == 0) {
    auto w = words.find(r.op.substr(8));
    if (w != words.end()) return "operator_" + w->second;
  }
  return r.op;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> out;
    std::set<std::string> used;
    for (const Row& r : all_rows()) {
      for (Dtype d : r.dtypes) {
        std::string base = op_word(r) + (r.variant.empty() ? "" : "_" + r.variant) + "_" +
                           std::string(dtype_name(d)),
                    name;
        for (char ch : base) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
        std::string unique = name;
        for (int k = 2; !used.insert(unique).second; ++k) unique = name + "_" + std::to_string(k);
        out.push_back({&r, d, unique});
      }
    }
    return out;
  }();
  return cases;
}

// ---------------------------------------------------------------- running a case

array make_input(const Input& in, Dtype t) {
  const Dtype d = in.dtype.value_or(t);
  double lo = in.lo, hi = in.hi;
  if (is_unsigned(d) && lo < 0) {
    hi = std::max(hi, 1.0);
    lo = 0;
  }
  const Shape& s = in.shape;
  Layout layout = s.empty() ? Layout::row : in.layout;
  array a = test::random_array(s, d, lo, hi);
  switch (layout) {
    case Layout::row:
      break;
    case Layout::transposed:
      a = transpose(test::random_array(Shape(s.rbegin(), s.rend()), d, lo, hi), Device::cpu);
      break;
    case Layout::strided: {
      Shape big = s, start(s.size(), 0), step(s.size(), 1);
      big.back() = 2 * s.back() + 1;
      start.back() = 1;
      step.back() = 2;
      a = slice(test::random_array(big, d, lo, hi), start, big, step, Device::cpu);
      break;
    }
    case Layout::broadcast: {
      Shape one = s;
      one[0] = 1;
      a = broadcast_to(test::random_array(one, d, lo, hi), s, Device::cpu);
      break;
    }
  }
  a.eval();
  return a;
}

// Makes `d` the default device while alive, so that rows build their graphs there.
class OnDevice {
 public:
  explicit OnDevice(Device d) : saved_(default_device()) { set_default_device(d); }
  ~OnDevice() { set_default_device(saved_); }

 private:
  Device saved_;
};

Arrays run_on(const Case& c, const Arrays& inputs, Device d) {
  OnDevice on(d);
  Arrays out = c.row->fn(inputs, c.dtype);
  eval(out);
  return out;
}

void expect_same(const array& gpu, const array& cpu, double rtol) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype());
  ASSERT_EQ(gpu.shape(), cpu.shape());
  if (rtol < 0) rtol = test::tolerance(cpu.dtype());
  if (cpu.dtype() != complex64) {
    test::expect_allclose(gpu, cpu.shape(), test::to_double(cpu), rtol);
    return;
  }
  auto g = test::to_complex(gpu), c = test::to_complex(cpu);
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool c_nan = std::isnan(c[i].real()) || std::isnan(c[i].imag());
    const bool g_nan = std::isnan(g[i].real()) || std::isnan(g[i].imag());
    // Equal values pass first: infinities (an overflowing prod) differ by nan.
    const bool ok =
        g[i] == c[i] || (c_nan ? g_nan : std::abs(g[i] - c[i]) <= rtol * (1 + std::abs(c[i])));
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << "element " << i << ": gpu " << g[i] << ", cpu " << c[i] << " (seed "
                    << test::seed() << ")";
    }
  }
}

class CrossDevice : public ::testing::TestWithParam<Case> {};

TEST_P(CrossDevice, MatchesCpu) {
  const Case& c = GetParam();
  Arrays inputs;
  for (const Input& in : c.row->inputs) inputs.push_back(make_input(in, c.dtype));
  Arrays cpu;
  try {
    cpu = run_on(c, inputs, Device::cpu);
  } catch (const std::runtime_error& e) {
    // A GPU host without KISS FFT (no network to install it) has no CPU reference.
    if (std::string(e.what()).find("built without an FFT library") != std::string::npos)
      GTEST_SKIP() << "no CPU reference: " << e.what();
    throw;
  }
#ifdef KILN_WITH_CUDA
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason();
#else
  GTEST_SKIP() << "kiln was built without CUDA";
#endif
  Arrays gpu;
  try {
    gpu = run_on(c, inputs, Device::gpu);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("has no GPU implementation yet") != std::string::npos)
      GTEST_SKIP() << "no GPU kernel yet: " << e.what();
    throw;
  }
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    expect_same(gpu[i], cpu[i], c.row->rtol);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CrossDevice, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

// Every op declared in kiln/ops.h has at least one row.
TEST(CrossDeviceTable, EveryOpHasARow) {
  // The source tree from CMake: __FILE__ may be relative to the build (ccache's base_dir).
  auto header = std::filesystem::path(KILN_SOURCE_DIR) / "kiln" / "ops.h";
  std::ifstream file(header);
  ASSERT_TRUE(file) << "cannot read " << header;
  std::set<std::string> declared;
  std::regex fn(R"(^\s*(?:inline\s+)?(?:array|std::vector<array>)\s+(operator\S+?|\w+)\()");
  std::regex reduction(R"(^KILN_REDUCTION\((\w+)\))");
  std::smatch m;
  for (std::string line; std::getline(file, line);) {
    if (std::regex_search(line, m, fn) || std::regex_search(line, m, reduction)) {
      if (m[1] != "NAME") declared.insert(m[1]);
    }
  }
  EXPECT_GT(declared.size(), 100u) << "the parser of ops.h found too few ops";
  std::set<std::string> covered;
  for (const auto& r : all_rows()) covered.insert(r.op);
  for (const auto& name : declared) EXPECT_TRUE(covered.count(name)) << name << " has no row";
}

}  // namespace
