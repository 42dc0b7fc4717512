// Fused, OpenMP-parallel, vectorisable addition passes for the Strassen-like engines.
// The additions are memory-bound, so each pass reads every operand once and writes every output
// that needs it (the (X+, Y+) = Z kernels of seeds 000 and 003):
//   out_o = [out_o +] sum_t coef[o][t] * in_t      for o < NO, t < NI
#pragma once
#include <array>
#include <cassert>
#include <cstdint>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "../src/core/types.hpp"

namespace distmm {

template <class T>
struct ConstBlock {
  const T* p;
  index_t ld;
};
template <class T>
struct MutBlock {
  T* p;
  index_t ld;
  bool accumulate;  // add into the output instead of overwriting it
};

template <class T, std::size_t NI, std::size_t NO>
void fused_combine_real(index_t rows, index_t cols, const std::array<ConstBlock<T>, NI>& in,
                        const std::array<MutBlock<T>, NO>& out,
                        const std::array<std::array<T, NI>, NO>& coef) {
  static_assert(std::is_floating_point_v<T>);
  if (rows <= 0 || cols <= 0) return;
  const bool big = rows * cols > (1 << 14);
#pragma omp parallel if (big)
  {
#pragma omp for schedule(static)
  for (index_t j = 0; j < cols; ++j) {
    const T* src[NI];
    T* dst[NO];
    for (std::size_t t = 0; t < NI; ++t) src[t] = in[t].p + j * in[t].ld;
    for (std::size_t o = 0; o < NO; ++o) dst[o] = out[o].p + j * out[o].ld;
    for (std::size_t o = 0; o < NO; ++o) {
      T* __restrict d = dst[o];
      const std::array<T, NI>& c = coef[o];
      if (out[o].accumulate) {
#pragma omp simd
        for (index_t i = 0; i < rows; ++i) {
          T v = d[i];
          for (std::size_t t = 0; t < NI; ++t) v += c[t] * src[t][i];
          d[i] = v;
        }
      } else {
        auto value = [&](index_t i) {
          T v = T(0);
          for (std::size_t t = 0; t < NI; ++t) v += c[t] * src[t][i];
          return v;
        };
        index_t i = 0;
#if defined(__AVX__)
        // Outputs that are only written go around the cache (streaming stores): a plain store
        // first reads the line it overwrites, a third more traffic on a memory-bound pass.
        constexpr index_t W = 32 / sizeof(T);
        if (rows >= 4 * W) {
          for (; i < rows && (reinterpret_cast<std::uintptr_t>(d + i) & 31); ++i) d[i] = value(i);
          for (; i + W <= rows; i += W) {
            if constexpr (std::is_same_v<T, double>) {
              __m256d v = _mm256_setzero_pd();
              for (std::size_t t = 0; t < NI; ++t)
                v = _mm256_add_pd(v, _mm256_mul_pd(_mm256_set1_pd(c[t]), _mm256_loadu_pd(src[t] + i)));
              _mm256_stream_pd(d + i, v);
            } else {
              __m256 v = _mm256_setzero_ps();
              for (std::size_t t = 0; t < NI; ++t)
                v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(c[t]), _mm256_loadu_ps(src[t] + i)));
              _mm256_stream_ps(d + i, v);
            }
          }
        }
#endif
        for (; i < rows; ++i) d[i] = value(i);
      }
    }
  }
#if defined(__AVX__)
  _mm_sfence();  // each thread's streaming stores are weakly ordered: drain them before BLAS reads
#endif
  }
}

// Complex blocks with real coefficients (all of Strassen's are +-1, 0) are real blocks of twice
// the rows and leading dimension: the real passes, vector kernels included, serve them. This
// turns a complex combination into that real one (CPU passes here, GPU kernels in cuda/).
template <class T, std::size_t NI, std::size_t NO>
struct RealCombination {
  using R = real_t<T>;
  index_t rows;
  std::array<ConstBlock<R>, NI> in;
  std::array<MutBlock<R>, NO> out;
  std::array<std::array<R, NI>, NO> coef;
};
template <class T, std::size_t NI, std::size_t NO>
RealCombination<T, NI, NO> as_real_combination(index_t rows, const std::array<ConstBlock<T>, NI>& in,
                                               const std::array<MutBlock<T>, NO>& out,
                                               const std::array<std::array<T, NI>, NO>& coef) {
  using R = real_t<T>;
  RealCombination<T, NI, NO> r;
  r.rows = 2 * rows;
  for (std::size_t t = 0; t < NI; ++t) r.in[t] = {reinterpret_cast<const R*>(in[t].p), 2 * in[t].ld};
  for (std::size_t o = 0; o < NO; ++o) {
    r.out[o] = {reinterpret_cast<R*>(out[o].p), 2 * out[o].ld, out[o].accumulate};
    for (std::size_t t = 0; t < NI; ++t) {
      assert(coef[o][t].imag() == R(0));
      r.coef[o][t] = coef[o][t].real();
    }
  }
  return r;
}

template <class T, std::size_t NI, std::size_t NO>
void fused_combine(index_t rows, index_t cols, const std::array<ConstBlock<T>, NI>& in,
                   const std::array<MutBlock<T>, NO>& out,
                   const std::array<std::array<T, NI>, NO>& coef) {
  if constexpr (is_complex_v<T>) {
    const auto r = as_real_combination<T, NI, NO>(rows, in, out, coef);
    fused_combine_real<real_t<T>, NI, NO>(r.rows, cols, r.in, r.out, r.coef);
  } else {
    fused_combine_real<T, NI, NO>(rows, cols, in, out, coef);
  }
}

// The same on contiguous arrays of `len` elements, viewed as columns of kFlatRows so that the
// OpenMP loop over columns spreads one long vector over the threads (a single column would run
// on one thread). accumulate[o]: output o is added to (else overwritten).
inline constexpr index_t kFlatRows = 4096;
template <class T, std::size_t NI, std::size_t NO>
void fused_combine_flat(index_t len, const std::array<const T*, NI>& in, const std::array<T*, NO>& out,
                        const std::array<bool, NO>& accumulate, const std::array<std::array<T, NI>, NO>& coef) {
  const index_t cols = len / kFlatRows, rest = len - cols * kFlatRows;
  for (int part = 0; part < 2; ++part) {
    const index_t off = part ? cols * kFlatRows : 0, rows = part ? rest : kFlatRows, n = part ? 1 : cols;
    if (rows <= 0 || n <= 0) continue;
    std::array<ConstBlock<T>, NI> bi;
    std::array<MutBlock<T>, NO> bo;
    for (std::size_t t = 0; t < NI; ++t) bi[t] = {in[t] + off, rows};
    for (std::size_t o = 0; o < NO; ++o) bo[o] = {out[o] + off, rows, accumulate[o]};
    fused_combine<T, NI, NO>(rows, n, bi, bo, coef);
  }
}
template <class T, std::size_t NI, std::size_t NO>
void fused_combine_flat(index_t len, const std::array<const T*, NI>& in, const std::array<T*, NO>& out,
                        bool accumulate, const std::array<std::array<T, NI>, NO>& coef) {
  std::array<bool, NO> acc;
  acc.fill(accumulate);
  fused_combine_flat<T, NI, NO>(len, in, out, acc, coef);
}

// C = s C, column-major, in place (beta scaling before an accumulating schedule).
template <class T>
void scale_block(index_t rows, index_t cols, T* p, index_t ld, T s) {
  const bool big = rows * cols > (1 << 14);
#pragma omp parallel for schedule(static) if (big)
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) p[i + j * ld] = s == T(0) ? T(0) : p[i + j * ld] * s;
}

}  // namespace distmm
