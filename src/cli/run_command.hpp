// `distmm run`: the command line's options, parsed once into the library's typed RunSpec
// (mpi/run.hpp), then the run, the report and the JSON line.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "../../mpi/run/run.hpp"

namespace distmm {

struct RunCommandOptions {
  RunSpec spec;
  // Options whose text is turned into typed values by to_spec() (ranges, names, "auto").
  static constexpr index_t kUnset = INT64_MIN;  // a size the user did not give
  index_t size = kUnset, m = kUnset, n = kUnset, k = kUnset;
  std::string dtype, algo = "auto", engine = "blas", verify = "freivalds", fill = "uniform";
  std::string levels = "auto", mem_limit, caps_steps, formula = "auto", stages = "auto", cuboid_grid;
  std::string alpha = "1", beta = "0", transa = "N", transb = "N", seed = "42";
  std::string json;
  bool quiet = false, whole_first_stage = false;
  const CLI::App* app = nullptr;  // the parsed subcommand: which options the user gave
  bool given(const std::string& flag) const { return app && app->count(flag) > 0; }
};

void add_run_options(CLI::App& run, RunCommandOptions& o);
// Every option's text checked and converted; throws UsageError naming the option and the fix.
RunSpec to_spec(const RunCommandOptions& o);
// Returns the process exit code (0, or 1 when verification failed).
int run_command(const RunCommandOptions& o, int rank);
// `distmm plan`: what `run` with these options would do, computing nothing; --json FILE or -.
int plan_command(const RunCommandOptions& o, int rank);
// `distmm plan --ranks P` from one process: runs the same plan under mpirun -n P (the plan of
// P ranks is made by P ranks, so its numbers are exactly those of the run). Returns only on error.
int plan_on_ranks(int argc, char** argv, int ranks);
// The most ranks plan --ranks may start on this machine (its process limit and memory, at most
// 4096), and `why` that bound.
int plan_rank_limit(std::string& why);

}  // namespace distmm
