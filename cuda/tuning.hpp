// The tuning file: per device and dtype, the best launch shape of the addition kernels and the
// best cuBLASLt configuration of the leaf products (and, as dtype "i8", of the INT8 emulation's
// products), by size, as found by `distmm tune` (tune.cu). Plain C++ (tuning_file.cpp), no CUDA
// types.
#pragma once
#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>

namespace distmm {

// The share of the SMs that an m x n output in tiles of tr x tc keeps busy: its T tiles run in
// ceil(T / sms) waves of one tile per SM. This is why a configuration tuned at one size does
// not carry to another: 256 x 128 tiles fill 97% of an H100's 132 SMs at 2048^2 (128 tiles, one
// wave), 4096^2 and 6144^2, but 73% at 3072^2 (288 tiles in 3 waves), where 2048's
// configuration ran slower than cuBLAS's own choice
// (docs/performance.md, "Measurements behind the code": wave_fill).
inline double wave_fill(long long m, long long n, int tr, int tc, int sms) {
  if (tr <= 0 || tc <= 0 || sms <= 0 || m <= 0 || n <= 0) return 1.0;
  const long long tiles = ((m + tr - 1) / tr) * ((n + tc - 1) / tc);
  const long long waves = (tiles + sms - 1) / sms;
  return double(tiles) / double(waves * sms);
}

// Whether the GPU Strassen engines run a group of independent m x n leaf products at once, one
// stream each (and `distmm tune` times their configurations so, two at a time): where one product
// alone leaves SMs idle. Below 2048^2 outputs a product is too short for its ramp and tail (two
// streams gained with 1024^2 leaves, nothing with 2048^2 ones); from there on, where its tiles
// (tr x tc, when known) leave over a tenth of its waves idle: the 6144 x 3072 x 6144 leaves of
// two GPUs' f32 49152 halves fill 87% of 5 waves in 256 x 128 tiles, and two at a time they fill
// each other's last wave (docs/performance.md, "Measurements behind the code":
// kConcurrentLeafFill).
constexpr double kConcurrentLeafFill = 0.9;
inline bool leaves_run_concurrently(long long m, long long n, int tr, int tc, int sms) {
  if (m * n < 2048LL * 2048) return true;
  return tr > 0 && tc > 0 && sms > 0 && wave_fill(m, n, tr, tc, sms) < kConcurrentLeafFill;
}

// A tuned configuration runs a product of another size than its own only where its tiles
// (tr x tc) still fill the waves of the m x n output this well, or as well as at its own size
// (`size`, square; 0 if not known); elsewhere cuBLAS's heuristic, which sees the shape, chooses.
constexpr double kTunedMinFill = 0.85;
inline bool tuned_tiles_fill(long long size, int tr, int tc, long long m, long long n, int sms) {
  const double own = size > 0 ? wave_fill(size, size, tr, tc, sms) : 1.0;
  return wave_fill(m, n, tr, tc, sms) >= std::min(kTunedMinFill, own);
}

// The deepest level from L down to 1 whose leaves are not `misfit(level)`; L itself where no
// level fits (the levels of gpu-winograd's automatic choice with tuned leaf kernels).
template <class Misfit>
int deepest_fitting_level(int L, Misfit misfit) {
  int l = L;
  while (l > 1 && misfit(l)) --l;
  return misfit(l) ? L : l;
}

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
  long long size = 0;  // the size it was tuned at (tuned_gemm), 0 if not known
};
// The configuration tuned for this device and dtype at the largest tuned size <= n (the smallest
// dimension of the product); none when the file has none or cuBLAS's own choice was the best.
// Dtypes: "f32" and "f64" (the leaf products), "i8" (the INT8 products of the emulation).
// From the tuning file the engines read (once per process), or from `file` where given.
std::optional<GemmConfig> tuned_gemm(const std::string& device, const std::string& dtype, long long n,
                                     const std::string& file = "");
// A leaf shape tuned on its own (`distmm tune --shapes`). The leaves of a rectangular local
// product fill the waves unlike any square size: two GPUs' SUMMA halves of f32 49152 have
// 6144 x 3072 x 6144 leaves at 3 levels, and ran well over half of the square product's time
// (docs/performance.md, "Measurements behind the code": ShapeTuning).
struct ShapeTuning {
  bool tuned = false;                // the file has an entry for exactly this m x n x k
  std::optional<GemmConfig> config;  // its configuration; none where cuBLAS's own choice won
};
// From the tuning file the engines read (once per process), or from `file` where given.
ShapeTuning tuned_gemm_shape(const std::string& device, const std::string& dtype, long long m, long long n,
                             long long k, const std::string& file = "");
// The configuration an m x n x k leaf runs, from the entry tuned at exactly its shape (even none,
// where cuBLAS's own choice won there) or else the one tuned at its size, where its tiles fill
// the waves (`fills`). `misfit`: a size-tuned configuration exists that this leaf does not fill
// (gpu-winograd's automatic levels avoid such leaves).
struct LeafChoice {
  std::optional<GemmConfig> config;  // none: cuBLAS's own choice
  bool misfit = false;
};
template <class Fills>
LeafChoice choose_leaf_config(const ShapeTuning& shape, const std::optional<GemmConfig>& sized, Fills fills) {
  if (shape.tuned) return {shape.config, false};
  if (sized && !fills(*sized)) return {std::nullopt, true};
  return {sized, false};
}
// The configuration that an m x n x k product of `dtype` runs on this device, from the tuning
// file's entries by choose_leaf_config: its exact shape's, else its size's (the smallest
// dimension) where the tiles (`tile_shape(c.tile)`: rows x columns of C) fill the waves of its
// m x n output on `sms` SMs (tuned_tiles_fill). The GPU Strassen engines' leaves (f32, f64) and
// the INT8 products of the emulation ("i8") choose so.
template <class TileShape>
LeafChoice tuned_config(const std::string& device, const std::string& dtype, long long m, long long n, long long k,
                        int sms, TileShape tile_shape, const std::string& file = "") {
  return choose_leaf_config(tuned_gemm_shape(device, dtype, m, n, k, file),
                            tuned_gemm(device, dtype, std::min({m, n, k}), file), [&](const GemmConfig& c) {
                              const std::pair<int, int> t = tile_shape(c.tile);
                              return tuned_tiles_fill(c.size, t.first, t.second, m, n, sms);
                            });
}
// "6144x3072x6144": the shape's name in the file and on the command line, and back (none
// unless three sizes of 1 to 7 digits, parse_counts).
std::string shape_name(long long m, long long n, long long k);
std::optional<std::array<long long, 3>> parse_shape_name(const std::string& text);
// Records the best configuration for size n (none: cuBLAS's heuristic choice won) with the
// times of the best and of cuBLAS's choice, per product, and whether each was timed two at a
// time (leaves_run_concurrently): "paired", "cublas_paired".
void record_tuned_gemm(const std::string& path, const std::string& device, const std::string& dtype,
                       long long n, std::optional<GemmConfig> best, double micros, double cublas_micros,
                       bool paired = false, bool cublas_paired = false);
// The same for one m x n x k leaf shape.
void record_tuned_gemm_shape(const std::string& path, const std::string& device, const std::string& dtype,
                             long long m, long long n, long long k, std::optional<GemmConfig> best,
                             double micros, double cublas_micros, bool paired = false,
                             bool cublas_paired = false);

}  // namespace distmm
