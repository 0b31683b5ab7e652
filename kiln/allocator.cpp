#include "kiln/allocator.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <utility>
#include <string>

#include "kiln/backend/gpu.h"
#include "kiln/device.h"
#include "kiln/host_writes.h"

namespace kiln {

namespace {

// Caching host allocator. Large blocks are kept after free and reused for requests of up
// to the same size: a fresh large malloc is an mmap whose pages fault on first touch, which
// costs as much as a memory-bound op over the same bytes.
class HostAllocator {
 public:
  static constexpr size_t kAlign = 64;
  static constexpr size_t kSmall = 1 << 14;       // up to this: free lists per size
  static constexpr size_t kSmallCache = 4 << 20;  // bytes the small free lists may hold

  HostAllocator() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    total_ = pages > 0 && page > 0 ? static_cast<size_t>(pages) * page : (size_t(8) << 30);
    limit_ = total_;
    cache_limit_ = total_ / 4;
    const char* poison = std::getenv("KILN_POISON");
    poison_ = poison && *poison && *poison != '0';
  }

  // With KILN_POISON=1 every new buffer is filled with 0xFF bytes (NaN for floats, -1 for
  // integers), so tests catch output elements a kernel never wrote.
  void* poisoned(void* p, size_t size) {
    if (poison_) std::memset(p, 0xFF, size);
    return p;
  }

  void* malloc(size_t nbytes) {
    size_t size = round(nbytes);
    if (size <= kSmall) return malloc_small(nbytes, size);
    {
      std::lock_guard lk(mu_);
      // Reuse the smallest cached block that fits and wastes at most a quarter of itself.
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first - size <= it->first / 4) {
        void* p = it->second.ptr;
        size_t got = it->first;
        free_.erase(it);
        cached_ -= got;
        note_alloc(got);
        sizes_[p] = got;
        return poisoned(p, got);
      }
      if (active_ + size > limit_) {
        release_all_locked();
        if (active_ + size > limit_) throw over_limit(nbytes);
      }
    }
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) {
      std::lock_guard lk(mu_);
      release_all_locked();
      p = std::aligned_alloc(kAlign, size);
      if (!p) {
        throw std::runtime_error(
            "[malloc] Out of host memory allocating " + std::to_string(nbytes) + " bytes.");
      }
    }
    std::lock_guard lk(mu_);
    note_alloc(size);
    sizes_[p] = size;
    return poisoned(p, size);
  }

  void free(void* p, size_t nbytes) {
    if (!p) return;
    size_t size = round(nbytes);
    if (size <= kSmall) return free_small(p, size);
    std::lock_guard lk(mu_);
    auto it = sizes_.find(p);
    size = it->second;
    sizes_.erase(it);
    active_ -= size;
    if (size <= cache_limit_) {
      free_.emplace(size, Block{p});
      cached_ += size;
      if (cached_ > cache_limit_) release_cache_locked(cached_ - cache_limit_);
    } else {
      std::free(p);
    }
  }

  size_t active() { return active_.load(); }
  size_t peak() { return peak_.load(); }
  // As MLX: the peak restarts from 0 and follows active memory from the next allocation.
  void reset_peak() { peak_.store(0); }
  size_t cache() {
    std::lock_guard lk(mu_);
    std::lock_guard small(small_mu_);
    return cached_ + small_cached_;
  }
  size_t set_limit(size_t l) { return limit_.exchange(l); }
  size_t limit() { return limit_.load(); }
  size_t set_cache_limit(size_t l) {
    std::lock_guard lk(mu_);
    size_t old = std::exchange(cache_limit_, l);
    if (cached_ > cache_limit_) release_cache_locked(cached_ - cache_limit_);
    bool trim;
    {
      std::lock_guard small(small_mu_);
      small_limit_ = std::min(l, kSmallCache);
      trim = small_cached_ > small_limit_;
    }
    if (trim) release_small();
    return old;
  }
  void clear() {
    std::lock_guard lk(mu_);
    release_all_locked();
  }

 private:
  struct Block {
    void* ptr;
  };

  static size_t round(size_t n) {
    n = std::max<size_t>(n, 1);
    if (n <= kSmall) return (n + kAlign - 1) & ~(kAlign - 1);
    return (n + 4095) & ~size_t(4095);  // pages
  }

  void note_alloc(size_t size) {
    size_t now = active_.fetch_add(size) + size;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }

  void* malloc_small(size_t nbytes, size_t size) {
    if (active_.load(std::memory_order_relaxed) + size > limit_.load(std::memory_order_relaxed)) {
      std::lock_guard lk(mu_);
      release_all_locked();
      if (active_ + size > limit_) throw over_limit(nbytes);
    }
    void* p = nullptr;
    {
      std::lock_guard lk(small_mu_);
      void*& head = small_free_[size / kAlign - 1];
      if (head) {
        p = std::exchange(head, *static_cast<void**>(head));
        small_cached_ -= size;
      }
    }
    if (!p) p = std::aligned_alloc(kAlign, size);  // size is a multiple of kAlign
    if (!p) {
      throw std::runtime_error("[malloc] Out of host memory allocating " +
                               std::to_string(nbytes) + " bytes.");
    }
    note_alloc(size);
    return poisoned(p, size);
  }

  // Small blocks are kept on a free list per size (64-byte steps) up to kSmallCache bytes:
  // glibc's aligned_alloc does not use its per-thread cache, and an eager-style op on a
  // small array allocates one output per call.
  void free_small(void* p, size_t size) {
    active_ -= size;
    {
      std::lock_guard lk(small_mu_);
      if (small_cached_ + size <= small_limit_) {
        void*& head = small_free_[size / kAlign - 1];
        *static_cast<void**>(p) = head;
        head = p;
        small_cached_ += size;
        return;
      }
    }
    std::free(p);
  }

  void release_small() {
    std::lock_guard lk(small_mu_);
    for (void*& head : small_free_) {
      while (head) std::free(std::exchange(head, *static_cast<void**>(head)));
    }
    small_cached_ = 0;
  }

  std::runtime_error over_limit(size_t nbytes) const {
    return std::runtime_error(
        "[malloc] Allocating " + std::to_string(nbytes) + " bytes would exceed the host memory " +
        "limit of " + std::to_string(limit_.load()) + " bytes (" + std::to_string(active_.load()) +
        " in use).");
  }

  // Empties both caches (caller holds mu_).
  void release_all_locked() {
    release_cache_locked(cached_);
    release_small();
  }

  // Frees at least `bytes` of the large-block cache, largest blocks first.
  void release_cache_locked(size_t bytes) {
    while (bytes > 0 && !free_.empty()) {
      auto it = std::prev(free_.end());
      std::free(it->second.ptr);
      bytes -= std::min(bytes, it->first);
      cached_ -= it->first;
      free_.erase(it);
    }
  }

  std::mutex mu_;  // taken before small_mu_ where both are held
  std::multimap<size_t, Block> free_;
  std::map<void*, size_t> sizes_;  // large live blocks: their real (rounded) size
  size_t total_, cache_limit_;
  std::atomic<size_t> limit_;
  bool poison_ = false;
  std::atomic<size_t> active_{0}, peak_{0};  // atomics: small blocks skip the lock
  size_t cached_ = 0;

  std::mutex small_mu_;
  std::array<void*, kSmall / kAlign> small_free_{};  // heads of intrusive free lists
  size_t small_cached_ = 0, small_limit_ = kSmallCache;
};

HostAllocator& host_allocator() {
  static auto* a = new HostAllocator;  // never destroyed: buffers may outlive statics
  return *a;
}

}  // namespace

namespace allocator {

void* host_malloc(size_t nbytes) { return host_allocator().malloc(nbytes); }
void host_free(void* ptr, size_t nbytes) { host_allocator().free(ptr, nbytes); }

}  // namespace allocator

namespace {
// Lets make_shared reach Storage's protected constructor: one allocation per storage.
struct StorageImpl : Storage {
  explicit StorageImpl(size_t nbytes) : Storage(nbytes) {}
};
}  // namespace

std::shared_ptr<Storage> Storage::host(size_t nbytes) {
  std::shared_ptr<Storage> s = std::make_shared<StorageImpl>(nbytes);
  s->host_.store(allocator::host_malloc(nbytes), std::memory_order_relaxed);
  return s;
}

std::shared_ptr<Storage> Storage::wrap_host(void* ptr, size_t nbytes, Deleter deleter) {
  std::shared_ptr<Storage> s = std::make_shared<StorageImpl>(nbytes);
  s->host_.store(ptr, std::memory_order_relaxed);
  s->host_deleter_ = deleter ? std::move(deleter) : [](void*) {};
  return s;
}

std::shared_ptr<Storage> Storage::device(std::unique_ptr<DeviceCopy> copy, size_t nbytes) {
  std::shared_ptr<Storage> s = std::make_shared<StorageImpl>(nbytes);
  s->device_ = std::move(copy);
  return s;
}

Storage::~Storage() {
  if (host_writable()) host_writes::forget(*this);
  void* p = host_.load(std::memory_order_relaxed);
  if (!p) return;
  if (host_deleter_) host_deleter_(p);
  else allocator::host_free(p, nbytes_);
}

void* Storage::materialize_host() {
  std::lock_guard lk(mu_);
  void* p = host_.load(std::memory_order_acquire);
  if (p) return p;
  if (!device_) throw std::runtime_error("[Storage] Buffer has neither a host nor a device copy.");
  p = allocator::host_malloc(nbytes_);
  try {
    device_->copy_to_host(p, nbytes_);
  } catch (...) {
    allocator::host_free(p, nbytes_);
    throw;
  }
  host_.store(p, std::memory_order_release);
  return p;
}

// Memory statistics: the host allocator for the CPU, the GPU backend for GPUs.
#define KILN_MEM_DISPATCH(CPU_EXPR, GPU_EXPR) \
  return d.type == Device::cpu ? (CPU_EXPR) : (GPU_EXPR)

size_t get_active_memory(const Device& d) {
  KILN_MEM_DISPATCH(host_allocator().active(), gpu::get_active_memory(d.index));
}
size_t get_peak_memory(const Device& d) {
  KILN_MEM_DISPATCH(host_allocator().peak(), gpu::get_peak_memory(d.index));
}
void reset_peak_memory(const Device& d) {
  if (d.type == Device::cpu) host_allocator().reset_peak();
  else gpu::reset_peak_memory(d.index);
}
size_t get_cache_memory(const Device& d) {
  KILN_MEM_DISPATCH(host_allocator().cache(), gpu::get_cache_memory(d.index));
}
size_t set_memory_limit(const Device& d, size_t limit) {
  KILN_MEM_DISPATCH(host_allocator().set_limit(limit), gpu::set_memory_limit(d.index, limit));
}
size_t get_memory_limit(const Device& d) {
  KILN_MEM_DISPATCH(host_allocator().limit(), gpu::get_memory_limit(d.index));
}
size_t set_cache_limit(const Device& d, size_t limit) {
  KILN_MEM_DISPATCH(host_allocator().set_cache_limit(limit), gpu::set_cache_limit(d.index, limit));
}
void clear_cache(const Device& d) {
  if (d.type == Device::cpu) host_allocator().clear();
  else gpu::clear_cache(d.index);
}
#undef KILN_MEM_DISPATCH

size_t get_active_memory() { return get_active_memory(default_device()); }
size_t get_peak_memory() { return get_peak_memory(default_device()); }
void reset_peak_memory() { reset_peak_memory(default_device()); }
size_t get_cache_memory() { return get_cache_memory(default_device()); }
size_t set_memory_limit(size_t limit) { return set_memory_limit(default_device(), limit); }
size_t get_memory_limit() { return get_memory_limit(default_device()); }
size_t set_cache_limit(size_t limit) { return set_cache_limit(default_device(), limit); }
void clear_cache() { clear_cache(default_device()); }

}  // namespace kiln
