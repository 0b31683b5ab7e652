// Stream codes and trace inputs of exported-function files (see export_format.h).
#include "kiln/export_format.h"

#include "kiln/device.h"

namespace kiln::export_detail {

uint8_t device_code(const Stream& s, const Stream& default_stream) {
  if (s == default_stream) return 0;
  return s.device.type == Device::cpu ? 1 : 2;
}

Stream stream_of_code(uint8_t code, const std::string& prim, const std::string& path) {
  switch (code) {
    case 0:
      return to_stream(StreamOrDevice{});
    case 1:
      return default_stream(Device::cpu);
    case 2:
      if (!is_available(Device::gpu)) {
        throw std::runtime_error(msg("[import_function] ", path, " runs ", prim,
                                     " on the GPU, which is not available here."));
      }
      return default_stream(Device::gpu);
    default:
      throw std::runtime_error(msg("[import_function] ", path, " is corrupt (device code ",
                                   static_cast<int>(code), ")."));
  }
}

TraceInputs flatten_inputs(const std::vector<array>& args, const Kwargs& kwargs) {
  TraceInputs t;
  t.arrays = args;
  t.n_args = args.size();
  for (const auto& [k, v] : kwargs) {
    t.kw_names.push_back(k);
    t.arrays.push_back(v);
  }
  return t;
}

}  // namespace kiln::export_detail
