// `distmm tune`: seed 000's Algorithm 1 for the fused addition kernels. Candidate block shapes
// (threads over rows x columns) are pruned by occupancy, computed from the kernel's registers
// and shared memory (cudaFuncGetAttributes) against the device's limits
// (cudaGetDeviceProperties, cudaOccupancyMaxActiveBlocksPerMultiprocessor); the survivors are
// timed on Winograd's three-input, three-output pass, and the fastest is kept per device, dtype
// and size in the tuning file that the engines read.
#include <algorithm>
#include <iomanip>
#include <vector>

#include "gpu_engines.hpp"
#include "gpu_kernels.cuh"

namespace distmm {
namespace {

template <class T>
void tune_dtype(const cudaDeviceProp& prop, const std::string& file, const char* dtype,
                std::ostream& os) {
  constexpr int V = 16 / sizeof(T);
  auto kernel = combine_kernel<T, 3, 3, V>;
  cudaFuncAttributes attr;
  cuda_check(cudaFuncGetAttributes(&attr, kernel), "attributes");
  struct Candidate {
    LaunchShape s;
    double occupancy, micros;
  };
  std::vector<Candidate> all;
  for (int bx : {32, 64, 128, 256, 512, 1024})
    for (int by : {1, 2, 4, 8}) {
      if (bx * by > std::min(prop.maxThreadsPerBlock, attr.maxThreadsPerBlock)) continue;
      int blocks = 0;
      cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, bx * by, 0), "occupancy");
      double occ = double(blocks * bx * by) / prop.maxThreadsPerMultiProcessor;
      all.push_back({{bx, by}, occ, 0});
    }
  double best_occ = 0;
  for (auto& c : all) best_occ = std::max(best_occ, c.occupancy);
  // Prune: keep the shapes within 3/4 of the best occupancy (the paper's first filter).
  std::vector<Candidate> kept;
  for (auto& c : all)
    if (c.occupancy >= 0.75 * best_occ) kept.push_back(c);
  os << dtype << ": kernel uses " << attr.numRegs << " registers, " << attr.sharedSizeBytes
     << " B shared; " << kept.size() << " of " << all.size() << " shapes survive the occupancy filter\n";

  for (long long n : {2048LL, 8192LL}) {
    DeviceBuffer<T> buf(static_cast<std::size_t>(6 * n * n));
    cuda_check(cudaMemset(buf.get(), 0, sizeof(T) * 6 * n * n), "memset");
    std::array<ConstBlock<T>, 3> in{{{buf.get(), n}, {buf.get() + n * n, n}, {buf.get() + 2 * n * n, n}}};
    std::array<MutBlock<T>, 3> out{{{buf.get() + 3 * n * n, n, true}, {buf.get() + 4 * n * n, n, true},
                                    {buf.get() + 5 * n * n, n, false}}};
    std::array<std::array<T, 3>, 3> coef{{{1, 0, 1}, {1, 1, 0}, {1, 1, 1}}};
    CudaEvent t0, t1;
    Candidate* best = nullptr;
    for (auto& c : kept) {
      launch_combine<T, 3, 3>(n, n, in, out, coef, c.s, nullptr);  // warm
      const int reps = 5;
      cuda_check(cudaEventRecord(t0.get()), "event");
      for (int r = 0; r < reps; ++r) launch_combine<T, 3, 3>(n, n, in, out, coef, c.s, nullptr);
      cuda_check(cudaEventRecord(t1.get()), "event");
      cuda_check(cudaEventSynchronize(t1.get()), "sync");
      float ms = 0;
      cudaEventElapsedTime(&ms, t0.get(), t1.get());
      c.micros = 1000.0 * ms / reps;
      if (!best || c.micros < best->micros) best = &c;
    }
    if (!best) continue;
    double gbs = 8.0 * n * n * sizeof(T) / (best->micros * 1e3);  // 6 reads + ... as moved bytes
    os << "  n " << std::setw(6) << n << ": best " << best->s.block_x << "x" << best->s.block_y
       << " (occupancy " << std::setprecision(2) << best->occupancy << "), " << std::setprecision(4)
       << best->micros << " us, ~" << gbs << " GB/s\n";
    record_tuned_shape(file, prop.name, dtype, n, best->s, best->micros);
  }
}

}  // namespace

int tune_command(const TuneOptions& o, std::ostream& os) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw UsageError("distmm tune needs a CUDA GPU and none is visible");
  cuda_check(cudaSetDevice(o.device % count), "cudaSetDevice");
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, o.device % count), "properties");
  const std::string file = o.file.empty() ? tuning_file_path() : o.file;
  os << "tuning the addition kernels on " << prop.name << " (" << prop.multiProcessorCount
     << " SMs, " << prop.maxThreadsPerMultiProcessor << " threads/SM)\n";
  tune_dtype<float>(prop, file, "f32", os);
  tune_dtype<double>(prop, file, "f64", os);
  os << "written to " << file << "\n";
  return 0;
}

}  // namespace distmm
