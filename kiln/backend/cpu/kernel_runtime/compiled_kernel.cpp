// Compiling, caching and loading CPU custom kernels.
//
// Disk entry <dir>/<key>.kso (disk_cache.h's verified format, magic KILNCPU1); payload:
// compiler identity, shared object, compiler log, each a u32 LE length and its bytes. The
// translation unit is written beside it (<key>.cpp) for inspection.
#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/backend/kernels/embedded.h"
#include "kiln/backend/kernels/host_compiler.h"
#include "kiln/backend/kernels/sha256.h"
#include "kiln/backend/kernels/signature_cpu.h"
#include "kiln/fast.h"
#include "kiln/primitives_custom.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::cpu_rt {

namespace {

constexpr char kMagic[] = "KILNCPU1";

struct Counters {
  std::atomic<uint64_t> memory_hits{0}, disk_hits{0}, compiles{0}, rejected{0};
  std::atomic<uint64_t> in_flight{0}, max_concurrent{0};
};
Counters& counters() {
  static auto* c = new Counters;
  return *c;
}

// Counts a host compiler run for its scope (max_concurrent shows compilations overlap).
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

bool debug_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_DEBUG");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

// The headers a CPU kernel may include: metal/ (but its GPU parts), cuda/ and cuda_cpu*.h.
const std::vector<std::pair<std::string, std::string>>& headers() {
  static const auto* h = [] {
    auto* v = new std::vector<std::pair<std::string, std::string>>;
    for (const auto& f : kernels::embedded_headers()) {
      const bool metal = f.path.starts_with("kiln/backend/kernels/metal/") &&
                         !f.path.starts_with("kiln/backend/kernels/metal/gpu");
      if (metal || f.path.starts_with("kiln/backend/kernels/cuda_cpu") ||
          f.path.starts_with("kiln/backend/kernels/cuda/"))
        v->emplace_back(std::string(f.path), std::string(f.text));
    }
    return v;
  }();
  return *h;
}

const std::string& headers_hash() {
  static const std::string h = [] {
    kernels::Sha256 s;
    for (const auto& [path, text] : headers()) s.field(path).field(text);
    return kernels::Sha256::hex(s.digest());
  }();
  return h;
}

// -O2 (measured against -O1 in benchmarks/cpu/custom_kernel.py: the compile costs about the
// same and elementwise loops vectorize). No -march: cached objects stay valid on any x86-64
// sharing the cache; KILN_CXXFLAGS adds flags (and changes the key).
// No TLS descriptors (-mtls-dialect=gnu2), though they make thread_local accesses cheaper:
// once earlier kernels have used up glibc's static TLS reserve, descriptors resolve through
// glibc's dynamic path, and there (Debian 12's glibc 2.36) kernels read a wrong current
// thread and crash (python/tests/test_fast_cpu.py, test_many_kernels_with_thread_locals...).
std::vector<std::string> flags(const kernels::HostCompiler& cc, fast::MathMode mode) {
  std::vector<std::string> f = {"-std=c++20",      "-O2",   "-fPIC", "-fvisibility=hidden",
                                "-fno-math-errno", "-pipe", "-g0"};
  // MLX's math modes (kiln/fast.h), spelled out: -ffast-math (and
  // -funsafe-math-optimizations) link crtfastmath.o, which would turn on flush-to-zero for the
  // whole process when the kernel's library loads.
  if (mode != fast::MathMode::safe) {
    f.insert(f.end(), {"-fno-signed-zeros", "-fno-trapping-math", "-fassociative-math",
                       "-freciprocal-math"});
  }
  if (mode == fast::MathMode::fast) f.insert(f.end(), {"-ffinite-math-only", "-fcx-limited-range"});
  if (const char* extra = std::getenv("KILN_CXXFLAGS")) {
    std::string word;
    for (const char* c = extra;; ++c) {
      if (*c == ' ' || *c == '\t' || *c == '\0') {
        if (!word.empty()) f.push_back(word);
        word.clear();
        if (!*c) break;
      } else {
        word += *c;
      }
    }
  }
  return f;
}

std::string cache_key(const std::string& source, const kernels::HostCompiler& cc,
                      const std::vector<std::string>& fl) {
  kernels::Sha256 h;
  h.field("kiln-cpu-kernel-1").field(KILN_VERSION).field(std::to_string(kAbiVersion));
  h.field(cc.identity).field(headers_hash()).field(std::to_string(fl.size()));
  for (const auto& f : fl) h.field(f);
  h.field(source);
  return kernels::Sha256::hex(h.digest());
}

// A shared object loaded from bytes. dlopen finds an already loaded library by its path
// name, so every load gets a name never used before in this process: a fresh file in a
// private (0700) temporary directory, unlinked once loaded, so nothing can change it between
// the hash check and the load. Where no temporary file can be made (read-only or noexec
// /tmp), an anonymous memory file (memfd) serves through /proc/self/fd/N; its descriptor
// stays open for the process's life, so N is never reused for another library.
struct Loaded {
  void* handle = nullptr;
  KernelEntry entry;
};

Loaded load_object(const std::string& bytes, const std::string& what) {
  auto write_all = [&](int fd) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  static std::atomic<uint64_t> loads{0};
  Loaded l;
  std::string error;
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-so-XXXXXX").string();
  if (mkdtemp(dir.data())) {
    const std::string path = dir + "/kernel-" + std::to_string(getpid()) + "-" +
                             std::to_string(loads.fetch_add(1)) + ".so";
    int f = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (f >= 0 && write_all(f) && close(f) == 0) {
      f = -1;
      l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!l.handle) error = dlerror();
    } else {
      error = std::strerror(errno);
    }
    if (f >= 0) close(f);
    unlink(path.c_str());
    rmdir(dir.c_str());
  } else {
    error = std::strerror(errno);
  }
  if (!l.handle) {
    int fd = memfd_create("kiln-cpu-kernel", MFD_CLOEXEC);
    if (fd >= 0 && write_all(fd)) {
      l.handle = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!l.handle) {
        error += std::string("; through memfd: ") + dlerror();
        close(fd);
      }
    } else if (fd >= 0) {
      close(fd);
    }
  }
  if (!l.handle) {
    throw std::runtime_error("[custom kernel] Cannot load the compiled kernel " + what + ": " +
                             error);
  }
  auto version = reinterpret_cast<AbiVersionFn>(dlsym(l.handle, kAbiVersionSymbol));
  l.entry.run_blocks = reinterpret_cast<RunBlocksFn>(dlsym(l.handle, kRunBlocksSymbol));
  l.entry.run_thread = reinterpret_cast<RunThreadFn>(dlsym(l.handle, kRunThreadSymbol));
  if (!version || !l.entry.run_blocks || !l.entry.run_thread || version() != kAbiVersion) {
    throw std::runtime_error("[custom kernel] The compiled kernel " + what +
                             " lacks kiln's entry points or was built for another runtime.");
  }
  return l;
}

// One slot per generated source and mode; its mutex serializes that kernel's compilation.
struct Slot {
  std::mutex mu;
  std::shared_ptr<const CompiledKernel> kernel;
  std::string error;  // a compile error, remembered: the same source fails the same way
};

struct MemoryCache {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots;  // by mode + generated source
};
MemoryCache& memory_cache() {
  static auto* c = new MemoryCache;
  return *c;
}

}  // namespace

bool check_mode() {
  const char* e = std::getenv("KILN_KERNEL_CHECK");
  return e && *e && std::string(e) != "0";
}

std::string kernel_cache_entry_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".kso";
}

std::shared_ptr<const CompiledKernel> get_kernel(const kernels::KernelProgram& program,
                                                 bool check) {
  const kernels::GeneratedKernel& g = program.generated(kernels::Target::cpu);
  std::shared_ptr<Slot> slot;
  {
    auto& cache = memory_cache();
    std::lock_guard lk(cache.mu);
    auto& s = cache.slots[(check ? "c" : "n") + g.source];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard lk(slot->mu);
  if (slot->kernel) {
    counters().memory_hits.fetch_add(1, std::memory_order_relaxed);
    return slot->kernel;
  }
  if (!slot->error.empty()) throw fast::KernelCompileError(slot->error);

  const kernels::HostCompiler cc = kernels::host_compiler();
  const std::vector<std::string> fl = flags(cc, program.spec().math_mode);
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->source = kernels::cpu_translation_unit(g, check);
  kernel->key = cache_key(kernel->source, cc, fl);
  const std::string& name = program.spec().name;
  const std::string what = "'" + name + "' (" + kernel->key.substr(0, 16) + ")";

  const std::string dir = kernels::cache_dir();
  if (!dir.empty()) {
    const std::string path = kernel_cache_entry_path(dir, kernel->key);
    kernels::Entry e = kernels::read_entry(path, kMagic, kernel->key);
    if (e.status == kernels::EntryStatus::ok) {
      kernels::ByteReader r{e.payload};
      std::string identity = r.str(), object = r.str();
      r.str();  // the log
      if (r.at_end() && identity == cc.identity) {
        kernel->entry = load_object(object, what).entry;
        counters().disk_hits.fetch_add(1, std::memory_order_relaxed);
        if (debug_enabled()) std::fprintf(stderr, "[kiln cpu] disk hit %s\n", what.c_str());
        slot->kernel = kernel;
        return kernel;
      }
      e.status = kernels::EntryStatus::rejected;
      e.reason = "malformed payload";
    }
    if (e.status == kernels::EntryStatus::rejected) {
      counters().rejected.fetch_add(1, std::memory_order_relaxed);
      std::fprintf(stderr, "[kiln] CPU kernel cache entry %s is corrupt (%s); recompiling.\n",
                   path.c_str(), e.reason.c_str());
    }
  }

  counters().compiles.fetch_add(1, std::memory_order_relaxed);
  if (debug_enabled()) std::fprintf(stderr, "[kiln cpu] compiling %s\n", what.c_str());
  kernels::HostCompileResult res;
  {
    InFlight counted;
    res = kernels::compile_shared_object(cc, name, kernel->source, headers(), fl);
  }
  if (!res.ok) {
    slot->error =
        kernels::compile_error_message(program, "the CPU (" + cc.command[0] + ")", res.log);
    throw fast::KernelCompileError(slot->error);
  }
  kernel->entry = load_object(res.object, what).entry;
  if (!dir.empty()) {
    kernels::ByteWriter w;
    w.str(cc.identity);
    w.str(res.object);
    w.str(res.log);
    std::string why;
    if (!kernels::write_entry(dir, kernel_cache_entry_path(dir, kernel->key), kMagic, kernel->key,
                              w.out, why) ||
        !kernels::write_file_atomic(dir, dir + "/" + kernel->key + ".cpp", kernel->source, why)) {
      kernels::warn_once("CPU kernel disk cache write failed: " + why +
                         "; kernels stay cached in memory.");
    }
  }
  slot->kernel = kernel;
  return kernel;
}

KernelCacheStats kernel_cache_stats() {
  auto& c = counters();
  return {c.memory_hits.load(), c.disk_hits.load(), c.compiles.load(), c.rejected.load(),
          c.max_concurrent.load()};
}

void reset_kernel_cache_stats() {
  auto& c = counters();
  c.memory_hits = 0;
  c.disk_hits = 0;
  c.compiles = 0;
  c.rejected = 0;
  c.max_concurrent = 0;
}

void clear_kernel_memory_cache() {
  auto& cache = memory_cache();
  std::lock_guard lk(cache.mu);
  cache.slots.clear();
}

}  // namespace kiln::cpu_rt
