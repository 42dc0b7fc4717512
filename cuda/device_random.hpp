// The global random matrices of src/core/random.hpp generated in GPU memory: the same numbers,
// bit for bit, as the host generator gives for the same seed, stream and global position, so a
// device-resident run multiplies exactly the inputs of a host run (and of any rank count).
#pragma once
#include <cuda_runtime.h>

#include "../src/core/random.hpp"

namespace distmm {

// p[i + j ld] = element (row0 + i, col0 + j) of the global matrix (seed, s, fill), for a
// rows x cols block, on `stream`.
template <class T>
void fill_random_device(T* p, index_t ld, index_t rows, index_t cols, index_t row0, index_t col0,
                        std::uint64_t seed, Stream s, Fill fill, cudaStream_t stream);

}  // namespace distmm
