// `distmm xt-bench`: cuBLASXt (cublasXtSgemm/Dgemm), the multi-GPU API a user of cuBLAS reaches
// for, on host-resident square matrices over the node's GPUs: the baseline of the multi-GPU
// benchmark (jobs/bench_multigpu.sh). The inputs are the same random uniform [-1, 1) matrices
// distmm run multiplies (generated on GPU 0, kept in pinned host memory: cuBLASXt's best case),
// the block dimension chosen by timing 1024-8192 once each (unless --block-dim), one warm-up,
// then the median of --repeat calls; the time includes cuBLASXt's own transfers, as its
// interface takes and returns host matrices.
#include <cublasXt.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "../src/core/json.hpp"
#include "../src/core/timer.hpp"
#include "cuda_util.hpp"
#include "device_random.hpp"
#include "gpu_engines.hpp"

namespace distmm {
namespace {

using XtHandle = LibraryHandle<cublasXtHandle_t, cublasXtCreate, cublasXtDestroy>;

struct XtTiming {
  double ms;
  int block_dim;
};

// cuBLASXt's best case: the block dimension (its tile size, which sets how much of each
// matrix travels per GPU call) chosen by timing a few once, unless --block-dim fixes it.
template <class T>
XtTiming xt_median_ms(const XtBenchOptions& o, long long n, int gpus) {
  const std::size_t elems = std::size_t(n) * std::size_t(n);
  PinnedBuffer<T> A, B, C;
  A.reserve(elems), B.reserve(elems), C.reserve(elems);
  {
    cuda_check(cudaSetDevice(0), "cudaSetDevice");
    DeviceBuffer<T> d(elems);
    for (auto [host, stream] : {std::pair{A.get(), Stream::A}, std::pair{B.get(), Stream::B}}) {
      fill_random_device<T>(d.get(), n, n, n, 0, 0, o.seed, stream, Fill::uniform, nullptr);
      cuda_check(cudaMemcpy(host, d.get(), elems * sizeof(T), cudaMemcpyDeviceToHost), "D2H");
    }
  }
  XtHandle xt;
  std::vector<int> ids(std::size_t(gpus), 0);
  for (int g = 0; g < gpus; ++g) ids[std::size_t(g)] = g;
  cublas_check(cublasXtDeviceSelect(xt.get(), gpus, ids.data()), "cublasXtDeviceSelect");
  const T one = 1, zero = 0;
  auto call = [&] {
    if constexpr (std::is_same_v<T, float>)
      cublas_check(cublasXtSgemm(xt.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.get(), n, B.get(), n, &zero,
                                 C.get(), n), "cublasXtSgemm");
    else
      cublas_check(cublasXtDgemm(xt.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A.get(), n, B.get(), n, &zero,
                                 C.get(), n), "cublasXtDgemm");
  };
  auto timed = [&] {
    Stopwatch sw;
    call();  // returns when C is in host memory
    return sw.seconds() * 1e3;
  };
  int best = o.block_dim;
  if (best <= 0) {
    double fastest = 1e300;
    for (int dim : {1024, 2048, 4096, 8192}) {
      if (dim > n) continue;
      cublas_check(cublasXtSetBlockDim(xt.get(), dim), "cublasXtSetBlockDim");
      const double t = timed();
      if (t < fastest) fastest = t, best = dim;
    }
  }
  cublas_check(cublasXtSetBlockDim(xt.get(), std::max(best, 64)), "cublasXtSetBlockDim");
  call();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < o.repeat; ++r) ms.push_back(timed());
  return {median(ms), best};
}

}  // namespace

int xt_bench_command(const XtBenchOptions& o, std::ostream& os) {
  if (PathProblem p = json_file_problem(o.json)) p.raise();  // before the measurements
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw UsageError("distmm xt-bench needs a CUDA GPU and none is visible");
  const int gpus = o.gpus > 0 ? o.gpus : count;
  if (gpus > count)
    throw UsageError("xt-bench --gpus " + std::to_string(gpus) + " but " + std::to_string(count) +
                     " GPUs are visible: use --gpus " + std::to_string(count) + " or fewer");
  if (o.dtype != "f32" && o.dtype != "f64") throw UsageError("xt-bench --dtype must be f32 or f64, not '" + o.dtype + "'");
  os << "| n | dtype | cuBLASXt GPUs | block dim | median ms | TFLOP/s |\n|---|---|---|---|---|---|\n";
  for (long long n : o.sizes) {
    const XtTiming x = o.dtype == "f32" ? xt_median_ms<float>(o, n, gpus) : xt_median_ms<double>(o, n, gpus);
    const double ms = x.ms;
    const double tflops = 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12;
    char line[160];
    std::snprintf(line, sizeof line, "| %lld | %s | %d | %d | %.2f | %.2f |\n", n, o.dtype.c_str(), gpus, x.block_dim,
                  ms, tflops);
    os << line << std::flush;
    if (!o.json.empty())
      append_json_line(o.json, {{"command", "xt-bench"}, {"n", n}, {"dtype", o.dtype}, {"gpus", gpus},
                                {"time_median", ms / 1e3}, {"tflops", tflops}, {"block_dim", x.block_dim},
                                {"inputs", "host, pinned"}});
  }
  return 0;
}

}  // namespace distmm
