// Devices and streams. Every op takes `StreamOrDevice s = {}` last: empty means the
// default stream of the default device.
#pragma once

#include <ostream>
#include <variant>

namespace kiln {

struct Device {
  enum class DeviceType { cpu, gpu };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;

  DeviceType type;
  int index;

  constexpr Device(DeviceType type, int index = 0) : type(type), index(index) {}
  constexpr bool operator==(const Device& o) const { return type == o.type && index == o.index; }
};

/**
 * The device ops run on when none is given: the GPU when one is usable, else the CPU.
 * The environment variable KILN_DEVICE=cpu|gpu overrides the choice (gpu without a usable
 * GPU makes this throw std::runtime_error naming the reason).
 */
Device default_device();
/** Throws std::invalid_argument if `d` is not available. */
void set_default_device(const Device& d);
/** Whether ops can run on `d` (the CPU always; the GPU when a driver and device exist). */
bool is_available(const Device& d);

std::ostream& operator<<(std::ostream& os, const Device& d);

/** An ordered queue of work on one device. Work on different streams may overlap. */
struct Stream {
  int index;
  Device device;

  constexpr Stream(int index, Device device) : index(index), device(device) {}
  constexpr bool operator==(const Stream& o) const { return index == o.index; }
};

/** The default stream of `d`; created on first use. */
Stream default_stream(Device d);
/** Makes `s` the default stream of its device. */
void set_default_stream(Stream s);
/** A new stream on `d` (throws std::invalid_argument if `d` is unavailable). */
Stream new_stream(Device d);
/** The stream with the given index (throws std::invalid_argument if there is none). */
Stream get_stream(int index);

std::ostream& operator<<(std::ostream& os, const Stream& s);

using StreamOrDevice = std::variant<std::monostate, Stream, Device>;

/** Resolves an op's stream argument: a stream as is, a device's default stream, or the
 * default device's default stream. */
Stream to_stream(StreamOrDevice s);
/** As `to_stream`, but an empty argument means the default stream of `default_dev`. */
Stream to_stream(StreamOrDevice s, Device default_dev);

/** Blocks until all work submitted to `s` (or to every stream) has finished. */
void synchronize(Stream s);
void synchronize();

}  // namespace kiln
