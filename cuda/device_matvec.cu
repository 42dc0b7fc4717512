#include "cuda_util.hpp"
#include "device_matvec.hpp"

namespace distmm {
namespace {

constexpr int kRows = 256;  // threads per block, one row each (coalesced down a column)
constexpr int kCols = 256;  // columns per block: blocks of a row add their sums atomically

// R: M's real type; MP, XP: components of M's and x's entries (1 real, 2 complex).
template <class R, int MP, int XP>
__global__ void matvec_kernel(const R* M, index_t ld, index_t rows, index_t cols, const double* x,
                              const double* xa, double* y, double* ya) {
  constexpr int YP = (MP == 2 || XP == 2) ? 2 : 1;
  const index_t i = blockIdx.x * index_t(kRows) + threadIdx.x;
  if (i >= rows) return;
  const index_t c0 = blockIdx.y * index_t(kCols), c1 = min(cols, c0 + kCols);
  double re = 0, im = 0, bound = 0;
  for (index_t c = c0; c < c1; ++c) {
    const R* e = M + (i + c * ld) * MP;
    const double mr = double(e[0]), mi = MP == 2 ? double(e[1]) : 0.0;
    const double xr = x[c * XP], xi = XP == 2 ? x[c * XP + 1] : 0.0;
    re += mr * xr - mi * xi;
    im += mr * xi + mi * xr;
    bound += (MP == 2 ? hypot(mr, mi) : fabs(mr)) * xa[c];
  }
  atomicAdd(y + i * YP, re);
  if (YP == 2) atomicAdd(y + i * YP + 1, im);
  atomicAdd(ya + i, bound);
}

template <class R, int MP, int XP>
void launch(const void* M, index_t ld, index_t rows, index_t cols, const double* x, const double* xa,
            double* y, double* ya, cudaStream_t s) {
  const dim3 grid(unsigned((rows + kRows - 1) / kRows), unsigned((cols + kCols - 1) / kCols));
  matvec_kernel<R, MP, XP><<<grid, kRows, 0, s>>>(static_cast<const R*>(M), ld, rows, cols, x, xa, y, ya);
}

}  // namespace

void device_matvec(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt, const double* x,
                   bool x_complex, const double* xa, double* y, double* ya, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if ((cols + kCols - 1) / kCols > 65535) throw std::runtime_error("device_matvec: too many columns");
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int mp = is_complex_v<T> ? 2 : 1;
    if (x_complex) launch<real_t<T>, mp, 2>(M, ld, rows, cols, x, xa, y, ya, stream);
    else launch<real_t<T>, mp, 1>(M, ld, rows, cols, x, xa, y, ya, stream);
  });
  cuda_check(cudaGetLastError(), "device_matvec");
}

}  // namespace distmm
