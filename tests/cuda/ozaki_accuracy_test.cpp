// The accuracy rule of the INT8 emulation (cuda/ozaki_accuracy.hpp) checked through its host
// twin (cuda/ozaki_host.hpp: the GPU's steps with the same shared rule and arithmetic) on
// inputs built to stress it: wide exponent ranges, rows and columns of very different norms,
// cancellation (AB much smaller than |A||B|), seed 003's matrices A = I + u v^T,
// B = I - u v^T / (1 + v^T u), and uniform ones; f32, f64, c32, c64; targets native, 1e-4 /
// 1e-10 and max. For every entry: the measured error (against a __float128 reference) at most
// the rule's bound c (|A||B|)_ij, and c at most the target; for native, the target is the native
// routine's typical error sqrt(K) u (|A||B|)_ij, below its own bound gamma_K (|A||B|)_ij, which
// OpenBLAS's product on the same inputs is also checked against. Fewer moduli than the rule
// picks break the target on these inputs, so the check can fail. The |A||B|-aware bound (one
// more product) is checked alike, and that it lowers N where the spread's bound cannot.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "cuda/ozaki_host.hpp"
#include "node/blas.hpp"
#include "ozaki_stress.hpp"

using namespace distmm;
using namespace distmm::ozaki;
using namespace distmm::stress;

namespace {

struct Target {
  const char* text;
  Accuracy acc;
};

template <class T>
void check_rule(index_t m, index_t n, index_t k, unsigned seed) {
  using R = real_t<T>;
  const bool single = std::is_same_v<R, float>;
  const long long kk = k * (is_complex_v<T> ? 2 : 1);
  const std::vector<Target> targets{{"native", {Accuracy::native, 0}},
                                    {single ? "1e-4" : "1e-10", {Accuracy::relative, single ? 1e-4 : 1e-10}},
                                    {single ? "1e-6" : "1e-14", {Accuracy::relative, single ? 1e-6 : 1e-14}},
                                    {"max", {Accuracy::max, 0}}};
  int emulated = 0;
  for (const Problem<T>& p : problems<T>(m, n, k, seed)) {
    const Exact<T> e = exact(p);
    // The native routine on the same inputs, against its own bound gamma_K |A||B|.
    std::vector<T> Cn(m * n, T(0));
    blas_gemm<T>(Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0), Cn.data(), m);
    const double native_err = worst_ratio(Cn, e), gamma_k = gamma(kk, unit_roundoff(single));
    const double native = native_target(kk, single);
    EXPECT_LE(native_err, gamma_k) << p.name;
    for (const Target& t : targets) {
      std::vector<T> C(m * n, T(0));
      const HostResult r = host_gemm<T>(t.acc, 0, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0),
                                        C.data(), m);
      const std::string what = p.name + ", target " + t.text + ", k " + std::to_string(k) + ", N " +
                               std::to_string(r.choice.N) + " " + r.choice.why;
      if (!r.emulated()) {  // declined: only where 16 moduli cannot meet the target
        EXPECT_FALSE(r.choice.why.empty()) << what;
        continue;
      }
      ++emulated;
      const double err = worst_ratio(C, e);
      // the measured error within the bound (plus the reference's own rounding, far below it)
      EXPECT_LE(err, r.choice.bound * (1 + 1e-6) + 1e-30) << what;
      if (t.acc.kind == Accuracy::native) {
        EXPECT_LE(r.choice.bound, native) << what;
        EXPECT_LE(err, native) << what << " (native measured " << native_err << ")";
      } else if (t.acc.kind == Accuracy::relative) {
        EXPECT_LE(r.choice.bound, t.acc.eps) << what;
        EXPECT_LE(err, t.acc.eps) << what;
      }
      // the fewest moduli: one fewer would not meet the target
      if (t.acc.kind != Accuracy::max && r.choice.N > 2) {
        std::vector<T> C2(m * n, T(0));
        const HostResult r2 = host_gemm<T>(t.acc, r.choice.N - 1, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m,
                                           p.B.data(), k, T(0), C2.data(), m);
        if (r2.emulated()) EXPECT_GT(r2.choice.bound, r.choice.target) << what;
        if (r.choice.from_product)  // (a forced N skips the product: its bound, checked alone)
          EXPECT_GT(product_bound(r.choice.N - 1, kk, r.product, single), r.choice.target) << what;
      }
    }
  }
  EXPECT_GT(emulated, 0);
}

TEST(OzakiAccuracy, BoundHoldsAndMeetsTheTargetF32) {
  for (index_t k : {1, 7, 64, 200}) check_rule<float>(24, 20, k, 1);
  check_rule<float>(64, 64, 64, 2);
  // one row or column, and odd counts: a row or column without a partner in the bound's pairs
  check_rule<float>(1, 5, 333, 8);
  check_rule<float>(9, 1, 1024, 9);
  check_rule<float>(13, 11, 2048, 10);
}
TEST(OzakiAccuracy, BoundHoldsAndMeetsTheTargetF64) {
  for (index_t k : {1, 7, 64, 200}) check_rule<double>(24, 20, k, 3);
  check_rule<double>(64, 64, 64, 4);
}
TEST(OzakiAccuracy, BoundHoldsAndMeetsTheTargetComplex) {
  check_rule<std::complex<float>>(20, 16, 96, 5);
  check_rule<std::complex<double>>(20, 16, 96, 6);
  check_rule<std::complex<double>>(40, 40, 40, 7);
}

// The |A||B|-aware bound on uniform inputs: it needs fewer moduli than the spread of the
// smallest entries asks for, and the measured error stays within it.
template <class T>
void check_product_bound(index_t k, int want_at_most, bool want_paired) {
  const bool single = std::is_same_v<real_t<T>, float>;
  const long long kk = k * (is_complex_v<T> ? 2 : 1);
  const index_t m = 6, n = 5;
  const Problem<T> p = problems<T>(m, n, k, 21).front();
  ASSERT_EQ(p.name, "uniform");
  const Exact<T> e = exact(p);
  std::vector<T> C(m * n, T(0));
  const HostResult r =
      host_gemm<T>({}, 0, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0), C.data(), m);
  ASSERT_TRUE(r.emulated()) << r.choice.why;
  EXPECT_TRUE(r.choice.from_product);
  EXPECT_EQ(r.choice.paired, want_paired);
  EXPECT_LE(r.choice.N, want_at_most);
  EXPECT_LE(r.choice.bound, native_target(kk, single));
  EXPECT_LE(worst_ratio(C, e), r.choice.bound);
  // the spread's bound alone: more moduli for the same target
  std::vector<T> C2(m * n, T(0));
  const HostResult spread_only = host_gemm<T>({}, r.choice.N, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m,
                                              p.B.data(), k, T(0), C2.data(), m);
  EXPECT_GT(spread_only.choice.bound, native_target(kk, single));
}
TEST(OzakiAccuracy, ProductBoundNeedsFewerModuliOnUniformInputs) {
  check_product_bound<float>(4096, 7, true);  // rows and columns in pairs: f32's margin allows it
  check_product_bound<double>(4096, 15, false);
  check_product_bound<std::complex<float>>(1500, 8, true);
}

// Pairs of rows with very different norms bound |A||B| poorly (the smaller row floors to
// zeros at the pair's exponent): the whole product follows and gives its N, which the pairs
// alone missed by three moduli here.
TEST(OzakiAccuracy, PairsFallBackToTheWholeProduct) {
  const index_t m = 64, n = 64, k = 64;
  for (const Problem<float>& p : problems<float>(m, n, k, 8)) {
    if (p.name.find("norms") == std::string::npos) continue;
    std::vector<float> C(m * n, 0.f);
    const HostResult r = host_gemm<float>({}, 0, 0, Op::N, Op::N, m, n, k, 1.f, p.A.data(), m, p.B.data(), k, 0.f,
                                          C.data(), m);
    ASSERT_TRUE(r.emulated()) << r.choice.why;
    EXPECT_TRUE(r.choice.from_product) << p.name;
    EXPECT_FALSE(r.choice.paired) << p.name;
    EXPECT_LE(r.choice.N, 7) << p.name;
    EXPECT_LE(worst_ratio(C, exact(p)), r.choice.bound) << p.name;
    return;
  }
  FAIL() << "no problem with rows and columns of different norms";
}

// The bound from pairs of rows and columns covers each member: its X and Y are at least every
// entry's own ratios against the exact |A||B| (rows of one pair at different exponents, a zero
// row, an odd column count). A zero row leaves its partner alone, so the pairs still reach the
// fewest moduli there.
TEST(OzakiAccuracy, PairedBoundCoversEachMember) {
  const index_t m = 2, n = 3, k = 4096;
  int paired = 0;
  for (int variant = 0; variant < 4; ++variant) {
    std::mt19937_64 g(40 + variant);
    std::uniform_real_distribution<double> U(-1, 1);
    std::vector<float> A(m * k), B(k * n);
    for (auto& x : A) x = float(U(g));
    for (auto& x : B) x = float(U(g));
    for (index_t h = 0; h < k; ++h) {
      if (variant == 1) A[1 + h * m] *= 0.375f;  // row 1 two binades below row 0
      if (variant == 2) A[1 + h * m] = 0;       // row 1 zero
      if (variant == 3) B[h + 1 * k] *= 0.5f, A[0 + h * m] *= 3.0f;
    }
    std::vector<float> C(m * n, 0.f);
    const HostResult r = host_gemm<float>({}, 0, 0, Op::N, Op::N, m, n, k, 1.f, A.data(), m, B.data(), k, 0.f,
                                          C.data(), m);
    ASSERT_TRUE(r.emulated()) << r.choice.why;
    if (variant == 2) EXPECT_TRUE(r.choice.paired) << "a zero row must not spoil its partner's bound";
    if (!r.choice.paired) continue;  // (the whole product followed: its statistics, checked elsewhere)
    ++paired;
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        long double ab = 0, a2 = 0, a1 = 0, b2 = 0, b1 = 0;
        for (index_t h = 0; h < k; ++h) {
          const long double a = std::fabs((long double)A[i + h * m]), b = std::fabs((long double)B[h + j * k]);
          ab += a * b, a2 += a * a, a1 += a, b2 += b * b, b1 += b;
        }
        if (ab == 0) continue;  // a zero row: no error to bound
        const long double X = (std::sqrt(a2) * b1 + std::sqrt(b2) * a1) / ab, Y = k * std::sqrt(a2 * b2) / ab;
        EXPECT_GE((long double)r.product.X * (1 + 1e-9L), X) << "variant " << variant << " i " << i << " j " << j;
        EXPECT_GE((long double)r.product.Y * (1 + 1e-9L), Y) << "variant " << variant << " i " << i << " j " << j;
      }
    EXPECT_LE(worst_ratio(C, exact(Problem<float>{"pairs", m, n, k, A, B})), r.choice.bound) << variant;
  }
  EXPECT_GE(paired, 2);
}

// Transposed and conjugated operands, alpha and beta: the same pipeline as the GPU's.
TEST(OzakiAccuracy, TransposesAlphaBeta) {
  using T = std::complex<double>;
  const index_t m = 20, n = 12, k = 33;
  std::mt19937_64 g(9);
  std::uniform_real_distribution<double> U(-1, 1);
  std::vector<T> A(m * k), B(k * n), C0(m * n);
  for (auto* v : {&A, &B, &C0})
    for (auto& x : *v) x = T(U(g), U(g));
  for (Op ta : {Op::N, Op::T, Op::C})
    for (Op tb : {Op::N, Op::T, Op::C}) {
      const index_t lda = ta == Op::N ? m : k, ldb = tb == Op::N ? k : n;
      const T alpha(0.5, -2), beta(1.5, 0.25);
      std::vector<T> C = C0, Cr = C0;
      const HostResult r = host_gemm<T>({}, 0, 0, ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta,
                                        C.data(), m);
      ASSERT_TRUE(r.emulated()) << r.choice.why;
      blas_gemm<T>(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, Cr.data(), m);
      for (index_t t = 0; t < m * n; ++t) EXPECT_LT(std::abs(C[t] - Cr[t]), 1e-12) << t;
    }
}

// The check can fail: one modulus fewer than the native rule picks gives errors above
// sqrt(K) u |A||B| on some of the stress inputs (those whose small entries meet large ones).
TEST(OzakiAccuracy, FewerModuliThanTheRuleBreakTheTarget) {
  for (bool single : {true, false}) {
    int broken = 0;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      const index_t m = 24, n = 20, k = 64;
      const double native = native_target(k, single);
      for (const Problem<T>& p : problems<T>(m, n, k, 11)) {
        const Exact<T> e = exact(p);
        std::vector<T> C(m * n, T(0));
        const HostResult r = host_gemm<T>({}, 0, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0),
                                          C.data(), m);
        if (!r.emulated() || r.choice.N < 4) continue;
        std::fill(C.begin(), C.end(), T(0));
        host_gemm<T>({}, r.choice.N - 1, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0), C.data(), m);
        broken += worst_ratio(C, e) > native;
      }
    };
    if (single) run(float());
    else run(double());
    EXPECT_GT(broken, 0) << (single ? "f32" : "f64");
  }
}

TEST(OzakiAccuracy, ParsesTargets) {
  Accuracy a;
  EXPECT_EQ(parse_accuracy("native", a), "");
  EXPECT_EQ(a.kind, Accuracy::native);
  EXPECT_EQ(parse_accuracy("max", a), "");
  EXPECT_EQ(a.kind, Accuracy::max);
  EXPECT_EQ(parse_accuracy("1e-10", a), "");
  EXPECT_EQ(a.kind, Accuracy::relative);
  EXPECT_EQ(a.eps, 1e-10);
  EXPECT_EQ(accuracy_name(a), "1e-10");
  for (const char* bad : {"", "fast", "0", "1", "-1e-3", "1e-3x", "nan"})
    EXPECT_NE(parse_accuracy(bad, a).find("use native, max or a relative error"), std::string::npos) << bad;
}

// The correctly rounded conversion of the CRT's 128-bit integers.
TEST(OzakiAccuracy, CrtConversionIsCorrectlyRounded) {
  std::mt19937_64 g(13);
  for (int t = 0; t < 100000; ++t) {
    U128 x;
    x.hi = g() >> (g() % 64), x.lo = g();
    if (t % 3 == 0) x.lo = (x.lo & ~0xfffull) | 0x400;  // near ties
    const unsigned __int128 v = (unsigned __int128)x.hi << 64 | x.lo;
    const double d = to_double(x);
    // exact: d is the nearest double to v (ties to even): |d - v| <= half an ulp of d
    const long double ld = (long double)v;  // 64 bits: exact enough to compare the halves
    const unsigned __int128 dv = (unsigned __int128)d;
    const unsigned __int128 diff = dv > v ? dv - v : v - dv;
    const double ulp = std::ldexp(1.0, std::ilogb(d) - 52);
    EXPECT_LE((double)diff, ulp / 2) << t << " " << (double)ld;
  }
}

// One Winograd level in the residues, on the host twin as the GPU takes it (LevelMode::forced):
// the same moduli and the same bits as without it on every stress input, real and complex
// (whose stacked operands' halves are Re and Im), with transposes and beta; not taken where the
// stacked halves are not multiples of 16. (The GPU's own kernels: int8_emulation_test.cpp.)
template <class T>
void level_is_identical_on_the_host(Op ta, Op tb, index_t m, index_t n, index_t k, bool expect_level) {
  for (const Problem<T>& p : problems<T>(m, n, k, 23)) {
    const auto [A, B] = stored_as(p, ta, tb);
    const index_t lda = ta == Op::N ? m : k, ldb = tb == Op::N ? k : n;
    std::vector<T> C0(m * n), C1(m * n);
    for (std::size_t t = 0; t < C0.size(); ++t) C0[t] = C1[t] = make<T>(std::sin(double(t)), std::cos(double(t)));
    const T alpha = make<T>(1.25, -0.5), beta = make<T>(0.5, 0.25);
    const HostResult r0 = host_gemm<T>({}, 0, 0, ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C0.data(),
                                       m, LevelMode::never);
    const HostResult r1 = host_gemm<T>({}, 0, 0, ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C1.data(),
                                       m, LevelMode::forced);
    ASSERT_EQ(r0.choice.N, r1.choice.N) << p.name;
    EXPECT_FALSE(r0.residue_level);
    if (!r1.emulated()) continue;  // (declined: C untouched either way)
    EXPECT_EQ(r1.residue_level, expect_level) << p.name;
    for (std::size_t t = 0; t < C0.size(); ++t) ASSERT_EQ(C0[t], C1[t]) << p.name << " " << t;
  }
  // auto: only from 16384 on
  EXPECT_FALSE(residue_level(LevelMode::automatic, 8192, 32768, 32768));
  EXPECT_TRUE(residue_level(LevelMode::automatic, 16384, 32768, 16384));
  EXPECT_FALSE(residue_level(LevelMode::forced, 32, 48, 32));
  // two levels: real products with R, W and Kp multiples of 64, in auto from 32768 on
  EXPECT_EQ(residue_levels(LevelMode::automatic, 32768, 32768, 32768, false), 2);
  EXPECT_EQ(residue_levels(LevelMode::automatic, 16384, 32768, 32768, false), 1);
  EXPECT_EQ(residue_levels(LevelMode::automatic, 32768, 32768, 32768, true), 1);   // complex: one
  EXPECT_EQ(residue_levels(LevelMode::automatic, 32768, 32768 + 32, 32768, false), 1);
  EXPECT_EQ(residue_levels(LevelMode::automatic, 8192, 8192, 8192, false), 0);
  EXPECT_EQ(residue_levels(LevelMode::forced, 64, 64, 64, false), 1);
  EXPECT_EQ(residue_levels(LevelMode::forced_two, 64, 128, 192, false), 2);
  EXPECT_EQ(residue_levels(LevelMode::forced_two, 64, 96, 192, false), 1);  // 96: one level
  EXPECT_EQ(residue_levels(LevelMode::forced_two, 64, 48, 192, false), 0);
  EXPECT_EQ(residue_levels(LevelMode::never, 65536, 65536, 65536, false), 0);
}

TEST(OzakiHost, AWinogradLevelInTheResiduesGivesTheSameBits) {
  level_is_identical_on_the_host<double>(Op::N, Op::N, 32, 64, 96, true);
  level_is_identical_on_the_host<float>(Op::T, Op::N, 64, 32, 32, true);
  level_is_identical_on_the_host<std::complex<float>>(Op::N, Op::T, 16, 32, 64, true);
  level_is_identical_on_the_host<std::complex<double>>(Op::T, Op::N, 32, 16, 30, true);  // k padded to 32
  level_is_identical_on_the_host<double>(Op::N, Op::N, 32, 32, 40, false);  // Kp 48: halves of 24
  level_is_identical_on_the_host<std::complex<float>>(Op::N, Op::N, 24, 16, 32, false);  // stacked rows 48
}

}  // namespace
