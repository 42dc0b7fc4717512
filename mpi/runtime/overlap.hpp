// Local multiply that lets pending transfers progress. Open MPI moves large messages only inside
// MPI calls, so a long BLAS call would stall the next block's transfer; a few chunks with
// MPI_Testall between them let the double-buffered transfer advance during the multiply.
#pragma once
#include <algorithm>
#include <cstddef>

#include "../../node/engine.hpp"
#include "comm.hpp"

namespace distmm {

// Holds C in the engine's memory for the steps of one multiply (RAII).
template <class T>
class HeldOutput {
 public:
  HeldOutput(Engine& e, T* C, index_t rows, index_t cols, index_t ld) : e_(e) {
    e_.hold_output(C, rows, cols, ld);
  }
  ~HeldOutput() { e_.release_output(); }
  HeldOutput(const HeldOutput&) = delete;
  HeldOutput& operator=(const HeldOutput&) = delete;

 private:
  Engine& e_;
};

// Progress calls per local product when transfers are pending: Open MPI moves a message only
// inside MPI calls, so too few calls leave the panels waiting, and too many cut the products
// below full speed; the count measured best on a k-dominant drop-in call
// (docs/performance.md, "Measurements behind the code": kProgressPieces).
constexpr int kProgressPieces = 8;

// `pending`: a Requests or anything else with poke(), or null.
template <class T, class Pending = Requests>
void gemm_with_progress(Engine& e, index_t m, index_t n, index_t k, T alpha, const T* A,
                        index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc,
                        Pending* pending) {
  if (m <= 0 || n <= 0) return;
  // About kProgressPieces calls per product, each still large enough to run at full speed:
  // column chunks of at least 512 where n allows, else chunks of k of at least 256 (each a
  // whole-width product, so a narrow C, as in k-dominant shapes, still gets its progress calls).
  // An engine that computes while the host waits (a GPU) needs no chunks: the caller's wait
  // progresses the transfers, and each chunk would copy A to the device again.
  int col_chunks = 1, k_chunks = 1;
  if (pending && !e.overlaps_host()) {
    const int pieces = kProgressPieces;
    col_chunks = static_cast<int>(std::clamp<index_t>(n / 512, 1, pieces));
    k_chunks = static_cast<int>(std::clamp<index_t>(k / 256, 1, std::max(1, pieces / col_chunks)));
  }
  for (int c = 0; c < col_chunks; ++c) {
    const index_t j0 = n * c / col_chunks, j1 = n * (c + 1) / col_chunks;
    for (int q = 0; q < k_chunks; ++q) {
      const index_t k0 = k * q / k_chunks, k1 = k * (q + 1) / k_chunks;
      e.gemm(Op::N, Op::N, m, j1 - j0, k1 - k0, alpha, A + k0 * lda, lda, B + k0 + j0 * ldb, ldb,
             q == 0 ? beta : T(1), C + j0 * ldc, ldc);
      if (pending) pending->poke();
    }
  }
}

// No transfers to progress.
template <class T>
void gemm_with_progress(Engine& e, index_t m, index_t n, index_t k, T alpha, const T* A,
                        index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc,
                        std::nullptr_t) {
  gemm_with_progress<T, Requests>(e, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

}  // namespace distmm
