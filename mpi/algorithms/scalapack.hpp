// ScaLAPACK's P?GEMM on local arrays a caller already holds block-cyclically, over a BLACS
// grid of a communicator: what `--algo scalapack` multiplies with (scalapack.cpp), and the
// baseline that `distmm layout-bench` times on the same arrays as MultiplyPlan.
#pragma once
#include <array>

#include "../runtime/comm.hpp"

namespace distmm {

// A BLACS process grid nprow x npcol over comm, in BLACS's "Row" order: rank = prow * npcol +
// pcol (Layout's GridOrder::row_major). Released on destruction (unless MPI is finalized).
class BlacsGrid {
 public:
  BlacsGrid(const Comm& comm, int nprow, int npcol);
  ~BlacsGrid();
  BlacsGrid(const BlacsGrid&) = delete;
  BlacsGrid& operator=(const BlacsGrid&) = delete;
  int ctxt() const { return ctxt_; }
  int row() const { return row_; }
  int col() const { return col_; }

 private:
  int handle_ = 0, ctxt_ = 0, row_ = 0, col_ = 0;
};

// ScaLAPACK's array descriptor (DTYPE 1) of a rows x cols matrix in mb x nb blocks from process
// (0, 0) of `grid`, stored with local leading dimension lld (raised to 1 where the rank holds no
// rows). Sizes of 2^31 and more: a UsageError (ScaLAPACK takes int).
using ScalapackDesc = std::array<int, 9>;
ScalapackDesc scalapack_desc(const BlacsGrid& grid, index_t rows, index_t cols, index_t mb, index_t nb, index_t lld);

// C = alpha A B + beta C by P?GEMM of T on the whole matrices (collective over the grid). A, B
// and C are this rank's local arrays; null where the rank holds none of that matrix.
template <class T>
void scalapack_gemm(T alpha, const T* A, const ScalapackDesc& desc_a, const T* B, const ScalapackDesc& desc_b,
                    T beta, T* C, const ScalapackDesc& desc_c);

}  // namespace distmm
