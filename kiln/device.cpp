#include "kiln/device.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/backend/gpu.h"
#include "kiln/scheduler.h"

namespace kiln {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<Stream> streams;
  // Default stream index per device type (device index 0); read without the lock on
  // every op, written under it.
  std::atomic<int> default_stream[2] = {-1, -1};
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

std::atomic<int> default_device_type{-1};

int type_index(Device::DeviceType t) { return t == Device::cpu ? 0 : 1; }

Stream make_stream_locked(Registry& r, Device d) {
  Stream s(static_cast<int>(r.streams.size()), d);
  scheduler::add_stream(s);
  if (d.type == Device::gpu) gpu::new_stream(s);
  r.streams.push_back(s);
  return s;
}

Device initial_default_device() {
  const char* env = std::getenv("KILN_DEVICE");
  if (env && std::string(env) == "cpu") return Device::cpu;
  if (env && std::string(env) == "gpu") {
    if (!gpu::is_available()) {
      throw std::runtime_error(
          "[default_device] KILN_DEVICE=gpu but no GPU is usable: " + gpu::unavailable_reason());
    }
    return Device::gpu;
  }
  if (env && *env) {
    throw std::invalid_argument(
        std::string("[default_device] KILN_DEVICE must be 'cpu' or 'gpu', not '") + env + "'.");
  }
  return gpu::is_available() ? Device(Device::gpu) : Device(Device::cpu);
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << "Device(" << (d.type == Device::cpu ? "cpu" : "gpu") << ", " << d.index << ")";
}

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "Stream(" << s.device << ", " << s.index << ")";
}

bool is_available(const Device& d) {
  if (d.type == Device::cpu) return d.index == 0;
  return gpu::is_available() && d.index >= 0 && d.index < gpu::device_count();
}

Device default_device() {
  int t = default_device_type.load(std::memory_order_acquire);
  if (t < 0) {
    static std::mutex mu;
    std::lock_guard lk(mu);
    t = default_device_type.load();
    if (t < 0) {
      t = type_index(initial_default_device().type);
      default_device_type.store(t, std::memory_order_release);
    }
  }
  return t == 0 ? Device(Device::cpu) : Device(Device::gpu);
}

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument(
        "[set_default_device] " + std::string(d.type == Device::cpu ? "cpu" : "gpu") +
        " is not available" +
        (d.type == Device::gpu ? ": " + gpu::unavailable_reason() : std::string(".")));
  }
  default_device_type.store(type_index(d.type), std::memory_order_release);
}

Stream default_stream(Device d) {
  auto& r = registry();
  auto& slot = r.default_stream[type_index(d.type)];
  if (int idx = slot.load(std::memory_order_acquire); idx >= 0) return Stream(idx, Device(d.type));
  std::lock_guard lk(r.mu);
  if (slot.load() < 0) {
    if (!is_available(d)) {
      throw std::invalid_argument(
          "[default_stream] The GPU is not available: " + gpu::unavailable_reason());
    }
    slot.store(make_stream_locked(r, d).index, std::memory_order_release);
  }
  return r.streams[slot.load()];
}

void set_default_stream(Stream s) {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  if (s.index < 0 || s.index >= static_cast<int>(r.streams.size())) {
    throw std::invalid_argument(
        "[set_default_stream] Unknown stream " + std::to_string(s.index) + ".");
  }
  r.default_stream[type_index(s.device.type)].store(s.index, std::memory_order_release);
}

Stream new_stream(Device d) {
  if (!is_available(d)) {
    throw std::invalid_argument(
        "[new_stream] The GPU is not available: " + gpu::unavailable_reason());
  }
  auto& r = registry();
  std::lock_guard lk(r.mu);
  return make_stream_locked(r, d);
}

Stream get_stream(int index) {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  if (index < 0 || index >= static_cast<int>(r.streams.size())) {
    throw std::invalid_argument("[get_stream] Unknown stream " + std::to_string(index) + ".");
  }
  return r.streams[index];
}

Stream to_stream(StreamOrDevice s) { return to_stream(s, default_device()); }

Stream to_stream(StreamOrDevice s, Device default_dev) {
  if (auto* st = std::get_if<Stream>(&s)) return *st;
  if (auto* d = std::get_if<Device>(&s)) return default_stream(*d);
  return default_stream(default_dev);
}

void synchronize(Stream s) {
  scheduler::wait(s, scheduler::last_value(s));
  // An error of work submitted by async_eval that no array has raised yet, raised once.
  if (auto err = scheduler::take_error(s)) std::rethrow_exception(err);
}

void synchronize() {
  std::vector<Stream> streams;
  {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    streams = r.streams;
  }
  std::exception_ptr first;
  for (auto& s : streams) {
    try {
      synchronize(s);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace kiln
