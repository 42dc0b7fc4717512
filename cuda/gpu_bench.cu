// `distmm gpu-bench`: cuBLAS against each GPU engine in the same process, on device-resident
// random uniform [-1, 1) matrices: median time over --repeat (after one warm-up), effective
// TFLOP/s (2 n^3 / t), speedup over cuBLAS, and the relative Frobenius error against a more
// precise product: f32 against cuBLAS DGEMM of the same inputs, f64 against a double-double
// product (about 106 bits) on 256 rows spread over C. Prints a Markdown table. Products given in
// the options (GpuBenchOptions::products: GEMMul8's, from the gemmul8_bench target) get rows
// beside the engines', timed and measured the same way on the same inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../src/core/json.hpp"
#include "../src/core/random.hpp"
#include "../src/core/timer.hpp"
#include "device_random.hpp"
#include "gpu_engine_base.cuh"
#include "gpu_engines.hpp"

namespace distmm {
namespace {

template <class T>
__global__ void diff_kernel(long long n, const T* c, const double* ref, double* acc) {
  // acc[0] += sum (c - ref)^2, acc[1] += sum ref^2 (block-level reduction, then atomics)
  __shared__ double s0[256], s1[256];
  double e = 0, r = 0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    double d = double(c[i]) - ref[i];
    e += d * d;
    r += ref[i] * ref[i];
  }
  s0[threadIdx.x] = e;
  s1[threadIdx.x] = r;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s0[threadIdx.x] += s0[threadIdx.x + w], s1[threadIdx.x] += s1[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, s0[0]), atomicAdd(acc + 1, s1[0]);
}

template <class T>
__global__ void to_double_kernel(long long n, const T* x, double* y) {
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = double(x[i]);
}

// The rows of the f64 reference: kSampleRows rows spread evenly over n.
constexpr int kSampleRows = 256;
long long sample_rows(long long n) { return std::min<long long>(n, kSampleRows); }
__host__ __device__ inline long long sample_row(long long s, long long rows, long long n) { return s * n / rows; }

// As[h * rows + s] = A(sample_row(s), h): the sampled rows, k-major, for coalesced reads.
__global__ void gather_rows(long long n, long long rows, const double* A, double* As) {
  const long long s = threadIdx.x, h = blockIdx.x;
  if (s < rows) As[h * rows + s] = A[sample_row(s, rows, n) + h * n];
}
// ref[s + j * rows] = sum_h As(h, s) B(h, j) in double-double (Dekker's TwoProduct by fma,
// Knuth's TwoSum), rounded once at the end: one block per column j, one thread per row.
__global__ void dd_rows(long long n, long long rows, const double* As, const double* B, double* ref) {
  const long long s = threadIdx.x, j = blockIdx.x;
  if (s >= rows) return;
  double hi = 0, lo = 0;
  for (long long h = 0; h < n; ++h) {
    const double a = As[h * rows + s], b = B[h + j * n];
    const double p = a * b, pe = fma(a, b, -p);
    const double t = hi + p, v = t - hi, te = (hi - (t - v)) + (p - v);
    hi = t, lo += te + pe;
  }
  ref[s + j * rows] = hi + lo;
}
// C's sampled rows, packed like ref.
template <class T>
__global__ void pick_rows(long long n, long long rows, const T* C, double* out) {
  const long long s = threadIdx.x, j = blockIdx.x;
  if (s < rows) out[s + j * rows] = double(C[sample_row(s, rows, n) + j * n]);
}

template <class T>
double rel_error(long long n2, const T* c, const double* ref, cudaStream_t s) {
  DeviceBuffer<double> acc(2);
  cuda_check(cudaMemsetAsync(acc.get(), 0, 2 * sizeof(double), s), "memset");
  if constexpr (std::is_same_v<T, double>) {
    // ref holds the double-double rows; n2 = n * n
    const long long n = std::llround(std::sqrt(double(n2))), rows = sample_rows(n);
    DeviceBuffer<double> picked(rows * n);
    pick_rows<T><<<unsigned(n), kSampleRows, 0, s>>>(n, rows, c, picked.get());
    diff_kernel<double><<<1024, 256, 0, s>>>(rows * n, picked.get(), ref, acc.get());
  } else {
    diff_kernel<T><<<1024, 256, 0, s>>>(n2, c, ref, acc.get());
  }
  double h[2];
  cuda_check(cudaMemcpyAsync(h, acc.get(), sizeof h, cudaMemcpyDeviceToHost, s), "D2H");
  cuda_check(cudaStreamSynchronize(s), "sync");
  return std::sqrt(h[0] / h[1]);
}

struct Row {
  std::string engine;
  int levels, streams;
  bool tuned;
  double ms, tflops, speedup, error;
  std::string detail;  // the engine's describe() after the runs (what ran)
  std::string config;  // a product's configuration ("7:fast"); an emulated engine's accuracy
  bool product = false;
};

template <class T>
void bench(const GpuBenchOptions& o, long long n, std::vector<Row>& rows, std::ostream& log) {
  const long long n2 = n * n;
  DeviceBuffer<T> A(n2), B(n2), C(n2);
  // The host generator's numbers, made on the device (device_random.hpp).
  fill_random_device<T>(A.get(), n, n, n, 0, 0, 42, Stream::A, Fill::uniform, nullptr);
  fill_random_device<T>(B.get(), n, n, n, 0, 0, 42, Stream::B, Fill::uniform, nullptr);
  cuda_check(cudaDeviceSynchronize(), "fill");
  EngineOptions eo;
  eo.device = o.device;
  auto cub = make_engine("cublas", eo);
  Engine* cubd = cub.get();
  auto stream_of = [](const Engine* e) { return static_cast<cudaStream_t>(e->device_queue()); };
  const cudaStream_t s = stream_of(cubd);

  // Reference: f32, cuBLAS DGEMM on the (rounded) inputs; f64, double-double sampled rows
  // (none with --no-error: the f32 reference needs 3 n^2 doubles, 103 GB at n = 65536).
  DeviceBuffer<double> ref(o.error ? (std::is_same_v<T, double> ? sample_rows(n) * n : n2) : 1);
  if (o.error) {
    if constexpr (std::is_same_v<T, double>) {
      const long long rows = sample_rows(n);
      DeviceBuffer<double> As(rows * n);
      gather_rows<<<unsigned(n), kSampleRows, 0, s>>>(n, rows, A.get(), As.get());
      dd_rows<<<unsigned(n), kSampleRows, 0, s>>>(n, rows, As.get(), B.get(), ref.get());
    } else {
      DeviceBuffer<double> Ad(n2), Bd(n2);
      to_double_kernel<T><<<1024, 256, 0, s>>>(n2, A.get(), Ad.get());
      to_double_kernel<T><<<1024, 256, 0, s>>>(n2, B.get(), Bd.get());
      cubd->gemm_device(Op::N, Op::N, n, n, n, 1.0, Ad.get(), n, Bd.get(), n, 0.0, ref.get(), n);
    }
    cuda_check(cudaStreamSynchronize(s), "sync");
  }

  // The median of o.repeat runs of `product` on stream `q`, after one warm-up.
  auto time_on = [&](cudaStream_t q, const auto& product) {
    CudaEvent t0, t1;
    std::vector<double> ms;
    for (int r = -1; r < o.repeat; ++r) {
      cuda_check(cudaEventRecord(t0.get(), q), "event");
      product();
      cuda_check(cudaEventRecord(t1.get(), q), "event");
      cuda_check(cudaEventSynchronize(t1.get()), "sync");
      float t = 0;
      cudaEventElapsedTime(&t, t0.get(), t1.get());
      if (r >= 0) ms.push_back(t);
    }
    return median(ms);
  };
  auto time = [&](Engine* e) {
    return time_on(stream_of(e), [&] {
      e->gemm_device(Op::N, Op::N, n, n, n, T(1), A.get(), n, B.get(), n, T(0), C.get(), n);
    });
  };
  const double flops = 2.0 * double(n) * n * n;
  const double base = time(cubd);
  auto error = [&](cudaStream_t st) { return o.error ? rel_error<T>(n2, C.get(), ref.get(), st) : std::nan(""); };
  rows.push_back({"cublas", 0, 1, false, base, flops / base / 1e9, 1.0, error(s), cub->describe()});
  log << "n " << n << " cublas " << base << " ms\n" << std::flush;
  std::vector<bool> tunings{true};
  if (o.untuned_too) tunings.push_back(false);
  for (const auto& name : o.engines)
    for (int L : o.levels)
      for (int st : o.streams)
        for (bool tuned : tunings) {
          const bool plain = !engine_info(name).recursive;
          if (plain && (L != o.levels.front() || st != o.streams.front() || !tuned)) continue;
          EngineOptions e2 = eo;
          e2.levels = L;
          e2.streams = st;
          e2.tuned_leaves = tuned;
          e2.moduli = o.moduli;
          e2.accuracy = o.accuracy;
          auto eng = make_engine(name, e2);
          double ms = time(eng.get());
          double err = error(stream_of(eng.get()));
          const std::string config = !engine_info(name).emulated ? ""
                                     : o.moduli > 0                ? "moduli " + std::to_string(o.moduli)
                                                                   : "accuracy " + o.accuracy;
          rows.push_back({name, plain ? 0 : L, plain ? 1 : st, !plain && tuned, ms, flops / ms / 1e9, base / ms, err,
                          eng->describe(), config});
          log << "n " << n << " " << name << " L" << L << " streams " << st << (tuned ? " tuned" : "")
              << " " << ms << " ms, error " << err << ": " << rows.back().detail << "\n" << std::flush;
        }
  for (const BenchProductMaker& make : o.products) {
    const BenchProduct p = make(std::is_same_v<T, double> ? "f64" : "f32", n);
    if (!p.run) {
      log << "n " << n << " " << p.name << " " << p.config << " skipped: " << p.detail << "\n" << std::flush;
      continue;
    }
    const cudaStream_t q = static_cast<cudaStream_t>(p.stream);
    cuda_check(cudaMemsetAsync(C.get(), 0, n2 * sizeof(T), q), "memset");  // no earlier row's C
    const double ms = time_on(q, [&] { p.run(A.get(), B.get(), C.get()); });
    const double err = error(q);
    rows.push_back({p.name, 0, 1, false, ms, flops / ms / 1e9, base / ms, err, p.detail, p.config, true});
    log << "n " << n << " " << p.name << " " << p.config << " " << ms << " ms, error " << err << ": " << p.detail
        << "\n" << std::flush;
  }
}

}  // namespace

int gpu_bench_command(const GpuBenchOptions& o, std::ostream& os) {
  if (PathProblem p = json_file_problem(o.json)) p.raise();  // before the measurements
  const std::optional<Dtype> dt = parse_dtype(o.dtype);
  if (!dt || !DtypeSet::real().contains(*dt))
    throw UsageError("gpu-bench --dtype must be f32 or f64, not '" + o.dtype + "'" +
                     (dt ? ": time complex products with distmm run --engine NAME --dtype " + o.dtype
                         : std::string()));
  for (const std::string& name : o.engines) {
    const EngineInfo& e = engine_info(name);  // UsageError naming the engines when unknown
    if (e.memory != Memory::device)
      throw UsageError("gpu-bench times GPU engines on device-resident data: '" + name +
                       "' is a host engine (use engine-bench for it)");
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    throw UsageError("distmm gpu-bench needs a CUDA GPU and none is visible");
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, o.device % count), "properties");
  os << "| n | dtype | engine | levels | streams | leaf kernels | median ms | TFLOP/s | speedup vs cuBLAS | rel. Frobenius error |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (long long n : o.sizes) {
    std::vector<Row> rows;
    dispatch(*dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!is_complex_v<T>) bench<T>(o, n, rows, std::cerr);
    });
    for (const Row& r : rows) {
      char line[256];
      const std::string shown = r.product ? r.engine + " " + r.config : r.engine;
      std::snprintf(line, sizeof line, "| %lld | %s | %s | %d | %d | %s | %.2f | %.2f | %.3fx | %.2e |\n", n,
                    o.dtype.c_str(), shown.c_str(), r.levels, r.streams,
                    r.engine == "gpu-tiled" || r.product ? "-" : r.tuned ? "tuned" : "cuBLAS",
                    r.ms, r.tflops, r.speedup, r.error);
      os << line << std::flush;
      if (!o.json.empty()) {
        nlohmann::json j{{"command", "gpu-bench"}, {"device", prop.name}, {"n", n},
                         {"dtype", o.dtype}, {"engine", r.engine}, {"levels", r.levels},
                         {"streams", r.streams}, {"tuned_leaves", r.tuned},
                         {"time_median", r.ms / 1e3}, {"tflops", r.tflops},
                         {"speedup", r.speedup}, {"rel_frobenius", r.error},
                         {"reference", *dt == Dtype::f64 ? "double-double, 256 sampled rows" : "cuBLAS DGEMM"},
                         {"engine_detail", r.detail}};
        if (!r.config.empty()) j["config"] = r.config;
        if (r.product) j["product"] = true;
        append_json_line(o.json, j);
      }
    }
  }
  return 0;
}

}  // namespace distmm
