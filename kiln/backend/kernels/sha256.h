// SHA-256 (FIPS 180-4): keys and integrity checks of the kernel disk caches (GPU and CPU).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::kernels {

/** Incremental SHA-256. `update` any number of times, then `digest` once. */
class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  /** Hashes a length-prefixed field, so that ("ab", "c") and ("a", "bc") differ. */
  Sha256& field(std::string_view s);
  Digest digest();

  static Digest hash(std::string_view s) { return Sha256().update(s).digest(); }
  /** Lower-case hexadecimal, 64 characters. */
  static std::string hex(const Digest& d);

 private:
  void block(const uint8_t* p);

  std::array<uint32_t, 8> h_;
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;  // bytes
};

}  // namespace kiln::kernels
