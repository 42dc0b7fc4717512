#include <gtest/gtest.h>

#include "node/engine.hpp"
#include "src/random.hpp"

using namespace distmm;

namespace {
// Independent reference: the textbook triple loop in long double.
template <class T>
void naive(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const Matrix<T>& A,
           const Matrix<T>& B, T beta, Matrix<T>& C) {
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      long double s = 0;
      for (index_t l = 0; l < k; ++l) {
        T a = ta == Op::N ? A(i, l) : A(l, i);
        T b = tb == Op::N ? B(l, j) : B(j, l);
        s += (long double)a * b;
      }
      C(i, j) = T(alpha * s + (long double)beta * C(i, j));
    }
}
}  // namespace

template <class T>
class BlasEngineTest : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BlasEngineTest, Types);

TYPED_TEST(BlasEngineTest, MatchesTripleLoopOnOddShapes) {
  using T = TypeParam;
  auto e = make_engine("blas", EngineOptions{});
  for (auto [m, n, k] : std::vector<std::array<index_t, 3>>{{1, 1, 1}, {7, 5, 3}, {13, 1, 17}, {1, 29, 1}, {31, 37, 41}}) {
    for (Op ta : {Op::N, Op::T})
      for (Op tb : {Op::N, Op::T}) {
        Matrix<T> A(ta == Op::N ? m : k, ta == Op::N ? k : m), B(tb == Op::N ? k : n, tb == Op::N ? n : k);
        Matrix<T> C(m, n), R(m, n);
        fill_random_block(A.view(), 0, 0, 3, Stream::A, Fill::integer);
        fill_random_block(B.view(), 0, 0, 3, Stream::B, Fill::integer);
        fill_random_block(C.view(), 0, 0, 3, Stream::C, Fill::integer);
        R = Matrix<T>(m, n);
        std::copy(C.data(), C.data() + C.size(), R.data());
        e->gemm(ta, tb, m, n, k, T(2), A.data(), A.ld(), B.data(), B.ld(), T(-1), C.data(), C.ld());
        naive<T>(ta, tb, m, n, k, T(2), A, B, T(-1), R);
        for (index_t t = 0; t < C.size(); ++t) ASSERT_EQ(C.data()[t], R.data()[t]) << m << "x" << n << "x" << k;
      }
  }
}

TEST(EngineRegistry, UnknownNameNamesTheKnownOnes) {
  try {
    make_engine("nope", EngineOptions{});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("blas"), std::string::npos);
  }
}
