// GPU streams: one CUstream per kiln GPU stream, the events that mark its progress, and the
// buffers its in-flight work uses.
//
// Each launch's buffers (inputs, outputs, temporaries) are kept alive by the stream until an
// event recorded after the launch completes: a user may drop an array right after
// async_eval while the GPU still reads it. Events are recorded at every commit (tagged with
// the scheduler's value, which wait/is_done/wait_on_stream look up) and every few launches
// in between, so long batches release memory as they progress.
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

  /** Keeps `storage` alive until the work enqueued on this stream so far has completed.
   * Only for the thread running this stream's tasks, i.e. inside eval_gpu. */
  void keep_alive(std::shared_ptr<Storage> storage) { current_.push_back(std::move(storage)); }
  /** A kernel that may printf was enqueued: the next wait flushes stdout after the device's
   * output (which the driver writes at synchronization), so that it appears at eval. */
  void note_device_printf() { printf_pending_.store(true, std::memory_order_relaxed); }

  // The runtime's side (kiln/backend/gpu.h); see stream.cpp.
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

  std::mutex mu_;  // guards what follows
  std::deque<Pending> pending_;
  uint64_t committed_ = 0;  // largest committed value
  uint64_t completed_ = 0;  // largest committed value known complete
  std::exception_ptr error_;
  std::atomic<bool> printf_pending_{false};
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

/** A private stream of GPU `device` for blocking copies to the host. */
CUstream copy_stream(int device);

}  // namespace kiln::gpu
