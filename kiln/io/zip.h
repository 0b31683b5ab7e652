// The subset of the zip format that .npz files use (PKWARE APPNOTE 6.3): members stored or
// deflated (zlib's raw deflate), zip64 sizes and offsets, CRC-32 checked on every read.
// No encryption, no multi-disk archives.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/io/common.h"

namespace kiln::io {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t data_offset = 0;  // of the member's (compressed) data in the archive
};

/** The members listed in the central directory of the zip archive `in`, each checked to
 * lie inside the archive with a local header that agrees. Throws std::runtime_error
 * "[load] ..." for anything that is not a well-formed archive. */
std::vector<ZipEntry> read_zip_directory(Reader& in);

/**
 * One member's uncompressed bytes as a Reader. Reads must go forward (a backward read
 * restarts from the member's start); every byte produced goes into a running CRC-32, and
 * `finish()` checks that the whole member was read, its stream ended where the directory
 * says and the CRC matches (std::runtime_error "[load] ..." otherwise).
 */
class ZipEntryReader : public Reader {
 public:
  ZipEntryReader(std::shared_ptr<Reader> archive, ZipEntry entry);
  ~ZipEntryReader() override;
  size_t size() override { return entry_.size; }
  void read(char* data, size_t n, size_t offset) override;
  std::string label() const override;
  void finish();

 private:
  void restart();
  void feed();                         // refills the inflater's input when it is empty
  void produce(char* data, size_t n);  // the next n uncompressed bytes

  std::shared_ptr<Reader> archive_;
  ZipEntry entry_;
  size_t pos_ = 0;       // uncompressed bytes produced
  uint64_t in_pos_ = 0;  // compressed bytes consumed
  uint32_t crc_ = 0;
  struct Inflater;
  std::unique_ptr<Inflater> inflater_;
};

/** Sizes and offsets from which the writer uses zip64 fields (4 GiB - 1); tests lower it
 * to exercise the zip64 records without writing gigabytes. Returns the previous value. */
uint64_t set_zip64_threshold(uint64_t bytes);

/** Writes a zip archive member by member; `finish` writes the central directory. */
class ZipWriter {
 public:
  explicit ZipWriter(Writer& out, std::string op) : out_(out), op_(std::move(op)) {}
  /** Adds member `name` whose bytes are the concatenation of `parts`, stored or deflated. */
  void add(const std::string& name, const std::vector<std::string_view>& parts, bool deflate);
  void finish();

 private:
  struct Central {
    std::string name;
    uint16_t method;
    uint32_t crc;
    uint64_t compressed_size, size, offset;
  };
  Writer& out_;
  std::string op_;
  std::vector<Central> members_;
};

}  // namespace kiln::io
