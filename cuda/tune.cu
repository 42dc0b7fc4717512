// `distmm tune`: seed 000's Algorithm 1 for the fused addition kernels. Candidate block shapes
// (threads over rows x columns) are pruned by occupancy, computed from the kernel's registers
// and shared memory (cudaFuncGetAttributes) against the device's limits
// (cudaGetDeviceProperties, cudaOccupancyMaxActiveBlocksPerMultiprocessor); the survivors are
// timed on Winograd's three-input, three-output pass, and the fastest is kept per device, dtype
// and size in the tuning file that the engines read.
// The same search then runs on the leaf products: every cuBLASLt configuration the device
// supports for the leaf size (algorithm, tile, stages, swizzle, cluster shape; split-K off, no
// workspace) is timed, the fastest few are timed again against cuBLAS's own choice, and a
// configuration is kept only where it beats cuBLAS (lt_gemm.cuh runs it). Where the engines run
// a leaf's products two at a time (leaves_run_concurrently), its configurations are timed in
// pairs on two streams, per product.
#include <algorithm>
#include <array>
#include <iomanip>
#include <sstream>
#include <vector>

#include "../src/core/files.hpp"
#include "gpu_engines.hpp"
#include "gpu_kernels.cuh"
#include "lt_gemm.cuh"

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

template <class T>
__global__ void uniform_kernel(long long n, T* x) {
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ull;  // a splitmix-style hash
    h ^= h >> 31, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
    x[i] = T(2) * T(h >> 11) / T(1ull << 53) - T(1);
  }
}
// Uniform [-1, 1) values on the device.
template <class T>
void fill_uniform(T* x, long long n, cudaStream_t s) {
  uniform_kernel<T><<<1024, 256, 0, s>>>(n, x);
  cuda_check(cudaGetLastError(), "fill kernel");
}


// Every configuration cuBLASLt offers for T x T -> T products with T compute.
template <class T>
std::vector<GemmConfig> lt_candidates(cublasLtHandle_t h) {
  int ids[128], nid = 0;
  cublas_check(cublasLtMatmulAlgoGetIds(h, lt_compute<T>(), lt_type<T>(), lt_type<T>(), lt_type<T>(),
                                        lt_type<T>(), lt_type<T>(), 128, ids, &nid),
               "cublasLtMatmulAlgoGetIds");
  std::vector<GemmConfig> out;
  for (int q = 0; q < nid; ++q) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(h, lt_compute<T>(), lt_type<T>(), lt_type<T>(), lt_type<T>(), lt_type<T>(),
                               lt_type<T>(), ids[q], &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    auto cap_list = [&](cublasLtMatmulAlgoCapAttributes_t a) {
      std::size_t bytes = 0;
      cublasLtMatmulAlgoCapGetAttribute(&algo, a, nullptr, 0, &bytes);
      std::vector<int> v(bytes / sizeof(int));
      if (!v.empty()) cublasLtMatmulAlgoCapGetAttribute(&algo, a, v.data(), bytes, &bytes);
      if (v.empty()) v.push_back(0);
      return v;
    };
    int swizzle = 0, custom_max = 0;
    std::size_t bytes = 0;
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle, sizeof(int), &bytes);
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom_max, sizeof(int), &bytes);
    for (int tile : cap_list(CUBLASLT_ALGO_CAP_TILE_IDS))
      for (int stages : cap_list(CUBLASLT_ALGO_CAP_STAGES_IDS))
        for (int sw = 0; sw <= (swizzle ? 1 : 0); ++sw)
          for (int custom = 0; custom <= std::min(custom_max, 3); ++custom)
            for (int cluster : {int(CUBLASLT_CLUSTER_SHAPE_AUTO), int(CUBLASLT_CLUSTER_SHAPE_1x1x1),
                                int(CUBLASLT_CLUSTER_SHAPE_2x1x1), int(CUBLASLT_CLUSTER_SHAPE_1x2x1)})
              out.push_back({ids[q], tile, stages, sw, custom, cluster});
  }
  return out;
}

// The fastest of `pool` for an m x n x k leaf (C += A B, N N), against cuBLAS's own choice,
// each timed as the GPU Strassen engines run such leaves with their default two streams: two at
// a time, on distinct operands, where its tiles leave SMs idle (leaves_run_concurrently), and per
// product.
struct LeafResult {
  std::optional<GemmConfig> best;  // none: cuBLAS's choice was as fast (within 1%)
  double best_ms = 0, cublas_ms = 0;
  bool best_paired = false, cublas_paired = false;  // timed two at a time
  std::vector<GemmConfig> finalists;  // the best few of the first round, fastest first
};

template <class T>
LeafResult time_leaf(cublasLtHandle_t lt, cublasHandle_t cub, cudaStream_t stream, long long m, long long n,
                     long long k, const std::vector<GemmConfig>& pool, int sms) {
  // A, B and C for each of the two products of a pair: the engine's paired products read
  // different blocks (P1 = A11 B11 beside P2 = A12 B21), which shared operands would let one
  // product serve the other from L2.
  // Each block starts 256-byte aligned (64 elements), as cuBLASLt's kernels want, on any shape.
  auto aligned = [](long long elems) { return (elems + 63) / 64 * 64; };
  const long long a = aligned(m * k), b = aligned(k * n), per = a + b + aligned(m * n);
  DeviceBuffer<T> buf(static_cast<std::size_t>(2 * per));
  fill_uniform(buf.get(), 2 * per, stream);  // zeros would draw less power than real data
  const T* const A[2] = {buf.get(), buf.get() + per};
  const T* const B[2] = {A[0] + a, A[1] + a};
  T* const C[2] = {buf.get() + a + b, buf.get() + per + a + b};
  // The second product of a pair: its own stream and cuBLAS handle, forked from and joined to
  // `stream`, as the engine's StreamSet does.
  CudaStream side;
  CublasHandle side_cub;
  cublas_check(cublasSetStream(side_cub.get(), side.get()), "cublasSetStream");
  CudaEvent forked, joined;
  const cudaStream_t on[2] = {stream, side.get()};
  const T one = 1;
  // Calls per sample: as many as 4096^2 outputs hold of this one's (16 at 1024^2, 1 from 4096^2),
  // at most 256 (tiny shapes).
  const int reps = static_cast<int>(std::clamp(4096.0 * 4096.0 / (double(m) * n), 1.0, 256.0));
  // product(i) runs one product on stream i; a pair runs products 0 and 1 at once.
  auto timed_call = [&](bool paired, auto product) {
    return [&, paired, product] {
      if (!paired) return product(0);
      cuda_check(cudaEventRecord(forked.get(), stream), "event");
      cuda_check(cudaStreamWaitEvent(side.get(), forked.get(), 0), "wait");
      product(0), product(1);
      cuda_check(cudaEventRecord(joined.get(), side.get()), "event");
      cuda_check(cudaStreamWaitEvent(stream, joined.get(), 0), "wait");
    };
  };
  auto cublas_product = [&](int i) {
    static_assert(!is_complex_v<T>, "leaf products are tuned for real types");
    cublasHandle_t h = i == 0 ? cub : side_cub.get();
    if constexpr (std::is_same_v<T, float>)
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(n), int(k), &one, A[i], int(m), B[i], int(k), &one, C[i],
                  int(m));
    else
      cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(m), int(n), int(k), &one, A[i], int(m), B[i], int(k), &one, C[i],
                  int(m));
  };
  auto lt_product = [&](const LtPlan& plan) {
    return [&, p = &plan](int i) {
      cublasLtMatmul(lt, p->desc.get(), &one, A[i], p->a.get(), B[i], p->b.get(), &one, C[i], p->c.get(), C[i],
                     p->c.get(), &p->algo, nullptr, 0, on[i]);
    };
  };
  auto paired_for = [&](const GemmConfig& c) {
    const auto [tr, tc] = lt_tile_shape(c.tile);
    return leaves_run_concurrently(m, n, tr, tc, sms);
  };
  // Milliseconds per product of `samples` samples' median.
  auto ms_per_product = [&](int samples, bool paired, auto product) {
    return median_ms(stream, samples, reps, timed_call(paired, product)) / (paired ? 2 : 1);
  };
  struct Timed {
    GemmConfig c;
    double ms;
  };
  std::vector<Timed> timed;
  for (const GemmConfig& c : pool) {
    LtPlan p = lt_plan<T>(lt, c, Op::N, Op::N, m, n, k, m, k, m);
    if (p.ok) timed.push_back({c, ms_per_product(3, paired_for(c), lt_product(p))});
  }
  std::sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
  if (timed.size() > 5) timed.resize(5);
  LeafResult r;
  for (auto& t : timed) r.finalists.push_back(t.c);
  // The finalists and cuBLAS, timed again under sustained load (each after about 0.2 s of
  // the same calls: a loaded GPU runs at a lower clock, as it does inside a long product). A
  // paired call runs two products.
  auto sustained_ms = [&](bool paired, auto product, double estimate_ms) {
    const double call_ms = estimate_ms * (paired ? 2 : 1);
    const int warm = static_cast<int>(std::clamp(200.0 / call_ms, 1.0, 2000.0));
    auto call = timed_call(paired, product);
    for (int i = 0; i < warm; ++i) call();
    return ms_per_product(7, paired, product);
  };
  // cuBLAS's tiles are not known here: its leaves pair by size alone, as in the engine.
  r.cublas_paired = leaves_run_concurrently(m, n, 0, 0, sms);
  r.cublas_ms = sustained_ms(r.cublas_paired, cublas_product, timed.empty() ? 1.0 : timed[0].ms);
  r.best_ms = r.cublas_ms, r.best_paired = r.cublas_paired;
  for (auto& t : timed) {
    LtPlan p = lt_plan<T>(lt, t.c, Op::N, Op::N, m, n, k, m, k, m);
    const double ms = sustained_ms(paired_for(t.c), lt_product(p), t.ms);
    if (ms < 0.99 * r.best_ms) r.best = t.c, r.best_ms = ms, r.best_paired = paired_for(t.c);  // 1%: not noise
  }
  return r;
}

void report_leaf(std::ostream& os, const std::string& what, double flops, const LeafResult& r) {
  const double tf = flops / 1e9;
  auto pairs = [](bool paired) { return paired ? ", two at a time" : ""; };
  os << "  " << what << ": cuBLAS " << std::fixed << std::setprecision(3) << r.cublas_ms << " ms ("
     << std::setprecision(1) << tf / r.cublas_ms << " TFLOP/s" << pairs(r.cublas_paired) << "), ";
  if (r.best)
    os << "best algo " << r.best->algo << " tile " << r.best->tile << " stages " << r.best->stages << " swizzle "
       << r.best->swizzle << " custom " << r.best->custom << " cluster " << r.best->cluster << ": "
       << std::setprecision(3) << r.best_ms << " ms (" << std::setprecision(1) << tf / r.best_ms << " TFLOP/s"
       << pairs(r.best_paired) << ")\n";
  else
    os << "cuBLAS's own choice kept\n";
  os.unsetf(std::ios::fixed);
}

// The square leaf sizes 1024-8192 (`shapes` empty), or exactly the given m x n x k shapes: each
// shape gets the full search, since its best tiles differ from any square size's.
template <class T>
void tune_gemm(const cudaDeviceProp& prop, const std::string& file, const char* dtype,
               const std::vector<std::array<long long, 3>>& shapes, std::ostream& os) {
  LtHandle lt;
  CublasHandle cub;
  CudaStream stream;
  cublas_check(cublasSetStream(cub.get(), stream.get()), "cublasSetStream");
  const std::vector<GemmConfig> all = lt_candidates<T>(lt.get());
  os << dtype << " leaf products: " << all.size() << " cuBLASLt configurations to try\n";
  for (const auto& [m, n, k] : shapes) {
    const LeafResult r = time_leaf<T>(lt.get(), cub.get(), stream.get(), m, n, k, all, prop.multiProcessorCount);
    report_leaf(os, shape_name(m, n, k), 2.0 * double(m) * n * k, r);
    record_tuned_gemm_shape(file, prop.name, dtype, m, n, k, r.best, r.best_ms * 1000, r.cublas_ms * 1000,
                            r.best_paired, r.cublas_paired);
  }
  if (!shapes.empty()) return;
  std::vector<GemmConfig> carried;  // the best few of the last size, tried again at the next
  for (long long n : {1024LL, 2048LL, 4096LL, 8192LL}) {
    // The full search up to 4096; beyond, the best few of 4096 (a search there costs minutes).
    const LeafResult r = time_leaf<T>(lt.get(), cub.get(), stream.get(), n, n, n, n <= 4096 ? all : carried,
                                      prop.multiProcessorCount);
    carried = r.finalists;
    std::ostringstream what;
    what << "n " << std::setw(5) << n;
    report_leaf(os, what.str(), 2.0 * double(n) * n * n, r);
    record_tuned_gemm(file, prop.name, dtype, n, r.best, r.best_ms * 1000, r.cublas_ms * 1000, r.best_paired,
                      r.cublas_paired);
  }
}

// f(TypeTag<T>{}) for the real types of the dtype list, in its order. Complex types need no
// tuning of their own: their additions run the real kernels and their leaf products cuBLAS.
template <class F>
void for_each_real_dtype(F&& f) {
  for (Dtype d : kAllDtypes)
    dispatch(d, [&](auto tag) {
      if constexpr (!is_complex_v<typename decltype(tag)::type>) f(tag);
    });
}

}  // namespace

int tune_command(const TuneOptions& o, std::ostream& os) {
  std::vector<std::array<long long, 3>> shapes;
  for (const std::string& text : o.shapes) {
    const auto s = parse_shape_name(text);
    if (!s) throw UsageError("--shapes '" + text + "': give each leaf as MxNxK with sizes of 1 to 7 digits, e.g. 6144x3072x6144");
    shapes.push_back(*s);
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw UsageError("distmm tune needs a CUDA GPU and none is visible");
  cuda_check(cudaSetDevice(o.device % count), "cudaSetDevice");
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, o.device % count), "properties");
  const std::string file = o.file.empty() ? tuning_file_path_for_writing() : o.file;
  if (PathProblem p = output_problem(file, "tuning file")) p.raise();  // before the minutes of tuning
  os << "tuning " << (shapes.empty() ? "the addition kernels and leaf products" : "the given leaf shapes") << " on "
     << prop.name << " (" << prop.multiProcessorCount << " SMs, " << prop.maxThreadsPerMultiProcessor
     << " threads/SM)\n";
  auto chosen = [&](const char* dtype) { return o.dtype == "all" || o.dtype == dtype; };
  if (o.shapes.empty())
    for_each_real_dtype([&](auto tag) {
      using T = typename decltype(tag)::type;
      if (chosen(DtypeTraits<T>::name)) tune_dtype<T>(prop, file, DtypeTraits<T>::name, os);
    });
  for_each_real_dtype([&](auto tag) {
    using T = typename decltype(tag)::type;
    if (chosen(DtypeTraits<T>::name)) tune_gemm<T>(prop, file, DtypeTraits<T>::name, shapes, os);
  });
  os << "written to " << file << "\n";
  return 0;
}

}  // namespace distmm
