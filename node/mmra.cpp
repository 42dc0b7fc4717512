// The multicore Maximum Reuse Algorithms of seed 004 (Jacquelin, Marchal & Robert), with BLAS on
// q x q blocks and capacities counted in blocks (C_S shared, C_D per core):
//  - mmra-shared (SharedMMRA, Alg. 1): a lambda x lambda block of C stays in the shared cache,
//    1 + lambda + lambda^2 <= C_S; each core updates lambda/p of its columns for every k.
//    Shared-cache CCR 1/z + 2/lambda.
//  - mmra-distributed (DistributedMMRA, Alg. 2): each core keeps a mu x mu block of C in its own
//    cache, 1 + mu + mu^2 <= C_D, blocks 2-D cyclic over the cores. Distributed CCR 1/z + 2/mu.
//  - mmra-tradeoff (TradeoffMMRA, Alg. 3): an alpha x alpha block of C in the shared cache and
//    panels of beta columns of A / rows of B, 2 alpha beta + alpha^2 <= C_S, split into mu x mu
//    sub-blocks dealt cyclically to the cores (a mu-wide strip of them per core and step); alpha
//    minimises
//    F(alpha) = 2 / (sigma_S alpha) + 2 alpha / (p sigma_D (C_S - alpha^2)) (Sec. 3.3):
//    alpha = min(alpha_max, max(sqrt(p) mu, alpha_num)), beta = max(floor((C_S - alpha^2) / (2 alpha)), 1).
//  The "-lru" variants use half of each cache, the other half left to the LRU policy.
#include "mmra.hpp"

#include <cmath>

#include "tiling_engine.hpp"

namespace distmm {
namespace {

// sigma_D / sigma_S: a core's own cache delivers about twice the bandwidth of the shared one on
// the machines we target (documented in README "Engines"); it only steers alpha.
constexpr double kCacheBandwidthRatio = 2.0;

struct TradeoffParams {
  int alpha, beta, mu;
};

TradeoffParams tradeoff_params(const TilingCaches& c, int p) {
  const double CS = c.shared_blocks;
  const int mu = max_reuse_side(c.distributed_blocks);
  const double x = p * kCacheBandwidthRatio;  // p sigma_D / sigma_S
  const double amax = std::sqrt(CS + 1) - 1;
  double anum = amax;
  if (std::abs(x - 1) > 1e-9) {
    double q = (1 + 2 * x - std::sqrt(1 + 8 * x)) / (2 * (x - 1));
    if (q > 0) anum = std::sqrt(CS * q);
  }
  double a = std::min(amax, std::max(std::sqrt(double(p)) * mu, anum));
  int alpha = std::max(1, static_cast<int>(std::floor(a)));
  int beta = std::max(static_cast<int>(std::floor((CS - double(alpha) * alpha) / (2.0 * alpha))), 1);
  return {alpha, beta, mu};
}

template <bool Lru>
struct SharedMmra {
  static constexpr const char* kName = Lru ? "mmra-shared-lru" : "mmra-shared";
  static std::string parameters(const EngineOptions& o, std::size_t elem) {
    return "lambda " + std::to_string(max_reuse_side(tiling_caches(o, elem, Lru).shared_blocks));
  }
  template <class T>
  static void multiply(const EngineOptions& o, Operand<T> A, Operand<T> B, Target<T> C, T alpha, int p) {
    const index_t q = o.block, mb = blocks_of(C.rows, q), nb = blocks_of(C.cols, q),
                  zb = blocks_of(A.cols, q);
    const index_t lambda = max_reuse_side(tiling_caches(o, sizeof(T), Lru).shared_blocks);
    for (index_t bi = 0; bi < mb; bi += lambda)
      for (index_t bj = 0; bj < nb; bj += lambda) {
        const BlockRange rows = block_range(bi, std::min(bi + lambda, mb), q, C.rows);
        const BlockRange group = block_range(bj, std::min(bj + lambda, nb), q, C.cols);
#pragma omp parallel num_threads(p)
        {
          // Core c owns its 1/p of the columns of the C block for the whole k loop.
          const BlockRange cols = share(group, omp_get_num_threads(), omp_get_thread_num());
          for (index_t kk = 0; kk < zb; ++kk)
            block_gemm(A, B, C, rows, cols, block_range(kk, kk + 1, q, A.cols), alpha);
        }
      }
  }
};

template <bool Lru>
struct DistributedMmra {
  static constexpr const char* kName = Lru ? "mmra-distributed-lru" : "mmra-distributed";
  static std::string parameters(const EngineOptions& o, std::size_t elem) {
    return "mu " + std::to_string(max_reuse_side(tiling_caches(o, elem, Lru).distributed_blocks));
  }
  template <class T>
  static void multiply(const EngineOptions& o, Operand<T> A, Operand<T> B, Target<T> C, T alpha, int p) {
    const index_t q = o.block, mb = blocks_of(C.rows, q), nb = blocks_of(C.cols, q),
                  zb = blocks_of(A.cols, q);
    const index_t mu = max_reuse_side(tiling_caches(o, sizeof(T), Lru).distributed_blocks);
    const auto [pr, pc] = core_grid(p);
    // A (pr mu) x (pc mu) block of C in the shared cache; core (ci, cj) keeps its mu x mu block.
    for (index_t bi = 0; bi < mb; bi += pr * mu)
      for (index_t bj = 0; bj < nb; bj += pc * mu) {
        const BlockRange group_rows = block_range(bi, std::min(bi + pr * mu, mb), q, C.rows);
        const BlockRange group_cols = block_range(bj, std::min(bj + pc * mu, nb), q, C.cols);
#pragma omp parallel num_threads(pr * pc)
        {
          const int c = omp_get_thread_num();
          const BlockRange rows = share(group_rows, pr, c % pr);
          const BlockRange cols = share(group_cols, pc, c / pr);
          for (index_t kk = 0; kk < zb; ++kk)
            block_gemm(A, B, C, rows, cols, block_range(kk, kk + 1, q, A.cols), alpha);
        }
      }
  }
};

template <bool Lru>
struct TradeoffMmra {
  static constexpr const char* kName = Lru ? "mmra-tradeoff-lru" : "mmra-tradeoff";
  static std::string parameters(const EngineOptions& o, std::size_t elem) {
    auto t = tradeoff_params(tiling_caches(o, elem, Lru), std::max(1, o.threads));
    return "alpha " + std::to_string(t.alpha) + ", beta " + std::to_string(t.beta) + ", mu " +
           std::to_string(t.mu);
  }
  template <class T>
  static void multiply(const EngineOptions& o, Operand<T> A, Operand<T> B, Target<T> C, T alpha, int p) {
    const index_t q = o.block, mb = blocks_of(C.rows, q), nb = blocks_of(C.cols, q),
                  zb = blocks_of(A.cols, q);
    const TradeoffParams t = tradeoff_params(tiling_caches(o, sizeof(T), Lru), p);
    for (index_t bi = 0; bi < mb; bi += t.alpha)
      for (index_t bj = 0; bj < nb; bj += t.alpha) {
        const BlockRange rows = block_range(bi, std::min<index_t>(bi + t.alpha, mb), q, C.rows);
        const BlockRange cols = block_range(bj, std::min<index_t>(bj + t.alpha, nb), q, C.cols);
        // The alpha x alpha block cut into mu-wide strips of sub-blocks, dealt cyclically to the
        // cores, their number rounded up to a multiple of p so that every core gets as many. A
        // core updates the mu x mu sub-blocks of one strip with one BLAS call: the same block
        // products in the same step, but B's sub-panel is packed once per strip, not once per
        // sub-block (OpenBLAS packs both operands on every call).
        const index_t strips = std::min(cols.size(), blocks_of(blocks_of(cols.size(), t.mu * q), p) * p);
        for (index_t kk = 0; kk < zb; kk += t.beta) {
          const BlockRange ks = block_range(kk, std::min<index_t>(kk + t.beta, zb), q, A.cols);
#pragma omp parallel for schedule(static, 1) num_threads(p)
          for (index_t s = 0; s < strips; ++s) block_gemm(A, B, C, rows, share(cols, strips, s), ks, alpha);
        }
      }
  }
};

}  // namespace

std::vector<EngineInfo> mmra_engine_infos() {
  const std::string lru = " (half of each cache kept as the LRU buffer)";
  return {tiling_engine_info<SharedMmra<false>>("seed 004's Shared Maximum Reuse tiling, BLAS on q x q blocks"),
          tiling_engine_info<SharedMmra<true>>("mmra-shared" + lru),
          tiling_engine_info<DistributedMmra<false>>("seed 004's Distributed Maximum Reuse tiling, BLAS on q x q blocks"),
          tiling_engine_info<DistributedMmra<true>>("mmra-distributed" + lru),
          tiling_engine_info<TradeoffMmra<false>>("seed 004's Tradeoff tiling (shared and per-core caches), BLAS on q x q blocks"),
          tiling_engine_info<TradeoffMmra<true>>("mmra-tradeoff" + lru)};
}

}  // namespace distmm
