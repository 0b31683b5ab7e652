// The JIT: NVRTC compilation without a GPU, the memory and disk caches (hits, corrupt and
// tampered entries, KILN_CACHE=0, a private directory, several processes at once), compile
// errors, and the catalog of every module the backend can request, compiled for sm_90.
// Everything here runs without a GPU (CI has NVRTC but no driver).
#include <gtest/gtest.h>

#ifdef KILN_WITH_CUDA

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kiln/backend/cuda/embedded.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/sha256.h"
#include "test_utils.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace kiln::gpu;

namespace {

std::string random_hex() {
  static std::mt19937_64 rng(std::random_device{}());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

// A small kernel using the embedded headers; `tag` makes its source (and cache key) unique.
ModuleSource test_module(const std::string& tag) {
  return {"jit_test_" + tag,
          "// " + tag +
              "\n"
              "#include \"kiln/backend/cuda/device/cast.cuh\"\n"
              "template <typename T>\n"
              "__global__ void scale(const T* x, float* y, int n) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  if (i < n) y[i] = 2.0f * kiln::cast<float>(x[i]);\n"
              "}\n",
          {"scale<kiln::bfloat16>", "scale<float>"}};
}

// Points the disk cache at a fresh private directory for the test, and restores the
// environment afterwards.
class JitCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln-jit-test-" + random_hex());
    dir_ = (root_ / "cache").string();
    setenv("KILN_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("KILN_CACHE");
    clear_jit_memory_cache();
    reset_jit_stats();
  }
  void TearDown() override {
    unsetenv("KILN_CACHE_DIR");
    unsetenv("KILN_CACHE");
    std::error_code ec;
    fs::permissions(root_, fs::perms::owner_all, ec);
    fs::remove_all(root_, ec);
  }
  std::string entry(const ModuleSource& m) {
    return jit_cache_entry_path(dir_, cache_key(m, "sm_90"));
  }

  fs::path root_;
  std::string dir_;
};

int wait_exit(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void flip_byte(const std::string& path, size_t from_end) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(f.tellg());
  ASSERT_GT(size, from_end);
  f.seekg(size - from_end);
  char c;
  f.read(&c, 1);
  c ^= 0x5a;
  f.seekp(size - from_end);
  f.write(&c, 1);
}

unsigned mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

}  // namespace

// ---------------------------------------------------------------- hashing

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256::hex(Sha256::hash("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex(Sha256::hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex(Sha256::hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::hex(Sha256::hash(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(static_cast<char>(i * 7 + 3));
  for (size_t split : {0ul, 1ul, 55ul, 56ul, 63ul, 64ul, 65ul, 500ul, 1000ul}) {
    Sha256 h;
    h.update(data.substr(0, split)).update(data.substr(split));
    EXPECT_EQ(h.digest(), Sha256::hash(data)) << "split " << split;
  }
  // Fields are length-prefixed: moving a character across a boundary changes the hash.
  EXPECT_NE(Sha256().field("ab").field("c").digest(), Sha256().field("a").field("bc").digest());
}

// ---------------------------------------------------------------- compile only

TEST(Jit, CompilesForSm90WithoutAGpu) {
  CompiledModule m = compile(test_module("sm90"), "sm_90");
  EXPECT_TRUE(m.is_cubin());
  ASSERT_GT(m.image.size(), 4u);
  EXPECT_EQ(m.image.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(m.log, "");
  ASSERT_EQ(m.kernels.size(), 2u);
  ASSERT_NE(m.lowered_name("scale<float>"), nullptr);
  EXPECT_NE(m.lowered_name("scale<float>")->find("scale"), std::string::npos);
  EXPECT_NE(*m.lowered_name("scale<float>"), *m.lowered_name("scale<kiln::bfloat16>"));
  EXPECT_EQ(m.lowered_name("scale<double>"), nullptr);
}

TEST(Jit, CompilesToPtx) {
  CompiledModule m = compile(test_module("ptx"), "compute_90");
  EXPECT_FALSE(m.is_cubin());
  EXPECT_NE(m.image.find(".target sm_90"), std::string::npos);
  EXPECT_NE(m.image.find(".entry"), std::string::npos);
}

TEST(Jit, TargetForArch) {
  const auto& archs = nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  EXPECT_TRUE(std::is_sorted(archs.begin(), archs.end()));
  EXPECT_EQ(target_for_arch(90), "sm_90");
  // A device newer than NVRTC gets PTX for the newest architecture NVRTC knows.
  EXPECT_EQ(target_for_arch(archs.back() + 1), "compute_" + std::to_string(archs.back()));
  EXPECT_THROW(target_for_arch(archs.front() - 1), std::runtime_error);
  EXPECT_GE(nvrtc_version().first, 12);
}

TEST(Jit, CompileErrorsCarryTheLog) {
  ModuleSource bad{
      "broken_module", "__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n", {"k"}};
  try {
    compile(bad);
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undefined_name"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("broken_module.cu(2)"), std::string::npos) << e.log();
    std::string what = e.what();
    EXPECT_NE(what.find("[jit]"), std::string::npos);
    EXPECT_NE(what.find("broken_module"), std::string::npos);
    EXPECT_NE(what.find("sm_90"), std::string::npos);
    EXPECT_NE(what.find("undefined_name"), std::string::npos);
  }
  // A CompileError is a std::runtime_error, and the compiler stays usable.
  EXPECT_THROW(compile(bad), std::runtime_error);
  EXPECT_NO_THROW(compile(test_module("after_error")));
}

TEST(Jit, UnknownKernelNameIsACompileError) {
  ModuleSource m = test_module("bad_name");
  m.kernels.push_back("no_such_kernel");
  EXPECT_THROW(compile(m), CompileError);
}

TEST(Jit, InvalidTargetIsRejected) {
  for (const char* t : {"", "sm_", "sm_9x", "gfx90", "compute_", "sm_123456"}) {
    EXPECT_THROW(compile(test_module("target"), t), std::invalid_argument) << t;
  }
}

TEST(Jit, OptionsAndHeadersReachTheCompiler) {
  ModuleSource m{"opts",
                 "#include \"extra.cuh\"\n__global__ void k(int* x) { x[0] = VALUE + EXTRA; }\n",
                 {"k"},
                 {"-DVALUE=3"},
                 {{"extra.cuh", "#define EXTRA 4\n"}}};
  EXPECT_NO_THROW(compile(m));
  m.options.clear();
  EXPECT_THROW(compile(m), CompileError);
}

TEST(Jit, EmbeddedHeadersIncludeOnlyEachOther) {
  const auto& files = embedded_device_headers();
  ASSERT_FALSE(files.empty());
  std::set<std::string> paths;
  for (const auto& f : files) paths.insert(std::string(f.path));
  EXPECT_TRUE(paths.count("kiln/backend/cuda/device/types.cuh"));
  for (const auto& f : files) {
    EXPECT_TRUE(f.path.starts_with("kiln/backend/cuda/device/")) << f.path;
    std::string text(f.text);
    for (size_t pos = text.find("#include"); pos != std::string::npos;
         pos = text.find("#include", pos + 1)) {
      size_t open = text.find_first_of("\"<", pos), close = text.find_first_of("\">", open + 1);
      std::string inc = text.substr(open + 1, close - open - 1);
      EXPECT_EQ(text[open], '"') << f.path << " includes <" << inc << ">";
      EXPECT_TRUE(paths.count(inc)) << f.path << " includes " << inc << ", not an embedded header";
    }
  }
}

TEST(Jit, CacheKeyCoversEverythingThatMatters) {
  ModuleSource m = test_module("key");
  const std::string k = cache_key(m, "sm_90");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, cache_key(m, "sm_90"));
  EXPECT_NE(k, cache_key(m, "sm_80"));
  auto changed = [&](auto edit) {
    ModuleSource c = m;
    edit(c);
    return cache_key(c, "sm_90");
  };
  EXPECT_NE(k, changed([](ModuleSource& c) { c.source += " "; }));
  EXPECT_NE(k, changed([](ModuleSource& c) { c.options.push_back("-DX"); }));
  EXPECT_NE(k, changed([](ModuleSource& c) { c.kernels.pop_back(); }));
  EXPECT_NE(k, changed([](ModuleSource& c) { c.headers.push_back({"h.cuh", ""}); }));
  // The program name only labels messages; it does not change the result.
  EXPECT_EQ(k, changed([](ModuleSource& c) { c.name = "other"; }));
}

// ---------------------------------------------------------------- caches

TEST_F(JitCache, MemoryHit) {
  ModuleSource m = test_module("mem_" + random_hex());
  auto first = compile_cached(m);
  auto second = compile_cached(m);
  EXPECT_EQ(first.get(), second.get());
  JitStats s = jit_stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.memory_hits, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
}

TEST_F(JitCache, DiskHitAfterTheMemoryCacheIsCleared) {
  ModuleSource m = test_module("disk_" + random_hex());
  auto first = compile_cached(m);
  EXPECT_TRUE(fs::exists(entry(m)));
  clear_jit_memory_cache();
  auto second = compile_cached(m);
  JitStats s = jit_stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.disk_hits, 1u);
  EXPECT_EQ(second->image, first->image);
  EXPECT_EQ(second->kernels, first->kernels);
  EXPECT_EQ(second->target, "sm_90");
}

// The child half of DiskHitInANewProcess and ConcurrentProcesses: skipped unless spawned.
TEST_F(JitCache, Child) {
  const char* tag = std::getenv("KILN_TEST_JIT_CHILD_TAG");
  const char* dir = std::getenv("KILN_TEST_JIT_CHILD_DIR");
  if (!tag || !dir) GTEST_SKIP() << "runs only as a child of another JitCache test";
  setenv("KILN_CACHE_DIR", dir, 1);
  auto m = compile_cached(test_module(tag));
  EXPECT_FALSE(m->image.empty());
  if (std::getenv("KILN_TEST_JIT_CHILD_EXPECT_DISK_HIT")) {
    EXPECT_EQ(jit_stats().disk_hits, 1u);
    EXPECT_EQ(jit_stats().compiles, 0u);
  }
}

TEST_F(JitCache, DiskHitInANewProcess) {
  const std::string tag = "process_" + random_hex();
  compile_cached(test_module(tag));
  pid_t pid = kiln::test::spawn_self("JitCache.Child",
                         {"KILN_TEST_JIT_CHILD_TAG=" + tag, "KILN_TEST_JIT_CHILD_DIR=" + dir_,
                          "KILN_TEST_JIT_CHILD_EXPECT_DISK_HIT=1"});
  ASSERT_GT(pid, 0);
  EXPECT_EQ(wait_exit(pid), 0) << "the child did not load the entry from disk";
}

TEST_F(JitCache, ConcurrentProcessesShareOneDirectory) {
  const std::string tag = "concurrent_" + random_hex();
  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i) {
    pids.push_back(kiln::test::spawn_self(
        "JitCache.Child", {"KILN_TEST_JIT_CHILD_TAG=" + tag, "KILN_TEST_JIT_CHILD_DIR=" + dir_}));
  }
  for (pid_t p : pids) EXPECT_EQ(wait_exit(p), 0);
  // Whichever process won, the entry is whole and valid, and no temporary file is left.
  auto m = test_module(tag);
  compile_cached(m);
  EXPECT_EQ(jit_stats().disk_hits, 1u);
  EXPECT_EQ(jit_stats().compiles, 0u);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".tmp")) << e.path();
  }
}

TEST_F(JitCache, CorruptOrTamperedEntriesAreRecompiled) {
  ModuleSource m = test_module("corrupt_" + random_hex());
  ModuleSource other = test_module("other_" + random_hex());
  compile_cached(m);
  compile_cached(other);
  const std::string path = entry(m);
  const std::string good = [&] {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  auto write = [&](const std::string& data) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << data;
  };
  struct Case {
    const char* what;
    std::function<void()> damage;
  };
  const std::vector<Case> cases = {
      {"a flipped byte in the image",
       [&] {
         write(good);
         flip_byte(path, 100);
       }},
      {"a flipped byte in the stored hash",
       [&] {
         write(good);
         flip_byte(path, good.size() - 90);
       }},
      {"a truncated file", [&] { write(good.substr(0, good.size() / 2)); }},
      {"an empty file", [&] { write(""); }},
      {"garbage", [&] { write(std::string(4096, 'x')); }},
      {"another key's valid entry",
       [&] { fs::copy_file(entry(other), path, fs::copy_options::overwrite_existing); }},
      {"an entry whose stored key was edited",
       [&] {
         std::string t = good;
         t[8] = t[8] == 'a' ? 'b' : 'a';  // the stored key
         write(t);
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    c.damage();
    clear_jit_memory_cache();
    reset_jit_stats();
    testing::internal::CaptureStderr();
    auto got = compile_cached(m);
    std::string err = testing::internal::GetCapturedStderr();
    JitStats s = jit_stats();
    EXPECT_EQ(s.rejected, 1u);
    EXPECT_EQ(s.compiles, 1u);
    EXPECT_EQ(s.disk_hits, 0u);
    EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
    EXPECT_EQ(got->image.substr(0, 4),
              "\x7f"
              "ELF");
    // The recompiled entry replaced the bad one.
    clear_jit_memory_cache();
    reset_jit_stats();
    compile_cached(m);
    EXPECT_EQ(jit_stats().disk_hits, 1u);
  }
}

TEST_F(JitCache, DisabledWithKilnCache0) {
  setenv("KILN_CACHE", "0", 1);
  EXPECT_EQ(jit_cache_dir(), "");
  ModuleSource m = test_module("off_" + random_hex());
  compile_cached(m);
  clear_jit_memory_cache();
  compile_cached(m);
  EXPECT_EQ(jit_stats().compiles, 2u);
  EXPECT_EQ(jit_stats().disk_hits, 0u);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(JitCache, DirectoryIsCreatedPrivate) {
  const std::string nested = (root_ / "a" / "b" / "kiln").string();
  setenv("KILN_CACHE_DIR", nested.c_str(), 1);
  ModuleSource m = test_module("private_" + random_hex());
  compile_cached(m);
  EXPECT_EQ(mode_of(nested), 0700u);
  EXPECT_EQ(mode_of((root_ / "a").string()), 0700u);
  const std::string e = jit_cache_entry_path(nested, cache_key(m, "sm_90"));
  EXPECT_EQ(mode_of(e), 0600u);
}

TEST_F(JitCache, ReadableDirectoryIsMadePrivate) {
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0755);
  EXPECT_EQ(jit_cache_dir(), dir_);
  EXPECT_EQ(mode_of(dir_), 0700u);
}

TEST_F(JitCache, SharedWritableDirectoryIsRefused) {
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0777);
  testing::internal::CaptureStderr();
  EXPECT_EQ(jit_cache_dir(), "");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("writable by other users"), std::string::npos) << err;
  EXPECT_EQ(mode_of(dir_), 0777u);  // not ours to change
  ModuleSource m = test_module("refused_" + random_hex());
  EXPECT_NO_THROW(compile_cached(m));  // compiling still works, without the disk
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(JitCache, ParallelCompilesOfOneKeyCompileOnce) {
  ModuleSource m = test_module("single_flight_" + random_hex());
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const CompiledModule>> got(4);
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { got[i] = compile_cached(m); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(jit_stats().compiles, 1u);
  for (auto& g : got) EXPECT_EQ(g.get(), got[0].get());
}

TEST_F(JitCache, IndependentKernelsCompileInParallel) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      if (!compile_cached(test_module("parallel_" + std::to_string(i) + random_hex()))
               ->image.empty())
        ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(jit_stats().compiles, 4u);
}

// ---------------------------------------------------------------- the catalog

// Every module the backend can request, compiled for sm_90 (an H100) as the GPU would: any
// compile error or warning fails. One test per family, so ctest runs them in parallel.
class JitCatalog : public ::testing::TestWithParam<std::string> {};

TEST_P(JitCatalog, EveryModuleCompilesCleanlyForSm90) {
  std::vector<std::pair<std::string, ModuleSource>> modules;
  for_each_catalog_module(GetParam(), [&](const std::string& name, const ModuleSource& src) {
    modules.emplace_back(name, src);
  });
  ASSERT_FALSE(modules.empty());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < modules.size();) {
      auto& [name, src] = modules[i];
      try {
        ModuleSource named = src;
        named.name = name;
        CompiledModule m = compile(named, "sm_90");
        if (!m.log.empty()) {
          std::lock_guard lk(mu);
          failures.push_back(name + ": warnings:\n" + m.log);
        }
        if (m.kernels.size() != src.kernels.size()) {
          std::lock_guard lk(mu);
          failures.push_back(name + ": kernels missing");
        }
      } catch (const std::exception& e) {
        std::lock_guard lk(mu);
        failures.push_back(name + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  unsigned n = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << modules.size() << " modules failed";
}

INSTANTIATE_TEST_SUITE_P(Families, JitCatalog, ::testing::ValuesIn(module_catalog_families()),
                         [](const auto& info) { return info.param; });

TEST(JitCatalogFamilies, IncludeTheElementwiseFamilies) {
  auto f = module_catalog_families();
  for (const char* family : {"unary", "binary", "copy"}) {
    EXPECT_NE(std::find(f.begin(), f.end(), family), f.end()) << family;
  }
  EXPECT_THROW(for_each_catalog_module("no_such_family", [](auto&, auto&) {}),
               std::invalid_argument);
}

#else

TEST(Jit, RequiresCuda) {
  GTEST_SKIP() << "kiln was built without CUDA";
}

#endif  // KILN_WITH_CUDA
