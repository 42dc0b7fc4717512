// Verification must pass on correct products and fail on wrong ones (a check that cannot fail
// is no check).
#include <gtest/gtest.h>

#include "mpi/algorithm.hpp"
#include "mpi/verify.hpp"

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
  p.algo = make_algorithm("summa", world, {m, n, k}, {});
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
