// eval_gpu of the collectives (kiln/distributed/primitives.h) through NCCL, enqueued on the
// primitive's CUDA stream (so they overlap with work on other streams).
//
// NCCL (libnccl.so.2) is loaded at run time, never linked: PyTorch's wheel ships it under
// site-packages/nvidia/nccl/lib, found like the other optional CUDA libraries (dynlib.h);
// KILN_NCCL_PATH names another. The few NCCL types used are declared here (the library's
// stable C ABI) so no nccl.h is needed to build. NVLink multicast (NVLS) is kept off.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/distributed/primitives.h"
#include "kiln/utils.h"

namespace kiln::distributed {

namespace {

// NCCL's C ABI (nccl.h): opaque communicator, 128-byte unique id, enums as ints.
struct NcclUniqueId {
  char internal[128];
};
using NcclComm = void*;
using NcclResult = int;
enum NcclType {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9
};
enum NcclOp { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };  // kAvg: NCCL 2.10+

struct Nccl {
  NcclResult (*GetVersion)(int*) = nullptr;
  NcclResult (*GetUniqueId)(NcclUniqueId*) = nullptr;
  NcclResult (*CommInitRank)(NcclComm*, int, NcclUniqueId, int) = nullptr;
  NcclResult (*CommSplit)(NcclComm, int, int, NcclComm*, void*) = nullptr;
  NcclResult (*CommCount)(NcclComm, int*) = nullptr;
  NcclResult (*CommUserRank)(NcclComm, int*) = nullptr;
  NcclResult (*CommDestroy)(NcclComm) = nullptr;
  NcclResult (*AllReduce)(const void*, void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*GroupStart)() = nullptr;
  NcclResult (*GroupEnd)() = nullptr;
  NcclResult (*AllGather)(const void*, void*, size_t, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ReduceScatter)(const void*, void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*Send)(const void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*Recv)(void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  const char* (*GetErrorString)(NcclResult) = nullptr;
  const char* (*GetLastError)(NcclComm) = nullptr;
  std::string error;
};

const Nccl& lib() {
  static const Nccl* l = [] {
    auto* n = new Nccl;
    std::string why;
    void* h = gpu::open_library({"libnccl.so.2", "libnccl.so"}, "KILN_NCCL_PATH",
                                gpu::nvidia_wheel_lib_dirs("nccl"), why);
    if (!h) {
      n->error =
          "NCCL (libnccl.so.2: pip's nvidia-nccl-cu12/13 wheel, PyTorch's dependency, or set "
          "KILN_NCCL_PATH) is not available: " +
          why;
      return n;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(h, name);
      if (!p && n->error.empty()) n->error = msg("libnccl lacks ", name);
      return p;
    };
#define KILN_NCCL_FN(name) n->name = reinterpret_cast<decltype(n->name)>(sym("nccl" #name));
    KILN_NCCL_FN(GetVersion)
    KILN_NCCL_FN(GetUniqueId)
    KILN_NCCL_FN(CommInitRank)
    KILN_NCCL_FN(CommCount) KILN_NCCL_FN(CommUserRank) KILN_NCCL_FN(CommDestroy)
        KILN_NCCL_FN(AllReduce) KILN_NCCL_FN(GroupStart) KILN_NCCL_FN(GroupEnd)
            KILN_NCCL_FN(AllGather) KILN_NCCL_FN(ReduceScatter) KILN_NCCL_FN(Send)
                KILN_NCCL_FN(Recv) KILN_NCCL_FN(GetErrorString)
#undef KILN_NCCL_FN
        // Optional (newer NCCL): split and the last error's text.
        n->CommSplit = reinterpret_cast<decltype(n->CommSplit)>(dlsym(h, "ncclCommSplit"));
    n->GetLastError = reinterpret_cast<decltype(n->GetLastError)>(dlsym(h, "ncclGetLastError"));
    return n;
  }();
  if (!l->error.empty()) throw std::runtime_error("[distributed] " + l->error + ".");
  return *l;
}

void check(const char* op, const char* call, NcclResult r, NcclComm comm = nullptr) {
  if (r == 0) return;
  const Nccl& n = lib();
  std::string detail = n.GetLastError ? n.GetLastError(comm) : "";
  throw std::runtime_error(msg("[", op, "] ", call, " failed: ", n.GetErrorString(r), " (", r, ")",
                               detail.empty() ? "" : ": ", detail, "."));
}

class NcclCommImpl : public detail::GpuComm {
 public:
  NcclCommImpl(NcclComm c, int device) : comm_(c), device_(device) {
    check("distributed", "ncclCommUserRank", lib().CommUserRank(c, &rank_), c);
    check("distributed", "ncclCommCount", lib().CommCount(c, &size_), c);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  NcclComm comm() const { return comm_; }
  int device() const { return device_; }

  std::shared_ptr<detail::GpuComm> split(int color, int key) override {
    if (!lib().CommSplit) {
      throw std::runtime_error(
          "[split] The loaded NCCL lacks ncclCommSplit (NCCL >= 2.18 needed).");
    }
    gpu::device_context(device_).make_current();
    NcclComm out = nullptr;
    check("split", "ncclCommSplit", lib().CommSplit(comm_, color, key, &out, nullptr), comm_);
    return std::make_shared<NcclCommImpl>(out, device_);
  }

 private:
  NcclComm comm_;
  int device_;
  int rank_ = 0, size_ = 1;
};

NcclCommImpl& nccl(const Group& g, const char* op, gpu::DeviceStream& s) {
  auto* c = dynamic_cast<NcclCommImpl*>(g.impl()->nccl.get());
  if (!c) throw std::runtime_error(msg("[", op, "] The group has no NCCL communicator."));
  if (c->device() != s.context().index()) {
    throw std::invalid_argument(msg("[", op, "] The group's NCCL communicator is on GPU ",
                                    c->device(), " but the array's stream is on GPU ",
                                    s.context().index(), "."));
  }
  return *c;
}

// NCCL's type for a reduction of `d` and the element count multiplier (complex: 2 floats).
int nccl_type(Dtype d, const char* op, size_t& mult) {
  mult = 1;
  switch (d.val) {
    case Dtype::Val::bool_:
      return kUint8;
    case Dtype::Val::uint8:
      return kUint8;
    case Dtype::Val::int8:
      return kInt8;
    case Dtype::Val::uint32:
      return kUint32;
    case Dtype::Val::int32:
      return kInt32;
    case Dtype::Val::uint64:
      return kUint64;
    case Dtype::Val::int64:
      return kInt64;
    case Dtype::Val::float16:
      return kFloat16;
    case Dtype::Val::bfloat16:
      return kBfloat16;
    case Dtype::Val::float32:
      return kFloat32;
    case Dtype::Val::float64:
      return kFloat64;
    case Dtype::Val::complex64:
      mult = 2;
      return kFloat32;
    default:
      throw std::invalid_argument(msg("[", op, "] NCCL cannot reduce ", dtype_name(d), "."));
  }
}

}  // namespace

namespace detail {

bool nccl_available(std::string* why) {
  try {
    lib();
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
  if (!kiln::is_available(Device::gpu)) {
    if (why) *why = "no usable GPU";
    return false;
  }
  return true;
}

std::shared_ptr<GpuComm> nccl_create(
    int rank, int size, const std::function<std::string(const std::string&)>& share_id) {
  const Nccl& n = lib();
  // The GPU machines must not use NVLink multicast; the user's explicit setting wins.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  const int device = default_device().type == Device::gpu ? default_device().index : 0;
  gpu::device_context(device).make_current();
  NcclUniqueId id{};
  std::string mine;
  if (rank == 0) {
    check("distributed.init", "ncclGetUniqueId", n.GetUniqueId(&id));
    mine.assign(id.internal, sizeof(id.internal));
  }
  std::string got = share_id(mine);
  if (got.size() != sizeof(id.internal)) {
    throw std::runtime_error(
        msg("[distributed.init] Received an NCCL id of ", got.size(), " bytes from rank 0."));
  }
  std::memcpy(id.internal, got.data(), sizeof(id.internal));
  NcclComm comm = nullptr;
  check("distributed.init", "ncclCommInitRank", n.CommInitRank(&comm, size, id, rank));
  return std::make_shared<NcclCommImpl>(comm, device);
}

}  // namespace detail

void AllReduce::eval_gpu(const std::vector<array>& inputs, array& out) {
  const char* name = op() == detail::ReduceOp::sum   ? "all_sum"
                     : op() == detail::ReduceOp::max ? "all_max"
                                                     : "all_min";
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), name, s);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  size_t mult = 1;
  int type = nccl_type(inputs[0].dtype(), name, mult);
  // bool: logical or for sum and max, and for min logical and.
  int nop = op() == detail::ReduceOp::sum   ? (inputs[0].dtype() == bool_ ? kMax : kSum)
            : op() == detail::ReduceOp::max ? kMax
                                            : kMin;
  s.context().make_current();
  check(name, "ncclAllReduce",
        lib().AllReduce(reinterpret_cast<const void*>(gpu::device_address(inputs[0])),
                        reinterpret_cast<void*>(gpu::device_address(out)), out.size() * mult, type,
                        nop, c.comm(), s.handle()),
        c.comm());
}

void GroupedAllSum::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const char* name = mean() ? "grouped_all_mean" : "grouped_all_sum";
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), name, s);
  // Everything that can throw comes before the group opens.
  std::vector<int> types(inputs.size()), ops(inputs.size());
  std::vector<size_t> counts(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t mult = 1;
    types[i] = nccl_type(inputs[i].dtype(), name, mult);
    // bool: logical or. The mean (floating inputs only) is NCCL's: it scales before the sum.
    ops[i] = mean() ? kAvg : inputs[i].dtype() == bool_ ? kMax : kSum;
    counts[i] = outputs[i].size() * mult;
    outputs[i].set_data(gpu::new_device_storage(outputs[i].nbytes(), s));
  }
  std::vector<std::pair<CUdeviceptr, CUdeviceptr>> addresses;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (counts[i] == 0) continue;
    addresses.emplace_back(gpu::device_address(inputs[i]), gpu::device_address(outputs[i]));
  }
  s.context().make_current();
  check(name, "ncclGroupStart", lib().GroupStart());
  NcclResult first = 0;
  for (size_t i = 0, k = 0; i < inputs.size() && first == 0; ++i) {
    if (counts[i] == 0) continue;
    auto [in, out] = addresses[k++];
    first = lib().AllReduce(reinterpret_cast<const void*>(in), reinterpret_cast<void*>(out),
                            counts[i], types[i], ops[i], c.comm(), s.handle());
  }
  NcclResult end = lib().GroupEnd();  // closes the group even after a failed call
  check(name, "ncclAllReduce", first, c.comm());
  check(name, "ncclGroupEnd", end, c.comm());
}

void AllGather::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), "all_gather", s);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  s.context().make_current();
  check("all_gather", "ncclAllGather",
        lib().AllGather(reinterpret_cast<const void*>(gpu::device_address(inputs[0])),
                        reinterpret_cast<void*>(gpu::device_address(out)), inputs[0].nbytes(),
                        kUint8, c.comm(), s.handle()),
        c.comm());
}

void ReduceScatter::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), "sum_scatter", s);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  size_t mult = 1;
  int type = nccl_type(inputs[0].dtype(), "sum_scatter", mult);
  s.context().make_current();
  check("sum_scatter", "ncclReduceScatter",
        lib().ReduceScatter(reinterpret_cast<const void*>(gpu::device_address(inputs[0])),
                            reinterpret_cast<void*>(gpu::device_address(out)), out.size() * mult,
                            type, inputs[0].dtype() == bool_ ? kMax : kSum, c.comm(), s.handle()),
        c.comm());
}

void Send::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), "send", s);
  const array& in = inputs[0];
  if (in.nbytes() > 0) {
    s.context().make_current();
    check("send", "ncclSend",
          lib().Send(reinterpret_cast<const void*>(gpu::device_address(in)), in.nbytes(), kUint8,
                     dst(), c.comm(), s.handle()),
          c.comm());
  }
  out.copy_shared_buffer(in);
}

void Recv::eval_gpu(const std::vector<array>&, array& out) {
  auto& s = gpu::device_stream(stream());
  auto& c = nccl(group(), "recv", s);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.nbytes() == 0) return;
  s.context().make_current();
  check("recv", "ncclRecv",
        lib().Recv(reinterpret_cast<void*>(gpu::device_address(out)), out.nbytes(), kUint8, src(),
                   c.comm(), s.handle()),
        c.comm());
}

}  // namespace kiln::distributed
