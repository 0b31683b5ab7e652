// CPU benchmark of kiln against OpenBLAS called directly, printed as JSON for
// benchmarks/cpu/run.py (which times NumPy in the same run and writes the report).
//
// Each case is warmed up, then timed `reps` times; the median is reported (seconds). kiln
// cases time graph construction plus evaluation of one op on pre-evaluated inputs, so they
// include kiln's per-op cost; the output buffer comes from the allocator's cache, as it
// would in a loop of real work.
//
// Usage: kiln_bench_cpu [--quick]   (--quick: fewer repetitions, for smoke tests)
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/backend/cpu/threading.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median of `reps` timed calls of `f` after `warmup` untimed ones.
double median_time(const std::function<void()>& f, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t(reps);
  for (auto& ti : t) {
    double t0 = now();
    f();
    ti = now() - t0;
  }
  std::sort(t.begin(), t.end());
  return reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
}

// Medians of `f` and `g` timed alternately, so both see the same machine load.
std::pair<double, double> median_times(const std::function<void()>& f,
                                       const std::function<void()>& g, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) {
    f();
    g();
  }
  std::vector<double> tf(reps), tg(reps);
  for (int i = 0; i < reps; ++i) {
    double t0 = now();
    f();
    double t1 = now();
    g();
    tf[i] = t1 - t0;
    tg[i] = now() - t1;
  }
  auto median = [](std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    return t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  };
  return {median(tf), median(tg)};
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out;
}

// One JSON object per case: {"seconds": median} or {"error": what}.
class Report {
 public:
  void run(const std::string& name, const std::function<double()>& measure) {
    std::ostringstream os;
    try {
      double s = measure();
      os << "{\"seconds\": " << s << "}";
    } catch (const std::exception& e) {
      // Ops still being written are placeholders that throw; report and go on.
      os << "{\"error\": \"" << escape(e.what()) << "\"}";
    }
    entries_.emplace_back(name, os.str());
    std::fprintf(stderr, "  %-28s %s\n", name.c_str(), entries_.back().second.c_str());
  }

  void print(const std::map<std::string, std::string>& info) const {
    std::printf("{\n  \"info\": {");
    bool first = true;
    for (auto& [k, v] : info) {
      std::printf("%s\n    \"%s\": \"%s\"", first ? "" : ",", k.c_str(), escape(v).c_str());
      first = false;
    }
    std::printf("\n  },\n  \"results\": {");
    for (size_t i = 0; i < entries_.size(); ++i) {
      std::printf("%s\n    \"%s\": %s", i ? "," : "", entries_[i].first.c_str(),
                  entries_[i].second.c_str());
    }
    std::printf("\n  }\n}\n");
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

array random_input(const Shape& shape) {
  static uint64_t seed = 0;
  array x = random::uniform(shape, float32, random::key(++seed), Device::cpu);
  x.eval();
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int reps = quick ? 3 : 21, warmup = quick ? 1 : 3;
  set_default_device(Device::cpu);
  Report report;

  // Elementwise on 2^24 float32.
  {
    array x = random_input({1 << 24}), y = random_input({1 << 24});
    report.run("add_2^24_f32",
               [&] { return median_time([&] { add(x, y).eval(); }, warmup, reps); });
    report.run("exp_2^24_f32", [&] { return median_time([&] { exp(x).eval(); }, warmup, reps); });
  }

  // Reductions of a (4096, 4096) float32 matrix.
  {
    array m = random_input({4096, 4096});
    report.run("sum_all_4096^2_f32",
               [&] { return median_time([&] { sum(m).eval(); }, warmup, reps); });
    report.run("sum_last_axis_4096^2_f32",
               [&] { return median_time([&] { sum(m, -1).eval(); }, warmup, reps); });
  }

  // Matrix products: kiln and cblas_sgemm on the same row-major operands, alternately.
  for (int n : {1024, 2048}) {
    array a = random_input({n, n}), b = random_input({n, n});
    const int mreps = quick ? 3 : (n == 1024 ? 15 : 7);
    std::string tag = "_" + std::to_string(n) + "^3_f32";
    std::vector<float> c(static_cast<size_t>(n) * n);
    std::pair<double, double> t{0, 0};
    report.run("matmul" + tag, [&] {
      t = median_times([&] { matmul(a, b).eval(); },
                       [&] {
                         cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                                     a.data<float>(), n, b.data<float>(), n, 0.0f, c.data(), n);
                       },
                       warmup, mreps);
      return t.first;
    });
    report.run("cblas_sgemm" + tag, [&] {
      if (t.second == 0) throw std::runtime_error("not measured: kiln's matmul failed");
      return t.second;
    });
  }

  // Per-op overhead: build and evaluate a chain of 10,000 scalar adds; the graph
  // construction alone is reported too.
  {
    const int ops = 10000;
    array one(1.0f);
    std::vector<double> build;
    auto chain = [&] {
      double t0 = now();
      array y(0.0f);
      for (int i = 0; i < ops; ++i) y = add(y, one);
      build.push_back(now() - t0);
      if (y.item<float>() != ops) throw std::runtime_error("[bench] wrong chain result");
    };
    report.run("scalar_add_chain_10000", [&] { return median_time(chain, warmup, reps); });
    report.run("scalar_add_chain_10000_build_only", [&] {
      if (build.empty()) throw std::runtime_error("the chain did not run");
      std::sort(build.begin(), build.end());
      return build[build.size() / 2];
    });
  }

  std::map<std::string, std::string> info = {
      {"kiln_version", KILN_VERSION},
      {"kiln_threads", std::to_string(cpu::num_threads())},
      {"openblas_threads", std::to_string(openblas_get_num_threads())},
      {"openblas_config", openblas_get_config()},
      {"reps", std::to_string(reps)},
      {"warmup", std::to_string(warmup)},
  };
  report.print(info);
  return 0;
}
