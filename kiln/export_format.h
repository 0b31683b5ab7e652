// The byte-level pieces of kiln's exported-function files, shared by the writer
// (export.cpp) and the reader (import.cpp). The layout is documented in export.cpp.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/export.h"
#include "kiln/export_state.h"
#include "kiln/utils.h"

namespace kiln::export_detail {

static_assert(std::endian::native == std::endian::little,
              "export files are little-endian; add byte swaps for this platform");

inline constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'F', 'U', 'N', 'C'};
inline constexpr uint32_t kFormatVersion = 1;

inline uint64_t fnv1a(const char* data, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

// Appends little-endian values to a growing byte buffer.
class Bytes {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&v);
    buf_.append(p, sizeof(T));
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.append(s);
  }
  void shape(const Shape& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    for (int32_t d : s) put<int32_t>(d);
  }
  void dtype(Dtype d) { put<uint8_t>(static_cast<uint8_t>(d.val)); }
  void state(const State& st) {
    put<uint32_t>(static_cast<uint32_t>(st.size()));
    for (const auto& v : st) {
      put<uint8_t>(static_cast<uint8_t>(v.index()));
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>) {
              put<uint8_t>(x);
            } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
              put<T>(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
              str(x);
            } else if constexpr (std::is_same_v<T, Dtype>) {
              dtype(x);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
              put<uint64_t>(x.size());
              for (int64_t i : x) put<int64_t>(i);
            } else {
              put<uint64_t>(x.size());
              for (const auto& s : x) str(s);
            }
          },
          v);
    }
  }
  const std::string& data() const { return buf_; }
  std::string& data() { return buf_; }

 private:
  std::string buf_;
};

// Reads a buffer, throwing on any read past its end.
class Cursor {
 public:
  Cursor(const char* p, size_t n, std::string file) : p_(p), n_(n), file_(std::move(file)) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* raw(size_t n) {
    need(n);
    const char* p = p_ + pos_;
    pos_ += n;
    return p;
  }
  std::string str() {
    uint64_t n = get<uint64_t>();
    need(n);
    return std::string(raw(n), n);
  }
  uint32_t count(size_t min_bytes_each) {
    uint32_t c = get<uint32_t>();
    if (min_bytes_each && static_cast<uint64_t>(c) * min_bytes_each > n_ - pos_) corrupt("a count");
    return c;
  }
  Shape shape() {
    uint32_t r = count(4);
    Shape s;
    for (uint32_t i = 0; i < r; ++i) {
      int32_t d = get<int32_t>();
      if (d < 0) corrupt("a negative dimension");
      s.push_back(d);
    }
    return s;
  }
  Dtype dtype() {
    uint8_t c = get<uint8_t>();
    if (c >= Dtype::num_types) corrupt("a dtype code");
    return all_dtypes[c];
  }
  State state() {
    State st;
    uint32_t n = count(1);
    for (uint32_t i = 0; i < n; ++i) {
      switch (get<uint8_t>()) {
        case 0:
          st.emplace_back(get<uint8_t>() != 0);
          break;
        case 1:
          st.emplace_back(get<int64_t>());
          break;
        case 2:
          st.emplace_back(get<double>());
          break;
        case 3:
          st.emplace_back(str());
          break;
        case 4:
          st.emplace_back(dtype());
          break;
        case 5: {
          uint64_t k = get<uint64_t>();
          need(k * 8);
          std::vector<int64_t> v;
          for (uint64_t j = 0; j < k; ++j) v.push_back(get<int64_t>());
          st.emplace_back(std::move(v));
          break;
        }
        case 6: {
          uint64_t k = get<uint64_t>();
          need(k * 8);
          std::vector<std::string> v;
          for (uint64_t j = 0; j < k; ++j) v.push_back(str());
          st.emplace_back(std::move(v));
          break;
        }
        default:
          corrupt("a parameter tag");
      }
    }
    return st;
  }
  bool at_end() const { return pos_ == n_; }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw std::runtime_error(msg("[import_function] ", file_, " is corrupt (", what, " at byte ",
                                 pos_, " of a record)."));
  }

 private:
  void need(uint64_t n) const {
    if (n > n_ - pos_) corrupt("data past the end of a record");
  }
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string file_;
};

/** The file's device code of stream `s`: 0 the default stream, 1 the CPU, 2 the GPU. */
uint8_t device_code(const Stream& s, const Stream& default_stream);
/** The stream a device code names; std::runtime_error naming `prim` and `path` when the
 *  file asks for a GPU this machine lacks or the code is unknown. */
Stream stream_of_code(uint8_t code, const std::string& prim, const std::string& path);

/** A call's arrays in the order a trace numbers them. */
struct TraceInputs {
  std::vector<array> arrays;          // positional, then keyword (sorted by name)
  std::vector<std::string> kw_names;  // sorted
  size_t n_args = 0;
};

TraceInputs flatten_inputs(const std::vector<array>& args, const Kwargs& kwargs);

}  // namespace kiln::export_detail
