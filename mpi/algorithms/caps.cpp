// CAPS: communication-avoiding parallel Strassen (Ballard, Demmel, Holtz, Lipshitz & Schwartz,
// SPAA 2012; Lipshitz et al., SC 2012) on P = m * 7^k ranks, m in 1..6; one schedule over a
// memory space (host memory and MPI, or a GPU), planned in caps_plan.cpp.
//
// Layout. The (padded) matrices are cut s times into quadrants (s = number of steps) into 4^s leaf
// blocks, and every leaf block is split by columns over the ranks of the current communicator
// (chunk c of Pc: columns [c b / Pc, (c + 1) b / Pc)). A rank stores its chunk of every leaf
// block, in Z order, so each quadrant is a contiguous quarter of its buffer with identical local
// structure: the additions of every step are local.
//  - BFS step: rank q of Pc belongs to group g = q mod 7 at position r = q div 7. It forms its
//    chunks of all seven S_j and T_j, sends those of product j to rank 7r + j (an all-to-all among
//    the 7 ranks at position r), so that group j holds subproblem j over Pc/7 ranks (chunk r of
//    Pc/7 is the union of chunks 7r..7r+6 of Pc), recurses there, and the products come back the
//    same way to be combined locally into C.
//  - DFS step: all ranks do the 7 subproblems in turn; no communication, little memory.
//  - Dealt steps (X, a suffix of L steps; any rank count Pc): the 7^L subproblems of the last L
//    levels are dealt in rounds, each multiplied whole by one rank's engine. Every rank forms its
//    column chunks of all the S_j and T_j (level by level, so a prefix's sums are formed once),
//    sends each to its owner, and combines its chunks of the products into C in the same order.
//    Where 7 does not divide the rank count this still takes several Strassen levels. Round
//    t + 1's operands travel during round t's product, round t - 1's products during it too.
//    How the rounds are dealt (DealtPlan, caps.hpp): by the ranks' measured rates in a host run
//    with the balancer on (DISTMM_CAPS_BALANCE) and more than two rounds; otherwise round-robin
//    in whole rounds, the last J mod P subproblems split over all ranks (a short round would
//    leave ranks idle; a GPU run's products are queued, not timed).
//  - Leaf: with one rank, the local engine multiplies; with m > 1 ranks, a 2-D SUMMA on the
//    leaf grid (pipeline.hpp).
// Sizes are padded with zeros up to multiples of 2^s (documented in README); the user's pieces
// (all rows x the rank's column chunks) are copied in and out of the Z-ordered buffers.
#include <algorithm>
#include <array>
#include <cmath>

#include "algorithms.hpp"
#include "caps.hpp"
#include "../runtime/pipeline.hpp"
#include "../runtime/rate_balancer.hpp"
#include "../../src/core/settings.hpp"

namespace distmm {
namespace {

using Lane = DeviceSpace::Lane;
index_t chunk_begin(index_t b, int c, int P) { return b * c / P; }
index_t chunk_width(index_t b, int c, int P) { return chunk_begin(b, c + 1, P) - chunk_begin(b, c, P); }
index_t ld(index_t x) { return std::max<index_t>(x, 1); }

// Dimensions of the problem at one stage of the recursion, and this rank's part of the leaf
// blocks: rank q of the stage's P = mr x Qc ranks holds row part qr = q mod mr (of mr) and column
// chunk qc = q div mr (of Qc) of every leaf block. The m ranks that finish a leaf form an
// mr x mc grid (leaf_grid_rows), so its product is a 2-D SUMMA; above it the column chunks carry
// the BFS steps (rows never move).
struct Stage {
  index_t m, n, k;  // (padded) sizes of this subproblem
  int steps;        // steps left
  int P, rank;      // communicator size and this rank's position in it
  int mr;           // row parts of every leaf block (the leaf grid's rows)
  index_t leaves() const { return index_t(1) << (2 * steps); }
  index_t lm() const { return m >> steps; }  // leaf block sizes
  index_t ln() const { return n >> steps; }
  index_t lk() const { return k >> steps; }
  int qr() const { return rank % mr; }
  int qc() const { return rank / mr; }
  int Qc() const { return P / mr; }
  index_t rows_of(index_t leaf_rows) const { return chunk_width(leaf_rows, qr(), mr); }
  index_t cols_of(index_t leaf_cols) const { return chunk_width(leaf_cols, qc(), Qc()); }
  index_t a_len() const { return leaves() * rows_of(lm()) * cols_of(lk()); }
  index_t b_len() const { return leaves() * rows_of(lk()) * cols_of(ln()); }
  index_t c_len() const { return leaves() * rows_of(lm()) * cols_of(ln()); }
  Stage child_dfs() const { return {m / 2, n / 2, k / 2, steps - 1, P, rank, mr}; }
  // Group qc mod 7 takes the subproblem; this rank's column chunk there is qc div 7.
  Stage child_bfs() const { return {m / 2, n / 2, k / 2, steps - 1, P / 7, qc() / 7 * mr + qr(), mr}; }
};

// The rows of the grid of the m <= 6 ranks that share a leaf, as square as m allows (2 x 2,
// 2 x 3, else 1 x m).
int leaf_grid_rows(int m) { return m == 4 || m == 6 ? 2 : 1; }

index_t pow7(int L) { return L <= 0 ? 1 : 7 * pow7(L - 1); }
// Digit l (1 = the top dealt level) of subproblem j among 7^L.
int digit(index_t j, int l, int L) { return int(j / pow7(L - l) % 7); }

// The quadrant that product j's row of a formula table takes alone, with coefficient 1 (-1: none).
int lone_quadrant(const int (&coef)[7][4], int j) {
  const int q = int(std::find_if(coef[j], coef[j] + 4, [](int x) { return x != 0; }) - coef[j]);
  return std::count(coef[j], coef[j] + 4, 0) == 3 && coef[j][q] == 1 ? q : -1;
}

// The leaf's k-panels: where neither A's column chunks (over the mc grid columns) nor B's row
// parts (over the mr grid rows) are cut, each with the grid column that holds its A part
// (a_owner) and the grid row that holds its B part (b_owner).
std::vector<KPanel> leaf_panels(index_t lk, int mr, int mc) {
  return common_panels(lk, lk, [&](int c) { return chunk_begin(lk, c, mc); }, [&](int r) { return chunk_begin(lk, r, mr); });
}

// One fused pass (DeviceSpace::combine): out_o (+)= sum_i coef(o, i) in_i for o < n_out, i < n_in,
// outputs `os` and inputs `is` elements apart, each input used read once (at most four of each);
// an output without a term is skipped, one not yet written (touched[o], if given) overwritten.
template <class T, class Coef>
void fused(DeviceSpace& sp, index_t n, Coef coef, int n_out, T* out, index_t os, int n_in, const T* in, index_t is,
           std::array<bool, 4>* touched = nullptr) {
  DeviceSpace::Combination c;
  std::array<int, 7> slot{-1, -1, -1, -1, -1, -1, -1};
  for (int o = 0; o < n_out; ++o) {
    const auto k = std::size_t(c.n_out);  // this output's place once it has a term
    for (std::size_t i = 0; i < std::size_t(n_in); ++i) {
      if (coef(o, int(i)) == 0) continue;
      if (slot[i] < 0) slot[i] = c.n_in, c.in[std::size_t(c.n_in++)] = in + index_t(i) * is;
      c.coef[k][std::size_t(slot[i])] = coef(o, int(i));
      if (c.n_out == int(k))  // (the output's first term)
        c.n_out++, c.out[k] = out + o * os, c.accumulate[k] = touched && std::exchange((*touched)[std::size_t(o)], true);
    }
  }
  if (n > 0) sp.combine(n, c, dtype_of<T>());
}
// out + i stride = sum_q coef[j0 + i][q] x_q (quadrants `quarter` apart) for 1-4 products.
template <class T>
void form_sums(DeviceSpace& sp, const T* x, index_t quarter, const int (&coef)[7][4], int j0, int j1, T* out,
               index_t stride = 0) {
  fused<T>(sp, quarter, [&](int o, int q) { return coef[j0 + o][q]; }, j1 - j0, out, stride, 4, x, quarter);
}

class Caps final : public AlgorithmBase<Caps> {
 public:
  // device_resident: a GPU run, whose dealt rounds are never balanced (its products are queued,
  // not timed on the host).
  Caps(const Comm& world, GemmShape s, CapsSteps steps, const BilinearFormula& f, bool device_resident)
      : s_(s), k7_(int(std::count(steps.begin(), steps.end(), CapsStep::bfs))), steps_(std::move(steps)), f_(f),
        world_(world.dup()) {
    m_ = int(world_.size() / pow7(k7_));
    const int S = static_cast<int>(steps_.size());
    auto pad = [&](index_t x) { return ((x + (index_t(1) << S) - 1) >> S) << S; };
    dealt_levels_ = static_cast<int>(std::count(steps_.begin(), steps_.end(), CapsStep::dealt));
    const int mr = dealt_levels_ > 0 ? 1 : leaf_grid_rows(m_);  // dealt: column chunks only
    top_ = {pad(s.m), pad(s.n), pad(s.k), S, world_.size(), world_.rank(), mr};
    piece_a_ = piece(s.m, s.k, top_.lm(), top_.lk());
    piece_b_ = piece(s.k, s.n, top_.lk(), top_.ln());
    piece_c_ = piece(s.m, s.n, top_.lm(), top_.ln());
    // Communicators of every BFS level, made once (collective, so every rank builds the same):
    // the 7 peers share a row part and a position r = qc div 7; group g = qc mod 7.
    const Comm* cur = &world_;  // (st.rank is this rank's in *cur)
    const Stage low = walk(top_, [&](int d, const Stage& st) {
      if (steps_[std::size_t(d)] != CapsStep::bfs) return;
      peers_.push_back(cur->split(st.qc() / 7 * mr + st.qr(), st.qc() % 7));
      groups_.push_back(cur->split(st.qc() % 7, st.qc() / 7 * mr + st.qr()));
      cur = &groups_.back();
    });
    // The leaf grid's rows (same row part) and columns (same column chunk); dealt steps have no
    // shared leaf.
    if (dealt_levels_ == 0) leaf_rows_ = cur->split(low.qr(), low.qc()), leaf_cols_ = cur->split(low.qc(), low.qr());
    // DISTMM_CAPS_BALANCE=0 turns the balancer off, agreed over the ranks (a rank that balances
    // alone would wait for a gather the others never post).
    balanced_ = !world_.any(!settings().caps_balance) && !device_resident && cur->size() > 1 &&
                pow7(dealt_levels_) > 2 * index_t(cur->size());
  }

  std::string name() const override { return "caps"; }
  // Per level of the recursion: forming S and T (BFS: all seven at once; DFS: each product's),
  // the BFS exchanges in and out (DFS: none), combining C; then the leaves and the layout copies.
  enum Phase { kSums, kExchangeIn, kExchangeOut, kCombine, kPerLevel };
  std::vector<std::string> phase_names() const override {
    std::vector<std::string> v;
    for (std::size_t d = 0; d < steps_.size(); ++d) {
      const std::string l = "level " + std::to_string(d) + " (" +
                            (steps_[d] == CapsStep::bfs ? "BFS" : steps_[d] == CapsStep::dfs ? "DFS" : "dealt") + ") ";
      for (const char* what : {"forming S, T", "exchange in", "exchange out", "combining C"}) v.push_back(l + what);
    }
    v.insert(v.end(), {"leaf: panel broadcasts (not hidden)", "leaf: local multiply", "pack/unpack (padding, Z order)"});
    return v;
  }
  std::size_t level_phase(int depth, Phase p) const { return std::size_t(depth) * kPerLevel + p; }
  std::size_t tail_phase(int which) const { return steps_.size() * kPerLevel + std::size_t(which); }
  std::string layout() const override {
    const std::string ranks = dealt_levels_ > 0 && k7_ == 0 ? std::to_string(m_) : std::to_string(m_) + " * 7^" + std::to_string(k7_);
    return "P = " + ranks + ", steps " + (steps_.empty() ? "(none)" : to_string(steps_)) + ", " + f_.name +
           ", padded to " + std::to_string(top_.m) + "x" + std::to_string(top_.n) + "x" + std::to_string(top_.k);
  }
  bool strassen_like() const override { return true; }
  double error_growth() const override { return std::pow(f_.error_growth_per_level, double(steps_.size())); }
  std::size_t peak_bytes(Dtype dt, const Engine& e) const override {
    return static_cast<std::size_t>(caps_peak_words(s_, world_.size(), steps_, e, dt) * double(size_of(dt)));
  }

  // The schedule itself, run as each rank in a counting space (counting_space.hpp) on addresses
  // alone; dealt rounds counted round-robin (the balancer moves subproblems, and their words, at
  // run time).
  CommEstimate analytic() const override {
    EstimateAccumulator acc;
    double flops_sum = 0;
    for (int r = 0; r < world_.size(); ++r) {
      Stage st = top_;
      st.rank = r;
      const SpaceCounts n = counted([&](CountingSpace& cs) {
        SpaceComms k = comms_for(st, [&](const Comm&, int rank, int size) { return cs.comm_as(rank, size); });
        counting_comms_ = &k;
        const_cast<Caps*>(this)->recurse<double>(cs, st, 0, device_buffer<double>(0), device_buffer<double>(1), device_buffer<double>(2));
      });
      // the layout copies: A and B in (zeroed, then written), C out (read, written, read for beta)
      acc.add(n.words, n.msgs, n.flops, n.local + 2.0 * (st.a_len() + st.b_len()) + 3.0 * st.c_len());
      flops_sum += n.flops;
    }
    CommEstimate e = acc.done(world_.size());
    e.balanced = balanced_, e.flops_mean = flops_sum / world_.size();
    const GemmShape g = device_gemm_shape();  // dealt: a subproblem, as often as the DFS steps above repeat it
    const double repeats = double(pow7(int(std::count(steps_.begin(), steps_.end(), CapsStep::dfs))));
    if (dealt_levels_ > 0) e.flops_unit = repeats * 2.0 * double(g.m) * double(g.n) * double(g.k);
    return e;
  }

  // One schedule for host and device memory: the sums and combinations of quadrants as fused
  // passes on the compute lane, the BFS exchanges and the leaf SUMMA's broadcasts on the comm lane
  // (grouped: all seven peers' transfers at once), the leaf products through the engine.
  static constexpr bool kOneSchedule = true;
  void forget_comms() override { comms_ = {}; }
  void prepare_comms(DeviceSpace& sp) override {
    if (!comms_.dealt && !comms_.rows)  // (one of them is always made)
      comms_ = comms_for(top_, [&](const Comm& c, int, int) { return sp.comm(c); });
  }
  // Communicators in a space over the Comms below.
  struct SpaceComms {
    std::vector<std::unique_ptr<DeviceComm>> peers;
    std::unique_ptr<DeviceComm> dealt, rows, cols;
  };
  // Those of the rank at the top stage `top`: make(comm, the rank's rank in it, its size).
  template <class Make>
  SpaceComms comms_for(const Stage& top, Make make) const {
    SpaceComms k;
    const Stage low = walk(top, [&](int d, const Stage& st) {
      if (steps_[std::size_t(d)] == CapsStep::bfs) k.peers.push_back(make(peers_[k.peers.size()], st.qc() % 7, 7));
    });
    if (dealt_levels_ > 0) k.dealt = make(groups_.empty() ? world_ : groups_.back(), low.rank, low.P);
    else k.rows = make(leaf_rows_, low.qc(), low.Qc()), k.cols = make(leaf_cols_, low.qr(), low.mr);
    return k;
  }
  // The stage below the BFS and DFS steps (the dealt stage or the leaf), f(depth, stage) called
  // at each step on the way down.
  template <class F>
  Stage walk(Stage st, F&& f) const {
    for (std::size_t d = 0; d < steps_.size() && steps_[d] != CapsStep::dealt; ++d) {
      f(int(d), st);
      st = steps_[d] == CapsStep::bfs ? st.child_bfs() : st.child_dfs();
    }
    return st;
  }
  // Buffers: 0-2 the top's A, B and C in Z order; then kLevelBuffers per level (sums of A,
  // sums of B, products, the subproblem's A, B and C, exchange staging; a dealt level below the
  // first: its stored sums of A and B and partial product); then the leaf SUMMA's two A and two
  // B panels; last, with dealt steps, two of each of their round buffers (dealt_buffer).
  static constexpr std::size_t kLevelBuffers = 7;
  std::size_t level_buffer(int depth, int i) const { return 3 + std::size_t(depth) * kLevelBuffers + std::size_t(i); }
  std::size_t leaf_buffer(int i) const { return 3 + steps_.size() * kLevelBuffers + std::size_t(i); }
  enum DealtBuffer { kSendA, kSendB, kSubA, kSubB, kSubC, kProductsIn, kDealtBuffers };
  std::size_t dealt_buffer(DealtBuffer which, int slot) const { return leaf_buffer(4) + 2 * std::size_t(which) + std::size_t(slot); }
  std::vector<std::size_t> device_buffer_bytes(Dtype dt) const override {
    std::vector<std::size_t> n(leaf_buffer(4) + (dealt_levels_ > 0 ? 2 * kDealtBuffers : 0), 0);  // elements, then bytes
    n[0] = top_.a_len(), n[1] = top_.b_len(), n[2] = top_.c_len();
    const Stage st = walk(top_, [&](int d, const Stage& up) {
      std::size_t* L = &n[level_buffer(d, 0)];
      L[0] = up.a_len() / 4, L[1] = up.b_len() / 4, L[2] = up.c_len() / 4;  // (DFS: one product's)
      if (steps_[std::size_t(d)] == CapsStep::dfs) return;
      const Stage ch = up.child_bfs();
      L[0] *= 7, L[1] *= 7, L[2] *= 7;
      L[3] = ch.a_len(), L[4] = ch.b_len(), L[5] = ch.c_len();
      L[6] = ch.leaves() > 1 ? std::max({L[3], L[4], L[5]}) : 0;  // (one leaf: transfers land in place)
    });
    if (dealt_levels_ > 0) {
      for (int l = 1; l < st.steps; ++l) {
        std::size_t* L = &n[level_buffer(int(steps_.size()) - dealt_levels_ + l, 0)];
        L[0] = st.a_len() >> (2 * l), L[1] = st.b_len() >> (2 * l), L[2] = st.c_len() >> (2 * l);
      }
      const index_t lm = st.lm(), lk = st.lk(), ln = st.ln(), P = st.P;
      const index_t wk = chunk_width(lk, st.rank, st.P), wn = chunk_width(ln, st.rank, st.P);
      // (by DealtBuffer) a round's chunks of up to P sums and products, its subproblem and product
      const index_t round[kDealtBuffers] = {P * lm * wk, P * lk * wn, lm * lk, lk * ln, lm * ln, P * lm * wn};
      for (int w = 0; w < kDealtBuffers; ++w) n[dealt_buffer(DealtBuffer(w), 0)] = n[dealt_buffer(DealtBuffer(w), 1)] = round[w];
    } else if (st.P > 1) {
      index_t wmax = 0;
      for (const KPanel& p : leaf_panels(st.lk(), st.mr, st.Qc())) wmax = std::max(wmax, p.width);
      n[leaf_buffer(0)] = n[leaf_buffer(1)] = st.rows_of(st.lm()) * wmax;
      n[leaf_buffer(2)] = n[leaf_buffer(3)] = wmax * st.cols_of(st.ln());
    }
    for (std::size_t& x : n) x *= size_of(dt);
    return n;
  }
  GemmShape device_gemm_shape() const override {
    const Stage st = walk(top_, [](int, const Stage&) {});
    if (dealt_levels_ > 0) return {st.lm(), st.ln(), st.lk()};  // whole subproblems
    return {st.rows_of(st.lm()), st.cols_of(st.ln()), st.lk()};
  }

  template <class T>
  void run(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    reset_phases();
    T *a = device_buffer<T>(0), *b = device_buffer<T>(1), *c = device_buffer<T>(2);
    // The user's piece into the Z-ordered, zero-padded leaf parts.
    auto pack = [&](MatrixView<const T> M, const Piece& p, index_t lr, index_t lc, T* out, index_t len) {
      sp.zero(out, std::size_t(len) * sizeof(T), Lane::compute);
      for_each_part_block(p, lr, lc, [&](index_t z, index_t nr, index_t cnt, index_t r0, index_t c0, index_t h) {
        sp.copy(out + z, ld(h), M.data + r0 + c0 * M.ld, M.ld, nr, cnt, Lane::compute);
      });
    };
    timed(tail_phase(2), [&] {
      pack(A, piece_a_, top_.lm(), top_.lk(), a, top_.a_len());
      pack(B, piece_b_, top_.lk(), top_.ln(), b, top_.b_len());
    });
    recurse<T>(sp, top_, 0, a, b, c);
    step_done(1, 1);
    timed(tail_phase(2), [&] {  // C = alpha (AB) + beta C on the user's piece
      for_each_part_block(piece_c_, top_.lm(), top_.ln(), [&](index_t z, index_t nr, index_t cnt, index_t r0, index_t c0, index_t h) {
        sp.scale_add<T>(C.data + r0 + c0 * C.ld, C.ld, c + z, ld(h), nr, cnt, alpha, beta);
      });
    });
  }

 private:
  // Calls f(offset in the Z-ordered buffer, nr, cnt, local row, local column, h) for the blocks
  // of this rank's part of the padded layout (leaf blocks lr x lc) that hold data: nr rows and cnt
  // columns of piece p, whose runs are those of the first leaf-block rows and columns.
  template <class F>
  void for_each_part_block(const Piece& p, index_t lr, index_t lc, F&& f) const {
    const index_t h = top_.rows_of(lr), w = top_.cols_of(lc);
    index_t c0 = 0;
    for (std::size_t bj = 0; bj < p.col_runs.size(); c0 += p.col_runs[bj++].length) {
      index_t r0 = 0;
      for (std::size_t bi = 0; bi < p.row_runs.size(); r0 += p.row_runs[bi++].length)
        f(z_index(index_t(bi), index_t(bj), top_.steps) * h * w, p.row_runs[bi].length, p.col_runs[bj].length, r0, c0, h);
    }
  }

  template <class T>
  void recurse(DeviceSpace& sp, const Stage& st, int depth, const T* a, const T* b, T* c) {
    if (st.steps == 0) return leaf<T>(sp, st, a, b, c);
    if (steps_[depth] == CapsStep::dealt) return dealt<T>(sp, st, depth, a, b, c);
    const index_t qa = st.a_len() / 4, qb = st.b_len() / 4, qc = st.c_len() / 4;
    auto buf = [&](int i) { return device_buffer<T>(level_buffer(depth, i)); };
    if (steps_[depth] == CapsStep::dfs) {
      const Stage ch = st.child_dfs();
      T *s = buf(0), *t = buf(1), *mprod = buf(2);
      std::array<bool, 4> touched{};
      for (int j = 0; j < 7; ++j) {
        timed(level_phase(depth, kSums), [&] {
          form_sums<T>(sp, a, qa, f_.a, j, j + 1, s);
          form_sums<T>(sp, b, qb, f_.b, j, j + 1, t);
        });
        recurse<T>(sp, ch, depth + 1, s, t, mprod);
        if (depth == 0) step_done(j + 1, 8);  // the top-level DFS products
        // C's quadrants (+)= c[j][q] M_j
        timed(level_phase(depth, kCombine), [&] { fused<T>(sp, qc, [&](int q, int) { return f_.c[j][q]; }, 4, c, qc, 1, mprod, 0, &touched); });
      }
      return;
    }
    // BFS: sums for all seven products, all-to-all among the 7 peers, recurse in the group.
    const Stage ch = st.child_bfs();
    DeviceComm& peers = *comms().peers[std::size_t(std::count(steps_.begin(), steps_.begin() + depth, CapsStep::bfs))];
    T *s = buf(0), *t = buf(1), *mall = buf(2), *sub_a = buf(3), *sub_b = buf(4), *sub_c = buf(5), *tmp = buf(6);
    timed(level_phase(depth, kSums), [&] {
      for (int j0 : {0, 4}) {  // (the fused pass takes up to four outputs)
        form_sums<T>(sp, a, qa, f_.a, j0, std::min(j0 + 4, 7), s + j0 * qa, qa);
        form_sums<T>(sp, b, qb, f_.b, j0, std::min(j0 + 4, 7), t + j0 * qb, qb);
      }
    });
    timed(level_phase(depth, kExchangeIn), [&] {
      exchange<T>(sp, peers, true, st, st.lm(), st.lk(), s, sub_a, tmp);
      exchange<T>(sp, peers, true, st, st.lk(), st.ln(), t, sub_b, tmp);
      sp.compute_waits_for_comm();
    });
    recurse<T>(sp, ch, depth + 1, sub_a, sub_b, sub_c);
    timed(level_phase(depth, kExchangeOut), [&] {
      exchange<T>(sp, peers, false, st, st.lm(), st.ln(), mall, sub_c, tmp);
      sp.compute_waits_for_comm();
    });
    timed(level_phase(depth, kCombine), [&] {
      // C_q = sum_j c[j][q] M_j, one pass per quadrant (at most four terms in either formula)
      for (int q = 0; q < 4; ++q)
        fused<T>(sp, qc, [&](int, int j) { return f_.c[j][q]; }, 1, c + q * qc, 0, 7, mall, qc);
    });
  }
  // The BFS all-to-all among the 7 peers, on the comm lane, of the L = leaves / 4 leaf blocks of
  // leaf_rows x leaf_cols of each product. In: sends sums[p] (L leaf chunks of rows x w(me)) to
  // peer p and assembles the subproblem `sub`: per leaf, the 7 peers' column chunks side by side.
  // Out (in = false): the reverse, from the group's product `sub` into this rank's chunks of all
  // seven products (`sums`). One leaf: the chunks travel in place; more: peer p's L runs of
  // rows x w(p) go through `tmp`, whole.
  template <class T>
  void exchange(DeviceSpace& sp, DeviceComm& peers, bool in, const Stage& st, index_t leaf_rows, index_t leaf_cols,
                T* sums, T* sub, T* tmp) const {
    const index_t L = st.leaves() / 4, rows = st.rows_of(leaf_rows), quarter = L * rows * st.cols_of(leaf_cols);
    const int me = st.qc() % 7;
    std::vector<index_t> n(7), of_sums(7, quarter);  // elements to or from peer p: of `sub`, of `sums`
    std::array<index_t, 8> off{};                    // columns of the peers before p
    for (std::size_t p = 0; p < 7; ++p) {
      off[p + 1] = off[p] + chunk_width(leaf_cols, st.qc() - me + int(p), st.Qc());
      n[p] = L * rows * (off[p + 1] - off[p]);
    }
    T* staged = L == 1 ? sub : tmp;  // peer p's part at L rows off[p]
    auto restage = [&](int p, bool to_sub) {  // between peer p's runs in `sub` and `from`, contiguous
      const auto u = std::size_t(p);
      const index_t run = rows * (off[u + 1] - off[u]);
      T *from = p == me ? sums + me * quarter : tmp + L * rows * off[u], *in_sub = sub + off[u] * rows;
      if (run == 0 || (L == 1 && p != me)) return;
      if (to_sub) sp.copy(in_sub, rows * off[7], from, run, run, L, Lane::comm);
      else sp.copy(from, run, in_sub, rows * off[7], run, L, Lane::comm);
    };
    sp.comm_waits_for_compute();
    for (int p = 0; p < 7 && !in; ++p) restage(p, false);
    in ? peers.all_to_all_v<T>(sums, of_sums, staged, n) : peers.all_to_all_v<T>(staged, n, sums, of_sums);
    for (int p = 0; p < 7 && in; ++p) restage(p, true);
  }

  // ---- Dealt steps (X): the last L levels' 7^L subproblems dealt in rounds over the stage ----
  // The sums of the dealt levels above the last, as formed so far: level l's (at) is the sum of
  // its prefix (j div 7^(L-l)), in its level buffer or, where the formula takes one quadrant alone
  // (Strassen's A11, A22; Winograd's A11, A12, A22), in place in its parent; from_x: that
  // place lies in the stage's own A or B, which no dealt step overwrites.
  template <class T>
  struct DealtSum {
    const T* at = nullptr;
    index_t prefix = -1;
    bool from_x = false;
  };
  // Subproblem j's chunk of a sum (side 0: S_j of A with f_.a, 1: T_j of B with f_.b) for the
  // stage's chunk x (len elements): each level's sum is formed when its prefix first appears (j only
  // grows within a dealt step); the last level's into `out`, or not at all where it is one
  // quadrant of x itself. Returns where the chunk lies. (A last-level quadrant of a stored sum is
  // copied: the next prefix overwrites the store while the chunk may still be on its way.)
  template <class T>
  const T* dealt_sum(DeviceSpace& sp, int depth, index_t j, int L, int side, const T* x, index_t len,
                     std::vector<DealtSum<T>>& s, T* out) {
    const int (&coef)[7][4] = side == 0 ? f_.a : f_.b;
    const T* parent = x;
    bool parent_in_x = true;
    for (int l = 1; l <= L; ++l) {
      DealtSum<T>& v = s[std::size_t(l)];
      len /= 4;
      const index_t pre = j / pow7(L - l);
      if (l == L || v.prefix != pre) {
        const int d = digit(j, l, L), q = lone_quadrant(coef, d);
        if (q >= 0 && (l < L || parent_in_x)) {
          v.at = parent + q * len, v.from_x = parent_in_x;
        } else {
          T* dst = l == L ? out : device_buffer<T>(level_buffer(depth + l, side));
          timed(level_phase(depth + l - 1, kSums), [&] { form_sums<T>(sp, parent, len, coef, d, d + 1, dst); });
          v.at = dst, v.from_x = false;
        }
        v.prefix = pre;
      }
      parent = v.at, parent_in_x = v.from_x;
    }
    return parent;
  }
  // Subproblem j's product chunk M (blk_c elements) into C through the stack: level L - 1's
  // partial product (C itself when L = 1) takes it; a level whose seventh child is in passes
  // its sum one level up and starts afresh.
  template <class T>
  void dealt_product(DeviceSpace& sp, int depth, index_t j, int L, const T* M, index_t quarter, T* c,
                     std::vector<std::array<bool, 4>>& touched) {
    for (int l = L - 1;; --l) {
      const int d = digit(j, l + 1, L);
      T* up = l == 0 ? c : device_buffer<T>(level_buffer(depth + l, 2));
      timed(level_phase(depth + l, kCombine), [&] {
        fused<T>(sp, quarter, [&](int q, int) { return f_.c[d][q]; }, 4, up, quarter, 1, M, 0, &touched[std::size_t(l)]);
      });
      if (l == 0 || d < 6) return;  // (d = 6: every quadrant got a product)
      touched[std::size_t(l)] = {}, M = up, quarter *= 4;
    }
  }
  // Round t + 1's sums formed (compute lane) and sent to their owners (comm lane, one group per
  // round and direction) during round t's product; round t's products back during round t + 1's.
  // Markers order the lanes buffer by buffer: 2 + slot: round t's operands in, 4 + slot: its
  // products back. Balanced: the plan beyond round 1 waits for the gathered round-0 times.
  template <class T>
  void dealt(DeviceSpace& sp, const Stage& st, int depth, const T* a, const T* b, T* c) {
    const int L = st.steps, P = st.P, me = st.rank;
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    const index_t blk_a = lm * chunk_width(lk, me, P), blk_b = lk * chunk_width(ln, me, P), blk_c = lm * chunk_width(ln, me, P);
    DealtPlan plan(pow7(L), P, balanced_);  // (unbalanced: the rest split, split_product)
    RateGather times(P, 1);  // every rank's round-0 product time (none posted when counting)
    DeviceComm& comm = *comms().dealt;
    std::vector<DealtSum<T>> sa(std::size_t(L) + 1), sb(std::size_t(L) + 1);
    auto buf = [&](DealtBuffer w, std::size_t t) { return device_buffer<T>(dealt_buffer(w, int(t % 2))); };
    std::vector<std::array<bool, 4>> touched(std::size_t(L), std::array<bool, 4>{});
    const std::size_t x_in = level_phase(depth + L - 1, kExchangeIn), x_out = level_phase(depth + L - 1, kExchangeOut);
    // Rank r's column chunk of a whole rows x cols operand; every other rank's sent from it or
    // received into it.
    auto chunk = [&](T* whole, index_t rows, index_t cols, int r) { return whole + chunk_begin(cols, r, P) * rows; };
    auto chunks = [&](bool send, T* whole, index_t rows, index_t cols) {
      for (int r = 0; r < P; ++r)
        if (const index_t n = rows * chunk_width(cols, r, P); r != me && n > 0)
          send ? comm.send(chunk(whole, rows, cols, r), n, r) : comm.recv(chunk(whole, rows, cols, r), n, r);
    };
    // (a chunk that is a quadrant of A or B itself, copied into the subproblem)
    auto put = [&](T* at, const T* from, index_t n) { if (from != at) sp.copy(at, n, from, n, n, 1, Lane::comm); };
    auto post_in = [&](std::size_t t) {  // round t - 2's product has read the operands: queued before
      const DealtStep& s = plan.steps[t];
      const std::size_t n = s.owners.size();
      std::vector<const T*> from_a(n), from_b(n);
      const int mine = plan.index_of(t, me);
      T *own_a = chunk(buf(kSubA, t), lm, lk, me), *own_b = chunk(buf(kSubB, t), lk, ln, me);
      for (std::size_t i = 0; i < n; ++i) {  // (this rank's own chunks straight into its subproblem)
        const index_t j = s.j0 + index_t(i), at = index_t(i);
        from_a[i] = dealt_sum<T>(sp, depth, j, L, 0, a, st.a_len(), sa, int(i) == mine ? own_a : buf(kSendA, t) + at * blk_a);
        from_b[i] = dealt_sum<T>(sp, depth, j, L, 1, b, st.b_len(), sb, int(i) == mine ? own_b : buf(kSendB, t) + at * blk_b);
      }
      timed(x_in, [&] {
        sp.comm_waits_for_compute();
        comm.group_start();
        if (mine >= 0) chunks(false, buf(kSubA, t), lm, lk), chunks(false, buf(kSubB, t), lk, ln);
        for (std::size_t i = 0; i < n; ++i) {
          if (int(i) == mine) continue;
          if (blk_a > 0) comm.send(from_a[i], blk_a, s.owners[i]);
          if (blk_b > 0) comm.send(from_b[i], blk_b, s.owners[i]);
        }
        comm.group_end();
        if (mine >= 0) put(own_a, from_a[std::size_t(mine)], blk_a), put(own_b, from_b[std::size_t(mine)], blk_b);
        sp.mark(Lane::comm, 2 + int(t % 2));
      });
    };
    auto combine_round = [&](std::size_t t) {  // once the round's products are here
      timed(x_out, [&] { sp.wait_mark(Lane::compute, 4 + int(t % 2)); });
      if (blk_c == 0) return;
      const DealtStep& s = plan.steps[t];
      for (std::size_t i = 0; i < s.owners.size(); ++i) {
        const T* q = s.owners[i] == me ? chunk(buf(kSubC, t), lm, ln, me) : buf(kProductsIn, t) + index_t(i) * blk_c;
        dealt_product<T>(sp, depth, s.j0 + index_t(i), L, q, blk_c, c, touched);
      }
    };
    // The last J mod P subproblems (unbalanced), each split over all ranks: rank r forms its
    // chunks of S_j and T_j, S_j's chunks are allgathered, and rank r multiplies S_j by its own
    // chunk of T_j, which gives its own chunk of the product, combined as a dealt one is. Round
    // 0's buffers are free again (the comm lane is waited for first).
    auto split_product = [&](index_t j) {
      T *s_all = buf(kSubA, 0), *t_mine = buf(kSendB, 0), *product = buf(kSubC, 0), *s_mine = chunk(s_all, lm, lk, me);
      const T* fs = dealt_sum<T>(sp, depth, j, L, 0, a, st.a_len(), sa, s_mine);
      const T* ft = dealt_sum<T>(sp, depth, j, L, 1, b, st.b_len(), sb, t_mine);
      timed(x_in, [&] {
        sp.comm_waits_for_compute();
        comm.group_start();
        for (int r = 0; r < P; ++r)
          if (r != me && blk_a > 0) comm.send(fs, blk_a, r);
        chunks(false, s_all, lm, lk);
        comm.group_end();
        put(s_mine, fs, blk_a);
        sp.compute_waits_for_comm();
      });
      timed(tail_phase(1), [&] {
        sp.gemm<T>(Op::N, Op::N, lm, chunk_width(ln, me, P), lk, T(1), s_all, ld(lm), ft, ld(lk), T(0), product, ld(lm));
      });
      if (blk_c > 0) dealt_product<T>(sp, depth, j, L, product, blk_c, c, touched);
    };
    if (!plan.steps.empty()) post_in(0);
    for (std::size_t t = 0; t < plan.steps.size(); ++t) {
      if (balanced_ && t == 1) timed(x_in, [&] { times.wait(); }), plan.balance(times.all);
      plan.extend_to(t + 1);  // (balanced: may grow plan.steps)
      if (t + 1 < plan.steps.size()) post_in(t + 1);
      timed(x_in, [&] { sp.wait_mark(Lane::compute, 2 + int(t % 2)); });
      const int mine = plan.index_of(t, me);
      if (mine >= 0) {
        if (t >= 2) timed(x_out, [&] { sp.wait_mark(Lane::compute, 4 + int(t % 2)); });  // round t - 2's products have left
        const double t0 = MPI_Wtime();
        timed(tail_phase(1), [&] {
          sp.gemm<T>(Op::N, Op::N, lm, ln, lk, T(1), buf(kSubA, t), ld(lm), buf(kSubB, t), ld(lk), T(0), buf(kSubC, t), ld(lm));
        });
        if (t == 0 && balanced_ && !counting_)  // (every rank has one in round 0) not counted
          times.post(groups_.empty() ? world_ : groups_.back(), {skewed(skew_, me, MPI_Wtime() - t0)});
      }
      if (t >= 1) combine_round(t - 1);
      timed(x_out, [&] {  // the round's products back, during the next round's
        sp.comm_waits_for_compute();
        comm.group_start();
        for (std::size_t i = 0; blk_c > 0 && i < plan.steps[t].owners.size(); ++i)
          if (int(i) != mine) comm.recv(buf(kProductsIn, t) + index_t(i) * blk_c, blk_c, plan.steps[t].owners[i]);
        if (mine >= 0) chunks(true, buf(kSubC, t), lm, ln);
        comm.group_end();
        sp.mark(Lane::comm, 4 + int(t % 2));
      });
      if (depth == 0) step_done(int(t + 1), int(plan.steps.size()));
    }
    if (!plan.steps.empty()) combine_round(plan.steps.size() - 1);
    sp.compute_waits_for_comm();
    for (index_t j = plan.next; j < plan.J; ++j) split_product(j);
    sp.compute_waits_for_comm();
    times.wait();
  }

  // One rank multiplies alone; m > 1 ranks share the leaf as an mr x mc grid: SUMMA over the
  // k-panels, A's panel broadcast along the grid row (from where it lies) and B's along the grid
  // column (packed by its holder), the next panel's broadcasts during this panel's product.
  template <class T>
  void leaf(DeviceSpace& sp, const Stage& st, const T* a, const T* b, T* c) {
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    const index_t h = st.rows_of(lm), wn = st.cols_of(ln);
    if (st.P == 1) {
      timed(tail_phase(1), [&] { sp.gemm<T>(Op::N, Op::N, lm, wn, lk, T(1), a, ld(lm), b, ld(lk), T(0), c, ld(lm)); });
      return;
    }
    const int mr = st.mr, mc = st.Qc(), qr = st.qr(), qc = st.qc();
    const index_t hb = st.rows_of(lk);
    const std::vector<KPanel> panels = leaf_panels(lk, mr, mc);
    T* abuf[2] = {device_buffer<T>(leaf_buffer(0)), device_buffer<T>(leaf_buffer(1))};
    T* bbuf[2] = {device_buffer<T>(leaf_buffer(2)), device_buffer<T>(leaf_buffer(3))};
    std::array<const T*, 2> ap{};
    if (panels.empty()) sp.zero(c, std::size_t(h * wn) * sizeof(T), Lane::compute);
    auto held = sp.hold_output(c, h, wn, ld(h));  // C may stay on a staging GPU across the panels
    pipeline(
        sp, int(panels.size()),
        [&](int t) {
          const KPanel& p = panels[std::size_t(t)];
          T* asrc = qc == p.a_owner ? const_cast<T*>(a) + (p.k0 - chunk_begin(lk, qc, mc)) * h : abuf[t % 2];
          if (qr == p.b_owner) sp.copy(bbuf[t % 2], ld(p.width), b + (p.k0 - chunk_begin(lk, qr, mr)), ld(hb), p.width, wn, Lane::comm);
          timed(tail_phase(0), [&] {
            comms().rows->broadcast(asrc, h * p.width, p.a_owner);
            comms().cols->broadcast(bbuf[t % 2], p.width * wn, p.b_owner);
          });
          ap[std::size_t(t % 2)] = asrc;
        },
        [&](int t) {
          const index_t w = panels[std::size_t(t)].width;
          timed(tail_phase(1), [&] {
            sp.gemm<T>(Op::N, Op::N, h, wn, w, T(1), ap[std::size_t(t % 2)], ld(h), bbuf[t % 2], ld(w),
                       t == 0 ? T(0) : T(1), c, ld(h));
          });
        },
        [&](auto&& wait) { timed(tail_phase(0), wait); });
  }

  // For each leaf-block row, this rank's row part; for each leaf-block column, its column chunk
  // (both clipped to the matrix: the rest is padding).
  Piece piece(index_t rows, index_t cols, index_t leaf_rows, index_t leaf_cols) const {
    auto runs = [&](index_t n, index_t leaf, index_t c0, index_t w) {  // [b leaf + c0, + w) of each leaf block b
      std::vector<Run> v;
      for (index_t b = 0; b < (index_t(1) << top_.steps); ++b)
        if (const index_t g0 = b * leaf + c0, g1 = std::min(g0 + w, n); g1 > g0) v.push_back({g0, g1 - g0});
      return v;
    };
    Piece p{runs(rows, leaf_rows, chunk_begin(leaf_rows, top_.qr(), top_.mr), top_.rows_of(leaf_rows)),
            runs(cols, leaf_cols, chunk_begin(leaf_cols, top_.qc(), top_.Qc()), top_.cols_of(leaf_cols))};
    return p.col_runs.empty() || p.row_runs.empty() ? Piece() : p;
  }
  // Offset, in leaf blocks of a Z-ordered buffer, of leaf block (bi, bj) of a 2^S x 2^S grid.
  static index_t z_index(index_t bi, index_t bj, int S) {
    index_t z = 0;
    for (int bit = S - 1; bit >= 0; --bit) z = z * 4 + ((bi >> bit) & 1) * 2 + ((bj >> bit) & 1);
    return z;
  }

  GemmShape s_;
  int m_, k7_;
  int dealt_levels_ = 0;
  CapsSteps steps_;
  BilinearFormula f_;
  Comm world_;
  Skew skew_ = settings().caps_skew;  // the test hook: rank R reports F times its round-0 time
  bool balanced_ = false;             // dealt rounds by measured rates (the rule above)
  Stage top_{};
  std::vector<Comm> peers_, groups_;
  Comm leaf_rows_, leaf_cols_;  // the leaf grid's rows and columns
  SpaceComms comms_;  // (destroyed before the Comms above)
  mutable SpaceComms* counting_comms_ = nullptr;  // a counting run's (analytic)
  SpaceComms& comms() { return counting_ ? *counting_comms_ : comms_; }
};

}  // namespace

std::unique_ptr<DistAlgorithm> make_caps_schedule(const Comm& world, GemmShape s, const CapsSteps& steps,
                                                  const BilinearFormula& f, bool device_resident) {
  return std::make_unique<Caps>(world, s, steps, f, device_resident);
}

}  // namespace distmm
