#include "stream_plan.hpp"

#include <map>
#include <optional>

namespace distmm {
namespace {

bool same_runs(const std::vector<Run>& x, const std::vector<Run>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].global != y[i].global || x[i].length != y[i].length) return false;
  return true;
}

// The stages' pieces of one operand stacked into this rank's host block. Rows follow the stage
// row (by_rows: A and C; each row panel's runs moved to its global rows) or are shared by all
// stages (B); columns likewise (by_cols: B and C). Runs shared by stages must agree; a stage
// holding nothing must have no rows or no columns in the stack. False where they disagree.
bool stack(const StreamPlan& p, const Piece& (DistAlgorithm::*piece)() const, bool by_rows, bool by_cols,
           Piece& out, std::vector<index_t>& row0, std::vector<index_t>& col0) {
  const int nr = by_rows ? p.rows : 1, nc = by_cols ? p.cols : 1;
  using Runs = std::optional<std::vector<Run>>;
  std::vector<Runs> rr(static_cast<std::size_t>(nr)), cc(static_cast<std::size_t>(nc));
  std::vector<std::pair<int, int>> empty;
  for (int r = 0; r < p.rows; ++r)
    for (int c = 0; c < p.cols; ++c) {
      const Piece& q = (p.algo(r * p.cols + c).*piece)();
      const int gr = by_rows ? r : 0, gc = by_cols ? c : 0;
      if (q.empty()) {
        empty.push_back({gr, gc});
        continue;
      }
      std::vector<Run> rows = q.row_runs, cols = q.col_runs;
      for (Run& x : rows) x.global += by_rows ? p.panels_m.start(r) : 0;
      for (Run& x : cols) x.global += by_cols ? p.panels_n.start(c) : 0;
      auto& R = rr[std::size_t(gr)];
      auto& C = cc[std::size_t(gc)];
      if (R && !same_runs(*R, rows)) return false;
      if (C && !same_runs(*C, cols)) return false;
      R = rows, C = cols;
    }
  auto total = [](const std::optional<std::vector<Run>>& v) { return v ? Piece::total(*v) : index_t(0); };
  for (auto [gr, gc] : empty)
    if (total(rr[std::size_t(gr)]) > 0 && total(cc[std::size_t(gc)]) > 0) return false;
  out = {};
  row0.assign(std::size_t(nr), 0), col0.assign(std::size_t(nc), 0);
  index_t at = 0;
  for (int g = 0; g < nr; ++g) {
    row0[std::size_t(g)] = at;
    if (rr[std::size_t(g)]) out.row_runs.insert(out.row_runs.end(), rr[std::size_t(g)]->begin(), rr[std::size_t(g)]->end());
    at += total(rr[std::size_t(g)]);
  }
  at = 0;
  for (int g = 0; g < nc; ++g) {
    col0[std::size_t(g)] = at;
    if (cc[std::size_t(g)]) out.col_runs.insert(out.col_runs.end(), cc[std::size_t(g)]->begin(), cc[std::size_t(g)]->end());
    at += total(cc[std::size_t(g)]);
  }
  if (out.empty()) out = {};
  return true;
}

}  // namespace

StageGrid auto_stages(index_t m, index_t n) {
  // Two panels of each side that allows it: cutting both halves what waits on the host link
  // (the first stage's operands, the last stage's C), and it measured best at most sizes
  // (docs/performance.md, "Measurements behind the code": auto_stages).
  return {m >= 2 * kStreamPanelMin ? 2 : 1, n >= 2 * kStreamPanelMin ? 2 : 1};
}

StreamPlan make_stream_plan(Algorithm algo, const Comm& world, GemmShape shape, const AlgoOptions& opts,
                            StageGrid grid) {
  StreamPlan p;
  const int rows = int(std::clamp<index_t>(grid.rows, 1, std::max<index_t>(shape.m, 1)));
  const int cols = int(std::clamp<index_t>(grid.cols, 1, std::max<index_t>(shape.n, 1)));
  if (rows * cols <= 1) return p;
  p.rows = rows, p.cols = cols;
  p.panels_m = {shape.m, rows}, p.panels_n = {shape.n, cols};
  // One algorithm per stage shape (Partition1D gives at most two heights and two widths),
  // built alike on every rank.
  std::map<std::pair<index_t, index_t>, int> by_shape;
  std::string failed;
  for (int s = 0; s < rows * cols; ++s) {
    const index_t h = p.panels_m.size(s / cols), w = p.panels_n.size(s % cols);
    auto [it, fresh] = by_shape.try_emplace({h, w}, int(p.algos.size()));
    if (fresh) {  // alike on every rank: the shapes are
      try {
        p.algos.push_back(make_algorithm(algo, world, {h, w, shape.k}, opts));
      } catch (const std::exception& e) {
        failed = "a " + std::to_string(h) + " x " + std::to_string(w) + " stage does not fit " + to_string(algo) +
                 " (" + e.what() + ")";
      }
      // make_algorithm is collective: every rank stops at the same stage when one fails
      if (world.any(!failed.empty())) break;
    }
    p.algo_of.push_back(it->second);
  }
  std::vector<index_t> unused;
  const bool mine = failed.empty() && stack(p, &DistAlgorithm::piece_a, true, false, p.a, p.a_row0, unused) &&
                    stack(p, &DistAlgorithm::piece_b, false, true, p.b, unused, p.b_col0) &&
                    stack(p, &DistAlgorithm::piece_c, true, true, p.c, p.c_row0, p.c_col0);
  // Every rank decides alike (each reaches this collective, having left the loop together).
  if (world.any(!mine) && failed.empty())
    failed = p.algo_of.size() < std::size_t(rows * cols)
                 ? "a stage does not fit " + std::string(to_string(algo)) + " on some rank"
                 : "the stages' layouts disagree where they share an operand's rows or columns";
  if (!failed.empty()) {
    StreamPlan one;
    one.why_one = failed;
    return one;
  }
  return p;
}

}  // namespace distmm
