// `gpu-tiled`: a shared-memory tiled GEMM kernel (seeds 001 and 002): each 16 x 16 thread block
// computes a 16 x 16 tile of C, staging tiles of op(A) and op(B) through shared memory. Correct
// for any m, n, k, transposes, alpha and beta; clearly slower than cuBLAS, kept as the baseline
// the papers start from and for tests. Real dtypes only (f32, f64): any op other than N is a
// transpose.
#include "gpu_engine_base.cuh"
#include "gpu_engines.hpp"

namespace distmm {
namespace {

constexpr int kTile = 16;

template <class T>
__global__ void tiled_gemm_kernel(int ta, int tb, long long m, long long n, long long k, T alpha,
                                  const T* A, long long lda, const T* B, long long ldb, T beta,
                                  T* C, long long ldc) {
  __shared__ T As[kTile][kTile + 1];
  __shared__ T Bs[kTile][kTile + 1];
  const long long row = static_cast<long long>(blockIdx.x) * kTile + threadIdx.x;
  const long long col = static_cast<long long>(blockIdx.y) * kTile + threadIdx.y;
  T acc = T(0);
  for (long long l0 = 0; l0 < k; l0 += kTile) {
    // As[x][y] = op(A)(row, l0 + y); Bs[x][y] = op(B)(l0 + x, col)
    long long ar = row, ac = l0 + threadIdx.y;
    As[threadIdx.x][threadIdx.y] =
        (ar < m && ac < k) ? (ta ? A[ac + ar * lda] : A[ar + ac * lda]) : T(0);
    long long br = l0 + threadIdx.x, bc = col;
    Bs[threadIdx.x][threadIdx.y] =
        (br < k && bc < n) ? (tb ? B[bc + br * ldb] : B[br + bc * ldb]) : T(0);
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kTile; ++t) acc += As[threadIdx.x][t] * Bs[t][threadIdx.y];
    __syncthreads();
  }
  if (row < m && col < n) {
    T* c = C + row + col * ldc;
    *c = alpha * acc + (beta == T(0) ? T(0) : beta * *c);
  }
}

class TiledEngine final : public GpuEngineBase<TiledEngine> {
 public:
  static constexpr DtypeSet kDtypes = DtypeSet::real();
  explicit TiledEngine(const EngineOptions& o) : GpuEngineBase(o, "gpu-tiled") {}
  std::string name() const override { return "gpu-tiled"; }
  std::string describe() const override { return "gpu-tiled (16x16 shared-memory tiles, " + device_name_ + ")"; }
  template <class T>
  void device_run(Op ta, Op tb, index_t m, index_t n, index_t k, T alpha, const T* A, index_t lda,
                  const T* B, index_t ldb, T beta, T* C, index_t ldc) {
    if (m <= 0 || n <= 0) return;
    dim3 block(kTile, kTile);
    dim3 grid(static_cast<unsigned>((m + kTile - 1) / kTile), static_cast<unsigned>((n + kTile - 1) / kTile));
    static_assert(!is_complex_v<T>, "gpu-tiled is real only (kDtypes)");
    // (Op::C on a real type is Op::T: every op but N transposes.)
    tiled_gemm_kernel<T><<<grid, block, 0, stream()>>>(ta != Op::N, tb != Op::N, m, n, k, alpha, A,
                                                       lda, B, ldb, beta, C, ldc);
    cuda_check(cudaGetLastError(), "tiled gemm");
  }
};

}  // namespace

EngineInfo gpu_tiled_engine_info() {
  return {"gpu-tiled", "16x16 shared-memory tiled CUDA kernel, the baseline of seeds 001 and 002 (slower than cuBLAS)",
          TiledEngine::kDtypes, Memory::device,
          [](const EngineOptions& o) { return std::make_unique<TiledEngine>(o); }};
}

}  // namespace distmm
