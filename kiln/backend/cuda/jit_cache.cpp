// The JIT disk cache.
//
// Entry file <dir>/<key>.kjit:
//   "KILNJIT1" | key (64 hex chars) | payload size (u64 LE) | SHA-256 of the payload | payload
// payload: target, image, log, kernel count (u32), then (expression, lowered name) pairs;
// every string is a u32 LE length and its bytes. Any mismatch rejects the entry.
#include "kiln/backend/cuda/jit_cache.h"

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

#include "kiln/backend/cuda/sha256.h"

namespace kiln::gpu {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'J', 'I', 'T', '1'};
constexpr size_t kHeader = 8 + 64 + 8 + 32;
constexpr size_t kMaxEntry = size_t(1) << 30;  // refuses absurd sizes before reading

// Prints `message` on stderr the first time it is seen.
void warn_once(const std::string& message) {
  static auto* mu = new std::mutex;
  static auto* seen = new std::set<std::string>;
  std::lock_guard lk(*mu);
  if (seen->insert(message).second) std::fprintf(stderr, "[kiln] %s\n", message.c_str());
}

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

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put_str(std::string& s, const std::string& v) {
  put_u32(s, static_cast<uint32_t>(v.size()));
  s += v;
}

// Bounds-checked reader over a payload.
struct Reader {
  const std::string& s;
  size_t pos = 0;
  bool ok = true;

  uint64_t uint(int bytes) {
    if (!ok || s.size() - pos < static_cast<size_t>(bytes)) return ok = false, 0;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(s[pos + i])) << (8 * i);
    pos += bytes;
    return v;
  }
  std::string str() {
    size_t n = uint(4);
    if (!ok || s.size() - pos < n) return ok = false, std::string();
    std::string v = s.substr(pos, n);
    pos += n;
    return v;
  }
};

bool read_file(const std::string& path, std::string& out, std::string& why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    why = errno_string();
    return false;
  }
  struct stat st;
  bool ok =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) <= kMaxEntry;
  if (!ok) why = "not a regular file of sane size";
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

// Writes `data` to `path` atomically: readers see the old file or the whole new one.
bool write_atomic(const std::string& dir, const std::string& path, const std::string& data,
                  std::string& why) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = dir + "/.tmp-" + std::to_string(getpid()) + "-" +
                    std::to_string(counter.fetch_add(1)) + "-" +
                    path.substr(path.find_last_of('/') + 1);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    why = "cannot create " + tmp + ": " + errno_string();
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
    why = "cannot write " + path + ": " + errno_string();
    unlink(tmp.c_str());
  }
  return ok;
}

}  // namespace

std::string jit_cache_dir() {
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

std::string jit_cache_entry_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".kjit";
}

namespace jit_disk {

LoadResult load(const std::string& dir, const std::string& key, const std::string& target) {
  LoadResult res;
  const std::string path = jit_cache_entry_path(dir, key);
  if (access(path.c_str(), F_OK) != 0) return res;
  res.status = LoadStatus::rejected;
  std::string data;
  if (!read_file(path, data, res.reason)) return res;
  if (data.size() < kHeader || std::memcmp(data.data(), kMagic, 8) != 0) {
    res.reason = "bad header";
    return res;
  }
  if (data.compare(8, 64, key) != 0) {
    res.reason = "entry is for another key";
    return res;
  }
  Reader header{data, 72};
  uint64_t size = header.uint(8);
  if (size != data.size() - kHeader) {
    res.reason = "truncated or padded";
    return res;
  }
  std::string payload = data.substr(kHeader);
  auto digest = Sha256::hash(payload);
  if (std::memcmp(digest.data(), data.data() + 80, 32) != 0) {
    res.reason = "content hash mismatch";
    return res;
  }
  Reader r{payload};
  CompiledModule& m = res.module;
  m.target = r.str();
  m.image = r.str();
  m.log = r.str();
  uint64_t n = r.uint(4);
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    std::string expr = r.str();
    std::string lowered = r.str();
    m.kernels.emplace_back(std::move(expr), std::move(lowered));
  }
  if (!r.ok || r.pos != payload.size() || m.target != target) {
    res.reason = "malformed payload";
    res.module = {};
    return res;
  }
  res.status = LoadStatus::ok;
  return res;
}

void store(const std::string& dir, const std::string& key, const CompiledModule& m,
           const std::string& source) {
  std::string payload;
  put_str(payload, m.target);
  put_str(payload, m.image);
  put_str(payload, m.log);
  put_u32(payload, static_cast<uint32_t>(m.kernels.size()));
  for (const auto& [expr, lowered] : m.kernels) {
    put_str(payload, expr);
    put_str(payload, lowered);
  }
  std::string data(kMagic, 8);
  data += key;
  put_u64(data, payload.size());
  auto digest = Sha256::hash(payload);
  data.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  data += payload;
  std::string why;
  if (!write_atomic(dir, jit_cache_entry_path(dir, key), data, why) ||
      !write_atomic(dir, dir + "/" + key + ".cu", source, why)) {
    warn_once("JIT disk cache write failed: " + why + ".");
  }
}

}  // namespace jit_disk

}  // namespace kiln::gpu
