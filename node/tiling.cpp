#include "tiling.hpp"

#include <cmath>

#include "../src/core/system.hpp"
#include "blas.hpp"

namespace distmm {

TilingCaches tiling_caches(const EngineOptions& o, std::size_t elem, bool lru) {
  double block = double(o.block) * double(o.block) * double(elem);
  double shared = o.cache_bytes ? double(o.cache_bytes) : double(shared_cache_bytes());
  double core = double(core_cache_bytes());
  double f = lru ? 0.5 : 1.0;
  return {f * shared / block, f * core / block};
}

int max_reuse_side(double capacity) {
  int x = 1;
  while (1 + (x + 1) + double(x + 1) * (x + 1) <= capacity) ++x;
  return x;
}

template <class T>
void block_gemm(const Operand<T>& A, const Operand<T>& B, const Target<T>& C, BlockRange r,
                BlockRange c, BlockRange k, T alpha) {
  if (r.size() <= 0 || c.size() <= 0 || k.size() <= 0) return;
  Operand<T> a = A.sub(r.begin, k.begin, r.size(), k.size());
  Operand<T> b = B.sub(k.begin, c.begin, k.size(), c.size());
  Target<T> t = C.sub(r.begin, c.begin, r.size(), c.size());
  blas_gemm<T>(a.op, b.op, r.size(), c.size(), k.size(), alpha, a.p, a.ld, b.p, b.ld, T(1), t.p,
               t.ld);
}
#define DISTMM_BLOCK_GEMM(T)                                                                 \
  template void block_gemm(const Operand<T>&, const Operand<T>&, const Target<T>&, BlockRange, \
                           BlockRange, BlockRange, T);
DISTMM_FOR_EACH_TYPE(DISTMM_BLOCK_GEMM)
#undef DISTMM_BLOCK_GEMM

std::pair<int, int> core_grid(int p) {
  int pr = static_cast<int>(std::floor(std::sqrt(double(p))));
  while (p % pr) --pr;
  return {pr, p / pr};
}

}  // namespace distmm
