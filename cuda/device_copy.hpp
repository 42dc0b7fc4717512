// The strided copy of the distributed algorithms' device space (DeviceSpace::copy_strided,
// cuda/device_space.cpp): a tiled kernel behind a header without kernels.
#pragma once
#include <cuda_runtime.h>

#include "../src/core/dtype.hpp"
#include "../src/core/types.hpp"

namespace distmm {

// dst(i, j) = src(i, j) (conjugated where conj; beta dst(i, j) + that where beta is non-null and
// non-zero) for i < rows, j < cols, element (i, j) at i * rs + j * cs on each side, on `stream`.
// 32 x 32 tiles through shared memory, read and written along each side's unit stride, so a
// transpose reads and writes whole lines.
void copy_strided_device(void* dst, index_t dst_rs, index_t dst_cs, const void* src, index_t src_rs, index_t src_cs,
                         index_t rows, index_t cols, Dtype dt, bool conj, const void* beta, cudaStream_t stream);

}  // namespace distmm
