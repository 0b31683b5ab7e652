#include "random_state.h"

#include <chrono>
#include <optional>

#include "convert.h"
#include "kiln/random.h"
#include "kiln/utils.h"

namespace kiln::python {

namespace {

// The handle class: it holds nothing, every access reads the calling thread's key.
struct RandomState {};

std::optional<array>& thread_slot() {
  thread_local std::optional<array> key;
  return key;
}

uint64_t clock_seed() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

class ThreadKeyStore : public random::KeyStore {
 public:
  array load() override { return thread_random_key(); }
  void store(array key) override { set_thread_random_key(std::move(key)); }
};

}  // namespace

array thread_random_key() {
  auto& slot = thread_slot();
  if (!slot) slot = random::key(clock_seed());
  return *slot;
}

void set_thread_random_key(array key) {
  thread_slot() = std::move(key);
}

bool is_random_state(py::handle h) {
  return py::isinstance<RandomState>(h);
}

void init_random_state(py::module_& random) {
  py::class_<RandomState>(random, "_RandomState", R"doc(
    The global random state (``kiln.core.random.state``): one object for all threads whose
    single element, ``state[0]``, is the calling thread's key, as in MLX. Each thread has its
    own key, seeded from the clock on first use; :func:`seed` resets the calling thread's.
    Pass it to :func:`compile` as ``inputs=`` and ``outputs=`` so that compiled functions
    draw from and advance it.
  )doc")
      .def("__len__", [](const RandomState&) { return 1; })
      .def("__getitem__",
           [](const RandomState&, int64_t i) {
             if (i != 0 && i != -1) {
               throw py::index_error(
                   msg("[random.state] Index ", i, " is out of range: the state holds one key."));
             }
             return thread_random_key();
           })
      .def("__iter__", [](const RandomState&) {
        py::list items;
        items.append(py::cast(thread_random_key()));
        return py::iter(items);
      });
  random.attr("state") = py::cast(RandomState{});
  random::set_key_store(std::make_shared<ThreadKeyStore>());
}

}  // namespace kiln::python
