// GPU benchmark of kiln, printed as JSON for benchmarks/gpu/run.py, which times PyTorch on
// the same GPU in the same run and writes the report (issue 4's list):
//   copy, add, exp on 2^28 float32 and bfloat16; sum over the last axis and over everything of
//   (32768, 4096) float32 and bfloat16; matmul bfloat16 and float16 at 4096^3 and 8192^3;
//   the per-op host cost of a chain of small adds; the first-use compile time of an
//   elementwise kernel and its load time from the disk cache in a new process.
//
// Device time comes from CUDA events on the CUstream of the kiln stream the ops run on (the
// hook: gpu::device_stream(s).handle()). Each timed round builds a batch of independent ops
// first, then records an event, evaluates the batch (the kernels are enqueued back to back)
// and records another: the time per op is the interval over the batch size, so the host's
// scheduling is overlapped with the kernels exactly as in a real program. Medians over rounds,
// after warm-up (which also compiles the kernels).
//
// Usage: kiln_bench_gpu [--quick]        every case, JSON on stdout, progress on stderr
//        kiln_bench_gpu --first-use      (run by the above in a child process) times the
//                                        first exp of a process; JSON on stdout
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/gpu.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out;
}

/** CUDA events on the stream behind kiln stream `s`. */
class GpuTimer {
 public:
  explicit GpuTimer(Stream s) : ctx_(gpu::device_context(s.device.index)) {
    stream_ = gpu::device_stream(s).handle();
    ctx_.make_current();
    KILN_CU(cuEventCreate, &start_, CU_EVENT_DEFAULT);
    KILN_CU(cuEventCreate, &end_, CU_EVENT_DEFAULT);
  }
  ~GpuTimer() {
    ctx_.make_current();
    gpu::driver().cuEventDestroy(start_);
    gpu::driver().cuEventDestroy(end_);
  }
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  /** Device milliseconds per op: `batch()` builds the (unevaluated) outputs of n ops. */
  double per_op_ms(const std::function<std::vector<array>()>& batch) {
    std::vector<array> outs = batch();
    ctx_.make_current();
    KILN_CU(cuEventRecord, start_, stream_);
    eval(outs);
    ctx_.make_current();
    KILN_CU(cuEventRecord, end_, stream_);
    KILN_CU(cuEventSynchronize, end_);
    float ms = 0;
    KILN_CU(cuEventElapsedTime, &ms, start_, end_);
    return ms / static_cast<double>(outs.size());
  }

  /** The median over `rounds` of per_op_ms, after `warmup` untimed rounds. */
  double median_ms(const std::function<std::vector<array>()>& batch, int warmup, int rounds) {
    for (int i = 0; i < warmup; ++i) eval(batch());
    std::vector<double> t;
    for (int i = 0; i < rounds; ++i) t.push_back(per_op_ms(batch));
    return median(t);
  }

 private:
  gpu::DeviceContext& ctx_;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, end_ = nullptr;
};

// One JSON object per case; a failing case reports its error and the others go on.
class Report {
 public:
  void add(const std::string& name, const std::function<std::string()>& fields) {
    std::string body;
    try {
      body = fields();
    } catch (const std::exception& e) {
      body = "\"error\": \"" + escape(e.what()) + "\"";
    }
    entries_.push_back("    \"" + name + "\": {" + body + "}");
    std::fprintf(stderr, "  %-32s {%s}\n", name.c_str(), body.c_str());
  }

  void print(const std::string& info) const {
    std::printf("{\n  \"info\": {%s},\n  \"results\": {\n", info.c_str());
    for (size_t i = 0; i < entries_.size(); ++i) {
      std::printf("%s%s\n", entries_[i].c_str(), i + 1 < entries_.size() ? "," : "");
    }
    std::printf("  }\n}\n");
  }

 private:
  std::vector<std::string> entries_;
};

std::string fields(double ms, double bytes, double flops = 0) {
  std::ostringstream os;
  os.precision(6);
  os << "\"ms\": " << ms << ", \"bytes\": " << bytes;
  if (flops > 0) os << ", \"flops\": " << flops;
  return os.str();
}

const char* short_name(Dtype d) {
  return d == float32 ? "f32" : d == bfloat16 ? "bf16" : d == float16 ? "f16" : "?";
}

// `host` copied to the GPU (evaluated there, so timed rounds move nothing from the host).
array on_gpu(const array& host, Stream s) {
  array x = copy(host, s);
  x.eval();
  return x;
}

// Random values made on the GPU.
array gpu_random(const Shape& shape, Dtype d, Stream s) {
  static uint64_t seed = 0;
  array x = astype(random::uniform(shape, float32, random::key(++seed), s), d, s);
  x.eval();
  return x;
}

/** The first exp of this process on a float32 array (the JIT cache directory comes from the
 * environment): its wall time, a warm call's, and the JIT counters of the first call. */
int first_use() {
  Stream s = new_stream(Device::gpu);
  array x = on_gpu(full({1 << 20}, 0.5f, float32, Device::cpu), s);
  gpu::reset_jit_stats();
  const double t0 = now();
  exp(x, s).eval();
  const double first = now() - t0;
  const gpu::JitStats st = gpu::jit_stats();
  const double t1 = now();
  exp(x, s).eval();
  const double warm = now() - t1;
  std::printf("{\"first_ms\": %.4f, \"warm_ms\": %.4f, \"compiles\": %llu, \"disk_hits\": %llu}\n",
              first * 1e3, warm * 1e3, static_cast<unsigned long long>(st.compiles),
              static_cast<unsigned long long>(st.disk_hits));
  return 0;
}

/** Runs this binary with --first-use and the JIT cache in `dir`; returns its JSON line. */
std::string run_first_use(const std::string& exe, const std::string& dir) {
  const std::string cmd = "KILN_CACHE_DIR='" + dir + "' KILN_CACHE=1 '" + exe + "' --first-use";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("[bench] could not start " + cmd);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  if (pclose(p) != 0 || out.empty()) throw std::runtime_error("[bench] " + cmd + " failed");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  // Drop the outer braces: the fields go into this case's object.
  return out.substr(1, out.size() - 2);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!gpu::is_available()) {
    std::fprintf(stderr, "kiln_bench_gpu: no GPU (%s)\n", gpu::unavailable_reason().c_str());
    return 2;
  }
  if (mode == "--first-use") return first_use();
  const bool quick = mode == "--quick";
  const int warmup = quick ? 1 : 3, rounds = quick ? 3 : 11;
  Stream s = new_stream(Device::gpu);
  GpuTimer timer(s);
  Report report;

  // Elementwise on 2^28 elements: bytes read + written once.
  const int64_t n = quick ? (1 << 24) : (1 << 28);
  for (Dtype d : {float32, bfloat16}) {
    array x = gpu_random({static_cast<int32_t>(n)}, d, s);
    array y = gpu_random({static_cast<int32_t>(n)}, d, s);
    const double sz = static_cast<double>(n) * d.size;
    const int batch = quick ? 4 : 8;
    auto many = [&](auto op) {
      return [&, op] {
        std::vector<array> v;
        for (int i = 0; i < batch; ++i) v.push_back(op());
        return v;
      };
    };
    const std::string tag = std::string("_2^") + (quick ? "24_" : "28_") + short_name(d);
    report.add("copy" + tag, [&] {
      return fields(timer.median_ms(many([&] { return copy(x, s); }), warmup, rounds), 2 * sz);
    });
    report.add("add" + tag, [&] {
      return fields(timer.median_ms(many([&] { return add(x, y, s); }), warmup, rounds), 3 * sz);
    });
    report.add("exp" + tag, [&] {
      return fields(timer.median_ms(many([&] { return exp(x, s); }), warmup, rounds), 2 * sz);
    });
  }

  // Reductions of a (32768, 4096) matrix: bytes read once.
  const int rows = quick ? 4096 : 32768, cols = 4096;
  for (Dtype d : {float32, bfloat16}) {
    array m = gpu_random({rows, cols}, d, s);
    const double sz = static_cast<double>(rows) * cols * d.size;
    const int batch = quick ? 8 : 32;
    const std::string tag = std::string("_") + std::to_string(rows) + "x4096_" + short_name(d);
    report.add("sum_last_axis" + tag, [&] {
      auto b = [&] {
        std::vector<array> v;
        for (int i = 0; i < batch; ++i) v.push_back(sum(m, -1, false, s));
        return v;
      };
      return fields(timer.median_ms(b, warmup, rounds), sz);
    });
    report.add("sum_all" + tag, [&] {
      auto b = [&] {
        std::vector<array> v;
        for (int i = 0; i < batch; ++i) v.push_back(sum(m, false, s));
        return v;
      };
      return fields(timer.median_ms(b, warmup, rounds), sz);
    });
  }

  // Matrix products (cuBLASLt).
  for (Dtype d : {bfloat16, float16}) {
    for (int k : quick ? std::vector<int>{1024} : std::vector<int>{4096, 8192}) {
      array a = gpu_random({k, k}, d, s), b = gpu_random({k, k}, d, s);
      const double flops = 2.0 * k * k * k;
      const int batch = k >= 8192 ? 4 : 10;
      report.add("matmul_" + std::to_string(k) + "^3_" + short_name(d), [&] {
        auto bt = [&] {
          std::vector<array> v;
          for (int i = 0; i < batch; ++i) v.push_back(matmul(a, b, s));
          return v;
        };
        return fields(timer.median_ms(bt, warmup, rounds), 3.0 * k * k * d.size, flops);
      });
    }
  }

  // Host cost per op: build a chain of small adds lazily and evaluate it (wall time).
  {
    const int ops = 100;
    array x = on_gpu(full({16}, 1.0f, float32, Device::cpu), s);
    array one = on_gpu(full({16}, 1.0f, float32, Device::cpu), s);
    auto chain = [&] {
      array z = x;
      for (int i = 0; i < ops; ++i) z = add(z, one, s);
      z.eval();
    };
    report.add("add_chain_16_f32_per_op", [&] {
      for (int i = 0; i < 20; ++i) chain();
      std::vector<double> t;
      for (int r = 0; r < (quick ? 5 : 51); ++r) {
        const double t0 = now();
        chain();
        t.push_back((now() - t0) / ops);
      }
      std::ostringstream os;
      os << "\"us\": " << median(t) * 1e6 << ", \"ops\": " << ops;
      return os.str();
    });
  }

  // First use of an elementwise kernel: compiled in a new process with an empty cache, then
  // loaded from the disk cache in another new process.
  {
    char tmpl[] = "/tmp/kiln-bench-jit-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
    report.add("first_use_compile_exp_f32", [&] {
      if (!dir) throw std::runtime_error("[bench] mkdtemp failed");
      return run_first_use(exe, std::string(dir) + "/cache");
    });
    report.add("first_use_disk_cache_exp_f32", [&] {
      if (!dir) throw std::runtime_error("[bench] mkdtemp failed");
      return run_first_use(exe, std::string(dir) + "/cache");
    });
    if (dir) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }

  gpu::DeviceContext& ctx = gpu::device_context(s.device.index);
  std::ostringstream info;
  info << "\"device\": \"" << escape(ctx.name())
       << "\", \"compute_capability\": " << ctx.compute_capability()
       << ", \"sm_count\": " << ctx.sm_count() << ", \"memory_bytes\": " << ctx.total_memory()
       << ", \"kiln_version\": \"" << KILN_VERSION << "\", \"warmup\": " << warmup
       << ", \"rounds\": " << rounds << ", \"quick\": " << (quick ? "true" : "false");
  report.print(info.str());
  return 0;
}
