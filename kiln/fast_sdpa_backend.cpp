// The scaled_dot_product_attention backend switch (kiln/fast_sdpa_backend.h).
#include "kiln/fast_sdpa_backend.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "kiln/utils.h"

namespace kiln::fast {

#ifdef KILN_WITH_CUDA
namespace cudnn_sdpa {
std::string status();  // backend/cuda/fast_attention_cudnn.cpp
}
#endif

namespace {

std::mutex& override_mutex() {
  static std::mutex m;
  return m;
}
std::optional<SdpaBackend>& override_value() {
  static std::optional<SdpaBackend> v;
  return v;
}
std::array<std::atomic<int64_t>, 4>& counters() {
  static std::array<std::atomic<int64_t>, 4> c{};
  return c;
}

}  // namespace

SdpaBackend parse_sdpa_backend(const std::string& value) {
  if (value == "kiln") return SdpaBackend::kiln;
  if (value == "cudnn") return SdpaBackend::cudnn;
  if (value == "auto") return SdpaBackend::automatic;
  throw std::invalid_argument(msg("[scaled_dot_product_attention] Unknown attention backend '",
                                  value, "': expected 'kiln', 'cudnn' or 'auto'."));
}

const char* sdpa_backend_name(SdpaBackend b) {
  switch (b) {
    case SdpaBackend::kiln:
      return "kiln";
    case SdpaBackend::cudnn:
      return "cudnn";
    case SdpaBackend::automatic:
      return "auto";
  }
  return "kiln";
}

SdpaBackend sdpa_backend() {
  {
    std::lock_guard lk(override_mutex());
    if (override_value()) return *override_value();
  }
  const char* env = std::getenv("KILN_SDPA_BACKEND");
  if (!env || !*env) return SdpaBackend::automatic;
  try {
    return parse_sdpa_backend(env);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(msg("[scaled_dot_product_attention] KILN_SDPA_BACKEND='", env,
                                    "' is not a backend: expected 'kiln', 'cudnn' or 'auto'."));
  }
}

void set_sdpa_backend(std::optional<SdpaBackend> backend) {
  std::lock_guard lk(override_mutex());
  override_value() = backend;
}

SdpaCudnnCounts sdpa_cudnn_counts() {
  auto& c = counters();
  return {c[0].load(), c[1].load(), c[2].load(), c[3].load()};
}

std::string sdpa_cudnn_status() {
#ifdef KILN_WITH_CUDA
  return cudnn_sdpa::status();
#else
  return "kiln was built without CUDA";
#endif
}

namespace detail {
void count_sdpa_cudnn(SdpaCudnnEvent e) {
  counters()[static_cast<size_t>(e)].fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace kiln::fast
