// Compiled::eval_cpu: a fused tape (kiln/primitives_compile.h) as generated C++, compiled by
// the host compiler (backend/kernels/host_compiler.h) into a shared object cached in memory
// and in the kernel disk cache (backend/kernels/disk_cache.h), as CPU custom kernels are.
//
// The generated code applies each op of the tape to a block of elements (kBlock) held in
// small buffers that stay in the L1/L2 cache, with the very functors and loops of the
// eager kernels (backend/cpu/unary_ops.h, binary_ops.h; vectorizable float functors, and
// float16/bfloat16 through them, in the loops of backend/cpu/simd_loops.h that unary.cpp runs), so
// each op rounds as it does unfused and no multiply-add is contracted across ops: results equal the
// unfused ones bit for bit, while intermediates never go to memory. One kernel per tape serves
// every shape and layout: the host side here points the inputs' blocks into contiguous inputs, or
// gathers strided and broadcast ones, and runs blocks in parallel.
//
// A kernel that cannot be built (no compiler, a compile error) falls back to the unfused
// tape, with a warning once per kernel. KILN_DEBUG_COMPILE=1 prints each generated source.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <dlfcn.h>

#include "kiln/backend/cpu/threading.h"
#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/backend/kernels/embedded.h"
#include "kiln/backend/kernels/host_compiler.h"
#include "kiln/backend/kernels/sha256.h"
#include "kiln/backend/kernels/shared_object.h"
#include "kiln/compile.h"
#include "kiln/fast.h"
#include "kiln/primitives.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln {

namespace {

// Elements per block: a few blocks of 8-byte values fit the L1 cache together.
constexpr int64_t kBlock = 512;
constexpr char kMagic[] = "KILNFUS1";
constexpr int kAbi = 1;

using RunFn = void (*)(void* const*, long);

struct CpuKernel {
  RunFn run = nullptr;  // null: the fallback runs
  std::string source;
};

std::string cpp_type(Dtype d) {
  switch (d.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::float16:
      return "kiln::float16_t";
    case Dtype::Val::bfloat16:
      return "kiln::bfloat16_t";
    case Dtype::Val::float32:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::complex64:
      return "std::complex<float>";
    default:
      throw std::runtime_error(msg("[compile] No C++ type for ", d, "."));
  }
}

// The literal's exact bits as a constant expression of its type.
std::string literal_expr(const array& a) {
  uint64_t bits = 0;
  std::memcpy(&bits, a.data<void>(), a.itemsize());
  std::ostringstream os;
  os << "std::bit_cast<" << cpp_type(a.dtype()) << ">(static_cast<uint" << a.itemsize() * 8
     << "_t>(0x" << std::hex << bits << "ull))";
  return os.str();
}

// Loops shared by the generated functions, as backend/cpu/unary.cpp and elementwise.h run
// them (same functors, same clones, same half-type rule).
constexpr const char* kPrelude = R"(#include <bit>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "kiln/backend/cpu/binary_ops.h"
#include "kiln/backend/cpu/simd_loops.h"
#include "kiln/backend/cpu/unary_ops.h"

namespace kiln_fused {

template <typename Op>
inline constexpr bool has_simd = requires { Op::simd; };

// `op` on elements of one type as the eager kernels apply it: directly where it takes the
// type, else (float16, bfloat16) in float, rounded once to R.
template <typename R, typename Op, typename... T>
inline R apply(Op op, T... x) {
  if constexpr (std::is_invocable_v<const Op&, T...>)
    return op(x...);
  else
    return static_cast<R>(op(static_cast<float>(x)...));
}

}  // namespace kiln_fused

#define KILN_FUSED_EXPORT extern "C" __attribute__((visibility("default")))
)";

// The generated translation unit of `c`'s tape.
std::string generate(const Compiled& c) {
  const FusedTape& t = c.tape();
  const int ni = static_cast<int>(t.num_inputs()), first = t.first_op();
  std::ostringstream os;
  os << "// kiln compile: " << c.name() << "\n" << kPrelude << "\n";
  for (size_t j = 0; j < t.literals.size(); ++j) {
    os << "static const " << cpp_type(t.literals[j].dtype()) << " v" << ni + j << " = "
       << literal_expr(t.literals[j]) << ";\n";
  }
  auto is_literal = [&](int v) { return v >= ni && v < first; };
  for (size_t k = 0; k < t.ops.size(); ++k) {
    const FusedTape::Op& op = t.ops[k];
    const int v = first + static_cast<int>(k);
    const std::string out = cpp_type(op.dtype);
    const std::string fn = detail::fused_functor(*op.prim);
    // Parameters: one pointer per distinct non-literal argument.
    std::vector<int> params;
    for (int a : op.args)
      if (!is_literal(a) && std::find(params.begin(), params.end(), a) == params.end())
        params.push_back(a);
    os << "\nstatic void op" << v << "(";
    for (int p : params) os << "const " << cpp_type(t.dtype(p)) << "* __restrict p" << p << ", ";
    os << out << "* __restrict o, long n) {\n";
    auto arg = [&](int a) {
      std::string name(is_literal(a) ? "v" : "p");
      name += std::to_string(a);
      if (!is_literal(a)) name += "[i]";
      return name;
    };
    if (fn == "AsType") {
      os << "  for (long i = 0; i < n; ++i) o[i] = kiln::scalar_cast<" << out << ">("
         << arg(op.args[0]) << ");\n";
    } else if (fn == "Select") {
      os << "  for (long i = 0; i < n; ++i) o[i] = " << arg(op.args[0]) << " ? " << arg(op.args[1])
         << " : " << arg(op.args[2]) << ";\n";
    } else {
      const std::string functor = "kiln::cpu::fn::" + fn + "{}";
      const bool unary = op.args.size() == 1 && !is_literal(op.args[0]);
      const Dtype in = unary ? t.dtype(op.args[0]) : op.dtype;
      const bool simd_candidate = unary && in == float32;
      const bool half_candidate = unary && (in == float16 || in == bfloat16) && op.dtype == in;
      std::string loop =
          "for (long i = 0; i < n; ++i) o[i] = kiln_fused::apply<" + out + ">(" + functor;
      for (int a : op.args) loop += ", " + arg(a);
      loop += ");";
      if (simd_candidate || half_candidate) {
        os << "  if constexpr (kiln_fused::has_simd<kiln::cpu::fn::" << fn << ">)\n"
           << "    kiln::cpu::"
           << (half_candidate ? "map_simd_half(p" + std::to_string(op.args[0]) + ", 1, o, 1"
                              : "map_simd(p" + std::to_string(op.args[0]) + ", o")
           << ", n, " << functor << ");\n"
           << "  else\n    " << loop << "\n";
      } else {
        os << "  " << loop << "\n";
      }
    }
    os << "}\n";
  }
  os << "\nKILN_FUSED_EXPORT int kiln_fused_abi() { return " << kAbi << "; }\n";
  os << "\nKILN_FUSED_EXPORT void kiln_fused_run(void* const* v, long n) {\n";
  for (size_t k = 0; k < t.ops.size(); ++k) {
    const FusedTape::Op& op = t.ops[k];
    const int v = first + static_cast<int>(k);
    std::vector<int> params;
    for (int a : op.args)
      if (!is_literal(a) && std::find(params.begin(), params.end(), a) == params.end())
        params.push_back(a);
    os << "  op" << v << "(";
    for (int p : params)
      os << "static_cast<const " << cpp_type(t.dtype(p)) << "*>(v[" << p << "]), ";
    os << "static_cast<" << cpp_type(op.dtype) << "*>(v[" << v << "]), n);\n";
  }
  os << "}\n";
  return os.str();
}

// The headers the generated code includes: the CPU op headers and what they include.
const std::vector<std::pair<std::string, std::string>>& headers() {
  static const auto* h = [] {
    auto* v = new std::vector<std::pair<std::string, std::string>>;
    for (const auto& f : kernels::embedded_headers()) {
      if (f.path.starts_with("kiln/backend/cpu/") || f.path == "kiln/scalar_cast.h" ||
          f.path == "kiln/half_types.h")
        v->emplace_back(std::string(f.path), std::string(f.text));
    }
    return v;
  }();
  return *h;
}

std::vector<std::string> flags() {
  std::vector<std::string> f = {"-std=c++20",      "-O3",   "-fPIC", "-fvisibility=hidden",
                                "-fno-math-errno", "-pipe", "-g0"};
#if !defined(__OPTIMIZE__)
  // An unoptimized kiln (the asan preset's Debug build) contracts no a * b + c into an FMA
  // in its eager kernels; neither may the fused ones, whose results must equal them bit for bit.
  f.push_back("-ffp-contract=off");
#endif
  if (const char* extra = std::getenv("KILN_CXXFLAGS")) {
    std::istringstream in(extra);
    for (std::string w; in >> w;) f.push_back(w);
  }
  return f;
}

std::string cache_key(const std::string& source, const kernels::HostCompiler& cc,
                      const std::vector<std::string>& fl) {
  kernels::Sha256 h;
  h.field("kiln-fused-cpu").field(KILN_VERSION).field(std::to_string(kAbi)).field(cc.identity);
  for (const auto& [path, text] : headers()) h.field(path).field(text);
  for (const auto& f : fl) h.field(f);
  h.field(source);
  return kernels::Sha256::hex(h.digest());
}

RunFn load(const std::string& object, const std::string& what) {
  void* handle = kernels::load_shared_object(object, what);
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "kiln_fused_abi"));
  auto run = reinterpret_cast<RunFn>(dlsym(handle, "kiln_fused_run"));
  if (!abi || !run || abi() != kAbi)
    throw std::runtime_error("[compile] The kernel " + what + " lacks kiln's entry points.");
  return run;
}

bool debug_cache() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_DEBUG");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

// Compiles (or finds) the kernel of `source`. Never throws: a kernel that cannot be built is
// returned without its function, after a warning.
std::shared_ptr<CpuKernel> build(const std::string& source, const std::string& name) {
  struct Slot {
    std::mutex mu;
    std::shared_ptr<CpuKernel> kernel;
  };
  static auto* mu = new std::mutex;
  static auto* slots = new std::unordered_map<std::string, std::shared_ptr<Slot>>;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lk(*mu);
    auto& s = (*slots)[source];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard lk(slot->mu);
  if (slot->kernel) return slot->kernel;
  auto kernel = std::make_shared<CpuKernel>();
  kernel->source = source;
  slot->kernel = kernel;
  if (detail::compile_debug()) std::cerr << "[kiln compile] CPU kernel " << name << ":\n" << source;
  std::string what;
  try {
    const kernels::HostCompiler cc = kernels::host_compiler();
    const auto fl = flags();
    const std::string key = cache_key(source, cc, fl);
    what = "'" + name + "' (" + key.substr(0, 16) + ")";
    const std::string dir = kernels::cache_dir();
    const std::string path = dir.empty() ? "" : dir + "/" + key + ".kfo";
    if (!dir.empty()) {
      kernels::Entry e = kernels::read_entry(path, kMagic, key);
      if (e.status == kernels::EntryStatus::ok) {
        kernels::ByteReader r{e.payload};
        std::string identity = r.str(), object = r.str();
        if (r.at_end() && identity == cc.identity) {
          kernel->run = load(object, what);
          if (debug_cache()) std::fprintf(stderr, "[kiln compile] disk hit %s\n", what.c_str());
          return kernel;
        }
      }
      if (e.status != kernels::EntryStatus::missing) {
        std::fprintf(stderr, "[kiln] Fused kernel cache entry %s is corrupt (%s); recompiling.\n",
                     path.c_str(), e.reason.c_str());
      }
    }
    if (debug_cache()) std::fprintf(stderr, "[kiln compile] compiling %s\n", what.c_str());
    kernels::HostCompileResult res =
        kernels::compile_shared_object(cc, "kiln_fused", source, headers(), fl);
    if (!res.ok) {
      kernels::warn_once("compile: the fused kernel " + name +
                         " does not compile with the host compiler; it runs unfused. Compiler "
                         "messages:\n" +
                         res.log + "\nSource:\n" + source);
      return kernel;
    }
    kernel->run = load(res.object, what);
    if (!dir.empty()) {
      kernels::ByteWriter w;
      w.str(cc.identity);
      w.str(res.object);
      std::string why;
      if (!kernels::write_entry(dir, path, kMagic, key, w.out, why) ||
          !kernels::write_file_atomic(dir, dir + "/" + key + ".cpp", source, why)) {
        kernels::warn_once("compile: fused kernel disk cache write failed: " + why + ".");
      }
    }
  } catch (const std::exception& e) {
    kernel->run = nullptr;
    kernels::warn_once(std::string("compile: the fused kernel ") + name + " cannot be built (" +
                       e.what() + "); it runs unfused.");
  }
  return kernel;
}

// ---------------------------------------------------------------- running

// Which buffer each tape value uses in a block.
struct Plan {
  int num_slots = 0;           // scratch blocks for intermediate values
  std::vector<int> slot;       // per value: scratch slot, or -1
  std::vector<int> output_of;  // per value: the output it is, or -1
};

Plan plan(const FusedTape& t) {
  const int first = t.first_op(), nv = first + static_cast<int>(t.ops.size());
  Plan p;
  p.slot.assign(nv, -1);
  p.output_of.assign(nv, -1);
  for (size_t o = 0; o < t.outputs.size(); ++o)
    if (p.output_of[t.outputs[o]] < 0) p.output_of[t.outputs[o]] = static_cast<int>(o);
  std::vector<int> last_use(nv, -1);
  for (size_t k = 0; k < t.ops.size(); ++k)
    for (int a : t.ops[k].args) last_use[a] = static_cast<int>(k);
  std::vector<int> free_slots;
  for (size_t k = 0; k < t.ops.size(); ++k) {
    const int v = first + static_cast<int>(k);
    if (p.output_of[v] < 0) {
      if (free_slots.empty()) {
        p.slot[v] = p.num_slots++;
      } else {
        p.slot[v] = free_slots.back();
        free_slots.pop_back();
      }
    }
    // Freed after the output is placed: an op never writes the block it reads.
    for (int a : t.ops[k].args) {
      if (a >= first && p.slot[a] >= 0 && last_use[a] == static_cast<int>(k) &&
          std::find(free_slots.begin(), free_slots.end(), p.slot[a]) == free_slots.end())
        free_slots.push_back(p.slot[a]);
    }
  }
  return p;
}

// How the kernel reads one input.
struct InputView {
  enum class Kind { unused, dense, fill, gather } kind = Kind::unused;
  const char* base = nullptr;  // first element
  size_t itemsize = 0;
  Shape shape;  // gather: collapsed shape and strides (elements)
  Strides strides;
  std::vector<char> fill;  // fill: kBlock copies of the element
  int slot = -1;           // gather: its scratch slot
};

// Collapses the dimensions of a row-major walk over `shape` reading with `strides`.
void collapse(Shape& shape, Strides& strides) {
  Shape s;
  Strides st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!s.empty() && st.back() == strides[d] * shape[d]) {
      s.back() *= shape[d];
      st.back() = strides[d];
    } else {
      s.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (s.empty()) {
    s.push_back(1);
    st.push_back(0);
  }
  shape = std::move(s);
  strides = std::move(st);
}

template <typename T>
void gather_typed(const T* base, const Shape& shape, const Strides& st, int64_t off, int64_t len,
                  T* dst) {
  const int nd = static_cast<int>(shape.size());
  int64_t small[16];
  std::vector<int64_t> big;
  int64_t* idx = small;
  if (nd > 16) {
    big.resize(nd);
    idx = big.data();
  }
  int64_t loc = 0, rem = off;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    loc += idx[d] * st[d];
  }
  const int64_t inner = shape[nd - 1], s = st[nd - 1];
  int64_t k = 0;
  while (k < len) {
    const int64_t run = std::min(inner - idx[nd - 1], len - k);
    for (int64_t j = 0; j < run; ++j) dst[k + j] = base[loc + j * s];
    k += run;
    loc += run * s;
    idx[nd - 1] += run;
    for (int d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      loc -= shape[d] * st[d];
      idx[d] = 0;
      ++idx[d - 1];
      loc += st[d - 1];
    }
  }
}

void gather(const InputView& in, int64_t off, int64_t len, void* dst) {
  switch (in.itemsize) {
    case 1:
      return gather_typed(reinterpret_cast<const uint8_t*>(in.base), in.shape, in.strides, off, len,
                          static_cast<uint8_t*>(dst));
    case 2:
      return gather_typed(reinterpret_cast<const uint16_t*>(in.base), in.shape, in.strides, off,
                          len, static_cast<uint16_t*>(dst));
    case 4:
      return gather_typed(reinterpret_cast<const uint32_t*>(in.base), in.shape, in.strides, off,
                          len, static_cast<uint32_t*>(dst));
    default:
      return gather_typed(reinterpret_cast<const uint64_t*>(in.base), in.shape, in.strides, off,
                          len, static_cast<uint64_t*>(dst));
  }
}

struct CpuState {
  std::shared_ptr<CpuKernel> kernel;
  Plan plan;
};

}  // namespace

void Compiled::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_cpu_on(inputs, outputs);
}

void CompiledGroup::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const std::span<const array> in(inputs);
  const std::span<array> out(outputs);
  for (size_t m = 0; m < members().size(); ++m) {
    members()[m]->eval_cpu_on(
        in.subspan(input_offset(m), input_offset(m + 1) - input_offset(m)),
        out.subspan(output_offset(m), output_offset(m + 1) - output_offset(m)));
  }
}

void Compiled::eval_cpu_on(std::span<const array> inputs, std::span<array> outputs) {
  auto state = backend_state<CpuState>(0, [&] {
    auto s = std::make_shared<CpuState>();
    s->kernel = build(generate(*this), name());
    s->plan = plan(tape());
    return s;
  });
  const Shape shape = outputs[0].shape();
  if (!state->kernel->run) {
    detail::count_compiled_run(true);
    auto res = run_unfused({inputs.begin(), inputs.end()}, shape);
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(res[i]);
    return;
  }
  detail::count_compiled_run(false);
  const FusedTape& t = tape();
  const Plan& p = state->plan;
  const int64_t n = static_cast<int64_t>(outputs[0].size());

  // Outputs: row-contiguous, in the buffer of a donated input where one matches.
  std::vector<int> donated(inputs.size(), -1);  // the output holding the input's buffer
  for (size_t o = 0; o < outputs.size(); ++o) {
    array& out = outputs[o];
    bool done = false;
    for (size_t i = 0; i < inputs.size() && !done && n > 0; ++i) {
      const array& in = inputs[i];
      if (donated[i] < 0 && !t.shape_only[i] && in.is_donatable() && in.flags().row_contiguous &&
          in.shape() == shape && in.itemsize() == out.itemsize()) {
        out.move_shared_buffer(in);
        donated[i] = static_cast<int>(o);
        done = true;
      }
    }
    if (!done) out.set_data(Storage::host(out.nbytes()));
  }
  if (n == 0) return;

  // Inputs: dense where they are row-contiguous in the output's shape (unless donated: the
  // outputs overwrite them block by block), one repeated element, or gathered.
  int num_slots = p.num_slots;
  std::vector<InputView> views(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array& in = inputs[i];
    InputView& v = views[i];
    if (t.shape_only[i]) continue;
    v.itemsize = in.itemsize();
    if (donated[i] >= 0) {
      // Its buffer is now an output's, overwritten block by block: copied to scratch first.
      v.kind = InputView::Kind::gather;
      v.base = static_cast<const char*>(outputs[donated[i]].data<void>());
      v.shape = {static_cast<int32_t>(n)};
      v.strides = {1};
      v.slot = num_slots++;
      continue;
    }
    v.base = static_cast<const char*>(in.data<void>());
    if (in.flags().row_contiguous && in.shape() == shape) {
      v.kind = InputView::Kind::dense;
    } else if (in.data_size() == 1) {
      v.kind = InputView::Kind::fill;
      v.fill.resize(kBlock * v.itemsize);
      for (int64_t k = 0; k < kBlock; ++k)
        std::memcpy(v.fill.data() + k * v.itemsize, v.base, v.itemsize);
    } else {
      v.kind = InputView::Kind::gather;
      const size_t added = shape.size() - in.ndim();
      v.shape = shape;
      v.strides.assign(shape.size(), 0);
      for (size_t d = 0; d < in.ndim(); ++d)
        if (in.shape()[d] == shape[d + added]) v.strides[d + added] = in.strides()[d];
      collapse(v.shape, v.strides);
      v.slot = num_slots++;
    }
  }
  std::vector<char*> out_base;
  for (auto& out : outputs) out_base.push_back(static_cast<char*>(out.data<void>()));

  const RunFn run = state->kernel->run;
  const int first = t.first_op();
  const int nv = first + static_cast<int>(t.ops.size());
  cpu::parallel_for(n, cpu::kElementwiseGrain, [&](size_t begin, size_t end) {
    std::vector<uint64_t> scratch(static_cast<size_t>(num_slots) * kBlock);
    std::vector<void*> ptr(nv, nullptr);
    auto slot_ptr = [&](int s) { return static_cast<void*>(scratch.data() + s * kBlock); };
    for (int v = first; v < nv; ++v)
      if (p.slot[v] >= 0) ptr[v] = slot_ptr(p.slot[v]);
    for (int64_t off = static_cast<int64_t>(begin); off < static_cast<int64_t>(end);
         off += kBlock) {
      const int64_t len = std::min<int64_t>(kBlock, static_cast<int64_t>(end) - off);
      for (size_t i = 0; i < views.size(); ++i) {
        const InputView& v = views[i];
        switch (v.kind) {
          case InputView::Kind::unused:
            break;
          case InputView::Kind::dense:
            ptr[i] = const_cast<char*>(v.base) + off * static_cast<int64_t>(v.itemsize);
            break;
          case InputView::Kind::fill:
            ptr[i] = const_cast<char*>(v.fill.data());
            break;
          case InputView::Kind::gather:
            ptr[i] = slot_ptr(v.slot);
            gather(v, off, len, ptr[i]);
            break;
        }
      }
      for (int v = first; v < nv; ++v) {
        const int o = p.output_of[v];
        if (o >= 0) ptr[v] = out_base[o] + off * static_cast<int64_t>(outputs[o].itemsize());
      }
      run(ptr.data(), static_cast<long>(len));
    }
  });
  // Outputs listed twice (the same value) share the first one's buffer.
  for (size_t o = 0; o < outputs.size(); ++o) {
    const int first_o = p.output_of[t.outputs[o]];
    if (first_o != static_cast<int>(o)) outputs[o].copy_shared_buffer(outputs[first_o]);
  }
}

}  // namespace kiln
