// CAPS: communication-avoiding parallel Strassen (Ballard, Demmel, Holtz, Lipshitz & Schwartz,
// SPAA 2012; Lipshitz et al., SC 2012) on P = m * 7^k ranks, m in 1..6.
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
//    levels are dealt round-robin, subproblem j to rank j mod Pc in round j div Pc, and each is
//    multiplied whole by its rank's engine. Every rank forms its column chunks of all the S_j
//    and T_j (level by level, so a prefix's sums are formed once), sends each to its owner, and
//    combines its chunks of the products into C in the same order. Where 7 does not divide the
//    rank count (P = 28 = 4 x 7: one BFS step, then 2 x 2 leaf grids), this still takes several
//    Strassen levels: 343 subproblems over 28 ranks are 13 rounds, (7/8)^3 x 13/12.25 = 0.71 of
//    the classical multiplications on the busiest rank. Round t + 1's operands travel during
//    round t's product, round t's products travel back during round t + 1's. On GPUs (device
//    path) the last J mod P subproblems are split over all ranks instead of dealt to a few (on
//    2 GPUs, X is 3 + 3 whole subproblems and half of the seventh each).
//  - Leaf: with one rank, the local engine multiplies; with m > 1 ranks, A's leaf is allgathered
//    and each rank multiplies it by its own columns of B (1-D, classical).
// Sizes are padded with zeros up to multiples of 2^s (documented in README); the user's pieces
// (all rows x the rank's column chunks) are copied in and out of the Z-ordered buffers.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "algorithms.hpp"
#include "caps.hpp"
#include "cost_model.hpp"
#include "grid.hpp"
#include "overlap.hpp"
#include "../node/fused.hpp"
#include "../node/strassen_formulas.hpp"
#include "../src/core/settings.hpp"
#include "../src/core/system.hpp"

namespace distmm {
namespace {

index_t chunk_begin(index_t b, int c, int P) { return b * c / P; }
index_t chunk_width(index_t b, int c, int P) { return chunk_begin(b, c + 1, P) - chunk_begin(b, c, P); }

// Dimensions of the problem at one stage of the recursion, and this rank's part of the leaf
// blocks: rank q of the stage's P = mr x Qc ranks holds row part qr = q mod mr (of mr) and column
// chunk qc = q div mr (of Qc) of every leaf block. The m ranks that finish a leaf form an
// mr x mc grid (leaf_grid), so its product is a 2-D SUMMA; above it the column chunks carry the
// BFS steps as before (rows never move).
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

// The grid of the m <= 6 ranks that share a leaf: as square as m allows.
std::pair<int, int> leaf_grid(int m) {
  if (m == 4) return {2, 2};
  if (m == 6) return {2, 3};
  return {1, m};
}

class Caps final : public AlgorithmBase<Caps> {
 public:
  // split_remainder: dealt steps split the last J mod P subproblems over all ranks (the device
  // path; device_dealt) instead of dealing them to a few.
  Caps(const Comm& world, GemmShape s, int mfac, int k7, CapsSteps steps, const BilinearFormula& f,
       bool split_remainder = false)
      : s_(s), m_(mfac), k7_(k7), split_remainder_(split_remainder), steps_(std::move(steps)), f_(f), world_(world.dup()) {
    const int S = static_cast<int>(steps_.size());
    auto pad = [&](index_t x) { return ((x + (index_t(1) << S) - 1) >> S) << S; };
    dealt_levels_ = static_cast<int>(std::count(steps_.begin(), steps_.end(), CapsStep::dealt));
    const int mr = dealt_levels_ > 0 ? 1 : leaf_grid(mfac).first;  // dealt: column chunks only
    top_ = {pad(s.m), pad(s.n), pad(s.k), S, world_.size(), world_.rank(), mr};
    pa_ = piece(s.m, s.k, top_.lm(), top_.lk());
    pb_ = piece(s.k, s.n, top_.lk(), top_.ln());
    pc_ = piece(s.m, s.n, top_.lm(), top_.ln());
    // Communicators of every BFS level, made once (collective, so every rank builds the same):
    // the 7 peers share a row part and a position r = qc div 7; group g = qc mod 7.
    const Comm* cur = &world_;
    for (CapsStep c : steps_) {
      if (c != CapsStep::bfs) continue;
      const int q = cur->rank(), qr = q % mr, qc = q / mr;
      peers_.push_back(cur->split(qc / 7 * mr + qr, qc % 7));
      groups_.push_back(cur->split(qc % 7, qc / 7 * mr + qr));
      cur = &groups_.back();
    }
    // The leaf grid's rows (same row part) and columns (same column chunk); dealt steps have no
    // shared leaf.
    const int lq = cur->rank();
    if (dealt_levels_ == 0) {
      leaf_rows_ = cur->split(lq % mr, lq / mr);
      leaf_cols_ = cur->split(lq / mr, lq % mr);
    }
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
    return "P = " + ranks + ", steps " +
           (steps_.empty() ? "(none)" : to_string(steps_)) + ", " + f_.name + ", padded to " +
           std::to_string(top_.m) + "x" + std::to_string(top_.n) + "x" + std::to_string(top_.k);
  }
  // "DB strassen": the choice among CAPS variants, for the selection note.
  std::string layout_key() const { return (steps_.empty() ? std::string("-") : to_string(steps_)) + " " + f_.name; }
  const Piece& piece_a() const override { return pa_; }
  const Piece& piece_b() const override { return pb_; }
  const Piece& piece_c() const override { return pc_; }
  bool strassen_like() const override { return true; }
  double error_growth() const override { return std::pow(f_.error_growth_per_level, double(steps_.size())); }

  std::size_t peak_bytes(Dtype dt, const Engine& e) const override {
    return static_cast<std::size_t>(caps_peak_words(s_, world_.size(), steps_, e, dt) * double(size_of(dt)));
  }

  CommEstimate analytic() const override {
    EstimateAccumulator acc;
    double flops_sum = 0, unit = 0;
    bool balanced = false;
    for (int r = 0; r < world_.size(); ++r) {
      Stage st = top_;
      st.rank = r;
      Counts n;
      counts(st, 0, 1.0, n);
      // the layout copies: A and B in (read and written), C out (read, written, read for beta)
      n.local += 2.0 * (st.a_len() + st.b_len()) + 3.0 * st.c_len();
      acc.add(n.words, n.msgs, n.flops, n.local);
      flops_sum += n.flops, unit = n.unit, balanced = n.balanced;
    }
    CommEstimate e = acc.done(world_.size());
    e.balanced = balanced, e.flops_mean = flops_sum / world_.size(), e.flops_unit = unit;
    return e;
  }

  template <class T>
  void run(Engine& e, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    reset_phases();
    auto a = buffer<T>(top_.a_len()), b = buffer<T>(top_.b_len()), c = buffer<T>(top_.c_len());
    timed(tail_phase(2), [&] {
      pack(A, s_.m, s_.k, top_.lm(), top_.lk(), a.get());
      pack(B, s_.k, s_.n, top_.lk(), top_.ln(), b.get());
    });
    recurse<T>(e, top_, 0, world_, a.get(), b.get(), c.get());
    step_done(1, 1);
    // C = alpha (AB) + beta C on the user's piece.
    timed(tail_phase(2), [&] { unpack(c.get(), s_.m, s_.n, top_.lm(), top_.ln(), alpha, beta, C); });
  }

  // ---- The same on device buffers (device_space.hpp) ----
  // The steps of run() with every block in GPU memory: the packing and the sums and
  // combinations of quadrants as device copies and cuBLAS geam passes on the compute lane, the
  // BFS exchanges and the leaf SUMMA's broadcasts on the comm lane (grouped: all seven peers'
  // transfers at once), the leaf products through the engine. No arriving-leaf overlap here.
  static constexpr bool kRunsOnDevice = true;
  void forget_comms() override {
    dev_peers_.clear(), dev_dealt_.reset(), dev_leaf_rows_.reset(), dev_leaf_cols_.reset();
    dev_ready_ = false;
  }
  void prepare_comms(DeviceSpace& sp) override {
    if (dev_ready_) return;
    for (const Comm& p : peers_) dev_peers_.push_back(sp.comm(p));
    if (dealt_levels_ > 0) {
      dev_dealt_ = sp.comm(groups_.empty() ? world_ : groups_.back());
    } else {
      dev_leaf_rows_ = sp.comm(leaf_rows_);
      dev_leaf_cols_ = sp.comm(leaf_cols_);
    }
    dev_ready_ = true;
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
    const std::size_t e = size_of(dt);
    std::vector<std::size_t> b(leaf_buffer(4) + (dealt_levels_ > 0 ? 2 * kDealtBuffers : 0), 0);
    b[0] = std::size_t(top_.a_len()) * e, b[1] = std::size_t(top_.b_len()) * e, b[2] = std::size_t(top_.c_len()) * e;
    Stage st = top_;
    for (std::size_t d = 0; d < steps_.size(); ++d) {
      const std::size_t qa = std::size_t(st.a_len() / 4) * e, qb = std::size_t(st.b_len() / 4) * e,
                        qc = std::size_t(st.c_len() / 4) * e;
      std::size_t* L = &b[level_buffer(int(d), 0)];
      if (steps_[d] == CapsStep::dealt) {  // the dealt stage (the last steps)
        for (int l = 1; l < st.steps; ++l) {
          std::size_t* Ll = &b[level_buffer(int(d) + l, 0)];
          Ll[0] = std::size_t(st.a_len() >> (2 * l)) * e, Ll[1] = std::size_t(st.b_len() >> (2 * l)) * e;
          Ll[2] = std::size_t(st.c_len() >> (2 * l)) * e;
        }
        const std::size_t lm = std::size_t(st.lm()), lk = std::size_t(st.lk()), ln = std::size_t(st.ln());
        const std::size_t P = std::size_t(st.P), wk = std::size_t(chunk_width(st.lk(), st.rank, st.P)),
                          wn = std::size_t(chunk_width(st.ln(), st.rank, st.P));
        for (int slot = 0; slot < 2; ++slot) {  // a round's chunks of up to P sums and products
          b[dealt_buffer(kSendA, slot)] = P * lm * wk * e, b[dealt_buffer(kSendB, slot)] = P * lk * wn * e;
          b[dealt_buffer(kSubA, slot)] = lm * lk * e, b[dealt_buffer(kSubB, slot)] = lk * ln * e;
          b[dealt_buffer(kSubC, slot)] = lm * ln * e, b[dealt_buffer(kProductsIn, slot)] = P * lm * wn * e;
        }
        return b;
      }
      if (steps_[d] == CapsStep::dfs) {
        L[0] = qa, L[1] = qb, L[2] = qc;
        st = st.child_dfs();
      } else {
        const Stage ch = st.child_bfs();
        L[0] = 7 * qa, L[1] = 7 * qb, L[2] = 7 * qc;
        L[3] = std::size_t(ch.a_len()) * e, L[4] = std::size_t(ch.b_len()) * e, L[5] = std::size_t(ch.c_len()) * e;
        L[6] = std::max({L[3], L[4], L[5]});
        st = ch;
      }
    }
    if (st.P > 1) {
      index_t wmax = 0;
      for (const LeafPanel& p : leaf_panels(st.lk(), st.mr, st.Qc())) wmax = std::max(wmax, p.w);
      b[leaf_buffer(0)] = b[leaf_buffer(1)] = std::size_t(st.rows_of(st.lm()) * wmax) * e;
      b[leaf_buffer(2)] = b[leaf_buffer(3)] = std::size_t(wmax * st.cols_of(st.ln())) * e;
    }
    return b;
  }
  GemmShape device_gemm_shape() const override {
    Stage st = top_;
    for (CapsStep c : steps_) {
      if (c == CapsStep::dealt) return {st.lm(), st.ln(), st.lk()};  // whole subproblems
      st = c == CapsStep::bfs ? st.child_bfs() : st.child_dfs();
    }
    return {st.rows_of(st.lm()), st.cols_of(st.ln()), st.lk()};
  }

  template <class T>
  void run_device(DeviceSpace& sp, T alpha, MatrixView<const T> A, MatrixView<const T> B, T beta, MatrixView<T> C) {
    reset_phases();
    T* a = device_buffer<T>(0);
    T* b = device_buffer<T>(1);
    T* c = device_buffer<T>(2);
    // the padding must be zero: cleared, then only the pieces are written
    sp.zero(a, std::size_t(top_.a_len()) * sizeof(T), DeviceSpace::Lane::compute);
    sp.zero(b, std::size_t(top_.b_len()) * sizeof(T), DeviceSpace::Lane::compute);
    device_pack(sp, A, s_.m, s_.k, top_.lm(), top_.lk(), a);
    device_pack(sp, B, s_.k, s_.n, top_.lk(), top_.ln(), b);
    device_recurse<T>(sp, top_, 0, a, b, c);
    step_done(1, 1);
    device_unpack(sp, c, s_.m, s_.n, top_.lm(), top_.ln(), alpha, beta, C);
  }

 private:
  // Calls f(bi, bj, nr, cnt, local row, local column) for the blocks of this rank's part of the
  // padded layout that hold data: nr rows and cnt columns of the piece.
  template <class F>
  void for_each_part_block(index_t rows, index_t cols, index_t lr, index_t lc, F&& f) const {
    const PartMap pm = part_map(rows, cols, lr, lc);
    for (index_t bj = 0; bj < pm.nb; ++bj) {
      index_t cnt = 0;  // the block's valid columns are a prefix, consecutive in the piece
      while (cnt < pm.w && pm.local_col[bj * pm.w + cnt] >= 0) ++cnt;
      if (cnt == 0) continue;
      for (index_t bi = 0; bi < pm.nb; ++bi) {
        const index_t nr = std::clamp<index_t>(rows - pm.global_row[bi], 0, pm.h);
        if (nr > 0) f(bi, bj, nr, cnt, pm.local_row[bi], pm.local_col[bj * pm.w], pm.h * pm.w, pm.h);
      }
    }
  }
  template <class T>
  void device_pack(DeviceSpace& sp, MatrixView<const T> M, index_t rows, index_t cols, index_t lr, index_t lc,
                   T* out) const {
    for_each_part_block(rows, cols, lr, lc, [&](index_t bi, index_t bj, index_t nr, index_t cnt, index_t r0, index_t c0,
                                                index_t blk, index_t h) {
      sp.copy(out + z_index(bi, bj, top_.steps) * blk, std::max<index_t>(h, 1), M.data + r0 + c0 * M.ld, M.ld, nr, cnt,
              DeviceSpace::Lane::compute);
    });
  }
  template <class T>
  void device_unpack(DeviceSpace& sp, const T* in, index_t rows, index_t cols, index_t lr, index_t lc, T alpha, T beta,
                     MatrixView<T> C) const {
    for_each_part_block(rows, cols, lr, lc, [&](index_t bi, index_t bj, index_t nr, index_t cnt, index_t r0, index_t c0,
                                                index_t blk, index_t h) {
      sp.scale_add<T>(C.data + r0 + c0 * C.ld, C.ld, in + z_index(bi, bj, top_.steps) * blk, std::max<index_t>(h, 1), nr,
                      cnt, alpha, beta);
    });
  }
  // out = sum_i w[i] x_i over the nonzero weights (n elements each), on the compute lane.
  template <class T>
  static void device_sum(DeviceSpace& sp, T* out, index_t n, const std::vector<std::pair<const T*, int>>& terms) {
    if (n <= 0) return;
    DeviceSpace::Combination c;
    c.n_out = 1, c.out[0] = out;
    for (const auto& [x, w] : terms)
      if (w != 0) {
        if (c.n_in == 4) {
          c.n_in = 5;  // more than the fused kernel takes: one term at a time below
          break;
        }
        c.in[std::size_t(c.n_in)] = x, c.coef[0][std::size_t(c.n_in)] = w, ++c.n_in;
      }
    if (c.n_in >= 1 && c.n_in <= 4) return sp.combine(n, c, dtype_of<T>());
    bool first = true;
    for (const auto& [x, w] : terms) {
      if (w == 0) continue;
      sp.scale_add<T>(out, n, x, n, n, 1, T(w), first ? T(0) : T(1));
      first = false;
    }
    if (first) sp.zero(out, std::size_t(n) * sizeof(T), DeviceSpace::Lane::compute);
  }
  template <class T>
  static std::vector<std::pair<const T*, int>> quadrant_terms(const T* x, index_t quarter, const int (&row)[4]) {
    std::vector<std::pair<const T*, int>> t;
    for (int q = 0; q < 4; ++q) t.push_back({x + q * quarter, row[q]});
    return t;
  }

  template <class T>
  void device_recurse(DeviceSpace& sp, const Stage& st, int depth, const T* a, const T* b, T* c) {
    if (st.steps == 0) return device_leaf<T>(sp, st, a, b, c);
    if (steps_[depth] == CapsStep::dealt) return device_dealt<T>(sp, st, depth, a, b, c);
    const index_t qa = st.a_len() / 4, qb = st.b_len() / 4, qc = st.c_len() / 4;
    auto buf = [&](int i) { return device_buffer<T>(level_buffer(depth, i)); };
    if (steps_[depth] == CapsStep::dfs) {
      const Stage ch = st.child_dfs();
      T *s = buf(0), *t = buf(1), *mprod = buf(2);
      sp.zero(c, std::size_t(st.c_len()) * sizeof(T), DeviceSpace::Lane::compute);
      for (int j = 0; j < 7; ++j) {
        device_sum<T>(sp, s, qa, quadrant_terms<T>(a, qa, f_.a[j]));
        device_sum<T>(sp, t, qb, quadrant_terms<T>(b, qb, f_.b[j]));
        device_recurse<T>(sp, ch, depth + 1, s, t, mprod);
        if (depth == 0) step_done(j + 1, 8);
        for (int q = 0; q < 4; ++q)  // C_q += c[j][q] M_j
          if (f_.c[j][q] != 0) sp.scale_add<T>(c + q * qc, qc, mprod, qc, qc, 1, T(f_.c[j][q]), T(1));
      }
      return;
    }
    const Stage ch = st.child_bfs();
    DeviceComm& peers = *dev_peers_[std::size_t(bfs_level(depth))];
    T *s = buf(0), *t = buf(1), *mall = buf(2), *sub_a = buf(3), *sub_b = buf(4), *sub_c = buf(5), *tmp = buf(6);
    for (int j = 0; j < 7; ++j) {
      device_sum<T>(sp, s + j * qa, qa, quadrant_terms<T>(a, qa, f_.a[j]));
      device_sum<T>(sp, t + j * qb, qb, quadrant_terms<T>(b, qb, f_.b[j]));
    }
    const index_t L = ch.leaves();
    const int r = st.qc() / 7, g = st.qc() % 7;
    auto wa = [&](int p) { return chunk_width(st.lk(), 7 * r + p, st.Qc()); };
    auto wb = [&](int p) { return chunk_width(st.ln(), 7 * r + p, st.Qc()); };
    device_exchange_in<T>(sp, peers, s, qa, sub_a, L, st.rows_of(st.lm()), wa, g, tmp);
    device_exchange_in<T>(sp, peers, t, qb, sub_b, L, st.rows_of(st.lk()), wb, g, tmp);
    sp.compute_waits_for_comm();
    device_recurse<T>(sp, ch, depth + 1, sub_a, sub_b, sub_c);
    device_exchange_out<T>(sp, peers, sub_c, mall, qc, L, st.rows_of(st.lm()), wb, g, tmp);
    sp.compute_waits_for_comm();
    for (int q = 0; q < 4; ++q) {  // C_q = sum_j c[j][q] M_j
      std::vector<std::pair<const T*, int>> terms;
      for (int j = 0; j < 7; ++j) terms.push_back({mall + j * qc, f_.c[j][q]});
      device_sum<T>(sp, c + q * qc, qc, terms);
    }
  }
  // dealt() on device buffers: whole rounds dealt round-robin (the GPUs of a run are alike: no
  // balancer), the last J mod P subproblems split over all ranks. The sums and combinations are
  // fused passes on the compute lane (a sum that is one quadrant of A or B is sent from A or B); round t + 1's operands travel
  // on the comm lane (one NCCL group per round and direction) during round t's product, and
  // round t's products during round t + 1's sums. Markers order the lanes buffer by buffer:
  // 2 slot: round t's operands in, 4 + slot: its products back.
  template <class T>
  void device_dealt(DeviceSpace& sp, const Stage& st, int depth, const T* a, const T* b, T* c) {
    using Lane = DeviceSpace::Lane;
    const int L = st.steps, P = st.P, me = st.rank;
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    auto cwk = [&](int r) { return chunk_width(lk, r, P); };
    auto cwn = [&](int r) { return chunk_width(ln, r, P); };
    const index_t blk_a = lm * cwk(me), blk_b = lk * cwn(me), blk_c = lm * cwn(me);
    DealtPlan plan;
    plan.J = pow7(L);
    while (plan.J - plan.next >= P) plan.add(P);  // whole rounds; the rest split (split_product)
    const std::size_t rounds = plan.steps.size();
    DeviceComm& comm = *dev_dealt_;
    DealtSums<T> sa(L), sb(L);
    std::vector<T*> cm(std::size_t(L), nullptr);
    for (int l = 1; l < L; ++l) {
      sa.store[std::size_t(l)] = device_buffer<T>(level_buffer(depth + l, 0));
      sb.store[std::size_t(l)] = device_buffer<T>(level_buffer(depth + l, 1));
      cm[std::size_t(l)] = device_buffer<T>(level_buffer(depth + l, 2));
    }
    auto buf = [&](DealtBuffer w, std::size_t t) { return device_buffer<T>(dealt_buffer(w, int(t % 2))); };
    std::vector<std::array<bool, 4>> touched(std::size_t(L), std::array<bool, 4>{});
    std::array<std::vector<const T*>, 2> from_a, from_b;
    auto form = [&](const int (&coef)[7][4]) {
      return [&sp, &coef](int, const T* parent, index_t quarter, int d, T* dst) {
        device_sum<T>(sp, dst, quarter, quadrant_terms<T>(parent, quarter, coef[d]));
      };
    };
    auto in_mark = [](std::size_t t) { return 2 + int(t % 2); };
    auto out_mark = [](std::size_t t) { return 4 + int(t % 2); };
    auto own_a = [&](std::size_t t) { return buf(kSubA, t) + chunk_begin(lk, me, P) * lm; };
    auto own_b = [&](std::size_t t) { return buf(kSubB, t) + chunk_begin(ln, me, P) * lk; };
    auto form_round = [&](std::size_t t) {  // compute lane (round t - 2's product has read the operands: queued before)
      const DealtStep& s = plan.steps[t];
      const std::size_t n = s.owners.size(), sl = t % 2;
      from_a[sl].assign(n, nullptr), from_b[sl].assign(n, nullptr);
      const int mine = plan.index_of(t, me);
      for (std::size_t i = 0; i < n; ++i) {  // (this rank's own chunks straight into its subproblem)
        T* oa = int(i) == mine ? own_a(t) : buf(kSendA, t) + index_t(i) * blk_a;
        T* ob = int(i) == mine ? own_b(t) : buf(kSendB, t) + index_t(i) * blk_b;
        from_a[sl][i] = dealt_sum(s.j0 + index_t(i), L, a, st.a_len(), f_.a, sa, oa, form(f_.a));
        from_b[sl][i] = dealt_sum(s.j0 + index_t(i), L, b, st.b_len(), f_.b, sb, ob, form(f_.b));
      }
    };
    auto exchange_in = [&](std::size_t t) {  // comm lane, after the round's sums
      const DealtStep& s = plan.steps[t];
      const int mine = plan.index_of(t, me);
      const std::size_t sl = t % 2;
      sp.comm_waits_for_compute();
      comm.group_start();
      if (mine >= 0)
        for (int r = 0; r < P; ++r) {
          if (r == me) continue;
          if (lm * cwk(r) > 0) comm.recv(buf(kSubA, t) + chunk_begin(lk, r, P) * lm, lm * cwk(r), r);
          if (lk * cwn(r) > 0) comm.recv(buf(kSubB, t) + chunk_begin(ln, r, P) * lk, lk * cwn(r), r);
        }
      for (std::size_t i = 0; i < s.owners.size(); ++i) {
        if (int(i) == mine) continue;
        if (blk_a > 0) comm.send(from_a[sl][i], blk_a, s.owners[i]);
        if (blk_b > 0) comm.send(from_b[sl][i], blk_b, s.owners[i]);
      }
      comm.group_end();
      if (mine >= 0) {  // (a chunk that is a quadrant of A or B itself)
        const T* fa = from_a[sl][std::size_t(mine)];
        const T* fb = from_b[sl][std::size_t(mine)];
        if (fa != own_a(t)) sp.copy(own_a(t), blk_a, fa, blk_a, blk_a, 1, Lane::comm);
        if (fb != own_b(t)) sp.copy(own_b(t), blk_b, fb, blk_b, blk_b, 1, Lane::comm);
      }
      sp.mark(Lane::comm, in_mark(t));
    };
    auto exchange_out = [&](std::size_t t) {  // comm lane, after the round's product
      const DealtStep& s = plan.steps[t];
      const int mine = plan.index_of(t, me);
      sp.comm_waits_for_compute();
      comm.group_start();
      if (blk_c > 0)
        for (std::size_t i = 0; i < s.owners.size(); ++i)
          if (int(i) != mine) comm.recv(buf(kProductsIn, t) + index_t(i) * blk_c, blk_c, s.owners[i]);
      if (mine >= 0)
        for (int r = 0; r < P; ++r)
          if (r != me && lm * cwn(r) > 0) comm.send(buf(kSubC, t) + chunk_begin(ln, r, P) * lm, lm * cwn(r), r);
      comm.group_end();
      sp.mark(Lane::comm, out_mark(t));
    };
    auto add = [&](int, const T* M, index_t quarter, int d, T* up, std::array<bool, 4>& t) {
      const Used u = used_quadrants(f_.c, d);
      DeviceSpace::Combination k;
      k.n_in = 1, k.n_out = u.n, k.in[0] = M;
      for (int i = 0; i < u.n; ++i) {
        const auto q = std::size_t(u.q[std::size_t(i)]);
        k.out[std::size_t(i)] = up + index_t(q) * quarter, k.coef[std::size_t(i)][0] = f_.c[d][q];
        k.accumulate[std::size_t(i)] = t[q], t[q] = true;
      }
      sp.combine(quarter, k, dtype_of<T>());
    };
    auto clear = [&](int, T* p, index_t n) { sp.zero(p, std::size_t(n) * sizeof(T), Lane::compute); };
    auto combine_round = [&](std::size_t t) {  // compute lane, once the round's products are here
      sp.wait_mark(Lane::compute, out_mark(t));
      if (blk_c == 0) return;
      const DealtStep& s = plan.steps[t];
      for (std::size_t i = 0; i < s.owners.size(); ++i) {
        const T* q = s.owners[i] == me ? buf(kSubC, t) + chunk_begin(ln, me, P) * lm : buf(kProductsIn, t) + index_t(i) * blk_c;
        dealt_product(s.j0 + index_t(i), L, q, blk_c, c, cm, touched, add, clear);
      }
    };
    // The last J mod P subproblems, each split over all ranks (a round of fewer than P would
    // leave ranks idle: X on 2 GPUs deals 3 + 3 and splits the seventh): rank r forms its chunks
    // of S_j and T_j, S_j's chunks are allgathered, and rank r multiplies S_j by its own chunk of
    // T_j, which gives its own chunk of the product, to be combined as a dealt one is. Round 0's
    // buffers are free again (the comm lane is waited for first).
    auto split_product = [&](index_t j) {
      T* s_all = device_buffer<T>(dealt_buffer(kSubA, 0));
      T* t_mine = device_buffer<T>(dealt_buffer(kSendB, 0));
      T* product = device_buffer<T>(dealt_buffer(kSubC, 0));
      T* s_mine = s_all + chunk_begin(lk, me, P) * lm;
      const T* fs = dealt_sum(j, L, a, st.a_len(), f_.a, sa, s_mine, form(f_.a));
      const T* ft = dealt_sum(j, L, b, st.b_len(), f_.b, sb, t_mine, form(f_.b));
      sp.comm_waits_for_compute();
      comm.group_start();
      for (int r = 0; r < P; ++r) {
        if (r == me) continue;
        if (blk_a > 0) comm.send(fs, blk_a, r);
        if (lm * cwk(r) > 0) comm.recv(s_all + chunk_begin(lk, r, P) * lm, lm * cwk(r), r);
      }
      comm.group_end();
      if (fs != s_mine) sp.copy(s_mine, blk_a, fs, blk_a, blk_a, 1, Lane::comm);
      sp.compute_waits_for_comm();
      sp.gemm<T>(Op::N, Op::N, lm, cwn(me), lk, T(1), s_all, std::max<index_t>(lm, 1), ft, std::max<index_t>(lk, 1), T(0),
                 product, std::max<index_t>(lm, 1));
      if (blk_c > 0) dealt_product(j, L, static_cast<const T*>(product), blk_c, c, cm, touched, add, clear);
    };
    if (rounds > 0) {
      form_round(0);
      exchange_in(0);
    }
    for (std::size_t t = 0; t < rounds; ++t) {
      if (t + 1 < rounds) {
        // (the sums' buffers were last read by round t - 1's exchange, which the compute lane
        // has waited for; the operands' buffers by round t - 1's product, queued before this)
        form_round(t + 1);
        exchange_in(t + 1);
      }
      sp.wait_mark(Lane::compute, in_mark(t));
      if (plan.index_of(t, me) >= 0) {
        if (t >= 2) sp.wait_mark(Lane::compute, out_mark(t));  // round t - 2's products have left
        sp.gemm<T>(Op::N, Op::N, lm, ln, lk, T(1), buf(kSubA, t), std::max<index_t>(lm, 1), buf(kSubB, t),
                   std::max<index_t>(lk, 1), T(0), buf(kSubC, t), std::max<index_t>(lm, 1));
      }
      if (t >= 1) combine_round(t - 1);
      exchange_out(t);
      if (depth == 0) step_done(int(t + 1), int(rounds));
    }
    if (rounds > 0) combine_round(rounds - 1);
    sp.compute_waits_for_comm();
    for (index_t j = plan.next; j < plan.J; ++j) split_product(j);
    sp.compute_waits_for_comm();
  }
  // exchange_in on device buffers: peer p's L runs of rows x w(p) arrive whole in `tmp` and are
  // copied into their places in the subproblem.
  template <class T, class Width>
  void device_exchange_in(DeviceSpace& sp, DeviceComm& peers, const T* sums, index_t quarter, T* sub, index_t L,
                          index_t rows, Width w, int me, T* tmp) const {
    const std::array<index_t, 8> off = chunk_offsets(w);
    const index_t total_w = off[7];
    sp.comm_waits_for_compute();
    peers.group_start();
    for (int p = 0; p < 7; ++p) {
      if (p == me) continue;
      if (quarter > 0) peers.send(sums + p * quarter, quarter, p);
      if (rows * w(p) > 0) peers.recv(tmp + L * rows * off[p], L * rows * w(p), p);
    }
    peers.group_end();
    for (int p = 0; p < 7; ++p) {
      const T* from = p == me ? sums + me * quarter : tmp + L * rows * off[p];
      if (rows * w(p) > 0 && L > 0)
        sp.copy(sub + off[p] * rows, rows * total_w, from, rows * w(p), rows * w(p), L, DeviceSpace::Lane::comm);
    }
  }
  // exchange_out on device buffers: each peer's chunks packed into `tmp`, sent whole; this
  // rank's chunks of the seven products land in mall.
  template <class T, class Width>
  void device_exchange_out(DeviceSpace& sp, DeviceComm& peers, const T* prod, T* mall, index_t quarter, index_t L,
                           index_t rows, Width w, int me, T* tmp) const {
    const std::array<index_t, 8> off = chunk_offsets(w);
    const index_t total_w = off[7];
    sp.comm_waits_for_compute();
    for (int p = 0; p < 7; ++p) {
      if (rows * w(p) == 0 || L == 0) continue;
      T* to = p == me ? mall + me * quarter : tmp + L * rows * off[p];
      sp.copy(to, rows * w(p), prod + off[p] * rows, rows * total_w, rows * w(p), L, DeviceSpace::Lane::comm);
    }
    peers.group_start();
    for (int p = 0; p < 7; ++p) {
      if (p == me) continue;
      if (quarter > 0) peers.recv(mall + p * quarter, quarter, p);
      if (rows * w(p) > 0) peers.send(tmp + L * rows * off[p], L * rows * w(p), p);
    }
    peers.group_end();
  }
  // leaf() on device buffers: one rank multiplies alone; m > 1 ranks run the leaf SUMMA with
  // the next panel's broadcasts on the comm lane during this panel's product.
  template <class T>
  void device_leaf(DeviceSpace& sp, const Stage& st, const T* a, const T* b, T* c) {
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    const index_t h = st.rows_of(lm), wn = st.cols_of(ln);
    if (st.P == 1) {
      sp.gemm<T>(Op::N, Op::N, lm, wn, lk, T(1), a, std::max<index_t>(lm, 1), b, std::max<index_t>(lk, 1), T(0), c,
                 std::max<index_t>(lm, 1));
      return;
    }
    const int mr = st.mr, mc = st.Qc(), qr = st.qr(), qc = st.qc();
    const index_t hb = st.rows_of(lk);
    const std::vector<LeafPanel> panels = leaf_panels(lk, mr, mc);
    T* abuf[2] = {device_buffer<T>(leaf_buffer(0)), device_buffer<T>(leaf_buffer(1))};
    T* bbuf[2] = {device_buffer<T>(leaf_buffer(2)), device_buffer<T>(leaf_buffer(3))};
    std::array<const T*, 2> ap{}, bp{};
    auto post = [&](std::size_t t) {
      const LeafPanel& p = panels[t];
      const int slot = int(t % 2);
      T* asrc = qc == p.a_root ? const_cast<T*>(a) + (p.k0 - chunk_begin(lk, qc, mc)) * h : abuf[slot];
      if (qr == p.b_root)
        sp.copy(bbuf[slot], std::max<index_t>(p.w, 1), b + (p.k0 - chunk_begin(lk, qr, mr)), std::max<index_t>(hb, 1),
                p.w, wn, DeviceSpace::Lane::comm);
      dev_leaf_rows_->broadcast(asrc, h * p.w, p.a_root);
      dev_leaf_cols_->broadcast(bbuf[slot], p.w * wn, p.b_root);
      ap[slot] = asrc, bp[slot] = bbuf[slot];
    };
    if (panels.empty()) sp.zero(c, std::size_t(h * wn) * sizeof(T), DeviceSpace::Lane::compute);
    sp.comm_waits_for_compute();
    if (!panels.empty()) post(0);
    for (std::size_t t = 0; t < panels.size(); ++t) {
      const int slot = int(t % 2);
      sp.compute_waits_for_comm();
      if (t + 1 < panels.size()) {
        sp.comm_waits_for_compute();
        post(t + 1);
      }
      sp.gemm<T>(Op::N, Op::N, h, wn, panels[t].w, T(1), ap[slot], std::max<index_t>(h, 1), bp[slot],
                 std::max<index_t>(panels[t].w, 1), t == 0 ? T(0) : T(1), c, std::max<index_t>(h, 1));
    }
    sp.compute_waits_for_comm();
  }

  // For each leaf-block row, this rank's row part; for each leaf-block column, its column chunk
  // (both clipped to the matrix: the rest is padding).
  Piece piece(index_t rows, index_t cols, index_t leaf_rows, index_t leaf_cols) const {
    Piece p;
    const int S = top_.steps;
    const index_t r0 = chunk_begin(leaf_rows, top_.qr(), top_.mr), h = top_.rows_of(leaf_rows);
    const index_t c0 = chunk_begin(leaf_cols, top_.qc(), top_.Qc()), w = top_.cols_of(leaf_cols);
    for (index_t L = 0; L < (index_t(1) << S); ++L) {
      index_t g0 = L * leaf_rows + r0, g1 = std::min(g0 + h, rows);
      if (g1 > g0) p.row_runs.push_back({g0, g1 - g0});
      g0 = L * leaf_cols + c0, g1 = std::min(g0 + w, cols);
      if (g1 > g0) p.col_runs.push_back({g0, g1 - g0});
    }
    if (p.col_runs.empty() || p.row_runs.empty()) return Piece();
    return p;
  }

  // Offset, in a Z-ordered buffer, of leaf block (bi, bj) of a 2^S x 2^S grid.
  static index_t z_index(index_t bi, index_t bj, int S) {
    index_t z = 0;
    for (int bit = S - 1; bit >= 0; --bit) z = z * 4 + ((bi >> bit) & 1) * 2 + ((bj >> bit) & 1);
    return z;
  }

  // This rank's part of the padded layout against the user's piece: per block row bi, the
  // row part's height h, first global row, and first row in the piece; per column of the layout
  // (block column bj, chunk column j, in that order), its column in the piece, or -1 (padding).
  struct PartMap {
    index_t h, w, nb;
    std::vector<index_t> global_row, local_row, local_col;
  };
  PartMap part_map(index_t rows, index_t cols, index_t lr, index_t lc) const {
    PartMap m;
    m.nb = index_t(1) << top_.steps;
    m.h = top_.rows_of(lr), m.w = top_.cols_of(lc);
    const index_t r0 = chunk_begin(lr, top_.qr(), top_.mr), c0 = chunk_begin(lc, top_.qc(), top_.Qc());
    index_t local = 0;
    for (index_t bi = 0; bi < m.nb; ++bi) {
      m.global_row.push_back(bi * lr + r0);
      m.local_row.push_back(local);
      local += std::clamp<index_t>(rows - (bi * lr + r0), 0, m.h);
    }
    m.local_col.assign(static_cast<std::size_t>(m.nb * m.w), -1);
    local = 0;
    for (index_t bj = 0; bj < m.nb; ++bj)
      for (index_t j = 0; j < m.w; ++j)
        if (bj * lc + c0 + j < cols) m.local_col[bj * m.w + j] = local++;
    return m;
  }
  // Between the user's piece and the Z-ordered, zero-padded leaf parts: one threaded pass that
  // writes every element of the buffer once (copied, or zero in the padding).
  template <class T>
  void pack(MatrixView<const T> M, index_t rows, index_t cols, index_t lr, index_t lc, T* out) const {
    const int S = top_.steps;
    const PartMap pm = part_map(rows, cols, lr, lc);
    const index_t blk = pm.h * pm.w;
#pragma omp parallel for schedule(static) if (blk * pm.nb * pm.nb > (1 << 16))
    for (index_t col = 0; col < pm.nb * pm.w; ++col) {
      const index_t bj = col / pm.w, j = col % pm.w, lcn = pm.local_col[col];
      for (index_t bi = 0; bi < pm.nb; ++bi) {
        T* dst = out + z_index(bi, bj, S) * blk + j * pm.h;
        const index_t nr = lcn < 0 ? 0 : std::clamp<index_t>(rows - pm.global_row[bi], 0, pm.h);
        if (nr > 0) std::memcpy(dst, M.data + pm.local_row[bi] + lcn * M.ld, sizeof(T) * nr);
        std::fill(dst + nr, dst + pm.h, T(0));
      }
    }
  }
  // C = alpha (the Z-ordered product) + beta C on the user's piece, in one threaded pass (C is
  // not read when beta = 0).
  template <class T>
  void unpack(const T* in, index_t rows, index_t cols, index_t lr, index_t lc, T alpha, T beta,
              MatrixView<T> C) const {
    const int S = top_.steps;
    const PartMap pm = part_map(rows, cols, lr, lc);
    const index_t blk = pm.h * pm.w;
#pragma omp parallel for schedule(static) if (blk * pm.nb * pm.nb > (1 << 16))
    for (index_t col = 0; col < pm.nb * pm.w; ++col) {
      const index_t bj = col / pm.w, j = col % pm.w, lcn = pm.local_col[col];
      if (lcn < 0) continue;
      for (index_t bi = 0; bi < pm.nb; ++bi) {
        const index_t nr = std::clamp<index_t>(rows - pm.global_row[bi], 0, pm.h);
        const T* src = in + z_index(bi, bj, S) * blk + j * pm.h;
        T* dst = C.data + pm.local_row[bi] + lcn * C.ld;
        if (beta == T(0))
          for (index_t i = 0; i < nr; ++i) dst[i] = alpha * src[i];
        else
          for (index_t i = 0; i < nr; ++i) dst[i] = alpha * src[i] + beta * dst[i];
      }
    }
  }

  // Local sums of quadrants: out_j = sum_q coef[j][q] x_q for all seven products in one fused,
  // threaded pass (BFS: reads the four quadrants once, writes seven sums).
  template <class T>
  static void form_sums(const T* x, index_t quarter, const int (&coef)[7][4], T* out) {
    std::array<const T*, 4> in;
    for (int q = 0; q < 4; ++q) in[q] = x + q * quarter;
    std::array<T*, 7> o;
    std::array<std::array<T, 4>, 7> c{};
    for (int j = 0; j < 7; ++j) {
      o[j] = out + j * quarter;
      for (int q = 0; q < 4; ++q) c[j][q] = T(coef[j][q]);
    }
    fused_combine_flat<T, 4, 7>(quarter, in, o, false, c);
  }
  // The quadrants product j's row of a formula table uses (its nonzero coefficients).
  struct Used {
    int n = 0;
    std::array<int, 4> q{};
  };
  static Used used_quadrants(const int (&coef)[7][4], int j) {
    Used u;
    for (int q = 0; q < 4; ++q)
      if (coef[j][q] != 0) u.q[u.n++] = q;
    return u;
  }
  // Product j's sum alone (DFS), reading only the quadrants it uses (one for Strassen's S_2,
  // up to four for Winograd's).
  template <class T>
  static void form_sum(const T* x, index_t quarter, const int (&coef)[7][4], int j, T* out) {
    const Used u = used_quadrants(coef, j);
    with_count<4>(u.n, [&](auto nc) {
      constexpr std::size_t N = decltype(nc)::value;
      std::array<const T*, N> in;
      std::array<std::array<T, N>, 1> k;
      for (std::size_t t = 0; t < N; ++t) in[t] = x + u.q[t] * quarter, k[0][t] = T(coef[j][u.q[t]]);
      fused_combine_flat<T, N, 1>(quarter, in, {out}, false, k);
    });
  }
  // C_q = sum_j coef[j][q] M_j for the four quadrants, in one pass over the seven products.
  template <class T>
  static void combine(const T* M, index_t quarter, const int (&coef)[7][4], T* c) {
    std::array<const T*, 7> in;
    for (int j = 0; j < 7; ++j) in[j] = M + j * quarter;
    std::array<T*, 4> o;
    std::array<std::array<T, 7>, 4> k{};
    for (int q = 0; q < 4; ++q) {
      o[q] = c + q * quarter;
      for (int j = 0; j < 7; ++j) k[q][j] = T(coef[j][q]);
    }
    fused_combine_flat<T, 7, 4>(quarter, in, o, false, k);
  }
  // C_q += coef[j][q] M_j for the quadrants product j feeds (DFS), reading M_j once.
  template <class T>
  static void accumulate_product(const T* M, index_t quarter, const int (&coef)[7][4], int j, T* c) {
    const Used u = used_quadrants(coef, j);
    with_count<4>(u.n, [&](auto nc) {
      constexpr std::size_t N = decltype(nc)::value;
      std::array<T*, N> out;
      std::array<std::array<T, 1>, N> w;
      for (std::size_t t = 0; t < N; ++t) out[t] = c + u.q[t] * quarter, w[t][0] = T(coef[j][u.q[t]]);
      fused_combine_flat<T, 1, N>(quarter, {M}, out, true, w);
    });
  }
  // f(std::integral_constant<size_t, n>) for a run-time count n in 1..Max (0: nothing).
  template <std::size_t Max, class F>
  static void with_count(int n, F&& f) {
    if constexpr (Max > 0) {
      if (n == int(Max)) return f(std::integral_constant<std::size_t, Max>{});
      with_count<Max - 1>(n, f);
    }
  }

  template <class T>
  void recurse(Engine& e, const Stage& st, int depth, const Comm& comm, const T* a, const T* b,
               T* c) {
    if (st.steps == 0) return leaf<T>(e, st, a, b, c);
    if (steps_[depth] == CapsStep::dealt) return dealt<T>(e, st, depth, comm, a, b, c);
    const Stage ch = steps_[depth] == CapsStep::bfs ? st.child_bfs() : st.child_dfs();
    const index_t qa = st.a_len() / 4, qb = st.b_len() / 4, qc = st.c_len() / 4;
    if (steps_[depth] == CapsStep::dfs) {
      auto s = buffer<T>(qa), t = buffer<T>(qb), mprod = buffer<T>(qc);
      std::fill(c, c + st.c_len(), T(0));
      for (int j = 0; j < 7; ++j) {
        timed(level_phase(depth, kSums), [&] {
          form_sum(a, qa, f_.a, j, s.get());
          form_sum(b, qb, f_.b, j, t.get());
        });
        recurse<T>(e, ch, depth + 1, comm, s.get(), t.get(), mprod.get());
        if (depth == 0) step_done(j + 1, 8);  // the top-level DFS products
        timed(level_phase(depth, kCombine), [&] { accumulate_product(mprod.get(), qc, f_.c, j, c); });
      }
      return;
    }
    // BFS: sums for all seven products, all-to-all among the 7 peers, recurse in the group.
    const int bfs_index = bfs_level(depth);
    const Comm& peers = peers_[bfs_index];
    const Comm& group = groups_[bfs_index];
    auto s = buffer<T>(7 * qa), t = buffer<T>(7 * qb);
    timed(level_phase(depth, kSums), [&] {
      form_sums(a, qa, f_.a, s.get());
      form_sums(b, qb, f_.b, t.get());
    });
    const index_t L = ch.leaves();  // leaf blocks per quadrant
    const int r = st.qc() / 7, g = st.qc() % 7;
    // Peer p's chunk widths (of Qc) for A's and B's (and C's) leaf columns; the peers share
    // this rank's row part.
    auto wa = [&](int p) { return chunk_width(st.lk(), 7 * r + p, st.Qc()); };
    auto wb = [&](int p) { return chunk_width(st.ln(), 7 * r + p, st.Qc()); };
    auto sub_a = buffer<T>(ch.a_len()), sub_b = buffer<T>(ch.b_len()), sub_c = buffer<T>(ch.c_len());
    if (ch.steps == 0 && ch.P == 1 && !e.overlaps_host() && !e.prefers_whole_k(st.lm(), st.ln(), st.lk(), dtype_of<T>())) {
      // The subproblem is this rank's own leaf: its products start on the pieces that have
      // arrived while the others are still on their way. (Not for a Strassen-like engine: 49
      // block products would cost it its levels. On the 32-core host, P = 7 x 4, f64 16384, the
      // winograd engine's one level in blocks took 9.4 s where a DFS step below the BFS took 7.9.)
      arriving_leaf<T>(e, st, depth, peers, s.get(), qa, t.get(), qb, sub_a.get(), sub_b.get(), sub_c.get(), wa, wb, g);
      s.reset(), t.reset();
    } else {
      timed(level_phase(depth, kExchangeIn), [&] {
        exchange_in<T>(peers, s.get(), qa, sub_a.get(), L, st.rows_of(st.lm()), wa, g);
        exchange_in<T>(peers, t.get(), qb, sub_b.get(), L, st.rows_of(st.lk()), wb, g);
      });
      s.reset(), t.reset();  // the sums have left; free them before the subproblem
      recurse<T>(e, ch, depth + 1, group, sub_a.get(), sub_b.get(), sub_c.get());
    }
    sub_a.reset(), sub_b.reset();
    auto mall = buffer<T>(7 * qc);
    timed(level_phase(depth, kExchangeOut),
          [&] { exchange_out<T>(peers, sub_c.get(), mall.get(), qc, L, st.rows_of(st.lm()), wb, g); });
    timed(level_phase(depth, kCombine), [&] { combine<T>(mall.get(), qc, f_.c, c); });
  }

  // ---- Dealt steps (X): the last L levels' 7^L subproblems dealt round-robin over the stage ----
  static index_t pow7(int L) {
    index_t p = 1;
    for (int l = 0; l < L; ++l) p *= 7;
    return p;
  }
  // Digit l (1 = the top dealt level) of subproblem j among 7^L.
  static int digit(index_t j, int l, int L) { return int(j / pow7(L - l) % 7); }
  // The sums of the dealt levels above the last, as formed so far: level l holds (at[l]) the sum
  // of prefix[l] (j div 7^(L-l)), in store[l] or, where the formula takes one quadrant alone
  // (Strassen's A11, A22; Winograd's A11, A12, A22), in place in its parent; from_x[l]: that
  // place lies in the stage's own A or B, which no dealt step overwrites.
  template <class T>
  struct DealtSums {
    std::vector<T*> store;
    std::vector<const T*> at;
    std::vector<index_t> prefix;
    std::vector<bool> from_x;
    explicit DealtSums(int L) : store(std::size_t(L) + 1), at(std::size_t(L) + 1), prefix(std::size_t(L) + 1, -1),
                                from_x(std::size_t(L) + 1) {}
  };
  // Subproblem j's chunk of a sum (S_j of A with f_.a, T_j of B with f_.b) for the stage's
  // chunk x (len elements): each level's sum is formed when its prefix first appears (j only
  // grows within a dealt step) by form(l, parent, quarter, digit, dst); the last level's into
  // `out`, or not at all where it is one quadrant of x itself. Returns where the chunk lies.
  // (A last-level quadrant of a stored sum is copied: the next prefix overwrites the store
  // while the chunk may still be on its way.)
  template <class T, class Form>
  static const T* dealt_sum(index_t j, int L, const T* x, index_t len, const int (&coef)[7][4], DealtSums<T>& s,
                            T* out, Form&& form) {
    const T* parent = x;
    bool parent_in_x = true;
    for (int l = 1; l <= L; ++l) {
      const auto i = std::size_t(l);
      len /= 4;
      const index_t pre = j / pow7(L - l);
      if (l == L || s.prefix[i] != pre) {
        const int d = digit(j, l, L);
        const Used u = used_quadrants(coef, d);
        if (u.n == 1 && coef[d][u.q[0]] == 1 && (l < L || parent_in_x)) {
          s.at[i] = parent + u.q[0] * len, s.from_x[i] = parent_in_x;
        } else {
          T* dst = l == L ? out : s.store[i];
          form(l, parent, len, d, dst);
          s.at[i] = dst, s.from_x[i] = false;
        }
        s.prefix[i] = pre;
      }
      parent = s.at[i], parent_in_x = s.from_x[i];
    }
    return parent;
  }
  template <class T>
  const T* form_dealt_sum(index_t j, int L, const T* x, index_t len, const int (&coef)[7][4], DealtSums<T>& s, T* out,
                          int depth) {
    return dealt_sum(j, L, x, len, coef, s, out, [&](int l, const T* parent, index_t quarter, int d, T* dst) {
      timed(level_phase(depth + l - 1, kSums), [&] { form_sum(parent, quarter, coef, d, dst); });
    });
  }
  // C's quadrants (of `up`, each `quarter` long) += coef[j][q] M for those product j feeds; a
  // quadrant not yet written this round is overwritten instead (touched[q]).
  template <class T>
  static void add_to_quadrants(const T* M, index_t quarter, const int (&coef)[7][4], int j, T* up,
                               std::array<bool, 4>& touched) {
    const Used u = used_quadrants(coef, j);
    with_count<4>(u.n, [&](auto nc) {
      constexpr std::size_t N = decltype(nc)::value;
      std::array<T*, N> out;
      std::array<bool, N> acc;
      std::array<std::array<T, 1>, N> w;
      for (std::size_t t = 0; t < N; ++t) {
        out[t] = up + u.q[t] * quarter, w[t][0] = T(coef[j][u.q[t]]), acc[t] = touched[std::size_t(u.q[t])];
        touched[std::size_t(u.q[t])] = true;
      }
      fused_combine_flat<T, 1, N>(quarter, {M}, out, acc, w);
    });
  }
  // Subproblem j's product chunk q (blk_c elements) into C through the stack: level L - 1's
  // partial product (C itself when L = 1) takes it; a level whose seventh child is in passes
  // its sum one level up and starts afresh. add(l, M, quarter, digit, up, touched) adds into
  // level l's quadrants (add_to_quadrants), clear(l, p, n) zeroes n elements of level l + 1.
  template <class T, class Add, class Clear>
  static void dealt_product(index_t j, int L, const T* q, index_t blk_c, T* c, const std::vector<T*>& stack,
                            std::vector<std::array<bool, 4>>& touched, Add&& add, Clear&& clear) {
    auto level = [&](int l) { return l == 0 ? c : stack[std::size_t(l)]; };
    index_t quarter = blk_c;
    add(L - 1, q, quarter, digit(j, L, L), level(L - 1), touched[std::size_t(L - 1)]);
    for (int l = L - 1; l >= 1 && digit(j, l + 1, L) == 6; --l) {
      quarter *= 4;
      std::array<bool, 4>& t = touched[std::size_t(l)];
      for (int qd = 0; qd < 4; ++qd)  // (every quadrant gets a product in both formulas)
        if (!t[std::size_t(qd)]) clear(l - 1, level(l) + qd * (quarter / 4), quarter / 4);
      add(l - 1, level(l), quarter, digit(j, l, L), level(l - 1), touched[std::size_t(l - 1)]);
      t = {};
    }
  }
  template <class T>
  void add_dealt_product(index_t j, int L, const T* q, index_t blk_c, T* c, const std::vector<T*>& stack,
                         std::vector<std::array<bool, 4>>& touched, int depth) {
    dealt_product(
        j, L, q, blk_c, c, stack, touched,
        [&](int l, const T* M, index_t quarter, int d, T* up, std::array<bool, 4>& t) {
          timed(level_phase(depth + l, kCombine), [&] { add_to_quadrants(M, quarter, f_.c, d, up, t); });
        },
        [&](int l, T* p, index_t n) { timed(level_phase(depth + l, kCombine), [&] { std::fill(p, p + n, T(0)); }); });
  }
  // Calls poke() on every request list given (MPI progresses all transfers in any of them).
  struct PokeAll {
    std::vector<Requests*> lists;
    void poke() {
      for (Requests* r : lists) r->poke();
    }
  };
  // The order in which the subproblems are dealt: step s gives subproblem j0 + i to owners[i].
  // Steps 0 and 1 give one to every rank; from step 2 on, where the balancer is on, rank i takes
  // part in a fraction w_i = min(1, t_median / t_i) of the steps (t_i: its step-0 product's
  // time, exchanged once), so that a rank on a slower core (seen on the 32-core hosts: equal
  // products taking up to 1.5x longer on some cores, for seconds) skips steps instead of holding
  // every step back. Every rank computes the same plan from the same gathered times.
  struct DealtStep {
    index_t j0;
    std::vector<int> owners;
  };
  struct DealtPlan {
    std::vector<DealtStep> steps;
    index_t next = 0, J = 0;
    std::vector<double> w;  // empty: every rank in every step
    void add(int P) {
      DealtStep s{next, {}};
      const double k = double(steps.size()) - 2;
      for (int r = 0; r < P && next < J; ++r)
        if (w.empty() || std::floor((k + 1) * w[std::size_t(r)]) > std::floor(k * w[std::size_t(r)]))
          s.owners.push_back(r), ++next;
      steps.push_back(std::move(s));
    }
    int index_of(std::size_t t, int r) const {
      const auto& o = steps[t].owners;
      const auto it = std::find(o.begin(), o.end(), r);
      return it == o.end() ? -1 : int(it - o.begin());
    }
  };
  // Settings from the environment, read once when the algorithm is built: DISTMM_CAPS_BALANCE=0
  // deals round-robin throughout (agreed over the ranks: off if any rank has it off, since a
  // rank that balances alone would wait for a gather the others never post);
  // DISTMM_CAPS_SKEW=R:F (tests) makes rank R report F times its step-0 time.
  struct BalanceSettings {
    bool on = true;
    int skew_rank = -1;
    double skew = 1;
    explicit BalanceSettings(const Comm& world) {
      const Settings s = settings();
      on = s.caps_balance, skew_rank = s.caps_skew.rank, skew = s.caps_skew.factor;
      int mine = on ? 1 : 0, all = 1;
      MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world.get());
      on = all == 1;
    }
  };
  template <class T>
  void dealt(Engine& e, const Stage& st, int depth, const Comm& comm, const T* a, const T* b, T* c) {
    const int L = st.steps, P = st.P, me = st.rank;
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    auto cwk = [&](int r) { return chunk_width(lk, r, P); };
    auto cwn = [&](int r) { return chunk_width(ln, r, P); };
    const index_t blk_a = lm * cwk(me), blk_b = lk * cwn(me), blk_c = lm * cwn(me);
    const index_t J = pow7(L);
    const BalanceSettings& bs = balance_;
    DealtPlan plan;
    plan.J = J;
    plan.add(P), plan.add(P);
    const bool balance = bs.on && plan.next < J && P > 1;
    std::vector<double> times(std::size_t(P), 0.0);
    double my_time = 0;
    MPI_Request gather = MPI_REQUEST_NULL;
    auto extend_to = [&](std::size_t t) {  // the plan's steps up to t (or to the last subproblem)
      while (plan.steps.size() <= t && plan.next < J) {
        if (balance && plan.w.empty()) {
          timed(level_phase(depth + L - 1, kExchangeIn), [&] { MPI_Wait(&gather, MPI_STATUS_IGNORE); });
          std::vector<double> sorted = times;
          std::sort(sorted.begin(), sorted.end());
          const double med = sorted[(sorted.size() - 1) / 2];  // (the lower median: at P = 2, the faster)
          for (double ti : times) plan.w.push_back(ti > 0 && med > 0 ? std::clamp(med / ti, 0.05, 1.0) : 1.0);
        }
        plan.add(P);
      }
    };
    const auto levels = static_cast<std::size_t>(L);
    std::vector<AlignedPtr<T>> stack;  // the levels above the last: sums of A and B, partial products
    DealtSums<T> sa(L), sb(L);
    std::vector<T*> cm(levels);
    for (int l = 1; l < L; ++l) {
      const auto i = std::size_t(l);
      stack.push_back(buffer<T>(st.a_len() >> (2 * l))), sa.store[i] = stack.back().get();
      stack.push_back(buffer<T>(st.b_len() >> (2 * l))), sb.store[i] = stack.back().get();
      stack.push_back(buffer<T>(st.c_len() >> (2 * l))), cm[i] = stack.back().get();
    }
    std::array<std::vector<const T*>, 2> from_a, from_b;  // per slot, where each owner's chunks lie
    std::vector<std::array<bool, 4>> touched(levels, std::array<bool, 4>{});
    std::array<AlignedPtr<T>, 2> send_a{buffer<T>(P * blk_a), buffer<T>(P * blk_a)},
        send_b{buffer<T>(P * blk_b), buffer<T>(P * blk_b)}, sub_a{buffer<T>(lm * lk), buffer<T>(lm * lk)},
        sub_b{buffer<T>(lk * ln), buffer<T>(lk * ln)}, sub_c{buffer<T>(lm * ln), buffer<T>(lm * ln)},
        q_in{buffer<T>(P * blk_c), buffer<T>(P * blk_c)};
    std::array<Requests, 2> in_recv, in_send, out_recv, out_send;
    const std::size_t x_in = level_phase(depth + L - 1, kExchangeIn), x_out = level_phase(depth + L - 1, kExchangeOut);
    // Step t's sums formed and sent to their owners; this rank's own subproblem's pieces awaited.
    auto own_a = [&](T* sub) { return sub + chunk_begin(lk, me, P) * lm; };
    auto own_b = [&](T* sub) { return sub + chunk_begin(ln, me, P) * lk; };
    auto post_in = [&](std::size_t t) {
      const int sl = int(t % 2);
      const DealtStep& s = plan.steps[t];
      const int n = int(s.owners.size()), mine = plan.index_of(t, me);
      timed(x_in, [&] { in_send[sl].wait_all(); });  // step t - 2's pieces have left this slot
      from_a[sl].assign(std::size_t(n), nullptr), from_b[sl].assign(std::size_t(n), nullptr);
      for (int i = 0; i < n; ++i) {  // (this rank's own chunks straight into its subproblem)
        T* oa = i == mine ? own_a(sub_a[sl].get()) : send_a[sl].get() + i * blk_a;
        T* ob = i == mine ? own_b(sub_b[sl].get()) : send_b[sl].get() + i * blk_b;
        from_a[sl][std::size_t(i)] = form_dealt_sum(s.j0 + i, L, a, st.a_len(), f_.a, sa, oa, depth);
        from_b[sl][std::size_t(i)] = form_dealt_sum(s.j0 + i, L, b, st.b_len(), f_.b, sb, ob, depth);
      }
      timed(x_in, [&] {
        if (mine >= 0)
          for (int r = 0; r < P; ++r) {
            if (r == me) continue;
            if (lm * cwk(r) > 0) comm.irecv(sub_a[sl].get() + chunk_begin(lk, r, P) * lm, lm * cwk(r), r, 31, in_recv[sl]);
            if (lk * cwn(r) > 0) comm.irecv(sub_b[sl].get() + chunk_begin(ln, r, P) * lk, lk * cwn(r), r, 32, in_recv[sl]);
          }
        for (int i = 0; i < n; ++i) {
          if (i == mine) continue;
          if (blk_a > 0) comm.isend(from_a[sl][std::size_t(i)], blk_a, s.owners[std::size_t(i)], 31, in_send[sl]);
          if (blk_b > 0) comm.isend(from_b[sl][std::size_t(i)], blk_b, s.owners[std::size_t(i)], 32, in_send[sl]);
        }
        if (mine >= 0) {
          const T* fa = from_a[sl][std::size_t(mine)];
          const T* fb = from_b[sl][std::size_t(mine)];
          if (fa != own_a(sub_a[sl].get())) std::copy(fa, fa + blk_a, own_a(sub_a[sl].get()));  // (a quadrant of A itself)
          if (fb != own_b(sub_b[sl].get())) std::copy(fb, fb + blk_b, own_b(sub_b[sl].get()));
        }
      });
    };
    // Step t's products' chunks of this rank into C, in subproblem order.
    auto combine_step = [&](std::size_t t) {
      const int sl = int(t % 2);
      timed(x_out, [&] { out_recv[sl].wait_all(); });
      if (blk_c == 0) return;
      const DealtStep& s = plan.steps[t];
      for (int i = 0; i < int(s.owners.size()); ++i) {
        const T* q = s.owners[std::size_t(i)] == me ? sub_c[sl].get() + chunk_begin(ln, me, P) * lm
                                                     : q_in[sl].get() + i * blk_c;
        add_dealt_product(s.j0 + i, L, q, blk_c, c, cm, touched, depth);
      }
    };
    PokeAll pending{{&in_recv[0], &in_recv[1], &in_send[0], &in_send[1], &out_recv[0], &out_recv[1], &out_send[0], &out_send[1]}};
    post_in(0);
    for (std::size_t t = 0; t < plan.steps.size(); ++t) {
      const int sl = int(t % 2);
      extend_to(t + 1);  // (may grow plan.steps: references into it are taken after)
      if (t + 1 < plan.steps.size()) post_in(t + 1);
      const DealtStep& s = plan.steps[t];
      timed(x_out, [&] {
        if (blk_c > 0)
          for (int i = 0; i < int(s.owners.size()); ++i)
            if (s.owners[std::size_t(i)] != me)
              comm.irecv(q_in[sl].get() + i * blk_c, blk_c, s.owners[std::size_t(i)], 33, out_recv[sl]);
        in_recv[sl].wait_all();
      });
      if (plan.index_of(t, me) >= 0) {
        timed(x_out, [&] { out_send[sl].wait_all(); });  // step t - 2's product has left sub_c
        const double t0 = MPI_Wtime();
        timed(tail_phase(1), [&] {
          gemm_with_progress<T>(e, lm, ln, lk, T(1), sub_a[sl].get(), std::max<index_t>(lm, 1), sub_b[sl].get(),
                                std::max<index_t>(lk, 1), T(0), sub_c[sl].get(), std::max<index_t>(lm, 1), &pending);
        });
        if (t == 0) my_time = (MPI_Wtime() - t0) * (me == bs.skew_rank ? bs.skew : 1.0);
        timed(x_out, [&] {
          for (int r = 0; r < P; ++r)
            if (r != me && lm * cwn(r) > 0)
              comm.isend(sub_c[sl].get() + chunk_begin(ln, r, P) * lm, lm * cwn(r), r, 33, out_send[sl]);
        });
      }
      if (t == 0 && balance)  // one double per rank, outside the counted words
        MPI_Iallgather(&my_time, 1, MPI_DOUBLE, times.data(), 1, MPI_DOUBLE, comm.get(), &gather);
      if (t >= 1) combine_step(t - 1);
      if (depth == 0) step_done(int(t + 1), int(std::max<std::size_t>(plan.steps.size(), t + 1)));
    }
    combine_step(plan.steps.size() - 1);
    timed(x_out, [&] {
      for (int sl = 0; sl < 2; ++sl) in_send[sl].wait_all(), out_send[sl].wait_all();
      if (gather != MPI_REQUEST_NULL) MPI_Wait(&gather, MPI_STATUS_IGNORE);
    });
  }

  template <class T>
  static AlignedPtr<T> buffer(index_t n) {  // uninitialised: every element is written first
    return aligned_alloc_array<T>(static_cast<std::size_t>(std::max<index_t>(n, 1)));
  }

  int bfs_level(int depth) const {
    int b = 0;
    for (int d = 0; d < depth; ++d) b += steps_[d] == CapsStep::bfs;
    return b;
  }

  // Sends sums[j] (quarter elements: L leaf chunks of rows x w(me)) to peer j and assembles the
  // subproblem's chunks: for each leaf, the 7 peers' column chunks side by side. Each peer's
  // chunks land in place (an MPI vector type: L runs of rows x w(p), rows x total_w apart); only
  // this rank's own sum is copied.
  // Where each of the 7 peers' column chunks starts in the subproblem (off[7]: the total).
  template <class Width>
  static std::array<index_t, 8> chunk_offsets(Width w) {
    std::array<index_t, 8> off{};
    for (int p = 0; p < 7; ++p) off[p + 1] = off[p] + w(p);
    return off;
  }
  template <class T, class Width>
  void exchange_in(const Comm& peers, const T* sums, index_t quarter, T* sub, index_t L,
                   index_t rows, Width w, int me) const {
    const std::array<index_t, 8> off = chunk_offsets(w);
    const index_t total_w = off[7];
    Requests rq;
    for (int p = 0; p < 7; ++p) {
      if (p == me || w(p) * rows == 0) continue;
      peers.irecv_strided(sub + off[p] * rows, L, rows * w(p), rows * total_w, p, 21, rq);
    }
    for (int p = 0; p < 7; ++p)
      if (p != me && quarter > 0) peers.isend(sums + p * quarter, quarter, p, 21, rq);
    copy_runs(sums + me * quarter, rows * w(me), sub + off[me] * rows, rows * total_w, L);
    rq.wait_all();
  }
  // The reverse: splits this group's product chunks among the 7 peers (sent in place through a
  // vector type); receives their chunks of the other six products, so that mall holds this
  // rank's chunks of all seven.
  template <class T, class Width>
  void exchange_out(const Comm& peers, const T* prod, T* mall, index_t quarter, index_t L,
                    index_t rows, Width w, int me) const {
    const std::array<index_t, 8> off = chunk_offsets(w);
    const index_t total_w = off[7];
    Requests rq;
    for (int p = 0; p < 7; ++p)
      if (p != me && quarter > 0) peers.irecv(mall + p * quarter, quarter, p, 22, rq);
    for (int p = 0; p < 7; ++p) {
      if (p == me || w(p) * rows == 0) continue;
      peers.isend_strided(prod + off[p] * rows, L, rows * w(p), rows * total_w, p, 22, rq);
    }
    // This rank's own piece goes straight to its slot in mall.
    T* mine = mall + me * quarter;
    for (index_t leaf = 0; leaf < L; ++leaf)
      std::copy(prod + leaf * rows * total_w + off[me] * rows,
                prod + leaf * rows * total_w + (off[me] + w(me)) * rows, mine + leaf * rows * w(me));
    rq.wait_all();
  }
  // A BFS step whose subproblem is a one-rank leaf (P = 7^k ranks): exchange_in's transfers, but
  // the leaf product C = A B runs in blocks, C(:, chunk q) += A(:, chunk p) B(chunk p, chunk q)
  // for peer p's piece of A and peer q's piece of B, each as soon as both are here (this rank's
  // own pieces first), so the first products overlap the rest of the exchange. The same words
  // and messages as exchange_in (distinct tags for A's and B's pieces).
  template <class T, class WidthA, class WidthB>
  void arriving_leaf(Engine& e, const Stage& st, int depth, const Comm& peers, const T* sa, index_t qa,
                     const T* sb, index_t qb, T* A, T* B, T* C, WidthA wa, WidthB wb, int me) {
    const index_t lm = st.lm(), lk = st.lk();  // one leaf, one row part (m = 1)
    const std::array<index_t, 8> oa = chunk_offsets(wa), ob = chunk_offsets(wb);
    std::array<bool, 7> have_a{}, have_b{}, touched{};
    std::vector<MPI_Request> recvs;
    std::vector<int> from;  // p for A's piece from p, 7 + p for B's
    Requests sends;
    timed(level_phase(depth, kExchangeIn), [&] {
      for (int p = 0; p < 7; ++p) {
        have_a[p] = p == me || lm * wa(p) == 0;
        have_b[p] = p == me || lk * wb(p) == 0;
        MPI_Request r;
        if (!have_a[p]) {
          MPI_Irecv(A + oa[p] * lm, mpi_count(lm * wa(p)), mpi_type<T>(), p, 21, peers.get(), &r);
          recvs.push_back(r), from.push_back(p);
        }
        if (!have_b[p]) {
          MPI_Irecv(B + ob[p] * lk, mpi_count(lk * wb(p)), mpi_type<T>(), p, 24, peers.get(), &r);
          recvs.push_back(r), from.push_back(7 + p);
        }
      }
      for (int p = 0; p < 7; ++p) {
        if (p == me) continue;
        if (qa > 0) peers.isend(sa + p * qa, qa, p, 21, sends);
        if (qb > 0) peers.isend(sb + p * qb, qb, p, 24, sends);
      }
      std::copy(sa + me * qa, sa + me * qa + lm * wa(me), A + oa[me] * lm);
      std::copy(sb + me * qb, sb + me * qb + lk * wb(me), B + ob[me] * lk);
    });
    std::array<std::array<bool, 7>, 7> done{};
    auto multiply_ready = [&] {
      timed(tail_phase(1), [&] {
        for (int p = 0; p < 7; ++p)
          for (int q = 0; q < 7; ++q) {
            if (done[p][q] || !have_a[p] || !have_b[q]) continue;
            done[p][q] = true;
            if (wa(p) == 0 || wb(q) == 0 || lm == 0) continue;
            e.gemm(Op::N, Op::N, lm, wb(q), wa(p), T(1), A + oa[p] * lm, lm, B + ob[q] * lk + oa[p],
                   std::max<index_t>(lk, 1), touched[q] ? T(1) : T(0), C + ob[q] * lm, lm);
            touched[q] = true;
          }
      });
    };
    multiply_ready();
    for (std::size_t left = recvs.size(); left > 0; --left) {
      int idx = MPI_UNDEFINED;
      timed(level_phase(depth, kExchangeIn), [&] { MPI_Waitany(int(recvs.size()), recvs.data(), &idx, MPI_STATUS_IGNORE); });
      const int f = from[idx];
      (f < 7 ? have_a[f] : have_b[f - 7]) = true;
      multiply_ready();
    }
    for (int q = 0; q < 7; ++q)  // (k = 0: no product touched these columns)
      if (!touched[q]) std::fill(C + ob[q] * lm, C + ob[q + 1] * lm, T(0));
    timed(level_phase(depth, kExchangeIn), [&] { sends.wait_all(); });
  }

  // L runs of `run` contiguous elements from src into dst, `stride` apart, threaded.
  template <class T>
  static void copy_runs(const T* src, index_t run, T* dst, index_t stride, index_t L) {
#pragma omp parallel for schedule(static) if (run * L > (1 << 16))
    for (index_t leaf = 0; leaf < L; ++leaf) std::copy(src + leaf * run, src + (leaf + 1) * run, dst + leaf * stride);
  }

  // The leaf's k-panels: the union of A's column chunks (over the mc grid columns) and B's row
  // parts (over the mr grid rows), each with the grid column that holds its A part and the grid
  // row that holds its B part.
  struct LeafPanel {
    index_t k0, w;
    int a_root, b_root;
  };
  static std::vector<LeafPanel> leaf_panels(index_t lk, int mr, int mc) {
    std::vector<index_t> cuts;
    for (int c = 0; c <= mc; ++c) cuts.push_back(chunk_begin(lk, c, mc));
    for (int r = 0; r <= mr; ++r) cuts.push_back(chunk_begin(lk, r, mr));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<LeafPanel> v;
    int c = 0, r = 0;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const index_t k0 = cuts[i];
      while (chunk_begin(lk, c + 1, mc) <= k0) ++c;
      while (chunk_begin(lk, r + 1, mr) <= k0) ++r;
      v.push_back({k0, cuts[i + 1] - k0, c, r});
    }
    return v;
  }

  template <class T>
  void leaf(Engine& e, const Stage& st, const T* a, const T* b, T* c) {
    const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
    const index_t h = st.rows_of(lm), wn = st.cols_of(ln);
    if (st.P == 1) {
      timed(tail_phase(1), [&] {
        e.gemm(Op::N, Op::N, lm, wn, lk, T(1), a, std::max<index_t>(lm, 1), b,
               std::max<index_t>(lk, 1), T(0), c, std::max<index_t>(lm, 1));
      });
      return;
    }
    // m > 1 ranks share the leaf as an mr x mc grid: SUMMA over the k-panels, A's panel
    // broadcast along the grid row and B's along the grid column, the next panel's broadcasts
    // in flight during this panel's product (double-buffered; MPI progressed between column
    // pieces of the product: gemm_with_progress).
    const int mr = st.mr, mc = st.Qc(), qr = st.qr(), qc = st.qc();
    const index_t hb = st.rows_of(lk);  // B's rows here (a part of k)
    const std::vector<LeafPanel> panels = leaf_panels(lk, mr, mc);
    index_t wmax = 0;
    for (const LeafPanel& p : panels) wmax = std::max(wmax, p.w);
    std::array<AlignedPtr<T>, 2> abuf{buffer<T>(h * wmax), buffer<T>(h * wmax)};
    std::array<AlignedPtr<T>, 2> bbuf{buffer<T>(wmax * wn), buffer<T>(wmax * wn)};
    std::array<Requests, 2> rq;
    std::array<const T*, 2> ap{}, bp{};
    auto post = [&](std::size_t t) {
      const LeafPanel& p = panels[t];
      const int slot = int(t % 2);
      T* abuf_t = abuf[slot].get();
      T* bbuf_t = bbuf[slot].get();
      // The holder of A's part broadcasts from where it lies; B's holder packs its rows.
      T* asrc = qc == p.a_root ? const_cast<T*>(a) + (p.k0 - chunk_begin(lk, qc, mc)) * h : abuf_t;
      if (qr == p.b_root) {
        const index_t r0 = p.k0 - chunk_begin(lk, qr, mr);
        for (index_t j = 0; j < wn; ++j) std::copy(b + r0 + j * hb, b + r0 + p.w + j * hb, bbuf_t + j * p.w);
      }
      leaf_rows_.ibcast(asrc, h * p.w, p.a_root, rq[slot]);
      leaf_cols_.ibcast(bbuf_t, p.w * wn, p.b_root, rq[slot]);
      ap[slot] = asrc, bp[slot] = bbuf_t;
    };
    HeldOutput<T> held(e, c, h, wn, std::max<index_t>(h, 1));
    if (panels.empty()) std::fill(c, c + h * wn, T(0));
    timed(tail_phase(0), [&] { post(0); });
    for (std::size_t t = 0; t < panels.size(); ++t) {
      const int slot = int(t % 2);
      if (t + 1 < panels.size()) timed(tail_phase(0), [&] { post(t + 1); });
      timed(tail_phase(0), [&] { rq[slot].wait_all(); });
      timed(tail_phase(1), [&] {
        gemm_with_progress<T>(e, h, wn, panels[t].w, T(1), ap[slot], std::max<index_t>(h, 1), bp[slot],
                              std::max<index_t>(panels[t].w, 1), t == 0 ? T(0) : T(1), c,
                              std::max<index_t>(h, 1), &rq[(t + 1) % 2]);
      });
    }
  }

  // What this rank does in the subtree (times `mult` for DFS repetitions), mirroring run():
  // words sent, messages, the leaves' multiply flops, and elements streamed by the additions and
  // the exchanges' local copies.
  struct Counts {
    double words = 0, msgs = 0, flops = 0, local = 0;
    double unit = 0;        // dealt steps: one subproblem's flops, times the DFS repetitions
    bool balanced = false;  // dealt by the balancer (more than two steps of subproblems)
  };
  void counts(const Stage& st, int depth, double mult, Counts& n) const {
    const double qa = double(st.a_len()) / 4, qb = double(st.b_len()) / 4, qc = double(st.c_len()) / 4;
    if (st.steps == 0) {
      const index_t h = st.rows_of(st.lm()), wn = st.cols_of(st.ln()), lk = st.lk();
      n.flops += mult * 2.0 * double(h) * double(wn) * double(lk);
      if (st.P > 1)  // the leaf SUMMA: every panel's A part this rank lacks, and its B part
        for (const LeafPanel& p : leaf_panels(lk, st.mr, st.Qc())) {
          if (p.a_root != st.qc()) n.words += mult * double(h) * p.w, n.msgs += mult;
          if (p.b_root != st.qr()) n.words += mult * double(p.w) * wn, n.msgs += mult;
        }
      return;
    }
    if (steps_[depth] == CapsStep::dealt) {
      // Sent: this rank's chunks of the sums owned elsewhere; the column chunks of its own
      // products that belong to the other ranks. (Round-robin dealing: the balancer moves
      // subproblems between ranks at run time, and the measured words with them.) Local: per level, each prefix's sums read the
      // quadrants they use and write one; each child's product is read once and the quadrants it
      // feeds are read and written.
      const int L = st.steps, P = st.P, me = st.rank;
      const index_t lm = st.lm(), lk = st.lk(), ln = st.ln();
      const double blk_a = double(lm) * chunk_width(lk, me, P), blk_b = double(lk) * chunk_width(ln, me, P);
      // Split remainder (device): the last J mod P subproblems' sums of A allgathered, each rank
      // multiplying by its own column chunk of the sum of B.
      const index_t J = pow7(L), split = split_remainder_ ? J % P : 0, dealt = J - split;
      const index_t owned = me < dealt ? (dealt - 1 - me) / P + 1 : 0;
      n.words += mult * (double(dealt - owned) * (blk_a + blk_b) + double(owned) * double(lm) * double(ln - chunk_width(ln, me, P)) +
                         double(split) * (P - 1) * blk_a);
      int others_c = 0;
      for (int r = 0; r < P; ++r) others_c += r != me && lm * chunk_width(ln, r, P) > 0;
      n.msgs += mult * (double(dealt - owned) * ((blk_a > 0) + (blk_b > 0)) + double(owned) * others_c +
                        double(split) * (blk_a > 0 ? P - 1 : 0));
      n.flops += mult * (double(owned) * double(ln) + double(split) * double(chunk_width(ln, me, P))) * 2.0 * double(lm) * double(lk);
      n.unit = mult * 2.0 * double(lm) * double(ln) * double(lk);
      n.balanced = !split_remainder_ && balance_.on && P > 1 && J > 2 * index_t(P);
      double local = 0, parents = 1, la = double(st.a_len()), lb = double(st.b_len()), lc = double(st.c_len());
      // (a sum that is one quadrant alone is taken in place, or copied at the last level below
      // the first: dealt_sum)
      auto sum_cost = [&](const int (&coef)[7][4], int j, int l) {
        const Used u = used_quadrants(coef, j);
        if (u.n == 1 && coef[j][u.q[0]] == 1) return l < L || L == 1 ? 0.0 : 2.0;
        return u.n + 1.0;
      };
      for (int l = 1; l <= L; ++l) {
        la /= 4, lb /= 4, lc /= 4;
        for (int j = 0; j < 7; ++j)
          local += parents * (sum_cost(f_.a, j, l) * la + sum_cost(f_.b, j, l) * lb +
                              (1 + 2 * used_quadrants(f_.c, j).n) * lc);
        parents *= 7;
      }
      n.local += mult * local;
      return;
    }
    if (steps_[depth] == CapsStep::dfs) {
      // C zeroed; per product: its sums read the quadrants they use and write one; its product
      // is read once and every quadrant it feeds is read and written.
      double local = 4 * qc;
      for (int j = 0; j < 7; ++j)
        local += (used_quadrants(f_.a, j).n + 1) * qa + (used_quadrants(f_.b, j).n + 1) * qb +
                 (1 + 2 * used_quadrants(f_.c, j).n) * qc;
      n.local += mult * local;
      counts(st.child_dfs(), depth + 1, 7 * mult, n);
      return;
    }
    const Stage ch = st.child_bfs();
    n.words += mult * 6 * (qa + qb), n.msgs += mult * 6 * ((qa > 0) + (qb > 0));  // (empty chunks are not sent)
    // Reverse: this rank's group product, split into 7 column pieces; six leave (the non-empty).
    const int r = st.qc() / 7, g = st.qc() % 7;
    double mine = double(ch.leaves()) * st.rows_of(st.lm()) * chunk_width(st.ln(), 7 * r + g, st.Qc());
    int pieces_out = 0;
    for (int p = 0; p < 7; ++p) pieces_out += p != g && st.rows_of(st.lm()) * chunk_width(st.ln(), 7 * r + p, st.Qc()) > 0;
    n.words += mult * (double(ch.c_len()) - mine), n.msgs += mult * pieces_out;
    // Sums 4 in, 7 out (A and B); the own pieces copied in and out; combining 7 in, 4 out.
    n.local += mult * (11 * (qa + qb) + 2 * (qa + qb) + 2 * qc + 11 * qc);
    counts(ch, depth + 1, mult, n);
  }

  GemmShape s_;
  int m_, k7_;
  bool split_remainder_ = false;
  int dealt_levels_ = 0;
  CapsSteps steps_;
  BilinearFormula f_;
  Comm world_;
  BalanceSettings balance_{world_};  // (after world_, over which it is agreed)
  Stage top_{};
  Piece pa_, pb_, pc_;
  std::vector<Comm> peers_, groups_;
  Comm leaf_rows_, leaf_cols_;  // the leaf grid's rows and columns
  // Device communicators over the Comms above (destroyed before them).
  std::vector<std::unique_ptr<DeviceComm>> dev_peers_;
  std::unique_ptr<DeviceComm> dev_leaf_rows_, dev_leaf_cols_, dev_dealt_;
  bool dev_ready_ = false;
};

}  // namespace

double caps_peak_words(GemmShape s, int P, const CapsSteps& steps, const Engine& e, Dtype dt) {
  const int S = static_cast<int>(steps.size());
  auto pad = [&](index_t x) { return double(((x + (index_t(1) << S) - 1) >> S) << S); };
  double m = pad(s.m), n = pad(s.n), k = pad(s.k);
  // Inputs and output in the user's layout and in the padded buffers, then per step the largest
  // live set (a ceiling: chunk widths rounded up).
  double live = 2 * (m * k + k * n + m * n) / P, peak = live, Pc = P;
  for (CapsStep c : steps) {
    if (c == CapsStep::dealt) break;
    double qa = m * k / 4 / Pc, qb = k * n / 4 / Pc, qc = m * n / 4 / Pc;
    if (c == CapsStep::dfs) {
      live += qa + qb + qc;
    } else {
      // seven sums of each, their exchange buffers, the subproblem, and seven products back
      live += 7 * (qa + qb) + 7 * (qa + qb) + 7 * qc + 7 * qc;
      Pc /= 7;
    }
    m /= 2, n /= 2, k /= 2;
    peak = std::max(peak, live);
  }
  if (const int dealt = static_cast<int>(std::count(steps.begin(), steps.end(), CapsStep::dealt)); dealt > 0) {
    // The dealt steps: the sums' and partial products' stacks (a third of the stage's blocks),
    // two rounds of sent chunks, subproblem operands, products and returned chunks, and the
    // engine's workspace for one subproblem.
    const double f = double(index_t(1) << dealt), lm = m / f, ln = n / f, lk = k / f;
    live += (m * k + k * n + m * n) / Pc / 3 + 4 * (lm * lk + lk * ln) + 4 * lm * ln;
    const double ws = double(e.workspace_bytes(index_t(lm), index_t(ln), index_t(lk), dt)) / size_of(dt);
    return std::max(peak, live + ws);
  }
  double leaf_extra = Pc > 1 ? m * k : 0;  // gathered A at a shared leaf
  double ws = double(e.workspace_bytes(index_t(m), index_t(std::ceil(n / Pc)), index_t(k), dt)) /
              size_of(dt);
  return std::max(peak, live + leaf_extra + ws);
}

std::optional<std::pair<int, int>> caps_factors(int P) {
  int m = P, k = 0;
  while (m > 0 && m % 7 == 0) m /= 7, ++k;
  if (m < 1 || m > 6) return std::nullopt;
  return std::make_pair(m, k);
}

std::unique_ptr<DistAlgorithm> make_caps(const Comm& world, GemmShape s, const AlgoOptions& o) {
  const Engine* engine = o.engine;
  const Dtype dt = o.dtype;
  const int P = world.size();
  const auto factors = caps_factors(P);
  int v7 = 0;  // BFS steps this rank count allows above dealt steps (7^v7 divides P)
  for (int q = P; q % 7 == 0; q /= 7) ++v7;
  const index_t smallest = std::min({s.m, s.n, s.k});
  auto bfs_count = [](const CapsSteps& st) { return int(std::count(st.begin(), st.end(), CapsStep::bfs)); };
  auto make = [&](const CapsSteps& seq, const BilinearFormula& f) {
    const int b = bfs_count(seq);
    int left = P;
    for (int i = 0; i < b; ++i) left /= 7;
    return std::make_unique<Caps>(world, s, left, b, seq, f, o.device_resident);
  };
  auto no_fit = [&] {
    int lo = 1, hi = 1;
    for (int p = 1; p <= 6 * 7 * 7 * 7 * 7; ++p) {
      if (!caps_factors(p)) continue;
      if (p < P) lo = p;
      if (p > P) { hi = p; break; }
    }
    return UsageError("caps needs P = m * 7^k ranks with m in 1..6 for BFS and DFS steps alone, got " +
                      std::to_string(P) + ": use " + std::to_string(lo) + " or " + std::to_string(hi) +
                      " ranks, dealt steps (--caps-steps XXX), or --algo summa");
  };
  std::vector<CapsSteps> sequences;
  if (o.caps_steps) {
    const CapsSteps& steps = *o.caps_steps;
    const int b = bfs_count(steps);
    const std::string text = to_string(steps);
    const std::size_t first_x = text.find('X');
    const bool dealt = first_x != std::string::npos;
    if (dealt && text.find_first_not_of('X', first_x) != std::string::npos)
      throw UsageError("--caps-steps '" + text + "': dealt steps (X) must come last, e.g. BXX");
    if (dealt && std::count(steps.begin(), steps.end(), CapsStep::dealt) > 6)
      throw UsageError("--caps-steps '" + text + "': at most 6 dealt steps (7^6 = 117649 subproblems)");
    if (dealt && b > v7)
      throw UsageError("--caps-steps '" + text + "' has " + std::to_string(b) + " BFS steps but 7^" +
                       std::to_string(b) + " does not divide " + std::to_string(P) + " ranks: use at most " +
                       std::to_string(v7));
    if (!dealt && !factors) throw no_fit();
    if (!dealt && b != factors->second)
      throw UsageError("--caps-steps '" + text + "' has " + std::to_string(b) + " BFS steps but " +
                       std::to_string(P) + " ranks = " + std::to_string(factors->first) + " * 7^" +
                       std::to_string(factors->second) + " need exactly " + std::to_string(factors->second) +
                       " (or end with dealt steps, X)");
    if (steps.size() > 20) throw UsageError("--caps-steps: at most 20 steps");
    sequences.push_back(steps);
  } else {
    // As in CAPS: all k BFS steps if memory allows, else DFS steps first (each cuts the
    // subproblem 4x before the memory-hungry BFS steps) until the estimate fits; then up to two
    // more DFS steps as candidates (each saves 1/8 of the multiplications and costs additions
    // and leaf messages), of which the cost model picks. The extra steps go either on top or
    // below the BFS steps: below, where a rank holds its subproblem alone, a DFS step is local
    // work with no message at all (on the 32-core host, P = 7 x 4 threads, f64 16384: BD 7.9 s,
    // B 9.0 s; docs/performance.md). Then, on any rank count, dealt steps below none or all of
    // the BFS steps that 7^k | P allows (1 to 4 of them, leaves of at least 64), host runs only.
    const double limit = plan_memory_limit(world, s, o);  // the GPU's share when device-resident
    const int k7 = factors ? factors->second : 0;
    auto with_dfs = [&](int top, int below) {
      CapsSteps st(top, CapsStep::dfs);
      st.insert(st.end(), k7, CapsStep::bfs);
      st.insert(st.end(), below, CapsStep::dfs);
      return st;
    };
    std::vector<CapsSteps> dealt;
    if (!o.device_resident)
      for (int b : {0, v7}) {
        for (int L = 1; L <= 4; ++L) {
          if ((smallest >> (b + L)) < 64) break;
          CapsSteps st(b, CapsStep::bfs);
          st.insert(st.end(), L, CapsStep::dealt);
          if (std::find(dealt.begin(), dealt.end(), st) == dealt.end()) dealt.push_back(st);
        }
      }
    // Every rank must keep the same candidates (each one builds communicators), and an engine's
    // workspace estimate may rest on this process's own timing (a CPU engine's automatic
    // levels): the estimates of every sequence weighed, their largest over the ranks decide.
    constexpr int kTop = 8, kBelow = 3;
    std::vector<double> need(kTop * kBelow + dealt.size(), 0.0);
    if (engine) {
      if (factors)
        for (int t = 0; t < kTop; ++t)
          for (int b = 0; b < kBelow; ++b)
            need[std::size_t(t * kBelow + b)] = caps_peak_words(s, P, with_dfs(t, b), *engine, dt) * double(size_of(dt));
      for (std::size_t i = 0; i < dealt.size(); ++i)
        need[kTop * kBelow + i] = caps_peak_words(s, P, dealt[i], *engine, dt) * double(size_of(dt));
    }
    MPI_Allreduce(MPI_IN_PLACE, need.data(), int(need.size()), MPI_DOUBLE, MPI_MAX, world.get());
    auto fits = [&](int top, int below) { return need[std::size_t(top * kBelow + below)] <= limit; };
    if (factors) {
      int d = 0;
      for (; d < kTop - 1; ++d)
        if (fits(d, 0)) break;
      for (int extra = 0; extra < kBelow; ++extra) {
        if (extra > 0 && (smallest >> (d + extra + k7)) < 64) continue;  // leaves of at least 64
        sequences.push_back(with_dfs(d + extra, 0));
        if (extra > 0 && k7 > 0 && fits(d, extra)) sequences.push_back(with_dfs(d, extra));
      }
    }
    for (std::size_t i = 0; i < dealt.size(); ++i)
      if (need[kTop * kBelow + i] <= limit) sequences.push_back(dealt[i]);
    if (sequences.empty()) {  // nothing fits: the leanest, whose memory error names the fix
      if (factors) sequences.push_back(with_dfs(kTop - 1, 0));
      else if (!dealt.empty()) sequences.push_back(dealt.front());
      else throw no_fit();
    }
  }
  std::vector<const BilinearFormula*> formulas;
  if (o.formula) formulas.push_back(o.formula);
  else formulas = {&kStrassenFormula, &kWinogradFormula};
  if (sequences.size() == 1 && formulas.size() == 1) return make(sequences[0], *formulas[0]);

  // The candidates' predicted times (cost_model.hpp) from their exact counts.
  const MachineModel mm = machine_model(world);
  const double elem = double(size_of(dt));
  std::vector<std::unique_ptr<Caps>> cands;
  std::vector<double> t, words;
  for (const CapsSteps& seq : sequences)
    for (const BilinearFormula* f : formulas) {
      cands.push_back(make(seq, *f));
      const CommEstimate e = cands.back()->analytic();
      t.push_back(predicted_seconds(mm, e, elem));
      words.push_back(e.words_max);
    }
  const std::size_t best = words_first_choice(t, words);
  std::string why = "caps steps and formula by the cost model (of those that fit in memory):";
  char buf[128];
  for (std::size_t c = 0; c < cands.size(); ++c) {
    std::snprintf(buf, sizeof buf, " %s%s %.3g s%s", c == best ? "*" : "", cands[c]->layout_key().c_str(), t[c],
                  c + 1 < cands.size() ? "," : "");
    why += buf;
  }
  cands[best]->set_selection(why);
  return std::move(cands[best]);
}

}  // namespace distmm
