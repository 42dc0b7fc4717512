// Fused multi-output addition kernels, the scale kernel and the shared-memory tiled GEMM.
//   out_o = [out_o +] sum_t coef[o][t] in_t   (seed 003's mulIncInc/mulStoreDec family, with the
// product itself done by cuBLAS accumulating into C). One thread handles V consecutive rows of a
// column: 16-byte vector loads and stores (float4, double2) when every operand is aligned.
// Complex blocks take the real kernels as real blocks of twice the rows and leading dimension
// (the coefficients are real, as in node/fused.hpp); the scale kernel has a complex variant.
#pragma once
#include <array>
#include <cassert>

#include "../node/fused.hpp"
#include "cuda_util.hpp"
#include "tuning.hpp"

namespace distmm {

template <class T, int V> struct VecOf;
template <> struct VecOf<float, 4> { using type = float4; };
template <> struct VecOf<double, 2> { using type = double2; };
template <class T> struct VecOf<T, 1> { using type = T; };

template <class T, int NI, int NO>
struct CombineParams {
  const T* in[NI];
  long long ldi[NI];
  T* out[NO];
  long long ldo[NO];
  int acc[NO];
  T coef[NO][NI];
  long long rows, cols;
};

template <class T, int NI, int NO, int V>
__global__ void combine_kernel(CombineParams<T, NI, NO> p) {
  using Vec = typename VecOf<T, V>::type;
  const long long r = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (r >= p.rows) return;
  for (long long c = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; c < p.cols;
       c += static_cast<long long>(gridDim.y) * blockDim.y) {
    T x[NI][V];
#pragma unroll
    for (int t = 0; t < NI; ++t) {
      Vec v = *reinterpret_cast<const Vec*>(p.in[t] + r + c * p.ldi[t]);
#pragma unroll
      for (int e = 0; e < V; ++e) x[t][e] = reinterpret_cast<const T*>(&v)[e];
    }
#pragma unroll
    for (int o = 0; o < NO; ++o) {
      T y[V];
      T* dst = p.out[o] + r + c * p.ldo[o];
      if (p.acc[o]) {
        Vec v = *reinterpret_cast<const Vec*>(dst);
#pragma unroll
        for (int e = 0; e < V; ++e) y[e] = reinterpret_cast<const T*>(&v)[e];
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) y[e] = T(0);
      }
#pragma unroll
      for (int t = 0; t < NI; ++t)
#pragma unroll
        for (int e = 0; e < V; ++e) y[e] += p.coef[o][t] * x[t][e];
      *reinterpret_cast<Vec*>(dst) = *reinterpret_cast<const Vec*>(y);
    }
  }
}

template <class T>
__global__ void scale_kernel(long long rows, long long cols, T* p, long long ld, T s) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  for (long long c = blockIdx.y; c < cols; c += gridDim.y)
    p[r + c * ld] = s == T(0) ? T(0) : p[r + c * ld] * s;
}
// The same for complex elements stored as (re, im) pairs of R; ld counts complex elements.
template <class R>
__global__ void scale_complex_kernel(long long rows, long long cols, R* p, long long ld, R sr, R si) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const bool zero = sr == R(0) && si == R(0);
  for (long long c = blockIdx.y; c < cols; c += gridDim.y) {
    R* x = p + 2 * (r + c * ld);
    const R re = x[0], im = x[1];
    x[0] = zero ? R(0) : re * sr - im * si;
    x[1] = zero ? R(0) : re * si + im * sr;
  }
}

template <class T, int NI, int NO>
void launch_combine_real(long long rows, long long cols, const std::array<ConstBlock<T>, NI>& in,
                         const std::array<MutBlock<T>, NO>& out,
                         const std::array<std::array<T, NI>, NO>& coef, LaunchShape shape,
                         cudaStream_t stream) {
  static_assert(std::is_floating_point_v<T>);
  if (rows <= 0 || cols <= 0) return;
  CombineParams<T, NI, NO> p;
  constexpr int V = 16 / sizeof(T);
  bool vec = rows % V == 0;
  for (int t = 0; t < NI; ++t) {
    p.in[t] = in[t].p;
    p.ldi[t] = in[t].ld;
    vec = vec && reinterpret_cast<std::uintptr_t>(in[t].p) % 16 == 0 && in[t].ld % V == 0;
  }
  for (int o = 0; o < NO; ++o) {
    p.out[o] = out[o].p;
    p.ldo[o] = out[o].ld;
    p.acc[o] = out[o].accumulate ? 1 : 0;
    vec = vec && reinterpret_cast<std::uintptr_t>(out[o].p) % 16 == 0 && out[o].ld % V == 0;
    for (int t = 0; t < NI; ++t) p.coef[o][t] = coef[o][t];
  }
  p.rows = rows;
  p.cols = cols;
  const int v = vec ? V : 1;
  dim3 block(shape.block_x, shape.block_y);
  long long gx = (rows / v + block.x - 1) / block.x;
  long long gy = std::min<long long>((cols + block.y - 1) / block.y, 65535);
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  if (vec) combine_kernel<T, NI, NO, V><<<grid, block, 0, stream>>>(p);
  else combine_kernel<T, NI, NO, 1><<<grid, block, 0, stream>>>(p);
  cuda_check(cudaGetLastError(), "combine kernel");
}

//   out_o = [out_o +] sum_t coef[o][t] in_t over rows x cols, any type of the dtype list:
// complex blocks with real coefficients (all of Strassen's and Winograd's are +-1, 0) are real
// blocks of twice the rows and leading dimension, so the real kernels, vector loads included,
// serve them.
template <class T, int NI, int NO>
void launch_combine(long long rows, long long cols, const std::array<ConstBlock<T>, NI>& in,
                    const std::array<MutBlock<T>, NO>& out,
                    const std::array<std::array<T, NI>, NO>& coef, LaunchShape shape,
                    cudaStream_t stream) {
  if constexpr (is_complex_v<T>) {  // as real blocks of twice the rows (node/fused.hpp)
    const auto r = as_real_combination<T, NI, NO>(rows, in, out, coef);
    launch_combine_real<real_t<T>, NI, NO>(r.rows, cols, r.in, r.out, r.coef, shape, stream);
  } else {
    launch_combine_real<T, NI, NO>(rows, cols, in, out, coef, shape, stream);
  }
}

// p = s p over rows x cols (column-major, leading dimension ld), any type of the dtype list.
template <class T>
void launch_scale(long long rows, long long cols, T* p, long long ld, T s, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  dim3 grid(static_cast<unsigned>((rows + 255) / 256), static_cast<unsigned>(std::min<long long>(cols, 65535)));
  if constexpr (is_complex_v<T>) {
    using R = real_t<T>;
    scale_complex_kernel<R><<<grid, 256, 0, stream>>>(rows, cols, reinterpret_cast<R*>(p), ld,
                                                      s.real(), s.imag());
  } else {
    scale_kernel<T><<<grid, 256, 0, stream>>>(rows, cols, p, ld, s);
  }
  cuda_check(cudaGetLastError(), "scale kernel");
}

}  // namespace distmm
