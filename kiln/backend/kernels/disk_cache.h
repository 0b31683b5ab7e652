// The on-disk cache of compiled kernels, shared by the GPU JIT (NVRTC images) and the CPU
// kernels (shared objects from the host compiler).
//
// The directory is $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
// KILN_CACHE=0 turns the disk cache off. It holds code that gets executed, so it must be
// private to the user (0700): a directory others can write to is refused, not repaired.
// Each entry is one file, written atomically (temporary file + rename, so concurrent
// processes are safe) and verified when read:
//   magic (8 bytes) | key (64 hex chars) | payload size (u64 LE) | SHA-256 of payload | payload
// Anything that does not match is rejected, never trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::kernels {

/** Prints "[kiln] <message>" on stderr the first time `message` is seen in this process. */
void warn_once(const std::string& message);

/** The disk cache directory in use, after creating it (0700, parents included) and checking
 * that it is private; "" when the disk cache is off or unusable (a warning says why, once). */
std::string cache_dir();

enum class EntryStatus {
  missing,   // no entry file
  ok,        // `payload` holds the verified content
  rejected,  // an entry exists but is corrupt, truncated, tampered with or for another key
};

struct Entry {
  EntryStatus status = EntryStatus::missing;
  std::string payload;
  std::string reason;  // why an entry was rejected
};

/** Reads the entry file `path` and verifies its owner (this user: the content is executed),
 * magic (8 characters), key, size and content hash. Never throws. */
Entry read_entry(const std::string& path, std::string_view magic, const std::string& key);

/** Writes `payload` as the entry for `key` at `path` (inside `dir`) atomically, mode 0600.
 * Returns false and says why on failure; never throws. */
bool write_entry(const std::string& dir, const std::string& path, std::string_view magic,
                 const std::string& key, const std::string& payload, std::string& why);

/** Writes `data` to `path` atomically through a temporary file in `dir`, mode 0600. */
bool write_file_atomic(const std::string& dir, const std::string& path, std::string_view data,
                       std::string& why);

/** Reads a whole regular file (symbolic links refused) of at most `max_bytes`; with
 * `own_only`, also refuses a file that belongs to another user. */
bool read_file(const std::string& path, std::string& out, std::string& why,
               size_t max_bytes = size_t(1) << 30, bool own_only = false);

/** Little-endian serialization of entry payloads: integers and length-prefixed strings. */
struct ByteWriter {
  std::string out;
  void u32(uint32_t v);
  void u64(uint64_t v);
  void str(std::string_view v);
};

/** Bounds-checked reader of what ByteWriter wrote; `ok` turns false on any overrun. */
struct ByteReader {
  std::string_view in;
  size_t pos = 0;
  bool ok = true;

  uint64_t uint(int bytes);
  std::string str();
  bool at_end() const { return ok && pos == in.size(); }
};

}  // namespace kiln::kernels
