// The INT8-emulated GPU engines (gpu-ozaki, gpu-*-ozaki) against a long-double reference: every
// entry within the emulation's normwise bound (sqrt(k) + 2) u ||a_i|| ||b_j|| on odd shapes,
// transposes and every dtype; fewer moduli than the rule picks break that bound (so the check
// can fail); wide exponent ranges take more moduli or run natively; NaN inputs run natively;
// beta = 0 does not read C; k beyond one exact INT8 sum is cut into chunks (these at accuracy
// max, the earlier rule); and the accuracy targets (native, relative, max) on the stress inputs
// of ozaki_stress.hpp: every entry within the target times |A||B|. Skipped, visibly, where no GPU
// is seen.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <complex>
#include <random>

#ifdef DISTMM_HAVE_CUDA
#include "cuda/cuda_util.hpp"
#endif

#include "cuda/device_info.hpp"
#include "cuda/ozaki_accuracy.hpp"
#include "node/engine.hpp"
#include "src/core/random.hpp"
#include "cuda/ozaki_host.hpp"
#include "ozaki_stress.hpp"

using namespace distmm;

namespace {

#define REQUIRE_GPU()                                                                     \
  if (gpu_count() == 0)                                                                   \
    GTEST_SKIP() << "no GPU visible (" << gpu_summary() << "): emulated engine tests skipped"

template <class T>
using Ref = std::conditional_t<is_complex_v<T>, std::complex<long double>, long double>;

template <class T>
T at(const Matrix<T>& X, Op op, index_t i, index_t h) {  // op(X)(i, h)
  if (op == Op::N) return X(i, h);
  const T x = X(h, i);
  if constexpr (is_complex_v<T>) return op == Op::C ? std::conj(x) : x;
  else return x;
}

struct Worst {
  double ratio = 0;  // max over entries of |C - ref| / ((sqrt(k) + 2) u ||a_i|| ||b_j||)
  bool nan = false;
};

// C = alpha op(A) op(B) + beta C0 by the engine, against the long-double product.
template <class T>
Worst check(Engine& e, Op ta, Op tb, index_t m, index_t n, index_t k, Fill fill, double spread = 0,
            T beta = T(0), bool nan_in_c = false) {
  Matrix<T> A(ta == Op::N ? m : k, ta == Op::N ? k : m), B(tb == Op::N ? k : n, tb == Op::N ? n : k), C(m, n);
  fill_random_block(A.view(), 0, 0, 3, Stream::A, fill);
  fill_random_block(B.view(), 0, 0, 3, Stream::B, fill);
  fill_random_block(C.view(), 0, 0, 3, Stream::C, fill);
  if (spread > 0) {  // entries times 2^s, s uniform in [-spread, spread]: a wide exponent range
    std::mt19937 g(5);
    std::uniform_int_distribution<int> s(-int(spread), int(spread));
    for (index_t t = 0; t < A.size(); ++t) A.data()[t] *= real_t<T>(std::ldexp(1.0, s(g)));
    for (index_t t = 0; t < B.size(); ++t) B.data()[t] *= real_t<T>(std::ldexp(1.0, s(g)));
  }
  if (nan_in_c) C.fill(T(std::nan("")));
  Matrix<T> C0(m, n);
  std::copy(C.data(), C.data() + C.size(), C0.data());
  const T alpha = T(1.5);
  e.gemm(ta, tb, m, n, k, alpha, A.data(), A.ld(), B.data(), B.ld(), beta, C.data(), C.ld());
  const double u = DtypeTraits<T>::unit_roundoff;
  std::vector<long double> na(m, 0), nb(n, 0);
  for (index_t i = 0; i < m; ++i)
    for (index_t h = 0; h < k; ++h) na[i] += std::norm(Ref<T>(at(A, ta, i, h)));
  for (index_t j = 0; j < n; ++j)
    for (index_t h = 0; h < k; ++h) nb[j] += std::norm(Ref<T>(at(B, tb, h, j)));
  Worst w;
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      Ref<T> r = 0;
      for (index_t h = 0; h < k; ++h) r += Ref<T>(at(A, ta, i, h)) * Ref<T>(at(B, tb, h, j));
      r *= Ref<T>(alpha);
      if (beta != T(0)) r += Ref<T>(beta) * Ref<T>(C0(i, j));
      const double d = double(std::abs(Ref<T>(C(i, j)) - r));
      if (std::isnan(d)) w.nan = true;
      // |alpha| (sqrt(kk) + 2) u ||a_i|| ||b_j||, kk = k real entries (2k for complex: sqrt(2)),
      // plus the roundings of the output and of beta C0.
      const double stacked = is_complex_v<T> ? std::sqrt(2.0) : 1.0;
      const double scale = std::abs(std::complex<double>(alpha)) * stacked * (std::sqrt(double(k)) + 2) * u *
                               double(std::sqrt(na[i] * nb[j])) +
                           2 * u * (double(std::abs(r)) + (beta == T(0) ? 0.0 : std::abs(std::complex<double>(beta)) *
                                                                                    std::abs(std::complex<double>(C0(i, j)))));
      w.ratio = std::max(w.ratio, scale > 0 ? d / scale : (d > 0 ? INFINITY : 0));
    }
  return w;
}

template <class T>
void accuracy_cases(const char* engine, int levels) {
  EngineOptions o;
  o.levels = levels;
  o.accuracy = "max";
  auto e = make_engine(engine, o);
  const index_t shapes[][3] = {{1, 1, 1}, {1, 40, 97}, {97, 1, 33}, {61, 53, 211}, {128, 130, 64}};
  const double growth = std::pow(12.0, levels);
  for (const auto& s : shapes)
    for (Op ta : {Op::N, Op::T, Op::C})
      for (Op tb : {Op::N, Op::C}) {
        const Worst w = check<T>(*e, ta, tb, s[0], s[1], s[2], Fill::uniform, 0, T(0.5));
        EXPECT_FALSE(w.nan);
        EXPECT_LE(w.ratio, growth) << engine << " " << DtypeTraits<T>::name << " L" << levels << " "
                                   << s[0] << "x" << s[1] << "x" << s[2] << " " << to_char(ta) << to_char(tb);
      }
  EXPECT_NE(e->describe().find("moduli"), std::string::npos) << e->describe();
}

TEST(Int8Emulation, EveryEntryWithinTheNormwiseBound) {
  REQUIRE_GPU();
  accuracy_cases<float>("gpu-ozaki", 0);
  accuracy_cases<double>("gpu-ozaki", 0);
  accuracy_cases<std::complex<float>>("gpu-ozaki", 0);
  accuracy_cases<std::complex<double>>("gpu-ozaki", 0);
}

TEST(Int8Emulation, StrassenAndWinogradAboveEmulatedLeaves) {
  REQUIRE_GPU();
  for (const char* name : {"gpu-winograd-ozaki", "gpu-strassen-ozaki"})
    for (int L : {1, 2}) {
      EngineOptions o;
      o.levels = L;
      o.accuracy = "max";
      auto e = make_engine(name, o);
      const Worst w = check<float>(*e, Op::N, Op::N, 257, 263, 269, Fill::uniform);
      EXPECT_LE(w.ratio, std::pow(12.0, L)) << name << " L" << L;
      EXPECT_EQ(e->levels_run(), L) << name;
      EXPECT_EQ(e->error_growth(), std::pow(std::string(name) == "gpu-winograd-ozaki" ? 18.0 : 12.0, L)) << name;
      const Worst wz = check<std::complex<double>>(*e, Op::C, Op::T, 131, 67, 129, Fill::uniform);
      EXPECT_LE(wz.ratio, std::pow(12.0, L)) << name << " c64 L" << L;
    }
}

TEST(Int8Emulation, FewerModuliThanTheRuleBreakTheBound) {
  REQUIRE_GPU();
  EngineOptions o;
  o.moduli = 3;  // about 11 bits per operand
  auto e = make_engine("gpu-ozaki", o);
  EXPECT_GT(check<float>(*e, Op::N, Op::N, 64, 64, 256, Fill::uniform).ratio, 4.0);
  EXPECT_NE(e->describe().find("3 moduli"), std::string::npos) << e->describe();
}

TEST(Int8Emulation, WideExponentRangesTakeMoreModuliOrRunNatively) {
  REQUIRE_GPU();
  {
    EngineOptions o;
    o.accuracy = "max";
    auto e = make_engine("gpu-ozaki", o);
    const Worst w = check<float>(*e, Op::N, Op::T, 60, 70, 300, Fill::uniform, 20);
    EXPECT_LE(w.ratio, 1.0);
    EXPECT_EQ(e->describe().find("run natively"), std::string::npos) << e->describe();
    EXPECT_EQ(e->describe().find(" 7 moduli"), std::string::npos) << "more moduli expected: " << e->describe();
  }
  {
    EngineOptions o;
    o.accuracy = "max";
    auto e = make_engine("gpu-ozaki", o);
    const Worst w = check<double>(*e, Op::N, Op::N, 60, 70, 300, Fill::uniform, 40);
    EXPECT_LE(w.ratio, std::sqrt(300.0));  // run natively: the classical bound k u |A||B| <= k u ||a|| ||b||
    EXPECT_NE(e->describe().find("run natively: exponent range too wide"), std::string::npos) << e->describe();
  }
}

TEST(Int8Emulation, NonFiniteInputsRunNativelyAndBetaZeroDoesNotReadC) {
  REQUIRE_GPU();
  auto e = make_engine("gpu-ozaki", {});
  const Worst w = check<double>(*e, Op::N, Op::N, 33, 35, 37, Fill::uniform, 0, 0.0, /*nan_in_c=*/true);
  EXPECT_FALSE(w.nan);
  EXPECT_LE(w.ratio, 1.0);
  Matrix<float> A(4, 4), B(4, 4), C(4, 4);
  A.fill(1.f), B.fill(1.f), C.fill(0.f);
  A(2, 1) = std::nanf("");
  e->gemm(Op::N, Op::N, 4, 4, 4, 1.f, A.data(), 4, B.data(), 4, 0.f, C.data(), 4);
  for (index_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(std::isnan(C(2, j)));
    EXPECT_EQ(C(0, j), 4.f);
  }
  EXPECT_NE(e->describe().find("NaN or Inf"), std::string::npos) << e->describe();
}

TEST(Int8Emulation, LongInnerDimensionsAreCutIntoExactChunks) {
  REQUIRE_GPU();
  auto e = make_engine("gpu-ozaki", {});
  const Worst w = check<float>(*e, Op::T, Op::N, 3, 2, 140000, Fill::uniform);
  EXPECT_LE(w.ratio, 1.0);
  const Worst wi = check<double>(*e, Op::N, Op::N, 2, 3, 131100, Fill::integer);
  EXPECT_EQ(wi.ratio, 0.0);  // integer inputs: exact
  // A NaN in a later k-chunk: every chunk is checked before C is written, so the whole product
  // runs natively (the NaN reaches C's row, the other rows are exact).
  const index_t k = 140000;
  Matrix<double> A(2, k), B(k, 2), C(2, 2);
  A.fill(1.0), B.fill(1.0), C.fill(0.0);
  A(1, 135000) = std::nan("");
  e->gemm(Op::N, Op::N, 2, 2, k, 1.0, A.data(), 2, B.data(), k, 0.0, C.data(), 2);
  EXPECT_EQ(C(0, 0), double(k));
  EXPECT_TRUE(std::isnan(C(1, 1)));
  EXPECT_NE(e->describe().find("NaN or Inf among the operands (k-chunk at 131056)"), std::string::npos) << e->describe();
}

TEST(Int8Emulation, TooFewForcedModuliForKAreDeclinedNotRun) {
  REQUIRE_GPU();
  EngineOptions o;
  o.moduli = 2;  // the bound sqrt(M / 2) - sqrt(k) / 2 is gone at k = 140000
  auto e = make_engine("gpu-ozaki", o);
  const Worst w = check<float>(*e, Op::N, Op::N, 3, 2, 140000, Fill::uniform);
  EXPECT_LE(w.ratio, std::sqrt(140000.0));  // run natively
  EXPECT_NE(e->describe().find("moduli keep fewer than 4 bits"), std::string::npos) << e->describe();
}

// The accuracy targets on the GPU: at native every entry within sqrt(K) u (|A||B|)_ij (the native
// routine's typical error), at a relative eps within eps (|A||B|)_ij, where emulated; where
// declined cuBLAS ran, within gamma_K; the report names the target, the moduli and the bound.
template <class T>
void gpu_targets(index_t m, index_t n, index_t k) {
  using namespace stress;
  const bool single = std::is_same_v<real_t<T>, float>;
  const long long kk = k * (is_complex_v<T> ? 2 : 1);
  const double gamma_k = ozaki::gamma(kk, ozaki::unit_roundoff(single));
  int emulated = 0;
  for (const std::string target : {"native", single ? "1e-4" : "1e-10", "max"})
    for (const Problem<T>& p : problems<T>(m, n, k, 21)) {
      EngineOptions o;
      o.accuracy = target;
      auto e = make_engine("gpu-ozaki", o);
      std::vector<T> C(m * n, T(0));
      e->gemm(Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0), C.data(), m);
      const double err = worst_ratio(C, exact(p));
      const std::string d = e->describe();
      const bool ran = d.find("run natively") == std::string::npos;
      emulated += ran;
      if (target == "native") EXPECT_LE(err, ran ? ozaki::native_target(kk, single) : gamma_k) << p.name << " " << d;
      else if (target != "max") EXPECT_LE(err, ran ? std::atof(target.c_str()) : gamma_k) << p.name << " " << d;
      if (ran) EXPECT_NE(d.find("accuracy " + target), std::string::npos) << d;
      if (ran) EXPECT_NE(d.find("|A||B|"), std::string::npos) << d;
    }
  EXPECT_GT(emulated, 0);
}

// The |A||B|-aware bound on the GPU makes the host twin's choice (the same statistics and rule),
// and says so in the report.
template <class T>
void gpu_matches_host_twin(index_t m, index_t n, index_t k) {
  const stress::Problem<T> p = stress::problems<T>(m, n, k, 21).front();  // uniform
  std::vector<T> C(m * n, T(0)), Ch(m * n, T(0));
  auto e = make_engine("gpu-ozaki", EngineOptions{});
  e->gemm(Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(), k, T(0), C.data(), m);
  const ozaki::HostResult h = ozaki::host_gemm<T>({}, 0, 0, Op::N, Op::N, m, n, k, T(1), p.A.data(), m, p.B.data(),
                                                  k, T(0), Ch.data(), m);
  ASSERT_TRUE(h.emulated()) << h.choice.why;
  ASSERT_TRUE(h.choice.from_product);
  const std::string d = e->describe();
  EXPECT_NE(d.find(" " + std::to_string(h.choice.N) + " moduli"), std::string::npos) << d;
  EXPECT_NE(d.find("bounded from their |A||B|"), std::string::npos) << d;
  char bound[32];  // the same X and Y, so the same bound, as the report prints it
  std::snprintf(bound, sizeof bound, "bound %.2e |A||B|", h.choice.bound);
  EXPECT_NE(d.find(bound), std::string::npos) << d << " (host twin: " << bound << ")";
  EXPECT_EQ(d.find("in pairs") != std::string::npos, h.choice.paired) << d;
  for (index_t t = 0; t < m * n; ++t) EXPECT_EQ(C[t], Ch[t]) << t;  // the same integers, the same rounding
}
TEST(Int8Emulation, ProductBoundMatchesTheHostTwin) {
  REQUIRE_GPU();
  gpu_matches_host_twin<float>(33, 17, 4096);
  gpu_matches_host_twin<float>(64, 48, 16384);
  gpu_matches_host_twin<double>(20, 9, 3000);
  gpu_matches_host_twin<std::complex<float>>(12, 10, 2048);
  gpu_matches_host_twin<std::complex<float>>(21, 7, 1500);
}

// The statistics of f64 rows and columns in one pass (outer_stats: sums at each thread's largest
// exponent so far, rescaled) or two (where the smallest entries' squares would be subnormal):
// the host twin's exponents and bits, with 16 moduli forced so that the rule declines nothing.
// Rows: 900 binades (the second pass), magnitudes growing along k (a rescale at each new
// exponent), subnormal entries, uniform; op(A) read either way round.
TEST(Int8Emulation, DoublePrecisionStatisticsInOnePassKeepTheHostTwinsBits) {
  REQUIRE_GPU();
  const index_t m = 40, n = 24, k = 700;
  std::mt19937 g(11);
  std::uniform_real_distribution<double> uni(-1, 1);
  auto entry = [&](index_t o, index_t h) {
    switch (o % 4) {
      case 0: return uni(g) * std::ldexp(1.0, -int(h * 900 / k));
      case 1: return uni(g) * std::ldexp(1.0, int(h * 40 / k) - 40);
      case 2: return uni(g) * std::ldexp(1.0, h % 3 == 0 ? -1070 : -1040);
      default: return uni(g);
    }
  };
  for (Op ta : {Op::N, Op::T}) {
    std::vector<double> A(m * k), B(k * n), C(m * n, 0.0), Ch(m * n, 0.0);
    for (index_t i = 0; i < m; ++i)
      for (index_t h = 0; h < k; ++h) A[ta == Op::N ? i + h * m : h + i * k] = entry(i, h);
    for (index_t j = 0; j < n; ++j)
      for (index_t h = 0; h < k; ++h) B[h + j * k] = entry(j + 1, h);
    const index_t lda = ta == Op::N ? m : k;
    EngineOptions o;
    o.moduli = 16;
    auto e = make_engine("gpu-ozaki", o);
    e->gemm(ta, Op::N, m, n, k, 1.0, A.data(), lda, B.data(), k, 0.0, C.data(), m);
    const ozaki::HostResult h = ozaki::host_gemm<double>({}, 16, 0, ta, Op::N, m, n, k, 1.0, A.data(), lda, B.data(),
                                                         k, 0.0, Ch.data(), m);
    ASSERT_TRUE(h.emulated()) << h.choice.why;
    EXPECT_EQ(e->describe().find("run natively"), std::string::npos) << e->describe();
    for (index_t t = 0; t < m * n; ++t) ASSERT_EQ(C[t], Ch[t]) << t << " " << to_char(ta);
  }
}

// A workspace cap (DISTMM_EMULATION_WORKSPACE) small enough for row blocks and column panels,
// in the bound's product and the moduli's: the same integers, so bit-identical to the uncapped
// product, op(A) and op(B) read either way round.
template <class T>
void capped_is_identical(Op ta, Op tb, index_t m, index_t n, index_t k) {
  const auto [A, B] = stress::stored_as(stress::problems<T>(m, n, k, 31).front(), ta, tb);  // uniform
  const index_t lda = ta == Op::N ? m : k, ldb = tb == Op::N ? k : n;
  std::vector<T> C1(m * n, T(0)), C2(m * n, T(0));
  auto whole = make_engine("gpu-ozaki", EngineOptions{});
  whole->gemm(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C1.data(), m);
  ::setenv("DISTMM_EMULATION_WORKSPACE", "2M", 1);
  auto capped = make_engine("gpu-ozaki", EngineOptions{});
  capped->gemm(ta, tb, m, n, k, T(1), A.data(), lda, B.data(), ldb, T(0), C2.data(), m);
  ::unsetenv("DISTMM_EMULATION_WORKSPACE");
  const std::string d = capped->describe();
  EXPECT_EQ(d.find("run natively"), std::string::npos) << d;
  EXPECT_EQ(d, whole->describe());
  for (index_t t = 0; t < m * n; ++t) ASSERT_EQ(C1[t], C2[t]) << t << " " << d;
}
TEST(Int8Emulation, RowBlocksAndPanelsUnderAWorkspaceCap) {
  REQUIRE_GPU();
  capped_is_identical<double>(Op::N, Op::N, 300, 200, 500);
  capped_is_identical<double>(Op::T, Op::T, 301, 97, 512);
  capped_is_identical<float>(Op::T, Op::N, 515, 260, 700);
  capped_is_identical<std::complex<float>>(Op::N, Op::T, 170, 150, 300);
  capped_is_identical<float>(Op::N, Op::N, 1001, 37, 1500);  // few columns: row blocks, the bound's pairs too
}

// One exact Winograd level in the residues (DISTMM_EMULATION_LEVEL=1: seven quadrant products
// per modulus): the same integers, so bit for bit the product without it (=0), and the report
// says whether it ran. Products whose stacked rows and columns (twice the complex ones) and k are
// multiples of 32 take it; a workspace cap makes blocks and panels of which only some can; k or
// rows whose halves are not multiples of 16 run without it. With `setting` "2" (two levels where
// the stacked rows, columns and k are multiples of 64, real products only, else one), `two`
// says whether the report must name two levels (1), must not (0), or either (-1: a cap's blocks).
template <class T>
void level_is_identical(Op ta, Op tb, index_t m, index_t n, index_t k, bool expect_level, const char* cap = nullptr,
                        int moduli = 0, T beta = T(0), const char* setting = "1", int two = 0) {
  const auto [A, B] = stress::stored_as(stress::problems<T>(m, n, k, 17).front(), ta, tb);  // uniform
  const index_t lda = ta == Op::N ? m : k, ldb = tb == Op::N ? k : n;
  auto with = [&](const char* level, std::string& d) {
    std::vector<T> C(std::size_t(m) * n);
    for (std::size_t t = 0; t < C.size(); ++t) C[t] = T(real_t<T>(std::sin(double(t))));
    ::setenv("DISTMM_EMULATION_LEVEL", level, 1);
    if (cap) ::setenv("DISTMM_EMULATION_WORKSPACE", cap, 1);
    EngineOptions o;
    o.moduli = moduli;
    auto e = make_engine("gpu-ozaki", o);
    e->gemm(ta, tb, m, n, k, T(1.25), A.data(), lda, B.data(), ldb, beta, C.data(), m);
    ::unsetenv("DISTMM_EMULATION_LEVEL");
    ::unsetenv("DISTMM_EMULATION_WORKSPACE");
    d = e->describe();
    return C;
  };
  std::string d0, d1;
  const std::vector<T> C0 = with("0", d0), C1 = with(setting, d1);
  const std::string said = "with an exact Winograd level in the residues";
  EXPECT_EQ(d0.find(said), std::string::npos) << d0;
  EXPECT_EQ(d1.find(said) != std::string::npos, expect_level) << d1;
  if (two >= 0) EXPECT_EQ(d1.find(" with two)") != std::string::npos, two == 1) << d1;
  EXPECT_EQ(d1.find("run natively"), std::string::npos) << d1;
  for (std::size_t t = 0; t < C0.size(); ++t)
    ASSERT_EQ(C0[t], C1[t]) << t << " of " << m << "x" << n << "x" << k << " " << to_char(ta) << to_char(tb) << " " << d1;
}

TEST(Int8Emulation, AWinogradLevelInTheResiduesGivesTheSameBits) {
  REQUIRE_GPU();
  level_is_identical<double>(Op::N, Op::N, 64, 96, 160, true);
  level_is_identical<float>(Op::T, Op::N, 128, 64, 96, true);
  level_is_identical<double>(Op::T, Op::T, 96, 160, 64, true, nullptr, 0, 0.5);
  level_is_identical<float>(Op::N, Op::T, 32, 32, 32, true, nullptr, 0, -2.0f);
  level_is_identical<float>(Op::N, Op::N, 256, 256, 16384, true);  // the bound's product in pairs
  level_is_identical<double>(Op::N, Op::N, 512, 288, 4096, true);   // 14 moduli: the split CRT
  // a cap: row blocks and panels of which only some are halved (f32 7 moduli: blocks of 128 x 80
  // rows and columns, the last panel 64 wide; f64 14 moduli: 160 x 48, the last panel 32), with
  // the level's workspace beside them
  level_is_identical<float>(Op::N, Op::T, 1024, 544, 1504, true, "2752512", 7);
  level_is_identical<double>(Op::T, Op::N, 640, 320, 512, true, "1835008", 14);
  // complex: the stacked operands' halves are the real and imaginary parts
  level_is_identical<std::complex<float>>(Op::N, Op::C, 64, 64, 64, true);
  level_is_identical<std::complex<double>>(Op::C, Op::T, 48, 80, 96, true, nullptr, 0, std::complex<double>(0.5, -1));
  // without it: k's half not a multiple of 16, rows' half not a multiple of 16 (real and complex)
  level_is_identical<double>(Op::N, Op::N, 64, 64, 80, false);
  level_is_identical<float>(Op::N, Op::N, 80, 64, 64, false);
  level_is_identical<std::complex<float>>(Op::N, Op::N, 40, 64, 64, false);
}

// Two levels (DISTMM_EMULATION_LEVEL=2: 49 products per modulus, a quarter of the rows, columns
// and k each): the same bits as none, f32 (7 moduli, one 64-bit CRT word) and f64 (14, split),
// every op, beta; blocks and panels under a cap, of which some take two levels, some one; one
// level where a dimension is a multiple of 32 but not of 64, and for complex products.
TEST(Int8Emulation, TwoWinogradLevelsInTheResiduesGiveTheSameBits) {
  REQUIRE_GPU();
  level_is_identical<double>(Op::N, Op::N, 128, 192, 256, true, nullptr, 0, 0.0, "2", 1);
  level_is_identical<float>(Op::T, Op::N, 256, 128, 192, true, nullptr, 0, 0.0f, "2", 1);
  level_is_identical<double>(Op::T, Op::T, 192, 64, 128, true, nullptr, 0, 0.5, "2", 1);
  level_is_identical<float>(Op::N, Op::T, 64, 64, 64, true, nullptr, 0, -2.0f, "2", 1);
  level_is_identical<float>(Op::N, Op::N, 256, 256, 16384, true, nullptr, 0, 0.0f, "2", 1);  // the bound in pairs
  level_is_identical<double>(Op::N, Op::N, 512, 320, 4096, true, nullptr, 0, 0.0, "2", 1);   // 14 moduli
  // (caps: blocks of 256 rows (two levels) and the last of 224 (one), panels of 320; f64: blocks
  // of 192 and the last of 160, panels of 192)
  level_is_identical<float>(Op::N, Op::T, 992, 640, 1024, true, "7864320", 7, 0.0f, "2", -1);
  level_is_identical<double>(Op::T, Op::N, 736, 384, 512, true, "4718592", 14, 0.25, "2", -1);
  level_is_identical<double>(Op::N, Op::N, 96, 128, 128, true, nullptr, 0, 0.0, "2", 0);  // 96: one level
  level_is_identical<float>(Op::N, Op::N, 128, 128, 96, true, nullptr, 0, 0.0f, "2", 0);  // k 96: one
  level_is_identical<std::complex<double>>(Op::N, Op::C, 64, 64, 128, true, nullptr, 0, std::complex<double>(0),
                                           "2", 0);  // complex: one
}

// The streams change no bit: the passes one after another on the caller's stream (under
// DISTMM_EMULATION_PROFILE=1), against the products on their own stream beside the folds, with
// SMs left free for them or none (DISTMM_EMULATION_SIDE_SMS), in one panel or in row blocks and
// panels under a cap. A missing wait between the streams would read a buffer half made.
template <class T>
void streams_are_identical(Op ta, Op tb, index_t m, index_t n, index_t k, const char* cap = nullptr,
                           bool level = true, const char* levels = "1") {
  const auto [A, B] = stress::stored_as(stress::problems<T>(m, n, k, 29).front(), ta, tb);  // uniform
  const index_t lda = ta == Op::N ? m : k, ldb = tb == Op::N ? k : n;
  auto with = [&](const char* profile, const char* side) {
    std::vector<T> C(std::size_t(m) * n);
    for (std::size_t t = 0; t < C.size(); ++t) C[t] = T(real_t<T>(std::cos(double(t))));
    ::setenv("DISTMM_EMULATION_LEVEL", level ? levels : "0", 1);
    ::setenv("DISTMM_EMULATION_PROFILE", profile, 1);
    ::setenv("DISTMM_EMULATION_SIDE_SMS", side, 1);
    if (cap) ::setenv("DISTMM_EMULATION_WORKSPACE", cap, 1);
    auto e = make_engine("gpu-ozaki", EngineOptions{});
    e->gemm(ta, tb, m, n, k, T(0.75), A.data(), lda, B.data(), ldb, T(0.5), C.data(), m);
    for (const char* v : {"DISTMM_EMULATION_LEVEL", "DISTMM_EMULATION_PROFILE", "DISTMM_EMULATION_SIDE_SMS",
                          "DISTMM_EMULATION_WORKSPACE"})
      ::unsetenv(v);
    EXPECT_EQ(e->describe().find("with an exact Winograd level in the residues") != std::string::npos, level)
        << e->describe();
    return C;
  };
  const std::vector<T> serial = with("1", "auto");
  for (const char* side : {"auto", "0", "8", "64"}) {
    const std::vector<T> C = with("0", side);
    for (std::size_t t = 0; t < C.size(); ++t)
      ASSERT_EQ(serial[t], C[t]) << t << " of " << m << "x" << n << "x" << k << " side SMs " << side;
  }
}

TEST(Int8Emulation, TheStreamsChangeNoBit) {
  REQUIRE_GPU();
  streams_are_identical<double>(Op::N, Op::N, 512, 480, 1024);  // 14 moduli
  streams_are_identical<float>(Op::T, Op::N, 1024, 1024, 2048);  // 7 moduli
  streams_are_identical<std::complex<double>>(Op::N, Op::C, 256, 160, 512);
  streams_are_identical<float>(Op::N, Op::T, 1024, 544, 1504, "2752512");  // blocks and panels
  streams_are_identical<double>(Op::T, Op::N, 640, 320, 512, "1835008");
  streams_are_identical<double>(Op::N, Op::T, 301, 97, 512, nullptr, false);  // one product per modulus
  streams_are_identical<std::complex<float>>(Op::N, Op::N, 170, 150, 300, nullptr, false);
  streams_are_identical<double>(Op::N, Op::N, 512, 512, 1024, nullptr, true, "2");  // two levels
  streams_are_identical<float>(Op::T, Op::N, 1024, 1024, 2048, nullptr, true, "2");
}

#ifdef DISTMM_HAVE_CUDA
// op(A) times B's columns in parts, one device call per part (cuboid's first step): with
// ReuseOfA (keep, kept) the emulation takes op(A)'s statistics, magnitudes and slices from the
// part before. The same integers, so bit for bit what an engine without it gives; where the
// parts' moduli differ, op(A) is another buffer, or the slices do not fit, it derives them anew.
template <class T>
DeviceBuffer<T> on_device(const std::vector<T>& h) {
  DeviceBuffer<T> d(h.size());
  EXPECT_EQ(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

// C's parts op(A) B(:, part) by `e`; `second_a`: the second part reads that buffer instead (other
// values) while it says kept, which the engine must notice.
template <class T>
std::vector<T> in_parts(Engine& e, Op ta, index_t m, index_t k, const std::vector<index_t>& widths,
                        const std::vector<T>& A, const std::vector<T>& B, bool reuse,
                        const std::vector<T>* second_a = nullptr) {
  index_t n = 0;
  for (index_t w : widths) n += w;
  std::vector<T> C(std::size_t(m) * n, T(0));
  DeviceBuffer<T> a = on_device(A), b = on_device(B), c = on_device(C), a2 = on_device(second_a ? *second_a : A);
  const index_t lda = ta == Op::N ? m : k;
  const T one(1), zero(0);
  index_t j0 = 0;
  for (std::size_t q = 0; q < widths.size(); ++q) {
    const ReuseOfA r = reuse ? ReuseOfA{q + 1 < widths.size(), q > 0} : ReuseOfA{};
    const T* Aq = q == 1 && second_a ? a2.get() : a.get();
    e.gemm_device_call({dtype_of<T>(), ta, Op::N, m, widths[q], k, &one, Aq, lda, b.get() + j0 * k, k, &zero,
                        c.get() + j0 * m, m, r});
    j0 += widths[q];
  }
  EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(e.device_queue())), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(C.data(), c.get(), C.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return C;
}

// C's layout changes no bit: columns at multiples of 16 bytes (ldc = m, where the CRT writes four
// entries in one 16-byte access) and not (one entry in, ldc = m + 1: one at a time), with beta.
template <class T>
void layout_is_identical(index_t m, index_t n, index_t k) {
  const stress::Problem<T> p = stress::problems<T>(m, n, k, 23).front();  // uniform
  auto e = make_engine("gpu-ozaki", EngineOptions{});
  DeviceBuffer<T> a = on_device(p.A), b = on_device(p.B);
  auto with = [&](index_t offset, index_t ldc) {
    std::vector<T> C(std::size_t(offset + ldc * n));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) C[offset + i + j * ldc] = T(std::sin(double(i + 7 * j)));
    DeviceBuffer<T> c = on_device(C);
    const T alpha(1.25), beta(0.5);
    e->gemm_device_call({dtype_of<T>(), Op::N, Op::N, m, n, k, &alpha, a.get(), m, b.get(), k, &beta,
                         c.get() + offset, ldc, ReuseOfA{}});
    EXPECT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(e->device_queue())), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(C.data(), c.get(), C.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<T> out;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) out.push_back(C[offset + i + j * ldc]);
    return out;
  };
  const std::vector<T> C0 = with(0, m), C1 = with(1, m + 1);
  for (std::size_t t = 0; t < C0.size(); ++t) ASSERT_EQ(C0[t], C1[t]) << t << " of " << m << "x" << n << "x" << k;
}
TEST(Int8Emulation, TheLayoutOfCChangesNoBit) {
  REQUIRE_GPU();
  layout_is_identical<float>(64, 33, 100);    // one 64-bit word (7 moduli or fewer)
  layout_is_identical<double>(128, 17, 96);   // the split CRT
}

// The parts that take op(A)'s slices from the part before: those emulated with the moduli of
// the last emulated part before them (the host twin's choices), unless the second reads another
// buffer (other_a) or nothing is held (none_held). A wide second part must take other moduli
// (or run natively), or the case would not be the one it is meant to be.
template <class T>
void parts_reuse_a(Op ta, index_t m, index_t k, std::vector<index_t> widths, double wide_second_part = 0,
                   bool other_a = false, bool none_held = false, const std::string& accuracy = "native",
                   const std::string& engine = "gpu-ozaki") {
  index_t n = 0;
  for (index_t w : widths) n += w;
  const stress::Problem<T> p = stress::problems<T>(m, n, k, 41).front();  // uniform
  auto [A, B] = stress::stored_as(p, ta, Op::N);
  if (wide_second_part > 0) {  // the second part's entries times 2^s, s in [-spread, spread]: more moduli
    std::mt19937 g(7);
    std::uniform_int_distribution<int> sc(-int(wide_second_part), int(wide_second_part));
    for (index_t t = widths[0] * k; t < (widths[0] + widths[1]) * k; ++t) B[t] *= real_t<T>(std::ldexp(1.0, sc(g)));
  }
  std::vector<T> A2 = A;  // another buffer; with other values where other_a
  if (other_a)
    for (T& x : A2) x = x * real_t<T>(0.75) + real_t<T>(0.125);
  const index_t lda = ta == Op::N ? m : k;
  int expect = 0, held_N = 0;
  std::vector<int> moduli;
  index_t j0 = 0;
  for (std::size_t q = 0; q < widths.size(); ++q) {
    std::vector<T> Cq(std::size_t(m) * widths[q]);
    const ozaki::HostResult h = ozaki::host_gemm<T>(ozaki::accuracy_or_throw(accuracy), 0, 0, ta, Op::N, m, widths[q], k, T(1),
                                                    (q == 1 && other_a ? A2 : A).data(), lda, B.data() + j0 * k, k,
                                                    T(0), Cq.data(), m);
    j0 += widths[q];
    moduli.push_back(h.emulated() ? h.choice.N : 0);
    if (!h.emulated()) continue;
    expect += q > 0 && h.choice.N == held_N && !(q == 1 && other_a) && !none_held;
    held_N = h.choice.N;
  }
  if (wide_second_part > 0) ASSERT_NE(moduli[0], moduli[1]) << "the case needs parts of different moduli";
  EngineOptions o;
  o.accuracy = accuracy;
  auto plain = make_engine(engine, o);
  auto reusing = make_engine(engine, o);
  const std::vector<T> C1 = in_parts<T>(*plain, ta, m, k, widths, A, B, false, other_a ? &A2 : nullptr);
  const std::vector<T> C2 = in_parts<T>(*reusing, ta, m, k, widths, A, B, true, other_a ? &A2 : nullptr);
  const std::string d = reusing->describe();
  for (std::size_t t = 0; t < C1.size(); ++t) ASSERT_EQ(C1[t], C2[t]) << t << " " << d;
  if (expect > 0) EXPECT_NE(d.find(", " + std::to_string(expect) + " on op(A)'s slices of the product before"), std::string::npos) << d;
  else EXPECT_EQ(d.find("on op(A)'s slices"), std::string::npos) << d;
  EXPECT_EQ(plain->describe().find("on op(A)'s slices"), std::string::npos);
}

TEST(Int8Emulation, PartsOfBsColumnsReuseTheSlicesOfA) {
  REQUIRE_GPU();
  parts_reuse_a<float>(Op::N, 300, 700, {64, 50, 77});
  parts_reuse_a<double>(Op::T, 129, 515, {40, 33});
  parts_reuse_a<std::complex<float>>(Op::C, 70, 90, {30, 31});
  parts_reuse_a<std::complex<double>>(Op::N, 33, 65, {17, 1, 16});
  parts_reuse_a<float>(Op::N, 200, 16384, {96, 64});  // the bound's product in pairs
  // a part with other moduli (accuracy max reads the exponent range): its own slices, held for
  // the next part, which differs again; a part run natively (f64's range too wide) between two
  // that share the slices
  parts_reuse_a<float>(Op::N, 160, 300, {40, 40, 40}, 20, false, false, "max");
  parts_reuse_a<double>(Op::T, 90, 400, {20, 30, 20}, 40, false, false, "max");
  // the second part reads another buffer (other values) while it says kept: nothing reused
  parts_reuse_a<double>(Op::N, 100, 200, {30, 30}, 0, true);
  // gpu-winograd-ozaki where its product runs no level: the caller's flags reach the emulation
  parts_reuse_a<double>(Op::N, 150, 333, {40, 41}, 0, false, false, "native", "gpu-winograd-ozaki");
  // under a workspace cap (which bounds all of the emulation's memory) nothing is held
  ::setenv("DISTMM_EMULATION_WORKSPACE", "2M", 1);
  parts_reuse_a<float>(Op::N, 400, 900, {50, 60}, 0, false, true);
  ::unsetenv("DISTMM_EMULATION_WORKSPACE");
}
#endif

TEST(Int8Emulation, AccuracyTargetsHoldOnStressInputs) {
  REQUIRE_GPU();
  gpu_targets<float>(96, 80, 200);
  gpu_targets<double>(96, 80, 200);
  gpu_targets<float>(128, 128, 128);  // with seed 003's matrices
  gpu_targets<double>(128, 128, 128);
  gpu_targets<std::complex<float>>(40, 32, 96);
  gpu_targets<std::complex<double>>(40, 32, 96);
}

}  // namespace
