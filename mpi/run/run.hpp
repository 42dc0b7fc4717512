// The library's whole-run entry point: generate (or read) the operands in the chosen
// algorithm's layout, multiply, time, count, verify, write the output, and return the report.
// `distmm run` is a thin client of it (src/cli/run_command.cpp); a program links
// distmm::distmm and calls run() on every rank of its communicator.
#pragma once
#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../node/engine.hpp"
#include "../../src/core/random.hpp"
#include "../algorithms/algorithm.hpp"
#include "../runtime/comm.hpp"
#include "verify.hpp"

namespace distmm {

enum class Verify { none, freivalds, full };
const char* to_string(Verify v);

// What to multiply and how. Every field is typed; the CLI parses option strings into it.
struct RunSpec {
  index_t m = 1024, n = 1024, k = 1024;
  std::optional<Dtype> dtype;  // none: the input files' dtype, else f64
  Algorithm algo = Algorithm::automatic;
  const EngineInfo* engine = nullptr;  // an entry of engine_registry(); null: blas
  std::uint64_t seed = 42;
  Fill fill = Fill::uniform;
  int repeat = 1, warmup = 0;
  Verify verify = Verify::freivalds;
  int trials = 3;
  int threads = 0;                       // 0: the node's hardware threads over its ranks
  std::optional<std::size_t> mem_limit;  // bytes per rank; none: available memory over ranks
  // C = alpha op(A) op(B) + beta C0; alpha, beta must be real for real dtypes.
  std::complex<double> alpha = 1, beta = 0;
  // Users' matrices as NumPy .npy files (C0 with beta != 0), the product written to out_path.
  std::string a_path, b_path, c_path, out_path;
  Op transa = Op::N, transb = Op::N;  // apply to the files
  bool allow_nonfinite = false;       // NaN/Inf inputs: run, and verify by position
  // GPU engines: keep A, B and C in host memory and stage each local product through the GPU
  // (the default keeps them on the GPUs for the whole run where the algorithm can).
  bool host_staged = false;
  // Device-resident runs: random inputs generated in host memory and copied onto the GPUs, C
  // copied back (what a caller with host matrices pays; timed as load and store), instead of
  // generated on the GPUs.
  bool inputs_from_host = false;
  // Host inputs on GPUs (--from-host or files): streamed through the GPUs in stage_rows x
  // stage_cols panels of m and n, each stage's copies overlapping another's product
  // (stream_plan.hpp); 1 x 1: load, multiply and store in turn; 0: automatic (auto_stages).
  int stage_rows = 0, stage_cols = 0;
  // The first stage's product begins on the first k-part of its operands (the algorithm's
  // k_prefix) while the rest is still on the host link, where the algorithm can.
  bool split_first_stage = true;
  // A host engine's run through the device-resident (and, with host inputs, streamed) path on
  // an emulated device over host memory (make_emulated_device_space): tests those paths
  // without a GPU. Not for timing.
  bool emulate_device = false;
  AlgoOptions algo_opts;
  EngineOptions engine_opts;
  std::function<void(int done, int total)> progress;  // after each step, on every rank
  std::function<void()> repetition_started;          // before each timed or warm-up multiply
  // Device-resident runs: before each multiply, with the call's device blocks (tests make a
  // multiply that changes its inputs, which the check must not pass).
  std::function<void(DeviceSpace&, const MultiplyCall&)> device_repetition_started;
};

// One run's parameters and figures: the CLI prints it (src/cli/report.cpp) and --json appends
// to_json(report) as one line.
struct RunReport {
  // what was run
  std::string algo, layout, engine, engine_detail, dtype, inputs = "random", output;
  std::string selection;  // why --algo auto chose this algorithm (predicted times)
  std::string accuracy;   // INT8-emulated engines: the target (docs/accuracy.md); else empty
  index_t m = 0, n = 0, k = 0;
  std::complex<double> alpha = 1, beta = 0;
  std::string transa = "N", transb = "N";
  int ranks = 1, threads = 1, repeat = 1, warmup = 0;
  std::uint64_t seed = 0;
  // time over the repetitions (max over ranks of each repetition)
  std::vector<double> times;
  double time_min = 0, time_median = 0, gflops = 0;  // GFLOP/s counts real flops (8mnk complex)
  bool planned = false;   // plan(): nothing ran; words are the exact counts the run would measure
  double flops_max = 0;   // the busiest rank's local multiply flops
  // communication per rank (comm.hpp's convention) and the analytic count for this layout
  bool words_measured = true;
  double words_max = 0, words_mean = 0, messages_max = 0, messages_mean = 0;
  double analytic_words_max = 0, analytic_words_mean = 0, analytic_messages_max = 0;
  double lower_bound_words = 0;
  std::string lower_bound;
  double peak_bytes = 0;  // estimated per rank (GPU memory for device-resident runs)
  double engine_workspace_bytes = 0;  // the engine's for the rank's largest local product (max over ranks)
  // Where the blocks live ("device (...NCCL...)", "host-staged (why)"; empty for host engines),
  // and, for device-resident runs, the seconds to load the inputs onto the GPUs and to store C
  // back (max over ranks; outside the timed multiply).
  std::string residency;
  bool from_host = false;  // --from-host: the load and store are host-device copies
  double load_seconds = 0, store_seconds = 0;
  // Streamed in this many stages (> 1; stage_grid "rows x cols" panels of m and n): each time
  // is then host to host, the loads and stores overlapped with the products, and load/store are
  // not reported apart; what no product hides is reported instead: the first stage's inputs
  // (exposed load) and, after the last product, the last stage's C (exposed store). A later
  // stage whose copies outlast the product before it waits too, uncounted here (the link
  // keeps up at the sizes of docs/performance.md), as does, with the first stage split
  // (first_stage_split), a first product that outlasts its first part's product waiting for
  // the rest. Medians over the repetitions, max over ranks.
  int stages = 1;
  double exposed_load_seconds = 0, exposed_store_seconds = 0;
  std::string stage_grid = "1x1";
  // The first stage's product began on the first k-part of its operands (RunSpec::
  // split_first_stage): the exposed load is that part's copies.
  bool first_stage_split = false;
  int engine_levels_run = 0;  // Strassen-like levels the engine ran (max over calls and ranks)
  // Seconds per phase of the algorithm in the last repetition, max and mean over ranks.
  struct Phase {
    std::string name;
    double max = 0, mean = 0;
  };
  std::vector<Phase> phases;
  double error_growth = 1;    // factor on the classical error bound: 12 (18 for Winograd's) per level run and CAPS step
  // verification
  std::string verify = "none";
  double residual = 0, tolerance = 0, rel_frobenius = -1, max_abs = -1;
  bool passed = true;
  std::vector<std::string> notes;  // what the reader must know (non-finite inputs, ...)
  std::string host;
  std::string time_stamp;
};

// Collective over `world`: every rank calls it with the same spec. Throws UsageError (on every
// rank alike) for input that cannot run; a failed verification is report.passed == false, and
// then nothing is written to out_path.
RunReport run(const Comm& world, RunSpec spec);
// The same decisions without any work (no matrices, nothing computed): the algorithm and its
// decomposition, words, messages and flops per rank (the algorithm's exact counts, which run()
// then measures), peak memory and the bounds. Collective like run().
RunReport plan(const Comm& world, RunSpec spec);

nlohmann::json to_json(const RunReport& r);

// Threads per rank when the user gave none: the node's hardware threads over the node's ranks.
int default_threads();

}  // namespace distmm
