#include "kiln/host_writes.h"

#include <mutex>
#include <unordered_map>

#include "kiln/allocator.h"

namespace kiln::host_writes {

namespace {

struct Entry {
  int writers = 0;
  bool dirty = false;  // written since the GPU's last refresh
};

struct Table {
  std::mutex mu;
  std::unordered_map<const Storage*, Entry> entries;
};

Table& table() {
  static auto* t = new Table;  // never destroyed: storages may die during static destruction
  return *t;
}

}  // namespace

void add_writer(Storage& st) {
  st.mark_host_writable();
  auto& t = table();
  std::lock_guard lk(t.mu);
  Entry& e = t.entries[&st];
  e.writers++;
  e.dirty = true;
}

void remove_writer(Storage& st) {
  auto& t = table();
  std::lock_guard lk(t.mu);
  auto it = t.entries.find(&st);
  if (it != t.entries.end() && it->second.writers > 0) it->second.writers--;
}

bool take_refresh(const Storage& st) {
  auto& t = table();
  std::lock_guard lk(t.mu);
  auto it = t.entries.find(&st);
  if (it == t.entries.end()) return false;
  if (it->second.writers > 0) return true;
  const bool dirty = it->second.dirty;
  t.entries.erase(it);  // no writer left and now seen: immutable again
  return dirty;
}

void forget(const Storage& st) {
  auto& t = table();
  std::lock_guard lk(t.mu);
  t.entries.erase(&st);
}

}  // namespace kiln::host_writes
