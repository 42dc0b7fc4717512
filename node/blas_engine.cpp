// `blas`: OpenBLAS's GEMM with the rank's thread budget.
#include "blas_engine.hpp"

#include "blas.hpp"

namespace distmm {
namespace {

class BlasEngine final : public EngineBase<BlasEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::all();
  explicit BlasEngine(const EngineOptions& o) : threads_(o.threads) { blas_set_threads(threads_); }
  std::string name() const override { return "blas"; }
  std::string describe() const override {
    return "blas (OpenBLAS, " + std::to_string(threads_) + " thread" + (threads_ > 1 ? "s)" : ")");
  }
  template <class T>
  void run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
           const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    blas_gemm<T>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }

 private:
  int threads_;
};

}  // namespace

EngineInfo blas_engine_info() {
  return engine_entry<BlasEngine>("blas", "OpenBLAS GEMM with the rank's thread budget");
}

}  // namespace distmm
