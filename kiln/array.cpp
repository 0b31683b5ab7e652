#include "kiln/array.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "kiln/primitive.h"
#include "kiln/scheduler.h"
#include "kiln/transforms.h"

namespace kiln {

namespace detail {

size_t checked_size(const Shape& shape, const char* where) {
  size_t size = 1;
  for (auto d : shape) {
    if (d < 0) {
      std::ostringstream msg;
      msg << "[" << where << "] Negative dimension " << d << " in shape (";
      for (size_t i = 0; i < shape.size(); ++i) msg << (i ? ", " : "") << shape[i];
      msg << ").";
      throw std::invalid_argument(msg.str());
    }
    size *= static_cast<size_t>(d);
  }
  return size;
}

}  // namespace detail

namespace {

// Guards Node::kept: a dropped output's desc may die on the scheduler's thread while
// outputs() runs on the user's.
std::mutex kept_mu;

}  // namespace

array::ArrayDesc::ArrayDesc(Shape shape_, Dtype dtype_)
    : shape(std::move(shape_)),
      strides(row_major_strides(shape)),
      size(detail::checked_size(shape, "array")),
      dtype(dtype_),
      data_size(size) {}

array::ArrayDesc::~ArrayDesc() {
  if (node && node->outputs.size() > 1 && node.use_count() > 1 && is_tracer && storage) {
    // One entry per position: a recreated output dropped again replaces its entry.
    std::lock_guard lk(kept_mu);
    std::erase_if(node->kept, [&](const Node::KeptOutput& k) { return k.position == position; });
    node->kept.push_back(
        {position, std::move(storage), std::move(strides), flags, data_size, offset});
  }
  // Free long unevaluated chains iteratively: a recursive destructor would overflow the
  // stack on a graph of 10^5 nodes.
  if (!node || node.use_count() != 1) return;
  std::vector<array> pending = std::move(node->inputs);
  node.reset();
  while (!pending.empty()) {
    array a = std::move(pending.back());
    pending.pop_back();
    auto& d = a.desc_;
    if (d.use_count() == 1 && d->node && d->node.use_count() == 1) {
      for (auto& in : d->node->inputs) pending.push_back(std::move(in));
      d->node->inputs.clear();
    }
  }
}

array::~array() = default;

void array::throw_unevaluated() {
  throw std::invalid_argument(
      "[array::data] The array has no data yet; evaluate it first (eval or item).");
}

Strides array::row_major_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  }
  return strides;
}

std::pair<array::Flags, size_t> array::layout(const Shape& shape, const Strides& strides) {
  size_t size = 1;
  bool neg = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    size *= static_cast<size_t>(shape[i]);
    neg |= strides[i] < 0 && shape[i] > 1;
  }
  if (size == 0) return {Flags{true, true, true}, 0};
  // Row and column contiguity ignore size-1 dimensions, whose strides never matter.
  bool row = true, col = true;
  int64_t expect = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    row &= strides[i] == expect;
    expect *= shape[i];
  }
  expect = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    col &= strides[i] == expect;
    expect *= shape[i];
  }
  // Span from the first to the last element touched.
  size_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] > 1)
      span += static_cast<size_t>(shape[i] - 1) * static_cast<size_t>(std::abs(strides[i]));
  }
  bool contiguous = row || col;
  if (!contiguous && !neg && span == size) {
    // A permutation of a dense block: dense iff the sorted strides pack exactly.
    std::vector<std::pair<int64_t, int32_t>> dims;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] > 1) dims.emplace_back(strides[i], shape[i]);
    std::sort(dims.begin(), dims.end());
    int64_t e = 1;
    contiguous = true;
    for (auto [st, sh] : dims) {
      contiguous &= st == e;
      e *= sh;
    }
  }
  return {Flags{contiguous, row, col}, neg ? size : span};
}

array::array(std::shared_ptr<Storage> storage, Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  if (storage->nbytes() < nbytes()) {
    throw std::invalid_argument("[array] Storage of " + std::to_string(storage->nbytes()) +
                                " bytes is too small for " + std::to_string(nbytes()) + " bytes.");
  }
  set_data(std::move(storage));
}

array::array(void* data, Shape shape, Dtype dtype, Storage::Deleter deleter)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  set_data(Storage::wrap_host(data, nbytes(), std::move(deleter)));
}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive,
             std::vector<array> inputs)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  auto node = std::make_shared<Node>();
  node->primitive = std::move(primitive);
  node->inputs = std::move(inputs);
  desc_->node = std::move(node);
  desc_->status = Status::unscheduled;
  for (auto& in : desc_->node->inputs) {
    if (in.is_tracer()) {
      desc_->is_tracer = true;
      break;
    }
  }
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      const std::shared_ptr<Primitive>& primitive,
                                      const std::vector<array>& inputs) {
  if (shapes.size() != dtypes.size()) {
    throw std::invalid_argument(
        "[array::make_arrays] Got a different number of shapes and dtypes.");
  }
  auto node = std::make_shared<Node>();
  node->primitive = primitive;
  node->inputs = inputs;
  node->shapes = shapes;
  node->dtypes = dtypes;
  bool tracer = std::any_of(inputs.begin(), inputs.end(), [](auto& a) { return a.is_tracer(); });
  std::vector<array> outs;
  outs.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto d = std::make_shared<ArrayDesc>(std::move(shapes[i]), dtypes[i]);
    d->node = node;
    d->position = static_cast<uint32_t>(i);
    d->status = Status::unscheduled;
    d->is_tracer = tracer;
    node->outputs.push_back(d);
    outs.push_back(array(std::move(d)));
  }
  return outs;
}

int32_t array::shape(int dim) const {
  int nd = static_cast<int>(ndim());
  int ax = dim < 0 ? dim + nd : dim;
  if (ax < 0 || ax >= nd) {
    throw std::invalid_argument("[array::shape] Axis " + std::to_string(dim) +
                                " is out of bounds for an array with " + std::to_string(nd) +
                                " dimensions.");
  }
  return desc_->shape[ax];
}

int64_t array::strides(int dim) const {
  int nd = static_cast<int>(ndim());
  int ax = dim < 0 ? dim + nd : dim;
  if (ax < 0 || ax >= nd) {
    throw std::invalid_argument("[array::strides] Axis " + std::to_string(dim) +
                                " is out of bounds for an array with " + std::to_string(nd) +
                                " dimensions.");
  }
  return desc_->strides[ax];
}

namespace {
// Raises an array's error; raised here, synchronize() does not raise it again.
[[noreturn]] void raise_error(const std::exception_ptr& err) {
  scheduler::forget_error(err);
  std::rethrow_exception(err);
}
}  // namespace

void array::eval() {
  if (status() != Status::available)
    kiln::eval({*this});
  else if (desc_->error)
    raise_error(desc_->error);
}

void array::wait() {
  if (status() == Status::scheduled) {
    desc_->event.wait();
    desc_->status = Status::available;
  }
  if (desc_->error) raise_error(desc_->error);
}

bool array::is_available() const {
  if (desc_->status == Status::available) return true;
  return desc_->status == Status::scheduled && desc_->event.is_signaled();
}

Primitive& array::primitive() const {
  return *primitive_ptr();
}

const std::shared_ptr<Primitive>& array::primitive_ptr() const {
  if (!desc_->node) {
    throw std::invalid_argument("[array::primitive] The array has no primitive (it is evaluated).");
  }
  return desc_->node->primitive;
}

std::vector<array>& array::inputs() {
  static thread_local std::vector<array> empty;
  if (!desc_->node) {
    empty.clear();
    return empty;
  }
  return desc_->node->inputs;
}

const std::vector<array>& array::inputs() const {
  return const_cast<array*>(this)->inputs();
}

uint64_t array::new_visit_mark() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::vector<array> array::outputs() const {
  if (!is_multi_output()) return {*this};
  auto& node = *desc_->node;
  std::vector<array> outs;
  outs.reserve(node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    auto d = node.outputs[i].lock();
    if (!d) {
      d = std::make_shared<ArrayDesc>(node.shapes[i], node.dtypes[i]);
      d->node = desc_->node;
      d->position = static_cast<uint32_t>(i);
      d->status = desc_->status;
      d->event = desc_->event;
      d->is_tracer = desc_->is_tracer;
      if (desc_->status != Status::unscheduled) {
        std::lock_guard lk(kept_mu);
        for (const auto& k : node.kept) {
          if (k.position != i) continue;
          d->storage = k.storage;
          d->strides = k.strides;
          d->flags = k.flags;
          d->data_size = k.data_size;
          d->offset = k.offset;
        }
      }
      node.outputs[i] = d;
    }
    outs.push_back(array(std::move(d)));
  }
  return outs;
}

std::vector<array> array::siblings() const {
  if (!is_multi_output()) return {};
  auto outs = outputs();
  outs.erase(outs.begin() + desc_->position);
  return outs;
}

void array::detach() {
  auto node = std::move(desc_->node);
  if (!node) return;
  if (node->outputs.size() > 1) {
    std::lock_guard lk(kept_mu);
    node->kept.clear();
  }
  for (auto& w : node->outputs) {  // siblings (empty for a single output)
    if (auto d = w.lock()) d->node.reset();
  }
}

void array::set_data(std::shared_ptr<Storage> storage) {
  desc_->storage = std::move(storage);
  desc_->data_size = desc_->size;
  desc_->strides = row_major_strides(desc_->shape);
  desc_->offset = 0;
  desc_->flags = {true, true, ndim() <= 1 || size() <= 1};
  if (!desc_->flags.col_contiguous) {
    // Col-contiguous too when at most one dimension is larger than 1.
    int big = 0;
    for (auto d : desc_->shape) big += d > 1;
    desc_->flags.col_contiguous = big <= 1;
  }
}

void array::set_data(std::shared_ptr<Storage> storage, size_t data_size, Strides strides,
                     Flags flags, int64_t offset) {
  desc_->storage = std::move(storage);
  desc_->data_size = data_size;
  desc_->strides = std::move(strides);
  desc_->flags = flags;
  desc_->offset = offset;
}

void array::copy_shared_buffer(const array& other, const Strides& strides, Flags flags,
                               size_t data_size, int64_t offset) {
  desc_->storage = other.desc_->storage;
  desc_->strides = strides;
  desc_->flags = flags;
  desc_->data_size = data_size;
  desc_->offset = other.desc_->offset + offset * static_cast<int64_t>(other.itemsize());
}

void array::copy_shared_buffer(const array& other) {
  copy_shared_buffer(other, other.strides(), other.flags(), other.data_size());
}

void array::move_shared_buffer(array other) {
  desc_->storage = std::move(other.desc_->storage);
  desc_->strides = other.strides();
  desc_->flags = other.flags();
  desc_->data_size = other.data_size();
  desc_->offset = other.desc_->offset;
}

}  // namespace kiln
