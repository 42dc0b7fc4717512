// f32, f64, c32 and c64 products on INT8 tensor cores at the accuracy of the native routine:
// Ozaki scheme II (Ozaki, Uchino, Imamura, arXiv 2504.08009; Uchino et al., SC25,
// arXiv 2508.03984).
//
// Each row i of op(A) is scaled by 2^e_i and each column j of op(B) by 2^f_j and rounded to
// integers A', B'; Cauchy-Schwarz (|a'_i . b'_j| <= ||a'_i|| ||b'_j||) picks e_i, f_j so that
// every entry of A'B' lies inside (-M/2, M/2), M = m_1 ... m_N for N pairwise coprime moduli
// m_l <= 256. The product is then exact in modular arithmetic: one INT8 GEMM per modulus (the
// symmetric residues of A' and B' fit in int8, the int32 sums are exact for k < 2^17), and the
// Chinese remainder theorem gives A'B' back (exactly, in 64- or 128-bit integers), scaled by
// 2^-(e_i + f_j).
// The only roundings are that of A and B to A', B' and the final conversion, so the error
// shrinks with the bits each operand keeps: N is the fewest moduli whose rigorous entrywise
// bound |C - AB| <= c |A||B| meets the accuracy target (ozaki_accuracy.hpp, docs/accuracy.md):
// native (c <= sqrt(K) u, the native routine's typical error; c from the rows' exponent spread
// or, where it lowers N, from one more INT8 product bounding |A||B|), a relative error, or max (the earlier
// rule: half the native normwise error, and 16 (f32) or 45 (f64) bits kept by the entry at each
// row's and column's geometric mean). Where no N <= 16 will do (or the inputs hold NaN or Inf)
// the call is declined and the caller runs the native product.
// Complex operands: [Re A; Im A] times [Re B, Im B] in one real product per modulus, the four
// blocks combined in modular arithmetic before the CRT.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "../node/engine.hpp"
#include "../src/core/dtype.hpp"
#include "cuda_util.hpp"
#include "ozaki_accuracy.hpp"

namespace distmm {

// What the calls so far did, for describe() and the report.
using EmulationStats = ozaki::Tally;

class Int8Emulation {
 public:
  // forced_moduli > 0 fixes N (2..16) instead of choosing it from the accuracy target.
  explicit Int8Emulation(int forced_moduli = 0, ozaki::Accuracy accuracy = {});
  ~Int8Emulation();
  Int8Emulation(const Int8Emulation&) = delete;
  Int8Emulation& operator=(const Int8Emulation&) = delete;

  // C = alpha op(A) op(B) + beta C on `stream` (device pointers); false when declined (nothing
  // done): the caller then runs the native product. reuse (node/engine.hpp): keep holds op(A)'s
  // statistics, magnitudes and slices for the next call (where k is one chunk, no workspace cap
  // is set, and the slices take at most half of the memory free and fit whole), and kept takes
  // them from the previous call: the same integers, so the same result bit for bit.
  template <class T>
  bool gemm(cudaStream_t stream, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
            const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc, ReuseOfA reuse = {});

  const EmulationStats& stats() const { return stats_; }
  // Products that are leaves under L Strassen-like levels need less of their own accuracy
  // (ozaki_arith.hpp, required_bits).
  void set_levels_above(int levels) { levels_above_ = levels; }
  // Device workspace one call needs at least (slices, int32 product, residues, scalings), in row
  // blocks and column panels; it takes more where the GPU has it free.
  static std::size_t workspace_bytes(index_t m, index_t n, index_t k, Dtype dt, int moduli);
  static constexpr int kMaxModuli = 16;
  // The moduli count the accuracy rule picks for well-scaled inputs (for the planners).
  static int default_moduli(Dtype dt);

 private:
  struct Impl;
  // One product with k <= 131056 (one exact INT8 sum); "" when done (a dry run: when it would
  // be emulated, nothing computed), else why it is declined, with C untouched.
  template <class T>
  std::string chunk(cudaStream_t stream, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                    const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc,
                    bool dry_run, ReuseOfA reuse);
  std::unique_ptr<Impl> impl_;
  EmulationStats stats_;
  int forced_;
  ozaki::Accuracy accuracy_;
  int levels_above_ = 0;
};

}  // namespace distmm
