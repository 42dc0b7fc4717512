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
// And on the INT8 products of the emulation ("i8": int8 A^T B into int32 sums, the engine's TN
// layout and 32 MiB workspace), against cuBLASLt's heuristic's first choice; the winner joins
// the heuristic candidates that the emulation times per shape (int8_emulation.cu).
#include <algorithm>
#include <array>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <type_traits>
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
    if constexpr (std::is_integral_v<T>) x[i] = static_cast<T>(h >> 56);  // a uniform byte, as residues are
    else x[i] = T(2) * T(h >> 11) / T(1ull << 53) - T(1);
  }
}
// Uniform [-1, 1) values on the device (uniform bytes for int8).
template <class T>
void fill_uniform(T* x, long long n, cudaStream_t s) {
  uniform_kernel<T><<<1024, 256, 0, s>>>(n, x);
  cuda_check(cudaGetLastError(), "fill kernel");
}


// Every configuration cuBLASLt offers for products of these types (split-K off).
std::vector<GemmConfig> lt_candidates(cublasLtHandle_t h, const LtTypes& t) {
  int ids[128], nid = 0;
  cublas_check(cublasLtMatmulAlgoGetIds(h, t.compute, t.scale, t.ab, t.ab, t.cd, t.cd, 128, ids, &nid),
               "cublasLtMatmulAlgoGetIds");
  std::vector<GemmConfig> out;
  for (int q = 0; q < nid; ++q) {
    cublasLtMatmulAlgo_t algo;
    if (!lt_algo_init(h, t, ids[q], algo)) continue;
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

// The fastest of `pool` for one product shape, against the library's own choice (cuBLAS's for
// the leaves, cuBLASLt's heuristic's first for the INT8 products).
struct LeafResult {
  std::optional<GemmConfig> best;  // none: the library's choice was as fast (within 1%)
  double best_ms = 0, cublas_ms = 0;
  bool best_paired = false, cublas_paired = false;  // timed two at a time
  std::vector<GemmConfig> finalists;  // the best few of the first round, fastest first
};

// One kind of product to race, on two operand sets (products 0 and 1 of a pair):
//   plan(c): the LtPlan of configuration c (ok: cuBLASLt runs it);
//   lt_run(plan, i) and reference(i): product i on stream i (0: `stream`, 1: `side`);
//   paired_for(c), reference_paired: whether each is timed two at a time, as the engine runs it;
//   reps: calls per sample.
// Each configuration of `pool` is timed once (3 samples); the best five and the reference again
// under sustained load; a configuration wins only where it beats the reference by over 1%.
template <class Plan, class LtRun, class Reference, class PairedFor>
LeafResult race(cudaStream_t stream, cudaStream_t side, int reps, const std::vector<GemmConfig>& pool, Plan plan,
                LtRun lt_run, Reference reference, bool reference_paired, PairedFor paired_for) {
  CudaEvent forked, joined;
  // product(i) runs one product on stream i; a pair runs products 0 and 1 at once, the second
  // forked from and joined to `stream`, as the engine's StreamSet does.
  auto timed_call = [&](bool paired, auto product) {
    return [&, paired, product] {
      if (!paired) return product(0);
      cuda_check(cudaEventRecord(forked.get(), stream), "event");
      cuda_check(cudaStreamWaitEvent(side, forked.get(), 0), "wait");
      product(0), product(1);
      cuda_check(cudaEventRecord(joined.get(), side), "event");
      cuda_check(cudaStreamWaitEvent(stream, joined.get(), 0), "wait");
    };
  };
  auto lt_product = [&](const LtPlan& p) {
    return [&, pp = &p](int i) { lt_run(*pp, i); };
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
    LtPlan p = plan(c);
    if (p.ok) timed.push_back({c, ms_per_product(3, paired_for(c), lt_product(p))});
  }
  std::sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
  if (timed.size() > 5) timed.resize(5);
  LeafResult r;
  for (auto& t : timed) r.finalists.push_back(t.c);
  // The finalists and the reference, timed again under sustained load (each after about 0.2 s
  // of the same calls: a loaded GPU runs at a lower clock, as it does inside a long product). A
  // paired call runs two products.
  auto sustained_ms = [&](bool paired, auto product, double estimate_ms) {
    const double call_ms = estimate_ms * (paired ? 2 : 1);
    const int warm = static_cast<int>(std::clamp(200.0 / call_ms, 1.0, 2000.0));
    auto call = timed_call(paired, product);
    for (int i = 0; i < warm; ++i) call();
    return ms_per_product(7, paired, product);
  };
  r.cublas_paired = reference_paired;
  r.cublas_ms = sustained_ms(r.cublas_paired, reference, timed.empty() ? 1.0 : timed[0].ms);
  r.best_ms = r.cublas_ms, r.best_paired = r.cublas_paired;
  for (auto& t : timed) {
    LtPlan p = plan(t.c);
    const double ms = sustained_ms(paired_for(t.c), lt_product(p), t.ms);
    if (ms < 0.99 * r.best_ms) r.best = t.c, r.best_ms = ms, r.best_paired = paired_for(t.c);  // 1%: not noise
  }
  return r;
}

// Calls per sample: as many as 4096^2 outputs hold of this one's (16 at 1024^2, 1 from 4096^2),
// at most 256 (tiny shapes).
int reps_for(long long m, long long n) {
  return static_cast<int>(std::clamp(4096.0 * 4096.0 / (double(m) * n), 1.0, 256.0));
}

// The fastest of `pool` for an m x n x k leaf (C += A B, N N), against cuBLAS's own choice,
// each timed as the GPU Strassen engines run such leaves with their default two streams: two at
// a time, on distinct operands, where its tiles leave SMs idle (leaves_run_concurrently), and per
// product.
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
  // The second product of a pair: its own stream and cuBLAS handle, as the engine's StreamSet has.
  CudaStream side;
  CublasHandle side_cub;
  cublas_check(cublasSetStream(side_cub.get(), side.get()), "cublasSetStream");
  const cudaStream_t on[2] = {stream, side.get()};
  const T one = 1;
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
  auto lt_run = [&](const LtPlan& p, int i) {
    cublasLtMatmul(lt, p.desc.get(), &one, A[i], p.a.get(), B[i], p.b.get(), &one, C[i], p.c.get(), C[i], p.c.get(),
                   &p.algo, nullptr, 0, on[i]);
  };
  auto plan = [&](const GemmConfig& c) { return lt_plan<T>(lt, c, Op::N, Op::N, m, n, k, m, k, m); };
  auto paired_for = [&](const GemmConfig& c) {
    const auto [tr, tc] = lt_tile_shape(c.tile);
    return leaves_run_concurrently(m, n, tr, tc, sms);
  };
  // cuBLAS's tiles are not known here: its leaves pair by size alone, as in the engine.
  return race(stream, side.get(), reps_for(m, n), pool, plan, lt_run, cublas_product,
              leaves_run_concurrently(m, n, 0, 0, sms), paired_for);
}

// The fastest of `pool` for the INT8 emulation's product C (OpA x OpB int32) = A^T B (A, B:
// Kp x OpA, Kp x OpB int8, lt_int8_plan), against cuBLASLt's heuristic's first choice, both
// with the emulation's workspace (kInt8LtWorkspace). One at a time: the emulation runs its
// products on one stream (the folds of the residues overlap them on another).
LeafResult time_int8(cublasLtHandle_t lt, cudaStream_t stream, long long OpA, long long OpB, long long Kp,
                     const std::vector<GemmConfig>& pool) {
  // B and C start 256-byte aligned, as cuBLASLt's kernels want, on any shape.
  auto aligned = [](long long bytes) { return (bytes + 255) / 256 * 256; };
  const long long a = aligned(Kp * OpA), b = aligned(Kp * OpB);
  DeviceBuffer<unsigned char> buf(static_cast<std::size_t>(a + b + OpA * OpB * static_cast<long long>(sizeof(int))));
  DeviceBuffer<unsigned char> work(kInt8LtWorkspace);
  int8_t* const A = reinterpret_cast<int8_t*>(buf.get());
  int8_t* const B = A + a;
  int* const C = reinterpret_cast<int*>(buf.get() + a + b);
  fill_uniform(A, a + b, stream);  // zeros would draw less power than real data
  const int one = 1, zero = 0;
  LtPlan heuristic = lt_int8_plan(OpA, OpB, Kp);
  const auto first = lt_heuristic(lt, heuristic, 1, kInt8LtWorkspace);
  if (first.empty()) throw std::runtime_error("cuBLASLt offers no INT8 GEMM for " + shape_name(OpA, OpB, Kp));
  heuristic.algo = first[0].algo, heuristic.workspace = first[0].workspaceSize, heuristic.ok = true;
  auto lt_run = [&](const LtPlan& p, int) {
    cublasLtMatmul(lt, p.desc.get(), &one, A, p.a.get(), B, p.b.get(), &zero, C, p.c.get(), C, p.c.get(), &p.algo,
                   work.get(), p.workspace, stream);
  };
  auto plan = [&](const GemmConfig& c) {
    LtPlan p = lt_int8_plan(OpA, OpB, Kp);
    lt_apply(lt, kLtInt8, c, kInt8LtWorkspace, p);
    return p;
  };
  // never paired (the emulation runs its INT8 products one at a time): no side stream
  return race(stream, stream, reps_for(OpA, OpB), pool, plan, lt_run,
              [&](int i) { lt_run(heuristic, i); }, false, [](const GemmConfig&) { return false; });
}

// `unit`: "TFLOP/s", or "TOP/s" for integer products.
void report_leaf(std::ostream& os, const std::string& what, const char* reference, const char* unit, double flops,
                 const LeafResult& r) {
  const double tf = flops / 1e9;
  auto pairs = [](bool paired) { return paired ? ", two at a time" : ""; };
  os << "  " << what << ": " << reference << " " << std::fixed << std::setprecision(3) << r.cublas_ms << " ms ("
     << std::setprecision(1) << tf / r.cublas_ms << " " << unit << pairs(r.cublas_paired) << "), ";
  if (r.best)
    os << "best algo " << r.best->algo << " tile " << r.best->tile << " stages " << r.best->stages << " swizzle "
       << r.best->swizzle << " custom " << r.best->custom << " cluster " << r.best->cluster << ": "
       << std::setprecision(3) << r.best_ms << " ms (" << std::setprecision(1) << tf / r.best_ms << " " << unit
       << pairs(r.best_paired) << ")\n";
  else
    os << reference << " kept\n";
  os.unsetf(std::ios::fixed);
}

// How one dtype's products are searched: its configurations, the square sizes (the full search up
// to `full_up_to`; beyond, the best few of the size before, as a search there costs minutes),
// and time(m, n, k, pool) racing `pool` against the library's choice (`reference`).
template <class Time>
struct ProductSearch {
  const char* dtype;
  const char* reference;
  const char* unit;
  std::vector<GemmConfig> all;
  std::vector<long long> sizes;
  long long full_up_to;
  Time time;
};

// The square sizes (`shapes` empty), or exactly the given m x n x k shapes: each shape gets the
// full search, since its best tiles differ from any square size's.
template <class Time>
void tune_gemm(const cudaDeviceProp& prop, const std::string& file, const ProductSearch<Time>& q,
               const std::vector<std::array<long long, 3>>& shapes, std::ostream& os) {
  os << q.dtype << " products: " << q.all.size() << " cuBLASLt configurations to try\n";
  auto record = [&](const std::string& what, long long m, long long n, long long k, const LeafResult& r,
                    auto write) {
    report_leaf(os, what, q.reference, q.unit, 2.0 * double(m) * n * k, r);
    write(r.best, r.best_ms * 1000, r.cublas_ms * 1000, r.best_paired, r.cublas_paired);
  };
  for (const std::array<long long, 3>& s : shapes) {
    const long long m = s[0], n = s[1], k = s[2];  // (C++17: lambdas cannot capture bindings)
    record(shape_name(m, n, k), m, n, k, q.time(m, n, k, q.all), [&](auto... a) {
      record_tuned_gemm_shape(file, prop.name, q.dtype, m, n, k, a...);
    });
  }
  if (!shapes.empty()) return;
  std::vector<GemmConfig> carried;  // the best few of the last size, tried again at the next
  for (long long n : q.sizes) {
    const LeafResult r = q.time(n, n, n, n <= q.full_up_to ? q.all : carried);
    carried = r.finalists;
    std::ostringstream what;
    what << "n " << std::setw(5) << n;
    record(what.str(), n, n, n, r, [&](auto... a) { record_tuned_gemm(file, prop.name, q.dtype, n, a...); });
  }
}

template <class T>
void tune_leaves(const cudaDeviceProp& prop, const std::string& file,
                 const std::vector<std::array<long long, 3>>& shapes, std::ostream& os) {
  LtHandle lt;
  CublasHandle cub;
  CudaStream stream;
  cublas_check(cublasSetStream(cub.get(), stream.get()), "cublasSetStream");
  auto time = [&](long long m, long long n, long long k, const std::vector<GemmConfig>& pool) {
    return time_leaf<T>(lt.get(), cub.get(), stream.get(), m, n, k, pool, prop.multiProcessorCount);
  };
  const ProductSearch<decltype(time)> q{DtypeTraits<T>::name, "cuBLAS", "TFLOP/s",
                                        lt_candidates(lt.get(), lt_types<T>()), {1024, 2048, 4096, 8192},
                                        4096, time};
  tune_gemm(prop, file, q, shapes, os);
}

// The INT8 emulation's products ("i8"): square OpA = OpB = Kp = n, or the given OpA x OpB x Kp.
void tune_int8(const cudaDeviceProp& prop, const std::string& file,
               const std::vector<std::array<long long, 3>>& given, std::ostream& os) {
  // The emulation pads OpA, OpB and Kp to multiples of 16: no other shape is ever looked up.
  std::vector<std::array<long long, 3>> shapes;
  for (const auto& s : given)
    if (s[0] % 16 == 0 && s[1] % 16 == 0 && s[2] % 16 == 0) shapes.push_back(s);
    else
      os << "i8: " << shape_name(s[0], s[1], s[2]) << " skipped (the emulation's INT8 products are multiples of 16)\n";
  if (!given.empty() && shapes.empty()) return;
  LtHandle lt;
  CudaStream stream;
  auto time = [&](long long m, long long n, long long k, const std::vector<GemmConfig>& pool) {
    return time_int8(lt.get(), stream.get(), m, n, k, pool);
  };
  const ProductSearch<decltype(time)> q{"i8", "cuBLASLt's heuristic", "TOP/s", lt_candidates(lt.get(), kLtInt8),
                                        {4096, 8192, 16384}, 8192, time};
  tune_gemm(prop, file, q, shapes, os);
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
  const char* what = !shapes.empty() ? "the given product shapes"
                     : o.dtype == "i8" ? "the emulation's INT8 products"
                                       : "the addition kernels and products";
  os << "tuning " << what << " on "
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
    if (chosen(DtypeTraits<T>::name)) tune_leaves<T>(prop, file, shapes, os);
  });
  if (chosen("i8")) tune_int8(prop, file, shapes, os);
  os << "written to " << file << "\n";
  return 0;
}

}  // namespace distmm
