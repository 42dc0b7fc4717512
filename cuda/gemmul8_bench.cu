// gemmul8_bench: `distmm gpu-bench` with GEMMul8's rows beside distmm's (issue 43, item 5).
// Built only when CMake is given a GEMMul8 build (-DDISTMM_GEMMUL8_DIR=.../GEMMul8/GEMMul8, the
// folder holding include/gemmul8.hpp and lib/libgemmul8.a); GEMMul8 itself is not part of distmm.
// One process: cuBLAS, the distmm engines and GEMMul8's INT8 backend (gemmul8::gemm, Ozaki
// scheme II) on the same device-resident inputs, the same timing (median of --repeat after a
// warm-up) and the same error (gpu_bench.cu: f32 against cuBLAS DGEMM of the inputs, f64 against
// a double-double product of 256 sampled rows). Arguments are gpu-bench's, plus
//   --gemmul8 MODULI:MODE ...   GEMMul8 configurations, MODE fast or accurate (e.g. 7:fast 14:accurate)
// A configuration whose workspace does not fit in the GPU's free memory is skipped (logged).
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "../src/core/types.hpp"
#include "cuda_util.hpp"
#include "gemmul8.hpp"
#include "gpu_engines.hpp"

namespace {

struct Gemmul8Config {
  unsigned moduli;
  bool fast;
};

Gemmul8Config parse_config(const std::string& text) {
  const auto colon = text.find(':');
  const std::string mode = colon == std::string::npos ? "" : text.substr(colon + 1);
  char* end = nullptr;
  const unsigned long m = std::strtoul(text.substr(0, colon).c_str(), &end, 10);
  if (colon == 0 || colon == std::string::npos || *end != '\0' || (mode != "fast" && mode != "accurate") || m < 2 ||
      m > 20)
    throw distmm::UsageError("--gemmul8 takes MODULI:MODE (2 to 13 moduli for f32, to 20 for f64; MODE fast or "
                             "accurate), not '" + text + "'");
  return {unsigned(m), mode == "fast"};
}

// The GEMMul8 state of one row: a cuBLAS handle on its own stream and the workspace.
struct Gemmul8Run {
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  void* work = nullptr;
  ~Gemmul8Run() {
    if (work) cudaFree(work);
    if (handle) cublasDestroy(handle);
    if (stream) cudaStreamDestroy(stream);
  }
};

distmm::BenchProduct gemmul8_product(Gemmul8Config c, const std::string& dtype, long long n) {
  distmm::BenchProduct p;
  p.name = "gemmul8";
  p.config = std::to_string(c.moduli) + (c.fast ? ":fast" : ":accurate");
  if (dtype == "f32" && c.moduli > 13) {
    p.detail = "GEMMul8 takes at most 13 moduli for f32";
    return p;
  }
  const size_t N = size_t(n);
  const size_t bytes = gemmul8::workSize<false, gemmul8::Backend::INT8>(N, N, N, c.moduli);
  size_t free_bytes = 0, total = 0;
  distmm::cuda_check(cudaMemGetInfo(&free_bytes, &total), "memory info");
  const size_t margin = size_t(1) << 30;  // cuBLAS's own workspace and the error's buffers
  char why[160];
  std::snprintf(why, sizeof why, "workspace %.1f GB, %.1f GB free", bytes / 1e9, free_bytes / 1e9);
  if (bytes + margin > free_bytes) {
    p.detail = why;
    return p;
  }
  auto g = std::make_shared<Gemmul8Run>();
  distmm::cuda_check(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "stream");
  if (cublasCreate(&g->handle) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g->handle, g->stream) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasCreate failed");
  if (cudaMalloc(&g->work, bytes) != cudaSuccess) {  // a skipped row, not the size's lost rows
    cudaGetLastError();
    g->work = nullptr;
    p.detail = std::string("cudaMalloc failed: ") + why;
    return p;
  }
  char detail[160];
  std::snprintf(detail, sizeof detail, "GEMMul8 INT8, %u moduli, %s mode, workspace %.1f GB", c.moduli,
                c.fast ? "fast" : "accurate", bytes / 1e9);
  p.detail = detail;
  p.stream = g->stream;
  const bool f64 = dtype == "f64";
  p.run = [g, c, N, f64](const void* A, const void* B, void* C) {
    if (f64) {
      const double one = 1, zero = 0;
      gemmul8::gemm<double>(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, static_cast<const double*>(A), N,
                            static_cast<const double*>(B), N, &zero, static_cast<double*>(C), N, c.moduli, c.fast,
                            g->work);
    } else {
      const float one = 1, zero = 0;
      gemmul8::gemm<float>(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, static_cast<const float*>(A), N,
                           static_cast<const float*>(B), N, &zero, static_cast<float*>(C), N, c.moduli, c.fast,
                           g->work);
    }
    distmm::cuda_check(cudaGetLastError(), "GEMMul8 gemm");
  };
  return p;
}

const char* kUsage =
    "gemmul8_bench [--dtype f32|f64] [--sizes N ...] [--engines NAME ...] [--levels L ...] [--streams S ...]\n"
    "              [--accuracy native|max|1e-10 | --moduli M] [--gemmul8 MODULI:MODE ...] [--repeat R]\n"
    "              [--device D] [--json FILE] [--no-error]\n"
    "distmm gpu-bench with GEMMul8 rows (MODE fast or accurate) on the same inputs, in one process.\n";

std::vector<std::string> values(int& i, int argc, char** argv) {
  std::vector<std::string> v;
  while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) v.push_back(argv[++i]);
  if (v.empty()) throw distmm::UsageError(std::string(argv[i]) + " needs a value");
  return v;
}

long long number(const std::string& s, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0) throw distmm::UsageError(std::string(what) + ": not a count: '" + s + "'");
  return v;
}

distmm::GpuBenchOptions parse(int argc, char** argv) {
  distmm::GpuBenchOptions o;
  o.engines = {"gpu-ozaki"};
  o.levels = {1};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (a == "--no-error") {
      o.error = false;
      continue;
    }
    const std::vector<std::string> v = values(i, argc, argv);
    auto one = [&] {
      if (v.size() != 1) throw distmm::UsageError(a + " takes one value");
      return v[0];
    };
    if (a == "--dtype") o.dtype = one();
    else if (a == "--accuracy") o.accuracy = one();
    else if (a == "--moduli") o.moduli = int(number(one(), "--moduli"));
    else if (a == "--repeat") o.repeat = int(number(one(), "--repeat"));
    else if (a == "--device") o.device = int(number(one(), "--device"));
    else if (a == "--json") o.json = one();
    else if (a == "--engines") o.engines = v;
    else if (a == "--sizes" || a == "--levels" || a == "--streams") {
      std::vector<long long> x;
      for (const std::string& s : v) x.push_back(number(s, a.c_str()));
      if (a == "--sizes") o.sizes = x;
      else if (a == "--levels") o.levels.assign(x.begin(), x.end());
      else o.streams.assign(x.begin(), x.end());
    } else if (a == "--gemmul8") {
      for (const std::string& s : v)
        o.products.push_back([c = parse_config(s)](const std::string& dtype, long long n) {
          return gemmul8_product(c, dtype, n);
        });
    } else {
      throw distmm::UsageError("unknown argument '" + a + "'\n" + kUsage);
    }
  }
  if (o.repeat < 1) throw distmm::UsageError("--repeat must be at least 1");
  for (long long n : o.sizes)
    if (n < 1) throw distmm::UsageError("--sizes must be positive");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return distmm::gpu_bench_command(parse(argc, argv), std::cout);
  } catch (const distmm::UsageError& e) {
    std::cerr << "gemmul8_bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gemmul8_bench: " << e.what() << "\n";
    return 1;
  }
}
