// Thin typed wrappers over CBLAS (OpenBLAS), used by the engines and the references.
#pragma once
#include <algorithm>

#include "../src/core/types.hpp"

namespace distmm {

// C = alpha op(A) op(B) + beta C, column-major; safe for empty sizes.
template <class T>
void blas_gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
               const T* B, index_t ldb, T beta, T* C, index_t ldc);

// Threads that OpenBLAS uses for one call (the process-wide setting).
void blas_set_threads(int threads);
int blas_get_threads();
// True when distmm shortened OpenBLAS's idle spin (see blas.cpp); false where the user set
// OPENBLAS_THREAD_TIMEOUT or the BLAS is not OpenBLAS's pthread build.
bool blas_idle_workers_quieted();
const char* blas_config();

}  // namespace distmm
