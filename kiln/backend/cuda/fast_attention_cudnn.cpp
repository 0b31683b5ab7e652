// scaled_dot_product_attention through cuDNN's fused attention: cudnn-frontend graphs (sdpa
// with softmax stats, sdpa_backward reading them), built once per problem and cached.
//
// Loading: the frontend runs in its dynamic-loading mode (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING):
// it calls cuDNN through `cudnn_frontend::cudnn_dlhandle`, which is set here to the
// libcudnn.so.9 that conv.cpp also loads (KILN_CUDNN_PATH, the system, or pip's
// nvidia/cudnn/lib), and calls the CUDA runtime through a libcudart it dlopen's by soname or
// CUDNN_FRONTEND_CUDART_LIB_NAME, which is set here (unless set already) to the libcudart
// found beside the toolkit or in pip's nvidia/cuda_runtime/lib. Nothing is linked.
// The frontend's headers are compiled with hidden visibility, so its inline functions never
// bind to another copy of the frontend in the process (PyTorch carries one).
//
// Decisions: a problem's graph is built on its first call; when cuDNN rejects it (validate,
// heuristics or check_support fail), the rejection is cached and kiln's kernels serve that
// problem from then on. The backward finds which forward ran from the forward's cached
// decision for the same inputs, so cuDNN's stats only ever reach cuDNN's backward.
#include "kiln/backend/cuda/fast_attention_cudnn.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/fast_common.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/fast_sdpa_backend.h"
#include "kiln/utils.h"

#if defined(KILN_HAVE_CUDNN_FRONTEND) && __has_include(<cudnn.h>) && \
    __has_include(<cudnn_frontend.h>) && __has_include(<cuda_runtime_api.h>)
#define KILN_SDPA_CUDNN 1
#endif

#ifdef KILN_SDPA_CUDNN
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <link.h>

// The standard headers the frontend uses, included first so they keep their own visibility.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <limits>
#include <list>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING 1
#define CUDNN_FRONTEND_SKIP_JSON_LIB 1
#pragma GCC visibility push(hidden)
#include <cudnn_frontend.h>
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;  // the frontend's handle on libcudnn (dynamic-loading mode)
}
#pragma GCC visibility pop
#endif

namespace kiln::fast::cudnn_sdpa {

#ifndef KILN_SDPA_CUDNN

std::string status() {
#if !__has_include(<cudnn.h>)
  return "kiln was built without cudnn.h";
#else
  return "kiln was built without the cudnn-frontend headers (scripts/fetch-deps.sh puts them "
         "under build/deps/cudnn_frontend)";
#endif
}

bool forward(const std::vector<array>&, std::vector<array>&, float, bool, gpu::DeviceStream&) {
  detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::forward_fallback);
  return false;
}

Backward backward(const std::vector<array>&, std::vector<array>&, float, bool, gpu::DeviceStream&) {
  detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward_fallback);
  return Backward::forward_was_kiln;
}

std::string validate_offline(Dtype, const Shape&, const Shape&, const Shape&, float, bool, int) {
  return status();
}

#else

namespace fe = cudnn_frontend;

namespace {

constexpr const char* kOp = "[scaled_dot_product_attention]";

// ---------------------------------------------------------------- loading

std::string load() {
  if (const char* off = std::getenv("KILN_CUDNN"); off && std::string(off) == "0") {
    return "cuDNN is disabled by KILN_CUDNN=0";
  }
  std::string why;
  void* h = gpu::open_library({"libcudnn.so.9", "libcudnn.so"}, "KILN_CUDNN_PATH",
                              gpu::nvidia_wheel_lib_dirs("cudnn"), why);
  if (!h) return "cuDNN (libcudnn.so.9) is not available: " + why;
  // The runtime of the toolkit kiln was built with first, then the other majors.
  const std::string major = std::to_string(CUDA_VERSION / 1000);
  std::vector<std::string> names{"libcudart.so." + major};
  for (const char* n : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if (n != names[0]) names.push_back(n);
  }
  std::vector<std::string> dirs;
  if (const char* home = std::getenv("CUDA_HOME")) dirs.push_back(std::string(home) + "/lib64");
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                        "/usr/local/cuda/targets/sbsa-linux/lib"}) {
    dirs.push_back(d);
  }
  for (const auto& d : gpu::nvidia_wheel_lib_dirs("cuda_runtime")) dirs.push_back(d);
  std::string why_rt;
  void* rt = gpu::open_library(names, "KILN_CUDART_PATH", dirs, why_rt);
  if (!rt) return "the CUDA runtime (libcudart.so) that cudnn-frontend needs is missing: " + why_rt;
  // The frontend dlopen's libcudart itself: point it at this one (a user's setting wins).
  link_map* lm = nullptr;
  if (dlinfo(rt, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) {
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", lm->l_name, 0);
  }
  fe::cudnn_dlhandle = h;
  try {
    const size_t v = fe::detail::get_backend_version();
    if (v < 90000) return msg("cuDNN ", v, " is older than 9.0, which the fused attention needs");
  } catch (const std::exception& e) {
    return std::string("cuDNN could not be queried: ") + e.what();
  }
  return "";
}

const std::string& load_status() {
  static const std::string s = load();
  return s;
}

bool log_decisions() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_SDPA_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// ---------------------------------------------------------------- tensors

/** q, k, v or dout as cuDNN reads it: feature stride 1, 16-byte aligned rows and start, no
 * zero stride (else a row-contiguous copy). Extent-1 dims get a non-overlapping stride, so
 * equal layouts share a key. */
struct Operand {
  CUdeviceptr ptr;
  std::vector<int64_t> dim, stride;
};

std::vector<int64_t> dense_strides(const std::vector<int64_t>& dim) {
  std::vector<int64_t> st(dim.size(), 1);
  for (int i = static_cast<int>(dim.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * dim[i + 1];
  return st;
}

Operand operand(const array& x, gpu::DeviceStream& s) {
  Operand o;
  o.dim.assign(x.shape().begin(), x.shape().end());
  o.ptr = gpu::device_address(x);
  o.stride.assign(x.strides().begin(), x.strides().end());
  const int64_t align = 16 / static_cast<int64_t>(x.dtype().size);
  bool ok = o.stride[3] == 1 && o.ptr % 16 == 0;
  for (int i = 2; i >= 0 && ok; --i) {
    if (o.dim[i] == 1) {
      int64_t span = 1;
      for (int j = i + 1; j < 4; ++j) span = std::max(span, o.dim[j] * o.stride[j]);
      o.stride[i] = span;
    }
    ok = o.stride[i] > 0 && o.stride[i] % align == 0;
  }
  if (!ok) {
    o.ptr = gpu::scratch(x.nbytes(), s);
    gpu::copy_to_row_contiguous(x, o.ptr, s);
    o.stride = dense_strides(o.dim);
  }
  return o;
}

std::shared_ptr<fe::graph::Tensor_attributes> tensor(fe::graph::Graph& g, const char* name,
                                                     int64_t uid, const std::vector<int64_t>& dim,
                                                     const std::vector<int64_t>& stride) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dim).set_stride(stride));
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

fe::DataType_t io_type(Dtype d) {
  return d == float16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16;
}

// kiln's causal mask is lower-right aligned (query i sees keys j <= i + L_k - L_q): cuDNN's
// bottom-right band. With L_q == L_k both alignments agree; the top-left one needs an older
// cuDNN, so it is used there.
template <typename Attributes>
void set_causal(Attributes& a, bool causal, int64_t Lq, int64_t Lk) {
  if (!causal) return;
  if (Lq == Lk) {
    a.set_causal_mask(true);
  } else {
    a.set_causal_mask_bottom_right(true);
  }
}

// ---------------------------------------------------------------- cache

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph;  // null: cuDNN rejected the problem
  int64_t workspace = 0;
  std::string why;  // the rejection
};

using Key = std::vector<int64_t>;

std::mutex& mutex() {
  static std::mutex m;
  return m;
}

/** The cuDNN handle of `s`'s device, bound to `s`; null when cudnnCreate fails there (kept:
 * that device's nodes then run kiln's kernels, forward and backward alike). Under mutex(). */
cudnnHandle_t handle(gpu::DeviceStream& s) {
  struct Device {
    cudnnHandle_t h = nullptr;
    bool tried = false;
  };
  static auto* devices = new std::map<int, Device>();
  Device& d = (*devices)[s.context().index()];
  if (!d.tried) {
    d.tried = true;
    const cudnnStatus_t st = fe::detail::create_handle(&d.h);
    if (st != CUDNN_STATUS_SUCCESS) {
      d.h = nullptr;
      std::cerr << kOp << " cudnnCreate failed on GPU " << s.context().index() << ": "
                << fe::detail::get_error_string(st) << " (" << static_cast<int>(st)
                << "); attention there runs on kiln's kernels" << std::endl;
    }
  }
  if (!d.h) return nullptr;
  const cudnnStatus_t st = fe::detail::set_stream(d.h, reinterpret_cast<cudaStream_t>(s.handle()));
  if (st != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(msg(kOp, " cudnnSetStream failed: ", fe::detail::get_error_string(st),
                                 " (", static_cast<int>(st), ")."));
  }
  return d.h;
}

std::string describe(const Key& k) {
  std::string s;
  for (size_t i = 0; i < k.size(); ++i) s += (i ? "," : "") + std::to_string(k[i]);
  return s;
}

/** The cached plan of `key`, built by `make` (which fills the graph) on first use. Under
 * mutex(). */
const Plan& plan(std::map<Key, Plan>& cache, const Key& key, cudnnHandle_t h, const char* what,
                 const std::function<void(fe::graph::Graph&)>& make) {
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Plan p;
  try {
    auto g = std::make_shared<fe::graph::Graph>();
    make(*g);
    fe::error_t e = g->build(h, {fe::HeurMode_t::A});
    if (e.is_good()) e = g->get_workspace_size(p.workspace);
    if (e.is_good()) {
      p.graph = std::move(g);
    } else {
      p.why = e.get_message();
    }
  } catch (const std::exception& ex) {
    p.why = ex.what();
  }
  if (log_decisions()) {
    std::cerr << kOp << " cuDNN " << what << " {" << describe(key) << "}: "
              << (p.graph ? "accepted" : "rejected (" + p.why + "); kiln's kernels serve it")
              << std::endl;
  }
  return cache.emplace(key, std::move(p)).first->second;
}

Key common_key(int device, Dtype d, float scale, bool causal, const Operand& q, const Operand& k,
               const Operand& v) {
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &scale, 4);
  Key key{device, static_cast<int64_t>(d.val), scale_bits, causal ? 1 : 0};
  for (const Operand* o : {&q, &k, &v}) {
    key.insert(key.end(), o->dim.begin(), o->dim.end());
    key.insert(key.end(), o->stride.begin(), o->stride.end());
  }
  return key;
}

std::map<Key, Plan>& forward_cache() {
  static auto* c = new std::map<Key, Plan>();
  return *c;
}
std::map<Key, Plan>& backward_cache() {
  static auto* c = new std::map<Key, Plan>();
  return *c;
}

/** The forward graph (training: it always writes the stats, the node's second output); O is
 * written with strides o_stride. */
void make_forward(fe::graph::Graph& g, Dtype d, float scale, bool causal, const Operand& q,
                  const Operand& k, const Operand& v, const std::vector<int64_t>& o_stride) {
  const int64_t B = q.dim[0], Hq = q.dim[1], Lq = q.dim[2], Lk = k.dim[2], Dv = v.dim[3];
  g.set_io_data_type(io_type(d))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = tensor(g, "Q", kQ, q.dim, q.stride);
  auto K = tensor(g, "K", kK, k.dim, k.stride);
  auto V = tensor(g, "V", kV, v.dim, v.stride);
  auto attrs = fe::graph::SDPA_attributes()
                   .set_name("kiln_sdpa")
                   .set_generate_stats(true)
                   .set_attn_scale(scale);
  set_causal(attrs, causal, Lq, Lk);
  auto [O, Stats] = g.sdpa(Q, K, V, attrs);
  O->set_output(true).set_uid(kO).set_dim({B, Hq, Lq, Dv}).set_stride(o_stride);
  Stats->set_output(true)
      .set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({B, Hq, Lq, 1})
      .set_stride({Hq * Lq, Lq, 1, 1});
}

/** The backward graph: dq, dk, dv (with strides d_stride[0..2]) from q, k, v, the forward's O
 * and stats, and dO. */
void make_backward(fe::graph::Graph& g, Dtype d, float scale, bool causal, const Operand& q,
                   const Operand& k, const Operand& v, const Operand& o, const Operand& dout,
                   const std::vector<int64_t> (&d_stride)[3]) {
  const int64_t B = q.dim[0], Hq = q.dim[1], Lq = q.dim[2], Lk = k.dim[2], Dv = v.dim[3];
  g.set_io_data_type(io_type(d))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto Q = tensor(g, "Q", kQ, q.dim, q.stride);
  auto K = tensor(g, "K", kK, k.dim, k.stride);
  auto V = tensor(g, "V", kV, v.dim, v.stride);
  auto O = tensor(g, "O", kO, {B, Hq, Lq, Dv}, o.stride);
  auto dO = tensor(g, "dO", kDO, dout.dim, dout.stride);
  auto Stats = tensor(g, "Stats", kStats, {B, Hq, Lq, 1}, {Hq * Lq, Lq, 1, 1});
  Stats->set_data_type(fe::DataType_t::FLOAT);
  auto attrs =
      fe::graph::SDPA_backward_attributes().set_name("kiln_sdpa_backward").set_attn_scale(scale);
  set_causal(attrs, causal, Lq, Lk);
  auto [dQ, dK, dV] = g.sdpa_backward(Q, K, V, O, dO, Stats, attrs);
  dQ->set_output(true).set_uid(kDQ).set_dim(q.dim).set_stride(d_stride[0]);
  dK->set_output(true).set_uid(kDK).set_dim(k.dim).set_stride(d_stride[1]);
  dV->set_output(true).set_uid(kDV).set_dim(v.dim).set_stride(d_stride[2]);
}

const Plan& forward_plan(Dtype d, float scale, bool causal, const Operand& q, const Operand& k,
                         const Operand& v, const std::vector<int64_t>& o_stride, cudnnHandle_t h,
                         int device) {
  Key key = common_key(device, d, scale, causal, q, k, v);
  key.insert(key.end(), o_stride.begin(), o_stride.end());
  return plan(forward_cache(), key, h, "forward",
              [&](fe::graph::Graph& g) { make_forward(g, d, scale, causal, q, k, v, o_stride); });
}

void* vp(CUdeviceptr p) {
  return reinterpret_cast<void*>(p);
}

void execute(const Plan& p, cudnnHandle_t h, std::unordered_map<int64_t, void*>& pack,
             gpu::DeviceStream& s, const char* what) {
  void* ws = p.workspace > 0 ? vp(gpu::scratch(static_cast<size_t>(p.workspace), s)) : nullptr;
  fe::error_t e;
  try {
    e = p.graph->execute(h, pack, ws);
  } catch (const std::exception& ex) {
    throw std::runtime_error(
        msg(kOp, " cuDNN's fused attention ", what, " failed to run: ", ex.what()));
  }
  if (e.is_bad()) {
    throw std::runtime_error(
        msg(kOp, " cuDNN's fused attention ", what, " failed to run: ", e.get_message()));
  }
}

}  // namespace

std::string status() {
  return load_status();
}

bool forward(const std::vector<array>& in, std::vector<array>& out, float scale, bool causal,
             gpu::DeviceStream& s) {
  if (!load_status().empty()) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::forward_fallback);
    return false;
  }
  std::lock_guard lk(mutex());
  s.context().make_current();
  cudnnHandle_t h = handle(s);
  if (!h) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::forward_fallback);
    return false;
  }
  const Operand q = operand(in[0], s), k = operand(in[1], s), v = operand(in[2], s);
  const Plan& p =
      forward_plan(in[0].dtype(), scale, causal, q, k, v, out[0].strides(), h, s.context().index());
  if (!p.graph) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::forward_fallback);
    return false;
  }
  std::unordered_map<int64_t, void*> pack{{kQ, vp(q.ptr)},
                                          {kK, vp(k.ptr)},
                                          {kV, vp(v.ptr)},
                                          {kO, vp(gpu::device_address(out[0]))},
                                          {kStats, vp(gpu::device_address(out[1]))}};
  execute(p, h, pack, s, "forward");
  detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::forward);
  return true;
}

Backward backward(const std::vector<array>& in, std::vector<array>& out, float scale, bool causal,
                  gpu::DeviceStream& s) {
  if (!load_status().empty()) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward_fallback);
    return Backward::forward_was_kiln;
  }
  std::lock_guard lk(mutex());
  s.context().make_current();
  const size_t n = in.size();
  const Dtype d = in[0].dtype();
  const int device = s.context().index();
  cudnnHandle_t h = handle(s);
  if (!h) {  // the forward could not have run cuDNN either
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward_fallback);
    return Backward::forward_was_kiln;
  }
  const Operand q = operand(in[0], s), k = operand(in[1], s), v = operand(in[2], s);
  // The forward's decision for these inputs: its plan is cached (built now if the forward
  // ran in an earlier process state that never built it, with the same result).
  // O's strides as the forward chose them.
  const Strides o_forward = gpu::fast::strides_like(in[0], in[n - 3].shape());
  if (!forward_plan(d, scale, causal, q, k, v, o_forward, h, device).graph) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward_fallback);
    return Backward::forward_was_kiln;
  }
  const Operand dout = operand(in[n - 1], s), o = operand(in[n - 3], s);
  const CUdeviceptr stats = gpu::fast::dense_address(in[n - 2], s);
  const std::vector<int64_t> d_stride[3] = {out[0].strides(), out[1].strides(), out[2].strides()};
  Key key = common_key(device, d, scale, causal, q, k, v);
  for (const auto* st : {&dout.stride, &o.stride, &d_stride[0], &d_stride[1], &d_stride[2]})
    key.insert(key.end(), st->begin(), st->end());
  const Plan& p = plan(backward_cache(), key, h, "backward", [&](fe::graph::Graph& g) {
    make_backward(g, d, scale, causal, q, k, v, o, dout, d_stride);
  });
  if (!p.graph) {
    detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward_fallback);
    return Backward::rejected;
  }
  std::unordered_map<int64_t, void*> pack{{kQ, vp(q.ptr)},
                                          {kK, vp(k.ptr)},
                                          {kV, vp(v.ptr)},
                                          {kO, vp(o.ptr)},
                                          {kDO, vp(dout.ptr)},
                                          {kStats, vp(stats)},
                                          {kDQ, vp(gpu::device_address(out[0]))},
                                          {kDK, vp(gpu::device_address(out[1]))},
                                          {kDV, vp(gpu::device_address(out[2]))}};
  execute(p, h, pack, s, "backward");
  detail::count_sdpa_cudnn(detail::SdpaCudnnEvent::backward);
  return Backward::served;
}

std::string validate_offline(Dtype d, const Shape& q, const Shape& k, const Shape& v, float scale,
                             bool causal, int sm) {
  if (!load_status().empty()) return load_status();
  auto dense = [](const Shape& sh) {
    Operand o{0, std::vector<int64_t>(sh.begin(), sh.end()), {}};
    o.stride = dense_strides(o.dim);
    return o;
  };
  const Operand oq = dense(q), ok = dense(k), ov = dense(v);
  const Operand dout = dense({q[0], q[1], q[2], v[3]});
  try {
    fe::graph::Graph fwd;
    fwd.set_sm_version(sm);
    make_forward(fwd, d, scale, causal, oq, ok, ov, dense_strides({q[0], q[1], q[2], v[3]}));
    fe::error_t e = fwd.validate();
    if (e.is_bad()) return "forward: " + e.get_message();
    fe::graph::Graph bwd;
    bwd.set_sm_version(sm);
    const std::vector<int64_t> d_stride[3] = {oq.stride, ok.stride, ov.stride};
    make_backward(bwd, d, scale, causal, oq, ok, ov, /*o=*/dout, dout, d_stride);
    e = bwd.validate();
    if (e.is_bad()) return "backward: " + e.get_message();
  } catch (const std::exception& ex) {
    return ex.what();
  }
  return "";
}

#endif  // KILN_SDPA_CUDNN

}  // namespace kiln::fast::cudnn_sdpa
