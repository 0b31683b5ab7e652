// Files and memory as io::Reader / io::Writer, and the helpers of kiln/io/common.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "kiln/backend/cpu/threading.h"
#include "kiln/io/common.h"
#include "kiln/ops.h"

namespace kiln {

// Every format kiln reads is little-endian, and kiln reads its fields with memcpy.
static_assert(std::endian::native == std::endian::little,
              "kiln's I/O assumes a little-endian host");

namespace io {

namespace {
std::string errno_text() {
  return std::strerror(errno);
}
}  // namespace

// ---------------------------------------------------------------- FileReader
FileReader::FileReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error("[load] Failed to open file " + path_ + ": " + errno_text());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    std::string why = S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file";
    ::close(fd_);
    throw std::runtime_error("[load] Failed to open file " + path_ + ": " + why);
  }
  size_ = static_cast<size_t>(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::read(char* data, size_t n, size_t offset) {
  auto read_span = [&](char* dst, size_t len, size_t off) {
    while (len > 0) {
      size_t chunk = std::min<size_t>(len, 1u << 30);
      ssize_t got = ::pread(fd_, dst, chunk, static_cast<off_t>(off));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw std::runtime_error(msg("[load] Unable to read ", len, " bytes at offset ", off,
                                     " of file ", path_, got < 0 ? ": " + errno_text() : "",
                                     got == 0 ? " (end of file: it was truncated)" : "", "."));
      }
      dst += got;
      len -= static_cast<size_t>(got);
      off += static_cast<size_t>(got);
    }
  };
  // Large reads go in parallel chunks: copying out of the page cache is bound by one core's
  // memory bandwidth otherwise.
  constexpr size_t kChunk = size_t(8) << 20;
  if (n < 4 * kChunk) return read_span(data, n, offset);
  size_t chunks = (n + kChunk - 1) / kChunk;
  cpu::parallel_for(chunks, 1, [&](size_t b, size_t e) {
    size_t lo = b * kChunk, hi = std::min(n, e * kChunk);
    read_span(data + lo, hi - lo, offset + lo);
  });
}

std::shared_ptr<Reader> open_file(std::string path, bool missing_is_invalid) {
  try {
    return std::make_shared<FileReader>(std::move(path));
  } catch (const std::runtime_error& e) {
    if (missing_is_invalid) throw std::invalid_argument(e.what());
    throw;
  }
}

// ---------------------------------------------------------------- FileWriter
FileWriter::FileWriter(std::string path, std::string op)
    : path_(std::move(path)), op_(std::move(op)) {
  auto fail = [&](const std::string& why) -> void {
    throw std::runtime_error("[" + op_ + "] Failed to open file " + path_ + ": " + why);
  };
  struct stat st {};
  bool exists = ::lstat(path_.c_str(), &st) == 0;
  if (!exists || S_ISREG(st.st_mode)) {
    // A temporary file beside the target, renamed over it by commit().
    std::string tmpl = path_ + ".tmp-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    fd_ = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd_ < 0) {
      // The directory may not be writable even though the file is: write in place.
      if (exists) {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd_ < 0) fail(errno_text());
        return;
      }
      fail(errno_text());
    }
    tmp_path_ = buf.data();
    // mkstemp creates the file 0600; give it the old file's mode, or the usual 0666 & ~umask.
    mode_t mode = exists ? (st.st_mode & 07777) : 0;
    if (!exists) {
      mode_t mask = ::umask(0);
      ::umask(mask);
      mode = 0666 & ~mask;
    }
    ::fchmod(fd_, mode);
    return;
  }
  if (S_ISDIR(st.st_mode)) fail("it is a directory");
  fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd_ < 0) fail(errno_text());
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_path_.empty()) ::unlink(tmp_path_.c_str());  // not committed: drop the partial file
}

void FileWriter::write(const char* data, size_t n) {
  while (n > 0) {
    ssize_t put = ::write(fd_, data, std::min<size_t>(n, 1u << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      throw std::runtime_error(msg("[", op_, "] Failed to write ", n, " bytes to file ", path_,
                                   ": ", put < 0 ? errno_text() : "no progress", "."));
    }
    data += put;
    n -= static_cast<size_t>(put);
    written_ += static_cast<size_t>(put);
  }
}

void FileWriter::commit() {
  if (fd_ < 0) return;
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0)
    throw std::runtime_error("[" + op_ + "] Failed to write file " + path_ + ": " + errno_text());
  if (!tmp_path_.empty()) {
    if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
      throw std::runtime_error("[" + op_ + "] Failed to replace file " + path_ + ": " +
                               errno_text());
    }
    tmp_path_.clear();
  }
}

// ---------------------------------------------------------------- MemoryReader
void MemoryReader::read(char* data, size_t n, size_t offset) {
  if (offset > bytes_.size() || bytes_.size() - offset < n) {
    throw std::runtime_error(msg("[load] Unable to read ", n, " bytes at offset ", offset, " of ",
                                 label_, " (", bytes_.size(), " bytes)."));
  }
  std::memcpy(data, bytes_.data() + offset, n);
}

// ---------------------------------------------------------------- helpers
size_t checked_nbytes(const std::vector<int64_t>& dims, size_t itemsize, const std::string& what) {
  size_t n = itemsize;
  for (int64_t d : dims) {
    if (d < 0 || d > std::numeric_limits<int32_t>::max()) {
      corrupt(what, " has a dimension of ", d, ", outside [0, 2^31).");
    }
  }
  // Any zero dimension makes the array empty, whatever the others claim.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  for (int64_t d : dims) {
    if (n > std::numeric_limits<size_t>::max() / static_cast<size_t>(d)) {
      corrupt(what, " claims more bytes than fit in memory.");
    }
    n *= static_cast<size_t>(d);
  }
  return n;
}

Shape to_shape(const std::vector<int64_t>& dims, const std::string& what) {
  checked_nbytes(dims, 1, what);
  return Shape(dims.begin(), dims.end());
}

namespace {
template <size_t N>
void swap_each(char* p, size_t count) {
  for (size_t i = 0; i < count; ++i, p += N) std::reverse(p, p + N);
}
}  // namespace

void swap_endianness(char* data, size_t nbytes, Dtype dtype) {
  switch (dtype == complex64 ? 4 : dtype.size) {
    case 2:
      return swap_each<2>(data, nbytes / 2);
    case 4:
      return swap_each<4>(data, nbytes / 4);
    case 8:
      return swap_each<8>(data, nbytes / 8);
  }
}

array contiguous_for_save(array a, bool allow_col) {
  a.eval();
  if (a.flags().row_contiguous || (allow_col && a.flags().col_contiguous)) return a;
  array c = contiguous(a, allow_col);
  c.eval();
  return c;
}

std::string with_extension(std::string file, std::string_view ext) {
  if (!ends_with(file, ext)) file += ext;
  return file;
}

std::string printable(std::string_view s, size_t max_len) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

}  // namespace io
}  // namespace kiln
