// Which schedule on the block-cyclic layout itself, if any (block_cyclic_direct.hpp).
#include "block_cyclic_direct.hpp"

#include <algorithm>

namespace distmm {

using namespace block_cyclic;

namespace {

// The k-split where it moves at most kKSplitWords of SUMMA's words (the most any rank receives,
// both counted from the layout), its buffers fit the memory share, and k's runs are not
// fragmented. On one node shared memory makes words cheap: the two tie even where the k-split
// moves under half of SUMMA's words, and an earlier version of it lost where it moved more and
// each rank had a large partial C to sum. Between nodes the words cost more: 0.5 keeps the
// k-split to the clearly k-dominant shapes (docs/performance.md, "Measurements behind the code":
// kKSplitWords).
constexpr double kKSplitWords = 0.5;

// Whether the panels are wide enough on average not to make many small broadcasts and products.
bool wide(index_t k, std::size_t panels) { return double(k) / double(panels) >= std::min<double>(double(k), 32); }

}  // namespace

BlockCyclicDirect plan_block_cyclic_direct(const BlockCyclicGrid& grid, Op op_a, Op op_b, const LogicalDim& ar,
                                           const LogicalDim& ac, const LogicalDim& br, const LogicalDim& bc,
                                           const LogicalDim& cr, const LogicalDim& cc, index_t m, index_t n,
                                           index_t k, std::size_t elem, const BlockCyclicDirectOptions& o) {
  using Mode = BlockCyclicDirectOptions::Mode;
  BlockCyclicDirect d;
  const Grid& g = grid.g;
  const bool replicated = ar.replicated() || ac.replicated() || br.replicated() || bc.replicated() ||
                          cr.replicated() || cc.replicated();
  if (o.mode == Mode::off || op_a != Op::N || op_b != Op::N || replicated || m <= 0 || n <= 0 || k <= 0 ||
      !same_owners(ar, cr, m) || !same_owners(bc, cc, n))
    return d;
  d.grid = grid, d.m = m, d.n = n, d.k = k;
  d.rows.resize(std::size_t(g.nprow)), d.cols.resize(std::size_t(g.npcol));
  for (int r = 0; r < g.nprow; ++r) d.rows[std::size_t(r)] = local_span(ar, m, r).count;
  for (int c = 0; c < g.npcol; ++c) d.cols[std::size_t(c)] = local_span(bc, n, c).count;
  d.a = local_span(ar, m, g.myrow), d.b = local_span(bc, n, g.mycol);
  d.r = local_span(cr, m, g.myrow), d.c = local_span(cc, n, g.mycol);

  if (o.mode == Mode::automatic || o.mode == Mode::ksplit) {
    const auto runs_k = k_panels(ac, br, k, k);  // maximal runs
    if (o.mode == Mode::ksplit || wide(k, runs_k.size())) {
      std::vector<KRun> runs;
      for (const BcPanel& p : runs_k) runs.push_back({p.qa, p.qb, p.a0, p.b0, p.width});
      KSplitLayout L = ksplit_layout(g.nprow, g.npcol, g.myrow, g.mycol, d.rows, d.cols, runs);
      bool take = true;
      if (o.mode == Mode::automatic) {
        // SUMMA's words on rank (r, c): A's columns of k that other process columns hold, for its
        // rows, and B's rows that other process rows hold, for its columns.
        std::vector<index_t> ka(std::size_t(g.npcol), 0), kb(std::size_t(g.nprow), 0);
        for (const KRun& x : runs) ka[std::size_t(x.qa)] += x.width, kb[std::size_t(x.qb)] += x.width;
        double summa = 0;
        for (int t = 0; t < g.nprow * g.npcol; ++t) {
          const std::size_t r = std::size_t(t / g.npcol), c = std::size_t(t % g.npcol);
          summa = std::max(summa, double(d.rows[r]) * double(k - ka[c]) + double(d.cols[c]) * double(k - kb[r]));
        }
        // The k-split's words and bytes on this rank, the most over the grid (one small allreduce
        // rather than every rank's counts on every rank, quadratic in P).
        const int me = g.myrow * g.npcol + g.mycol;
        double most[2] = {ksplit_words(L, me), ksplit_bytes(L, me, elem)};
        MPI_Allreduce(MPI_IN_PLACE, most, 2, MPI_DOUBLE, MPI_MAX, grid.comm->get());
        take = most[0] < kKSplitWords * summa && most[1] <= double(o.mem_limit);
      }
      if (take) {
        d.kind = BlockCyclicDirect::Kind::ksplit;
        d.split = std::move(L);
        return d;
      }
    }
    if (o.mode == Mode::ksplit) return d;  // (not reached: the k-split takes every call there)
  }

  const int most_procs = std::max(g.nprow, g.npcol);
  index_t wcap = o.panel > 0 ? o.panel : std::clamp<index_t>((k + most_procs - 1) / most_procs, 256, 4096);
  // Two panels of A and of B in flight must fit the memory share (the same on every rank).
  const double rows = double(m) / g.nprow + double(ar.cyc.mb) + double(n) / g.npcol + double(bc.cyc.mb);
  wcap = std::max<index_t>(1, std::min<index_t>(wcap, index_t(double(o.mem_limit) / (2 * rows * double(elem)))));
  auto panels = k_panels(ac, br, k, wcap);
  // Fragmented panels (A's and B's blockings of k disagree, a non-square grid) would make many
  // small broadcasts and products: those operands are redistributed instead.
  if (o.mode == Mode::summa || wide(k, panels.size())) {
    d.kind = BlockCyclicDirect::Kind::summa;
    d.panels = std::move(panels);
  }
  return d;
}

std::string BlockCyclicDirect::name() const {
  return kind == Kind::ksplit ? "block-cyclic k-split" : kind == Kind::summa ? "block-cyclic summa" : "none";
}

std::string BlockCyclicDirect::detail() const {
  if (kind == Kind::ksplit) return "k in " + std::to_string(grid.g.nprow * grid.g.npcol) + " parts";
  return std::to_string(panels.size()) + " panels";
}

CommEstimate BlockCyclicDirect::analytic() const {
  const int pr = grid.g.nprow, pc = grid.g.npcol, P = pr * pc;
  EstimateAccumulator acc;
  for (int t = 0; t < P; ++t) {
    const int i = t / pc, j = t % pc;
    const double rows_i = double(rows[std::size_t(i)]), cols_j = double(cols[std::size_t(j)]);
    double words = 0, msgs = 0, flops = 0;
    if (kind == Kind::summa) {
      // Exact: the broadcasts of A's panels along the process row and B's along the column that
      // this rank receives (SUMMA's analytic count, over the block-cyclic panels).
      for (const BcPanel& p : panels) {
        if (p.qa != j) words += rows_i * double(p.width), msgs += 1;
        if (p.qb != i) words += cols_j * double(p.width), msgs += 1;
      }
      flops = 2.0 * rows_i * cols_j * double(k);
    } else if (kind == Kind::ksplit) {
      // Words: ksplit_words, what the rank receives without the balancer's moves (which shift at
      // most kKSplitMaxStolen pieces). Messages, an estimate from the parts: A's rows of its part
      // from its column-mates, each run of B once per process column, and one piece of C from each
      // other rank with a part.
      words = ksplit_words(split, t);
      msgs = double(pr - 1) + double(split.parts[std::size_t(t)].size()) * double(pc);
      for (int u = 0; u < P; ++u)
        if (u != t && split.width(u) > 0) msgs += 1;
      flops = 2.0 * double(m) * double(n) * double(split.width(t));
    }
    acc.add(words, msgs, flops);
  }
  return acc.done(P);
}

double BlockCyclicDirect::buffer_bytes(std::size_t elem) const {
  if (kind == Kind::ksplit) return ksplit_bytes(split, grid.g.myrow * grid.g.npcol + grid.g.mycol, elem);
  if (kind != Kind::summa) return 0;
  index_t wmax = 0;
  for (const BcPanel& p : panels) wmax = std::max(wmax, p.width);
  // Two slots each of A's panel (its rows) and B's (its columns), block_cyclic_summa's buffers.
  return 2.0 * double(elem) * double(wmax) * double(a.count + b.count);
}

}  // namespace distmm
