// The Strassen-like engines against BLAS: every engine, levels 0 to 3, odd shapes (primes, 1,
// skinny), every dtype of the list (f32, f64, c32, c64), alpha/beta, transposes and (complex)
// conjugate transposes. Integer-valued inputs keep every sum and product
// exact, so results must equal BLAS's bit for bit; uniform inputs check the error bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "node/blas.hpp"
#include "node/engine.hpp"
#include "node/recursive_gemm.hpp"
#include "node/winograd.hpp"
#include "src/core/random.hpp"

using namespace distmm;

namespace {

struct Case {
  index_t m, n, k;
};
const Case kCases[] = {{1, 1, 1}, {2, 2, 2}, {8, 8, 8}, {17, 19, 23}, {1, 33, 40}, {40, 1, 33},
                       {33, 40, 1}, {64, 64, 64}, {61, 3, 97}, {128, 96, 80}, {127, 131, 129}};
const char* kEngines[] = {"strassen", "strassen-lowmem", "winograd"};

template <class T>
T scalar(std::complex<double> v) {
  if constexpr (is_complex_v<T>) return T(real_t<T>(v.real()), real_t<T>(v.imag()));
  else return T(v.real());
}
// The ops worth testing for T: conjugate transposes only where they differ from transposes.
template <class T>
std::vector<Op> ops() {
  if constexpr (is_complex_v<T>) return {Op::N, Op::T, Op::C};
  else return {Op::N, Op::T};
}

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
    diff = std::max(diff, std::abs(std::complex<double>(C.data()[t]) - std::complex<double>(R.data()[t])));
    ref = std::max(ref, std::abs(std::complex<double>(R.data()[t])));
  }
  if (std::isnan(diff)) diff = INFINITY;
  return {diff, ref};
}

template <class T>
class StrassenEngines : public ::testing::Test {};
using Types = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
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
        for (Op ta : ops<T>())
          for (Op tb : ops<T>())
            for (auto [alpha, beta] : {std::pair<std::complex<double>, std::complex<double>>{1.0, 0.0},
                                       {-2.0, 1.0}, {3.0, -0.5}, {{1, -1}, {0, 2}}}) {
              if (!is_complex_v<T> && (alpha.imag() != 0 || beta.imag() != 0)) continue;
              auto [diff, ref] = compare<T>(*e, ta, tb, c, scalar<T>(alpha), scalar<T>(beta), Fill::integer);
              ASSERT_EQ(diff, 0.0) << name << " L=" << levels << " " << c.m << "x" << c.n << "x"
                                   << c.k << " ta=" << int(ta) << " tb=" << int(tb)
                                   << " alpha=" << alpha << " beta=" << beta;
            }
    }
}

TYPED_TEST(StrassenEngines, UniformInputsWithinTheLevelBound) {
  using T = TypeParam;
  const double u = DtypeTraits<T>::unit_roundoff * 1.01;
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
      const double per_level = std::string(name) == "winograd" ? 18.0 : 12.0;  // Higham 23.2.2
      EXPECT_LE(diff / ref, (c.k + 2) * u * std::pow(per_level, levels)) << name << " L=" << levels;
      EXPECT_EQ(e->error_growth(), std::pow(per_level, levels));
      EXPECT_GT(diff, 0.0) << name << ": a recursion that changes nothing is not recursing";
    }
}

// Winograd's top level with part of op(A) at hand (PartlyReadyA): the rest holds NaN until
// wait_rest() writes it, so a product or sum that read it early would leave NaN in C. Exact on
// integer inputs, one wait per call, whichever columns are ready: a k-half of the step, more
// than one (odd k's first owner), a third (no half: waits first), or all of them.
TYPED_TEST(StrassenEngines, WinogradStartsOnEitherHalfOfAAndWaitsOnce) {
  using T = TypeParam;
  static_assert(starts_on_half_a<WinogradSchedule>::value, "the pending schedule is the one under test");
  const Case cases[] = {{8, 8, 8}, {17, 19, 24}, {33, 40, 7}, {64, 64, 64}, {61, 3, 98}, {1, 5, 6}, {127, 131, 129}};
  for (int levels = 0; levels <= 3; ++levels)
    for (const Case& c : cases)
      for (Op ta : ops<T>())
        for (int split = 0; split < 5; ++split)  // half 0, half 1, a third, all of k, ceil(k / 2)
          for (auto [alpha, beta] : {std::pair<double, double>{1.0, 0.0}, {-2.0, 1.0}, {3.0, -0.5}}) {
            const index_t ke = c.k & ~index_t(1);
            const index_t k0 = split == 1 ? ke / 2 : 0;
            const index_t k1 = split == 0 ? ke / 2 : split == 1 ? ke : split == 2 ? c.k / 3 : split == 3 ? c.k : (c.k + 1) / 2;
            Matrix<T> A(ta == Op::N ? c.m : c.k, ta == Op::N ? c.k : c.m), B(c.k, c.n);
            Matrix<T> C(c.m, c.n), R(c.m, c.n);
            fill(A, Stream::A, Fill::integer), fill(B, Stream::B, Fill::integer);
            fill(C, Stream::C, Fill::integer), fill(R, Stream::C, Fill::integer);
            Matrix<T> whole(A.rows(), A.cols());
            std::copy(A.data(), A.data() + A.size(), whole.data());
            // op(A)'s column j outside [k0, k1): A's column j, or its row j when transposed
            auto late = [&](Matrix<T>& M, const Matrix<T>& from) {
              for (index_t j = 0; j < c.k; ++j)
                if (j < k0 || j >= k1)
                  for (index_t i = 0; i < c.m; ++i) {
                    const index_t r = ta == Op::N ? i : j, q = ta == Op::N ? j : i;
                    M.data()[r + q * M.ld()] = from.data()[r + q * from.ld()];
                  }
            };
            Matrix<T> nan(A.rows(), A.cols());
            for (index_t t = 0; t < nan.size(); ++t) nan.data()[t] = T(std::numeric_limits<real_t<T>>::quiet_NaN());
            late(A, nan);
            int waits = 0;
            PartlyReadyA pending{k0, k1, [&] { ++waits, late(A, whole); }};
            std::vector<T> arena(std::size_t(Recursion<T, WinogradSchedule>::workspace_elems(c.m, c.n, c.k, levels, 2)) + 1);
            CpuBackend be;
            Recursion<T, WinogradSchedule> rec({levels, 2}, arena.data(), be);
            rec.gemm({A.data(), A.ld(), ta, c.m, c.k}, {B.data(), B.ld(), Op::N, c.k, c.n}, {C.data(), C.ld(), c.m, c.n},
                     T(alpha), T(beta), &pending);
            blas_gemm<T>(ta, Op::N, c.m, c.n, c.k, T(alpha), whole.data(), whole.ld(), B.data(), B.ld(), T(beta),
                         R.data(), R.ld());
            EXPECT_EQ(waits, 1);
            for (index_t t = 0; t < C.size(); ++t)
              ASSERT_EQ(C.data()[t], R.data()[t]) << "L=" << levels << " " << c.m << "x" << c.n << "x" << c.k
                                                  << " ta=" << int(ta) << " ready [" << k0 << ", " << k1
                                                  << ") alpha=" << alpha << " beta=" << beta << " at " << t;
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
            using Z = std::complex<double>;
            auto [d3, r3] = compare<Z>(*e, ta == Op::T ? Op::C : ta, Op::N, c, Z(1, -2), Z(0, 1), Fill::integer);
            ASSERT_EQ(d3, 0.0) << name << " c64";
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
      EXPECT_NE(e->describe().find("levels auto, "), std::string::npos) << e->describe();
    }
  }
}

// The error bound follows the levels that ran: 50 levels asked on a 40 x 40 product with cutoff
// 8 run 3 (40 -> 20 -> 10 -> 5), and the engine says so.
TEST(StrassenEngines, ErrorGrowthFollowsTheLevelsThatRanNotThoseAsked) {
  for (const char* name : kEngines) {
    EngineOptions o;
    o.levels = 50;
    o.cutoff = 8;
    auto e = make_engine(name, o);
    auto [diff, ref] = compare<double>(*e, Op::N, Op::N, {40, 40, 40}, 1.0, 0.0, Fill::integer);
    EXPECT_EQ(diff, 0.0);
    EXPECT_EQ(e->levels_run(), 3) << name;
    EXPECT_EQ(e->error_growth(), std::pow(std::string(name) == "winograd" ? 18.0 : 12.0, 3)) << name;
    EXPECT_NE(e->describe().find("levels 50 asked, 3 ran"), std::string::npos) << e->describe();
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

// An algorithm hands whole-k products to the engines that recurse (SUMMA on GPUs, CAPS's leaf):
// the answer comes from the options alone (automatic levels rest on this process's timing,
// which may differ between ranks), the same for every shape.
TEST(StrassenEngines, PreferWholeKProductsUnlessAtLevelZero) {
  for (const char* name : kEngines)
    for (int levels : {-1, 0, 1, 3}) {
      EngineOptions o;
      o.levels = levels;
      auto e = make_engine(name, o);
      for (index_t n : {1, 64, 4096})
        EXPECT_EQ(e->prefers_whole_k(n, n, n, Dtype::f64), levels != 0) << name << " levels " << levels << " n " << n;
    }
  EXPECT_FALSE(make_engine("blas", EngineOptions{})->prefers_whole_k(4096, 4096, 4096, Dtype::f64));
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
