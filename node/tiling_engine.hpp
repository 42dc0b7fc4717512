// An engine around a cache-aware tiling: C is scaled by beta once, then the tiling's threads
// each call single-threaded BLAS on q x q blocks (seed 004's setting: OpenMP over cores, BLAS
// on blocks).
#pragma once
#include <omp.h>

#include "blas.hpp"
#include "tiling.hpp"

namespace distmm {

template <class Tiling>
class TilingEngine final : public EngineBase<TilingEngine<Tiling>> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  explicit TilingEngine(const EngineOptions& o) : o_(o) {}
  std::string name() const override { return Tiling::kName; }
  std::string describe() const override {
    return std::string(Tiling::kName) + " (q " + std::to_string(o_.block) + ", " +
           Tiling::parameters(o_, 8) + ", " + std::to_string(o_.threads) + " threads)";
  }

  template <class T>
  void run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
           const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (beta != T(1)) scale_block(m, n, C, ldc, beta);
    if (k <= 0 || alpha == T(0)) return;
    const int saved = blas_get_threads();
    blas_set_threads(1);
    Tiling::template multiply<T>(o_, {A, lda, ta, m, k}, {B, ldb, tb, k, n}, {C, ldc, m, n}, alpha,
                                 std::max(1, o_.threads));
    blas_set_threads(saved);
  }

 private:
  EngineOptions o_;
};

// The registry entry of a tiling engine.
template <class Tiling>
EngineInfo tiling_engine_info(std::string summary) {
  EngineInfo e = engine_entry<TilingEngine<Tiling>>(Tiling::kName, std::move(summary));
  e.tiled = true;
  return e;
}

}  // namespace distmm
