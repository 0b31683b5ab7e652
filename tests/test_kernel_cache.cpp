// Robustness of the disk cache of CPU custom kernels (the shared code of
// backend/kernels/disk_cache.cpp, which the GPU JIT uses too; tests/test_jit.cpp covers
// its NVRTC side): 16 processes compiling the same and different kernels into one
// directory at once leave whole, loadable entries and no temporary files; a truncated,
// bit-flipped, foreign or other user's entry is rejected and recompiled, never loaded; a
// disk that refuses writes leaves memory-only caching with a warning.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "kiln/backend/cpu/kernel_runtime/compiled_kernel.h"
#include "kiln/backend/kernels/disk_cache.h"
#include "kiln/fast.h"
#include "scoped_env.h"
#include "test_utils.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
namespace cpu_rt = kiln::cpu_rt;

constexpr int kProcesses = 16;
constexpr int kGroups = 4;  // kernels shared by a quarter of the processes each

std::string random_tag() {
  static std::mt19937_64 g(std::random_device{}());
  return std::to_string(g());
}

using test::ScopedEnv;

// A kernel computing x * factor + tag-free constant; the tag only changes the source (and
// so the cache key), `factor` what it computes, so a wrong entry shows in the values.
std::vector<int> run_kernel(const std::string& tag, int factor) {
  auto k =
      fast::metal_kernel("cache_probe", {"x"}, {"out"},
                         "// " + tag + "\nuint i = thread_position_in_grid.x;\nout[i] = x[i] * " +
                             std::to_string(factor) + ";\n");
  array x(std::vector<int>{1, 2, 3}.begin(), Shape{3}, int32);
  auto out = k({x}, {{3}}, {int32}, std::make_tuple(3, 1, 1), std::make_tuple(3, 1, 1), {},
               std::nullopt, false, Device::cpu)[0];
  std::vector<int> v;
  for (double d : test::to_double(out)) v.push_back(static_cast<int>(d));
  return v;
}

std::vector<int> expected(int factor) {
  return {factor, 2 * factor, 3 * factor};
}

int wait_exit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class KernelCache : public ::testing::Test {
 public:
  void SetUp() override {
    if (const char* parent = std::getenv("KILN_TEST_KCACHE_DIR")) {
      dir_ = parent;
    } else {
      root_ = fs::temp_directory_path() / ("kiln-kcache-" + random_tag());
      dir_ = (root_ / "a" / "cache").string();
    }
    env_.emplace("KILN_CACHE_DIR", dir_);
    cpu_rt::clear_kernel_memory_cache();
    cpu_rt::reset_kernel_cache_stats();
  }
  void TearDown() override {
    env_.reset();
    cpu_rt::clear_kernel_memory_cache();
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    if (!fs::exists(dir_)) return v;
    for (const auto& f : fs::directory_iterator(dir_))
      if (f.path().extension() == ".kso") v.push_back(f.path().string());
    return v;
  }
  fs::path root_;
  std::string dir_;
  std::optional<ScopedEnv> env_;
};

// One of the concurrent processes: the kernel every process compiles, and its group's.
TEST_F(KernelCache, ConcurrentChild) {
  const char* tag = std::getenv("KILN_TEST_KCACHE_TAG");
  const char* group = std::getenv("KILN_TEST_KCACHE_GROUP");
  if (!tag || !group) GTEST_SKIP() << "run by ConcurrentProcessesLeaveAConsistentCache";
  const int g = std::atoi(group);
  EXPECT_EQ(run_kernel(std::string(tag) + "-shared", 7), expected(7));
  EXPECT_EQ(run_kernel(std::string(tag) + "-group" + group, 10 + g), expected(10 + g));
  EXPECT_EQ(cpu_rt::kernel_cache_stats().rejected, 0u) << "a torn entry was read";
}

TEST_F(KernelCache, ConcurrentProcessesLeaveAConsistentCache) {
  const std::string tag = random_tag();
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses; ++i) {
    pids.push_back(test::spawn_self(
        "KernelCache.ConcurrentChild",
        {"KILN_TEST_KCACHE_TAG=" + tag, "KILN_TEST_KCACHE_GROUP=" + std::to_string(i % kGroups),
         "KILN_TEST_KCACHE_DIR=" + dir_}));
    ASSERT_GT(pids.back(), 0);
  }
  for (size_t i = 0; i < pids.size(); ++i) EXPECT_EQ(wait_exit(pids[i]), 0) << "process " << i;
  // One whole entry per distinct kernel, no temporary file left behind.
  EXPECT_EQ(entries().size(), 1u + kGroups);
  for (const auto& f : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(f.path().filename().string().starts_with(".tmp")) << f.path();
  }
  // This process loads every one of them from disk and gets the right values.
  EXPECT_EQ(run_kernel(tag + "-shared", 7), expected(7));
  for (int g = 0; g < kGroups; ++g) {
    EXPECT_EQ(run_kernel(tag + "-group" + std::to_string(g), 10 + g), expected(10 + g));
  }
  auto s = cpu_rt::kernel_cache_stats();
  EXPECT_EQ(s.disk_hits, 1u + kGroups);
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(s.rejected, 0u);
}

// Damages the single entry of a freshly compiled kernel with `damage`, then expects the
// next process-level load to reject it (with a warning), recompile, and rewrite it.
void expect_rejected_and_recompiled(KernelCache* t, const std::string& tag,
                                    const std::function<void(const std::string&)>& damage) {
  auto old = t->entries();
  EXPECT_EQ(run_kernel(tag, 5), expected(5));
  std::vector<std::string> es;
  for (const auto& e : t->entries())
    if (std::find(old.begin(), old.end(), e) == old.end()) es.push_back(e);
  ASSERT_EQ(es.size(), 1u);
  damage(es[0]);
  cpu_rt::clear_kernel_memory_cache();
  cpu_rt::reset_kernel_cache_stats();
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_kernel(tag, 5), expected(5));
  std::string err = testing::internal::GetCapturedStderr();
  auto s = cpu_rt::kernel_cache_stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
  cpu_rt::clear_kernel_memory_cache();
  cpu_rt::reset_kernel_cache_stats();
  EXPECT_EQ(run_kernel(tag, 5), expected(5));
  EXPECT_EQ(cpu_rt::kernel_cache_stats().disk_hits, 1u) << "the entry was rewritten whole";
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

// The entry format itself, without a compiler: every truncation and every single-bit flip
// of a written entry is rejected, and reading random bytes as a payload never overruns.
TEST(DiskCacheEntry, EveryTruncationAndBitFlipIsRejected) {
  const fs::path dir = fs::temp_directory_path() / ("kiln-entry-" + random_tag());
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all);
  const std::string key = std::string(64, 'a');
  const std::string magic = "KILNTEST";
  std::string payload(300, '\0');
  for (auto& c : payload) c = static_cast<char>(test::rng()());
  const std::string path = (dir / "entry").string();
  std::string why;
  ASSERT_TRUE(kernels::write_entry(dir.string(), path, magic, key, payload, why)) << why;
  auto good = kernels::read_entry(path, magic, key);
  ASSERT_EQ(good.status, kernels::EntryStatus::ok);
  EXPECT_EQ(good.payload, payload);
  EXPECT_EQ(kernels::read_entry(path, magic, std::string(64, 'b')).status,
            kernels::EntryStatus::rejected)
      << "another key's entry";
  EXPECT_EQ(kernels::read_entry(path, "OTHERMAG", key).status, kernels::EntryStatus::rejected);
  const std::string bytes = slurp(path);
  for (size_t n = 0; n < bytes.size(); ++n) {
    spit(path, bytes.substr(0, n));
    ASSERT_EQ(kernels::read_entry(path, magic, key).status, kernels::EntryStatus::rejected)
        << "truncated to " << n;
  }
  spit(path, bytes + "x");
  ASSERT_EQ(kernels::read_entry(path, magic, key).status, kernels::EntryStatus::rejected);
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string d = bytes;
      d[i] = static_cast<char>(d[i] ^ (1 << bit));
      spit(path, d);
      ASSERT_EQ(kernels::read_entry(path, magic, key).status, kernels::EntryStatus::rejected)
          << "byte " << i << " bit " << bit;
    }
  }
  for (int round = 0; round < 2000; ++round) {
    std::string junk(test::rng()() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(test::rng()());
    kernels::ByteReader r{junk};
    while (r.ok && !r.at_end()) r.str();
    EXPECT_LE(r.pos, junk.size());
  }
  fs::remove_all(dir);
}

TEST_F(KernelCache, TruncatedEntryIsRecompiled) {
  for (double keep : {0.0, 0.05, 0.5, 0.999}) {
    expect_rejected_and_recompiled(this, random_tag(), [&](const std::string& p) {
      std::string d = slurp(p);
      spit(p, d.substr(0, static_cast<size_t>(d.size() * keep)));
    });
  }
}

TEST_F(KernelCache, BitFlipsAnywhereAreDetected) {
  // Header (magic, key, size, hash) and payload (identity, object, log).
  for (double where : {0.0, 0.02, 0.05, 0.09, 0.3, 0.7, 0.9999}) {
    expect_rejected_and_recompiled(this, random_tag(), [&](const std::string& p) {
      std::string d = slurp(p);
      size_t i = std::min(d.size() - 1, static_cast<size_t>(d.size() * where));
      d[i] = static_cast<char>(d[i] ^ (1 << (i % 8)));
      spit(p, d);
    });
  }
}

TEST_F(KernelCache, ForeignFilesAreNotLoaded) {
  // Another kernel's whole entry copied over, a plain shared object, and random bytes.
  const std::string other = random_tag();
  run_kernel(other, 9);
  const std::string other_entry = entries()[0];
  const std::string other_bytes = slurp(other_entry);
  fs::remove(other_entry);
  expect_rejected_and_recompiled(this, random_tag(),
                                 [&](const std::string& p) { spit(p, other_bytes); });
  fs::remove(entries()[0]);
  expect_rejected_and_recompiled(this, random_tag(), [&](const std::string& p) {
    std::string elf = std::string(1, '\x7f') + "ELF";
    elf.resize(4096, '\0');
    spit(p, elf);
  });
  fs::remove(entries()[0]);
  expect_rejected_and_recompiled(this, random_tag(), [&](const std::string& p) {
    std::string junk(slurp(p).size(), '\0');
    for (auto& c : junk) c = static_cast<char>(test::rng()());
    spit(p, junk);
  });
}

TEST_F(KernelCache, SymbolicLinkEntryIsNotFollowed) {
  const std::string good_tag = random_tag();
  run_kernel(good_tag, 4);
  const std::string target = entries()[0];
  const std::string tag = random_tag();
  expect_rejected_and_recompiled(this, tag, [&](const std::string& p) {
    fs::remove(p);
    fs::create_symlink(target, p);
  });
}

TEST_F(KernelCache, EntryOwnedByAnotherUserIsNotExecuted) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  expect_rejected_and_recompiled(this, random_tag(), [](const std::string& p) {
    ASSERT_EQ(chown(p.c_str(), 12345, 12345), 0);
  });
}

TEST_F(KernelCache, DirectoryIsCreatedPrivate) {
  run_kernel(random_tag(), 2);
  struct stat st;
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(stat((root_ / "a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u) << "missing parents are private too";
  for (const auto& e : entries()) {
    ASSERT_EQ(stat(e.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0077, 0u) << e << " is readable by others";
  }
}

TEST_F(KernelCache, SharedWritableDirectoryFallsBackToMemory) {
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::all);  // 0777: anyone could plant an entry
  testing::internal::CaptureStderr();
  const std::string tag = random_tag();
  EXPECT_EQ(run_kernel(tag, 3), expected(3));
  EXPECT_EQ(run_kernel(tag, 3), expected(3));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(entries().empty()) << "nothing is written to a shared directory";
  EXPECT_EQ(cpu_rt::kernel_cache_stats().compiles, 1u);
  EXPECT_EQ(cpu_rt::kernel_cache_stats().memory_hits, 1u);
  // The warning is printed once per process; an earlier test may have triggered it.
  (void)err;
  EXPECT_EQ(kernels::cache_dir(), "");
  fs::permissions(dir_, fs::perms::owner_all);
}

// A small tmpfs as the cache directory, mounted read-only or filled up (needs the right to
// mount, as root in a container has; skipped otherwise): kernels still compile and run,
// cached in memory, with a warning, and nothing half-written is left behind.
class KernelCacheOnABadDisk : public KernelCache {
 public:
  bool mount_tmpfs(bool read_only) {
    fs::create_directories(dir_);
    if (mount("tmpfs", dir_.c_str(), "tmpfs", read_only ? MS_RDONLY : 0, "size=64k,mode=0700") !=
        0) {
      return false;
    }
    mounted_ = true;
    return true;
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
    KernelCache::TearDown();
  }
  void expect_memory_only(const std::string& why) {
    testing::internal::CaptureStderr();
    const std::string tag = random_tag();
    EXPECT_EQ(run_kernel(tag, 6), expected(6));
    EXPECT_EQ(run_kernel(tag, 6), expected(6));
    EXPECT_EQ(run_kernel(tag + "b", 8), expected(8));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("disk cache write failed"), std::string::npos) << err;
    EXPECT_NE(err.find(why), std::string::npos) << err;
    auto s = cpu_rt::kernel_cache_stats();
    EXPECT_EQ(s.compiles, 2u);
    EXPECT_EQ(s.memory_hits, 1u);
    EXPECT_TRUE(entries().empty());
    for (const auto& f : fs::directory_iterator(dir_)) {
      EXPECT_FALSE(f.path().filename().string().starts_with(".tmp")) << "left " << f.path();
    }
  }
  bool mounted_ = false;
};

TEST_F(KernelCacheOnABadDisk, ReadOnlyDiskKeepsMemoryCaching) {
  if (!mount_tmpfs(/*read_only=*/true)) GTEST_SKIP() << "cannot mount a tmpfs here";
  expect_memory_only("Read-only file system");
}

TEST_F(KernelCacheOnABadDisk, FullDiskKeepsMemoryCaching) {
  if (!mount_tmpfs(/*read_only=*/false)) GTEST_SKIP() << "cannot mount a tmpfs here";
  {
    std::ofstream fill(dir_ + "/fill", std::ios::binary);
    std::string block(4096, 'x');
    while (fill.write(block.data(), block.size()) && fill.flush()) {
    }
  }
  expect_memory_only("No space left on device");
}

}  // namespace
}  // namespace kiln
