#include "kiln/backend/kernels/shared_object.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace kiln::kernels {

namespace {

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void* load_shared_object(const std::string& bytes, const std::string& what) {
  static std::atomic<uint64_t> loads{0};
  void* handle = nullptr;
  std::string error;
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-so-XXXXXX").string();
  if (mkdtemp(dir.data())) {
    const std::string path = dir + "/object-" + std::to_string(getpid()) + "-" +
                             std::to_string(loads.fetch_add(1)) + ".so";
    int f = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    if (f >= 0 && write_all(f, bytes) && close(f) == 0) {
      f = -1;
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) error = dlerror();
    } else {
      error = std::strerror(errno);
    }
    if (f >= 0) close(f);
    unlink(path.c_str());
    rmdir(dir.c_str());
  } else {
    error = std::strerror(errno);
  }
  if (!handle) {
    // Read-only or noexec /tmp: an anonymous memory file, whose descriptor stays open (so
    // its /proc/self/fd number is never reused for another library).
    int fd = memfd_create("kiln-object", MFD_CLOEXEC);
    if (fd >= 0 && write_all(fd, bytes)) {
      handle = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        error += std::string("; through memfd: ") + dlerror();
        close(fd);
      }
    } else if (fd >= 0) {
      close(fd);
    }
  }
  if (!handle) throw std::runtime_error("[kiln] Cannot load " + what + ": " + error);
  return handle;
}

}  // namespace kiln::kernels
