#include "kiln/backend/kernels/host_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/fast.h"

extern char** environ;

#if defined(__SANITIZE_THREAD__)
#define KILN_TSAN_KERNELS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_TSAN_KERNELS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN_KERNELS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN_KERNELS 1
#endif
#endif

namespace kiln::kernels {

namespace {

namespace fs = std::filesystem;

bool is_executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// `name` as given when it holds a slash, else its first match on PATH; "" when none.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable(candidate)) return candidate;
  }
  return "";
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> words;
  std::stringstream in(s);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

struct RunResult {
  int status = -1;  // exit status, or 128 + signal
  std::string output;
};

// Runs argv (argv[0] an absolute path) with stdin from /dev/null, collecting stdout and
// stderr together. Throws std::runtime_error when the program cannot be started.
RunResult run(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("[host compiler] pipe failed: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("[host compiler] Cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  RunResult res;
  char buf[4096];
  while (true) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    res.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  res.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return res;
}

[[noreturn]] void no_compiler(const std::string& why) {
  throw fast::KernelCompileError(
      "[custom kernel] Running a custom kernel on the CPU needs a C++ compiler, and " + why +
      ". Install one (Debian/Ubuntu: apt-get install g++; Fedora: dnf install gcc-c++) or set "
      "KILN_CXX to a compiler's path.");
}

// A private directory for one compilation, removed when this goes out of scope.
struct TempDir {
  std::string path;
  TempDir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    std::string tmpl = (ec ? fs::path("/tmp") : base).string() + "/kiln-cc-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      throw std::runtime_error("[host compiler] Cannot create a temporary directory " + tmpl +
                               ": " + std::strerror(errno));
    }
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_or_throw(const std::string& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::string why;
  if (ec || !write_file_atomic(fs::path(path).parent_path().string(), path, text, why)) {
    throw std::runtime_error("[host compiler] Cannot write " + path + ": " +
                             (ec ? ec.message() : why));
  }
}

}  // namespace

HostCompiler host_compiler() {
  static std::mutex mu;
  static std::string cached_env;
  static HostCompiler cached;
  const char* env = std::getenv("KILN_CXX");
  std::string spec = env ? env : "";
  std::lock_guard lk(mu);
  if (!cached.command.empty() && spec == cached_env) return cached;

  HostCompiler cc;
  if (!spec.empty()) {
    cc.command = split_words(spec);
    std::string program = cc.command.empty() ? "" : find_program(cc.command[0]);
    if (program.empty()) no_compiler("KILN_CXX='" + spec + "' names no executable program");
    cc.command[0] = program;
  } else {
    for (const char* name : {"c++", "g++", "clang++"}) {
      if (std::string p = find_program(name); !p.empty()) {
        cc.command = {p};
        break;
      }
    }
    if (cc.command.empty()) no_compiler("none of c++, g++, clang++ is on PATH");
  }
  std::vector<std::string> argv = cc.command;
  argv.push_back("--version");
  RunResult r = run(argv);
  if (r.status != 0) {
    no_compiler("'" + cc.command[0] + " --version' failed (exit status " +
                std::to_string(r.status) + "): " + r.output.substr(0, 200));
  }
#if KILN_TSAN_KERNELS
  // Kernels run on kiln's threads and read and write its buffers: uninstrumented, their
  // accesses are invisible to ThreadSanitizer. The flag is part of the command, so of the
  // identity and every cache key: a TSan build never loads a normal build's objects, nor the
  // reverse. The host compiler must be the one that built kiln (GCC links its own libtsan).
  cc.command.push_back("-fsanitize=thread");
#endif
#if KILN_ASAN_KERNELS
  // Under AddressSanitizer (the asan preset) the kernels' loads and stores are checked too:
  // a kernel body that writes past a buffer is reported instead of corrupting the heap.
  // UBSan has no predefined macro in GCC: its checks are added when its run-time library
  // is in the process. The runtimes stay the executable's (GCC's libasan and libubsan are
  // already loaded; clang's are linked into the executable), so no -shared-libasan.
  const bool ubsan = dlsym(RTLD_DEFAULT, "__ubsan_handle_type_mismatch_v1") != nullptr;
  cc.command.push_back(ubsan ? "-fsanitize=address,undefined" : "-fsanitize=address");
  cc.command.push_back("-fno-omit-frame-pointer");
#endif
  // The command and the version line: a different compiler, or an upgrade, is a new key.
  for (const auto& w : cc.command) cc.identity += w + " ";
  cc.identity += r.output.substr(0, r.output.find('\n'));
  cached_env = spec;
  cached = cc;
  return cc;
}

HostCompileResult compile_shared_object(
    const HostCompiler& cc, const std::string& name, const std::string& source,
    const std::vector<std::pair<std::string, std::string>>& headers,
    const std::vector<std::string>& flags) {
  TempDir tmp;
  const std::string src = tmp.path + "/" + name + ".cpp";
  const std::string obj = tmp.path + "/" + name + ".so";
  write_or_throw(src, source);
  for (const auto& [rel, text] : headers) write_or_throw(tmp.path + "/include/" + rel, text);

  std::vector<std::string> argv = cc.command;
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-I" + tmp.path + "/include", "-shared", "-o", obj, src});
  RunResult r = run(argv);
  HostCompileResult res;
  // Messages name the temporary file; the kernel's name reads better and stays stable.
  res.log = r.output;
  for (size_t pos; (pos = res.log.find(tmp.path + "/")) != std::string::npos;) {
    res.log.erase(pos, tmp.path.size() + 1);
  }
  if (r.status != 0) return res;
  std::string why;
  if (!read_file(obj, res.object, why)) {
    res.log += "\n(the compiler reported success but " + obj + " cannot be read: " + why + ")";
    return res;
  }
  res.ok = true;
  return res;
}

}  // namespace kiln::kernels
