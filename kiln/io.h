// Array I/O: NumPy's .npy and .npz, Hugging Face's .safetensors and GGML's .gguf, with the
// names and behaviour of MLX's C++ API (mlx/io.h).
//
// Loading is lazy where the data is stored raw: `load` parses and checks the file's header
// at once (a corrupt or truncated file throws here) and returns arrays whose data is read
// from the file straight into their own buffers when they are evaluated, on a CPU stream
// (so a 2 GiB checkpoint is never held twice, and tensors never used are never read).
// The reader keeps the file open until then; files written by kiln replace the old file
// atomically, so arrays still to be read from it see the data they were loaded from.
// Formats: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html,
// https://huggingface.co/docs/safetensors,
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln {
namespace io {

/** A random-access byte source: a file, or e.g. a Python file object. */
class Reader {
 public:
  virtual ~Reader() = default;
  /** Total size in bytes. */
  virtual size_t size() = 0;
  /** Reads exactly `n` bytes at `offset` into `data`; throws std::runtime_error ("[load]
   * ...") when fewer are there. May be called from any thread, concurrently. */
  virtual void read(char* data, size_t n, size_t offset) = 0;
  /** Names the source in messages, e.g. "file model.safetensors". */
  virtual std::string label() const = 0;
};

/** A sequential byte sink. `commit` ends a successful write (a file is then moved into
 * place); a writer destroyed without it leaves no partial file behind where it can. */
class Writer {
 public:
  virtual ~Writer() = default;
  virtual void write(const char* data, size_t n) = 0;
  /** Bytes written so far. */
  virtual size_t tell() = 0;
  virtual void commit() {}
  virtual std::string label() const = 0;
};

/** Reads a file with pread (large reads in parallel chunks). Throws std::runtime_error
 * "[load] Failed to open file <path>: <reason>" when it cannot be opened. */
class FileReader : public Reader {
 public:
  explicit FileReader(std::string path);
  ~FileReader() override;
  size_t size() override { return size_; }
  void read(char* data, size_t n, size_t offset) override;
  std::string label() const override { return "file " + path_; }

 private:
  std::string path_;
  int fd_ = -1;
  size_t size_ = 0;
};

/** Writes a file. A regular file (or a new one) is written under a temporary name in the
 * same directory and renamed over `path` by `commit`, so readers of the old file (lazy
 * arrays loaded from it) keep its contents; other paths (devices, pipes, symlinks) are
 * written in place. Throws std::runtime_error "[<op>] Failed to open file <path>: ...". */
class FileWriter : public Writer {
 public:
  FileWriter(std::string path, std::string op);
  ~FileWriter() override;
  void write(const char* data, size_t n) override;
  size_t tell() override { return written_; }
  void commit() override;
  std::string label() const override { return "file " + path_; }

 private:
  std::string path_, tmp_path_, op_;
  int fd_ = -1;
  size_t written_ = 0;
};

/** A reader over bytes in memory (tests, and data already read). */
class MemoryReader : public Reader {
 public:
  explicit MemoryReader(std::string bytes, std::string label = "memory buffer")
      : bytes_(std::move(bytes)), label_(std::move(label)) {}
  size_t size() override { return bytes_.size(); }
  void read(char* data, size_t n, size_t offset) override;
  std::string label() const override { return label_; }

 private:
  std::string bytes_, label_;
};

/** A writer into a string (tests). */
class MemoryWriter : public Writer {
 public:
  void write(const char* data, size_t n) override { bytes_.append(data, n); }
  size_t tell() override { return bytes_.size(); }
  std::string label() const override { return "memory buffer"; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace io

// ---------------------------------------------------------------- .npy
/**
 * Writes `a` in NumPy's .npy format (version 1.0, or 2.0 for headers over 64 KiB), any
 * dtype and shape (0-d and empty included). Row-major arrays are written as they are,
 * column-major ones with fortran_order True, other layouts (broadcasts, strided views) as
 * a row-major copy. bfloat16 is written as MLX does, with descr '<V2' (NumPy reads it as
 * 2-byte void). `save(file, a)` appends ".npy" when `file` does not end with it.
 * Throws std::runtime_error "[save] ..." when the file cannot be written.
 */
void save(std::shared_ptr<io::Writer> out, array a);
void save(std::string file, array a);

/**
 * Reads a .npy file (version 1.0, 2.0 or 3.0): descr '|b1', '|u1', '<u2' ... '<f8', '<c8',
 * '<V2' (bfloat16, as MLX writes it), little- or big-endian ('>' data is byte-swapped);
 * fortran_order arrays come back as a transposed view. The header is parsed and checked
 * here; the data is read when the array is evaluated, on a CPU stream (`s` picks the CPU
 * stream; a GPU stream gets the loaded array copied onto it).
 * Throws std::runtime_error "[load] ..." for a file that cannot be opened, a bad magic,
 * version or header, or data shorter than the header says; std::invalid_argument "[load]
 * ..." for a dtype kiln has no counterpart for (e.g. '<c16', '|O', '<U2').
 */
array load(std::shared_ptr<io::Reader> in, StreamOrDevice s = {});
array load(std::string file, StreamOrDevice s = {});

// ---------------------------------------------------------------- .npz
/**
 * Writes `arrays` into a zip archive as "<name>.npy" members, stored or (with
 * `compressed`) deflated, as numpy.savez / numpy.savez_compressed; zip64 where sizes or
 * offsets need it. `savez(file, ...)` appends ".npz" when missing.
 * Throws std::invalid_argument "[savez] ..." for duplicate names.
 */
void savez(std::shared_ptr<io::Writer> out,
           const std::vector<std::pair<std::string, array>>& arrays, bool compressed = false);
void savez(std::string file, const std::vector<std::pair<std::string, array>>& arrays,
           bool compressed = false);

/**
 * Reads every member of a .npz archive (stored or deflated; zip64 too) into arrays named
 * after the member without ".npy". Each member's data is read (and inflated) straight into
 * its array's buffer and checked against the archive's CRC-32. Throws std::runtime_error
 * "[load] ..." for a damaged archive or member, and what `load` throws for a bad .npy
 * inside.
 */
std::unordered_map<std::string, array> load_npz(std::shared_ptr<io::Reader> in,
                                                StreamOrDevice s = {});
std::unordered_map<std::string, array> load_npz(std::string file, StreamOrDevice s = {});

// ---------------------------------------------------------------- .safetensors
using SafetensorsLoad =
    std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;

/**
 * Reads a .safetensors file: the tensors (lazily, as `load`) and the "__metadata__"
 * strings. dtypes BOOL, U8..U64, I8..I64, F16, BF16, F32, F64, C64; F8_E4M3 loads as its
 * raw uint8 bytes (as MLX; see from_fp8). Throws std::runtime_error "[load] ..." for a
 * header that is not valid JSON of the format, an unknown dtype, negative dimensions, or
 * data offsets that do not match the shape or lie outside the file.
 */
SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in, StreamOrDevice s = {});
SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s = {});

/**
 * Writes `arrays` and the `metadata` strings as .safetensors (keys sorted, the header
 * padded to 8 bytes and the tensors ordered by alignment, as the safetensors library
 * writes, so every tensor starts aligned). Every kiln dtype. `save_safetensors(file, ...)`
 * appends ".safetensors" when missing. Throws std::invalid_argument "[save_safetensors]
 * ..." for the reserved name "__metadata__" and std::runtime_error when the file cannot
 * be written.
 */
void save_safetensors(std::shared_ptr<io::Writer> out,
                      std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});
void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});

// ---------------------------------------------------------------- .gguf
/** A GGUF metadata value: a 0-d array (numeric or bool scalar), a 1-d array (numeric or
 * bool array), a string or a list of strings. */
using GGUFMetaData = std::variant<std::monostate, array, std::string, std::vector<std::string>>;
using GGUFLoad = std::pair<std::unordered_map<std::string, array>,
                           std::unordered_map<std::string, GGUFMetaData>>;

/**
 * Reads a GGUF file (version 2 or 3). Tensors of type F32, F16, BF16, F64, I8, I16, I32
 * and I64 load lazily (as `load`) with GGML's dimension order reversed into kiln's.
 * Quantized tensors of type Q4_0, Q4_1, Q4_K and Q8_0, as MLX: "<name>" holds the packed
 * unsigned 4- or 8-bit values (uint32, last dimension * bits / 32) and "<name less its
 * last 7 characters>.scales" / ".biases" the float16 scale and bias of each group of 32,
 * so that dequantize(w, scales, biases, 32, bits) gives the values. Metadata: every GGUF
 * value type (integers, float32/64 and bool as 0-d arrays of that dtype, arrays of them as
 * 1-d arrays, strings, arrays of strings). Throws std::runtime_error "[load] ..." for a
 * truncated or malformed file, another quantized type (named), or nested arrays.
 */
GGUFLoad load_gguf(std::shared_ptr<io::Reader> in, StreamOrDevice s = {});
GGUFLoad load_gguf(const std::string& file, StreamOrDevice s = {});

/**
 * Writes a GGUF version 3 file: `metadata` (keys sorted) then the tensors, 32-byte
 * aligned. Tensor dtypes float32, float16, bfloat16, float64, int8, int16, int32, int64
 * (others throw std::runtime_error "[save_gguf] dtype uint8 is not supported", as MLX);
 * metadata arrays must be 0-d or 1-d, non-empty, of an integer, bool, float32 or float64
 * dtype (std::invalid_argument otherwise). `save_gguf(file, ...)` appends ".gguf".
 */
void save_gguf(std::shared_ptr<io::Writer> out, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata = {});
void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata = {});

}  // namespace kiln
