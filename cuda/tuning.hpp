// The tuning file: per device and dtype, the best launch shape of the addition kernels and the
// best cuBLASLt configuration of the leaf products, by size, as found by `distmm tune`
// (tune.cu). Plain C++ (tuning_file.cpp), no CUDA types.
#pragma once
#include <optional>
#include <string>

namespace distmm {

struct LaunchShape {
  int block_x = 256, block_y = 1;  // threads over rows x over columns
};

// The shape tuned for this device and dtype at the largest tuned size <= rows, or the default.
LaunchShape tuned_shape(const std::string& device, const std::string& dtype, long long rows);
// Records one tuned entry (read-modify-write of the JSON file, written atomically).
void record_tuned_shape(const std::string& path, const std::string& device,
                        const std::string& dtype, long long rows, LaunchShape s, double micros);

// A cuBLASLt matmul configuration (the CUBLASLT_ALGO_CONFIG_* attributes), split-K off.
struct GemmConfig {
  int algo = 0, tile = 0, stages = 0, swizzle = 0, custom = 0, cluster = 0;
};
// The configuration tuned for this device and dtype at the largest tuned size <= n (the smallest
// dimension of the product); none when the file has none or cuBLAS's own choice was the best.
std::optional<GemmConfig> tuned_gemm(const std::string& device, const std::string& dtype, long long n);
// Records the best configuration for size n (none: cuBLAS's heuristic choice won) with the
// times of the best and of cuBLAS's choice.
void record_tuned_gemm(const std::string& path, const std::string& device, const std::string& dtype,
                       long long n, std::optional<GemmConfig> best, double micros, double cublas_micros);

}  // namespace distmm
