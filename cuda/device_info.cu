#include <cuda_runtime.h>

#include "device_info.hpp"

namespace distmm {

bool gpu_support_built() { return true; }

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int current_gpu() {
  int d = -1;
  if (gpu_count() == 0 || cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

std::string gpu_summary() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("none (") + cudaGetErrorString(err) + ")";
  }
  if (n == 0) return "none";
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  return std::to_string(n) + " x " + p.name + " (sm_" + std::to_string(p.major) +
         std::to_string(p.minor) + ", " + std::to_string(p.totalGlobalMem >> 30) + " GiB)";
}

}  // namespace distmm
