// The distmm command line: `distmm run`, `distmm info` (and later commands). Runs alone as one
// process (single-node development mode) or under mpirun/srun; every rank parses the same
// arguments, so bad input is detected on all ranks alike and all leave with exit code 2.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "../mpi/algorithm.hpp"
#include "../cuda/gpu_engines.hpp"
#include "../node/engine.hpp"
#include "commands.hpp"
#include "run_command.hpp"
#include "types.hpp"

namespace {

constexpr distmm::index_t kUnset = INT64_MIN;  // a size the user did not give

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "|") + x;
  return s;
}

void add_run_options(CLI::App* run, distmm::RunOptions& o, distmm::index_t& size) {
  run->add_option("--size", size, "Sets m, n and k at once (square problem)");
  run->add_option("--m", o.m, "Rows of A and C");
  run->add_option("--n", o.n, "Columns of B and C");
  run->add_option("--k", o.k, "Columns of A, rows of B");
  run->add_option("--dtype", o.dtype, "Element type: f32|f64 (default: the files', else f64)");
  run->add_option("--a", o.a_path, "A as a NumPy .npy file (2-D, <f4 or <f8, C or Fortran order)");
  run->add_option("--b", o.b_path, "B as a NumPy .npy file");
  run->add_option("--c", o.c_path, "C0 for C = alpha op(A) op(B) + beta C0 (with --beta)");
  run->add_option("--out", o.out_path, "Write C to this .npy file (atomically, after verification)");
  run->add_flag("--transa", o.transa, "op(A) = A^T");
  run->add_flag("--transb", o.transb, "op(B) = B^T");
  run->add_option("--algo", o.algo, "Distributed algorithm: " + joined(distmm::algorithm_names()))
      ->capture_default_str();
  run->add_option("--engine", o.engine, "Local engine: " + joined(distmm::engine_names()))
      ->capture_default_str();
  run->add_option("--seed", o.seed, "Seed of the random inputs")->capture_default_str();
  run->add_option("--fill", o.fill, "Random inputs: uniform (in [-1,1)) | integer (in [-4,4])")
      ->capture_default_str();
  run->add_option("--repeat", o.repeat, "Timed repetitions")->capture_default_str();
  run->add_option("--warmup", o.warmup, "Untimed repetitions before those")->capture_default_str();
  run->add_option("--verify", o.verify, "none|freivalds|full")->capture_default_str();
  run->add_option("--trials", o.trials, "Freivalds trials")->capture_default_str();
  run->add_option("--alpha", o.alpha, "C = alpha A B + beta C")->capture_default_str();
  run->add_option("--beta", o.beta, "C = alpha A B + beta C (C random when beta != 0)")
      ->capture_default_str();
  run->add_option("--json", o.json, "Append one JSON line with every parameter and figure");
  run->add_option("--threads", o.threads,
                  "Threads per rank (default: the node's cores over its ranks)");
  run->add_option("--mem-limit", o.mem_limit,
                  "Memory per rank, e.g. 2G (default: available memory over the node's ranks)");
  run->add_option("--panel", o.algo_opts.panel, "SUMMA panel width (default: k over the larger grid side, 256 to 4096)");
  run->add_option("--grid-rows", o.algo_opts.grid_rows,
                  "Process-grid rows for summa/scalapack (default: chosen from the shape)");
  run->add_option("--nb", o.algo_opts.scalapack_nb, "ScaLAPACK block size")->capture_default_str();
  run->add_option("--caps-steps", o.algo_opts.caps_steps,
                  "CAPS step sequence from the top, B = BFS, D = DFS, e.g. DBB (default: by memory)");
  run->add_option("--formula", o.algo_opts.formula, "CAPS formula: strassen|winograd")
      ->capture_default_str();
  run->add_option("--levels", o.levels, "Recursion levels of Strassen-like engines, or auto")
      ->capture_default_str();
  run->add_option("--cutoff", o.engine_opts.cutoff, "Smallest dimension that still recurses")
      ->capture_default_str();
  run->add_option("--block", o.engine_opts.block, "Block size q of the cache-aware tilings")
      ->capture_default_str();
  run->add_option("--tau1", o.engine_opts.tau1, "GPU engines: below this size, plain cuBLAS")
      ->capture_default_str();
  run->add_option("--tau2", o.engine_opts.tau2, "GPU engines: recurse while halves stay >= this")
      ->capture_default_str();
  run->add_option("--gpu-streams", o.engine_opts.streams,
                  "GPU engines: CUDA streams for independent leaf products")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  run->add_flag("--quiet", o.quiet, "Print nothing but errors and failed verification");
}

int dispatch(int argc, char** argv, int rank) {
  CLI::App app{"distmm: dense matrix multiplication across MPI ranks (Cannon, SUMMA, DNS, CAPS)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  distmm::RunOptions ro;
  distmm::index_t size = kUnset;
  ro.m = ro.n = ro.k = kUnset;
  CLI::App* run = app.add_subcommand("run", "Multiply random matrices, time, verify, report");
  add_run_options(run, ro, size);
  CLI::App* info = app.add_subcommand("info", "Build options, MPI, BLAS, threads and GPUs seen");
  distmm::AccuracyOptions ao;
  CLI::App* acc = app.add_subcommand(
      "accuracy", "Error per engine and level against a higher-precision reference");
  acc->add_option("--n", ao.n, "Matrix size")->capture_default_str();
  acc->add_option("--dtype", ao.dtype, "f32|f64")->capture_default_str();
  acc->add_option("--levels", ao.max_levels, "Levels 0 to this")->capture_default_str();
  acc->add_option("--threads", ao.threads, "Threads")->capture_default_str();
  acc->add_option("--engines", ao.engines, "Engines to compare");

  distmm::EngineBenchOptions eb;
  CLI::App* ebench = app.add_subcommand(
      "engine-bench", "Node engines against OpenBLAS, interleaved rounds in one process");
  ebench->add_option("--sizes", eb.sizes, "Square sizes")->capture_default_str();
  ebench->add_option("--engines", eb.engines, "NAME:LEVELS of each engine (blas:0 is the baseline)")
      ->capture_default_str();
  ebench->add_option("--dtype", eb.dtype, "f32|f64")->capture_default_str();
  ebench->add_option("--repeat", eb.repeat, "Timed rounds")->capture_default_str();
  ebench->add_option("--threads", eb.threads, "Threads (0: all hardware threads)")->capture_default_str();
  ebench->add_option("--block", eb.block, "Block size q of the cache-aware tilings")->capture_default_str();
  ebench->add_option("--json", eb.json, "Append one JSON line per row");

  distmm::TuneOptions to;
  CLI::App* tune = app.add_subcommand("tune", "Tune the GPU addition kernels and leaf products (seed 000, Algorithm 1)");
  tune->add_option("--file", to.file, "Tuning file (default: $DISTMM_TUNING_FILE or ~/.cache/distmm/tuning.json)");
  tune->add_option("--device", to.device, "GPU ordinal")->capture_default_str();
  distmm::GpuBenchOptions bo;
  CLI::App* gb = app.add_subcommand("gpu-bench", "cuBLAS against the GPU engines, one process");
  gb->add_option("--sizes", bo.sizes, "Square sizes")->capture_default_str();
  gb->add_option("--dtype", bo.dtype, "f32|f64")->capture_default_str();
  gb->add_option("--levels", bo.levels, "Levels to run")->capture_default_str();
  gb->add_option("--engines", bo.engines, "GPU engines to compare with cuBLAS");
  gb->add_option("--streams", bo.streams, "Streams for independent leaf products (rows for each)")
      ->capture_default_str();
  gb->add_flag("--untuned-too", bo.untuned_too, "Also rows with cuBLAS's own leaf kernels");
  gb->add_option("--repeat", bo.repeat, "Timed repetitions")->capture_default_str();
  gb->add_option("--device", bo.device, "GPU ordinal")->capture_default_str();
  gb->add_option("--json", bo.json, "Append one JSON line per row");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      if (rank == 0) app.exit(e);
      return 0;
    }
    throw distmm::UsageError(std::string(e.what()) + ": see 'distmm " +
                             (run->parsed() ? "run " : "") + "--help'");
  }

  if (run->parsed()) {
    const distmm::index_t dflt = 1024;  // the built-in default problem
    for (auto* opt : {&ro.m, &ro.n, &ro.k})
      if (*opt == kUnset) *opt = size != kUnset ? size : dflt;
    return distmm::run_command(ro);
  }
  if (info->parsed()) return distmm::info_command(std::cout, rank);
  if (acc->parsed()) return distmm::accuracy_command(ao, std::cout, rank);
  if (ebench->parsed()) return distmm::engine_bench_command(eb, std::cout, rank);
  if (tune->parsed()) return rank == 0 ? distmm::tune_command(to, std::cout) : 0;
  if (gb->parsed()) return rank == 0 ? distmm::gpu_bench_command(bo, std::cout) : 0;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    code = dispatch(argc, argv, rank);
  } catch (const distmm::UsageError& e) {
    if (rank == 0) std::cerr << "distmm: error: " << e.what() << std::endl;
    code = 2;
  } catch (const std::exception& e) {
    // Not a user error and perhaps on one rank only: take every rank down rather than hang.
    std::cerr << "distmm: internal error on rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return code;
}
