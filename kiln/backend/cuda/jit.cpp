// NVRTC compilation, the in-memory caches, module loading and the module catalog. The
// disk cache is in jit_cache.cpp.
#include "kiln/backend/cuda/jit.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/embedded.h"
#include "kiln/backend/cuda/jit_cache.h"
#include "kiln/backend/cuda/sha256.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::gpu {

namespace {

void check_nvrtc(const char* call, nvrtcResult r) {
  if (r != NVRTC_SUCCESS) [[unlikely]] {
    throw std::runtime_error(std::string("[") + call + "] failed: " + nvrtcGetErrorString(r) +
                             " (" + std::to_string(static_cast<int>(r)) + ").");
  }
}
#define KILN_NVRTC(fn, ...) check_nvrtc(#fn, fn(__VA_ARGS__))

struct Counters {
  std::atomic<uint64_t> memory_hits{0}, disk_hits{0}, compiles{0}, rejected{0};
  std::atomic<uint64_t> in_flight{0}, max_concurrent{0};
};

Counters& counters() {
  static auto* c = new Counters;
  return *c;
}

// Counts a compilation in flight for its scope (max_concurrent shows compilations overlap).
struct InFlight {
  InFlight() {
    auto& c = counters();
    const uint64_t n = c.in_flight.fetch_add(1) + 1;
    uint64_t m = c.max_concurrent.load();
    while (n > m && !c.max_concurrent.compare_exchange_weak(m, n)) {
    }
  }
  ~InFlight() { counters().in_flight.fetch_sub(1); }
};

// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

std::string program_log(nvrtcProgram p) {
  size_t n = 0;
  KILN_NVRTC(nvrtcGetProgramLogSize, p, &n);
  std::string log(n, '\0');
  if (n) KILN_NVRTC(nvrtcGetProgramLog, p, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Parses "sm_90" / "compute_90" into (is_cubin, 90); throws std::invalid_argument.
std::pair<bool, int> parse_target(const std::string& target) {
  bool cubin = target.starts_with("sm_");
  size_t prefix = cubin ? 3 : target.starts_with("compute_") ? 8 : 0;
  int arch = 0;
  bool ok = prefix > 0 && target.size() > prefix && target.size() - prefix <= 4;
  for (size_t i = prefix; ok && i < target.size(); ++i) {
    ok = target[i] >= '0' && target[i] <= '9';
    arch = arch * 10 + (target[i] - '0');
  }
  if (!ok) {
    throw std::invalid_argument("[jit] Invalid target '" + target +
                                "'; expected sm_XX (CUBIN) or compute_XX (PTX).");
  }
  return {cubin, arch};
}

// SHA-256 over every embedded device header, computed once.
const std::string& embedded_headers_hash() {
  static const std::string h = [] {
    Sha256 s;
    for (const auto& f : embedded_device_headers()) s.field(f.path).field(f.text);
    return Sha256::hex(s.digest());
  }();
  return h;
}

bool debug_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_DEBUG");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

}  // namespace

// ---------------------------------------------------------------- compile

const std::string* CompiledModule::lowered_name(std::string_view expr) const {
  for (const auto& [e, lowered] : kernels)
    if (e == expr) return &lowered;
  return nullptr;
}

CompileError::CompileError(const std::string& module, const std::string& target, std::string log)
    : std::runtime_error("[jit] NVRTC could not compile '" + module + "' for " + target + ":\n" +
                         log),
      log_(std::move(log)) {}

std::pair<int, int> nvrtc_version() {
  int major = 0, minor = 0;
  KILN_NVRTC(nvrtcVersion, &major, &minor);
  return {major, minor};
}

const std::vector<int>& nvrtc_supported_archs() {
  static const std::vector<int> archs = [] {
    int n = 0;
    KILN_NVRTC(nvrtcGetNumSupportedArchs, &n);
    std::vector<int> a(n);
    if (n) KILN_NVRTC(nvrtcGetSupportedArchs, a.data());
    std::sort(a.begin(), a.end());
    return a;
  }();
  return archs;
}

std::string target_for_arch(int cc) {
  const auto& archs = nvrtc_supported_archs();
  if (std::find(archs.begin(), archs.end(), cc) != archs.end()) return "sm_" + std::to_string(cc);
  // A device newer than this NVRTC: PTX for the newest arch it knows runs there via the
  // driver's JIT.
  int best = 0;
  for (int a : archs)
    if (a <= cc) best = a;
  if (!best) {
    throw std::runtime_error("[jit] NVRTC " + std::to_string(nvrtc_version().first) +
                             " cannot compile for compute capability " + std::to_string(cc / 10) +
                             "." + std::to_string(cc % 10) + ".");
  }
  return "compute_" + std::to_string(best);
}

CompiledModule compile(const ModuleSource& src, const std::string& target) {
  auto [cubin, arch] = parse_target(target);
  std::vector<const char*> header_texts, header_names;
  for (const auto& f : embedded_device_headers()) {
    header_names.push_back(f.path.data());  // string_views of literals: NUL-terminated
    header_texts.push_back(f.text.data());
  }
  for (const auto& [name, text] : src.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  const std::string file = (src.name.empty() ? std::string("kernel") : src.name) + ".cu";
  Program prog;
  KILN_NVRTC(nvrtcCreateProgram, &prog.p, src.source.c_str(), file.c_str(),
             static_cast<int>(header_texts.size()), header_texts.data(), header_names.data());
  for (const auto& k : src.kernels) KILN_NVRTC(nvrtcAddNameExpression, prog.p, k.c_str());

  std::vector<std::string> opts = {"-arch=" + target, "--std=c++17", "-lineinfo", "-DKILN_JIT=1"};
  opts.insert(opts.end(), src.options.begin(), src.options.end());
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());

  counters().compiles.fetch_add(1, std::memory_order_relaxed);
  if (debug_enabled())
    std::fprintf(stderr, "[kiln jit] compiling %s for %s\n", file.c_str(), target.c_str());
  nvrtcResult r;
  {
    InFlight counted;
    r = nvrtcCompileProgram(prog.p, static_cast<int>(copts.size()), copts.data());
  }
  std::string log = program_log(prog.p);
  if (r == NVRTC_ERROR_COMPILATION) throw CompileError(src.name, target, std::move(log));
  check_nvrtc("nvrtcCompileProgram", r);

  CompiledModule out;
  out.target = target;
  out.log = std::move(log);
  size_t size = 0;
  if (cubin) {
    KILN_NVRTC(nvrtcGetCUBINSize, prog.p, &size);
    out.image.resize(size);
    KILN_NVRTC(nvrtcGetCUBIN, prog.p, out.image.data());
  } else {
    KILN_NVRTC(nvrtcGetPTXSize, prog.p, &size);
    out.image.resize(size);
    KILN_NVRTC(nvrtcGetPTX, prog.p, out.image.data());
    while (!out.image.empty() && out.image.back() == '\0') out.image.pop_back();
  }
  for (const auto& k : src.kernels) {
    const char* lowered = nullptr;
    nvrtcResult lr = nvrtcGetLoweredName(prog.p, k.c_str(), &lowered);
    if (lr != NVRTC_SUCCESS || !lowered) {
      throw CompileError(
          src.name, target,
          "no kernel matches the name expression '" + k + "' (" + nvrtcGetErrorString(lr) + ")");
    }
    out.kernels.emplace_back(k, lowered);
  }
  return out;
}

std::string cache_key(const ModuleSource& src, const std::string& target) {
  auto [major, minor] = nvrtc_version();
  Sha256 h;
  h.field("kiln-jit-1")
      .field(KILN_VERSION)
      .field(std::to_string(major) + "." + std::to_string(minor));
  h.field(target).field(embedded_headers_hash()).field(src.source);
  h.field(std::to_string(src.options.size()));
  for (const auto& o : src.options) h.field(o);
  h.field(std::to_string(src.kernels.size()));
  for (const auto& k : src.kernels) h.field(k);
  h.field(std::to_string(src.headers.size()));
  for (const auto& [name, text] : src.headers) h.field(name).field(text);
  return Sha256::hex(h.digest());
}

// ---------------------------------------------------------------- compile cache

namespace {

// One cache slot per key; its mutex serializes the compilation of that key only.
struct CompileSlot {
  std::mutex mu;
  std::shared_ptr<const CompiledModule> value;
};

struct CompileCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<CompileSlot>> slots;
};
CompileCache& compile_cache() {
  static auto* c = new CompileCache;
  return *c;
}

}  // namespace

std::shared_ptr<const CompiledModule> compile_cached(const ModuleSource& src,
                                                     const std::string& target) {
  const std::string key = cache_key(src, target);
  std::shared_ptr<CompileSlot> slot;
  {
    auto& cache = compile_cache();
    std::lock_guard lk(cache.mu);
    auto& s = cache.slots[key];
    if (!s) s = std::make_shared<CompileSlot>();
    slot = s;
  }
  std::lock_guard lk(slot->mu);
  if (slot->value) {
    counters().memory_hits.fetch_add(1, std::memory_order_relaxed);
    return slot->value;
  }
  const std::string dir = jit_cache_dir();
  if (!dir.empty()) {
    auto loaded = jit_disk::load(dir, key, target);
    if (loaded.status == jit_disk::LoadStatus::ok) {
      counters().disk_hits.fetch_add(1, std::memory_order_relaxed);
      if (debug_enabled())
        std::fprintf(stderr, "[kiln jit] disk hit %s (%s)\n", key.c_str(), src.name.c_str());
      slot->value = std::make_shared<const CompiledModule>(std::move(loaded.module));
      return slot->value;
    }
    if (loaded.status == jit_disk::LoadStatus::rejected) {
      counters().rejected.fetch_add(1, std::memory_order_relaxed);
      std::fprintf(stderr, "[kiln] JIT cache entry %s is corrupt (%s); recompiling.\n",
                   jit_cache_entry_path(dir, key).c_str(), loaded.reason.c_str());
    }
  }
  auto compiled = std::make_shared<const CompiledModule>(compile(src, target));
  if (!dir.empty()) jit_disk::store(dir, key, *compiled, src.source);
  slot->value = compiled;
  return compiled;
}

JitStats jit_stats() {
  auto& c = counters();
  return {c.memory_hits.load(), c.disk_hits.load(), c.compiles.load(), c.rejected.load(),
          c.max_concurrent.load()};
}

void reset_jit_stats() {
  auto& c = counters();
  c.memory_hits = 0;
  c.disk_hits = 0;
  c.compiles = 0;
  c.rejected = 0;
  c.max_concurrent = 0;
}

void clear_jit_memory_cache() {
  auto& cache = compile_cache();
  std::lock_guard lk(cache.mu);
  cache.slots.clear();
}

// ---------------------------------------------------------------- modules

Module::Module(CUmodule module, const CompiledModule& compiled) : module_(module) {
  for (const auto& [expr, lowered] : compiled.kernels) {
    CUfunction f = nullptr;
    KILN_CU(cuModuleGetFunction, &f, module, lowered.c_str());
    functions_.emplace_back(expr, f);
  }
}

CUdeviceptr Module::global(const char* name) const {
  CUdeviceptr p = 0;
  size_t bytes = 0;
  if (driver().cuModuleGetGlobal(&p, &bytes, module_, name) != CUDA_SUCCESS) return 0;
  return p;
}

CUfunction Module::function(std::string_view expr) const {
  for (const auto& [e, f] : functions_)
    if (e == expr) return f;
  throw std::invalid_argument("[jit] The module has no kernel '" + std::string(expr) + "'.");
}

namespace {

struct ModuleSlot {
  std::mutex mu;
  std::unique_ptr<Module> module;
};

// Modules by name, per device. Slots are never erased, so references to modules stay valid.
struct ModuleCache {
  std::mutex mu;
  std::map<int, std::unordered_map<std::string, std::unique_ptr<ModuleSlot>>> slots;
};
ModuleCache& module_cache() {
  static auto* c = new ModuleCache;
  return *c;
}

}  // namespace

const Module& get_module(int device, const std::string& name,
                         const std::function<ModuleSource()>& build) {
  ModuleSlot* slot;
  {
    auto& cache = module_cache();
    std::lock_guard lk(cache.mu);
    auto& s = cache.slots[device][name];
    if (!s) s = std::make_unique<ModuleSlot>();
    slot = s.get();
  }
  std::lock_guard lk(slot->mu);
  if (slot->module) return *slot->module;
  DeviceContext& ctx = device_context(device);
  ModuleSource src = build();
  if (src.name.empty()) src.name = name;
  auto compiled = compile_cached(src, ctx.target());
  ctx.make_current();
  CUmodule mod = nullptr;
  KILN_CU(cuModuleLoadData, &mod, compiled->image.c_str());
  slot->module = std::make_unique<Module>(mod, *compiled);
  return *slot->module;
}

// ---------------------------------------------------------------- catalog

namespace {
std::map<std::string, std::function<void(const ModuleSink&)>>& catalog() {
  static auto* c = new std::map<std::string, std::function<void(const ModuleSink&)>>;
  return *c;
}
std::mutex& catalog_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
}  // namespace

bool register_module_catalog(const std::string& family,
                             std::function<void(const ModuleSink&)> enumerate) {
  std::lock_guard lk(catalog_mutex());
  catalog()[family] = std::move(enumerate);
  return true;
}

std::vector<std::string> module_catalog_families() {
  std::lock_guard lk(catalog_mutex());
  std::vector<std::string> out;
  for (const auto& [f, _] : catalog()) out.push_back(f);
  return out;
}

void for_each_catalog_module(const std::string& family, const ModuleSink& sink) {
  std::function<void(const ModuleSink&)> enumerate;
  {
    std::lock_guard lk(catalog_mutex());
    auto it = catalog().find(family);
    if (it == catalog().end()) {
      throw std::invalid_argument("[jit] No module catalog named '" + family + "'.");
    }
    enumerate = it->second;
  }
  enumerate(sink);
}

}  // namespace kiln::gpu
