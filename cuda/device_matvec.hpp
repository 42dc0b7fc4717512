// Matrix-vector products for Freivalds' check on a device-resident block (mpi/verify.cpp's
// local_matvec, on the GPU): accumulated in double, with the bound |M| |x| beside the product.
#pragma once
#include <cuda_runtime.h>

#include "../src/core/types.hpp"

namespace distmm {

// y[r] += sum_c M(r, c) x[c] and ya[r] += sum_c |M(r, c)| xa[c] for the rows x cols block M
// (elements of dt, leading dimension ld). x holds 2 doubles (re, im) per entry when x_complex,
// y when dt is complex or x_complex; all vectors are device memory, queued on `stream`.
void device_matvec(const void* M, index_t ld, index_t rows, index_t cols, Dtype dt, const double* x,
                   bool x_complex, const double* xa, double* y, double* ya, cudaStream_t stream);

}  // namespace distmm
