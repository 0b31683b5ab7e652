// A completion point on a stream: the work submitted to `stream` up to `value`.
#pragma once

#include <cstdint>

#include "kiln/device.h"

namespace kiln {

class Event {
 public:
  Event() = default;
  Event(Stream stream, uint64_t value) : stream_(stream), value_(value), valid_(true) {}

  bool valid() const { return valid_; }
  const Stream& stream() const { return stream_; }
  uint64_t value() const { return value_; }

  /** Blocks the calling thread until the work is done (no-op for an invalid event). */
  void wait() const;
  /** Whether the work is done (true for an invalid event). */
  bool is_signaled() const;

 private:
  Stream stream_{0, Device::cpu};
  uint64_t value_ = 0;
  bool valid_ = false;
};

}  // namespace kiln
