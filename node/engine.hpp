// The node layer's only interface: one gemm-like call on host memory. A distributed algorithm
// sees its local engine through this call alone, and an engine knows nothing of MPI.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "../src/types.hpp"

namespace distmm {

struct EngineOptions {
  int threads = 1;           // threads this rank may use (BLAS and OpenMP)
  int levels = -1;           // Strassen-like recursion levels; -1 = choose automatically
  index_t cutoff = 256;      // smallest dimension that still recurses
  index_t block = 96;        // q for the cache-aware tilings (seed 004)
  std::size_t cache_bytes = 0;  // shared cache size override for the tilings (0 = read it)
  int device = 0;            // GPU ordinal for the cuda engines (taken modulo the GPUs seen)
  index_t tau1 = 4096;       // GPU engines: below this, plain cuBLAS (seed 003's tau1)
  index_t tau2 = 4096;       // GPU engines: recurse again while halves stay >= tau2
  int streams = 2;           // GPU engines: CUDA streams for independent leaf products
  bool tuned_leaves = true;  // GPU engines: leaf products in the tuning file's configuration
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  // C = alpha op(A) op(B) + beta C; op(A) is m x k, op(B) is k x n, all column-major.
  virtual void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, float alpha, const float* A,
                    index_t lda, const float* B, index_t ldb, float beta, float* C,
                    index_t ldc) = 0;
  virtual void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, double alpha, const double* A,
                    index_t lda, const double* B, index_t ldb, double beta, double* C,
                    index_t ldc) = 0;
  // Extra bytes the engine allocates for one call of this size (its peak workspace).
  virtual std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt) const {
    (void)m, (void)n, (void)k, (void)dt;
    return 0;
  }
  // Bytes of accelerator memory one call of this size needs, and what the accelerator has free
  // (both 0 for host engines).
  virtual std::size_t device_bytes(index_t m, index_t n, index_t k, Dtype dt) const {
    (void)m, (void)n, (void)k, (void)dt;
    return 0;
  }
  virtual std::size_t device_free_bytes() const { return 0; }
  // Factor by which the engine's rounding-error bound exceeds the classical one (gamma_k), for
  // the verification tolerance: 12^L for L Strassen-like levels (Higham, Accuracy and Stability
  // of Numerical Algorithms, 2nd ed., Thm. 23.3), 1 for classical engines.
  virtual double error_growth() const { return 1.0; }
  // An output block that a sequence of gemm calls will update (Cannon's and SUMMA's steps): an
  // engine with its own memory (a GPU) may keep it there until release_output(), instead of
  // copying it in and out at every call. Calls between hold and release must target C inside
  // [C, C + ldc * cols). Host engines need nothing.
  virtual void hold_output(float* C, index_t rows, index_t cols, index_t ldc) {
    (void)C, (void)rows, (void)cols, (void)ldc;
  }
  virtual void hold_output(double* C, index_t rows, index_t cols, index_t ldc) {
    (void)C, (void)rows, (void)cols, (void)ldc;
  }
  virtual void release_output() {}
  // True when calls into a held output may return before the product is done (a GPU working
  // asynchronously): the caller's thread is then free, e.g. to progress MPI transfers, and the
  // operands were already consumed (copied) when the call returned.
  virtual bool overlaps_host() const { return false; }
  // What the engine chose (levels, tile sizes), for the report.
  virtual std::string describe() const { return name(); }
};

// Implements both virtual overloads by forwarding to Derived::run<T>.
template <class Derived>
class EngineBase : public Engine {
 public:
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, float alpha, const float* A,
            index_t lda, const float* B, index_t ldb, float beta, float* C,
            index_t ldc) override {
    static_cast<Derived*>(this)->template run<float>(ta, tb, m, n, k, alpha, A, lda, B, ldb,
                                                      beta, C, ldc);
  }
  void gemm(Op ta, Op tb, index_t m, index_t n, index_t k, double alpha, const double* A,
            index_t lda, const double* B, index_t ldb, double beta, double* C,
            index_t ldc) override {
    static_cast<Derived*>(this)->template run<double>(ta, tb, m, n, k, alpha, A, lda, B, ldb,
                                                       beta, C, ldc);
  }
};

// Registry by name: `--engine NAME`. Throws UsageError naming the known engines.
std::unique_ptr<Engine> make_engine(const std::string& name, const EngineOptions& opts);
std::vector<std::string> engine_names();

}  // namespace distmm
