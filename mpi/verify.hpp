// Checks of a distributed product C = alpha A B + beta C0.
//  - Freivalds: for random x, compare C x with alpha A (B x) + beta C0 x, all in double,
//    distributed over the ranks: O(n^2 / P) work per rank and trial.
//  - Full: gather A, B, C (and C0) on rank 0 and compare with a double-precision BLAS product.
// Both pass when every component's error is within tol * (|alpha| |A| |B| |x| + |beta| |C0| |x|),
// the componentwise bound of a classical product (Higham, Accuracy and Stability, Sec. 3.5,
// gamma_k ~ k u); Strassen-like engines widen tol by their growth factor.
#pragma once
#include <string>

#include "distribution.hpp"

namespace distmm {

struct VerifyResult {
  std::string method = "none";
  int trials = 0;
  double residual = 0;       // max componentwise error over its bound (passes when <= tolerance)
  double tolerance = 0;
  double rel_frobenius = -1; // full only: ||C - Cref||_F / ||Cref||_F
  double max_abs = -1;       // full only: max |C - Cref|
  bool passed = true;
};

// tol = growth * (k + 2) * unit roundoff of T
double verify_tolerance(Dtype dt, index_t k, double growth);

template <class T>
VerifyResult verify_freivalds(const DistMatrix<T>& A, const DistMatrix<T>& B,
                              const DistMatrix<T>& C, T alpha, T beta, const DistMatrix<T>* C0,
                              int trials, std::uint64_t seed, double tol, const Comm& comm);

template <class T>
VerifyResult verify_full(const DistMatrix<T>& A, const DistMatrix<T>& B, const DistMatrix<T>& C,
                         T alpha, T beta, const DistMatrix<T>* C0, double tol, const Comm& comm);

// Bytes rank 0 needs for verify_full (to refuse it up front when they do not fit).
std::size_t verify_full_bytes(index_t m, index_t n, index_t k);

}  // namespace distmm
