// Without CUDA: no GPU engines, and the GPU commands say how to get them.
#include "gpu_engines.hpp"

namespace distmm {

std::vector<EngineInfo> gpu_engine_infos() { return {}; }
int tune_command(const TuneOptions&, std::ostream&) {
  throw UsageError("distmm was built without CUDA: rebuild with -DDISTMM_CUDA=ON to tune GPU kernels");
}
int gpu_bench_command(const GpuBenchOptions&, std::ostream&) {
  throw UsageError("distmm was built without CUDA: rebuild with -DDISTMM_CUDA=ON for gpu-bench");
}
int xt_bench_command(const XtBenchOptions&, std::ostream&) {
  throw UsageError("distmm was built without CUDA: rebuild with -DDISTMM_CUDA=ON for xt-bench");
}

}  // namespace distmm
