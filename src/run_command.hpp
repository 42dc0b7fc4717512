// `distmm run`: generate (or read) the operands in the chosen algorithm's layout, multiply,
// time, count, verify and report. Called on every rank.
#pragma once
#include <cstdint>
#include <string>

#include "../mpi/algorithm.hpp"
#include "../node/engine.hpp"

namespace distmm {

struct RunOptions {
  index_t m = 0, n = 0, k = 0;
  std::string dtype;  // f32 | f64; empty: the input files' dtype, else f64
  std::string algo = "auto";
  std::string engine = "blas";
  std::uint64_t seed = 42;
  int repeat = 1;
  int warmup = 0;
  std::string verify = "freivalds";
  int trials = 3;
  std::string json;
  int threads = 0;  // 0 = the node's hardware threads over its ranks
  std::string mem_limit;
  std::string levels = "auto";
  double alpha = 1, beta = 0;
  std::string fill = "uniform";
  bool quiet = false;
  // Users' matrices: C = alpha op(A) op(B) + beta C0, NumPy .npy files, written to `out`.
  std::string a_path, b_path, c_path, out_path;
  bool transa = false, transb = false;
  AlgoOptions algo_opts;
  EngineOptions engine_opts;
};

// Returns the process exit code (0, or 1 when verification failed). Throws UsageError on bad
// input, consistently on every rank.
int run_command(RunOptions opts);

// Threads per rank when the user gave none: the node's hardware threads over the node's ranks.
int default_threads();

}  // namespace distmm
