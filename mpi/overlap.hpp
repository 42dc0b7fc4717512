// Local multiply that lets pending transfers progress. Open MPI moves large messages only inside
// MPI calls, so a long BLAS call would stall the next block's transfer; a few column chunks with
// MPI_Testall between them let the double-buffered transfer advance during the multiply.
#pragma once
#include <algorithm>

#include "../node/engine.hpp"
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

template <class T>
void gemm_with_progress(Engine& e, index_t m, index_t n, index_t k, T alpha, const T* A,
                        index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc,
                        Requests* pending) {
  if (m <= 0 || n <= 0) return;
  const index_t min_chunk = 512;  // keeps each BLAS call large enough to run at full speed
  // An engine that computes while the host waits (a GPU) needs no chunks: the caller's wait
  // progresses the transfers, and each chunk would copy A to the device again.
  int chunks = pending && !e.overlaps_host() ? static_cast<int>(std::clamp<index_t>(n / min_chunk, 1, 4)) : 1;
  for (int c = 0; c < chunks; ++c) {
    index_t j0 = n * c / chunks, j1 = n * (c + 1) / chunks;
    e.gemm(Op::N, Op::N, m, j1 - j0, k, alpha, A, lda, B + j0 * ldb, ldb, beta, C + j0 * ldc, ldc);
    if (pending) pending->poke();
  }
}

}  // namespace distmm
