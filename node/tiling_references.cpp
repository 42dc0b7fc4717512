// The two reference tilings of seed 004, with BLAS on q x q blocks:
//  - outer-product: ScaLAPACK's scheme on one node: for each block column k of A and row of B,
//    every core updates its share of the whole of C (cores as a pr x pc grid). No cache reuse
//    of C across k: the baseline the MMRAs improve on.
//  - equal-layout: Toledo's out-of-core scheme, a third of the shared cache to each matrix:
//    s x s blocks with 3 s^2 <= C_S; the cores split the columns of each C block.
#include <cmath>

#include "mmra.hpp"
#include "tiling_engine.hpp"

namespace distmm {
namespace {

struct OuterProduct {
  static constexpr const char* kName = "outer-product";
  static std::string parameters(const EngineOptions&, std::size_t) { return "grid of cores"; }
  template <class T>
  static void multiply(const EngineOptions& o, Operand<T> A, Operand<T> B, Target<T> C, T alpha, int p) {
    const index_t q = o.block, zb = blocks_of(A.cols, q);
    const auto [pr, pc] = core_grid(p);
#pragma omp parallel num_threads(pr * pc)
    {
      const int c = omp_get_thread_num();
      const int ci = c % pr, cj = c / pr;
      const BlockRange rows = share({0, C.rows}, pr, ci);
      const BlockRange cols = share({0, C.cols}, pc, cj);
      for (index_t kk = 0; kk < zb; ++kk)
        block_gemm(A, B, C, rows, cols, block_range(kk, kk + 1, q, A.cols), alpha);
    }
  }
};

struct EqualLayout {
  static constexpr const char* kName = "equal-layout";
  static index_t side(const EngineOptions& o, std::size_t elem) {
    return std::max<index_t>(1, static_cast<index_t>(std::floor(std::sqrt(tiling_caches(o, elem, false).shared_blocks / 3))));
  }
  static std::string parameters(const EngineOptions& o, std::size_t elem) {
    return "s " + std::to_string(side(o, elem));
  }
  template <class T>
  static void multiply(const EngineOptions& o, Operand<T> A, Operand<T> B, Target<T> C, T alpha, int p) {
    const index_t q = o.block, mb = blocks_of(C.rows, q), nb = blocks_of(C.cols, q),
                  zb = blocks_of(A.cols, q), s = side(o, sizeof(T));
    for (index_t bi = 0; bi < mb; bi += s)
      for (index_t bj = 0; bj < nb; bj += s) {
        const BlockRange rows = block_range(bi, std::min(bi + s, mb), q, C.rows);
        const BlockRange group = block_range(bj, std::min(bj + s, nb), q, C.cols);
#pragma omp parallel num_threads(p)
        {
          const BlockRange cols = share(group, omp_get_num_threads(), omp_get_thread_num());
          for (index_t kk = 0; kk < zb; kk += s)
            block_gemm(A, B, C, rows, cols, block_range(kk, std::min(kk + s, zb), q, A.cols), alpha);
        }
      }
  }
};

}  // namespace

std::vector<EngineInfo> reference_tiling_engine_infos() {
  return {tiling_engine_info<OuterProduct>("seed 004's outer-product reference tiling"),
          tiling_engine_info<EqualLayout>("seed 004's equal-layout reference tiling")};
}

}  // namespace distmm
