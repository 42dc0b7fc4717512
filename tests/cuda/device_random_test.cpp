// Inputs generated on the GPU (cuda/device_random.hpp) are the host generator's numbers, bit
// for bit, at any block offset, for every dtype and both fills. Skipped, visibly, without a GPU
// (and not built without CUDA).
#include <gtest/gtest.h>

#include <complex>
#include <cstring>
#include <vector>

#include "cuda/device_info.hpp"
#include "src/core/random.hpp"

#if DISTMM_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/device_random.hpp"

using namespace distmm;

namespace {

template <class T>
void same_as_host(Fill fill) {
  const index_t rows = 37, cols = 23, ld = 41, row0 = 1000003, col0 = 77;
  Matrix<T> host(ld, cols);
  host.fill(T(0));
  fill_random_block(host.view().block(0, 0, rows, cols), row0, col0, 99, Stream::B, fill);
  T* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), sizeof(T) * ld * cols), cudaSuccess);
  ASSERT_EQ(cudaMemset(dev, 0, sizeof(T) * ld * cols), cudaSuccess);
  fill_random_device<T>(dev, ld, rows, cols, row0, col0, 99, Stream::B, fill, nullptr);
  std::vector<T> back(static_cast<std::size_t>(ld * cols));
  ASSERT_EQ(cudaMemcpy(back.data(), dev, sizeof(T) * ld * cols, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dev);
  EXPECT_EQ(std::memcmp(back.data(), host.data(), sizeof(T) * ld * cols), 0) << DtypeTraits<T>::name;
}

TEST(DeviceRandom, SameNumbersAsTheHostGenerator) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible (" << gpu_summary() << "): device generator not run";
  for (Fill f : {Fill::uniform, Fill::integer}) {
    same_as_host<float>(f);
    same_as_host<double>(f);
    same_as_host<std::complex<float>>(f);
    same_as_host<std::complex<double>>(f);
  }
}

}  // namespace
#endif
