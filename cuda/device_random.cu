#include "cuda_util.hpp"
#include "device_random.hpp"

namespace distmm {
namespace {

// One thread per element, consecutive threads down a column (coalesced stores).
template <class T>
__global__ void fill_kernel(T* p, index_t ld, index_t rows, index_t cols, index_t row0, index_t col0,
                            std::uint64_t seed, Stream s, Fill fill) {
  using R = real_t<T>;
  constexpr int parts = is_complex_v<T> ? 2 : 1;
  const index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x;
  if (i >= rows) return;
  for (index_t j = blockIdx.y; j < cols; j += gridDim.y) {
    R* out = reinterpret_cast<R*>(p + i + j * ld);
    for (int part = 0; part < parts; ++part)
      out[part] = static_cast<R>(random_component(seed, s, row0 + i, col0 + j, fill, part));
  }
}

}  // namespace

template <class T>
void fill_random_device(T* p, index_t ld, index_t rows, index_t cols, index_t row0, index_t col0,
                        std::uint64_t seed, Stream s, Fill fill, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(unsigned((rows + 255) / 256), unsigned(std::min<index_t>(cols, 65535)));
  fill_kernel<T><<<grid, 256, 0, stream>>>(p, ld, rows, cols, row0, col0, seed, s, fill);
  cuda_check(cudaGetLastError(), "fill_random_device");
}

#define DISTMM_FILL_RANDOM_DEVICE(T)                                                                     \
  template void fill_random_device<T>(T*, index_t, index_t, index_t, index_t, index_t, std::uint64_t, \
                                      Stream, Fill, cudaStream_t);
DISTMM_FOR_EACH_TYPE(DISTMM_FILL_RANDOM_DEVICE)
#undef DISTMM_FILL_RANDOM_DEVICE

}  // namespace distmm
