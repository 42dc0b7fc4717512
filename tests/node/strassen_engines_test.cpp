// The Strassen-like engines against BLAS: every engine, levels 0 to 3, odd shapes (primes, 1,
// skinny), both dtypes, alpha/beta, transposes. Integer-valued inputs keep every sum and product
// exact, so results must equal BLAS's bit for bit; uniform inputs check the error bound.
#include <gtest/gtest.h>

#include <cmath>

#include "node/blas.hpp"
#include "node/engine.hpp"
#include "src/random.hpp"

using namespace distmm;

namespace {

struct Case {
  index_t m, n, k;
};
const Case kCases[] = {{1, 1, 1}, {2, 2, 2}, {8, 8, 8}, {17, 19, 23}, {1, 33, 40}, {40, 1, 33},
                       {33, 40, 1}, {64, 64, 64}, {61, 3, 97}, {128, 96, 80}, {127, 131, 129}};
const char* kEngines[] = {"strassen", "strassen-lowmem", "winograd"};

template <class T>
void fill(Matrix<T>& M, Stream s, Fill f) {
  fill_random_block(M.view(), 0, 0, 77, s, f);
}

// Runs engine and BLAS on the same inputs; returns max |diff| and max |reference|.
template <class T>
std::pair<double, double> compare(Engine& e, Op ta, Op tb, const Case& c, T alpha, T beta,
                                  Fill f) {
  Matrix<T> A(ta == Op::N ? c.m : c.k, ta == Op::N ? c.k : c.m);
  Matrix<T> B(tb == Op::N ? c.k : c.n, tb == Op::N ? c.n : c.k);
  Matrix<T> C(c.m, c.n), R(c.m, c.n);
  fill(A, Stream::A, f), fill(B, Stream::B, f), fill(C, Stream::C, f), fill(R, Stream::C, f);
  e.gemm(ta, tb, c.m, c.n, c.k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, C.data(), C.ld());
  blas_gemm<T>(ta, tb, c.m, c.n, c.k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, R.data(),
               R.ld());
  double diff = 0, ref = 0;
  for (index_t t = 0; t < C.size(); ++t) {
    diff = std::max(diff, std::abs(double(C.data()[t]) - double(R.data()[t])));
    ref = std::max(ref, std::abs(double(R.data()[t])));
  }
  if (std::isnan(diff)) diff = INFINITY;
  return {diff, ref};
}

template <class T>
class StrassenEngines : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(StrassenEngines, Types);

TYPED_TEST(StrassenEngines, ExactOnIntegerInputsAtEveryLevel) {
  using T = TypeParam;
  for (const char* name : kEngines)
    for (int levels = 0; levels <= 3; ++levels) {
      EngineOptions o;
      o.levels = levels;
      o.cutoff = 2;  // recurse even on tiny blocks, to exercise peeling at every depth
      auto e = make_engine(name, o);
      for (const Case& c : kCases)
        for (Op ta : {Op::N, Op::T})
          for (Op tb : {Op::N, Op::T})
            for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-2.0, 1.0}, std::pair{3.0, -0.5}}) {
              auto [diff, ref] = compare<T>(*e, ta, tb, c, T(alpha), T(beta), Fill::integer);
              ASSERT_EQ(diff, 0.0) << name << " L=" << levels << " " << c.m << "x" << c.n << "x"
                                   << c.k << " ta=" << int(ta) << " tb=" << int(tb)
                                   << " alpha=" << alpha << " beta=" << beta;
            }
    }
}

TYPED_TEST(StrassenEngines, UniformInputsWithinTheLevelBound) {
  using T = TypeParam;
  const double u = std::is_same_v<T, float> ? 6e-8 : 1.1e-16;
  for (const char* name : kEngines)
    for (int levels = 1; levels <= 3; ++levels) {
      EngineOptions o;
      o.levels = levels;
      o.cutoff = 16;
      auto e = make_engine(name, o);
      Case c{200, 190, 210};
      auto [diff, ref] = compare<T>(*e, Op::N, Op::N, c, T(1), T(0), Fill::uniform);
      // Max error relative to the largest entry, against (k + 2) u 12^L (the bound the
      // verification uses; Higham, Thm. 23.3; README "Accuracy").
      EXPECT_LE(diff / ref, (c.k + 2) * u * std::pow(12.0, levels)) << name << " L=" << levels;
      EXPECT_EQ(e->error_growth(), std::pow(12.0, levels));
      EXPECT_GT(diff, 0.0) << name << ": a recursion that changes nothing is not recursing";
    }
}

TEST(Tilings, ExactOnIntegerInputsWithSmallBlocksAndCaches) {
  const char* tilings[] = {"mmra-shared", "mmra-distributed", "mmra-tradeoff", "mmra-shared-lru",
                           "mmra-distributed-lru", "mmra-tradeoff-lru", "outer-product",
                           "equal-layout"};
  for (const char* name : tilings)
    for (index_t block : {1, 3, 8})
      for (int threads : {1, 2, 3}) {
        EngineOptions o;
        o.block = block;
        o.threads = threads;
        o.cache_bytes = 60 * block * block * sizeof(double);  // a few blocks: many tiles
        auto e = make_engine(name, o);
        for (const Case& c : kCases)
          for (Op ta : {Op::N, Op::T}) {
            auto [diff, ref] = compare<double>(*e, ta, Op::N, c, -2.0, 0.5, Fill::integer);
            ASSERT_EQ(diff, 0.0) << name << " q=" << block << " threads=" << threads << " "
                                 << c.m << "x" << c.n << "x" << c.k;
            auto [d2, r2] = compare<float>(*e, Op::N, Op::T, c, 1.f, 0.f, Fill::integer);
            ASSERT_EQ(d2, 0.0) << name;
          }
      }
}

TEST(StrassenEngines, AutomaticLevelsFromTheCostModel) {
  for (const char* name : kEngines) {
    EngineOptions o;  // levels = -1: calibrated cost model
    o.cutoff = 64;
    auto e = make_engine(name, o);
    for (index_t n : {5, 120, 300}) {
      auto [diff, ref] = compare<double>(*e, Op::N, Op::N, {n, n + 1, n + 2}, 1.0, 1.0, Fill::integer);
      EXPECT_EQ(diff, 0.0) << name << " n=" << n;
      EXPECT_NE(e->describe().find("auto (last call:"), std::string::npos) << e->describe();
    }
  }
}

TEST(StrassenEngines, LevelZeroIsExactlyBlas) {
  for (const char* name : kEngines) {
    EngineOptions o;
    o.levels = 0;
    auto e = make_engine(name, o);
    auto [diff, ref] = compare<double>(*e, Op::N, Op::T, {150, 130, 170}, 1.3, 0.7, Fill::uniform);
    EXPECT_EQ(diff, 0.0) << name;
  }
}

TEST(StrassenEngines, WorkspaceIsReportedAndLowmemStaysWithinTwoTemporaries) {
  EngineOptions o;
  o.levels = 2;
  o.cutoff = 16;
  const index_t n = 512;
  auto low = make_engine("strassen-lowmem", o);
  auto fast = make_engine("strassen", o);
  // Two quarter-size temporaries per level: 2 (n/2)^2 + 2 (n/4)^2 elements.
  std::size_t bound = (2 * (n / 2) * (n / 2) + 2 * (n / 4) * (n / 4)) * sizeof(double);
  EXPECT_EQ(low->workspace_bytes(n, n, n, Dtype::f64), bound);
  EXPECT_GT(fast->workspace_bytes(n, n, n, Dtype::f64), bound);
  EXPECT_EQ(make_engine("blas", o)->workspace_bytes(n, n, n, Dtype::f64), 0u);
}

}  // namespace
