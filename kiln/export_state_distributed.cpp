// Export codecs of the collectives. A group cannot be saved: the import uses the world group
// of the importing process (distributed::init()), which must have as many processes as the
// exporting group had.
#include "kiln/distributed/primitives.h"
#include "kiln/export_state.h"
#include "kiln/utils.h"

namespace kiln {

using export_detail::Registry;
using export_detail::StateReader;
using export_detail::StateWriter;

namespace {

distributed::Group world_of_size(StateReader& in) {
  int64_t size = in.i();
  distributed::Group g = distributed::init();
  if (g.size() != size) {
    throw std::runtime_error(msg("[import_function] ", in.primitive(),
                                 " was exported for a group of ", size,
                                 " processes; this process's world group has ", g.size(), "."));
  }
  return g;
}

}  // namespace

void ExportAccess::register_distributed(Registry& r) {
  using namespace distributed;
  r.add<AllReduce>(
      "AllReduce",
      [](const AllReduce& p, StateWriter& w) { w.i(p.group().size()).i(static_cast<int>(p.op())); },
      [](StateReader& in, Stream s) {
        Group g = world_of_size(in);
        int64_t op = in.i();
        if (op < 0 || op > 2) in.fail("an unknown reduction");
        return std::make_shared<AllReduce>(s, g, static_cast<distributed::detail::ReduceOp>(op));
      });
  r.add<GroupedAllSum>(
      "GroupedAllSum", [](const GroupedAllSum& p, StateWriter& w) { w.i(p.group().size()); },
      [](StateReader& in, Stream s) {
        return std::make_shared<GroupedAllSum>(s, world_of_size(in));
      });
  r.add<GroupedAllMean>(
      "GroupedAllMean", [](const GroupedAllMean& p, StateWriter& w) { w.i(p.group().size()); },
      [](StateReader& in, Stream s) {
        return std::make_shared<GroupedAllMean>(s, world_of_size(in));
      });
  r.add<AllGather>(
      "AllGather", [](const AllGather& p, StateWriter& w) { w.i(p.group().size()); },
      [](StateReader& in, Stream s) { return std::make_shared<AllGather>(s, world_of_size(in)); });
  r.add<ReduceScatter>(
      "ReduceScatter", [](const ReduceScatter& p, StateWriter& w) { w.i(p.group().size()); },
      [](StateReader& in, Stream s) {
        return std::make_shared<ReduceScatter>(s, world_of_size(in));
      });
  r.add<Send>(
      "Send", [](const Send& p, StateWriter& w) { w.i(p.group().size()).i(p.dst()); },
      [](StateReader& in, Stream s) {
        Group g = world_of_size(in);
        int dst = in.i32();
        if (dst < 0 || dst >= g.size()) in.fail("a destination outside the group");
        return std::make_shared<Send>(s, g, dst);
      });
  r.add<Recv>(
      "Recv", [](const Recv& p, StateWriter& w) { w.i(p.group().size()).i(p.src()); },
      [](StateReader& in, Stream s) {
        Group g = world_of_size(in);
        int src = in.i32();
        if (src < 0 || src >= g.size()) in.fail("a source outside the group");
        return std::make_shared<Recv>(s, g, src);
      });
}

}  // namespace kiln
