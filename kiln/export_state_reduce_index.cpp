// Export codecs of the reductions, scans, indexing (gather/scatter) and sort-based primitives.
#include "kiln/export_state.h"
#include "kiln/primitives_indexing.h"
#include "kiln/primitives_reduce.h"
#include "kiln/primitives_sort.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

// An enum stored as an integer, checked against its range.
template <typename E>
E read_enum(StateReader& in, int count, const char* what) {
  int64_t v = in.i();
  if (v < 0 || v >= count) in.fail(std::string("an unknown ") + what + " " + std::to_string(v));
  return static_cast<E>(v);
}

}  // namespace

void ExportAccess::register_reduce_index(Registry& r) {
  r.add<Reduce>(
      "Reduce",
      [](const Reduce& p, StateWriter& w) {
        w.i(static_cast<int>(p.type())).ints(p.axes()).d(p.out_dtype());
      },
      [](StateReader& in, Stream s) {
        auto type = read_enum<Reduce::ReduceType>(in, 6, "reduction");
        std::vector<int> axes = in.ints32();
        Dtype out = in.d();
        return std::make_shared<Reduce>(s, type, std::move(axes), out);
      });
  r.add<ArgReduce>(
      "ArgReduce",
      [](const ArgReduce& p, StateWriter& w) { w.i(static_cast<int>(p.type())).i(p.axis()); },
      [](StateReader& in, Stream s) {
        auto type = read_enum<ArgReduce::ReduceType>(in, 2, "arg reduction");
        int axis = in.i32();
        return std::make_shared<ArgReduce>(s, type, axis);
      });
  r.add<Scan>(
      "Scan",
      [](const Scan& p, StateWriter& w) {
        w.i(static_cast<int>(p.type())).i(p.axis()).b(p.reverse()).b(p.inclusive());
      },
      [](StateReader& in, Stream s) {
        auto type = read_enum<Scan::ReduceType>(in, 5, "scan");
        int axis = in.i32();
        bool reverse = in.b();
        bool inclusive = in.b();
        return std::make_shared<Scan>(s, type, axis, reverse, inclusive);
      });
  r.add<Sort>(
      "Sort", [](const Sort& p, StateWriter& w) { w.i(p.axis()); },
      [](StateReader& in, Stream s) { return std::make_shared<Sort>(s, in.i32()); });
  r.add<ArgSort>(
      "ArgSort", [](const ArgSort& p, StateWriter& w) { w.i(p.axis()); },
      [](StateReader& in, Stream s) { return std::make_shared<ArgSort>(s, in.i32()); });
  r.add_plain<Softmax>("Softmax");

  // Indexing: the op name a primitive reports in out-of-range errors is kept too.
  r.add<Gather>(
      "Gather",
      [](const Gather& p, StateWriter& w) {
        w.s(p.op_).ints(p.axes_).ints(p.slice_sizes_).ints(p.traced_shape_);
      },
      [](StateReader& in, Stream s) {
        const char* op = export_detail::intern(in.s());
        std::vector<int> axes = in.ints32();
        Shape sizes = in.ints32();
        Shape traced = in.ints32();
        return std::make_shared<Gather>(s, op, std::move(axes), std::move(sizes),
                                        std::move(traced));
      });
  r.add<Scatter>(
      "Scatter",
      [](const Scatter& p, StateWriter& w) {
        w.s(p.op()).i(static_cast<int>(p.reduce())).ints(p.axes());
      },
      [](StateReader& in, Stream s) {
        const char* op = export_detail::intern(in.s());
        auto reduce = read_enum<ScatterReduce>(in, 5, "scatter reduction");
        std::vector<int> axes = in.ints32();
        return std::make_shared<Scatter>(s, op, reduce, std::move(axes));
      });
  r.add<GatherAxis>(
      "GatherAxis", [](const GatherAxis& p, StateWriter& w) { w.s(p.op_).i(p.axis_); },
      [](StateReader& in, Stream s) {
        const char* op = export_detail::intern(in.s());
        int axis = in.i32();
        return std::make_shared<GatherAxis>(s, op, axis);
      });
  r.add<ScatterAxis>(
      "ScatterAxis",
      [](const ScatterAxis& p, StateWriter& w) {
        w.s(p.op_).i(static_cast<int>(p.reduce_)).i(p.axis_);
      },
      [](StateReader& in, Stream s) {
        const char* op = export_detail::intern(in.s());
        auto reduce = read_enum<ScatterReduce>(in, 5, "scatter reduction");
        int axis = in.i32();
        return std::make_shared<ScatterAxis>(s, op, reduce, axis);
      });

  // Sort-based.
  r.add<Partition>(
      "Partition", [](const Partition& p, StateWriter& w) { w.i(p.kth()).i(p.start()); },
      [](StateReader& in, Stream s) {
        int64_t kth = in.i();
        int64_t start = in.i();
        return std::make_shared<Partition>(s, kth, start);
      });
  r.add<ArgPartition>(
      "ArgPartition", [](const ArgPartition& p, StateWriter& w) { w.i(p.kth()).i(p.start()); },
      [](StateReader& in, Stream s) {
        int64_t kth = in.i();
        int64_t start = in.i();
        return std::make_shared<ArgPartition>(s, kth, start);
      });
  r.add_plain<Median>("Median");
  r.add<SearchSorted>(
      "SearchSorted", [](const SearchSorted& p, StateWriter& w) { w.b(p.right()); },
      [](StateReader& in, Stream s) { return std::make_shared<SearchSorted>(s, in.b()); });
  r.add<Unique>(
      "Unique", [](const Unique& p, StateWriter& w) { w.i(p.size()).b(p.has_fill()); },
      [](StateReader& in, Stream s) {
        int64_t size = in.i();
        bool fill = in.b();
        return std::make_shared<Unique>(s, size, fill);
      });
}

}  // namespace kiln
