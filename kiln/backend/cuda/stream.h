// GPU streams: one CUstream per kiln GPU stream, the events that mark its progress, and the
// buffers its in-flight work uses.
//
// Buffers are reused in stream order, as in PyTorch's caching allocator: a block whose
// Storage was made for this stream (new_device_storage) and never left the device goes back
// to the allocator as soon as its last array dies, and only this stream takes it at once (its
// next kernels run after the ones that used the block); other streams take it once this
// stream's work up to the release has completed. Every other buffer a launch touches (inputs
// of other streams, host-backed uploads) is kept alive by the stream until an event recorded
// after the launch completes: a user may drop an array right after async_eval while the GPU
// still reads it. Events are recorded at every commit (tagged with the scheduler's value,
// which wait/is_done/wait_on_stream look up) and every few launches in between.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::gpu {

class DeviceContext;

/** A CUevent from a per-device pool; returns there when the last reference goes. */
struct PooledEvent {
  CUevent event;
  DeviceContext* ctx;
  ~PooledEvent();
};

/** The GPU side of one kiln stream. */
class DeviceStream {
 public:
  DeviceStream(int index, DeviceContext& ctx);
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  /** The kiln stream index. */
  int index() const { return index_; }
  DeviceContext& context() const { return ctx_; }
  CUstream handle() const { return stream_; }

  /** Keeps `storage` alive until the work enqueued on this stream so far has completed,
   * unless it is reused in stream order (see above). Only for the thread running this
   * stream's tasks, i.e. inside eval_gpu. */
  void keep_alive(std::shared_ptr<Storage> storage);

  /** A tag for a block released now: covers every op begun on this stream so far. */
  uint64_t release_tag() const { return ops_.load(std::memory_order_acquire); }
  /** Whether the ops a release tag covers have all completed on the GPU. */
  bool tag_done(uint64_t tag) const { return done_ops_.load(std::memory_order_acquire) >= tag; }

  // The runtime's side (kiln/backend/gpu.h); see stream.cpp.
  void begin_op() { ops_.fetch_add(1, std::memory_order_acq_rel); }
  void end_op();
  void commit(uint64_t value);
  void wait(uint64_t value);
  bool is_done(uint64_t value);
  /** The event of the first commit with a tag >= value; null when that work is done. */
  std::shared_ptr<PooledEvent> event_for(uint64_t value);
  /** Releases the buffers of completed work; with `wait`, first waits for all recorded
   * work. Never throws (errors are kept for the next wait). */
  void release_finished(bool wait) noexcept;

 private:
  struct Pending {
    uint64_t value;  // the committed value, or 0 for an intermediate flush
    uint64_t ops;    // ops begun when the event was recorded
    std::shared_ptr<PooledEvent> event;
    std::vector<std::shared_ptr<Storage>> buffers;
  };

  // Records an event after the work so far and hands `current_` to it.
  void flush(uint64_t value);
  void rethrow_locked();

  int index_;
  DeviceContext& ctx_;
  CUstream stream_ = nullptr;

  // Touched only by the thread running this stream's tasks (the scheduler serializes them).
  std::vector<std::shared_ptr<Storage>> current_;
  int ops_since_flush_ = 0;
  std::atomic<uint64_t> ops_{0};       // ops begun (release tags)
  std::atomic<uint64_t> done_ops_{0};  // ops whose completion an event has shown

  std::mutex mu_;  // guards what follows
  std::deque<Pending> pending_;
  uint64_t committed_ = 0;  // largest committed value
  uint64_t completed_ = 0;  // largest committed value known complete
  std::exception_ptr error_;
};

/** The GPU stream of kiln stream `s`; std::invalid_argument if it is not a GPU stream. */
DeviceStream& device_stream(const Stream& s);

/** Makes `a`'s buffer readable on `stream`'s device: uploads a host-only buffer on that
 * stream (once; the copy is kept), or makes the stream wait for an upload another stream
 * issued. Keeps the buffer alive for the stream's current work. */
void make_resident(const array& a, DeviceStream& stream);

/** Releases the buffers of completed work on every stream of GPU `device`; with `wait`,
 * first waits for all recorded work (used when memory runs out). Never throws. */
void release_finished_work(int device, bool wait) noexcept;

/** DeviceStream::release_tag / tag_done of kiln stream `stream` (0 / true when it has no GPU
 * stream): for the allocator, which knows streams by index. */
uint64_t stream_release_tag(int stream) noexcept;
bool stream_tag_done(int stream, uint64_t tag) noexcept;

/** A private stream of GPU `device` for blocking copies to the host. */
CUstream copy_stream(int device);

}  // namespace kiln::gpu
