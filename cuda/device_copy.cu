#include "device_copy.hpp"

#include <algorithm>
#include <complex>
#include <stdexcept>
#include <string>

namespace distmm {
namespace {

constexpr int kTile = 32, kRowsPerPass = 8;

// Elements of C components of R (C = 2: complex, re then im). One block moves one tile.
template <class R, int C>
__global__ void strided_copy_kernel(R* dst, long long drs, long long dcs, const R* src, long long srs, long long scs,
                                    long long rows, long long cols, long long col0, bool conj, R br, R bi, bool add) {
  __shared__ R tile[C][kTile][kTile + 1];
  const long long i0 = (long long)blockIdx.x * kTile, j0 = col0 + (long long)blockIdx.y * kTile;
  // Consecutive threads along the side's unit stride (rows where neither side has one).
  const bool read_rows = srs == 1 || scs != 1, write_rows = drs == 1 || dcs != 1;
  for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
    const int ti = read_rows ? threadIdx.x : k, tj = read_rows ? k : threadIdx.x;
    const long long i = i0 + ti, j = j0 + tj;
    if (i < rows && j < cols) {
      const R* p = src + (i * srs + j * scs) * C;
      for (int c = 0; c < C; ++c) tile[c][ti][tj] = p[c];
    }
  }
  __syncthreads();
  for (int k = threadIdx.y; k < kTile; k += kRowsPerPass) {
    const int ti = write_rows ? threadIdx.x : k, tj = write_rows ? k : threadIdx.x;
    const long long i = i0 + ti, j = j0 + tj;
    if (i >= rows || j >= cols) continue;
    R* q = dst + (i * drs + j * dcs) * C;
    R re = tile[0][ti][tj], im = C == 2 ? tile[C - 1][ti][tj] : R(0);
    if (conj) im = -im;
    if (add) {
      const R ore = q[0], oim = C == 2 ? q[C - 1] : R(0);
      re += br * ore - bi * oim;
      im += br * oim + bi * ore;
    }
    q[0] = re;
    if (C == 2) q[C - 1] = im;
  }
}

template <class R, int C>
void launch(void* dst, index_t drs, index_t dcs, const void* src, index_t srs, index_t scs, index_t rows, index_t cols,
            bool conj, const void* beta, cudaStream_t s) {
  R br = 0, bi = 0;
  if (beta) {
    br = static_cast<const R*>(beta)[0];
    if (C == 2) bi = static_cast<const R*>(beta)[1];
  }
  const bool add = br != R(0) || bi != R(0);
  const long long row_tiles = (rows + kTile - 1) / kTile;
  const long long max_y = 65535;  // gridDim.y's limit: wider blocks go in column chunks
  for (long long c0 = 0; c0 < cols; c0 += max_y * kTile) {
    const long long col_tiles = std::min<long long>((cols - c0 + kTile - 1) / kTile, max_y);
    const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles)), block(kTile, kRowsPerPass);
    strided_copy_kernel<R, C><<<grid, block, 0, s>>>(static_cast<R*>(dst), drs, dcs, static_cast<const R*>(src), srs,
                                                     scs, rows, cols, c0, conj && C == 2, br, bi, add);
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("copy_strided_device: ") + cudaGetErrorString(err));
}

}  // namespace

void copy_strided_device(void* dst, index_t drs, index_t dcs, const void* src, index_t srs, index_t scs, index_t rows,
                         index_t cols, Dtype dt, bool conj, const void* beta, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (rows > (index_t(1) << 36)) throw std::runtime_error("copy_strided_device: block too tall");
  switch (dt) {
    case Dtype::f32: return launch<float, 1>(dst, drs, dcs, src, srs, scs, rows, cols, conj, beta, stream);
    case Dtype::f64: return launch<double, 1>(dst, drs, dcs, src, srs, scs, rows, cols, conj, beta, stream);
    case Dtype::c32: return launch<float, 2>(dst, drs, dcs, src, srs, scs, rows, cols, conj, beta, stream);
    case Dtype::c64: return launch<double, 2>(dst, drs, dcs, src, srs, scs, rows, cols, conj, beta, stream);
  }
  throw std::logic_error("copy_strided_device: unknown dtype");
}

}  // namespace distmm
