// einsum and einsum_path: NumPy's subscript language, evaluated as a sequence of pairwise
// contractions (each one matmul over batch, free and contracted axes) along the greedy path
// of NumPy's `einsum_path(optimize="greedy")`: at each step, contract the pair of operands
// whose result removes the most memory, preferring pairs that share an index.
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
        if (l[k] >= kEllipsisBase && (it->second == 1 || n == 1)) {
          it->second = std::max(it->second, n);  // broadcast
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

struct Step {
  int i, j;       // positions in the current operand list (i < j)
  Labels result;  // the contracted operand's labels
  std::set<int> all;
  bool inner;
};

// The greedy path, and the labels each intermediate keeps.
std::vector<Step> greedy_path(std::vector<Labels> ops, const Labels& output,
                              const std::map<int, int64_t>& sizes) {
  std::vector<Step> path;
  while (ops.size() > 1) {
    std::optional<Step> best;
    int64_t best_removed = 0, best_cost = 0;
    bool best_shares = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t j = i + 1; j < ops.size(); ++j) {
        std::set<int> a(ops[i].begin(), ops[i].end()), b(ops[j].begin(), ops[j].end());
        bool shares = std::any_of(a.begin(), a.end(), [&](int x) { return b.count(x); });
        // Kept: indices needed by the output or by another remaining operand.
        std::set<int> keep(output.begin(), output.end());
        for (size_t k = 0; k < ops.size(); ++k)
          if (k != i && k != j) keep.insert(ops[k].begin(), ops[k].end());
        std::set<int> all = a;
        all.insert(b.begin(), b.end());
        Labels result;
        for (int x : ops[i])
          if (keep.count(x) && std::find(result.begin(), result.end(), x) == result.end())
            result.push_back(x);
        for (int x : ops[j])
          if (keep.count(x) && std::find(result.begin(), result.end(), x) == result.end())
            result.push_back(x);
        const bool inner = result.size() < all.size();
        const int64_t removed =
            labels_size(result, sizes) - labels_size(ops[i], sizes) - labels_size(ops[j], sizes);
        const int64_t cost = flop_count(all, inner, 2, sizes);
        bool better = !best || (shares && !best_shares) ||
                      (shares == best_shares &&
                       (removed < best_removed || (removed == best_removed && cost < best_cost)));
        if (better) {
          best = Step{static_cast<int>(i), static_cast<int>(j), result, all, inner};
          best_removed = removed;
          best_cost = cost;
          best_shares = shares;
        }
      }
    }
    path.push_back(*best);
    ops.erase(ops.begin() + best->j);
    ops.erase(ops.begin() + best->i);
    ops.push_back(best->result);
  }
  return path;
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
  const int32_t nb = static_cast<int32_t>(labels_size(batch, sizes));
  const int32_t m = static_cast<int32_t>(labels_size(free_a, sizes));
  const int32_t k = static_cast<int32_t>(labels_size(summed, sizes));
  const int32_t n = static_cast<int32_t>(labels_size(free_b, sizes));
  array a3 = reshape(arrange(a, la, order_a, sizes, s), {nb, m, k}, s);
  array b3 = reshape(arrange(b, lb, order_b, sizes, s), {nb, k, n}, s);
  // matmul takes floating types only; integer contractions multiply and sum.
  array p = is_integral(a3.dtype()) || is_integral(b3.dtype())
                ? sum(multiply(expand_dims(a3, 3, s), expand_dims(b3, 1, s), s), 2, false, s)
                : matmul(a3, b3, s);
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
  for (const Step& st : greedy_path(labels, p.output, p.sizes)) {
    array r = contract(ops[st.i], labels[st.i], ops[st.j], labels[st.j], st.result, p.sizes, s);
    ops.erase(ops.begin() + st.j);
    ops.erase(ops.begin() + st.i);
    labels.erase(labels.begin() + st.j);
    labels.erase(labels.begin() + st.i);
    ops.push_back(r);
    labels.push_back(st.result);
  }
  std::set<int> needed(p.output.begin(), p.output.end());
  array x = prepare(ops[0], labels[0], needed, s);
  return arrange(x, labels[0], p.output, p.sizes, s);
}

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(
    const std::string& subscripts, const std::vector<array>& operands) {
  if (operands.empty()) throw std::invalid_argument("[einsum_path] Needs at least one operand.");
  Parsed p = parse(subscripts, operands);
  std::vector<std::vector<int>> path;
  std::set<int> all;
  for (const auto& l : p.inputs) all.insert(l.begin(), l.end());
  const bool inner = std::any_of(all.begin(), all.end(), [&](int x) {
    return std::find(p.output.begin(), p.output.end(), x) == p.output.end();
  });
  const int64_t naive = flop_count(all, inner, static_cast<int>(p.inputs.size()), p.sizes);
  int64_t optimized = 0;
  size_t largest = all.size();
  size_t opt_scaling = 0;
  if (p.inputs.size() == 1) {
    path.push_back({0});
    optimized = naive;
    opt_scaling = all.size();
  }
  for (const Step& st : greedy_path(p.inputs, p.output, p.sizes)) {
    path.push_back({st.i, st.j});
    optimized += flop_count(st.all, st.inner, 2, p.sizes);
    opt_scaling = std::max(opt_scaling, st.all.size());
  }
  std::ostringstream os;
  os << "  Complete contraction:  " << subscripts << "\n"
     << "         Naive scaling:  " << largest << "\n"
     << "     Optimized scaling:  " << opt_scaling << "\n"
     << "      Naive FLOP count:  " << naive << "\n"
     << "  Optimized FLOP count:  " << optimized << "\n";
  return {path, os.str()};
}

}  // namespace kiln
