#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <complex>
#include <filesystem>

#include "test_utils.h"

namespace kiln::test {

uint64_t seed() {
  static uint64_t s = []() -> uint64_t {
    if (const char* env = std::getenv("KILN_TEST_SEED")) return std::stoull(env);
    return (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  }();
  return s;
}

std::mt19937_64& rng() {
  // One engine per thread: tests that build inputs on several threads at once (Leaks'
  // concurrent transforms) raced on one shared engine (UBSan: index 312 out of bounds in
  // mersenne_twister_engine). The first thread to ask gets the seed's own sequence.
  static std::atomic<uint64_t> threads{0};
  thread_local std::mt19937_64 g(seed() + 0x9e3779b97f4a7c15ull * threads.fetch_add(1));
  return g;
}

array random_array(const Shape& shape, Dtype dtype, double lo, double hi) {
  size_t n = shape_size(shape);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> vals(n);
  for (auto& v : vals) v = u(rng());
  if (dtype == complex64) {
    std::vector<complex64_t> c(n);
    for (auto& v : c) v = complex64_t(static_cast<float>(u(rng())), static_cast<float>(u(rng())));
    return array(c.begin(), shape, complex64);
  }
  if (dtype == bool_) {
    for (auto& v : vals) v = v > (lo + hi) / 2;
  }
  return array(vals.begin(), shape, dtype);
}

std::vector<double> to_double(array a) {
  a.eval();
  std::vector<double> out(a.size());
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = a.data<T>();
    for (size_t i = 0; i < a.size(); ++i) {
      out[i] = scalar_cast<double>(p[elem_to_loc_ref(i, a)]);
    }
  });
  return out;
}

std::vector<std::complex<double>> to_complex(array a) {
  a = astype(a, complex64);
  a.eval();
  std::vector<std::complex<double>> out(a.size());
  const complex64_t* p = a.data<complex64_t>();
  for (size_t i = 0; i < a.size(); ++i) out[i] = p[elem_to_loc_ref(i, a)];
  return out;
}

double tolerance(Dtype d) {
  if (d == float16 || d == bfloat16) return d == bfloat16 ? 2e-2 : 5e-3;
  if (d == float32 || d == complex64) return 2e-5;
  if (d == float64) return 1e-12;
  return 0.0;  // integers and bool are exact
}

void expect_allclose(
    const array& actual, const Shape& shape, const std::vector<double>& expected, double rtol) {
  ASSERT_EQ(actual.shape(), shape) << "shape mismatch";
  if (rtol < 0) rtol = tolerance(actual.dtype());
  auto got = to_double(actual);
  ASSERT_EQ(got.size(), expected.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], e = expected[i];
    bool ok;
    if (std::isnan(e)) ok = std::isnan(g);
    else if (std::isinf(e)) ok = g == e;
    else ok = std::abs(g - e) <= rtol * (1.0 + std::abs(e));
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << e << " (dtype "
                    << actual.dtype() << ", rtol " << rtol << ", seed " << seed() << ")";
    }
  }
}

Device test_device() { return default_device(); }

std::vector<double> map_ref(const std::vector<double>& x, const std::function<double(double)>& f) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f(x[i]);
  return out;
}

pid_t spawn_self(const std::string& filter, const std::vector<std::string>& env) {
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string arg = "--gtest_filter=" + filter;
  std::vector<char*> argv = {exe.data(), arg.data(), nullptr};
  std::vector<std::string> envs(env);
  // Not the sharding variables: a child in another shard than its test would run nothing.
  for (char** e = environ; *e; ++e) {
    std::string_view v(*e);
    if (!v.starts_with("GTEST_TOTAL_SHARDS=") && !v.starts_with("GTEST_SHARD_INDEX=") &&
        !v.starts_with("GTEST_SHARD_STATUS_FILE="))
      envs.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data());
  return rc == 0 ? pid : -1;
}

}  // namespace kiln::test
