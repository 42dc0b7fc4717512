#include "device_info.hpp"

namespace distmm {
bool gpu_support_built() { return false; }
int gpu_count() { return 0; }
int current_gpu() { return -1; }
std::string gpu_summary() { return "none (built without CUDA: configure with -DDISTMM_CUDA=ON)"; }
std::string nccl_summary() { return "not built (CUDA off)"; }
}  // namespace distmm
