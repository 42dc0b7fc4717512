// Ozaki scheme II on INT8 tensor cores (see int8_emulation.hpp for the method and the accuracy
// rule). One product takes these passes, all on the caller's stream:
//   1. outer_stats: per row of op(A) and column of op(B), the largest magnitude, the 2-norm
//      (scaled by a power of two, so f64 cannot overflow; in one pass, f64 too unless the
//      smallest entries' scaled squares could be subnormal), the
//      mean binary exponent of the nonzero entries and a NaN/Inf flag; the largest "deficit"
//      (log2 norm - mean exponent) over all of them goes to the host, which picks the moduli
//      count N; where the spread's bound leaves room, the |A||B|-aware bound
//      (ozaki_accuracy.hpp) reads one more INT8 product: the magnitudes floored to 7 bits
//      (to_slices<Magnitude>), in pairs of rows and columns where f32's margin allows
//      (pair_outer: a quarter of the product), their exact product, and product_ratios'
//      largest X and Y;
//   2. exponents: e_i, f_j, the largest shifts with 2^e ||a_i|| + sqrt(k) / 2 <= T;
//   3. to_slices: the scaled, rounded integers reduced to the N symmetric int8 residues (in
//      32-bit integers, double precision or 64-bit integers by their size: Width), written
//      k-contiguous (the "TN" layout INT8 GEMMs want), transposed through shared memory where
//      the operand is stored the other way;
//   4. per modulus: one cuBLASLt INT8 GEMM (int32 sums, exact), then fold_residue reduces the
//      int32 result to (C mod m_l) * y_l mod m_l in one byte, on a second stream, beside the next
//      modulus' product on SMs it leaves free where that pays (DISTMM_EMULATION_SIDE_SMS);
//   5. crt_combine: the N bytes of each entry give A'B' by the CRT (in one 64-bit word for
//      N <= 7, two joined by Garner's step for N <= 14, else 128-bit integers: CrtForm), scaled
//      back by 2^-(e_i + f_j), C = alpha AB + beta C (C is not read when beta = 0).
// Every way of computing a step gives the same integers, so the same result bit for bit.
// Row blocks and column panels of C bound the workspace when the whole product does not fit
// (DISTMM_EMULATION_WORKSPACE caps it).
#include "int8_emulation.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../src/core/settings.hpp"
#include "emulation_blocks.hpp"
#include "lt_gemm.cuh"
#include "ozaki_accuracy.hpp"
#include "ozaki_arith.hpp"

namespace distmm {
namespace {

using ozaki::modulus;
constexpr int kMax = ozaki::kMaxModuli;
using ozaki::scale_bound;
using emulation::align256;
using emulation::kMaxChunk;  // (a chunk of k whose int32 sums are exact)
using emulation::round_up;
using emulation::Sizes;
using emulation::sizes_for;
// fold_winograd sums a real product's four quarter products without reducing them first below it:
// each is below (Kp / 2) 2^14, so four stay inside int32.
constexpr index_t kRawSumsBelow = 65536;
static_assert(4LL * ((kRawSumsBelow - 16) / 2) * 128 * 128 <= 2147483647LL, "one level: a sum of four products fits int32");

// f(std::integral_constant<int, l>) for l = 0 .. N-1: every modulus is a compile-time constant
// inside f, so its divisions become multiplications.
template <int L = 0, class F>
__device__ __forceinline__ void for_moduli(int N, F&& f) {
  if constexpr (L < kMax) {
    if (L < N) {
      f(std::integral_constant<int, L>{});
      for_moduli<L + 1>(N, f);
    }
  }
}

// How the scaled entries' residues are taken, by their largest magnitude (T' + 1/2): below
// 2^31 in 32-bit integers (ozaki::residue32), below 2^56 in double precision
// (ozaki::residue_fp: the rounded entry is an integer-valued double, exactly), else from
// 64-bit integers; the same residue each way.
enum class Width { int32, fp64, int64 };
Width width_for(double largest) {
  return largest < 0x1p31 ? Width::int32 : largest < 0x1p56 ? Width::fp64 : Width::int64;
}
// The scaled, rounded entry as the residues read it: a double in the fp64 width (no conversion
// to an integer and back), a 32-bit integer in the int32 width (half the shared memory and
// registers of the slice kernels' tiles), else a 64-bit integer.
template <Width W>
using Scaled = std::conditional_t<W == Width::fp64, double, std::conditional_t<W == Width::int32, int, long long>>;
// The residue in [0, m_L) of a scaled entry, and the slices' word of four consecutive ones: their
// symmetric residues' bytes (ozaki::symmetric_bytes).
template <int L, Width W>
__device__ __forceinline__ unsigned residue(Scaled<W> v) {
  constexpr int m = modulus(L);
  if constexpr (W == Width::int32) return ozaki::residue32<m>(v);
  else if constexpr (W == Width::fp64) return ozaki::residue_fp<m>(v);
  else {
    const int r = ozaki::sym_residue<m>(v);
    return unsigned(r < 0 ? r + m : r);
  }
}
template <int L>
__device__ __forceinline__ unsigned slice_word(const unsigned (&u)[4]) {
  return ozaki::symmetric_bytes<modulus(L)>(ozaki::pack_bytes(u[0], u[1], u[2], u[3]));
}
template <int L, Width W>
__device__ __forceinline__ unsigned slice_word(const Scaled<W> (&v)[4]) {
  const unsigned u[4] = {residue<L, W>(v[0]), residue<L, W>(v[1]), residue<L, W>(v[2]), residue<L, W>(v[3])};
  return slice_word<L>(u);
}

template <class T>
struct Parts {  // an element as its real components
  static constexpr int count = 1;
  __device__ static double get(const T& x, int) { return double(x); }
};
template <class R>
struct Parts<std::complex<R>> {
  static constexpr int count = 2;
  __device__ static double get(const std::complex<R>& x, int p) {
    const R* r = reinterpret_cast<const R*>(&x);
    return double(r[p]);
  }
};

struct OuterStat {
  double s;   // ||x||_2 = s 2^E
  double l1;  // ||x||_1 = l1 2^E
  int E;      // ilogb of the largest |component|
  int pad;
};
struct Flags {
  unsigned max_deficit;  // float bits of the largest deficit (>= 0, so they order as integers)
  unsigned max_spread;   // float bits of the largest spread (log2 norm - smallest exponent)
  unsigned max_l2_linf;  // float bits of the largest ||x||_2 / ||x||_inf
  int nonfinite;
  unsigned long long X, Y;  // double bits of product_ratios' largest X and Y (flags[0] only)
};

// Element (h, o) of op(X) as stored: k-contiguous (X[h + o ld]) or outer-contiguous (X[o + h ld]).
template <bool KContig>
__device__ __forceinline__ index_t at(index_t h, index_t o, index_t ld) {
  return KContig ? h + o * ld : o + h * ld;
}

// Statistics per outer index o (a row of op(A) or a column of op(B)), over its K entries.
// Block: 32 x 16 threads; k-contiguous operands walk h with threadIdx.x (coalesced) and take
// 16 outer indices per block, outer-contiguous ones walk o with threadIdx.x and split h over
// threadIdx.y. Partial results meet in shared memory.
// The smallest 2 (emin - E) for which outer_stats' one pass in double precision gives the
// second pass's bits: its squares then lie at or above 2^-1000, clear of the subnormals (2^-1022).
constexpr int kOnePassFloor = -1000;
// ilogb(a) of a finite nonzero double, from its exponent bits where it is normal (ilogb's own
// cases cost more than the rest of outer_stats' work per entry).
__device__ __forceinline__ int exponent_of(double a) {
  const int biased = int((__double_as_longlong(a) >> 52) & 0x7ff);
  return biased != 0 ? biased - 1023 : ilogb(a);
}
template <class T, bool KContig>
__global__ void __launch_bounds__(512) outer_stats(index_t K, index_t O, const T* X, index_t ld,
                                                   OuterStat* st, Flags* flags) {
  using P = Parts<T>;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const index_t o = KContig ? blockIdx.x * index_t(16) + ty : blockIdx.x * index_t(32) + tx;
  const int lane = KContig ? tx : ty, lanes = KContig ? 32 : 16;
  __shared__ double smax[16][33], ssum[16][33], sl1[16][33];
  __shared__ long long slog[16][33];
  __shared__ int snnz[16][33], sbad[16][33], semin[16][33];
  const int r = KContig ? ty : ty, c = KContig ? tx : tx;  // shared slot of this thread
  // Single precision in one pass: its squares and sums neither overflow nor underflow in double,
  // so the sums scaled by 2^-2E and 2^-E at the end are the scaled entries' sums, bit for bit.
  constexpr bool one_pass = sizeof(real_t<T>) == 4;
  // Double precision in one pass too where it gives the same bits: each thread sums its entries
  // scaled by 2^-e, e its largest exponent so far (a larger one rescales the sums), and scales its
  // sums by 2^(e - E) at the end. Multiplying by a power of two is exact and commutes with
  // rounding while no value is subnormal, so these are the sums of the entries scaled by 2^-E, in
  // the same order; where 2^(emin - E) may square into the subnormals, a second pass at 2^-E
  // (the sums of every value at that scale, as before) serves instead.
  double mx = 0, sum = 0, l1 = 0;
  long long logsum = 0;
  int nnz = 0, bad = 0, emin = INT_MAX, erun = INT_MIN;
  if (o < O)
    for (index_t h = lane; h < K; h += lanes) {
      const T x = X[at<KContig>(h, o, ld)];
      for (int p = 0; p < P::count; ++p) {
        const double a = fabs(P::get(x, p));
        if (!isfinite(a)) bad = 1;
        else if (a != 0) {
          const int ea = exponent_of(a);
          mx = fmax(mx, a), logsum += ea, ++nnz, emin = min(emin, ea);
          if (one_pass) {
            sum += a * a, l1 += a;
          } else {
            if (ea > erun) {  // (exact while the sums stay normal: checked below)
              if (erun != INT_MIN) sum = ldexp(sum, 2 * (erun - ea)), l1 = ldexp(l1, erun - ea);
              erun = ea;
            }
            const double v = ozaki::times_pow2(a, -erun);  // (ldexp's value: a power of two's product)
            sum += v * v, l1 += v;
          }
        }
      }
    }
  smax[r][c] = mx, slog[r][c] = logsum, snnz[r][c] = nnz, sbad[r][c] = bad, semin[r][c] = emin;
  __syncthreads();
  // Reduce along the h lanes: x for k-contiguous (row r = ty holds one o), y otherwise.
  auto reduce = [&](auto& arr, auto op) {
    for (int w = lanes / 2; w > 0; w /= 2) {
      if (lane < w) {
        if (KContig) arr[r][c] = op(arr[r][c], arr[r][c + w]);
        else arr[r][c] = op(arr[r][c], arr[r + w][c]);
      }
      __syncthreads();
    }
  };
  reduce(smax, [](double a, double b) { return fmax(a, b); });
  reduce(slog, [](long long a, long long b) { return a + b; });
  reduce(snnz, [](int a, int b) { return a + b; });
  reduce(sbad, [](int a, int b) { return a | b; });
  reduce(semin, [](int a, int b) { return min(a, b); });
  const double omax = KContig ? smax[r][0] : smax[0][c];
  const int E = omax > 0 ? ilogb(omax) : 0;
  // (the row's smallest exponent, reduced above: every scaled square and sum normal at 2^-E)
  const int row_emin = KContig ? semin[r][0] : semin[0][c];
  const bool second_pass = !one_pass && omax > 0 && 2 * (row_emin - E) < kOnePassFloor;
  if (!one_pass && !second_pass && erun != INT_MIN)
    sum = ldexp(sum, 2 * (erun - E)), l1 = ldexp(l1, erun - E);
  if (second_pass) sum = 0, l1 = 0;
  if (second_pass && o < O)
    for (index_t h = lane; h < K; h += lanes) {
      const T x = X[at<KContig>(h, o, ld)];
      for (int p = 0; p < P::count; ++p) {
        const double a = ldexp(P::get(x, p), -E);
        if (isfinite(a)) sum += a * a, l1 += fabs(a);
      }
    }
  __syncthreads();
  ssum[r][c] = sum, sl1[r][c] = l1;
  __syncthreads();
  reduce(ssum, [](double a, double b) { return a + b; });
  reduce(sl1, [](double a, double b) { return a + b; });
  if (o < O && lane == 0) {
    const int i = KContig ? r : 0, j = KContig ? 0 : c;
    const double s = sqrt(one_pass ? ldexp(ssum[i][j], -2 * E) : ssum[i][j]);
    st[o] = OuterStat{s, one_pass ? ldexp(sl1[i][j], -E) : sl1[i][j], E, 0};
    if (omax > 0) atomicMax(&flags->max_l2_linf, __float_as_uint(float(s / ldexp(omax, -E))));
    const int n = snnz[i][j];
    if (sbad[i][j]) atomicOr(&flags->nonfinite, 1);
    if (n > 0) {
      const float deficit = float(log2(s) + E - double(slog[i][j]) / n);
      atomicMax(&flags->max_deficit, __float_as_uint(fmaxf(deficit, 0.f)));
      const float spread = float(log2(s) + E - semin[i][j]);
      atomicMax(&flags->max_spread, __float_as_uint(fmaxf(spread, 0.f)));
    }
  }
}

// e_o: the largest shift with ||x_o|| 2^e <= bound (a zero row keeps 0); magnitude (the
// |A||B|-aware bound's product): the shift that brings the row's entries below 2^7, paired: the
// pair's (o and o ^ 1, ozaki::pair_exponent) shared one.
__global__ void exponents(index_t O, const OuterStat* st, double bound, bool magnitude, bool paired, int* e) {
  const index_t o = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (o >= O) return;
  if (!magnitude) {
    e[o] = ozaki::scale_exponent(st[o].s, st[o].E, bound);
    return;
  }
  const OuterStat& q = st[paired && (o ^ 1) < O ? o ^ 1 : o];
  e[o] = ozaki::magnitude_exponent(st[o].s + q.s, ozaki::pair_exponent(st[o].s, st[o].E, q.s, q.E));
}

// Slices: slice l holds the residues mod m_l, element (h, o) at dst[l * stride + h + o * Kp];
// a complex element's imaginary part goes to outer index o + imag_at (the stacked operand).
struct SliceOut {
  int8_t* dst;
  std::size_t stride;
  index_t Kp;
  index_t imag_at;
  int N;
};

// The scaled entry rounded to an integer (to nearest, ties to even: the same integer as a
// double or a 64-bit integer), or (Magnitude) |entry| 2^e floored: in [0, 127], its own residue
// mod 256, so one "slice" holds it.
template <bool Magnitude, Width W, class T>
__device__ __forceinline__ Scaled<W> scaled(const T& x, int p, int e, bool conj) {
  double v = ozaki::times_pow2(Parts<T>::get(x, p), e);
  if (Magnitude) return Scaled<W>(floor(fabs(v)));
  if (conj && p == 1) v = -v;
  if constexpr (W == Width::fp64) return rint(v);
  else if constexpr (W == Width::int32) return __double2int_rn(v);
  else return __double2ll_rn(v);
}

// k-contiguous operands: each thread takes 4 consecutive h of one o and writes one word per
// slice; h in [K, Kp) is written as zeros. W: how the residues are taken (width_for).
template <class T, bool Magnitude, Width W>
__global__ void to_slices_kcontig(index_t K, index_t O, const T* X, index_t ld, bool conj,
                                  const int* e, SliceOut out) {
  const index_t h0 = 4 * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (h0 >= out.Kp) return;
  for (index_t o = blockIdx.y; o < O; o += gridDim.y) {
    const int eo = e[o];
    for (int p = 0; p < Parts<T>::count; ++p) {
      Scaled<W> v[4];
      for (int t = 0; t < 4; ++t)
        v[t] = h0 + t < K ? scaled<Magnitude, W>(X[h0 + t + o * ld], p, eo, conj) : 0;
      const index_t col = o + p * out.imag_at;
      for_moduli(out.N, [&](auto lc) {
        constexpr int L = decltype(lc)::value;
        *reinterpret_cast<unsigned*>(out.dst + L * out.stride + h0 + col * out.Kp) = slice_word<L, W>(v);
      });
    }
  }
}

// Outer-contiguous operands: a 32 x 32 tile read along o (coalesced), written along h.
template <class T, bool Magnitude, Width W>
__global__ void __launch_bounds__(256) to_slices_transpose(index_t K, index_t O, const T* X, index_t ld,
                                                           bool conj, const int* e, SliceOut out) {
  __shared__ Scaled<W> tile[2][32][33];
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
  const index_t h0 = blockIdx.x * index_t(32), o0 = blockIdx.y * index_t(32);
  {
    const index_t o = o0 + tx;
    const int eo = o < O ? e[o] : 0;
    for (int r = ty; r < 32; r += 8) {
      const index_t h = h0 + r;
      const bool in = o < O && h < K;
      for (int p = 0; p < Parts<T>::count; ++p)
        tile[p][r][tx] = in ? scaled<Magnitude, W>(X[o + h * ld], p, eo, conj) : 0;
    }
  }
  __syncthreads();
  // written as the k-contiguous kernel writes: four consecutive h of one o per thread, one word
  // per slice (Kp is a multiple of 4), eight threads along each row of the tile
  const int t = ty * 32 + tx, hq = t & 7, orow = t >> 3;
  const index_t h = h0 + 4 * hq, o = o0 + orow;
  if (h >= out.Kp || o >= O) return;
  for (int p = 0; p < Parts<T>::count; ++p) {
    Scaled<W> v[4];
    for (int u = 0; u < 4; ++u) v[u] = tile[p][4 * hq + u][orow];
    const index_t col = o + p * out.imag_at;
    for_moduli(out.N, [&](auto lc) {
      constexpr int L = decltype(lc)::value;
      *reinterpret_cast<unsigned*>(out.dst + L * out.stride + h + col * out.Kp) = slice_word<L, W>(v);
    });
  }
}

// A block's slices and, beside them, each modulus' Winograd sums (winograd_sums' values, without
// reading the slices back: the sums pass reads and writes a slice per operand and modulus, this
// writes one more). Blocks that take the level only: the stacked outer indices parts O (= Op)
// and Kp are multiples of 32, so each quadrant is Kh = Kp / 2 by Oh = Op / 2. Each thread block
// takes a 32 x 32 tile of (h, stacked outer index) in the first quadrant and the same tiles of
// the other three, read along the operand's contiguous index (KContig: h, else o); then each
// thread writes four consecutive h of one outer index per quadrant and modulus, residues and sums
// (ozaki::winograd_a for op(A), winograd_b for op(B)) at the same positions of slice l and of
// sums + l sums_stride.
template <class T, Width W, bool KContig, bool OfA>
__global__ void __launch_bounds__(256) to_slices_and_sums(index_t K, index_t O, const T* X, index_t ld, bool conj,
                                                          const int* e, SliceOut out, int8_t* sums,
                                                          std::size_t sums_stride) {
  __shared__ Scaled<W> tile[4][32][33];
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
  const index_t Kh = out.Kp / 2, Oh = Parts<T>::count * O / 2;
  const index_t h0 = blockIdx.x * index_t(32), q0 = blockIdx.y * index_t(32);
  // quadrant d = 2 r + c (winograd_sums' order): op(A)'s r halves its rows and c halves k,
  // op(B)'s r halves k and c its columns
  auto h_off = [&](int d) { return (OfA ? (d & 1) : (d >> 1)) * Kh; };
  auto q_off = [&](int d) { return (OfA ? (d >> 1) : (d & 1)) * Oh; };
  for (int d = 0; d < 4; ++d)
    for (int u = ty; u < 32; u += 8) {
      const int hl = KContig ? tx : u, ql = KContig ? u : tx;
      const index_t h = h0 + hl, qi = q0 + ql;
      Scaled<W> v = 0;
      if (h < Kh && qi < Oh) {
        const index_t hh = h + h_off(d), q = qi + q_off(d);
        const int p = Parts<T>::count == 2 && q >= O ? 1 : 0;  // (stacked: the imaginary parts from O on)
        const index_t o = q - p * O;
        if (hh < K) v = scaled<false, W>(X[at<KContig>(hh, o, ld)], p, e[o], conj);
      }
      tile[d][hl][ql] = v;
    }
  __syncthreads();
  const int t = ty * 32 + tx, hq = t & 7, orow = t >> 3;
  const index_t h = h0 + 4 * hq, qi = q0 + orow;
  if (h >= Kh || qi >= Oh) return;
  for_moduli(out.N, [&](auto lc) {
    constexpr int L = decltype(lc)::value;
    // (residues in [0, m): the sums' one compare each; one h at a time, read from the tile again
    // for each modulus and its bytes put into the words at once, so that few registers hold
    // them and more blocks fit on an SM)
    unsigned rw[4] = {0, 0, 0, 0}, sw[4] = {0, 0, 0, 0};
    for (int u = 0; u < 4; ++u) {
      const volatile Scaled<W>* at = &tile[0][4 * hq + u][orow];  // (volatile: not kept across moduli)
      constexpr int quadrant = 32 * 33;  // (tile[d + 1] - tile[d])
      const unsigned a[4] = {residue<L, W>(at[0]), residue<L, W>(at[quadrant]), residue<L, W>(at[2 * quadrant]),
                             residue<L, W>(at[3 * quadrant])};
      unsigned c[4];
      if constexpr (OfA) ozaki::winograd_a<modulus(L)>(a, c);
      else ozaki::winograd_b<modulus(L)>(a, c);
      for (int d = 0; d < 4; ++d) rw[d] |= a[d] << (8 * u), sw[d] |= c[d] << (8 * u);
    }
    for (int d = 0; d < 4; ++d) {
      const std::size_t at_d = std::size_t(h + h_off(d)) + std::size_t(qi + q_off(d)) * out.Kp;
      *reinterpret_cast<unsigned*>(out.dst + L * out.stride + at_d) = ozaki::symmetric_bytes<modulus(L)>(rw[d]);
      *reinterpret_cast<unsigned*>(sums + L * sums_stride + at_d) = ozaki::symmetric_bytes<modulus(L)>(sw[d]);
    }
  });
}

// One modulus: the int32 product (rows x cols of the stacked operands, ld = ldc) reduced to
// u = (C mod m) y mod m, one byte per entry of C (two planes for complex: Re = RR - II,
// Im = RI + IR, combined before the reduction).
// V = 4: four consecutive i per thread (real products with m and ldc multiples of 4: one int4
// load and one uchar4 store).
template <int L, bool Complex, int V>
__global__ void fold_residue(index_t m, index_t n, const int* C, index_t ldc, int y, uint8_t* R) {
  constexpr int mod = modulus(L);
  const index_t i = V * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (i >= m) return;
  for (index_t j = blockIdx.y; j < n; j += gridDim.y) {
    if constexpr (V == 4) {
      const int4 c = *reinterpret_cast<const int4*>(C + i + j * ldc);
      *reinterpret_cast<uchar4*>(R + i + j * m) =
          make_uchar4(uint8_t(ozaki::fold<mod>(c.x, y)), uint8_t(ozaki::fold<mod>(c.y, y)),
                      uint8_t(ozaki::fold<mod>(c.z, y)), uint8_t(ozaki::fold<mod>(c.w, y)));
    } else if constexpr (!Complex) {
      R[i + j * m] = uint8_t(ozaki::fold<mod>(C[i + j * ldc], y));
    } else {
      const long long re = (long long)C[i + j * ldc] - C[(i + m) + (j + n) * ldc];
      const long long im = (long long)C[i + (j + n) * ldc] + C[(i + m) + j * ldc];
      R[i + j * m] = uint8_t(ozaki::fold<mod>(re, y));
      R[m * n + i + j * m] = uint8_t(ozaki::fold<mod>(im, y));
    }
  }
}

// One exact Winograd level in the residues (ozaki::winograd_a / winograd_b): from the four
// quadrants of the slice of modulus L (Kh = Kp / 2 h's by Oh = Op / 2 outer indices each, ld Kp),
// the four sums into the same positions of `sums`. Quadrant q = 2 r + c: for op(A), r is the
// half of its rows (outer index) and c that of k; for op(B), r is the half of k and c that of
// its columns. Each thread takes 16 consecutive h (16 bytes per quadrant; Kh is a multiple of 16).
template <int L, bool OfA>
__global__ void winograd_sums(index_t Kh, index_t Oh, index_t Kp, const int8_t* X, int8_t* sums) {
  constexpr int mod = modulus(L);
  struct alignas(16) Bytes {
    int8_t b[16];
  };
  const index_t h0 = 16 * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (h0 >= Kh) return;
  for (index_t o = blockIdx.y; o < Oh; o += gridDim.y) {
    index_t at[4];
    Bytes in[4], out[4];
    for (int q = 0; q < 4; ++q) {
      const int r = q >> 1, c = q & 1;
      at[q] = h0 + (OfA ? c : r) * Kh + (o + (OfA ? r : c) * Oh) * Kp;
      in[q] = *reinterpret_cast<const Bytes*>(X + at[q]);
    }
    for (int t = 0; t < 16; ++t) {
      int v[4], w[4];
      for (int q = 0; q < 4; ++q) v[q] = in[q].b[t];
      if constexpr (OfA) ozaki::winograd_a<mod>(v, w);
      else ozaki::winograd_b<mod>(v, w);
      for (int q = 0; q < 4; ++q) out[q].b[t] = int8_t(w[q]);
    }
    for (int q = 0; q < 4; ++q) *reinterpret_cast<Bytes*>(sums + at[q]) = out[q];
  }
}

// One modulus after a Winograd level: the seven quarter products P1..P7 (hr x hw each, ld hr,
// `quarter` ints apart), each reduced mod m (so that the sums of four stay small), combined into
// C's quadrants (ozaki::winograd_c) and folded as fold_residue folds. Real: the four quadrants
// into R (2 hr x 2 hw, ld 2 hr). Complex: the stacked operands' halves are the real and imaginary
// parts, so the quadrants are RR, RI, IR and II; Re = RR - II and Im = RI + IR go to the two
// planes of R (hr x hw each, ld hr). Four consecutive i per thread (hr is a multiple of 16).
// Sums: real products whose Kp is below 2^16 sum the products as they are (each is below
// (Kp / 2) 2^14, so four stay inside int32) and take one remainder per quadrant, not seven.
template <int L, bool Complex, bool Raw>
__global__ void fold_winograd(index_t hr, index_t hw, const int* P, std::size_t quarter, int y, uint8_t* R) {
  constexpr int mod = modulus(L);
  constexpr int outs = Complex ? 2 : 4;
  const index_t i = 4 * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (i >= hr) return;
  for (index_t j = blockIdx.y; j < hw; j += gridDim.y) {
    int4 p4[7];
    for (int r = 0; r < 7; ++r) p4[r] = *reinterpret_cast<const int4*>(P + r * quarter + i + j * hr);
    uchar4 out[outs];
    auto lane = [&](auto get, auto put) {
      int p[7], c[4];
      for (int r = 0; r < 7; ++r) p[r] = Raw ? get(p4[r]) : get(p4[r]) % mod;
      ozaki::winograd_c(p, c);
      if constexpr (Complex) {
        put(out[0], uint8_t(ozaki::fold<mod>(c[0] - c[3], y)));
        put(out[1], uint8_t(ozaki::fold<mod>(c[1] + c[2], y)));
      } else {
        for (int q = 0; q < 4; ++q) put(out[q], uint8_t(ozaki::fold<mod>(c[q], y)));
      }
    };
    lane([](int4 c) { return c.x; }, [](uchar4& u, uint8_t v) { u.x = v; });
    lane([](int4 c) { return c.y; }, [](uchar4& u, uint8_t v) { u.y = v; });
    lane([](int4 c) { return c.z; }, [](uchar4& u, uint8_t v) { u.z = v; });
    lane([](int4 c) { return c.w; }, [](uchar4& u, uint8_t v) { u.w = v; });
    if constexpr (Complex) {
      *reinterpret_cast<uchar4*>(R + i + j * hr) = out[0];            // Re
      *reinterpret_cast<uchar4*>(R + hr * hw + i + j * hr) = out[1];  // Im
    } else {
      const index_t ld = 2 * hr;
      *reinterpret_cast<uchar4*>(R + i + j * ld) = out[0];              // C11
      *reinterpret_cast<uchar4*>(R + i + (j + hw) * ld) = out[1];       // C12
      *reinterpret_cast<uchar4*>(R + i + hr + j * ld) = out[2];         // C21
      *reinterpret_cast<uchar4*>(R + i + hr + (j + hw) * ld) = out[3];  // C22
    }
  }
}

// One modulus after two Winograd levels (real products): the 49 products P_{r,t} (hr x hw each,
// ld hr, `sixteenth` ints apart; r the first level's product, t the second's inside it); the
// second level's winograd_c gives the four quadrants of the first level's product r, reduced
// mod m, and the first level's winograd_c over r gives C's sixteen blocks, folded as
// fold_residue folds into R (4 hr x 4 hw, ld 4 hr): block (q, t) at C's quadrant q and its
// quadrant t. The second level's sums of four products need no reduction first: each product
// is below (Kp / 4) 2^14 (symmetric residues are at most 128 in magnitude) and Kp <= kMaxChunk,
// so four stay inside int32 (the assertion below); the first level's sums of four reduced
// quadrants stay below 4 m, so their fold is one remainder of c y: 28 + 16 remainders per
// sixteen cells of C instead of 49 + 32 (the fold's serial time at f64 32768 on an H200: 60.7 ->
// 50.0 ms; docs/performance.md, "Session 35"). Two consecutive i per thread (hr is a multiple
// of 16): each load a warp's 256 contiguous bytes.
static_assert(4LL * (kMaxChunk / 4) * 128 * 128 <= 2147483647LL, "two levels: a sum of four products fits int32");
template <int L>
__global__ void fold_two_levels(index_t hr, index_t hw, const int* P, std::size_t sixteenth, int y, uint8_t* R) {
  constexpr int mod = modulus(L);
  const index_t i = 2 * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (i >= hr) return;
  const index_t ld = 4 * hr;
  for (index_t j = blockIdx.y; j < hw; j += gridDim.y) {
    int inner[2][4][7];  // inner[lane][t][r]: quadrant t of the first level's product r, mod m
    for (int r = 0; r < 7; ++r) {
      int2 p2[7];
      for (int t = 0; t < 7; ++t) p2[t] = *reinterpret_cast<const int2*>(P + (7 * r + t) * sixteenth + i + j * hr);
      for (int lane = 0; lane < 2; ++lane) {
        int p[7], c[4];
        for (int t = 0; t < 7; ++t) p[t] = lane == 0 ? p2[t].x : p2[t].y;
        ozaki::winograd_c(p, c);
        for (int t = 0; t < 4; ++t) inner[lane][t][r] = c[t] % mod;
      }
    }
    for (int t = 0; t < 4; ++t) {
      int c[2][4];
      for (int lane = 0; lane < 2; ++lane) ozaki::winograd_c(inner[lane][t], c[lane]);
      for (int q = 0; q < 4; ++q) {
        const index_t row = i + (t >> 1) * hr + (q >> 1) * 2 * hr, col = j + (t & 1) * hw + (q & 1) * 2 * hw;
        uchar2 out;
        out.x = uint8_t(ozaki::fold_small<mod>(c[0][q], y));
        out.y = uint8_t(ozaki::fold_small<mod>(c[1][q], y));
        *reinterpret_cast<uchar2*>(R + row + col * ld) = out;
      }
    }
  }
}

// The |A||B|-aware bound's largest ratios (ozaki::product_terms) over a panel of w columns:
// S from the magnitudes' int32 product (complex: Re from RR + II, Im from RI + IR), mp x wp of
// it; step 2: rows and columns in pairs (pair_outer), each pair's larger norms.
// Each thread takes one i and the columns j = blockIdx.y + c gridDim.y; a warp's largest goes
// to the flags in one atomic (one per thread made them the pass's cost). The block's columns'
// norms are made once into shared memory (cols, ratio_columns(wp, gridDim.y) of them) instead of
// again by every thread for every entry (that made the pass a third of the bound's product).
inline index_t ratio_columns(index_t wp, index_t gy) { return (wp + gy - 1) / gy; }
template <bool Complex>
__global__ void product_ratios(index_t mp, index_t wp, const int* C, index_t ldc, const OuterStat* sa,
                               const OuterStat* sb, index_t m, index_t w, int step, long long kk, Flags* flags) {
  extern __shared__ double2 cols[];
  const index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  for (index_t c = threadIdx.x, j = blockIdx.y + c * gridDim.y; j < wp; c += blockDim.x, j = blockIdx.y + c * gridDim.y) {
    const OuterStat& b0 = sb[j * step];
    const OuterStat& b1 = sb[min(j * step + step, w) - 1];
    const int Eb = ozaki::pair_exponent(b0.s, b0.E, b1.s, b1.E);
    cols[c] = make_double2(ozaki::pair_norm(b0.s, b0.E, b1.s, b1.E, Eb), ozaki::pair_norm(b0.l1, b0.E, b1.l1, b1.E, Eb));
  }
  __syncthreads();
  double X = 0, Y = 0;
  if (i < mp) {
    const OuterStat& a0 = sa[i * step];
    const OuterStat& a1 = sa[min(i * step + step, m) - 1];
    const int Ea = ozaki::pair_exponent(a0.s, a0.E, a1.s, a1.E);
    const double as = ozaki::pair_norm(a0.s, a0.E, a1.s, a1.E, Ea), al = ozaki::pair_norm(a0.l1, a0.E, a1.l1, a1.E, Ea);
    index_t c = 0;
    for (index_t j = blockIdx.y; j < wp; j += gridDim.y, ++c) {
      const double bs = cols[c].x, bl = cols[c].y;
      for (int p = 0; p < (Complex ? 2 : 1); ++p) {
        const long long S = !Complex ? C[i + j * ldc]
                            : p == 0 ? (long long)C[i + j * ldc] + C[(i + mp) + (j + wp) * ldc]
                                     : (long long)C[i + (j + wp) * ldc] + C[(i + mp) + j * ldc];
        const ozaki::ProductTerms t = ozaki::product_terms(as, al, bs, bl, S, kk);
        X = fmax(X, t.X), Y = fmax(Y, t.Y);
      }
    }
  }
  for (int d = 16; d > 0; d /= 2)
    X = fmax(X, __shfl_xor_sync(0xffffffffu, X, d)), Y = fmax(Y, __shfl_xor_sync(0xffffffffu, Y, d));
  if (threadIdx.x % 32 == 0) {
    atomicMax(&flags->X, (unsigned long long)__double_as_longlong(X));
    atomicMax(&flags->Y, (unsigned long long)__double_as_longlong(Y));
  }
}

// The magnitudes' slice (Kp bytes per stacked outer index: O real ones, then O imaginary ones
// for complex) with outer indices in pairs: pair q of each part the smaller byte of 2q and
// 2q + 1 (the last one alone where O is odd, and the nonzero one where the other is zero: a zero
// row bounds nothing and would zero its partner); rows past parts * Pq of the Op written as zeros.
__global__ void pair_outer(index_t Kp, index_t O, int parts, index_t Pq, index_t Op, const OuterStat* st,
                           const int8_t* src, int8_t* dst) {
  const index_t v = (blockIdx.x * index_t(blockDim.x) + threadIdx.x) * 16;
  if (v >= Kp) return;
  for (index_t q = blockIdx.y; q < Op; q += gridDim.y) {
    uint4 out{0, 0, 0, 0};
    if (q < parts * Pq) {
      const index_t p = q / Pq, qq = q - p * Pq;
      index_t r1 = 2 * qq, r2 = min(2 * qq + 1, O - 1);
      if (st[r1].s == 0) r1 = r2;
      else if (st[r2].s == 0) r2 = r1;
      const index_t o1 = p * O + r1, o2 = p * O + r2;
      const uint4 x = *reinterpret_cast<const uint4*>(src + o1 * Kp + v);
      const uint4 y = *reinterpret_cast<const uint4*>(src + o2 * Kp + v);
      out = make_uint4(__vminu4(x.x, y.x), __vminu4(x.y, y.y), __vminu4(x.z, y.z), __vminu4(x.w, y.w));
    }
    *reinterpret_cast<uint4*>(dst + q * Kp + v) = out;
  }
}

// A'B' from its residues (bytes u_l at R[l * plane + i + j * m], complex: then the imaginary
// plane at + m n), scaled back and merged into C.
// Form: how the sums are kept, the same values each way: one 64-bit word, reduced once, where
// N M < 2^60 (N <= 7, ozaki::crt_sum_add); two 64-bit words joined by Garner's step for
// 8 <= N <= 14 (ozaki::crt_join); else 128-bit integers. V = 4: four consecutive i per thread
// (real products with m a multiple of 4: one 4-byte load per modulus, and where C's columns
// are 16-byte aligned one 16-byte access to C).
enum class CrtForm { one_word, split, wide };
// Four consecutive entries of C in 16-byte accesses (aligned: C's columns start at multiples of
// 16 bytes), as doubles.
__device__ __forceinline__ void load4(const float* p, double (&o)[4]) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  o[0] = q.x, o[1] = q.y, o[2] = q.z, o[3] = q.w;
}
__device__ __forceinline__ void load4(const double* p, double (&o)[4]) {
  const double2 a = *reinterpret_cast<const double2*>(p), b = *reinterpret_cast<const double2*>(p + 2);
  o[0] = a.x, o[1] = a.y, o[2] = b.x, o[3] = b.y;
}
__device__ __forceinline__ void store4(float* p, const double (&o)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(float(o[0]), float(o[1]), float(o[2]), float(o[3]));
}
__device__ __forceinline__ void store4(double* p, const double (&o)[4]) {
  *reinterpret_cast<double2*>(p) = make_double2(o[0], o[1]);
  *reinterpret_cast<double2*>(p + 2) = make_double2(o[2], o[3]);
}
// A real entry of C from the unscaled product v: alpha v (+ beta c), each product and the sum
// rounded once, in intrinsics, which the compiler neither fuses nor reorders: the same bits
// whichever path (one entry or four) computes it.
__device__ __forceinline__ double merged(double alpha, double v, double beta, double c) {
  const double av = __dmul_rn(alpha, v);
  return beta != 0 ? __dadd_rn(av, __dmul_rn(beta, c)) : av;
}
template <class R, bool Complex, CrtForm Form, int V>
__global__ void crt_combine(index_t m, index_t n, const uint8_t* Rs, std::size_t plane,
                            ozaki::Crt crt, const int* ea, const int* eb, double2 alpha,
                            double2 beta, R* C, index_t ldc, bool aligned) {
  const index_t i = V * (blockIdx.x * index_t(blockDim.x) + threadIdx.x);
  if (i >= m) return;
  int ei[V];
  for (int t = 0; t < V; ++t) ei[t] = ea[i + t];
  for (index_t j = blockIdx.y; j < n; j += gridDim.y) {
    double v[2][V];
    for (int p = 0; p < (Complex ? 2 : 1); ++p) {
      const uint8_t* u = Rs + p * m * n + i + j * m;
      auto bytes = [&](int l, unsigned (&b)[V]) {
        if constexpr (V == 4) {
          const uchar4 q = *reinterpret_cast<const uchar4*>(u + l * plane);
          b[0] = q.x, b[1] = q.y, b[2] = q.z, b[3] = q.w;
        } else {
          b[0] = u[l * plane];
        }
      };
      // f(l, t, u) for every modulus l (a compile-time constant) and entry t: u its byte
      // (loading every modulus' bytes first instead: 11% more instructions and 2.7% slower at
      // f64 16384, ALU-bound; docs/performance.md, "Session 37")
      auto each = [&](auto&& f) {
        for_moduli(crt.N, [&](auto lc) {
          unsigned b[V];
          bytes(decltype(lc)::value, b);
          for (int t = 0; t < V; ++t) f(lc, t, b[t]);
        });
      };
      double x[V];
      if constexpr (Form == CrtForm::one_word) {
        ozaki::CrtSum S[V];
        each([&](auto lc, int t, unsigned b) { ozaki::crt_sum_add(S[t], crt.Ml[decltype(lc)::value].lo, b); });
        for (int t = 0; t < V; ++t)
          x[t] = ozaki::crt_signed64(ozaki::reduce_small_quotient(ozaki::crt_sum_value(S[t]), crt.M.lo, crt.M_recip), crt);
      } else if constexpr (Form == CrtForm::split) {
        ozaki::CrtSum x1[V], x2[V];
        each([&](auto lc, int t, unsigned b) {
          constexpr int l = decltype(lc)::value;
          ozaki::crt_sum_add(l < ozaki::kSplitAt ? x1[t] : x2[t], crt.G[l], b);
        });
        for (int t = 0; t < V; ++t)
          x[t] = ozaki::crt_signed_near(ozaki::crt_join(ozaki::crt_sum_value(x1[t]), ozaki::crt_sum_value(x2[t]), crt), crt);
      } else {
        ozaki::U128 S[V];
        each([&](auto lc, int t, unsigned b) { ozaki::crt_add(S[t], crt, decltype(lc)::value, b); });
        for (int t = 0; t < V; ++t) x[t] = ozaki::crt_signed(S[t], crt);
      }
      for (int t = 0; t < V; ++t) v[p][t] = ozaki::times_pow2(x[t], -(ei[t] + eb[j]));
    }
    if constexpr (!Complex && V == 4) {
      if (aligned) {  // (the same roundings as one entry at a time below: merged)
        R* c = C + i + j * ldc;
        double out[4], old[4] = {0, 0, 0, 0};
        if (beta.x != 0) load4(c, old);  // (C is not read when beta = 0)
        for (int t = 0; t < 4; ++t) out[t] = merged(alpha.x, v[0][t], beta.x, old[t]);
        store4(c, out);
        continue;
      }
    }
    for (int t = 0; t < V; ++t) {
      if constexpr (!Complex) {
        R& c = C[i + t + j * ldc];
        c = R(merged(alpha.x, v[0][t], beta.x, beta.x != 0 ? double(c) : 0.0));
      } else {
        R* c = C + 2 * (i + t + j * ldc);
        double re = alpha.x * v[0][t] - alpha.y * v[1][t], im = alpha.x * v[1][t] + alpha.y * v[0][t];
        if (beta.x != 0 || beta.y != 0) {
          const double cr = c[0], ci = c[1];
          re += beta.x * cr - beta.y * ci, im += beta.x * ci + beta.y * cr;
        }
        c[0] = R(re), c[1] = R(im);
      }
    }
  }
}

template <int L = 0>
void launch_fold(int l, bool complex, index_t m, index_t n, const int* C, index_t ldc, int y,
                 uint8_t* R, cudaStream_t s) {
  if constexpr (L < kMax) {
    if (l != L) return launch_fold<L + 1>(l, complex, m, n, C, ldc, y, R, s);
    const bool vec = !complex && m % 4 == 0 && ldc % 4 == 0;
    const dim3 grid(unsigned(((vec ? m / 4 : m) + 255) / 256), unsigned(std::min<index_t>(n, 65535)));
    if (complex) fold_residue<L, true, 1><<<grid, 256, 0, s>>>(m, n, C, ldc, y, R);
    else if (vec) fold_residue<L, false, 4><<<grid, 256, 0, s>>>(m, n, C, ldc, y, R);
    else fold_residue<L, false, 1><<<grid, 256, 0, s>>>(m, n, C, ldc, y, R);
  }
}

template <int L = 0>
void launch_winograd_sums(int l, bool of_a, index_t Kh, index_t Oh, index_t ld, const int8_t* X, int8_t* sums,
                          cudaStream_t s) {
  if constexpr (L < kMax) {
    if (l != L) return launch_winograd_sums<L + 1>(l, of_a, Kh, Oh, ld, X, sums, s);
    const dim3 grid(unsigned((Kh / 16 + 127) / 128), unsigned(std::min<index_t>(Oh, 65535)));
    if (of_a) winograd_sums<L, true><<<grid, 128, 0, s>>>(Kh, Oh, ld, X, sums);
    else winograd_sums<L, false><<<grid, 128, 0, s>>>(Kh, Oh, ld, X, sums);
  }
}

// (hr x hw: the quarter products' shape, the stacked operands' halves)
template <int L = 0>
void launch_fold_winograd(int l, bool complex, index_t Kp, index_t hr, index_t hw, const int* P, std::size_t quarter,
                          int y, uint8_t* R, cudaStream_t s) {
  if constexpr (L < kMax) {
    if (l != L) return launch_fold_winograd<L + 1>(l, complex, Kp, hr, hw, P, quarter, y, R, s);
    const dim3 grid(unsigned((hr / 4 + 255) / 256), unsigned(std::min<index_t>(hw, 65535)));
    if (complex) fold_winograd<L, true, false><<<grid, 256, 0, s>>>(hr, hw, P, quarter, y, R);
    else if (Kp < kRawSumsBelow) fold_winograd<L, false, true><<<grid, 256, 0, s>>>(hr, hw, P, quarter, y, R);
    else fold_winograd<L, false, false><<<grid, 256, 0, s>>>(hr, hw, P, quarter, y, R);
  }
}

// (hr x hw: the 49 products' shape, a quarter of the real operands' rows and columns)
template <int L = 0>
void launch_fold_two_levels(int l, index_t hr, index_t hw, const int* P, std::size_t sixteenth, int y, uint8_t* R,
                            cudaStream_t s) {
  if constexpr (L < kMax) {
    if (l != L) return launch_fold_two_levels<L + 1>(l, hr, hw, P, sixteenth, y, R, s);
    const dim3 grid(unsigned((hr / 2 + 255) / 256), unsigned(std::min<index_t>(hw, 65535)));
    fold_two_levels<L><<<grid, 256, 0, s>>>(hr, hw, P, sixteenth, y, R);
  }
}

}  // namespace

// DISTMM_EMULATION_PROFILE=1: per call, the time of each pass on stderr (events on the stream).
struct PhaseClock {
  bool on = settings().emulation_profile;
  std::vector<std::pair<const char*, cudaEvent_t>> marks;
  void mark(const char* what, cudaStream_t s) {
    if (!on) return;
    cudaEvent_t e;
    cudaEventCreate(&e);
    cudaEventRecord(e, s);
    marks.emplace_back(what, e);
  }
  ~PhaseClock() {
    for (auto& m : marks) cudaEventDestroy(m.second);
  }
  void report(index_t m, index_t n, index_t k, int N) {
    if (!on || marks.empty()) return;
    cudaEventSynchronize(marks.back().second);
    std::fprintf(stderr, "emulation %lld x %lld x %lld, %d moduli:", (long long)m, (long long)n, (long long)k, N);
    std::map<std::string, float> total;
    std::vector<std::string> order;
    for (std::size_t i = 1; i < marks.size(); ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, marks[i - 1].second, marks[i].second);
      if (!total.count(marks[i].first)) order.push_back(marks[i].first);
      total[marks[i].first] += ms;
    }
    for (auto& o : order) std::fprintf(stderr, " %s %.2f ms,", o.c_str(), total[o]);
    std::fprintf(stderr, "\n");
    for (auto& m : marks) cudaEventDestroy(m.second);
    marks.clear();
  }
};

struct Int8Emulation::Impl {
  LtHandle lt;
  DeviceBuffer<unsigned char> work;   // slices, int32 product, residues
  DeviceBuffer<unsigned char> stats;  // per row and column: statistics and exponents; flags
  DeviceBuffer<unsigned char> lt_work;
  PinnedBuffer<Flags> flags_host;
  std::map<std::tuple<index_t, index_t, index_t, index_t, int>, LtPlan> plans;  // (rows, cols, Kp, ld, SM target)
  std::optional<std::pair<std::string, int>> gpu;  // the device's name and SMs (device())
  double bandwidth = 0;                             // its memory's peak bytes per second (device())
  // The fold of modulus l runs on its own stream while the INT8 product of modulus l + 1 runs
  // (two int32 buffers, used in turn).
  CudaStream fold_stream;
  CudaEvent product_done[2], fold_done[2];
  // The INT8 products (and the Winograd sums before them) run on a stream of the greatest
  // priority, cuBLASLt told to leave some SMs free where that pays (side_target): the folds on
  // fold_stream take those SMs while the next product runs, instead of waiting for the SMs a
  // product holds; the priority keeps the folds' blocks from taking the products' SMs.
  static int greatest_priority() {
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "priority range");
    return greatest;
  }
  CudaStream gemm_stream{greatest_priority()};
  CudaEvent gemm_ready, gemm_finished;
  // What a call with ReuseOfA::keep derived from op(A), for the next call with kept (cuboid's
  // first step in parts of B's columns, node/engine.hpp): op(A)'s statistics and flags, its
  // magnitudes' slices for the bound (whole or in pairs), its N slices. Each part is valid for
  // the op(A) recorded here and only until a call that does not keep it.
  struct HeldA {
    const void* A = nullptr;
    Op ta = Op::N;
    index_t m = 0, k = 0, lda = 0;
    Dtype dt = Dtype::f32;
    bool stats = false;
    int magnitudes = -1;  // -1: none, 0: whole, 1: in pairs
    index_t magnitude_rows = 0;  // the held magnitudes' stacked rows (Op)
    int N = 0;  // the moduli of the held slices, 0: none
    DeviceBuffer<unsigned char> stat_bytes;  // m OuterStat, then op(A)'s Flags
    DeviceBuffer<int8_t> magnitude_slices, slices;
    void forget() { stats = false, magnitudes = -1, N = 0; }
    bool is(const void* a, Op t, index_t mm, index_t kk, index_t ld, Dtype d) const {
      return A == a && ta == t && m == mm && k == kk && lda == ld && dt == d;
    }
    // n bytes for a part, once the kernels that may still read its buffer are done; false (none
    // held, the buffer empty) where they would take more than half of the memory free or the
    // allocation fails: holding is never worth an error.
    template <class B>
    static bool grow(B& buf, std::size_t n, cudaStream_t s) {
      if (buf.size() >= n) return true;
      std::size_t f = 0, t = 0;
      cuda_check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
      if (n > (f + buf.size()) / 2) return false;
      cuda_check(cudaStreamSynchronize(s), "sync");
      return buf.try_reserve(n);
    }
    void release(cudaStream_t s) {
      forget();
      if (stat_bytes.size() + magnitude_slices.size() + slices.size() == 0) return;
      cuda_check(cudaStreamSynchronize(s), "sync");
      stat_bytes.release(), magnitude_slices.release(), slices.release();
    }
  } held;
  static constexpr std::size_t kLtWorkspace = kInt8LtWorkspace;

  Impl() {
    lt_work.reserve(kLtWorkspace);
    flags_host.reserve(2);
  }

  // The INT8 product of this shape (lt_int8_plan: C = A^T B, rows x cols x Kp): cuBLASLt's
  // heuristic candidates, and the configuration `distmm tune` found for the shape ("i8",
  // tuned_config), timed once on the call's own operands, the fastest kept for the shape (the
  // heuristic's first choice is not always the fastest INT8 kernel; seed 000's tuning applied
  // to the products). The tuned one only joins the race, so a stale entry costs nothing.
  // (null when cuBLASLt has no candidate for the shape; ld: the operands' leading dimension,
  // Kp where 0, larger for the quadrants of a Winograd level; sm_target: the SMs it may take,
  // all where 0)
  LtPlan* plan(cudaStream_t s, index_t rows, index_t cols, index_t Kp, const int8_t* A, const int8_t* B, int* C,
               index_t ld = 0, int sm_target = 0) {
    const auto key = std::make_tuple(rows, cols, Kp, ld, sm_target);
    auto it = plans.find(key);
    if (it != plans.end()) return &it->second;
    LtPlan p = lt_int8_plan(rows, cols, Kp, ld);
    if (sm_target > 0)
      cublasLtMatmulDescSetAttribute(p.desc.get(), CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target, sizeof sm_target);
    struct Candidate {
      cublasLtMatmulAlgo_t algo;
      std::size_t workspace;
    };
    std::vector<Candidate> cand;
    for (const auto& r : lt_heuristic(lt.get(), p, 8, kLtWorkspace)) cand.push_back({r.algo, r.workspaceSize});
    const bool timed = double(rows) * cols * Kp >= 0x1p30;  // small products: not worth timing
    std::optional<GemmConfig> tuned;
    if (timed) tuned = tuned_candidate(rows, cols, Kp);
    if (tuned) {
      lt_apply(lt.get(), kLtInt8, *tuned, kLtWorkspace, p);
      if (p.ok) cand.push_back({p.algo, p.workspace});
      else tuned.reset();  // cublasLtMatmulAlgoCheck refused it for this shape
    }
    if (cand.empty()) return nullptr;
    const bool show = settings().emulation_profile;
    auto name = [&](std::size_t c) {
      std::string n = "candidate " + std::to_string(c);
      if (tuned && c + 1 == cand.size())
        n += " (tuned at " + (tuned->size > 0 ? std::to_string(tuned->size) : std::string("this shape")) +
             ": algo " + std::to_string(tuned->algo) + " tile " + std::to_string(tuned->tile) + " stages " +
             std::to_string(tuned->stages) + " swizzle " + std::to_string(tuned->swizzle) + " custom " +
             std::to_string(tuned->custom) + " cluster " + std::to_string(tuned->cluster) + ")";
      return n;
    };
    std::size_t best = 0;
    double best_ms = 0;
    if (timed) {
      const int one = 1, zero = 0;
      for (std::size_t c = 0; c < cand.size(); ++c) {
        bool ok = true;
        double ms = median_ms(s, 1, 1, [&] {
          ok &= cublasLtMatmul(lt.get(), p.desc.get(), &one, A, p.a.get(), B, p.b.get(), &zero, C, p.c.get(), C,
                               p.c.get(), &cand[c].algo, lt_work.get(), cand[c].workspace,
                               s) == CUBLAS_STATUS_SUCCESS;
        });
        if (!ok) ms = 1e30;
        if (show) std::fprintf(stderr, "int8 gemm %lld x %lld x %lld %s: %.3f ms\n", (long long)rows,
                               (long long)cols, (long long)Kp, name(c).c_str(), ms);
        if (c == 0 || ms < best_ms) best = c, best_ms = ms;
      }
      if (show) std::fprintf(stderr, "int8 gemm %lld x %lld x %lld runs %s\n", (long long)rows, (long long)cols,
                             (long long)Kp, name(best).c_str());
    }
    p.algo = cand[best].algo, p.workspace = cand[best].workspace, p.ok = true, p.ms = best_ms;
    return &plans.emplace(key, std::move(p)).first->second;
  }

  // The tuned "i8" configuration for a rows x cols x Kp product on this GPU, if the tuning file
  // has one that applies (its exact shape, else its size where the tiles fill the waves).
  std::optional<GemmConfig> tuned_candidate(index_t rows, index_t cols, index_t Kp) {
    return tuned_config(device().first, "i8", rows, cols, Kp, device().second, lt_tile_shape).config;
  }
  // The device's name and SM count, and its memory's peak rate (looked up once)
  const std::pair<std::string, int>& device() {
    if (!gpu) {
      int dev = 0, khz = 0, bits = 0;
      cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
      cudaDeviceProp prop;
      cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
      cuda_check(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev), "memory clock");
      cuda_check(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev), "memory bus");
      gpu.emplace(prop.name, prop.multiProcessorCount);
      bandwidth = 2.0 * khz * 1e3 * bits / 8;  // (double data rate)
    }
    return *gpu;
  }
  // The SM count target of the products that the folds run beside (0: every SM): all but
  // DISTMM_EMULATION_SIDE_SMS (at most half of them) where it is a number; where it is auto, all
  // but kAutoSideSms where that pays: a modulus' fold, its bytes at the memory's peak rate, takes
  // longer than the free SMs' share of the products it follows (`product_ms`, measured on every
  // SM; 0 where not timed). (At f64 and f32 16384 on an H200 it pays, the fold about 9% of the
  // products; at 32768, 4.5%, it does not: docs/performance.md, "Session 33".)
  static constexpr int kAutoSideSms = 8;
  int side_target(double fold_bytes, double product_ms) {
    const std::optional<int> forced = settings().emulation_side_sms;
    const int sms = device().second, side = std::min(forced.value_or(kAutoSideSms), sms / 2);
    if (side <= 0) return 0;
    if (forced) return sms - side;
    if (!(product_ms > 0) || !(bandwidth > 0)) return 0;
    return fold_bytes / bandwidth * 1e3 > product_ms * side / sms ? sms - side : 0;
  }

  void int8_gemm(cudaStream_t s, index_t rows, index_t cols, index_t Kp, const int8_t* A,
                 const int8_t* B, int* C, index_t ld = 0, int sm_target = 0) {
    LtPlan* found = plan(s, rows, cols, Kp, A, B, C, ld, sm_target);
    if (!found) throw std::runtime_error("cuBLASLt offers no INT8 GEMM for this shape");  // planned before
    LtPlan& p = *found;
    const int one = 1, zero = 0;
    cublas_check(cublasLtMatmul(lt.get(), p.desc.get(), &one, A, p.a.get(), B, p.b.get(), &zero, C,
                                p.c.get(), C, p.c.get(), &p.algo, lt_work.get(), p.workspace, s),
                 "cublasLtMatmul (int8)");
  }
};

Int8Emulation::Int8Emulation(int forced_moduli, ozaki::Accuracy accuracy)
    : impl_(std::make_unique<Impl>()), forced_(forced_moduli), accuracy_(accuracy) {}
Int8Emulation::~Int8Emulation() = default;

int Int8Emulation::default_moduli(Dtype dt) {
  return ozaki::fewest_moduli(ozaki::required_bits(dt == Dtype::f32 || dt == Dtype::c32, 0), 1);
}


// The workspace a call needs at least: row blocks of up to 8192 rows and panels of up to 4096
// columns (chunk() takes more where the GPU has it free, whole C when it fits); at the rule's
// usual N for well-scaled inputs where none is forced.
std::size_t Int8Emulation::workspace_bytes(index_t m, index_t n, index_t k, Dtype dt, int moduli) {
  const bool cplx = dt == Dtype::c32 || dt == Dtype::c64;
  const index_t rows = std::min<index_t>(m, 8192), cols = std::min<index_t>(n, 4096);
  return sizes_for(rows, std::max<index_t>(k, 1), cplx, moduli > 0 ? moduli : default_moduli(dt), cols).total +
         Impl::kLtWorkspace + align256((m + n) * (sizeof(OuterStat) + sizeof(int))) + 2 * sizeof(Flags);
}

template <class T>
bool Int8Emulation::gemm(cudaStream_t s, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                         const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C, index_t ldc,
                         ReuseOfA reuse) {
  if (k > kMaxChunk) reuse = {};  // (held parts are one chunk's)
  // A call that neither keeps nor takes op(A)'s parts gives their memory back (a stream sync and
  // cudaFree: once per multiply whose later cuboid steps run without parts).
  if (!reuse.keep && !reuse.kept) impl_->held.release(s);
  if (m <= 0 || n <= 0) return true;
  auto decline = [&](std::string why) {
    stats_.declined(std::move(why));
    return false;
  };
  if (k <= 0 || alpha == T(0)) return decline("nothing to multiply (k = 0 or alpha = 0)");
  // k beyond one exact INT8 sum: chunks of k, accumulated through beta. Every chunk is checked
  // first (statistics and moduli, nothing written), so that a declined call leaves C untouched.
  auto at_k = [&](index_t k0, const T*& Ak, const T*& Bk) {
    Ak = A + (ta == Op::N ? k0 * lda : k0);
    Bk = B + (tb == Op::N ? k0 : k0 * ldb);
  };
  if (k > kMaxChunk)
    for (index_t k0 = 0; k0 < k; k0 += kMaxChunk) {
      const T *Ak, *Bk;
      at_k(k0, Ak, Bk);
      std::string why = chunk<T>(s, ta, tb, m, n, std::min(kMaxChunk, k - k0), alpha, Ak, lda, Bk, ldb, beta, C, ldc, true, {});
      if (!why.empty()) return decline(why + " (k-chunk at " + std::to_string(k0) + ")");
    }
  for (index_t k0 = 0; k0 < k; k0 += kMaxChunk) {
    const T *Ak, *Bk;
    at_k(k0, Ak, Bk);
    std::string why = chunk<T>(s, ta, tb, m, n, std::min(kMaxChunk, k - k0), alpha, Ak, lda, Bk, ldb,
                               k0 == 0 ? beta : T(1), C, ldc, false, reuse);
    if (why.empty()) continue;
    if (k0 == 0) return decline(why);
    // (checked above with the same data, so only a failed allocation can get here)
    throw std::runtime_error("emulated product: a later k-chunk failed after C was updated: " + why);
  }
  ++stats_.calls;
  return true;
}

template <class T>
std::string Int8Emulation::chunk(cudaStream_t s, Op ta, Op tb, index_t m, index_t n, index_t k, T alpha,
                                 const T* A, index_t lda, const T* B, index_t ldb, T beta, T* C,
                                 index_t ldc, bool dry_run, ReuseOfA reuse) {
  using R = real_t<T>;
  constexpr bool cplx = is_complex_v<T>;
  Impl& im = *impl_;
  PhaseClock clock;
  clock.mark("start", s);
  const int parts = cplx ? 2 : 1;
  const bool a_kcontig = ta != Op::N, b_kcontig = tb == Op::N;
  // op(A)'s parts held by the call before (kept), and those this call holds for the next (keep;
  // never under a workspace cap, which bounds all of the emulation's memory)
  Impl::HeldA& held = im.held;
  if (!(reuse.kept && held.is(A, ta, m, k, lda, dtype_of<T>()))) held.forget();
  const bool keep = reuse.keep && !dry_run && !settings().emulation_workspace;
  if (keep) held.A = A, held.ta = ta, held.m = m, held.k = k, held.lda = lda, held.dt = dtype_of<T>();
  struct Forget {  // what is held outlives this call only where it keeps it
    Impl::HeldA& h;
    bool keep;
    ~Forget() {
      if (!keep || std::uncaught_exceptions() > 0) h.forget();
    }
  } forget_unless_keeping{held, keep};

  // 1. statistics, to pick N. (A larger buffer only once the last call's kernels, which may
  // still read the old one, are done.)
  const std::size_t stats_bytes = align256((m + n) * (sizeof(OuterStat) + sizeof(int))) + 2 * sizeof(Flags);
  if (im.stats.size() < stats_bytes) {
    cuda_check(cudaStreamSynchronize(s), "sync");
    im.stats.reserve(stats_bytes);
  }
  OuterStat* sa = reinterpret_cast<OuterStat*>(im.stats.get());
  OuterStat* sb = sa + m;
  int* ea = reinterpret_cast<int*>(sb + n);
  int* eb = ea + m;
  Flags* flags = reinterpret_cast<Flags*>(im.stats.get() + align256((m + n) * (sizeof(OuterStat) + sizeof(int))));
  cuda_check(cudaMemsetAsync(flags, 0, 2 * sizeof(Flags), s), "memset");
  auto stats = [&](bool kcontig, index_t O, const T* X, index_t ld, OuterStat* st, Flags* fl) {
    const dim3 block(32, 16);
    if (kcontig) outer_stats<T, true><<<unsigned((O + 15) / 16), block, 0, s>>>(k, O, X, ld, st, fl);
    else outer_stats<T, false><<<unsigned((O + 31) / 32), block, 0, s>>>(k, O, X, ld, st, fl);
  };
  const std::size_t a_stat_bytes = align256(m * sizeof(OuterStat));
  if (held.stats) {
    cuda_check(cudaMemcpyAsync(sa, held.stat_bytes.get(), m * sizeof(OuterStat), cudaMemcpyDeviceToDevice, s), "D2D");
    cuda_check(cudaMemcpyAsync(flags, held.stat_bytes.get() + a_stat_bytes, sizeof(Flags), cudaMemcpyDeviceToDevice, s),
               "D2D");
  } else {
    stats(a_kcontig, m, A, lda, sa, flags);  // flags[0]: op(A)'s rows, flags[1]: op(B)'s columns
  }
  stats(b_kcontig, n, B, ldb, sb, flags + 1);
  cuda_check(cudaGetLastError(), "statistics kernel");
  if (keep && !held.stats && Impl::HeldA::grow(held.stat_bytes, a_stat_bytes + sizeof(Flags), s)) {
    cuda_check(cudaMemcpyAsync(held.stat_bytes.get(), sa, m * sizeof(OuterStat), cudaMemcpyDeviceToDevice, s), "D2D");
    cuda_check(cudaMemcpyAsync(held.stat_bytes.get() + a_stat_bytes, flags, sizeof(Flags), cudaMemcpyDeviceToDevice, s),
               "D2D");
    held.stats = true;
  }
  clock.mark("stats", s);
  cuda_check(cudaMemcpyAsync(im.flags_host.get(), flags, 2 * sizeof(Flags), cudaMemcpyDeviceToHost, s), "D2H");
  cuda_check(cudaStreamSynchronize(s), "sync");
  const Flags* f = im.flags_host.get();
  if (f[0].nonfinite || f[1].nonfinite) return "NaN or Inf among the operands";
  auto spread = [](const Flags& g) {
    float d, r;
    std::memcpy(&d, &g.max_deficit, sizeof d);
    std::memcpy(&r, &g.max_spread, sizeof r);
    return ozaki::Spread{double(r), double(d)};
  };

  const ozaki::LevelMode level_mode = ozaki::level_mode(settings().emulation_level);
  // Workspace for N slices within what the device has free (its 90%, or the cap); the blocks
  // that fit in it: emulation::fit_blocks.
  auto budget_now = [&] {
    std::size_t f = 0, t = 0;
    cuda_check(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    return std::min(std::size_t(double(f + im.work.size()) * 0.9), settings().emulation_workspace.value_or(SIZE_MAX));
  };
  std::size_t budget = budget_now();
  // (emulation::fit_blocks: the blocks within the budget, with room for the levels they take)
  auto fit = [&](index_t kq, int NN, bool a_held = false, bool level = false) -> std::optional<Sizes> {
    std::optional<Sizes> z = emulation::fit_blocks(m, n, kq, cplx, NN, budget, level_mode, a_held, level);
    if (z) im.work.reserve(z->total);
    return z;
  };
  // Row blocks [i0, i0 + rows) of C and column panels [j0, j0 + w).
  auto blocks = [&](const Sizes& zz, auto&& f) {
    for (index_t i0 = 0; i0 < m; i0 += zz.mb) f(i0, std::min(zz.mb, m - i0));
  };
  auto a_rows = [&](index_t i0) { return A + (a_kcontig ? i0 * lda : i0); };
  auto b_cols = [&](index_t j0) { return B + (b_kcontig ? j0 * ldb : j0); };
  struct Work {
    int8_t *a, *b;
    int* c32;
    uint8_t* residues;
    int8_t *sums_a, *sums_b;
  };
  auto carve = [&](const Sizes& zz) {
    int8_t* a = reinterpret_cast<int8_t*>(im.work.get());
    int8_t* c = a + zz.slices_a + zz.slices_b;
    int8_t* r = c + 2 * zz.c32;
    return Work{a, a + zz.slices_a, reinterpret_cast<int*>(c), reinterpret_cast<uint8_t*>(r),
                r + zz.residues, r + zz.residues + zz.sums_a};
  };
  // One exact Winograd level in the residues (ozaki::winograd_a, kWinogradA; docs/accuracy.md)
  // for a block of rows x w: where the stacked operands' halves are whole multiples of 16 (each
  // quadrant a plain INT8 GEMM read in place; for complex products the halves are the real and
  // imaginary parts), large enough that the INT8 work it saves outweighs the sums and the wider
  // fold (DISTMM_EMULATION_LEVEL: auto, 0 never, 1 at any size).
  const bool level_wanted = level_mode != ozaki::LevelMode::never;
  // (the levels a block of rows x w takes: 0, 1 or 2, as many as its workspace has room for)
  auto levels_for = [&](const Sizes& zz, index_t rows, index_t w) {
    return std::min(zz.levels, ozaki::residue_levels(level_mode, parts * rows, parts * w, zz.Kp, cplx));
  };
  const index_t kk = k * parts;  // entries per stacked row, for the rounding term
  // The slices of the first kq of k of op(A)'s rows or a panel of op(B)'s columns (Magnitude:
  // one slice of magnitudes); the stacked rows past parts * O are zero.
  // sums (op(A)'s where of_a, else op(B)'s): each modulus' Winograd sums made beside its slice,
  // modulus l's at sums + l sums_stride (to_slices_and_sums; a block that takes the level).
  auto slices = [&](bool magnitude, const Sizes& zz, int NN, index_t kq, bool kcontig, index_t O, const T* X,
                    index_t ld, bool conj, const int* e, int8_t* dst, index_t Op, int8_t* sums = nullptr,
                    std::size_t sums_stride = 0, bool of_a = true) {
    SliceOut out{dst, std::size_t(zz.Kp) * Op, zz.Kp, O, NN};
    // (with sums, the level's blocks: Op = parts O and Kp multiples of 32, no rows to pad)
    if (Op > parts * O)
      for (int l = 0; l < NN; ++l)
        cuda_check(cudaMemsetAsync(dst + l * out.stride + parts * O * zz.Kp, 0,
                                   std::size_t(Op - parts * O) * zz.Kp, s), "memset");
    // (the scaled entries' magnitudes stay below T' + 1/2; the magnitudes' below 2^7)
    auto launch = [&](auto mag, auto w) {
      constexpr bool M = decltype(mag)::value;
      constexpr Width W = decltype(w)::value;
      if constexpr (!M) {
        if (sums) {
          const dim3 grid(unsigned((zz.Kp / 2 + 31) / 32), unsigned((Op / 2 + 31) / 32));
          auto fused = [&](auto kc, auto a) {
            to_slices_and_sums<T, W, decltype(kc)::value, decltype(a)::value>
                <<<grid, dim3(32, 8), 0, s>>>(kq, O, X, ld, conj, e, out, sums, sums_stride);
          };
          if (kcontig && of_a) fused(std::true_type{}, std::true_type{});
          else if (kcontig) fused(std::true_type{}, std::false_type{});
          else if (of_a) fused(std::false_type{}, std::true_type{});
          else fused(std::false_type{}, std::false_type{});
          return;
        }
      }
      if (kcontig) {
        const dim3 grid(unsigned((zz.Kp / 4 + 127) / 128), unsigned(std::min<index_t>(O, 65535)));
        to_slices_kcontig<T, M, W><<<grid, 128, 0, s>>>(kq, O, X, ld, conj, e, out);
      } else {
        const dim3 grid(unsigned(zz.Kp / 32 + (zz.Kp % 32 != 0)), unsigned((O + 31) / 32));
        to_slices_transpose<T, M, W><<<grid, dim3(32, 8), 0, s>>>(kq, O, X, ld, conj, e, out);
      }
    };
    using int32 = std::integral_constant<Width, Width::int32>;
    if (magnitude) launch(std::true_type{}, int32{});
    else if (const Width w = width_for(scale_bound(NN, kk) + 0.5); w == Width::int32) launch(std::false_type{}, int32{});
    else if (w == Width::fp64) launch(std::false_type{}, std::integral_constant<Width, Width::fp64>{});
    else launch(std::false_type{}, std::integral_constant<Width, Width::int64>{});
    cuda_check(cudaGetLastError(), "slice kernel");
  };
  // The INT8 products' plans (full and last row blocks and panels), made before anything is
  // written, so that a shape cuBLASLt cannot do is declined with C untouched.
  // (step 2: the products of the bound's pairs; sm_target: as the products will run)
  auto planned = [&](const Sizes& zz, const Work& wk, index_t step = 1, int sm_target = 0) -> std::string {
    for (index_t r : {zz.mb, m - (m - 1) / zz.mb * zz.mb})
      for (index_t w : {zz.nb, n - (n - 1) / zz.nb * zz.nb}) {
        const index_t OpA = round_up(parts * ((r + step - 1) / step), 16);
        const index_t OpB = round_up(parts * ((w + step - 1) / step), 16);
        // (a block with levels runs only the products of its quadrants, 2^levels of each side)
        const int parts_of = 1 << (step == 1 ? levels_for(zz, r, w) : 0);
        if (!im.plan(s, OpA / parts_of, OpB / parts_of, zz.Kp / parts_of, wk.a, wk.b, wk.c32,
                     parts_of > 1 ? zz.Kp : 0, sm_target))
          return "cuBLASLt offers no INT8 GEMM for " + std::string(parts_of > 1 ? "the quadrants " : "") +
                 std::to_string(OpA / parts_of) + " x " + std::to_string(OpB / parts_of) + " x " +
                 std::to_string(zz.Kp / parts_of);
      }
    return "";
  };

  // The |A||B|-aware statistics (ozaki_accuracy.hpp): the magnitudes' slices, their INT8
  // product panel by panel, the largest ratios. paired: the slices' rows and columns in pairs
  // (pair_outer; the whole slices in the second half of the two-slice workspace), a quarter of
  // the product. Row blocks and panels start at multiples of 16, so the pairs are the same
  // however the product is cut.
  auto product = [&](bool paired) -> ozaki::ProductStats {
    const index_t step = paired ? 2 : 1;
    const std::optional<Sizes> zq = fit(k, paired ? 2 : 1);
    if (!zq) return {};
    const Work wk = carve(*zq);
    if (!planned(*zq, wk, step).empty()) return {};
    exponents<<<unsigned((m + 255) / 256), 256, 0, s>>>(m, sa, 0, true, paired, ea);
    exponents<<<unsigned((n + 255) / 256), 256, 0, s>>>(n, sb, 0, true, paired, eb);
    // the magnitudes of O outer indices, then their pairs: the Op rows the product reads
    auto magnitudes = [&](bool kcontig, index_t O, const T* X, index_t ld, const OuterStat* st, const int* e,
                          int8_t* dst) {
      const index_t Op = round_up(parts * O, 16);
      if (!paired) {
        slices(true, *zq, 1, k, kcontig, O, X, ld, false, e, dst, Op);
        return Op;
      }
      int8_t* whole = dst + std::size_t(zq->Kp) * Op;
      slices(true, *zq, 1, k, kcontig, O, X, ld, false, e, whole, Op);
      const index_t Pq = (O + 1) / 2, OpP = round_up(parts * Pq, 16);
      const dim3 grid(unsigned((zq->Kp / 16 + 127) / 128), unsigned(std::min<index_t>(OpP, 65535)));
      pair_outer<<<grid, 128, 0, s>>>(zq->Kp, O, parts, Pq, OpP, st, whole, dst);
      cuda_check(cudaGetLastError(), "pair kernel");
      return OpP;
    };
    blocks(*zq, [&](index_t i0, index_t rows) {
      // op(A)'s magnitudes: from the call before, or made here (and held where this call keeps
      // them: whole rows in one block)
      const int kind = paired ? 1 : 0;
      const int8_t* mag_a = wk.a;
      index_t OpA = 0;
      if (rows == m && held.magnitudes == kind) {
        mag_a = held.magnitude_slices.get(), OpA = held.magnitude_rows;
      } else {
        OpA = magnitudes(a_kcontig, rows, a_rows(i0), lda, sa + i0, ea + i0, wk.a);
        clock.mark("bound: magnitudes", s);
        if (const std::size_t bytes = std::size_t(zq->Kp) * OpA;
            rows == m && keep && Impl::HeldA::grow(held.magnitude_slices, bytes, s)) {
          cuda_check(cudaMemcpyAsync(held.magnitude_slices.get(), wk.a, bytes, cudaMemcpyDeviceToDevice, s), "D2D");
          held.magnitudes = kind, held.magnitude_rows = OpA;
        }
      }
      const index_t rp = (rows + step - 1) / step;
      for (index_t j0 = 0; j0 < n; j0 += zq->nb) {
        const index_t w = std::min(zq->nb, n - j0), wp = (w + step - 1) / step;
        const index_t OpB = magnitudes(b_kcontig, w, b_cols(j0), ldb, sb + j0, eb + j0, wk.b);
        clock.mark("bound: magnitudes", s);
        im.int8_gemm(s, OpA, OpB, zq->Kp, mag_a, wk.b, wk.c32);
        clock.mark("bound: product", s);
        // (at most 2048 columns' norms per block in shared memory: 32 KiB)
        const index_t gy = std::min<index_t>(wp, std::max<index_t>(128, (wp + 2047) / 2048));
        const dim3 grid(unsigned((rp + 255) / 256), unsigned(gy));
        const std::size_t shared = std::size_t(ratio_columns(wp, gy)) * sizeof(double2);
        if (cplx)
          product_ratios<true><<<grid, 256, shared, s>>>(rp, wp, wk.c32, OpA, sa + i0, sb + j0, rows, w, int(step), kk, flags);
        else
          product_ratios<false><<<grid, 256, shared, s>>>(rp, wp, wk.c32, OpA, sa + i0, sb + j0, rows, w, int(step), kk, flags);
        cuda_check(cudaGetLastError(), "product ratios kernel");
        clock.mark("bound: ratios", s);
      }
    });
    cuda_check(cudaMemcpyAsync(im.flags_host.get(), flags, sizeof(Flags), cudaMemcpyDeviceToHost, s), "D2H");
    cuda_check(cudaStreamSynchronize(s), "sync");
    ozaki::ProductStats ps;
    std::memcpy(&ps.X, &im.flags_host.get()->X, sizeof ps.X);
    std::memcpy(&ps.Y, &im.flags_host.get()->Y, sizeof ps.Y);
    cuda_check(cudaMemsetAsync(&flags->X, 0, 2 * sizeof(unsigned long long), s), "memset");
    clock.mark("|A||B| bound", s);
    if (clock.on)
      std::fprintf(stderr, "|A||B| bound of %lld x %lld x %lld%s: X %.6g, Y %.6g\n", (long long)m, (long long)n,
                   (long long)k, paired ? " (rows and columns in pairs)" : "", ps.X, ps.Y);
    return ps;
  };

  // 2. N from the accuracy rule (ozaki_accuracy.hpp).
  const bool single = std::is_same_v<R, float>;
  auto l2_linf = [](const Flags& g) {
    float r;
    std::memcpy(&r, &g.max_l2_linf, sizeof r);
    return double(r);
  };
  const ozaki::Choice choice = ozaki::choose_with_product(accuracy_, single, spread(f[0]), spread(f[1]), kk,
                                                          levels_above_, forced_, l2_linf(f[0]) + l2_linf(f[1]),
                                                          product);
  if (choice.N == 0) return choice.why;
  const int N = choice.N;
  const double bound = scale_bound(N, kk);
  if (bound < 16)  // (a forced count, or a relative target near 1)
    return std::to_string(N) + " moduli keep fewer than 4 bits per entry at k = " + std::to_string(k) +
           ": use more moduli";
  if (dry_run) return "";
  exponents<<<unsigned((m + 255) / 256), 256, 0, s>>>(m, sa, bound, false, false, ea);
  exponents<<<unsigned((n + 255) / 256), 256, 0, s>>>(n, sb, bound, false, false, eb);
  cuda_check(cudaGetLastError(), "exponents kernel");

  // 3. workspace (the budget again: the bound's pass may have held op(A)'s magnitudes). op(A)'s
  // slices from the call before where it made them with this N (the same exponents: the same
  // statistics and k); where this call keeps them, made into the held buffer if they take at
  // most half the budget and of the memory free and fit whole beside the rest (held.N only once
  // they are queued).
  budget = budget_now();
  const std::size_t a_slice_bytes = sizes_for(m, k, cplx, N, 16).slices_a;  // (whole rows)
  const bool a_from_held = held.N == N;
  if (!a_from_held) held.N = 0;
  std::optional<Sizes> fitted;
  bool a_elsewhere = false;
  if (a_from_held || (keep && a_slice_bytes <= budget / 2 && Impl::HeldA::grow(held.slices, a_slice_bytes, s))) {
    if (!a_from_held) budget = budget_now();  // (less free now)
    fitted = fit(k, N, true, level_wanted);
    a_elsewhere = fitted.has_value();
    if (!a_elsewhere) {  // (they do not fit whole beside the rest: give them back)
      held.N = 0;
      cuda_check(cudaStreamSynchronize(s), "sync");
      held.slices.release();
      budget = budget_now();
    }
  }
  if (!fitted) fitted = fit(k, N, false, level_wanted);
  if (!fitted)
    return "workspace: " + std::to_string(sizes_for(16, k, cplx, N, 16).total >> 20) +
           " MiB needed even in blocks of 16 x 16, " + std::to_string(budget >> 20) + " MiB free";
  // The first level's sums of every modulus made beside the slices where the budget has room
  // for them (else one modulus' at a time, from its slices, before its products).
  Sizes z = *fitted;
  if (const Sizes zs = emulation::with_sums_of_every_modulus(z, N); zs.sums_slots > 1 && zs.total <= budget) {
    z = zs;
    im.work.reserve(z.total);
  }
  const bool sums_with_slices = z.sums_slots > 1;
  const std::size_t sums_stride_a = align256(std::size_t(z.Kp) * z.OpA), sums_stride_b = align256(std::size_t(z.Kp) * z.OpB);
  const bool a_reused = a_from_held && a_elsewhere;
  const index_t nb = z.nb;
  const Work wk = carve(z);
  int8_t* slices_a = a_elsewhere ? held.slices.get() : wk.a;
  int8_t* slices_b = wk.b;
  int* c32 = wk.c32;
  uint8_t* residues = wk.residues;
  Work timed_on = wk;  // (the INT8 plans are timed on the buffers they will read)
  if (a_elsewhere) timed_on.a = slices_a;
  if (std::string why = planned(z, timed_on); !why.empty()) return why;
  // (serial under the profile, so that each pass's time is its own: the products then take
  // every SM)
  const bool overlap = !clock.on;
  int sm_target = 0;
  if (overlap) {  // the first panel's products and fold, per modulus
    const index_t OpA = round_up(parts * z.mb, 16), OpB = round_up(parts * z.nb, 16);
    const int lv = levels_for(z, z.mb, z.nb), parts_of = 1 << lv;
    const LtPlan* p = im.plan(s, OpA / parts_of, OpB / parts_of, z.Kp / parts_of, timed_on.a, timed_on.b,
                              timed_on.c32, lv > 0 ? z.Kp : 0);
    // int32 read (7/4 of C's cells with one level, 49/16 with two), a byte written
    const double cells = double(OpA) * OpB, products = lv == 2 ? 49 : lv == 1 ? 7 : 1;
    sm_target = im.side_target(cells * (4 * products / (parts_of * parts_of) + 1), p->ms * products);
    if (sm_target > 0 && !planned(z, timed_on, 1, sm_target).empty()) sm_target = 0;
  }
  const cudaStream_t fs = overlap ? im.fold_stream.get() : s;
  const cudaStream_t gs = overlap ? im.gemm_stream.get() : s;

  // 4. Per row block: its slices of A once, then per panel B's slices, the N products and folds,
  // the CRT into C.
  clock.mark("exponents+alloc", s);
  const ozaki::Crt crt = ozaki::crt_constants(N);
  double2 al, be;
  {
    const std::complex<double> a(alpha), b(beta);
    al = make_double2(a.real(), a.imag()), be = make_double2(b.real(), b.imag());
  }
  // Quadrant q = 2 r + c of a slice (Kp x Op, ld Kp) at a level (1: of the slice, 2: of one of
  // its quadrants, relative to it): op(A)'s r halves its rows and c halves k, op(B)'s r halves k
  // and c its columns.
  auto quadrant = [&](bool of_a, index_t Op, int q, int at_level) {
    const index_t r = q >> 1, c = q & 1, kq = z.Kp >> at_level, oq = Op >> at_level;
    return std::size_t(of_a ? c : r) * kq + std::size_t(of_a ? r : c) * oq * z.Kp;
  };
  bool any_level = false, any_two = false;
  blocks(z, [&](index_t i0, index_t rows) {
    const index_t OpA = round_up(parts * rows, 16);
    // (op(A)'s sums with its slices where this block's first panel takes the level; a panel
    // that takes it without them makes them from the slices)
    const bool a_sums = sums_with_slices && !a_reused && levels_for(z, rows, std::min(nb, n)) > 0;
    if (!a_reused) {
      slices(false, z, N, k, a_kcontig, rows, a_rows(i0), lda, ta == Op::C && cplx, ea + i0, slices_a, OpA,
             a_sums ? wk.sums_a : nullptr, sums_stride_a, true);
      clock.mark("slices A", s);
    }
    if (a_elsewhere) held.N = N;
    for (index_t j0 = 0; j0 < n; j0 += nb) {
      const index_t w = std::min(nb, n - j0);
      const index_t OpB = round_up(parts * w, 16);
      const int levels = levels_for(z, rows, w);
      const bool level = levels > 0;
      const bool b_sums = sums_with_slices && level;
      slices(false, z, N, k, b_kcontig, w, b_cols(j0), ldb, tb == Op::C && cplx, eb + j0, slices_b, OpB,
             b_sums ? wk.sums_b : nullptr, sums_stride_b, false);
      clock.mark("slices B", s);
      any_level |= level;
      any_two |= levels == 2;
      const std::size_t plane = std::size_t(parts) * rows * w;
      const std::size_t quarter = z.c32 / 7 / 256 * 256 / sizeof(int);  // (each quarter product's ints)
      const std::size_t sixteenth = z.c32 / 49 / 256 * 256 / sizeof(int);  // (two levels: each product's)
      if (overlap) {  // (the slices are made on s)
        cuda_check(cudaEventRecord(im.gemm_ready.get(), s), "event");
        cuda_check(cudaStreamWaitEvent(gs, im.gemm_ready.get(), 0), "wait");
      }
      for (int l = 0; l < N; ++l) {
        const int slot = l % 2;
        int* product = c32 + slot * (z.c32 / sizeof(int));
        // the fold that read this buffer two moduli ago is done
        if (overlap && l >= 2) cuda_check(cudaStreamWaitEvent(gs, im.fold_done[slot].get(), 0), "wait");
        const std::size_t at_a = l * std::size_t(z.Kp) * OpA, at_b = l * std::size_t(z.Kp) * OpB;
        if (level) {  // this modulus' sums, then P1..P7 on the quadrants in place, each of half the rows, columns and k
          // (on the products' stream: made beside the fold on the free SMs, they held up the next
          // product at 32768; docs/performance.md, "Session 33")
          // (made with the slices where sums_with_slices: modulus l's slot)
          int8_t* const sums_a = wk.sums_a + (sums_with_slices ? l * sums_stride_a : 0);
          int8_t* const sums_b = wk.sums_b + (sums_with_slices ? l * sums_stride_b : 0);
          if (!a_sums) launch_winograd_sums(l, true, z.Kp / 2, OpA / 2, z.Kp, slices_a + at_a, sums_a, gs);
          if (!b_sums) launch_winograd_sums(l, false, z.Kp / 2, OpB / 2, z.Kp, slices_b + at_b, sums_b, gs);
          cuda_check(cudaGetLastError(), "Winograd sums kernel");
          clock.mark("Winograd sums", s);
          for (int r = 0; r < 7; ++r) {
            const ozaki::WinogradOperand oa = ozaki::kWinogradA[r], ob = ozaki::kWinogradB[r];
            const int8_t* xa = (oa.sum ? sums_a : slices_a + at_a) + quadrant(true, OpA, oa.quadrant, 1);
            const int8_t* xb = (ob.sum ? sums_b : slices_b + at_b) + quadrant(false, OpB, ob.quadrant, 1);
            if (levels == 1) {
              im.int8_gemm(gs, OpA / 2, OpB / 2, z.Kp / 2, xa, xb, product + r * quarter, z.Kp, sm_target);
              continue;
            }
            // the second level inside product r: its operands' sums (in place at ld Kp, after the
            // first level's), then its seven products of a quarter of the rows, columns and k
            int8_t* sa2 = wk.sums_a + z.sums_slots * sums_stride_a;
            int8_t* sb2 = wk.sums_b + z.sums_slots * sums_stride_b;
            launch_winograd_sums(l, true, z.Kp / 4, OpA / 4, z.Kp, xa, sa2, gs);
            launch_winograd_sums(l, false, z.Kp / 4, OpB / 4, z.Kp, xb, sb2, gs);
            cuda_check(cudaGetLastError(), "Winograd sums kernel");
            clock.mark("Winograd sums", s);
            for (int t = 0; t < 7; ++t) {
              const ozaki::WinogradOperand ta2 = ozaki::kWinogradA[t], tb2 = ozaki::kWinogradB[t];
              im.int8_gemm(gs, OpA / 4, OpB / 4, z.Kp / 4, (ta2.sum ? sa2 : xa) + quadrant(true, OpA, ta2.quadrant, 2),
                           (tb2.sum ? sb2 : xb) + quadrant(false, OpB, tb2.quadrant, 2),
                           product + (7 * r + t) * sixteenth, z.Kp, sm_target);
            }
            if (r < 6) clock.mark("int8 gemm", s);  // (the last one's mark follows)
          }
        } else {
          im.int8_gemm(gs, OpA, OpB, z.Kp, slices_a + at_a, slices_b + at_b, product, 0, sm_target);
        }
        clock.mark("int8 gemm", s);
        if (overlap) {
          cuda_check(cudaEventRecord(im.product_done[slot].get(), gs), "event");
          cuda_check(cudaStreamWaitEvent(fs, im.product_done[slot].get(), 0), "wait");
        }
        if (levels == 2)
          launch_fold_two_levels(l, OpA / 4, OpB / 4, product, sixteenth, ozaki::fold_coefficient(crt, l),
                                 residues + l * plane, fs);
        else if (level)
          launch_fold_winograd(l, cplx, z.Kp, OpA / 2, OpB / 2, product, quarter, ozaki::fold_coefficient(crt, l),
                               residues + l * plane, fs);
        else
          launch_fold(l, cplx, rows, w, product, OpA, ozaki::fold_coefficient(crt, l), residues + l * plane, fs);
        cuda_check(cudaGetLastError(), "fold kernel");
        if (overlap) cuda_check(cudaEventRecord(im.fold_done[slot].get(), fs), "event");
        clock.mark("fold", s);
      }
      if (overlap) {
        cuda_check(cudaEventRecord(im.gemm_finished.get(), gs), "event");
        cuda_check(cudaStreamWaitEvent(s, im.gemm_finished.get(), 0), "wait");
      }
      if (overlap)  // the reconstruction reads every fold's bytes
        for (int slot = 0; slot < std::min(N, 2); ++slot)
          cuda_check(cudaStreamWaitEvent(s, im.fold_done[slot].get(), 0), "wait");
      R* Cij = reinterpret_cast<R*>(C + i0 + j0 * ldc);
      auto crt_pass = [&](auto form) {
        auto run = [&](auto vec) {
          constexpr int V = decltype(vec)::value;
          const dim3 grid(unsigned((rows / V + 255) / 256), unsigned(std::min<index_t>(w, 65535)));
          const bool aligned = reinterpret_cast<std::uintptr_t>(Cij) % 16 == 0 && ldc * sizeof(R) % 16 == 0;
          crt_combine<R, cplx, decltype(form)::value, V>
              <<<grid, 256, 0, s>>>(rows, w, residues, plane, crt, ea + i0, eb + j0, al, be, Cij, ldc, aligned);
        };
        if (!cplx && rows % 4 == 0) run(std::integral_constant<int, 4>{});
        else run(std::integral_constant<int, 1>{});
      };
      if (ozaki::crt_fits_64(crt)) crt_pass(std::integral_constant<CrtForm, CrtForm::one_word>{});
      else if (ozaki::crt_splits(crt)) crt_pass(std::integral_constant<CrtForm, CrtForm::split>{});
      else crt_pass(std::integral_constant<CrtForm, CrtForm::wide>{});
      cuda_check(cudaGetLastError(), "crt kernel");
      clock.mark("crt", s);
    }
  });
  clock.report(m, n, k, N);
  stats_.chose(choice);
  stats_.reused_a += a_reused;
  stats_.residue_levels += any_level;
  stats_.two_levels += any_two;
  return "";
}

#define DISTMM_INT8_EMULATION(T)                                                                  \
  template bool Int8Emulation::gemm<T>(cudaStream_t, Op, Op, index_t, index_t, index_t, T,       \
                                       const T*, index_t, const T*, index_t, T, T*, index_t, ReuseOfA); \
  template std::string Int8Emulation::chunk<T>(cudaStream_t, Op, Op, index_t, index_t, index_t, T, \
                                               const T*, index_t, const T*, index_t, T, T*, index_t, bool, ReuseOfA);
DISTMM_FOR_EACH_TYPE(DISTMM_INT8_EMULATION)
#undef DISTMM_INT8_EMULATION

}  // namespace distmm
