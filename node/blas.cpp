#include "blas.hpp"

#include <cblas.h>

namespace distmm {
namespace {
CBLAS_TRANSPOSE cb(Op op) { return op == Op::N ? CblasNoTrans : CblasTrans; }
blasint ld_ok(index_t ld) { return static_cast<blasint>(std::max<index_t>(ld, 1)); }
}  // namespace

template <>
void blas_gemm<double>(Op ta, Op tb, index_t m, index_t n, index_t k, double alpha, const double* A,
                       index_t lda, const double* B, index_t ldb, double beta, double* C,
                       index_t ldc) {
  if (m <= 0 || n <= 0) return;
  cblas_dgemm(CblasColMajor, cb(ta), cb(tb), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, A, ld_ok(lda), B, ld_ok(ldb), beta, C, ld_ok(ldc));
}

template <>
void blas_gemm<float>(Op ta, Op tb, index_t m, index_t n, index_t k, float alpha, const float* A,
                      index_t lda, const float* B, index_t ldb, float beta, float* C, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  cblas_sgemm(CblasColMajor, cb(ta), cb(tb), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, A, ld_ok(lda), B, ld_ok(ldb), beta, C, ld_ok(ldc));
}

void blas_set_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }
int blas_get_threads() { return openblas_get_num_threads(); }
const char* blas_config() { return openblas_get_config(); }

}  // namespace distmm
