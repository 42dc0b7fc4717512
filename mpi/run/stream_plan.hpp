// A host-resident product streamed through the GPUs in panels (run.cpp): m is cut into `rows`
// panels and n into `cols`, and each of the rows x cols stages, C(r, c) = A(r, :) B(:, c), is a
// product of its own, multiplied by the same algorithm on the same ranks. While stage s
// multiplies, the next stage's operands come in and the last stage's C goes out, so only the
// first stage's operands (A(0, :), B(:, 0)) wait on the host link before the first product, and
// only the last stage's C after the last (as cuBLASXt hides its tiles' transfers behind its
// products). Splitting n too halves what waits, at the price of thinner products.
//
// The host blocks are laid out for this: each rank's block of A holds every row panel's rows in
// the panel's own layout, panel after panel; B's block every column panel's columns; C's block
// both. A stage's operand is then one strided block of them. The stages' layouts must agree
// where they share (a row panel's A along its stages, a column panel's B, C's rows and columns),
// or the plan falls back to one stage.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "../algorithms/algorithm.hpp"
#include "../runtime/comm.hpp"
#include "../runtime/partition.hpp"

namespace distmm {

struct StreamPlan {
  int rows = 1, cols = 1;                             // panels of m and of n
  Partition1D panels_m, panels_n;                     // their global rows and columns
  std::vector<std::unique_ptr<DistAlgorithm>> algos;  // one per distinct stage shape
  std::vector<int> algo_of;                           // stage s = r * cols + c -> algos
  Piece a, b, c;                                      // this rank's host blocks
  std::vector<index_t> a_row0, c_row0;                // row panel r -> its first local row in a, c
  std::vector<index_t> b_col0, c_col0;                // column panel c -> its first local column in b, c
  std::string why_one;                                // why asked-for stages fell back to one

  int stages() const { return rows * cols; }
  DistAlgorithm& algo(int s) const { return *algos[std::size_t(algo_of[std::size_t(s)])]; }
};

// Panels below this many rows (columns) would cost the engine a Strassen level or a tile's
// efficiency for little overlap: the automatic plan cuts m (n) in two from 2 x this.
inline constexpr index_t kStreamPanelMin = 4096;
struct StageGrid {
  int rows = 0, cols = 0;  // 0: automatic
};
StageGrid auto_stages(index_t m, index_t n);

// Collective over world. `algo` is the algorithm the run chose (not automatic); 1 <= rows <= m,
// 1 <= cols <= n. With one stage (asked for, or the stages' layouts disagree: why_one says how)
// the plan holds no algorithms and the caller runs unstreamed.
StreamPlan make_stream_plan(Algorithm algo, const Comm& world, GemmShape shape, const AlgoOptions& opts,
                            StageGrid grid);

}  // namespace distmm
