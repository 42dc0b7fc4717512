// C = alpha A B + beta C on ScaLAPACK's block-cyclic layout itself, nothing redistributed: which
// of the two schedules on that layout (the k-split, block_cyclic_ksplit.hpp, or SUMMA with wide
// panels, block_cyclic_summa in block_cyclic.hpp), if any, a call takes, and its execution. One
// decision for both callers: the drop-in (mpi/scalapack/pxgemm.cpp, its settings
// DISTMM_SCALAPACK_DIRECT and DISTMM_PANEL passed in) and MultiplyPlan (mpi/api/multiply.cpp,
// where A, B and C are block-cyclic layouts on one grid).
//
// The conditions: op(A) = A and op(B) = B, no replicated dimension, sub(C)'s rows on the same
// process rows as sub(A)'s and its columns on the same process columns as sub(B)'s (what one
// blocking for all three gives); then the k-split where it moves at most kKSplitWords of SUMMA's
// words and its buffers fit the memory share (mode automatic), or always (mode ksplit); else
// SUMMA where its panels are wide enough (at least min(k, 32) on average; always under mode
// summa), the panel width k / max(P_r, P_c) clamped to 256..4096 (or the one given), two panels
// in flight within the memory share.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "algorithm.hpp"
#include "block_cyclic.hpp"
#include "block_cyclic_ksplit.hpp"

namespace distmm {

struct BlockCyclicDirectOptions {
  // off: never (redistribute); automatic: the k-split where it moves far fewer words than SUMMA,
  // else SUMMA where its panels are wide enough; summa: SUMMA whenever the operands line up,
  // however narrow its panels; ksplit: the k-split whenever they line up.
  enum class Mode { off, automatic, summa, ksplit };
  Mode mode = Mode::automatic;
  index_t panel = 0;          // SUMMA's panel width (0: from the shape)
  std::size_t mem_limit = 0;  // bytes per rank for the schedule's buffers (the same on every rank)
};

// The BLACS-like grid: its communicator (ranks in row-major grid order, rank = row * npcol +
// column), this rank's process row (ranks by grid column) and column (by grid row), and where
// this rank is. The communicators must outlive the plans made on them.
struct BlockCyclicGrid {
  const Comm* comm = nullptr;
  const Comm* row = nullptr;
  const Comm* col = nullptr;
  block_cyclic::Grid g{1, 1, 0, 0};
};

struct BlockCyclicDirect {
  enum class Kind { none, ksplit, summa };
  Kind kind = Kind::none;
  BlockCyclicGrid grid;
  index_t m = 0, n = 0, k = 0;
  std::vector<index_t> rows, cols;  // rows[r]: the rows process row r holds; cols[c] the columns
  block_cyclic::Span a, b, r, c;    // this rank's local rows of A, columns of B, rows and columns of C
  KSplitLayout split;               // the k-split's parts
  std::vector<block_cyclic::BcPanel> panels;  // SUMMA's panels

  explicit operator bool() const { return kind != Kind::none; }
  // "block-cyclic k-split", "block-cyclic summa" ("none")
  std::string name() const;
  // "k in 16 parts", "12 panels"
  std::string detail() const;
  // Every rank's words received, messages and flops (all ranks know the layout).
  CommEstimate analytic() const;
  // Bytes this rank allocates for the schedule's buffers (A, B and C not counted).
  double buffer_bytes(std::size_t elem) const;

  // Collective on grid.comm: C = alpha A B + beta C (beta = 0: C not read), A, B and C this
  // rank's local arrays (the block-cyclic layout's, from their first element) with their leading
  // dimensions. times: the k-split's phases, or SUMMA's waiting for panels (in wait).
  template <class T>
  void execute(Engine& e, T alpha, const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C,
               index_t ldc, KSplitTimes& times, const KSplitBalance& balance = {}) const {
    T* const c0 = C + r.first + c.first * ldc;
    if (kind == Kind::ksplit)
      block_cyclic_ksplit<T>(e, alpha, A + a.first, lda, B + b.first * ldb, ldb, beta, c0, ldc, split, *grid.comm,
                             times, balance);
    else if (kind == Kind::summa)
      block_cyclic::block_cyclic_summa<T>(e, alpha, A, lda, a, B, ldb, b, beta, c0, ldc, panels, *grid.row,
                                          *grid.col, grid.g, times.wait);
  }
};

// The plan of C = alpha op(A) op(B) + beta C (m x n x k, k > 0) on the block-cyclic layout, or
// Kind::none where it does not apply. ar, ac: op(A)'s rows and columns as A's distribution holds
// them; br, bc: op(B)'s; cr, cc: C's. Collective on grid.comm where the k-split is weighed (every
// rank decides alike: the counts come from the layouts, the memory limit is the same).
BlockCyclicDirect plan_block_cyclic_direct(const BlockCyclicGrid& grid, Op op_a, Op op_b,
                                           const block_cyclic::LogicalDim& ar, const block_cyclic::LogicalDim& ac,
                                           const block_cyclic::LogicalDim& br, const block_cyclic::LogicalDim& bc,
                                           const block_cyclic::LogicalDim& cr, const block_cyclic::LogicalDim& cc,
                                           index_t m, index_t n, index_t k, std::size_t elem,
                                           const BlockCyclicDirectOptions& options);

}  // namespace distmm
