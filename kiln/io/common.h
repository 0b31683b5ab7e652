// Helpers shared by the format readers and writers of kiln/io/ (not installed API).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kiln/array.h"
#include "kiln/io.h"
#include "kiln/utils.h"

namespace kiln::io {

/** Throws std::runtime_error "[load] <parts...>": a file that is not what it claims. */
template <typename... Parts>
[[noreturn]] void corrupt(const Parts&... parts) {
  throw std::runtime_error(msg("[load] ", parts...));
}

/** A FileReader for `path`. When it cannot be opened: std::runtime_error "[load] Failed to
 * open file ...", or std::invalid_argument with `missing_is_invalid` (MLX raises ValueError
 * for a missing .npz or .gguf, RuntimeError for a missing .npy or .safetensors). */
std::shared_ptr<Reader> open_file(std::string path, bool missing_is_invalid);

/** Little-endian integer from `p` (the formats are all little-endian; so is every host kiln
 * runs on, which `static_assert`s in io.cpp check). */
template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/** Reads a little-endian value at `offset`, naming `what` when the source is too short. */
template <typename T>
T read_value(Reader& in, size_t offset, const char* what) {
  if (offset > in.size() || in.size() - offset < sizeof(T)) {
    corrupt("Truncated ", in.label(), ": ", what, " at byte ", offset, " needs ", sizeof(T),
            " bytes but the file has ", in.size(), ".");
  }
  char buf[sizeof(T)];
  in.read(buf, sizeof(T), offset);
  return read_le<T>(buf);
}

/** Appends the bytes of `v` (little-endian) to `out`. */
template <typename T>
void put_le(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

/** `shape`'s element count, or throws "[load] ..." when it overflows `limit` bytes of
 * `itemsize` (a corrupt header can claim anything). Dimensions must fit int32. */
size_t checked_nbytes(const std::vector<int64_t>& dims, size_t itemsize, const std::string& what);
Shape to_shape(const std::vector<int64_t>& dims, const std::string& what);

/**
 * An array of `shape` and `dtype` whose row-major data is the `nbytes` at `offset` of
 * `in`, read into its own buffer when evaluated (the Load primitive), on `s` or, when `s`
 * is empty, on the CPU's default stream (as MLX). Checks first that the bytes lie inside
 * `in` (else "[load] ... (the file has N bytes)"). `swap` byte-swaps each element
 * (big-endian .npy data); `label` names the array in messages.
 */
array lazy_load(std::shared_ptr<Reader> in, size_t offset, Shape shape, Dtype dtype, bool swap,
                const std::string& label, StreamOrDevice s);

/** Reverses the bytes of each element of `dtype` in `data` (each float of a complex64). */
void swap_endianness(char* data, size_t nbytes, Dtype dtype);

/** `a` evaluated, with a row-major (or, if `allow_col`, column-major) layout whose
 * `data<char>()` holds its nbytes() bytes. */
array contiguous_for_save(array a, bool allow_col = false);

/** `file` with `ext` (".npy") appended unless it already ends with it (as MLX). */
std::string with_extension(std::string file, std::string_view ext);

/** Whether `s` ends with `suffix`. */
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/** Printable form of a name read from a file (bytes outside ASCII escaped, long names cut). */
std::string printable(std::string_view s, size_t max_len = 64);

}  // namespace kiln::io
