#include "blas.hpp"

#include "../src/core/settings.hpp"

#include <cblas.h>

#include <cstdlib>
#include <mutex>

// OpenBLAS internals (pthread build), weak so that other BLAS builds still link: re-read the
// OPENBLAS_* environment, and stop the worker threads (the next threaded call starts them again).
extern "C" void openblas_read_env(void) __attribute__((weak));
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace distmm {
namespace {
// After each threaded call, OpenBLAS's idle workers spin for 2^28 TSC cycles before they
// sleep. Every engine but `blas` runs its own OpenMP threads between BLAS calls (fused
// additions, the tilings' single-threaded blocks), so a spinning worker takes a core from them
// and makes their times erratic. 2^20 cycles still covers back-to-back BLAS calls
// (docs/performance.md, "Measurements behind the code": quiet_idle_blas_workers). A value
// the user set is kept; OpenBLAS read the environment at load time, hence the re-read.
bool quieted = false;
std::once_flag quiet_once;
void quiet_idle_blas_workers() {
  if (environment("OPENBLAS_THREAD_TIMEOUT") || !openblas_read_env || !blas_thread_shutdown_) return;
  setenv("OPENBLAS_THREAD_TIMEOUT", "20", 0);
  openblas_read_env();
  blas_thread_shutdown_();
  quieted = true;
}

CBLAS_TRANSPOSE cb(Op op) {
  return op == Op::N ? CblasNoTrans : op == Op::T ? CblasTrans : CblasConjTrans;
}
blasint ld_ok(index_t ld) { return static_cast<blasint>(std::max<index_t>(ld, 1)); }

// CBLAS's routine per type: real types take alpha and beta by value, complex ones by pointer.
template <class T>
auto by_blas_convention(const T& v) {
  if constexpr (is_complex_v<T>) return static_cast<const void*>(&v);
  else return v;
}
}  // namespace

template <class T>
void blas_gemm(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
               const T* B, index_t ldb, T beta, T* C, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  const blasint M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  const CBLAS_TRANSPOSE a = cb(effective_op<T>(ta)), b = cb(effective_op<T>(tb));
  const auto al = by_blas_convention(alpha), be = by_blas_convention(beta);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, a, b, M, N, K, al, A, ld_ok(lda), B, ld_ok(ldb), be, C, ld_ok(ldc));
  else if constexpr (std::is_same_v<T, double>)
    cblas_dgemm(CblasColMajor, a, b, M, N, K, al, A, ld_ok(lda), B, ld_ok(ldb), be, C, ld_ok(ldc));
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    cblas_cgemm(CblasColMajor, a, b, M, N, K, al, A, ld_ok(lda), B, ld_ok(ldb), be, C, ld_ok(ldc));
  else {
    static_assert(std::is_same_v<T, std::complex<double>>, "a new dtype needs its CBLAS routine here");
    cblas_zgemm(CblasColMajor, a, b, M, N, K, al, A, ld_ok(lda), B, ld_ok(ldb), be, C, ld_ok(ldc));
  }
}

#define DISTMM_BLAS_GEMM(T)                                                                    \
  template void blas_gemm<T>(Op, Op, index_t, index_t, index_t, T, const T*, index_t, const T*, \
                             index_t, T, T*, index_t);
DISTMM_FOR_EACH_TYPE(DISTMM_BLAS_GEMM)
#undef DISTMM_BLAS_GEMM

void blas_set_threads(int threads) {
  std::call_once(quiet_once, quiet_idle_blas_workers);
  openblas_set_num_threads(std::max(1, threads));
}
bool blas_idle_workers_quieted() {
  std::call_once(quiet_once, quiet_idle_blas_workers);
  return quieted;
}
int blas_get_threads() { return openblas_get_num_threads(); }
const char* blas_config() { return openblas_get_config(); }

}  // namespace distmm
