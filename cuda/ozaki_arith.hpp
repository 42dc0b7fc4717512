// The integer arithmetic of Ozaki scheme II (int8_emulation.hpp), shared by the CUDA kernels and
// the host (plain C++, so that tests check it without a GPU): the moduli, symmetric residues,
// the per-modulus fold and the Chinese-remainder reconstruction in 128-bit integers, and the
// narrower forms the GPU takes where the numbers allow (32-bit and double-precision residues,
// the CRT in one or two 64-bit words), each giving the same values.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DISTMM_HD __host__ __device__ __forceinline__
#else
#define DISTMM_HD inline
#endif

namespace distmm::ozaki {

constexpr int kMaxModuli = 16;

// Unsigned 128-bit integers of the host compilers (GCC, Clang; quiet under -Wpedantic).
__extension__ typedef unsigned __int128 host_u128;

// The moduli: pairwise coprime, <= 256 (symmetric residues fit in int8), largest first, so that
// their product M grows fastest; with 16 of them M < 2^126.
DISTMM_HD constexpr int modulus(int l) {
  switch (l) {
    case 0: return 256;
    case 1: return 255;  // 3 5 17
    case 2: return 253;  // 11 23
    case 3: return 251;
    case 4: return 247;  // 13 19
    case 5: return 241;
    case 6: return 239;
    case 7: return 233;
    case 8: return 229;
    case 9: return 227;
    case 10: return 223;
    case 11: return 217;  // 7 31
    case 12: return 211;
    case 13: return 199;
    case 14: return 197;
    default: return 193;
  }
}

// The symmetric residue of any 64-bit v modulo m, in [-128, 127]: v = hi 2^32 + lo, so that
// only 32-bit divisions by the (compile-time) modulus are needed.
template <int m>
DISTMM_HD int sym_residue(long long v) {
  constexpr int c32 = int((1ull << 32) % unsigned(m));
  const int hi = int(v >> 32);
  const unsigned lo = unsigned(v & 0xffffffffull);
  int r = (hi % m) * c32 + int(lo % unsigned(m));  // |r| < m^2
  r %= m;
  if (r < 0) r += m;
  return r >= (m + 1) / 2 ? r - m : r;
}

// The slice kernels take residues in [0, m) instead (unsigned: one compare fewer per residue
// and per Winograd sum) and turn four of them into symmetric bytes at once (symmetric_bytes):
// the same bytes as sym_residue's. umin(x, x - m) is x mod m for x in [0, 2 m) and
// umin(x, x + m) for x in (-m, m) (a negative x wraps above every residue).
DISTMM_HD unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
// |v| < 2^31 (the scaled entries where T' + 1 < 2^31: N <= 7): one 32-bit remainder.
template <int m>
DISTMM_HD unsigned residue32(int v) {
  const int r = v % m;  // in (-m, m)
  return umin(unsigned(r), unsigned(r + m));
}
// An integer-valued double below 2^56 in magnitude (an f64 entry scaled and rounded keeps at
// most 53 significant bits, so it is exact as a double; N <= 14 moduli keep entries below
// 2^56): q = rint(v / m - 3/4), r = v - q m exact by one fma, one step down into [0, m).
// Floating-point additions and multiplications only: rint by adding and subtracting 1.5 2^52
// (exact for |x| < 2^51), and r's integer as the low word of r + 1.5 2^52 (r is small), instead
// of a rounding and a conversion per modulus, which run at a quarter of the rate or less. Why
// one step suffices: v inv - 3/4 is computed within 1/8 of v / m - 3/4 (1/m's rounding costs
// |v / m| 2^-53 < 1/16, the fma's rounding at most half an ulp of 2^49, 1/32), so for
// q_f = floor(v / m) (v / m in [q_f, q_f + 1 - 1/m]) q is q_f - 1 or q_f and r is in [0, 2 m).
template <int m>
DISTMM_HD unsigned residue_fp(double v) {
  constexpr double inv = 1.0 / m, magic = 0x1.8p52;
#ifdef __CUDA_ARCH__
  const double q = (fma(v, inv, -0.75) + magic) - magic;
  const unsigned r = unsigned(__double2loint(fma(-q, double(m), v) + magic));
#else
  const double q = (std::fma(v, inv, -0.75) + magic) - magic;
  const double rm = std::fma(-q, double(m), v) + magic;
  std::uint64_t bits;
  std::memcpy(&bits, &rm, sizeof bits);
  const unsigned r = unsigned(std::uint32_t(bits));
#endif
  return umin(r, r - m);
}
template <int m>
DISTMM_HD unsigned mod_add(unsigned a, unsigned b) {  // a, b in [0, m)
  const unsigned s = a + b;
  return umin(s, s - m);
}
template <int m>
DISTMM_HD unsigned mod_sub(unsigned a, unsigned b) {
  const unsigned d = a - b;
  return umin(d, d + m);
}
// Four residues in [0, m), one per byte (byte t from u_t), and the word of their symmetric
// residues' bytes: each byte u > (m-1)/2 takes u - m, that is u + 256 - m mod 256, which stays
// below 256 (u < m), so no byte carries into the next; bit 7 of u + 128 - (m+1)/2 (below 256
// too) flags those bytes. (m = 256: the bytes already are.)
// (one form on the host and the device, so that the host test checks the kernels' packing)
DISTMM_HD unsigned pack_bytes(unsigned u0, unsigned u1, unsigned u2, unsigned u3) {
  return u0 | u1 << 8 | u2 << 16 | u3 << 24;
}
template <int m>
DISTMM_HD unsigned symmetric_bytes(unsigned w) {
  if constexpr (m == 256) return w;
  constexpr unsigned K = 128 - (m + 1) / 2;
  const unsigned high = ((w + K * 0x01010101u) >> 7) & 0x01010101u;
  return w + high * unsigned(256 - m);
}

// One modulus' exact int32 (or combined complex, int64) sum reduced to u = (c mod m) y mod m,
// y = (M / m)^-1 mod m: the CRT term's coefficient, one byte. (An int sum, a real product's,
// takes the remainder in 32-bit arithmetic.)
template <int m, class I>
DISTMM_HD unsigned fold(I c, int y) {
  int r = int(c % m);
  if (r < 0) r += m;
  return unsigned((r * y) % m);
}
// The same for a sum already small (|c y| inside int's range, e.g. |c| < 4 m): one remainder,
// (c y) mod m = ((c mod m) y) mod m.
template <int m>
DISTMM_HD unsigned fold_small(int c, int y) {
  int r = (c * y) % m;
  if (r < 0) r += m;
  return unsigned(r);
}

// One exact Strassen-Winograd level inside the modular arithmetic. The residue of a sum is the
// sum of the residues (mod m), so the seven quadrant products of Winograd's variant (Douglas,
// Heroux, Slishman, Smith 1994; seed 003, Fig. 3) give C's quadrants mod m exactly: the result
// is the same integers, bit for bit, with 7/8 of the INT8 work and no error growth (Strassen's
// growth comes from rounding, and nothing here rounds). The operands' sums stay symmetric
// residues (one step back into the range), so they fit in int8 like the slices.
template <int m>
DISTMM_HD int sym_add(int a, int b) {  // a, b in [-(m/2), (m-1)/2]
  int s = a + b;
  if (s > (m - 1) / 2) s -= m;
  else if (s < -(m / 2)) s += m;
  return s;
}
template <int m>
DISTMM_HD int sym_sub(int a, int b) {
  return sym_add<m>(a, -b);  // (-b is at most m/2: one step still suffices)
}
// (the Winograd sums in either form: symmetric residues, or residues in [0, m))
template <int m>
DISTMM_HD int ring_add(int a, int b) { return sym_add<m>(a, b); }
template <int m>
DISTMM_HD int ring_sub(int a, int b) { return sym_sub<m>(a, b); }
template <int m>
DISTMM_HD unsigned ring_add(unsigned a, unsigned b) { return mod_add<m>(a, b); }
template <int m>
DISTMM_HD unsigned ring_sub(unsigned a, unsigned b) { return mod_sub<m>(a, b); }
// Quadrant q = 2 r + c: r the row half, c the column half (A11 A12 A21 A22).
// op(A)'s sums S1..S4 and op(B)'s T1..T4, into s[0..3].
template <int m, class I>
DISTMM_HD void winograd_a(const I (&a)[4], I (&s)[4]) {
  s[0] = ring_add<m>(a[2], a[3]);  // S1 = A21 + A22
  s[1] = ring_sub<m>(s[0], a[0]);  // S2 = S1 - A11
  s[2] = ring_sub<m>(a[0], a[2]);  // S3 = A11 - A21
  s[3] = ring_sub<m>(a[1], s[1]);  // S4 = A12 - S2
}
template <int m, class I>
DISTMM_HD void winograd_b(const I (&b)[4], I (&t)[4]) {
  t[0] = ring_sub<m>(b[1], b[0]);  // T1 = B12 - B11
  t[1] = ring_sub<m>(b[3], t[0]);  // T2 = B22 - T1
  t[2] = ring_sub<m>(b[3], b[1]);  // T3 = B22 - B12
  t[3] = ring_sub<m>(t[1], b[2]);  // T4 = T2 - B21
}
// Whether a product takes the level (the GPU's emulation and its host twin): its stacked rows R
// and columns W (twice a complex product's) and its k padded to Kp multiples of 32, so that each
// quadrant is a whole multiple of 16 (a plain INT8 GEMM read in place), and, unless the mode
// forces it, each at least kLevelFrom (below it the sums and the wider fold cost more than the
// eighth of the INT8 work saved: docs/performance.md, "Session 31"). Modes: DISTMM_EMULATION_LEVEL's
// 0 (never), 1 (one level forced), 2 (two forced where they fit, else one) and auto.
enum class LevelMode { never, forced, forced_two, automatic };
constexpr long long kLevelFrom = 16384;
DISTMM_HD bool residue_level(LevelMode mode, long long R, long long W, long long Kp) {
  if (mode == LevelMode::never || R % 32 != 0 || W % 32 != 0 || Kp % 32 != 0) return false;
  return mode != LevelMode::automatic || (R >= kLevelFrom && W >= kLevelFrom && Kp >= kLevelFrom);
}
// How many levels (0, 1 or 2) the GPU's emulation runs: a second one inside each of the first
// level's seven quadrant products (49 products of a quarter of the rows, columns and k: 49/64
// of the INT8 work) for real products whose R, W and Kp are multiples of 64 (each sixteenth a
// whole multiple of 16), in auto where each is at least kTwoLevelsFrom (its products are then
// at least 8192^3, where cuBLASLt's INT8 rate holds; below it, the sums and the wider fold
// cost more than the eighth saved). Complex products keep one: their first level's halves are
// the real and imaginary parts. (The host twin, ozaki_host.hpp, runs at most one: the levels
// are exact, so the same integers either way.)
constexpr long long kTwoLevelsFrom = 2 * kLevelFrom;
DISTMM_HD int residue_levels(LevelMode mode, long long R, long long W, long long Kp, bool complex) {
  if (!residue_level(mode, R, W, Kp)) return 0;
  if (complex || R % 64 != 0 || W % 64 != 0 || Kp % 64 != 0 || mode == LevelMode::forced) return 1;
  return mode == LevelMode::forced_two || (R >= kTwoLevelsFrom && W >= kTwoLevelsFrom && Kp >= kTwoLevelsFrom) ? 2 : 1;
}
// The operands of P1..P7: a quadrant of the slices (sum false) or of the sums (S_{q+1}, T_{q+1}).
// P1 = A11 B11, P2 = A12 B21, P3 = S4 B22, P4 = A22 T4, P5 = S1 T1, P6 = S2 T2, P7 = S3 T3.
struct WinogradOperand {
  bool sum;
  int quadrant;
};
inline constexpr WinogradOperand kWinogradA[7] = {{false, 0}, {false, 1}, {true, 3}, {false, 3},
                                                 {true, 0},  {true, 1},  {true, 2}};
inline constexpr WinogradOperand kWinogradB[7] = {{false, 0}, {false, 2}, {false, 3}, {true, 3},
                                                 {true, 0},  {true, 1},  {true, 2}};
// C's quadrants from the products (any exact integers: the products' remainders mod m, say):
// C11 = P1 + P2, C12 = P1 + P6 + P5 + P3, C21 = P1 + P6 + P7 - P4, C22 = P1 + P6 + P7 + P5.
template <class I>
DISTMM_HD void winograd_c(const I (&p)[7], I (&c)[4]) {
  const I u2 = p[0] + p[5], u3 = u2 + p[6];
  c[0] = p[0] + p[1];
  c[1] = u2 + p[4] + p[2];
  c[2] = u3 - p[3];
  c[3] = u3 + p[4];
}

// 128-bit unsigned integers as two words (the device has no native 128-bit multiply).
struct U128 {
  std::uint64_t lo = 0, hi = 0;
};
DISTMM_HD bool ge(U128 a, U128 b) { return a.hi > b.hi || (a.hi == b.hi && a.lo >= b.lo); }
DISTMM_HD U128 sub(U128 a, U128 b) {
  U128 r;
  r.lo = a.lo - b.lo;
  r.hi = a.hi - b.hi - (a.lo < b.lo);
  return r;
}
DISTMM_HD U128 add(U128 a, U128 b) {
  U128 r;
  r.lo = a.lo + b.lo;
  r.hi = a.hi + b.hi + (r.lo < a.lo);
  return r;
}
DISTMM_HD std::uint64_t mul_hi(std::uint64_t a, std::uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return std::uint64_t(host_u128(a) * b >> 64);
#endif
}
// a * u for a small u (the product stays below 2^128).
DISTMM_HD U128 mul_small(U128 a, unsigned u) {
  U128 r;
  r.lo = a.lo * u;
  r.hi = a.hi * u + mul_hi(a.lo, u);
  return r;
}
// x 2^e: ldexp's value (exact, or one correct rounding into the subnormals), by one
// multiplication where 2^e is a normal double, instead of ldexp's special cases on the device.
DISTMM_HD double times_pow2(double x, int e) {
#ifdef __CUDA_ARCH__
  if (e >= -1022 && e <= 1023) return x * __longlong_as_double((long long)(e + 1023) << 52);
  return ldexp(x, e);
#else
  return std::ldexp(x, e);
#endif
}
// x correctly rounded to double (one rounding, so that the accuracy rule's output roundoff is
// the unit roundoff): the leading 64 bits, with the bits below them OR-ed into the last one (a
// sticky bit, far below the rounding position), converted once and scaled exactly.
DISTMM_HD double to_double(U128 x) {
  if (x.hi == 0) return double(x.lo);
#ifdef __CUDA_ARCH__
  const int s = __clzll((long long)x.hi);
#else
  const int s = __builtin_clzll(x.hi);
#endif
  const std::uint64_t top = s ? (x.hi << s) | (x.lo >> (64 - s)) : x.hi;
  const std::uint64_t rest = s ? x.lo << s : x.lo;
  const double t = double(top | std::uint64_t(rest != 0));
#ifdef __CUDA_ARCH__
  return times_pow2(t, 64 - s);
#else
  return std::ldexp(t, 64 - s);
#endif
}

// M = m_0 ... m_{N-1}, M_l = M / m_l, y_l = M_l^-1 mod m_l: everything the reconstruction needs.
// The split form (8 <= N <= 14, crt_splits): moduli 0-6 and 7..N-1 summed apart in 64 bits,
// then joined by Garner's step (crt_join): x = x1 + M1 t, t = (x2 - x1) M1^-1 mod M2.
constexpr int kSplitAt = 7, kSplitMax = 14;
struct Crt {
  U128 Ml[kMaxModuli];
  U128 M, half;  // M and floor(M / 2)
  int y[kMaxModuli];
  int N = 0;
  double M_recip = 0;  // 1 / M rounded, where M < 2^64: the one-word form's quotient estimate
  // split form: G_l = M1 / m_l (l < 7) or M2 / m_l, ys_l = G_l^-1 mod m_l; M2 is odd (only m_0
  // is even), so t comes from one Montgomery multiplication (R = 2^64): M2p = -M2^-1 mod R,
  // inv_R = (M1^-1 mod M2) R mod M2, offset a multiple of M2 above 7 M1 (keeps x2 - x1 positive)
  std::uint64_t G[kMaxModuli] = {}, M1 = 0, M2 = 0, M2p = 0, inv_R = 0, offset = 0;
  int ys[kMaxModuli] = {};
};

DISTMM_HD bool crt_splits(const Crt& c) { return c.N > kSplitAt && c.N <= kSplitMax; }
// The coefficient each modulus' fold multiplies by: y_l, or ys_l in the split form.
DISTMM_HD int fold_coefficient(const Crt& c, int l) { return crt_splits(c) ? c.ys[l] : c.y[l]; }

// Host only: the constants for N moduli (2 <= N <= kMaxModuli).
inline Crt crt_constants(int N) {
  using u128 = host_u128;
  auto split = [](u128 v) {
    U128 r;
    r.lo = std::uint64_t(v), r.hi = std::uint64_t(v >> 64);
    return r;
  };
  Crt c;
  u128 M = 1;
  for (int l = 0; l < N; ++l) M *= u128(modulus(l));
  c.M = split(M), c.half = split(M / 2), c.N = N;
  for (int l = 0; l < N; ++l) {
    const int m = modulus(l);
    const u128 Ml = M / u128(m);
    c.Ml[l] = split(Ml);
    const int r = int(Ml % u128(m));
    c.y[l] = 1;
    for (int y = 1; y < m; ++y)
      if ((r * y) % m == 1) c.y[l] = y;
  }
  if (c.M.hi == 0) c.M_recip = 1.0 / double(c.M.lo);
  if (crt_splits(c)) {
    u128 M1 = 1, M2 = 1;
    for (int l = 0; l < N; ++l) (l < kSplitAt ? M1 : M2) *= u128(modulus(l));
    c.M1 = std::uint64_t(M1), c.M2 = std::uint64_t(M2);
    for (int l = 0; l < N; ++l) {
      const int m = modulus(l);
      const u128 G = (l < kSplitAt ? M1 : M2) / u128(m);
      c.G[l] = std::uint64_t(G);
      const int r = int(G % u128(m));
      for (int y = 1; y < m; ++y)
        if ((r * y) % m == 1) c.ys[l] = y;
    }
    // M1^-1 mod M2 by the extended Euclidean algorithm
    __extension__ typedef __int128 i128;
    i128 a = i128(M1 % M2), b = i128(M2), x0 = 1, x1 = 0;
    while (b != 0) {
      const i128 q = a / b, t = a - q * b, tx = x0 - q * x1;
      a = b, b = t, x0 = x1, x1 = tx;
    }
    const u128 inv = u128(((x0 % i128(M2)) + i128(M2)) % i128(M2));
    c.inv_R = std::uint64_t((inv << 64) % M2);
    // M2^-1 mod 2^64 by Newton's iteration (M2 M2 = 1 mod 8: three bits, doubled each step)
    std::uint64_t v = c.M2;
    for (int i = 0; i < 5; ++i) v *= 2 - c.M2 * v;
    c.M2p = ~v + 1;
    c.offset = std::uint64_t((u128(kSplitAt) * M1 + M2 - 1) / M2 * M2);
  }
  return c;
}

// x = sum_l u_l M_l mod M, taken into (-M/2, M/2]: the integer whose folded residues are u_l.
DISTMM_HD void crt_add(U128& S, const Crt& c, int l, unsigned u) {
  S = add(S, mul_small(c.Ml[l], u));  // S < M and u M_l < M: no overflow below 2^127
  if (ge(S, c.M)) S = sub(S, c.M);
}
DISTMM_HD double crt_signed(U128 S, const Crt& c) {
  return ge(c.half, S) ? to_double(S) : -to_double(sub(c.M, S));
}

// The CRT sums without a reduction per term (crt_sum_add): each term u G is below its group's
// modulus product M_g (u < m_l, G = M_g / m_l), so a group of at most seven stays below 7 M_g <
// 2^59 (crt_fits_64, crt_splits), and one reduction at the end replaces a compare and a
// subtraction per term. G = G_lo + 2^32 G_hi: lo += G_lo u is one 32 x 32 + 64-bit multiply-add,
// hi += G_hi u one 32-bit multiply-add (the hi sum stays below 7 M_g / 2^32 < 2^32).
struct CrtSum {
  std::uint64_t lo = 0;
  std::uint32_t hi = 0;
};
DISTMM_HD void crt_sum_add(CrtSum& s, std::uint64_t G, unsigned u) {
  s.lo += std::uint64_t(std::uint32_t(G)) * u;
  s.hi += std::uint32_t(G >> 32) * u;
}
DISTMM_HD std::uint64_t crt_sum_value(const CrtSum& s) { return s.lo + (std::uint64_t(s.hi) << 32); }

// S mod M for S < 8 M < 2^64: the quotient estimated in double precision (three roundings,
// relative error below 2^-51, so below 8 it is off by at most one), then one correction.
DISTMM_HD std::uint64_t reduce_small_quotient(std::uint64_t S, std::uint64_t M, double M_recip) {
  const std::uint64_t q = std::uint64_t(double(S) * M_recip);  // (truncation: S >= 0)
  const std::uint64_t r = S - q * M;                            // in [-M, 2M) as a signed value
  if (std::int64_t(r) < 0) return r + M;
  return r >= M ? r - M : r;
}

// a b R^-1 mod M for odd M < 2^63, R = 2^64, a < 2^60 and b < M (Montgomery's REDC: q makes
// a b + q M a multiple of R; the quotient is below a b / R + M < 2 M, one subtraction brings it
// below M). Integer multiplications only, no branches but the last.
DISTMM_HD std::uint64_t montgomery(std::uint64_t a, std::uint64_t b, std::uint64_t M, std::uint64_t Mp) {
  const std::uint64_t lo = a * b, hi = mul_hi(a, b);
  const std::uint64_t q = lo * Mp;
  const std::uint64_t t = hi + mul_hi(q, M) + (lo != 0);  // (lo + low(q M) is 0 or exactly R)
  return t >= M ? t - M : t;
}

// Garner's step on the unreduced group sums x1 < 7 M1 (congruent to x mod M1) and x2 < 7 M2
// (to x mod M2): t = (x2 - x1) M1^-1 mod M2 by one Montgomery multiplication of x2 + offset - x1
// (positive, below 2^60) by inv_R; then x1 + M1 t is congruent to x mod M1 and mod M2, so mod
// M, and below M + 6 M1 (crt_signed_near).
DISTMM_HD U128 crt_join(std::uint64_t x1, std::uint64_t x2, const Crt& c) {
  const std::uint64_t t = montgomery(x2 + c.offset - x1, c.inv_R, c.M2, c.M2p);
  U128 x;
  x.lo = c.M1 * t;
  x.hi = mul_hi(c.M1, t);
  return add(x, U128{x1, 0});
}
// The symmetric value of x in [0, M + M/2] (crt_join's x < M + 6 M1): x, x - M or -(M - x), as
// crt_signed gives for x mod M.
DISTMM_HD double crt_signed_near(U128 x, const Crt& c) { return crt_signed(ge(x, c.M) ? sub(x, c.M) : x, c); }

// The CRT in one 64-bit word where N M < 2^60 (N <= 7): S = sum u_l M_l < N M, reduced once
// (reduce_small_quotient), the same S as the 128-bit sum, so the same double.
DISTMM_HD bool crt_fits_64(const Crt& c) { return c.M.hi == 0 && c.M.lo < (1ull << 60) / std::uint64_t(c.N); }
DISTMM_HD double crt_signed64(std::uint64_t S, const Crt& c) {
  return S <= c.half.lo ? double(S) : -double(c.M.lo - S);
}

// The scaling exponent of a row or column with computed 2-norm s 2^E: the largest e with
// s 2^(E + e) <= bound (a zero row keeps 0). The GPU's exponents kernel and the host twin.
DISTMM_HD int scale_exponent(double s, int E, double bound) {
  if (s == 0) return 0;
  int x = ilogb(bound / s) - E;
  while (ldexp(s, E + x + 1) <= bound) ++x;
  while (ldexp(s, E + x) > bound) --x;
  return x;
}

// The |A||B|-aware bound's terms for one entry (ozaki_accuracy.hpp, ProductStats): row i of
// op(A) with ||a_i||_2 = sa 2^Ea, ||a_i||_1 = la 2^Ea, column j of op(B) alike (sb, lb, Eb), and
// S the exact integer sum over h of floor(|a_ih| 2^(6 - Ea)) floor(|b_hj| 2^(6 - Eb)), so that
// L = S 2^(Ea + Eb - 12) <= (|A||B|)_ij. Then X = (||a_i||_2 ||b_j||_1 + ||b_j||_2 ||a_i||_1) / L
// and Y = kk ||a_i||_2 ||b_j||_2 / L, the powers of two cancelling; both 0 where a_i or b_j is
// zero (no error), infinite where L is 0 but |A||B| may not be.
struct ProductTerms {
  double X, Y;
};
DISTMM_HD ProductTerms product_terms(double sa, double la, double sb, double lb, long long S, long long kk) {
  if (sa == 0 || sb == 0) return {0, 0};
  if (S <= 0) return {INFINITY, INFINITY};
  const double L = double(S) * 0x1p-12;
  return {(sa * lb + sb * la) / L, double(kk) * sa * sb / L};
}
// The exponent that maps a row's entries below 2^7: floor(|x| 2^g) <= 127 for |x| < 2^(E + 1).
DISTMM_HD int magnitude_exponent(double s, int E) { return s == 0 ? 0 : 6 - E; }
// Rows (columns) taken in pairs for the bound's product share one exponent, the larger E of the
// nonzero ones, so that the smaller of two floored magnitudes compares like with like (a row
// whose largest entry rounds up to the next power of two would otherwise count half).
DISTMM_HD int pair_exponent(double s0, int E0, double s1, int E1) {
  return s0 == 0 ? E1 : s1 == 0 ? E0 : (E0 > E1 ? E0 : E1);
}
// A pair's norms in the shared scale: the larger of s_r 2^(E_r - E), exact (no underflow can
// lower the larger one, whose E is the pair's).
DISTMM_HD double pair_norm(double x0, int E0, double x1, int E1, int E) {
#ifdef __CUDA_ARCH__
  return fmax(ldexp(x0, E0 - E), ldexp(x1, E1 - E));
#else
  return std::fmax(std::ldexp(x0, E0 - E), std::ldexp(x1, E1 - E));
#endif
}

// log2 M for N moduli.
inline double log2_product(int N) {
  double s = 0;
  for (int l = 0; l < N; ++l) s += std::log2(double(modulus(l)));
  return s;
}
// The bound T' on ||x_o|| 2^e for every row of op(A) and column of op(B) with kk entries:
// after rounding, ||a'|| <= T' + sqrt(kk) / 2 = T with T^2 < M / 2 (a 2^-20 margin covers the
// rounding of the computed norms), so |a' . b'| < M / 2 and the CRT recovers it exactly.
inline double scale_bound(int N, long long kk) {
  return std::exp2((log2_product(N) - 1) / 2) * (1 - 0x1p-20) - 0.5 * std::sqrt(double(kk));
}

// The accuracy rule: log2 T' must reach (a) log2(2 / u), so that the normwise error (about
// sqrt(k) / T relative to ||a_i|| ||b_j||) stays below half the native routine's (about
// u sqrt(k)), and (b) the bits the entry at each row's and column's geometric mean must keep
// (16 for single, 45 for double precision) plus the largest "deficit" log2 ||x|| - mean log2 |x_h|
// (how far that entry sits below the norm the scaling is taken from; about 7.6 bits for uniform
// inputs with k = 16384, tens of bits for a wide exponent range).
// Leaves under L Strassen-like levels (whose bound is 12^L times the classical one) may err up
// to sqrt(12^L) times more than that: half of the levels' growth, in bits, comes off both.
inline double required_bits(bool single, double deficit, int levels_above = 0) {
  const double relax = 0.5 * std::log2(12.0) * levels_above;
  const double normwise = (single ? 25 : 54) - relax, kept = (single ? 16 : 45) - relax;
  return std::fmax(normwise, kept + deficit);
}
// The fewest moduli whose bound reaches `bits` for rows of kk entries; 0 when 16 do not.
inline int fewest_moduli(double bits, long long kk) {
  for (int N = 2; N <= kMaxModuli; ++N)
    if (std::log2(scale_bound(N, kk)) >= bits) return N;
  return 0;
}

}  // namespace distmm::ozaki
