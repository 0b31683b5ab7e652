// Streams, events and evaluation: the execution half of kiln/backend/gpu.h.
#include "kiln/backend/cuda/stream.h"

#include <nvtx3/nvToolsExt.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/pinned.h"
#include "kiln/backend/gpu.h"
#include "kiln/host_writes.h"
#include "kiln/primitive.h"

namespace kiln::gpu {

namespace {

// An intermediate event every this many launches lets a long batch free memory as it runs.
constexpr int kFlushEvery = 16;
// Recorded events a stream may have outstanding before the host waits for the oldest: bounds
// how far the host runs ahead, and so the memory held by in-flight work.
constexpr size_t kMaxInFlight = 64;
constexpr int kMaxStreams = 1024;  // as the scheduler
constexpr int kMaxDevices = 64;

std::array<std::atomic<DeviceStream*>, kMaxStreams>& streams() {
  static auto* s = new std::array<std::atomic<DeviceStream*>, kMaxStreams>{};
  return *s;
}

// Free CUevents of each device.
struct EventPool {
  std::mutex mu;
  std::vector<CUevent> free;
};
EventPool& event_pool(int device) {
  static auto* pools = new std::array<EventPool, kMaxDevices>;
  return (*pools)[device];
}

std::shared_ptr<PooledEvent> get_event(DeviceContext& ctx) {
  CUevent e = nullptr;
  {
    auto& pool = event_pool(ctx.index());
    std::lock_guard lk(pool.mu);
    if (!pool.free.empty()) {
      e = pool.free.back();
      pool.free.pop_back();
    }
  }
  if (!e) KILN_CU(cuEventCreate, &e, CU_EVENT_DISABLE_TIMING);
  return std::shared_ptr<PooledEvent>(new PooledEvent{e, &ctx});
}

// NVTX range named after the primitive, so a profile maps straight to X::eval_gpu.
struct NvtxRange {
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
};

}  // namespace

PooledEvent::~PooledEvent() {
  auto& pool = event_pool(ctx->index());
  std::lock_guard lk(pool.mu);
  pool.free.push_back(event);
}

// ---------------------------------------------------------------- DeviceStream

DeviceStream::DeviceStream(int index, DeviceContext& ctx) : index_(index), ctx_(ctx) {
  ctx.make_current();
  // Non-blocking: no implicit synchronization with the legacy default stream, which other
  // libraries in the process (PyTorch by default) use.
  KILN_CU(cuStreamCreate, &stream_, CU_STREAM_NON_BLOCKING);
}

void DeviceStream::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void DeviceStream::flush(uint64_t value) {
  auto ev = get_event(ctx_);
  KILN_CU(cuEventRecord, ev->event, stream_);
  std::shared_ptr<PooledEvent> oldest;
  bool older_work = false;
  {
    std::lock_guard lk(mu_);
    pending_.push_back({value, std::move(ev), std::move(current_)});
    if (value) committed_ = std::max(committed_, value);
    if (pending_.size() > kMaxInFlight) oldest = pending_.front().event;
    older_work = pending_.size() > 1;
  }
  current_.clear();
  ops_since_flush_ = 0;
  if (oldest) KILN_CU(cuEventSynchronize, oldest->event);
  // Only work recorded before this flush can have finished already: no query otherwise.
  if (older_work) release_finished(false);
}

void DeviceStream::end_op() {
  if (++ops_since_flush_ >= kFlushEvery) flush(0);
}

void DeviceStream::commit(uint64_t value) {
  // Called by the scheduler outside any try block: failures are kept for the next wait.
  try {
    ctx_.make_current();
    flush(value);
  } catch (...) {
    std::lock_guard lk(mu_);
    if (!error_) error_ = std::current_exception();
  }
}

std::shared_ptr<PooledEvent> DeviceStream::event_for(uint64_t value) {
  std::lock_guard lk(mu_);
  rethrow_locked();
  if (value <= completed_) return nullptr;
  for (auto& p : pending_)
    if (p.value >= value) return p.event;
  if (value > committed_) {
    throw std::logic_error("[gpu] Stream " + std::to_string(index_) + " has no work " +
                           std::to_string(value) + " committed (last " +
                           std::to_string(committed_) + ").");
  }
  return nullptr;  // committed and already released: done
}

void DeviceStream::wait(uint64_t value) {
  if (auto ev = event_for(value)) {
    ctx_.make_current();
    KILN_CU(cuEventSynchronize, ev->event);
  }
  // Synchronizing made the driver write the kernels' printf output to stdout's buffer.
  if (printf_pending_.exchange(false, std::memory_order_relaxed)) std::fflush(stdout);
  release_finished(false);
  std::lock_guard lk(mu_);
  rethrow_locked();
}

bool DeviceStream::is_done(uint64_t value) {
  auto ev = event_for(value);
  if (!ev) return true;
  ctx_.make_current();
  CUresult r = driver().cuEventQuery(ev->event);
  if (r == CUDA_ERROR_NOT_READY) return false;
  check("cuEventQuery", r);
  release_finished(false);
  return true;
}

void DeviceStream::release_finished(bool wait) noexcept {
  std::vector<Pending> done;
  try {
    ctx_.make_current();
    if (wait) {
      std::shared_ptr<PooledEvent> last;
      {
        std::lock_guard lk(mu_);
        if (!pending_.empty()) last = pending_.back().event;
      }
      if (last) KILN_CU(cuEventSynchronize, last->event);
    }
    std::lock_guard lk(mu_);
    while (!pending_.empty()) {
      CUresult r = driver().cuEventQuery(pending_.front().event->event);
      if (r == CUDA_ERROR_NOT_READY) break;
      check("cuEventQuery", r);
      if (pending_.front().value) completed_ = pending_.front().value;
      done.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
  } catch (...) {
    std::lock_guard lk(mu_);
    if (!error_) error_ = std::current_exception();
  }
  // `done` dies here, outside the lock: buffers go back to the allocator, events to the pool.
}

DeviceStream& device_stream(const Stream& s) {
  if (s.device.type != Device::gpu || s.index < 0 || s.index >= kMaxStreams) {
    throw std::invalid_argument("[gpu] Stream " + std::to_string(s.index) +
                                " is not a GPU stream.");
  }
  DeviceStream* ds = streams()[s.index].load(std::memory_order_acquire);
  if (!ds) {
    throw std::invalid_argument("[gpu] GPU stream " + std::to_string(s.index) + " does not exist.");
  }
  return *ds;
}

void release_finished_work(int device, bool wait) noexcept {
  for (auto& slot : streams()) {
    DeviceStream* ds = slot.load(std::memory_order_acquire);
    if (ds && ds->context().index() == device) ds->release_finished(wait);
  }
}

CUstream copy_stream(int device) {
  static auto* handles = new std::array<std::atomic<CUstream>, kMaxDevices>{};
  static auto* mu = new std::mutex;
  if (CUstream s = (*handles)[device].load(std::memory_order_acquire)) return s;
  std::lock_guard lk(*mu);
  if (!(*handles)[device].load()) {
    device_context(device).make_current();
    CUstream s = nullptr;
    KILN_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
    (*handles)[device].store(s, std::memory_order_release);
  }
  return (*handles)[device].load();
}

namespace {

// Copies st's host data to `dst` in stream order, through a pinned block when it is small,
// so that the copy never waits for the stream's earlier work (see pinned.h).
void upload(CUdeviceptr dst, Storage& st, DeviceStream& stream) {
  const void* src = st.host_ptr();
  if (auto staged = pinned_staging(st.nbytes())) {
    std::memcpy(staged->host_ptr(), src, st.nbytes());
    src = staged->host_ptr();
    stream.keep_alive(std::move(staged));  // back to the pool once the copy has run
  }
  KILN_CU(cuMemcpyHtoDAsync, dst, src, st.nbytes(), stream.handle());
}

}  // namespace

void make_resident(const array& a, DeviceStream& stream) {
  if (!a.has_storage()) return;
  const auto& sp = a.storage_ptr();
  Storage& st = *sp;
  {
    std::lock_guard lk(st.mutex());
    DeviceCopy* copy = st.device_copy();
    if (!copy) {
      if (!st.has_host()) throw std::logic_error("[gpu] An input buffer has no data.");
      auto buf = std::make_unique<DeviceBuffer>(stream.context(), st.nbytes());
      if (st.nbytes()) {
        upload(buf->dptr(), st, stream);
        CUevent ev = nullptr;
        KILN_CU(cuEventCreate, &ev, CU_EVENT_DISABLE_TIMING);
        buf->set_upload(stream.index(), ev);  // owned by the buffer from here
        KILN_CU(cuEventRecord, ev, stream.handle());
      }
      st.set_device_copy(std::move(buf));
    } else if (copy->device_index() != stream.context().index()) {
      throw std::runtime_error("[gpu] An input lives on GPU " +
                               std::to_string(copy->device_index()) + " but the op runs on GPU " +
                               std::to_string(stream.context().index()) +
                               "; copies between GPUs are not supported yet.");
    } else if (st.host_writable() && st.has_host() && st.nbytes() &&
               host_writes::take_refresh(st)) {
      // Python may have written the host copy through a writable view since the last
      // upload: upload it again, ordered before this stream's use.
      upload(reinterpret_cast<CUdeviceptr>(copy->ptr()), st, stream);
      if (auto* buf = dynamic_cast<DeviceBuffer*>(copy)) {
        CUevent ev = nullptr;
        KILN_CU(cuEventCreate, &ev, CU_EVENT_DISABLE_TIMING);
        buf->replace_upload(stream.index(), ev);
        KILN_CU(cuEventRecord, ev, stream.handle());
      }
    } else if (auto* buf = dynamic_cast<DeviceBuffer*>(copy);
               buf && buf->upload_event() && buf->upload_stream() != stream.index()) {
      KILN_CU(cuStreamWaitEvent, stream.handle(), buf->upload_event(), 0);
    }
  }
  stream.keep_alive(sp);
}

// ---------------------------------------------------------------- kiln/backend/gpu.h

void new_stream(const Stream& s) {
  if (s.index < 0 || s.index >= kMaxStreams) {
    throw std::invalid_argument("[gpu::new_stream] Invalid stream index " +
                                std::to_string(s.index) + ".");
  }
  auto& slot = streams()[s.index];
  if (slot.load()) return;
  slot.store(new DeviceStream(s.index, device_context(s.device.index)), std::memory_order_release);
}

void eval(array& arr) {
  Primitive& prim = arr.primitive();
  DeviceStream& stream = device_stream(prim.stream());
  stream.context().make_current();
  auto& inputs = arr.inputs();
  for (const auto& in : inputs) make_resident(in, stream);
  auto outputs = arr.outputs();
  auto keep_outputs = [&] {
    for (auto& out : outputs)
      if (out.has_storage()) stream.keep_alive(out.storage_ptr());
  };
  try {
    NvtxRange range(prim.name());
    prim.eval_gpu(inputs, outputs);
  } catch (...) {
    keep_outputs();  // part of the work may have been enqueued
    throw;
  }
  keep_outputs();
  stream.end_op();
}

void commit(const Stream& s, uint64_t value) {
  device_stream(s).commit(value);
}

void wait(const Stream& s, uint64_t value) {
  device_stream(s).wait(value);
}

bool is_done(const Stream& s, uint64_t value) {
  return device_stream(s).is_done(value);
}

void wait_on_stream(const Stream& s, const Stream& on, uint64_t value) {
  DeviceStream& waiter = device_stream(s);
  if (auto ev = device_stream(on).event_for(value)) {
    waiter.context().make_current();
    KILN_CU(cuStreamWaitEvent, waiter.handle(), ev->event, 0);
  }
}

}  // namespace kiln::gpu
