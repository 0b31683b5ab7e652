// kiln::array: a lazy, reference-counted n-dimensional array.
//
// An array is a cheap handle (copying shares). Until evaluated it holds the primitive
// that computes it and that primitive's inputs; evaluation fills its data and drops
// those links so graphs free as early as possible. Views (reshape, transpose, slice,
// broadcast) share the buffer of their source with their own strides and offset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <vector>

#include "kiln/allocator.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/event.h"
#include "kiln/scalar_cast.h"

namespace kiln {

/** Dimension sizes. */
using Shape = std::vector<int32_t>;
/** Strides in elements (not bytes), one per dimension. */
using Strides = std::vector<int64_t>;

class Primitive;

class array {
 public:
  /** Layout facts about the data of an evaluated array. */
  struct Flags {
    // The elements occupy a dense span of `data_size` elements (in some order).
    bool contiguous : 1;
    bool row_contiguous : 1;  // C order
    bool col_contiguous : 1;  // Fortran order
  };

  enum class Status : uint8_t {
    unscheduled,  // has a primitive; nothing ran yet
    scheduled,    // submitted to a stream; `event()` says when it is done
    available,    // data is there (or `error()` is set)
  };

  /** A 0-d array holding `val`, converted to `dtype`. */
  template <typename T>
  explicit array(T val, Dtype dtype = dtype_v<T>);

  /** A 1-d array of the values in `data`, converted to `dtype`. */
  template <typename T>
  array(std::initializer_list<T> data, Dtype dtype = dtype_v<T>);

  /** An array of `shape` from the values in `data`; their count must equal the size. */
  template <typename T>
  array(std::initializer_list<T> data, Shape shape, Dtype dtype = dtype_v<T>);

  /** An array of `shape` from `prod(shape)` values read through `it`, converted to `dtype`. */
  template <typename It>
  array(It it, Shape shape, Dtype dtype = dtype_v<typename std::iterator_traits<It>::value_type>);

  /** Adopts `storage` (no copy) as a row-contiguous array of `shape` and `dtype`. */
  array(std::shared_ptr<Storage> storage, Shape shape, Dtype dtype);

  /** Wraps external host memory without copying; `deleter(data)` runs when unused. */
  array(void* data, Shape shape, Dtype dtype, Storage::Deleter deleter);

  /** An unevaluated array computed by `primitive` from `inputs`. */
  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs);

  /** The outputs of one multi-output primitive application (siblings of each other). */
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        const std::shared_ptr<Primitive>& primitive,
                                        const std::vector<array>& inputs);

  array(const array&) = default;
  array(array&&) noexcept = default;
  array& operator=(const array&) = default;
  array& operator=(array&&) noexcept = default;
  ~array();

  // Metadata.
  Dtype dtype() const { return desc_->dtype; }
  const Shape& shape() const { return desc_->shape; }
  /** Size of dimension `dim` (negative counts from the end). */
  int32_t shape(int dim) const;
  const Strides& strides() const { return desc_->strides; }
  int64_t strides(int dim) const;
  size_t ndim() const { return desc_->shape.size(); }
  size_t size() const { return desc_->size; }
  size_t itemsize() const { return desc_->dtype.size; }
  size_t nbytes() const { return size() * itemsize(); }
  /** Number of elements in the span of the underlying buffer this array covers. */
  size_t data_size() const { return desc_->data_size; }
  Flags flags() const { return desc_->flags; }
  /** Identity of the array node (stable while any copy of the handle lives). */
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(desc_.get()); }

  // Evaluation.
  /** Evaluates (if needed) and waits for the data. Throws what the computation threw. */
  void eval();
  /** Waits for a scheduled array; rethrows an error of its computation. */
  void wait();
  Status status() const { return desc_->status; }
  void set_status(Status s) { desc_->status = s; }
  bool is_available() const;
  const Event& event() const { return desc_->event; }
  void set_event(Event e) { desc_->event = e; }
  /** The exception its computation threw, or null. */
  std::exception_ptr error() const { return desc_->error; }
  void set_error(std::exception_ptr e) { desc_->error = e; }

  /** The single element converted to T; evaluates first. Throws if size() != 1. */
  template <typename T>
  T item();

  /** Host pointer to the first element (after the view offset). Throws if the array has
   * not been evaluated. */
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(static_cast<char*>(host_base()) + desc_->offset);
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(static_cast<char*>(host_base()) + desc_->offset);
  }

  // Graph.
  bool has_primitive() const { return desc_->node != nullptr; }
  /** Identity of the graph node shared by sibling outputs (null once evaluated). */
  const void* graph_node() const { return desc_->node.get(); }
  Primitive& primitive() const;
  const std::shared_ptr<Primitive>& primitive_ptr() const;
  /** Inputs of the primitive (empty once evaluated). */
  std::vector<array>& inputs();
  const std::vector<array>& inputs() const;
  /** All outputs of this array's primitive, in order, this one included. Outputs the user
   * dropped are recreated (they are computed together anyway). */
  std::vector<array> outputs() const;
  /** The other outputs of the primitive. */
  std::vector<array> siblings() const;
  /** Whether the primitive has more than one output. */
  bool is_multi_output() const { return desc_->node && !desc_->node->outputs.empty(); }
  /** For graph walks: marks this array's node with `mark` and returns true if it was not
   * marked with it already (each walk uses a fresh mark from `new_visit_mark`). */
  bool mark_visited(uint64_t mark) const {
    if (desc_->node->visit_mark == mark) return false;
    desc_->node->visit_mark = mark;
    return true;
  }
  static uint64_t new_visit_mark();
  /** Position of this array among the outputs of its primitive. */
  uint32_t sibling_position() const { return desc_->position; }
  /** Drops the primitive and inputs of this array and its siblings. */
  void detach();
  /** Arrays made while tracing a function transformation keep their graph after eval. */
  bool is_tracer() const { return desc_->is_tracer; }
  void set_tracer(bool t) { desc_->is_tracer = t; }

  // Data (used by primitives' eval).
  /** Sets a row-contiguous buffer holding exactly `size()` elements. */
  void set_data(std::shared_ptr<Storage> storage);
  /** Sets a buffer with explicit layout; `offset` is in bytes. */
  void set_data(std::shared_ptr<Storage> storage, size_t data_size, Strides strides, Flags flags,
                int64_t offset = 0);
  /** Makes this array a view of `other`'s buffer (offset in elements, added to other's). */
  void copy_shared_buffer(const array& other, const Strides& strides, Flags flags, size_t data_size,
                          int64_t offset = 0);
  void copy_shared_buffer(const array& other);
  /** As copy_shared_buffer, but takes over `other`'s reference (donation). */
  void move_shared_buffer(array other);
  bool has_storage() const { return desc_->storage != nullptr; }
  const std::shared_ptr<Storage>& storage_ptr() const { return desc_->storage; }
  Storage& storage() const { return *desc_->storage; }
  /** Byte offset of the first element within the storage. */
  int64_t offset() const { return desc_->offset; }
  /** True when nothing else references this array or its buffer, so an op may write its
   * output into the buffer. Memory kiln did not allocate (e.g. a wrapped NumPy array) is
   * never donated. */
  bool is_donatable() const {
    return desc_.use_count() == 1 && desc_->storage && desc_->storage.use_count() == 1 &&
           desc_->storage->owns_host();
  }

  /** Row-major strides for `shape`. */
  static Strides row_major_strides(const Shape& shape);
  /** Flags and data_size of a view with `shape` and `strides` (elements). Contiguous means
   * the elements densely fill a span starting at the first element (all strides >= 0). */
  static std::pair<Flags, size_t> layout(const Shape& shape, const Strides& strides);

 private:
  struct ArrayDesc;
  // The graph node shared by all outputs of one primitive application.
  struct Node {
    std::shared_ptr<Primitive> primitive;
    std::vector<array> inputs;
    // Multi-output nodes only (a single output is the desc that owns the node): the
    // outputs, and what is needed to recreate the ones the user dropped.
    std::vector<std::weak_ptr<ArrayDesc>> outputs;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    // Traced multi-output nodes only: buffers of evaluated outputs the user dropped while
    // the node lives on for a vjp (which reads every output); outputs() hands them back.
    struct KeptOutput {
      uint32_t position;
      std::shared_ptr<Storage> storage;
      Strides strides;
      Flags flags;
      size_t data_size;
      int64_t offset;
    };
    std::vector<KeptOutput> kept;  // guarded by a mutex in array.cpp (a rare path)
    uint64_t visit_mark = 0;       // graph walks mark visited nodes (see mark_visited)
  };
  struct ArrayDesc {
    Shape shape;
    Strides strides;
    size_t size;
    Dtype dtype;
    Status status = Status::available;
    bool is_tracer = false;
    uint32_t position = 0;
    Flags flags{true, true, true};
    size_t data_size = 0;
    int64_t offset = 0;  // bytes
    std::shared_ptr<Storage> storage;
    std::shared_ptr<Node> node;
    Event event;
    std::exception_ptr error;

    ArrayDesc(Shape shape, Dtype dtype);
    ~ArrayDesc();
  };

  explicit array(std::shared_ptr<ArrayDesc> desc) : desc_(std::move(desc)) {}
  void* host_base() const {
    if (!desc_->storage) [[unlikely]]
      throw_unevaluated();
    return desc_->storage->host_ptr();
  }
  [[noreturn]] static void throw_unevaluated();
  void init_from(const void* src, Dtype src_dtype);
  template <typename It>
  void init_from_iter(It it);

  std::shared_ptr<ArrayDesc> desc_;
};

// ---------------------------------------------------------------------------------------
// Template implementations.

namespace detail {
size_t checked_size(const Shape& shape, const char* where);
}

template <typename It>
void array::init_from_iter(It it) {
  auto storage = Storage::host(nbytes());
  dispatch_dtype(dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = static_cast<T*>(storage->host_ptr());
    for (size_t i = 0; i < size(); ++i, ++it) dst[i] = scalar_cast<T>(*it);
  });
  set_data(std::move(storage));
}

template <typename T>
array::array(T val, Dtype dtype) : desc_(std::make_shared<ArrayDesc>(Shape{}, dtype)) {
  init_from_iter(&val);
}

template <typename T>
array::array(std::initializer_list<T> data, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(Shape{static_cast<int32_t>(data.size())}, dtype)) {
  init_from_iter(data.begin());
}

template <typename T>
array::array(std::initializer_list<T> data, Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  if (data.size() != size()) {
    throw std::invalid_argument("[array] Data has " + std::to_string(data.size()) +
                                " elements but the shape needs " + std::to_string(size()) + ".");
  }
  init_from_iter(data.begin());
}

template <typename It>
array::array(It it, Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  init_from_iter(it);
}

template <typename T>
T array::item() {
  if (size() != 1) {
    throw std::invalid_argument(
        "[item] Only arrays of one element can be converted to a scalar; size is " +
        std::to_string(size()) + ".");
  }
  eval();
  return dispatch_dtype(dtype(), [&](auto tag) -> T {
    using U = decltype(tag);
    return scalar_cast<T>(*data<U>());
  });
}

}  // namespace kiln
