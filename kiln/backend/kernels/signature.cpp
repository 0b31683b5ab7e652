// Source generation for custom kernels: which parameters a body uses and the generated
// translation unit for either target (see signature.h); the Metal text rewriting is in
// body_rewrite.cpp, KernelProgram and ParamBlock in program.cpp.
#include "kiln/backend/kernels/signature.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string_view>

#include "kiln/backend/kernels/body_rewrite.h"
#include "kiln/backend/kernels/embedded.h"
#include "kiln/utils.h"

namespace kiln::kernels {

namespace {

using namespace detail;

// ---------------------------------------------------------------- types and names

// The C++ spelling of a dtype in generated code (inside namespace kiln_user).
std::string type_name(Dtype d) {
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
      return "float16_t";
    case Dtype::Val::bfloat16:
      return "bfloat16_t";
    case Dtype::Val::float32:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::complex64:
      return "complex64_t";
  }
  return "void";
}

// The same type named from the global namespace (for name expressions).
std::string qualified_type_name(Dtype d) {
  std::string t = type_name(d);
  if (d == float16 || d == bfloat16 || d == complex64) return "kiln_user::" + t;
  return t;
}

std::string template_value(const fast::TemplateArg& v, bool qualified) {
  if (const int* i = std::get_if<int>(&v)) {
    // INT_MIN as a literal would be the negation of a too-large int.
    if (*i == -2147483647 - 1) return "(-2147483647 - 1)";
    return std::to_string(*i);
  }
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  Dtype d = std::get<Dtype>(v);
  return qualified ? qualified_type_name(d) : type_name(d);
}

const char* template_kind(const fast::TemplateArg& v) {
  if (std::holds_alternative<int>(v)) return "int";
  if (std::holds_alternative<bool>(v)) return "bool";
  return "typename";
}

const char* op_tag(fast::KernelFlavour f) {
  return f == fast::KernelFlavour::metal ? "metal_kernel" : "cuda_kernel";
}

// Content hash naming modules: two FNV-1a lanes with different offsets (128 bits). Only a
// name: the JIT's cache key is a SHA-256 over the same source.
std::string content_hash(std::string_view s) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : s) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = hex[(a >> (60 - 4 * i)) & 15];
    out[16 + i] = hex[(b >> (60 - 4 * i)) & 15];
  }
  return out;
}

std::string ensure_newline(std::string s) {
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

size_t count_lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Words that mark block synchronization or warp collectives (they make the CPU path run
// threads as fibers).
bool is_barrier_word(std::string_view w) {
  return w == "threadgroup_barrier" || w == "__syncthreads" || w == "__syncthreads_count" ||
         w == "__syncthreads_and" || w == "__syncthreads_or" || w == "__barrier_sync";
}
bool is_warp_word(std::string_view w) {
  static const char* exact[] = {"__ballot_sync",
                                "__any_sync",
                                "__all_sync",
                                "__activemask",
                                "__syncwarp",
                                "__match_any_sync",
                                "__match_all_sync",
                                "__uni_sync",
                                "simdgroup_barrier",
                                "simdgroup_load",
                                "simdgroup_store",
                                "simdgroup_multiply",
                                "simdgroup_multiply_accumulate"};
  for (const char* e : exact)
    if (w == e) return true;
  return w.starts_with("simd_") || w.starts_with("quad_") || w.starts_with("__shfl") ||
         w.starts_with("__reduce_");
}

// Names that only the CUDA flavour's full prelude (Metal layer, half and complex types)
// provides; a kernel that uses none of them, and no half or complex dtype, gets the light
// prelude.
bool is_metal_layer_word(std::string_view w) {
  static const char* exact[] = {"metal",        "float16_t",      "bfloat16_t",
                                "complex64_t",  "elem_to_loc_2",  "elem_to_loc_3",
                                "elem_to_loc_2_nd", "elem_to_loc_3_nd", "half",
                                "half2",        "nv_bfloat16",    "nv_bfloat162",
                                "hexp",         "hexp2",          "hlog",
                                "hlog2",        "hlog10",         "hsqrt",
                                "hrsqrt",       "hrcp",           "hsin",
                                "hcos",         "hfloor",         "hceil",
                                "htrunc",       "hrint",          "complex"};
  for (const char* e : exact)
    if (w == e) return true;
  // cuda_fp16.h / cuda_bf16.h names: __half, __hadd, __float2half, __nv_bfloat16, ...
  return w.starts_with("__h") || w.starts_with("__nv_bfloat") || w.find("half") != w.npos ||
         w.find("bfloat16") != w.npos;
}

// cooperative_groups' names that make threads meet (barriers, shuffles, votes): a CPU kernel
// that uses them runs its threads as fibers. this_grid().thread_rank() alone does not.
bool is_cg_collective_word(std::string_view w) {
  static const char* exact[] = {"this_thread_block", "thread_block",     "tiled_partition",
                                "thread_block_tile", "coalesced_threads", "coalesced_group",
                                "thread_group",      "sync",              "reduce",
                                "inclusive_scan",    "exclusive_scan",    "memcpy_async",
                                "wait",              "wait_prior"};
  for (const char* e : exact)
    if (w == e) return true;
  return false;
}

// Headers a CUDA body may include whose declarations kiln's CUDA prelude already provides
// (cooperative groups, libcu++, half types, MLX's device utilities): their #include goes.
bool is_provided_cuda_include(std::string_view line) {
  for (std::string_view h : {"<cooperative_groups", "\"cooperative_groups", "<cuda/std/",
                             "\"cuda/std/", "<cuda_fp16.h>", "<cuda_bf16.h>", "\"cuda_fp16.h\"",
                             "\"cuda_bf16.h\"", "mlx/backend/cuda/device/"}) {
    if (line.find(h) != std::string_view::npos) return true;
  }
  return false;
}

// What NVRTC's -minimal leaves out: the CUDA runtime's device API and types (cuda*), texture
// and surface functions; an included header may need any of them.
bool is_runtime_word(std::string_view w) {
  if (w.starts_with("cuda")) return true;
  for (std::string_view p : {"tex", "surf"}) {
    if (!w.starts_with(p)) continue;
    std::string_view rest = w.substr(p.size());
    if (rest.starts_with("1D") || rest.starts_with("2D") || rest.starts_with("3D") ||
        rest.starts_with("Cubemap"))
      return true;
  }
  return false;
}
bool has_include(std::string_view s) {
  for (const Token& t : lex(s)) {
    if (t.kind != Tok::directive) continue;
    std::string_view d = s.substr(t.begin + 1, t.end - t.begin - 1);
    d.remove_prefix(std::min(d.find_first_not_of(" \t"), d.size()));
    if (d.starts_with("include") && !is_provided_cuda_include(d) &&
        d.find("<metal_") == std::string_view::npos &&
        d.find("mlx/backend/metal/kernels/") == std::string_view::npos)
      return true;
  }
  return false;
}

// The CUDA flavour's source with the #include lines of headers kiln provides dropped (their
// newlines kept, so #line numbers stay right).
std::string drop_provided_includes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t done = 0;
  for (const Token& t : lex(s)) {
    if (t.kind != Tok::directive) continue;
    std::string_view line = s.substr(t.begin, t.end - t.begin);
    if (line.find("include") == std::string_view::npos || !is_provided_cuda_include(line)) continue;
    out.append(s.substr(done, t.begin - done));
    out.append(std::count(line.begin(), line.end(), '\n'), '\n');
    done = t.end;
  }
  out.append(s.substr(done));
  return out;
}

bool is_half_or_complex(Dtype d) {
  return d == float16 || d == bfloat16 || d == complex64;
}

constexpr int kMaxNdim = fast::kMaxNdim;

}  // namespace

// ---------------------------------------------------------------- public functions

const std::vector<std::pair<std::string, std::string>>& metal_attributes() {
  static const std::vector<std::pair<std::string, std::string>> attrs = {
      {"dispatch_quadgroups_per_threadgroup", "uint"},
      {"dispatch_simdgroups_per_threadgroup", "uint"},
      {"dispatch_threads_per_threadgroup", "uint3"},
      {"grid_origin", "uint3"},
      {"grid_size", "uint3"},
      {"quadgroup_index_in_threadgroup", "uint"},
      {"quadgroups_per_threadgroup", "uint"},
      {"simdgroup_index_in_threadgroup", "uint"},
      {"simdgroups_per_threadgroup", "uint"},
      {"thread_execution_width", "uint"},
      {"thread_index_in_quadgroup", "uint"},
      {"thread_index_in_simdgroup", "uint"},
      {"thread_index_in_threadgroup", "uint"},
      {"thread_position_in_grid", "uint3"},
      {"thread_position_in_threadgroup", "uint3"},
      {"threadgroup_position_in_grid", "uint3"},
      {"threadgroups_per_grid", "uint3"},
      {"threads_per_grid", "uint3"},
      {"threads_per_simdgroup", "uint"},
      {"threads_per_threadgroup", "uint3"},
  };
  return attrs;
}

void check_spec(const KernelSpec& spec, const char* op) {
  if (!is_identifier(spec.name)) {
    throw std::invalid_argument(msg("[", op, "] The kernel name '", spec.name,
                                    "' must be an identifier (letters, digits, _)."));
  }
  std::set<std::string> seen;
  auto check = [&](const std::string& n, const char* what) {
    if (!is_identifier(n)) {
      throw std::invalid_argument(msg("[", op, "] The ", what, " name '", n, "' of kernel '",
                                      spec.name, "' must be an identifier (letters, digits, _)."));
    }
    if (n.starts_with("kiln_")) {
      throw std::invalid_argument(msg("[", op, "] The ", what, " name '", n, "' of kernel '",
                                      spec.name, "' uses the reserved prefix 'kiln_'."));
    }
    if (!seen.insert(n).second) {
      throw std::invalid_argument(
          msg("[", op, "] The name '", n, "' is used twice in kernel '", spec.name, "'."));
    }
  };
  for (const auto& n : spec.input_names) check(n, "input");
  for (const auto& n : spec.output_names) check(n, "output");
  if (spec.output_names.empty()) {
    throw std::invalid_argument(
        msg("[", op, "] Kernel '", spec.name, "' needs at least one output name."));
  }
  if (spec.shared_memory < 0) {
    throw std::invalid_argument(msg("[", op, "] shared_memory must be >= 0; got ",
                                    spec.shared_memory, " for kernel '", spec.name, "'."));
  }
}

BodyUsage analyze(const KernelSpec& spec) {
  BodyUsage u;
  const auto ids = identifiers(spec.source);
  for (const auto& n : spec.input_names) {
    u.input_shape.push_back(ids.count(n + "_shape") > 0);
    u.input_strides.push_back(ids.count(n + "_strides") > 0);
    u.input_ndim.push_back(ids.count(n + "_ndim") > 0);
  }
  if (spec.flavour == fast::KernelFlavour::metal) {
    for (const auto& [attr, type] : metal_attributes())
      if (ids.count(attr)) u.attributes.push_back(attr);
  }
  bool cg_collectives = false;
  for (const std::string* text : {&spec.source, &spec.header}) {
    for (const auto& w : text == &spec.source ? ids : identifiers(*text)) {
      u.barriers = u.barriers || is_barrier_word(w);
      u.warp_ops = u.warp_ops || is_warp_word(w);
      u.metal_names = u.metal_names || is_metal_layer_word(w);
      u.runtime_names = u.runtime_names || is_runtime_word(w);
      u.cooperative_groups = u.cooperative_groups || w == "cooperative_groups" || w == "cg";
      cg_collectives = cg_collectives || is_cg_collective_word(w);
      u.prints = u.prints || w == "printf" || w == "os_log" || w == "os_log_default";
    }
    u.runtime_names = u.runtime_names || has_include(*text);
  }
  if (spec.flavour != fast::KernelFlavour::cuda) u.cooperative_groups = false;
  if (u.cooperative_groups && cg_collectives) u.barriers = u.warp_ops = true;
  return u;
}

GeneratedKernel generate(const KernelSpec& spec, const KernelInstance& inst, Target target) {
  const char* op = op_tag(spec.flavour);
  const bool metal = spec.flavour == fast::KernelFlavour::metal;
  const size_t nin = spec.input_names.size(), nout = spec.output_names.size();
  if (inst.input_dtypes.size() != nin || inst.input_scalar.size() != nin ||
      inst.output_dtypes.size() != nout) {
    throw std::invalid_argument(msg("[", op, "] Kernel '", spec.name, "' has ", nin, " inputs and ",
                                    nout, " outputs; got ", inst.input_dtypes.size(),
                                    " input dtypes and ", inst.output_dtypes.size(),
                                    " output dtypes."));
  }
  std::set<std::string> names(spec.input_names.begin(), spec.input_names.end());
  names.insert(spec.output_names.begin(), spec.output_names.end());
  for (const auto& [tname, value] : inst.template_args) {
    if (!is_identifier(tname) || tname.starts_with("kiln_")) {
      throw std::invalid_argument(msg("[", op, "] The template argument name '", tname,
                                      "' of kernel '", spec.name,
                                      "' must be an identifier without the prefix 'kiln_'."));
    }
    if (!names.insert(tname).second) {
      throw std::invalid_argument(msg("[", op, "] The template argument name '", tname,
                                      "' of kernel '", spec.name,
                                      "' repeats another template argument, input or output."));
    }
  }

  if (metal) {
    check_metal_features(spec, spec.header, "header");
    check_metal_features(spec, spec.source, "source");
  }

  GeneratedKernel g;
  g.usage = analyze(spec);
  const BodyUsage& u = g.usage;
  const std::string kernel = "custom_kernel_" + spec.name;
  // NVRTC spends most of a small kernel's compile time parsing the Metal layer; a CUDA body
  // that cannot name any of it on the GPU is compiled without it.
  bool light = !metal && target == Target::gpu && !u.metal_names;
  for (Dtype d : inst.input_dtypes) light = light && !is_half_or_complex(d);
  for (Dtype d : inst.output_dtypes) light = light && !is_half_or_complex(d);
  for (const auto& [tname, value] : inst.template_args)
    light = light &&
            !(std::holds_alternative<Dtype>(value) && is_half_or_complex(std::get<Dtype>(value)));
  const std::string flavour_header =
      target == Target::gpu
          ? (metal   ? "kiln/backend/kernels/metal/gpu.h"
             : light ? "kiln/backend/kernels/cuda_gpu_lite.h"
                     : "kiln/backend/kernels/cuda_gpu.h")
          : (metal ? "kiln/backend/kernels/metal/cpu.h" : "kiln/backend/kernels/cuda_cpu.h");

  // Metal bodies: conditionals follow Metal's conversions where a half type may meet another
  // type (the rewrite costs compile time, so only then).
  bool halves = false;
  if (metal) {
    for (Dtype d : inst.input_dtypes) halves = halves || d == float16 || d == bfloat16;
    for (Dtype d : inst.output_dtypes) halves = halves || d == float16 || d == bfloat16;
    for (const auto& [tname, value] : inst.template_args) {
      halves = halves || (std::holds_alternative<Dtype>(value) &&
                          (std::get<Dtype>(value) == float16 || std::get<Dtype>(value) == bfloat16));
    }
    halves = halves || mentions_half_types(spec.source) || mentions_half_types(spec.header);
  }
  auto metal_text = [&](const std::string& t) {
    std::string r = rewrite_metal(t);
    return halves ? rewrite_conditionals(r) : r;
  };

  std::string src;
  src += "// Generated by kiln for the custom kernel '" + spec.name + "' (" +
         (metal ? "Metal" : "CUDA") + " flavour, " + (target == Target::gpu ? "GPU" : "CPU") +
         "): do not edit.\n";
  // The math mode changes the compiler's flags, not the source: naming it here gives each
  // mode its own module name and cache entries.
  if (spec.math_mode != fast::MathMode::safe)
    src += std::string("// math mode: ") + fast::math_mode_name(spec.math_mode) + "\n";
  src += "#include \"" + flavour_header + "\"\n";
  if (u.cooperative_groups) src += "#include \"kiln/backend/kernels/cuda/cg.h\"\n";
  if (target == Target::gpu) {
    // What the body and header name brings in the parts of the prelude they need.
    auto ids = identifiers(spec.source);
    for (const auto& w : identifiers(spec.header)) ids.insert(w);
    bool complex_dtype = false;
    for (Dtype d : inst.input_dtypes) complex_dtype = complex_dtype || d == complex64;
    for (Dtype d : inst.output_dtypes) complex_dtype = complex_dtype || d == complex64;
    for (const auto& [tname, value] : inst.template_args)
      complex_dtype = complex_dtype ||
                      (std::holds_alternative<Dtype>(value) && std::get<Dtype>(value) == complex64);
    for (const OnDemandHeader& h : on_demand_headers()) {
      if ((h.kind != 0 && metal) || (h.kind != 2 && light)) continue;
      bool needed = !metal && complex_dtype && h.path.ends_with("cuda/complex.h");
      for (const auto& w : ids) {
        for (const auto& p : h.patterns) needed = needed || matches(w, p);
        if (needed) break;
      }
      if (needed) src += "#include \"" + h.path + "\"\n";
    }
  }
  src += "\n";
  src += "namespace kiln_user {\n";
  src += metal ? "KILN_METAL_USING\n" : "KILN_CUDA_USING\n";
  if (u.cooperative_groups) src += "namespace cg = cooperative_groups;\n";
  if (!spec.header.empty()) {
    src += "#line 1 \"header\"\n";
    src += ensure_newline(metal ? metal_text(spec.header) : drop_provided_includes(spec.header));
  }
  src += "#line " + std::to_string(count_lines(src) + 2) + " \"generated\"\n";

  // The parameter struct.
  std::string params = "struct alignas(8) kiln_params {\n";
  params += "  uint32_t grid[3];\n  uint32_t threadgroup[3];\n  uint32_t block_offset[3];\n";
  params += "  uint32_t reserved_;\n";
  const std::string maxd = std::to_string(kMaxNdim);
  // MLX's CUDA bodies get shapes and strides as arrays (x_shape.data(), x_shape[i]) that
  // also convert to pointers; Metal bodies get pointers, as in MLX.
  for (size_t i = 0; i < nin; ++i) {
    if (!u.input_strides[i]) continue;
    params += metal ? "  int64_t " + spec.input_names[i] + "_strides[" + maxd + "];\n"
                    : "  kiln_cuda::Strides " + spec.input_names[i] + "_strides;\n";
  }
  for (size_t i = 0; i < nin; ++i) {
    if (!u.input_shape[i]) continue;
    params += metal ? "  int32_t " + spec.input_names[i] + "_shape[" + maxd + "];\n"
                    : "  kiln_cuda::Shape " + spec.input_names[i] + "_shape;\n";
  }
  for (size_t i = 0; i < nin; ++i)
    if (u.input_ndim[i]) params += "  int32_t " + spec.input_names[i] + "_ndim;\n";
  params += "};\n";
  params += "static_assert(sizeof(kiln_params) == " + std::to_string(param_block_size(u)) +
            ", \"kiln_params must match the host's layout\");\n\n";
  src += params;

  // The signature.
  std::string sig;
  if (!inst.template_args.empty()) {
    sig += "template <";
    for (size_t i = 0; i < inst.template_args.size(); ++i) {
      const auto& [tname, value] = inst.template_args[i];
      sig += std::string(i ? ", " : "") + template_kind(value) + " " + tname;
    }
    sig += ">\n";
  }
  sig += "__global__ void " + kernel + "(\n";
  std::string prologue;
  for (size_t i = 0; i < nin; ++i) {
    const std::string& n = spec.input_names[i];
    const std::string t = type_name(inst.input_dtypes[i]);
    if (inst.input_scalar[i]) {
      sig += "    const " + t + "* __restrict__ kiln_in_" + n + ",\n";
      // CUDA: a value that also indexes as MLX's pointer (n[0]); Metal: a reference.
      prologue += metal ? "  const " + t + "& " + n + " = *kiln_in_" + n + ";\n"
                        : "  const kiln_cuda::scalar_input<" + t + "> " + n + "{kiln_in_" + n +
                              "};\n";
    } else {
      sig += "    const " + t + "* __restrict__ " + n + ",\n";
    }
  }
  for (size_t i = 0; i < nout; ++i) {
    const std::string t = type_name(inst.output_dtypes[i]);
    if (spec.atomic_outputs)
      sig += "    " + (metal ? "atomic<" + t + ">" : t) + "* " + spec.output_names[i] + ",\n";
    else
      sig += "    " + t + "* __restrict__ " + spec.output_names[i] + ",\n";
  }
  sig += "    const __grid_constant__ kiln_params kiln_p) {\n";
  for (const auto& attr : u.attributes) {
    for (const auto& [name, type] : metal_attributes())
      if (name == attr)
        prologue += "  " + type + " " + attr + " = kiln_attr::" + attr + "(kiln_p);\n";
  }
  for (size_t i = 0; i < nin; ++i) {
    const std::string& n = spec.input_names[i];
    if (u.input_shape[i]) {
      prologue += metal ? "  const int32_t* " + n + "_shape = kiln_p." + n + "_shape;\n"
                        : "  const kiln_cuda::Shape& " + n + "_shape = kiln_p." + n + "_shape;\n";
    }
    if (u.input_strides[i]) {
      prologue += metal
                      ? "  const int64_t* " + n + "_strides = kiln_p." + n + "_strides;\n"
                      : "  const kiln_cuda::Strides& " + n + "_strides = kiln_p." + n + "_strides;\n";
    }
    if (u.input_ndim[i]) prologue += "  const int " + n + "_ndim = kiln_p." + n + "_ndim;\n";
  }
  sig += prologue;
  g.signature = sig;

  src += sig;
  src += "#line 1 \"source\"\n";
  src += ensure_newline(metal ? metal_text(spec.source) : drop_provided_includes(spec.source));
  src += "#line " + std::to_string(count_lines(src) + 2) + " \"generated\"\n";
  src += "}\n";

  std::string targs;
  for (size_t i = 0; i < inst.template_args.size(); ++i)
    targs += std::string(i ? ", " : "") + template_value(inst.template_args[i].second, true);
  const std::string instantiation = kernel + (targs.empty() ? "" : "<" + targs + ">");

  if (target == Target::gpu) {
    src += "\n}  // namespace kiln_user\n";
    g.entry = "kiln_user::" + instantiation;
  } else {
    // One call of the kernel for the current thread, from the runtime's argument arrays.
    src += "\ninline void kiln_invoke(void* const* kiln_args, const void* kiln_params_ptr) {\n";
    src += "  " + instantiation + "(\n";
    for (size_t i = 0; i < nin; ++i)
      src += "      static_cast<const " + type_name(inst.input_dtypes[i]) + "*>(kiln_args[" +
             std::to_string(i) + "]),\n";
    for (size_t i = 0; i < nout; ++i) {
      std::string t = type_name(inst.output_dtypes[i]);
      if (spec.atomic_outputs && metal) t = "atomic<" + t + ">";
      src += "      static_cast<" + t + "*>(kiln_args[" + std::to_string(nin + i) + "]),\n";
    }
    src += "      *static_cast<const kiln_params*>(kiln_params_ptr));\n}\n";
    src += "\n}  // namespace kiln_user\n\n";
    src += "KILN_CPU_ENTRY(kiln_user::kiln_invoke)\n";
    g.entry = "kiln_user::kiln_invoke";
  }
  g.source = std::move(src);
  // The entry takes part: on the GPU, instances that differ only in template arguments share
  // the source but not the kernel a module is built with.
  g.hash = content_hash(g.source + '\n' + g.entry);
  (void)op;
  return g;
}

// ---------------------------------------------------------------- KernelInstance

bool KernelInstance::operator==(const KernelInstance& o) const {
  return input_dtypes == o.input_dtypes && input_scalar == o.input_scalar &&
         output_dtypes == o.output_dtypes && template_args == o.template_args;
}

std::string KernelInstance::key() const {
  std::string k;
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    k += type_to_name(input_dtypes[i]);
    k += input_scalar[i] ? "& " : " ";
  }
  k += "->";
  for (Dtype d : output_dtypes) k += " " + std::string(type_to_name(d));
  for (const auto& [n, v] : template_args) {
    k += " " + n + "=";
    k += std::holds_alternative<Dtype>(v)
             ? std::string("t:") + std::string(type_to_name(std::get<Dtype>(v)))
             : template_value(v, false);
  }
  return k;
}

}  // namespace kiln::kernels
