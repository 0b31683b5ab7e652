// export_to_dot: the DOT text names every primitive of the graph once, links arrays to the
// primitives that read and write them, leaves the arrays unevaluated and handles deep
// graphs and multi-output primitives.
#include <regex>
#include <sstream>

#include "kiln/graph_dot.h"
#include "test_utils.h"

using namespace kiln;

namespace {

std::string dot(const std::vector<array>& outs) {
  std::ostringstream os;
  export_to_dot(os, outs);
  return os.str();
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(GraphDot, LeafAndBinaryGraph) {
  array a = test::random_array({2, 3}, float32), b = test::random_array({3}, float32);
  std::string leaf = dot({a});
  EXPECT_EQ(leaf.rfind("digraph {", 0), 0u);
  EXPECT_NE(leaf.find("(2, 3) float32"), std::string::npos);
  EXPECT_EQ(count(leaf, "->"), 0u);

  array c = exp(add(a, b));
  std::string g = dot({c});
  EXPECT_EQ(count(g, "label=\"Add"), 1u);
  EXPECT_EQ(count(g, "label=\"Exp"), 1u);
  // Broadcast inputs may add nodes; every primitive has its output edge.
  EXPECT_GE(count(g, "->"), 4u);
  EXPECT_EQ(c.status(), array::Status::unscheduled) << "export_to_dot must not evaluate";
}

TEST(GraphDot, SharedNodesAndMultiOutput) {
  array x = test::random_array({4}, float32);
  array y = multiply(x, x);
  array z = add(y, y);  // y is read twice but its primitive is listed once
  std::string g = dot({z});
  EXPECT_EQ(count(g, "label=\"Multiply"), 1u);

  auto qr = divmod(x, array(3.0f));
  std::string m = dot(qr);
  std::smatch match;
  EXPECT_TRUE(std::regex_search(m, match, std::regex("p[0-9]+ -> a[0-9]+;")));
}

TEST(GraphDot, DeepGraphDoesNotRecurse) {
  array x = test::random_array({2}, float32);
  for (int i = 0; i < 100000; ++i) x = sin(x);
  std::string g = dot({x});
  EXPECT_EQ(count(g, "label=\"Sin"), 100000u);
}
