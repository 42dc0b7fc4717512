// Verification must pass on correct products and fail on wrong ones (a check that cannot fail
// is no check).
#include <gtest/gtest.h>

#include "mpi/algorithms/algorithm.hpp"
#include "mpi/run/verify.hpp"

using namespace distmm;

namespace {

template <class T>
struct Problem {
  std::unique_ptr<DistAlgorithm> algo;
  DistMatrix<T> A, B, C;
};

template <class T>
Problem<T> multiplied(index_t m, index_t n, index_t k) {
  Comm world = Comm::world();
  Problem<T> p;
  p.algo = make_algorithm(Algorithm::summa, world, {m, n, k}, {});
  p.A = DistMatrix<T>(m, k, p.algo->piece_a());
  p.B = DistMatrix<T>(k, n, p.algo->piece_b());
  p.C = DistMatrix<T>(m, n, p.algo->piece_c());
  fill_random(p.A, 7, Stream::A, Fill::uniform);
  fill_random(p.B, 7, Stream::B, Fill::uniform);
  auto e = make_engine("blas", {});
  p.algo->multiply(*e, T(1), p.A.local, p.B.local, T(0), p.C.local);
  return p;
}

}  // namespace

TEST(Verify, FreivaldsAndFullPassOnCorrectProducts) {
  Comm world = Comm::world();
  auto p = multiplied<double>(31, 29, 37);
  double tol = verify_tolerance(Dtype::f64, 37, 1.0);
  auto f = verify_freivalds<double>(p.A, p.B, p.C, 1.0, 0.0, nullptr, 3, 99, tol, world);
  EXPECT_TRUE(f.passed) << f.residual;
  auto g = verify_full<double>(p.A, p.B, p.C, 1.0, 0.0, nullptr, tol, world);
  EXPECT_TRUE(g.passed) << g.residual;
  EXPECT_LT(g.rel_frobenius, 1e-14);
  auto q = multiplied<float>(31, 29, 37);
  double tolf = verify_tolerance(Dtype::f32, 37, 1.0);
  EXPECT_TRUE(verify_freivalds<float>(q.A, q.B, q.C, 1.f, 0.f, nullptr, 3, 99, tolf, world).passed);
  EXPECT_TRUE(verify_full<float>(q.A, q.B, q.C, 1.f, 0.f, nullptr, tolf, world).passed);
}

TEST(Verify, BothDetectOneWrongElement) {
  Comm world = Comm::world();
  auto p = multiplied<double>(23, 19, 17);
  // The rank holding the last element of C perturbs it slightly.
  if (!p.C.piece.empty() && p.C.piece.row_runs.back().global + p.C.piece.row_runs.back().length == 23 &&
      p.C.piece.col_runs.back().global + p.C.piece.col_runs.back().length == 19)
    p.C.local(p.C.local.rows() - 1, p.C.local.cols() - 1) += 1e-6;
  double tol = verify_tolerance(Dtype::f64, 17, 1.0);
  EXPECT_FALSE(verify_freivalds<double>(p.A, p.B, p.C, 1.0, 0.0, nullptr, 2, 5, tol, world).passed);
  auto g = verify_full<double>(p.A, p.B, p.C, 1.0, 0.0, nullptr, tol, world);
  EXPECT_FALSE(g.passed);
  EXPECT_NEAR(g.max_abs, 1e-6, 1e-9);
}

// Complex products: both checks pass on correct ones (complex alpha and beta, C0 kept) and
// catch an error in the imaginary part alone.
template <class T>
void complex_checks(double perturbation) {
  Comm world = Comm::world();
  const index_t m = 19, n = 23, k = 29;
  auto p = multiplied<T>(m, n, k);  // C = A B
  const T alpha(0.5, -1.5), beta(2, 1);
  DistMatrix<T> C0(m, n, p.algo->piece_c());
  fill_random(C0, 9, Stream::C, Fill::uniform);
  DistMatrix<T> C(m, n, p.algo->piece_c());
  std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
  auto e = make_engine("blas", {});
  p.algo->multiply(*e, alpha, p.A.local, p.B.local, beta, C.local);
  const double tol = verify_tolerance(dtype_of<T>(), k, 1.0);
  auto f = verify_freivalds<T>(p.A, p.B, C, alpha, beta, &C0, 3, 11, tol, world);
  EXPECT_TRUE(f.passed) << DtypeTraits<T>::name << " " << f.residual << " > " << tol;
  auto g = verify_full<T>(p.A, p.B, C, alpha, beta, &C0, tol, world);
  EXPECT_TRUE(g.passed) << DtypeTraits<T>::name << " " << g.residual;
  if (!C.piece.empty()) C.local(0, 0) += T(0, real_t<T>(perturbation));
  EXPECT_FALSE(verify_freivalds<T>(p.A, p.B, C, alpha, beta, &C0, 3, 11, tol, world).passed)
      << DtypeTraits<T>::name;
  auto h = verify_full<T>(p.A, p.B, C, alpha, beta, &C0, tol, world);
  EXPECT_FALSE(h.passed) << DtypeTraits<T>::name;
  EXPECT_NEAR(h.max_abs, perturbation, perturbation * 1e-2);
}

TEST(Verify, ComplexPassesWhenRightAndCatchesAnImaginaryError) {
  complex_checks<std::complex<double>>(1e-7);
  complex_checks<std::complex<float>>(1e-2);
}
