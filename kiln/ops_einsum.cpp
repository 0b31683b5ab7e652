// einsum and einsum_path: NumPy's subscript language, evaluated as a sequence of pairwise
// contractions (each one matmul over batch, free and contracted axes) along the greedy path
// of NumPy's `einsum_path(optimize="greedy")` (see greedy_path).
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// Indices are small integers: letters map to 0..51, each ellipsis axis to 52 + its position
// from the right, so that ellipsis axes of different operands line up as NumPy broadcasts.
using Labels = std::vector<int>;
constexpr int kEllipsisBase = 52;

int letter_label(char c, const std::string& subscripts) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  throw std::invalid_argument(msg("[einsum] Invalid character '", c, "' in subscripts \"",
                                  subscripts, "\"; use letters, ',', '->' and '...'."));
}

char label_char(int l) {
  if (l < 26) return static_cast<char>('a' + l);
  if (l < kEllipsisBase) return static_cast<char>('A' + l - 26);
  return '.';
}

struct Parsed {
  std::vector<Labels> inputs;
  Labels output;
  std::map<int, int64_t> sizes;  // label -> extent (1 broadcasts, for ellipsis axes)
};

// One term of letters and at most one "...", for an operand of `ndim` axes (-1: the output,
// whose ellipsis width is `ellipsis_width`).
Labels parse_term(const std::string& term, int ndim, int ellipsis_width,
                  const std::string& subscripts) {
  Labels letters_before, letters_after;
  bool seen = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (seen || term.compare(i, 3, "...") != 0) {
        throw std::invalid_argument(msg("[einsum] Invalid ellipsis in subscripts \"", subscripts,
                                        "\": use '...' at most once per operand."));
      }
      seen = true;
      i += 2;
      continue;
    }
    (seen ? letters_after : letters_before).push_back(letter_label(term[i], subscripts));
  }
  const int letters = static_cast<int>(letters_before.size() + letters_after.size());
  int width = 0;
  if (ndim >= 0) {
    if (seen ? letters > ndim : letters != ndim) {
      throw std::invalid_argument(msg("[einsum] Operand subscripts \"", term, "\" do not match ",
                                      "an operand of ", ndim, " dimensions."));
    }
    width = seen ? ndim - letters : 0;
  } else {
    width = seen ? ellipsis_width : 0;
  }
  Labels out = letters_before;
  for (int i = 0; i < width; ++i) out.push_back(kEllipsisBase + (width - 1 - i));
  out.insert(out.end(), letters_after.begin(), letters_after.end());
  return out;
}

Parsed parse(const std::string& subscripts_in, const std::vector<array>& operands) {
  std::string subscripts;
  for (char c : subscripts_in)
    if (c != ' ') subscripts.push_back(c);
  const auto arrow = subscripts.find("->");
  const std::string lhs = subscripts.substr(0, arrow);
  std::vector<std::string> terms;
  std::stringstream ss(lhs);
  for (std::string t; std::getline(ss, t, ',');) terms.push_back(t);
  if (!lhs.empty() && lhs.back() == ',') terms.push_back("");
  if (terms.size() != operands.size()) {
    throw std::invalid_argument(msg("[einsum] Subscripts \"", subscripts_in, "\" name ",
                                    terms.size(), " operands but ", operands.size(),
                                    " were given."));
  }
  Parsed p;
  int ellipsis_width = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    Labels l = parse_term(terms[i], static_cast<int>(operands[i].ndim()), 0, subscripts_in);
    for (size_t k = 0; k < l.size(); ++k) {
      const int64_t n = operands[i].shape(k);
      auto [it, fresh] = p.sizes.emplace(l[k], n);
      if (!fresh && it->second != n) {
        if (it->second == 1 || n == 1) {
          it->second = std::max(it->second, n);  // a size-1 axis broadcasts (NumPy, MLX)
        } else {
          throw std::invalid_argument(msg("[einsum] Index '", label_char(l[k]), "' has sizes ",
                                          it->second, " and ", n, " in different operands."));
        }
      }
      if (l[k] >= kEllipsisBase)
        ellipsis_width = std::max(ellipsis_width, l[k] - kEllipsisBase + 1);
    }
    p.inputs.push_back(std::move(l));
  }
  if (arrow != std::string::npos) {
    const std::string rhs = subscripts.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos) {
      throw std::invalid_argument(
          msg("[einsum] Subscripts \"", subscripts_in, "\" have more than one '->'."));
    }
    p.output = parse_term(rhs, -1, ellipsis_width, subscripts_in);
    std::set<int> seen;
    for (int l : p.output) {
      if (!seen.insert(l).second) {
        throw std::invalid_argument(
            msg("[einsum] Output index '", label_char(l), "' appears more than once."));
      }
      if (!p.sizes.count(l)) {
        throw std::invalid_argument(
            msg("[einsum] Output index '", label_char(l), "' does not appear in any operand."));
      }
    }
  } else {
    // Implicit output: the ellipsis axes, then the letters seen once, alphabetically.
    std::map<int, int> count;
    for (const auto& l : p.inputs)
      for (int x : l) ++count[x];
    for (int i = ellipsis_width - 1; i >= 0; --i) p.output.push_back(kEllipsisBase + i);
    for (auto [l, c] : count)
      if (l < kEllipsisBase && c == 1) p.output.push_back(l);
  }
  return p;
}

int64_t labels_size(const Labels& l, const std::map<int, int64_t>& sizes) {
  int64_t n = 1;
  for (int x : l) n *= sizes.at(x);
  return n;
}

// NumPy's flop count of one contraction over `labels` of `terms` operands.
int64_t flop_count(const std::set<int>& labels, bool inner, int terms,
                   const std::map<int, int64_t>& sizes) {
  int64_t size = 1;
  for (int x : labels) size *= sizes.at(x);
  int64_t factor = std::max(1, terms - 1) + (inner ? 1 : 0);
  return size * factor;
}

using LabelSet = std::set<int>;

int64_t set_size(const LabelSet& l, const std::map<int, int64_t>& sizes) {
  int64_t n = 1;
  for (int x : l) n *= sizes.at(x);
  return n;
}

// One contraction of the path: the positions (in the current operand list) it combines and
// the labels its result keeps; the result goes to the end of the list.
struct Step {
  std::vector<int> positions;
  LabelSet result;
};

// NumPy's _find_contraction: contracting `positions` keeps the labels that the output or
// another operand needs; the new list is the other operands, then the result.
struct Contraction {
  LabelSet result, removed, all;
  std::vector<LabelSet> sets;
};

Contraction find_contraction(const std::vector<int>& positions, const std::vector<LabelSet>& sets,
                             const LabelSet& output) {
  Contraction c;
  LabelSet remain = output;
  for (size_t i = 0; i < sets.size(); ++i) {
    if (std::find(positions.begin(), positions.end(), static_cast<int>(i)) != positions.end()) {
      c.all.insert(sets[i].begin(), sets[i].end());
    } else {
      remain.insert(sets[i].begin(), sets[i].end());
      c.sets.push_back(sets[i]);
    }
  }
  for (int x : c.all) (remain.count(x) ? c.result : c.removed).insert(x);
  c.sets.push_back(c.result);
  return c;
}

// The path of NumPy's einsum_path(optimize="greedy"), step for step, so that paths (and the
// order of floating-point sums) match it: contract the pair that removes the most memory
// (then the cheapest), pairs sharing an index before outer products, no intermediate larger
// than the largest operand or output; candidates found earlier are kept with their costs.
std::vector<Step> greedy_path(std::vector<LabelSet> sets, const LabelSet& output,
                              const std::map<int, int64_t>& sizes, int64_t memory_limit) {
  const int n = static_cast<int>(sets.size());
  LabelSet all;
  for (const auto& l : sets) all.insert(l.begin(), l.end());
  std::vector<Step> path;
  if (n <= 2 || all == output) {
    std::vector<int> every(n);
    std::iota(every.begin(), every.end(), 0);
    path.push_back({every, find_contraction(every, sets, output).result});
    return path;
  }
  struct Candidate {
    std::pair<int64_t, int64_t> key;  // (-removed size, flops)
    int x, y;
    std::vector<LabelSet> sets;
  };
  auto evaluate = [&](int x, int y, std::vector<Candidate>& out) {
    Contraction c = find_contraction({x, y}, sets, output);
    const int64_t new_size = set_size(c.result, sizes);
    if (new_size > memory_limit) return;
    const int64_t removed = set_size(sets[x], sizes) + set_size(sets[y], sizes) - new_size;
    const int64_t cost = flop_count(c.all, !c.removed.empty(), 2, sizes);
    out.push_back({{-removed, cost}, x, y, std::move(c.sets)});
  };
  std::vector<Candidate> known;
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) pairs.push_back({i, j});
  for (int it = 0; it < n - 1; ++it) {
    for (auto [x, y] : pairs) {
      const bool disjoint =
          std::none_of(sets[x].begin(), sets[x].end(), [&](int v) { return sets[y].count(v) > 0; });
      if (!disjoint) evaluate(x, y, known);
    }
    if (known.empty()) {
      const int m = static_cast<int>(sets.size());
      for (int i = 0; i < m; ++i)
        for (int j = i + 1; j < m; ++j) evaluate(i, j, known);
      if (known.empty()) {
        std::vector<int> every(sets.size());
        std::iota(every.begin(), every.end(), 0);
        path.push_back({every, find_contraction(every, sets, output).result});
        break;
      }
    }
    const Candidate best =
        *std::min_element(known.begin(), known.end(),
                          [](const Candidate& a, const Candidate& b) { return a.key < b.key; });
    // Keep the candidates that do not involve the contracted pair, renumbered.
    std::vector<Candidate> kept;
    const int bx = best.x, by = best.y;
    for (auto& c : known) {
      if (c.x == bx || c.x == by || c.y == bx || c.y == by) continue;
      c.sets.erase(c.sets.begin() + (by - (by > c.x) - (by > c.y)));
      c.sets.erase(c.sets.begin() + (bx - (bx > c.x) - (bx > c.y)));
      c.sets.insert(c.sets.end() - 1, best.sets.back());
      c.x = c.x - (c.x > bx) - (c.x > by);
      c.y = c.y - (c.y > bx) - (c.y > by);
      kept.push_back(std::move(c));
    }
    known = std::move(kept);
    sets = best.sets;
    path.push_back({{bx, by}, best.sets.back()});
    const int last = static_cast<int>(sets.size()) - 1;
    pairs.clear();
    for (int i = 0; i < last; ++i) pairs.push_back({i, last});
  }
  return path;
}

int64_t memory_limit(const Parsed& p) {
  int64_t m = labels_size(p.output, p.sizes);
  for (const auto& l : p.inputs) m = std::max(m, labels_size(l, p.sizes));
  return m;
}

std::vector<LabelSet> label_sets(const std::vector<Labels>& labels) {
  std::vector<LabelSet> out;
  for (const auto& l : labels) out.emplace_back(l.begin(), l.end());
  return out;
}

// Repeated labels within one operand take its diagonal; labels seen nowhere else and not in
// the output are summed out.
array prepare(array x, Labels& l, const std::set<int>& needed, const Stream& s) {
  for (bool again = true; again;) {
    again = false;
    for (size_t a = 0; a < l.size() && !again; ++a) {
      for (size_t b = a + 1; b < l.size() && !again; ++b) {
        if (l[a] != l[b]) continue;
        // diagonal() removes both axes and appends the diagonal last.
        x = diagonal(x, 0, static_cast<int>(a), static_cast<int>(b), s);
        int label = l[a];
        l.erase(l.begin() + b);
        l.erase(l.begin() + a);
        l.push_back(label);
        again = true;
      }
    }
  }
  std::vector<int> axes;
  Labels kept;
  for (size_t a = 0; a < l.size(); ++a) {
    if (needed.count(l[a]))
      kept.push_back(l[a]);
    else
      axes.push_back(static_cast<int>(a));
  }
  if (!axes.empty()) x = sum(x, axes, false, s);
  l = kept;
  return x;
}

// `x` (labels `l`) permuted to `order` and broadcast to the full sizes of those labels.
array arrange(const array& x, const Labels& l, const Labels& order,
              const std::map<int, int64_t>& sizes, const Stream& s) {
  std::vector<int> perm;
  Shape shape;
  for (int lab : order) {
    perm.push_back(static_cast<int>(std::find(l.begin(), l.end(), lab) - l.begin()));
    shape.push_back(static_cast<int32_t>(sizes.at(lab)));
  }
  return broadcast_to(transpose(x, perm, s), shape, s);
}

// One pairwise contraction as a batched matmul: (batch, free a, contracted) x (batch,
// contracted, free b).
array contract(const array& a, const Labels& la, const array& b, const Labels& lb,
               const Labels& result, const std::map<int, int64_t>& sizes, const Stream& s) {
  auto in = [](const Labels& l, int x) { return std::find(l.begin(), l.end(), x) != l.end(); };
  Labels batch, free_a, free_b, summed;
  for (int x : la) {
    if (in(lb, x))
      (in(result, x) ? batch : summed).push_back(x);
    else
      free_a.push_back(x);
  }
  for (int x : lb)
    if (!in(la, x)) free_b.push_back(x);
  // Free labels absent from the result were summed out by prepare(); none are left here.
  Labels order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), free_a.begin(), free_a.end());
  order_a.insert(order_a.end(), summed.begin(), summed.end());
  order_b.insert(order_b.end(), summed.begin(), summed.end());
  order_b.insert(order_b.end(), free_b.begin(), free_b.end());
  const int32_t m = static_cast<int32_t>(labels_size(free_a, sizes));
  const int32_t k = static_cast<int32_t>(labels_size(summed, sizes));
  const int32_t n = static_cast<int32_t>(labels_size(free_b, sizes));
  // Batch axes stay separate: merged, a transposed view such as (b, h) of a (B, L, H, D)
  // operand would be copied, while matmul takes strided batch axes as they are.
  Shape shape_a, shape_b;
  for (int x : batch) shape_a.push_back(static_cast<int32_t>(sizes.at(x)));
  shape_b = shape_a;
  shape_a.insert(shape_a.end(), {m, k});
  shape_b.insert(shape_b.end(), {k, n});
  array lhs = reshape(arrange(a, la, order_a, sizes, s), shape_a, s);
  array rhs = reshape(arrange(b, lb, order_b, sizes, s), shape_b, s);
  // matmul takes floating types only; integer contractions multiply and sum.
  array p = is_integral(lhs.dtype()) || is_integral(rhs.dtype())
                ? sum(multiply(expand_dims(lhs, -1, s), expand_dims(rhs, -3, s), s), -2, false, s)
                : matmul(lhs, rhs, s);
  Labels got = batch;
  got.insert(got.end(), free_a.begin(), free_a.end());
  got.insert(got.end(), free_b.begin(), free_b.end());
  Shape shape;
  for (int x : got) shape.push_back(static_cast<int32_t>(sizes.at(x)));
  p = reshape(p, shape, s);
  std::vector<int> perm;
  for (int x : result)
    perm.push_back(static_cast<int>(std::find(got.begin(), got.end(), x) - got.begin()));
  return transpose(p, perm, s);
}

}  // namespace

array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice sd) {
  auto s = to_stream(sd);
  if (operands.empty()) throw std::invalid_argument("[einsum] Needs at least one operand.");
  Parsed p = parse(subscripts, operands);
  std::vector<array> ops = operands;
  std::vector<Labels> labels = p.inputs;
  Dtype dtype = operands[0].dtype();
  for (const auto& x : operands) dtype = promote_types(dtype, x.dtype());
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i] = astype(ops[i], dtype, s);
    std::set<int> needed(p.output.begin(), p.output.end());
    for (size_t k = 0; k < labels.size(); ++k)
      if (k != i) needed.insert(labels[k].begin(), labels[k].end());
    ops[i] = prepare(ops[i], labels[i], needed, s);
  }
  const LabelSet output(p.output.begin(), p.output.end());
  for (const Step& st : greedy_path(label_sets(labels), output, p.sizes, memory_limit(p))) {
    // Several positions (the last resort of the path) contract pairwise, left to right.
    std::vector<int> pos = st.positions;
    std::sort(pos.begin(), pos.end());
    array acc = ops[pos[0]];
    Labels acc_l = labels[pos[0]];
    for (size_t k = 1; k < pos.size(); ++k) {
      LabelSet keep = st.result;
      for (size_t r = k + 1; r < pos.size(); ++r)
        keep.insert(labels[pos[r]].begin(), labels[pos[r]].end());
      Labels res;
      for (const Labels* l : {&acc_l, &labels[pos[k]]})
        for (int x : *l)
          if (keep.count(x) && std::find(res.begin(), res.end(), x) == res.end()) res.push_back(x);
      acc = contract(acc, acc_l, ops[pos[k]], labels[pos[k]], res, p.sizes, s);
      acc_l = res;
    }
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) {
      ops.erase(ops.begin() + *it);
      labels.erase(labels.begin() + *it);
    }
    ops.push_back(acc);
    labels.push_back(acc_l);
  }
  std::set<int> needed(p.output.begin(), p.output.end());
  array x = prepare(ops[0], labels[0], needed, s);
  return arrange(x, labels[0], p.output, p.sizes, s);
}

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(
    const std::string& subscripts, const std::vector<array>& operands) {
  if (operands.empty()) throw std::invalid_argument("[einsum_path] Needs at least one operand.");
  Parsed p = parse(subscripts, operands);
  std::vector<LabelSet> sets = label_sets(p.inputs);
  const LabelSet output(p.output.begin(), p.output.end());
  LabelSet all;
  for (const auto& l : sets) all.insert(l.begin(), l.end());
  const int64_t naive = flop_count(all, all != output, static_cast<int>(sets.size()), p.sizes);
  std::vector<std::vector<int>> path;
  int64_t optimized = 0;
  size_t opt_scaling = 0;
  for (const Step& st : greedy_path(sets, output, p.sizes, memory_limit(p))) {
    path.push_back(st.positions);
    std::vector<int> desc = st.positions;
    std::sort(desc.rbegin(), desc.rend());
    Contraction c = find_contraction(desc, sets, output);
    optimized += flop_count(c.all, !c.removed.empty(), static_cast<int>(desc.size()), p.sizes);
    opt_scaling = std::max(opt_scaling, c.all.size());
    sets = c.sets;
  }
  std::ostringstream os;
  os << "  Complete contraction:  " << subscripts << "\n"
     << "         Naive scaling:  " << all.size() << "\n"
     << "     Optimized scaling:  " << opt_scaling << "\n"
     << "      Naive FLOP count:  " << naive << "\n"
     << "  Optimized FLOP count:  " << optimized << "\n";
  return {path, os.str()};
}

}  // namespace kiln
