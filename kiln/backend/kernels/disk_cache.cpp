#include "kiln/backend/kernels/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "kiln/backend/kernels/sha256.h"

namespace kiln::kernels {

namespace {

constexpr size_t kHeader = 8 + 64 + 8 + 32;

std::string errno_string() {
  return std::strerror(errno);
}

// Creates `path` and missing parents, each 0700.
bool make_dirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// Makes `dir` a usable private directory, or says why it cannot be one. A directory that
// others can only read is fixed (chmod 0700); one that others can write to, or that belongs
// to someone else, is refused: it is shared, and not ours to change.
bool ensure_private_dir(const std::string& dir, std::string& why) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT || !make_dirs(dir) || stat(dir.c_str(), &st) != 0) {
      why = "cannot create " + dir + ": " + errno_string();
      return false;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    why = dir + " is not a directory";
    return false;
  }
  if (st.st_uid != geteuid()) {
    why = dir + " belongs to another user";
    return false;
  }
  if ((st.st_mode & 07777) != 0700) {
    if (st.st_mode & (S_IWGRP | S_IWOTH | S_ISVTX)) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(st.st_mode & 07777));
      why = dir + " is writable by other users (mode " + mode +
            "); make it private (chmod 700) or choose another KILN_CACHE_DIR";
      return false;
    }
    if (chmod(dir.c_str(), 0700) != 0) {
      why = "cannot make " + dir + " private: " + errno_string();
      return false;
    }
  }
  return true;
}

}  // namespace

void warn_once(const std::string& message) {
  static auto* mu = new std::mutex;
  static auto* seen = new std::set<std::string>;
  std::lock_guard lk(*mu);
  if (seen->insert(message).second) std::fprintf(stderr, "[kiln] %s\n", message.c_str());
}

std::string cache_dir() {
  const char* off = std::getenv("KILN_CACHE");
  if (off && std::string(off) == "0") return "";
  std::string dir;
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') {
    dir = std::string(x) + "/kiln";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/kiln";
  } else {
    warn_once("JIT disk cache off: neither KILN_CACHE_DIR nor HOME is set.");
    return "";
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string why;
  if (!ensure_private_dir(dir, why)) {
    warn_once("JIT disk cache off: " + why + ".");
    return "";
  }
  return dir;
}

bool read_file(const std::string& path, std::string& out, std::string& why, size_t max_bytes,
               bool own_only) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    why = errno_string();
    return false;
  }
  struct stat st;
  bool ok =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) <= max_bytes;
  if (!ok) why = "not a regular file of sane size";
  if (ok && own_only && st.st_uid != geteuid()) {
    ok = false;
    why = "owned by another user (uid " + std::to_string(st.st_uid) + ")";
  }
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (ok && got < out.size()) {
      ssize_t n = read(fd, out.data() + got, out.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = false;
        why = "short read";
      } else {
        got += static_cast<size_t>(n);
      }
    }
  }
  close(fd);
  return ok;
}

bool write_file_atomic(const std::string& dir, const std::string& path, std::string_view data,
                       std::string& why) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = dir + "/.tmp-" + std::to_string(getpid()) + "-" +
                    std::to_string(counter.fetch_add(1)) + "-" +
                    path.substr(path.find_last_of('/') + 1);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    why = "cannot write in " + dir + ": " + errno_string();  // same text for every entry
    return false;
  }
  size_t done = 0;
  bool ok = true;
  while (ok && done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      ok = false;
    else
      done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) ok = false;
  if (ok && rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) {
    why = "cannot write in " + dir + ": " + errno_string();
    unlink(tmp.c_str());
  }
  return ok;
}

Entry read_entry(const std::string& path, std::string_view magic, const std::string& key) {
  Entry res;
  if (access(path.c_str(), F_OK) != 0) return res;
  res.status = EntryStatus::rejected;
  std::string data;
  if (!read_file(path, data, res.reason, size_t(1) << 30, /*own_only=*/true)) return res;
  if (data.size() < kHeader || data.compare(0, 8, magic) != 0) {
    res.reason = "bad header";
    return res;
  }
  if (key.size() != 64 || data.compare(8, 64, key) != 0) {
    res.reason = "entry is for another key";
    return res;
  }
  ByteReader header{data, 72};
  uint64_t size = header.uint(8);
  if (size != data.size() - kHeader) {
    res.reason = "truncated or padded";
    return res;
  }
  std::string_view payload = std::string_view(data).substr(kHeader);
  auto digest = Sha256::hash(payload);
  if (std::memcmp(digest.data(), data.data() + 80, 32) != 0) {
    res.reason = "content hash mismatch";
    return res;
  }
  res.payload.assign(payload);
  res.status = EntryStatus::ok;
  return res;
}

bool write_entry(const std::string& dir, const std::string& path, std::string_view magic,
                 const std::string& key, const std::string& payload, std::string& why) {
  ByteWriter w;
  w.out.append(magic.substr(0, 8));
  w.out += key;
  w.u64(payload.size());
  auto digest = Sha256::hash(payload);
  w.out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  w.out += payload;
  return write_file_atomic(dir, path, w.out, why);
}

void ByteWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void ByteWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void ByteWriter::str(std::string_view v) {
  u32(static_cast<uint32_t>(v.size()));
  out += v;
}

uint64_t ByteReader::uint(int bytes) {
  if (!ok || in.size() - pos < static_cast<size_t>(bytes)) return ok = false, 0;
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(in[pos + i])) << (8 * i);
  pos += bytes;
  return v;
}

std::string ByteReader::str() {
  size_t n = uint(4);
  if (!ok || in.size() - pos < n) return ok = false, std::string();
  std::string v(in.substr(pos, n));
  pos += n;
  return v;
}

}  // namespace kiln::kernels
