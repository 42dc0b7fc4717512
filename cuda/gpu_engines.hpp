// The GPU engines (cuda/), seen from the rest of distmm without CUDA headers. Built when CUDA is;
// otherwise gpu_none.cpp provides the same functions, which then say that GPUs are not built.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "../node/engine.hpp"

namespace distmm {

// The registry entries of cublas, gpu-strassen, gpu-strassen-lowmem, gpu-winograd and gpu-tiled
// (none without CUDA).
std::vector<EngineInfo> gpu_engine_infos();

// `distmm tune`: seed 000's Algorithm 1 for the addition kernels (prune by occupancy, time the
// survivors) and the cuBLASLt configurations of the leaf products and of the emulation's INT8
// products, written to the tuning file that the engines read.
struct TuneOptions {
  std::string file;  // empty: tuning_file_path()
  int device = 0;
  std::vector<std::string> shapes;  // leaf shapes "MxNxK" to tune alone; empty: the square sizes
  std::string dtype = "all";        // f32 | f64 | i8 (the emulation's INT8 products) | all
};
int tune_command(const TuneOptions& o, std::ostream& os);
std::string tuning_file_path();
// Where tune writes without --file: the same, but HOME must be an existing directory (never
// created); else a UsageError saying what to set.
std::string tuning_file_path_for_writing();

// A product timed beside the engines on the same inputs, with the same error measure (the
// gemmul8_bench target adds GEMMul8's): `run` computes C = A B for n x n column-major device
// matrices of the bench's dtype on `stream` (a cudaStream_t that it owns). An empty `run` skips
// the row and `detail` says why (a workspace that does not fit, say).
struct BenchProduct {
  std::string name, config, detail;
  void* stream = nullptr;
  std::function<void(const void* A, const void* B, void* C)> run;
};
// Made for one dtype ("f32" | "f64") and n, after the engines' rows, released after its row.
using BenchProductMaker = std::function<BenchProduct(const std::string& dtype, long long n)>;

// `distmm gpu-bench`: cuBLAS against each GPU engine on device-resident data, one process.
struct GpuBenchOptions {
  std::vector<long long> sizes{4096, 8192, 16384};
  std::string dtype = "f32";
  std::vector<int> levels{1, 2, 3};
  std::vector<int> streams{2};  // streams for independent leaf products, one row set per value
  bool untuned_too = false;     // also rows with cuBLAS's own leaf kernels (no tuning file)
  int moduli = 0;               // INT8-emulated engines: moduli count (0: the accuracy rule)
  std::string accuracy = "native";  // INT8-emulated engines: the accuracy target
  bool error = true;            // measure each row's error (--no-error: timings only)
  std::vector<std::string> engines{"gpu-strassen", "gpu-strassen-lowmem", "gpu-winograd"};
  int repeat = 3;
  int device = 0;
  std::string json;
  std::vector<BenchProductMaker> products;  // rows beside the engines' (none from the CLI)
};
int gpu_bench_command(const GpuBenchOptions& o, std::ostream& os);

// `distmm xt-bench`: cuBLASXt on host-resident matrices over the node's GPUs (the multi-GPU
// benchmark's baseline).
struct XtBenchOptions {
  std::vector<long long> sizes{16384};
  std::string dtype = "f32";
  int gpus = 0;       // 0: every visible GPU
  int block_dim = 0;  // cublasXtSetBlockDim (0: cuBLASXt's default)
  int repeat = 3;
  std::uint64_t seed = 42;
  std::string json;
};
int xt_bench_command(const XtBenchOptions& o, std::ostream& os);

}  // namespace distmm
