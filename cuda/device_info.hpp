// What the GPU side of the build can see. Compiled from device_info.cu when CUDA is built,
// from device_info_none.cpp otherwise, so that callers need no #ifdef.
#pragma once
#include <string>

namespace distmm {
bool gpu_support_built();
int gpu_count();            // 0 when none is visible or CUDA is not built
int current_gpu();          // the calling thread's current device (cudaGetDevice); -1 without one
std::string gpu_summary();  // "2 x NVIDIA H100 80GB HBM3 (sm_90)" or why there are none
// "NCCL 2.28.9 (/usr/local/cuda/lib/libnccl.so.2)", or why there is none (cuda/nccl_library.hpp)
std::string nccl_summary();
}  // namespace distmm
