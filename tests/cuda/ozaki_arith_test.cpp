// The integer arithmetic of the INT8-emulated engines (cuda/ozaki_arith.hpp), on the host: the
// same functions the kernels call. Moduli and CRT constants; symmetric residues; and the whole
// pipeline (scale, round, residues, exact int32 sums as the INT8 GEMM forms them, fold, CRT)
// against exact 128-bit dot products, at the edge of the scaling bound, for every moduli count.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "cuda/ozaki_arith.hpp"

using namespace distmm::ozaki;
using i128 = __int128;

namespace {

TEST(OzakiArith, ModuliArePairwiseCoprimeAndTheirProductFits) {
  for (int a = 0; a < kMaxModuli; ++a) {
    EXPECT_LE(modulus(a), 256);
    EXPECT_GE(modulus(a), 129);  // symmetric residues use most of int8
    for (int b = a + 1; b < kMaxModuli; ++b) EXPECT_EQ(std::gcd(modulus(a), modulus(b)), 1) << a << " " << b;
  }
  EXPECT_LT(log2_product(kMaxModuli), 127.0);  // S + u M_l < 2M < 2^128
  for (int N = 2; N <= kMaxModuli; ++N) {
    const Crt c = crt_constants(N);
    const double M = to_double(c.M);
    EXPECT_NEAR(std::log2(M), log2_product(N), 1e-9);
    for (int l = 0; l < N; ++l) {
      const unsigned __int128 Ml = (unsigned __int128)c.Ml[l].hi << 64 | c.Ml[l].lo;
      EXPECT_EQ(int(Ml % modulus(l) * c.y[l] % modulus(l)), 1) << "N " << N << " l " << l;
    }
  }
}

template <int m>
void residues_of(const std::vector<long long>& values) {
  for (long long v : values) {
    const int r = sym_residue<m>(v);
    EXPECT_GE(r, -(m / 2)) << m;
    EXPECT_LE(r, (m - 1) / 2) << m;
    EXPECT_EQ(((i128(v) - r) % m + m) % m, 0) << "v " << v << " m " << m;
  }
}
// The symmetric residue of u in [0, m) (the slice kernels' residues).
template <int m>
int sym_of(unsigned u) {
  return u > unsigned(m - 1) / 2 ? int(u) - m : int(u);
}
// The 32-bit residue where the scaled entries fit in int32, and the 32-bit fold of a real
// product's int32 sum: the same values as the 64-bit ones.
template <int m>
void residues32_of(const std::vector<long long>& values) {
  for (long long v : values)
    if (v > INT32_MIN && v <= INT32_MAX) {
      EXPECT_EQ(sym_of<m>(residue32<m>(int(v))), sym_residue<m>(v)) << "v " << v << " m " << m;
      for (int y : {1, 2, m / 2 + 1, m - 1}) {
        EXPECT_EQ(fold<m>(int(v), y), fold<m>(v, y)) << "v " << v << " m " << m;
        if (std::llabs(v) < 4 * m)  // (the two-level fold's sums of four reduced quadrants)
          EXPECT_EQ(fold_small<m>(int(v), y), fold<m>(v, y)) << "v " << v << " m " << m;
      }
    }
}
// The double-precision residue of an integer-valued double (an entry scaled and rounded): the
// same value as the 64-bit one.
template <int m>
void residues_fp_of(const std::vector<long long>& values) {
  for (long long v : values) {
    const double d = double(v);
    if (std::fabs(d) >= 0x1p56 || (long long)d != v) continue;  // (outside its range)
    const unsigned u = residue_fp<m>(d);
    EXPECT_LT(u, unsigned(m)) << "v " << v << " m " << m;
    EXPECT_EQ(sym_of<m>(u), sym_residue<m>(v)) << "v " << v << " m " << m;
  }
}
template <std::size_t... L>
void residues_all(const std::vector<long long>& v, std::index_sequence<L...>) {
  (residues_of<modulus(int(L))>(v), ...);
  (residues32_of<modulus(int(L))>(v), ...);
  (residues_fp_of<modulus(int(L))>(v), ...);
}

TEST(OzakiArith, SymmetricResiduesAreCongruentAndFitInt8) {
  std::vector<long long> v{0, 1, -1, 127, 128, -128, -129, 255, 256, (1ll << 32) - 1, 1ll << 32,
                           -(1ll << 32), (1ll << 62) - 1, -(1ll << 62) + 1, INT32_MAX, INT32_MIN + 1};
  std::mt19937_64 g(7);
  for (int t = 0; t < 2000; ++t) v.push_back(static_cast<long long>(g() >> 2) * (t % 2 ? 1 : -1));
  for (int t = 0; t < 2000; ++t) v.push_back(static_cast<long long>(int(g() >> 33)) * (t % 2 ? 1 : -1));
  for (int t = -1100; t <= 1100; ++t) v.push_back(t);  // (all of fold_small's range, |v| < 4 m)
  // integers with at most 53 significant bits up to 2^56 (f64 entries scaled for 14 moduli),
  // among them the halfway points v = (q + 1/2) m where v / m rounds either way
  std::uniform_real_distribution<double> U(-1, 1);
  for (int t = 0; t < 4000; ++t) v.push_back((long long)std::rint(std::ldexp(U(g), int(g() % 57))));
  for (int e = 40; e < 56; ++e)
    for (long long m : {193ll, 197ll, 255ll, 256ll})
      for (long long d : {-1ll, 0ll, 1ll}) {
        const long long base = ((1ll << e) / m) * m + m / 2 + d;
        v.push_back(base), v.push_back(-base);
        // (and whole multiples, where v / m is closest to an integer: residue_fp's edge)
        const long long whole = ((1ll << e) / m) * m + d;
        v.push_back(whole), v.push_back(-whole);
      }
  for (long long d = 1; d <= 300; ++d) v.push_back((1ll << 56) - d), v.push_back(-(1ll << 56) + d);
  residues_all(v, std::make_index_sequence<kMaxModuli>{});
}

// The slice kernels' arithmetic in [0, m): sums and differences, the Winograd sums, and four
// residues to symmetric bytes give what the symmetric forms give, for every residue of the
// smallest and largest moduli and for random ones of the rest.
template <int m>
void unsigned_forms_match() {
  std::mt19937 g(m);
  std::vector<unsigned> us;
  for (unsigned u = 0; u < unsigned(m); ++u) us.push_back(u);
  for (unsigned a : us)
    for (unsigned b : us) {
      ASSERT_EQ(sym_of<m>(mod_add<m>(a, b)), sym_add<m>(sym_of<m>(a), sym_of<m>(b))) << m << " " << a << " " << b;
      ASSERT_EQ(sym_of<m>(mod_sub<m>(a, b)), sym_sub<m>(sym_of<m>(a), sym_of<m>(b))) << m << " " << a << " " << b;
    }
  for (int t = 0; t < 20000; ++t) {
    auto any = [&] { return unsigned(g() % unsigned(m)); };
    const bool edge = t < int(us.size());  // (every residue once in the first and last bytes)
    const unsigned u[4] = {edge ? us[t] : any(), any(), any(), edge ? us[us.size() - 1 - t] : any()};
    const int s[4] = {sym_of<m>(u[0]), sym_of<m>(u[1]), sym_of<m>(u[2]), sym_of<m>(u[3])};
    const unsigned w = symmetric_bytes<m>(pack_bytes(u[0], u[1], u[2], u[3]));
    for (int b = 0; b < 4; ++b) ASSERT_EQ(int(std::int8_t(w >> (8 * b))), s[b]) << m << " byte " << b;
    unsigned ua[4], ub[4];
    int sa[4], sb[4];
    winograd_a<m>(u, ua), winograd_a<m>(s, sa);
    winograd_b<m>(u, ub), winograd_b<m>(s, sb);
    for (int d = 0; d < 4; ++d) ASSERT_EQ(sym_of<m>(ua[d]), sa[d]) << m << " S" << d + 1;
    for (int d = 0; d < 4; ++d) ASSERT_EQ(sym_of<m>(ub[d]), sb[d]) << m << " T" << d + 1;
  }
}
template <std::size_t... L>
void unsigned_forms_all(std::index_sequence<L...>) {
  (unsigned_forms_match<modulus(int(L))>(), ...);
}
TEST(OzakiArith, ResiduesInZeroToMGiveTheSymmetricBytes) { unsigned_forms_all(std::make_index_sequence<kMaxModuli>{}); }

// The one-word CRT (N <= 7): the unreduced sum, reduced once, is the 128-bit one's sum, and
// gives its double, for random residues and at the extremes (every u_l = m_l - 1: the largest sum).
TEST(OzakiArith, SixtyFourBitCrtMatchesTheWideOne) {
  std::mt19937_64 g(5);
  for (int N = 2; N <= kMaxModuli; ++N) {
    const Crt c = crt_constants(N);
    EXPECT_EQ(crt_fits_64(c), N <= 7) << N;
    if (!crt_fits_64(c)) continue;
    for (int t = 0; t < 20000; ++t) {
      U128 S;
      CrtSum S64;
      for (int l = 0; l < N; ++l) {
        const unsigned u = t == 0 ? 0 : t == 1 ? unsigned(modulus(l) - 1) : unsigned(g() % modulus(l));
        crt_add(S, c, l, u);
        crt_sum_add(S64, c.Ml[l].lo, u);
      }
      ASSERT_EQ(S.hi, 0u);
      ASSERT_LT(crt_sum_value(S64), std::uint64_t(N) * c.M.lo);
      const std::uint64_t r = reduce_small_quotient(crt_sum_value(S64), c.M.lo, c.M_recip);
      ASSERT_EQ(S.lo, r) << "N " << N << " t " << t;
      ASSERT_EQ(crt_signed(S, c), crt_signed64(r, c));
    }
  }
}

// The one reduction: S = q M + r at every quotient below 8 and remainders at both ends, for each
// one-word M and for moduli products of every size (where the double estimate is closest to an
// integer).
TEST(OzakiArith, OneReductionTakesEveryRemainder) {
  std::mt19937_64 g(8);
  std::vector<std::uint64_t> Ms;
  for (int N = 2; N <= 7; ++N) Ms.push_back(crt_constants(N).M.lo);
  for (int e = 1; e < 61; ++e) Ms.push_back((1ull << e) - 1), Ms.push_back((1ull << e) + 1);
  for (int t = 0; t < 200; ++t) Ms.push_back((g() >> 4) | 1);
  for (std::uint64_t M : Ms) {
    if (M < 2 || M >= (1ull << 61)) continue;
    const double recip = 1.0 / double(M);
    for (std::uint64_t q = 0; q < 8; ++q)
      for (std::uint64_t r : {std::uint64_t(0), std::uint64_t(1), M / 2, M - 2, M - 1, g() % M}) {
        if (r >= M) continue;
        ASSERT_EQ(reduce_small_quotient(q * M + r, M, recip), r) << "M " << M << " q " << q;
      }
  }
}

// Montgomery's multiplication against 128-bit arithmetic: a below 2^60, b below an odd M, at the
// extremes and at random, for the split form's M2 and odd moduli of other sizes.
TEST(OzakiArith, MontgomeryMultiplicationIsExact) {
  std::mt19937_64 g(9);
  std::vector<std::uint64_t> Ms;
  for (int N = 8; N <= 14; ++N) Ms.push_back(crt_constants(N).M2);
  for (int t = 0; t < 50; ++t) Ms.push_back((g() >> (1 + t % 40)) | 1);
  Ms.push_back((1ull << 63) - 1);
  for (std::uint64_t M : Ms) {
    std::uint64_t v = M;
    for (int i = 0; i < 5; ++i) v *= 2 - M * v;
    ASSERT_EQ(v * M, 1u);
    const std::uint64_t Mp = ~v + 1;
    const unsigned __int128 R_inv_mod = [&] {  // R^-1 mod M: 1 halved mod M 64 times
      unsigned __int128 x = 1;
      for (int i = 0; i < 64; ++i) x = x % 2 ? (x + M) / 2 : x / 2;  // x 2^-1 mod M, 64 times
      return x;
    }();
    for (int t = 0; t < 3000; ++t) {
      const std::uint64_t a = t == 0 ? (1ull << 60) - 1 : t == 1 ? 0 : t == 2 ? 1 : g() >> 4;
      const std::uint64_t b = t < 3 ? M - 1 : t == 3 ? 0 : g() % M;
      const std::uint64_t want = std::uint64_t((unsigned __int128)a * b % M * R_inv_mod % M);
      ASSERT_EQ(montgomery(a, b, M, Mp), want) << "M " << M << " a " << a << " b " << b;
    }
  }
}

// The split form (8 <= N <= 14): the same x from the same int32 sums, each folded with its own
// coefficient (fold_coefficient), as the 128-bit sum, at random sums and at the extremes.
template <std::size_t... L>
void split_matches_wide(int N, std::mt19937_64& g, std::index_sequence<L...>) {
  const Crt c = crt_constants(N);
  ASSERT_TRUE(crt_splits(c)) << N;
  EXPECT_LT(c.M1, 1ull << 56);
  EXPECT_LT(c.M2, 1ull << 56);
  EXPECT_EQ(c.M2 % 2, 1u);
  EXPECT_EQ(c.offset % c.M2, 0u);
  EXPECT_GE(c.offset, kSplitAt * c.M1);
  for (int t = 0; t < 20000; ++t) {
    U128 S;
    CrtSum x1, x2;
    auto one = [&](auto lc) {
      constexpr int l = decltype(lc)::value;
      constexpr int m = modulus(l);
      if (l >= N) return;
      const int sum = t == 0 ? 0 : t == 1 ? m - 1 : t == 2 ? -1 : int(g() >> 33) * (t % 2 ? 1 : -1);
      crt_add(S, c, l, fold<m>(sum, c.y[l]));
      crt_sum_add(l < kSplitAt ? x1 : x2, c.G[l], fold<m>(sum, fold_coefficient(c, l)));
    };
    (one(std::integral_constant<int, int(L)>{}), ...);
    U128 x = crt_join(crt_sum_value(x1), crt_sum_value(x2), c);
    ASSERT_EQ(crt_signed_near(x, c), crt_signed(S, c)) << "N " << N << " t " << t;
    if (ge(x, c.M)) x = sub(x, c.M);
    ASSERT_EQ(x.lo, S.lo) << "N " << N << " t " << t;
    ASSERT_EQ(x.hi, S.hi) << "N " << N << " t " << t;
  }
  // the largest sums (every u_l = m_l - 1) and none: x's residues are u_l G_l mod m_l, x < M + 6 M1
  for (int ext = 0; ext < 2; ++ext) {
    CrtSum x1, x2;
    for (int l = 0; l < N; ++l) crt_sum_add(l < kSplitAt ? x1 : x2, c.G[l], ext ? unsigned(modulus(l) - 1) : 0u);
    const U128 x = crt_join(crt_sum_value(x1), crt_sum_value(x2), c);
    const unsigned __int128 xv = (unsigned __int128)x.hi << 64 | x.lo;
    const unsigned __int128 M = (unsigned __int128)c.M.hi << 64 | c.M.lo;
    EXPECT_LT(xv, M + 6 * (unsigned __int128)c.M1) << N;
    for (int l = 0; l < N; ++l) {
      const unsigned m = unsigned(modulus(l)), u = ext ? m - 1 : 0;
      EXPECT_EQ(unsigned(xv % m), unsigned((unsigned __int128)u * c.G[l] % m)) << "N " << N << " l " << l;
    }
  }
}
TEST(OzakiArith, SplitCrtMatchesTheWideOne) {
  std::mt19937_64 g(6);
  for (int N = 2; N <= kMaxModuli; ++N) EXPECT_EQ(crt_splits(crt_constants(N)), N >= 8 && N <= 14) << N;
  for (int N = 8; N <= 14; ++N) split_matches_wide(N, g, std::make_index_sequence<kMaxModuli>{});
}

// The kernels' steps on the host: e from the norm (exponents()), x' = round(x 2^e)
// (to_slices), int32 sums of residue products per modulus (the INT8 GEMM), fold, CRT.
template <std::size_t... L>
double emulated_dot(const std::vector<double>& a, const std::vector<double>& b, int N, int ea, int eb,
                    std::index_sequence<L...>) {
  const Crt c = crt_constants(N);
  U128 S;
  auto one = [&](auto lc) {
    constexpr int l = decltype(lc)::value;
    constexpr int m = modulus(l);
    if (l >= N) return;
    long long sum = 0;
    for (std::size_t h = 0; h < a.size(); ++h) {
      const int ra = sym_residue<m>(std::llrint(std::ldexp(a[h], ea)));
      const int rb = sym_residue<m>(std::llrint(std::ldexp(b[h], eb)));
      sum += ra * rb;
    }
    EXPECT_LT(std::llabs(sum), 1ll << 31) << "int32 sum overflows";
    crt_add(S, c, l, fold<m>(sum, c.y[l]));
  };
  (one(std::integral_constant<int, int(L)>{}), ...);
  return std::ldexp(crt_signed(S, c), -(ea + eb));
}
int exponent_for(const std::vector<double>& x, double bound) {
  double s = 0;
  for (double v : x) s += v * v;
  s = std::sqrt(s);
  if (s == 0) return 0;
  int e = std::ilogb(bound / s);
  while (std::ldexp(s, e + 1) <= bound) ++e;
  while (std::ldexp(s, e) > bound) --e;
  return e;
}

TEST(OzakiArith, ReconstructionIsExactUpToTheScalingBound) {
  std::mt19937_64 g(11);
  std::uniform_real_distribution<double> U(-1, 1);
  for (int N = 2; N <= kMaxModuli; ++N)
    for (int k : {1, 7, 1000}) {
      const double bound = scale_bound(N, k);
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<double> a(k), b(k);
        for (int h = 0; h < k; ++h) {
          // trial 0: equal vectors of one sign, where |a' . b'| = ||a'|| ||b'|| meets the bound
          a[h] = trial == 0 ? 1.0 : U(g);
          b[h] = trial == 0 ? 1.0 : trial == 1 ? a[h] : U(g) * std::exp2(int(g() % 40) - 20);
        }
        const int ea = exponent_for(a, bound), eb = exponent_for(b, bound);
        i128 exact = 0;
        for (int h = 0; h < k; ++h)
          exact += i128(std::llrint(std::ldexp(a[h], ea))) * std::llrint(std::ldexp(b[h], eb));
        const double want = std::ldexp(double(exact), -(ea + eb));
        const double got = emulated_dot(a, b, N, ea, eb, std::make_index_sequence<kMaxModuli>{});
        EXPECT_EQ(got, want) << "N " << N << " k " << k << " trial " << trial;
        // The rounding of a and b is the only error: within sqrt(k) 2^-(e) sized steps (checked
        // where those steps are far above the double-precision reference's own rounding).
        if (N > 6) continue;
        double dot = 0, na = 0, nb = 0;
        for (int h = 0; h < k; ++h) dot += a[h] * b[h], na += a[h] * a[h], nb += b[h] * b[h];
        EXPECT_LE(std::abs(got - dot), std::sqrt(double(k)) * (std::sqrt(nb) * std::ldexp(1.0, -ea) +
                                                                 std::sqrt(na) * std::ldexp(1.0, -eb)) + 1e-300)
            << "N " << N << " k " << k;
      }
    }
}

TEST(OzakiArith, TheAccuracyRulePicksModuliFromPrecisionAndExponentRange) {
  // Well-scaled inputs: half the native error needs 7 moduli in single, 14 in double precision.
  EXPECT_EQ(fewest_moduli(required_bits(true, 7.6), 16384), 7);
  EXPECT_EQ(fewest_moduli(required_bits(false, 7.6), 16384), 14);
  // Leaves under Strassen levels: one modulus less in single precision from one level on.
  EXPECT_EQ(fewest_moduli(required_bits(true, 7.6, 1), 16384), 6);
  EXPECT_EQ(fewest_moduli(required_bits(true, 7.6, 3), 16384), 6);
  EXPECT_EQ(fewest_moduli(required_bits(false, 7.6, 1), 16384), 14);
  // A wider exponent range costs moduli, and beyond 16 the rule declines (0).
  EXPECT_GT(fewest_moduli(required_bits(true, 30), 16384), 7);
  EXPECT_EQ(fewest_moduli(required_bits(true, 60), 16384), 0);
  EXPECT_EQ(fewest_moduli(required_bits(false, 12), 16384), 15);
  EXPECT_EQ(fewest_moduli(required_bits(false, 20), 16384), 0);
  // More moduli, more bits: each one multiplies the bound by sqrt(m_l) >= sqrt(193).
  for (int N = 2; N < kMaxModuli; ++N) EXPECT_GT(scale_bound(N + 1, 100), scale_bound(N, 100) * 13.8);
}

// One Winograd level in the residues (winograd_a, winograd_b, kWinogradA/B, winograd_c): the
// seven quadrant products of the residues' sums give C = A B mod m exactly, for every modulus,
// on residues at the ends of the symmetric range too. The sums stay in the symmetric range.
template <int m>
void winograd_level_is_exact(int rows, int cols, int depth, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> any(-(m / 2), (m - 1) / 2), edge(0, 3);
  auto residue = [&] {
    switch (edge(g)) {
      case 0: return -(m / 2);
      case 1: return (m - 1) / 2;
      default: return any(g);
    }
  };
  const int R = 2 * rows, C = 2 * cols, K = 2 * depth;
  std::vector<int> A(R * K), B(K * C);  // A(i, h) at i + h R, B(h, j) at h + j K
  for (int& x : A) x = residue();
  for (int& x : B) x = residue();
  // quadrant q = 2 r + c of A (rows half r, k half c) and of B (k half r, columns half c)
  auto a_q = [&](int q, int i, int h) { return A[(i + (q >> 1) * rows) + (h + (q & 1) * depth) * R]; };
  auto b_q = [&](int q, int h, int j) { return B[(h + (q >> 1) * depth) + (j + (q & 1) * cols) * K]; };
  // the sums, quadrant by quadrant: S[(q * outer + o) * inner + e] for the entry (e, o) of each
  // quadrant (A: e = i, o = h; B: e = h, o = j), each in the symmetric range
  auto sums = [&](bool of_a, int inner, int outer, auto&& quadrant, std::vector<int>& S) {
    S.assign(4 * inner * outer, 0);
    for (int o = 0; o < outer; ++o)
      for (int e = 0; e < inner; ++e) {
        int x[4], y[4];
        for (int q = 0; q < 4; ++q) x[q] = quadrant(q, e, o);
        if (of_a) winograd_a<m>(x, y);
        else winograd_b<m>(x, y);
        for (int q = 0; q < 4; ++q) {
          EXPECT_GE(y[q], -(m / 2));
          EXPECT_LE(y[q], (m - 1) / 2);
          S[(q * outer + o) * inner + e] = y[q];
        }
      }
  };
  std::vector<int> SA, TB;
  sums(true, rows, depth, a_q, SA);
  sums(false, depth, cols, b_q, TB);
  auto a_op = [&](int r, int i, int h) {
    const WinogradOperand o = kWinogradA[r];
    return o.sum ? SA[(o.quadrant * depth + h) * rows + i] : a_q(o.quadrant, i, h);
  };
  auto b_op = [&](int r, int h, int j) {
    const WinogradOperand o = kWinogradB[r];
    return o.sum ? TB[(o.quadrant * cols + j) * depth + h] : b_q(o.quadrant, h, j);
  };
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      int p[7], c[4];
      for (int r = 0; r < 7; ++r) {
        int sum = 0;  // exact int32, as the INT8 GEMM forms it
        for (int h = 0; h < depth; ++h) sum += a_op(r, i, h) * b_op(r, h, j);
        p[r] = sum % m;  // (the fold's first step: any representative mod m will do)
      }
      winograd_c(p, c);
      for (int q = 0; q < 4; ++q) {
        const int ii = i + (q >> 1) * rows, jj = j + (q & 1) * cols;
        long long direct = 0;
        for (int h = 0; h < K; ++h) direct += (long long)A[ii + h * R] * B[h + jj * K];
        EXPECT_EQ(((c[q] - direct) % m + m) % m, 0) << "m " << m << " quadrant " << q << " i " << i << " j " << j;
      }
    }
}

TEST(OzakiArith, AWinogradLevelInTheResiduesIsExact) {
  winograd_level_is_exact<256>(3, 5, 7, 1);
  winograd_level_is_exact<255>(4, 1, 9, 2);
  winograd_level_is_exact<253>(1, 6, 2, 3);
  winograd_level_is_exact<251>(5, 4, 11, 4);
  winograd_level_is_exact<239>(2, 3, 64, 5);
  winograd_level_is_exact<217>(6, 2, 5, 6);
  winograd_level_is_exact<193>(3, 3, 1, 7);
}

}  // namespace
