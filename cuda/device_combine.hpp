// Linear combinations of device blocks in one pass, for the distributed algorithms' device
// paths (cuda/device_space.cpp): the fused kernels of the GPU engines (gpu_kernels.cuh) behind a
// header without kernels.
#pragma once
#include <cuda_runtime.h>

#include <array>

#include "../src/core/types.hpp"

namespace distmm {

// out[o] = sum_t coef[o][t] in[t] over n contiguous elements (added into out[o] where
// accumulate[o]), for one input and 1-4 outputs or 1-4 inputs and one output, on `stream`.
template <class T>
void combine_device(index_t n, int n_in, const std::array<const T*, 4>& in, int n_out, const std::array<T*, 4>& out,
                    const std::array<std::array<int, 4>, 4>& coef, const std::array<bool, 4>& accumulate,
                    cudaStream_t stream);

}  // namespace distmm
