// Export codecs of the layout, creation and compile-helper primitives (shapes, axes, slice
// bounds, dtypes).
#include "kiln/export_state.h"
#include "kiln/primitives_compile.h"
#include "kiln/primitives_creation.h"
#include "kiln/primitives_layout.h"
#include "kiln/primitives_transforms.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

void write_bounds(StateWriter& w, const SliceBounds& b) {
  w.ints(b.start).ints(b.stop).ints(b.strides);
}

SliceBounds read_bounds(StateReader& in) {
  SliceBounds b;
  b.start = in.ints32();
  b.stop = in.ints32();
  b.strides = in.ints32();
  if (b.start.size() != b.stop.size() || b.start.size() != b.strides.size())
    in.fail("slice bounds of different ranks");
  return b;
}

}  // namespace

void ExportAccess::register_layout(Registry& r) {
  r.add<AsType>(
      "AsType", [](const AsType& p, StateWriter& w) { w.d(p.dtype()); },
      [](StateReader& in, Stream s) { return std::make_shared<AsType>(s, in.d()); });
  r.add_plain<Copy>("Copy");
  r.add<Broadcast>(
      "Broadcast", [](const Broadcast& p, StateWriter& w) { w.ints(p.shape()); },
      [](StateReader& in, Stream s) { return std::make_shared<Broadcast>(s, in.ints32()); });
  r.add<Reshape>(
      "Reshape",
      [](const Reshape& p, StateWriter& w) { w.ints(p.shape_).i(p.infer_).ints(p.follow_); },
      [](StateReader& in, Stream s) {
        Shape shape = in.ints32();
        int infer = in.i32();
        std::vector<int> follow = in.ints32();
        if (infer >= static_cast<int>(shape.size())) in.fail("the inferred axis is out of range");
        return std::make_shared<Reshape>(s, std::move(shape), infer, std::move(follow));
      });
  r.add<Transpose>(
      "Transpose", [](const Transpose& p, StateWriter& w) { w.ints(p.axes()); },
      [](StateReader& in, Stream s) { return std::make_shared<Transpose>(s, in.ints32()); });
  r.add<Contiguous>(
      "Contiguous", [](const Contiguous& p, StateWriter& w) { w.b(p.allow_col_major_); },
      [](StateReader& in, Stream s) { return std::make_shared<Contiguous>(s, in.b()); });
  r.add<AsStrided>(
      "AsStrided",
      [](const AsStrided& p, StateWriter& w) { w.ints(p.shape_).ints(p.strides_).i(p.offset_); },
      [](StateReader& in, Stream s) {
        Shape shape = in.ints32();
        std::vector<int64_t> strides = in.ints();
        int64_t offset = in.i();
        if (shape.size() != strides.size()) in.fail("shape and strides of different ranks");
        return std::make_shared<AsStrided>(s, std::move(shape), Strides(strides), offset);
      });
  r.add<View>(
      "View", [](const View& p, StateWriter& w) { w.d(p.dtype_); },
      [](StateReader& in, Stream s) { return std::make_shared<View>(s, in.d()); });
  r.add<Slice>(
      "Slice",
      [](const Slice& p, StateWriter& w) {
        write_bounds(w, p.bounds_);
        w.ints(p.traced_shape_);
      },
      [](StateReader& in, Stream s) {
        SliceBounds b = read_bounds(in);
        Shape traced = in.ints32();
        return std::make_shared<Slice>(s, std::move(b), std::move(traced));
      });
  r.add<SliceUpdate>(
      "SliceUpdate", [](const SliceUpdate& p, StateWriter& w) { write_bounds(w, p.bounds()); },
      [](StateReader& in, Stream s) { return std::make_shared<SliceUpdate>(s, read_bounds(in)); });
  r.add<Concatenate>(
      "Concatenate", [](const Concatenate& p, StateWriter& w) { w.i(p.axis()); },
      [](StateReader& in, Stream s) { return std::make_shared<Concatenate>(s, in.i32()); });

  // Creation.
  r.add<Arange>(
      "Arange",
      [](const Arange& p, StateWriter& w) { w.f(p.start_).f(p.step_).i(p.size_).d(p.dtype_); },
      [](StateReader& in, Stream s) {
        double start = in.f();
        double step = in.f();
        int size = in.i32();
        Dtype dtype = in.d();
        if (size < 0) in.fail("a negative size");
        return std::make_shared<Arange>(s, start, step, size, dtype);
      });
  r.add<Linspace>(
      "Linspace",
      [](const Linspace& p, StateWriter& w) { w.f(p.start_).f(p.stop_).i(p.num_).d(p.dtype_); },
      [](StateReader& in, Stream s) {
        double start = in.f();
        double stop = in.f();
        int num = in.i32();
        Dtype dtype = in.d();
        if (num < 0) in.fail("a negative size");
        return std::make_shared<Linspace>(s, start, stop, num, dtype);
      });
  r.add<Eye>(
      "Eye", [](const Eye& p, StateWriter& w) { w.i(p.n_).i(p.m_).i(p.k_).d(p.dtype_); },
      [](StateReader& in, Stream s) {
        int n = in.i32();
        int m = in.i32();
        int k = in.i32();
        Dtype dtype = in.d();
        if (n < 0 || m < 0) in.fail("a negative size");
        return std::make_shared<Eye>(s, n, m, k, dtype);
      });
  r.add<Triangular>(
      "Triangular", [](const Triangular& p, StateWriter& w) { w.i(p.k()).b(p.upper()); },
      [](StateReader& in, Stream s) {
        int k = in.i32();
        bool upper = in.b();
        return std::make_shared<Triangular>(s, k, upper);
      });

  // Compile and transform helpers that traced graphs hold.
  r.add<BroadcastLike>(
      "BroadcastLike", [](const BroadcastLike& p, StateWriter& w) { w.i(p.ignore_last()); },
      [](StateReader& in, Stream s) { return std::make_shared<BroadcastLike>(s, in.i32()); });
  r.add_plain<StopGradient>("StopGradient");
  r.add<Depends>(
      "Depends", [](const Depends& p, StateWriter& w) { w.i(p.n_); },
      [](StateReader& in, Stream s) {
        int n = in.i32();
        if (n < 0) in.fail("a negative count");
        return std::make_shared<Depends>(s, n);
      });
}

}  // namespace kiln
