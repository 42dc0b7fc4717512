// Checks of a distributed product C = alpha A B + beta C0.
//  - Freivalds: for random x, compare C x with alpha A (B x) + beta C0 x, all in double
//    (complex<double> for complex types),
//    distributed over the ranks: O(n^2 / P) work per rank and trial.
//  - Full: gather A, B, C (and C0) on rank 0 and compare with a double-precision BLAS product
//    (ZGEMM for complex types).
// Both pass when every component's error is within tol * (|alpha| |A| |B| |x| + |beta| |C0| |x|),
// the componentwise bound of a classical product (Higham, Accuracy and Stability, Sec. 3.5,
// gamma_k ~ k u); Strassen-like engines widen tol by their growth factor.
#pragma once
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../runtime/device_space.hpp"
#include "../runtime/distribution.hpp"

namespace distmm {

struct VerifyResult {
  std::string method = "none";
  int trials = 0;
  double residual = 0;       // max componentwise error over its bound (passes when <= tolerance)
  double tolerance = 0;
  double rel_frobenius = -1; // full only: ||C - Cref||_F / ||Cref||_F
  double max_abs = -1;       // full only: max |C - Cref|
  index_t nonfinite_matched = 0;  // full only: NaN/Inf entries of C where the reference has them
  bool passed = true;
};

// NaN and Inf entries of a distributed matrix, counted over all ranks, and the first one in
// column-major order (global row and column), for the message that names it.
struct NonFinite {
  index_t nans = 0, infs = 0;
  index_t first_row = -1, first_col = -1;
  bool any() const { return nans + infs > 0; }
};
template <class T>
NonFinite find_nonfinite(const DistMatrix<T>& M, const Comm& comm);

// tol = growth * (k + 2) * unit roundoff of T
double verify_tolerance(Dtype dt, index_t k, double growth);

// `normwise` (a Strassen-like product ran): the bound of each component also takes
// |alpha| (k + 4) max|A| max|B| (times |x|_1 for Freivalds). A Strassen-like error is bounded
// normwise only (Higham, Accuracy and Stability, 2nd ed., Thm. 23.3 and Sec. 23.2.2:
// (k0^2 + 5 k0) 12^L u max|A| max|B| for Strassen's formula, (k0^2 + 6 k0) 18^L u for
// Winograd's, L levels over leaves of inner dimension k0 = k_run / 2^L, k_run k padded to a
// multiple of 2^L, so k0 <= k or k0 = 1; with tol = growth (k + 2) u, (k + 4) max|A| max|B|
// covers both): its sums mix rows and columns of different quadrants, so a component can
// exceed its own |A| |B| bound.
template <class T>
VerifyResult verify_freivalds(const DistMatrix<T>& A, const DistMatrix<T>& B,
                              const DistMatrix<T>& C, T alpha, T beta, const DistMatrix<T>* C0,
                              int trials, std::uint64_t seed, double tol, const Comm& comm,
                              bool normwise = false);

// The type checks compute in: double, or complex<double> for complex inputs.
template <class T>
using Wide = std::conditional_t<is_complex_v<T>, std::complex<double>, double>;

// Freivalds' reference, taken from the inputs alone: for each trial's probe x (from the seed),
// A (B x) and C0 x summed over ranks (m each), with their bounds |A| |B| |x| and |C0| |x|, and
// max|A| max|B|. Taken before the multiply, the check cannot pass a multiply that wrote into
// its inputs (SUMMA gathers around the rank's own blocks: device_home).
template <class T>
struct FreivaldsReference {
  index_t m = 0, n = 0, k = 0;
  T alpha{}, beta{};
  bool with_c0 = false;
  int trials = 0;
  std::uint64_t seed = 0;
  double max_ab = 0;
  std::vector<std::vector<Wide<T>>> ay, c0x;  // per trial
  std::vector<std::vector<double>> ay_bound, c0x_bound;
};

// The same on device-resident operands: the matrix-vector products on each rank's GPU (in
// double), the sums over ranks on the host; in two halves, the reference before the multiply
// (C n columns) and the check of C after it, or both at once.
template <class T>
FreivaldsReference<T> freivalds_reference_device(DeviceSpace& space, const DeviceDistMatrix& A,
                                                 const DeviceDistMatrix& B, T alpha, T beta,
                                                 const DeviceDistMatrix* C0, int trials, std::uint64_t seed,
                                                 index_t n, const Comm& comm);
template <class T>
VerifyResult verify_freivalds_device(DeviceSpace& space, const FreivaldsReference<T>& ref, const DeviceDistMatrix& C,
                                     double tol, const Comm& comm, bool normwise = false);
template <class T>
VerifyResult verify_freivalds_device(DeviceSpace& space, const DeviceDistMatrix& A,
                                     const DeviceDistMatrix& B, const DeviceDistMatrix& C, T alpha,
                                     T beta, const DeviceDistMatrix* C0, int trials,
                                     std::uint64_t seed, double tol, const Comm& comm,
                                     bool normwise = false);

template <class T>
VerifyResult verify_full(const DistMatrix<T>& A, const DistMatrix<T>& B, const DistMatrix<T>& C,
                         T alpha, T beta, const DistMatrix<T>* C0, double tol, const Comm& comm,
                         bool normwise = false);

// Bytes rank 0 needs for verify_full (to refuse it up front when they do not fit).
std::size_t verify_full_bytes(index_t m, index_t n, index_t k, Dtype dt);

}  // namespace distmm
