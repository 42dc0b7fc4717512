// The distmm command line: `distmm run`, `info`, `accuracy`, `engine-bench`, `layout-bench`,
// `tune`, `gpu-bench`. Runs alone as one process (single-node development mode) or under mpirun/srun;
// every rank parses its arguments and the ranks compare what they parsed first (an MPMD launch
// may give them different ones), so bad input is detected on all ranks alike and all leave with
// exit code 2. The CLI is a client of the library (<distmm/distmm.hpp>).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <sstream>

#include "../../cuda/gpu_engines.hpp"
#include "../../cuda/ozaki_accuracy.hpp"
#include "../core/settings.hpp"
#include "commands.hpp"
#include "run_command.hpp"

namespace {

// An option given an empty value ("--transa=", "--json ''"): CLI11 would read a flag's as its
// default (--transa= as T) and an empty path as none given. Refused instead.
std::string empty_value_error(int argc, char** argv, const CLI::App& app) {
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    if (s == "--") break;
    if (s.size() > 3 && s.rfind("--", 0) == 0 && s.back() == '=')
      return s + " has an empty value: give one after '=' or drop the option";
  }
  for (const CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* o : sub->get_options())
      for (const std::string& r : o->results())
        if (r.empty()) return o->get_name() + " '' has an empty value: give one or drop the option";
  return "";
}

// The ranges of the small commands' numbers (`run`'s are checked in run_command.cpp).
constexpr int kMostThreads = 4096;
const CLI::Range kDimension(1LL, static_cast<long long>(INT32_MAX));  // BLAS takes int dimensions
const CLI::Range kRepeats(1, 1000000);
const CLI::Range kDevice(0, 1023);

int dispatch(int argc, char** argv, int rank) {
  CLI::App app{"distmm: dense matrix multiplication across MPI ranks (Cannon, SUMMA, DNS, CAPS)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  distmm::RunCommandOptions ro;
  CLI::App* run = app.add_subcommand("run", "Multiply random matrices, time, verify, report");
  distmm::add_run_options(*run, ro);
  distmm::RunCommandOptions po;
  int plan_ranks = 0;
  CLI::App* plan = app.add_subcommand("plan", "What run would do with these options (algorithm, decomposition, words, memory, bounds), computing nothing");
  distmm::add_run_options(*plan, po);
  plan->add_option("--ranks", plan_ranks,
                   "Plan for this many ranks, started here under mpirun (default: the ranks of mpirun)");
  distmm::CalibrateOptions co;
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Measure this machine's GEMM rate per rank, bandwidth and latency for the cost model of --algo auto");
  calibrate->add_option("--file", co.file, "Where to save (default: $DISTMM_MACHINE_FILE or ~/.cache/distmm/machine.json)");
  calibrate->add_option("--threads", co.threads, "Threads per rank (default: the node's cores over its ranks)")
      ->check(CLI::Range(0, kMostThreads));
  calibrate->add_flag("--device", co.device,
                      "Measure the device side instead (one rank per GPU): each engine's rate at a ladder of sizes, "
                      "the link between the GPUs (NCCL), the device memory; saved as the file's device section");
  calibrate->add_flag("--emulate-device", co.emulate_device,
                      "With --device: through the emulated device (host memory, a host engine such as blas)");
  calibrate->add_option("--engine", co.engines, "With --device: engines to measure (repeatable; default: the GPU engines)");
  calibrate->add_option("--dtype", co.dtypes, "With --device: dtypes to measure (repeatable; default f64 and f32)");
  calibrate->add_option("--sizes", co.sizes, "With --device: square sizes (default 1024 to 16384, capped by memory)")
      ->check(kDimension);
  calibrate->add_flag("--quick", co.quick, "With --device: two sizes only");
  CLI::App* info = app.add_subcommand("info", "Build options, MPI, BLAS, threads, GPUs, dtypes and engines");
  distmm::AccuracyOptions ao;
  CLI::App* acc = app.add_subcommand(
      "accuracy", "Error per engine and level against a higher-precision reference");
  acc->add_option("--n", ao.n, "Matrix size")->capture_default_str()->check(CLI::Range(1, 4096));
  acc->add_option("--dtype", ao.dtype, distmm::dtype_names("|"))->capture_default_str();
  acc->add_option("--levels", ao.max_levels, "Levels 0 to this")->capture_default_str()->check(CLI::Range(0, 6));
  acc->add_option("--threads", ao.threads, "Threads")->capture_default_str()->check(CLI::Range(1, kMostThreads));
  acc->add_option("--engines", ao.engines, "Engines to compare");
  acc->add_option("--accuracy", ao.accuracy, "INT8-emulated engines: native, a relative error such as 1e-10, or max")
      ->capture_default_str();

  distmm::EngineBenchOptions eb;
  CLI::App* ebench = app.add_subcommand(
      "engine-bench", "Node engines against OpenBLAS, interleaved rounds in one process");
  ebench->add_option("--sizes", eb.sizes, "Square sizes")->capture_default_str()->check(kDimension);
  ebench->add_option("--engines", eb.engines, "NAME:LEVELS of each engine (blas:0 is the baseline)")
      ->capture_default_str();
  ebench->add_option("--dtype", eb.dtype, distmm::dtype_names("|"))->capture_default_str();
  ebench->add_option("--repeat", eb.repeat, "Timed rounds")->capture_default_str()->check(kRepeats);
  ebench->add_option("--threads", eb.threads, "Threads (0: all hardware threads)")
      ->capture_default_str()
      ->check(CLI::Range(0, kMostThreads));
  ebench->add_option("--block", eb.block, "Block size q of the cache-aware tilings")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  ebench->add_option("--json", eb.json, "Append one JSON line per row");

  distmm::TuneOptions to;
  CLI::App* tune = app.add_subcommand("tune", "Tune the GPU addition kernels, leaf products and the emulation's INT8 products (seed 000, Algorithm 1)");
  tune->add_option("--file", to.file, "Tuning file (default: $DISTMM_TUNING_FILE or ~/.cache/distmm/tuning.json)");
  tune->add_option("--device", to.device, "GPU ordinal")->capture_default_str()->check(kDevice);
  tune->add_option("--shapes", to.shapes,
                   "Tune only these leaf products, MxNxK (e.g. 6144x3072x6144: the leaves of a rectangular "
                   "local product), kept beside the square sizes");
  tune->add_option("--dtype", to.dtype,
                   "f32 | f64 (addition kernels and leaf products) | i8 (the INT8 products of the emulation: "
                   "OpA x OpB x Kp for --shapes) | all")
      ->check(CLI::IsMember({"f32", "f64", "i8", "all"}))
      ->capture_default_str();
  distmm::GpuBenchOptions bo;
  CLI::App* gb = app.add_subcommand("gpu-bench", "cuBLAS against the GPU engines, one process");
  gb->add_option("--sizes", bo.sizes, "Square sizes")->capture_default_str()->check(kDimension);
  gb->add_option("--dtype", bo.dtype, "f32|f64")->capture_default_str();
  gb->add_option("--levels", bo.levels, "Levels to run")->capture_default_str()->check(CLI::Range(0, 10));
  gb->add_option("--engines", bo.engines, "GPU engines to compare with cuBLAS");
  gb->add_option("--streams", bo.streams, "Streams for independent leaf products (rows for each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  gb->add_flag("--untuned-too", bo.untuned_too, "Also rows with cuBLAS's own leaf kernels");
  gb->add_option("--moduli", bo.moduli, "INT8-emulated engines: moduli count 2 to 16 (default: from --accuracy)")
      ->check(CLI::Range(2, 16));
  gb->add_option("--accuracy", bo.accuracy, "INT8-emulated engines: native, a relative error such as 1e-10, or max")
      ->capture_default_str();
  bool gb_no_error = false;
  gb->add_flag("--no-error", gb_no_error, "Timings only: no reference product (it needs 3 n^2 doubles for f32)");
  gb->add_option("--repeat", bo.repeat, "Timed repetitions")->capture_default_str()->check(kRepeats);
  gb->add_option("--device", bo.device, "GPU ordinal")->capture_default_str()->check(kDevice);
  gb->add_option("--json", bo.json, "Append one JSON line per row");
  distmm::XtBenchOptions xo;
  CLI::App* xb = app.add_subcommand("xt-bench", "cuBLASXt on host-resident matrices over the node's GPUs, one process");
  xb->add_option("--sizes", xo.sizes, "Square sizes")->capture_default_str()->check(kDimension);
  xb->add_option("--dtype", xo.dtype, "f32|f64")->capture_default_str();
  xb->add_option("--gpus", xo.gpus, "GPUs to use (0: all visible)")->capture_default_str()->check(CLI::Range(0, 1024));
  xb->add_option("--block-dim", xo.block_dim, "cuBLASXt block dimension (0: the fastest of 1024-8192, timed once each)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65536));
  xb->add_option("--repeat", xo.repeat, "Timed repetitions")->capture_default_str()->check(kRepeats);
  xb->add_option("--json", xo.json, "Append one JSON line per row");

  distmm::LayoutBenchOptions lo;
  CLI::App* lbench = app.add_subcommand(
      "layout-bench", "distmm on block-cyclic or slab layouts against PDGEMM on the same arrays, interleaved");
  distmm::add_layout_bench_options(*lbench, lo);

  // Errors wait until the ranks have compared what they parsed: a rank that left alone would
  // leave the others in a collective.
  std::string parse_error, help;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      std::ostringstream out;
      app.exit(e, out, out);
      help = out.str();
    } else {
      parse_error = std::string(e.what()) + ": see 'distmm " + (run->parsed() ? "run " : "") + "--help'";
    }
  }
  if (parse_error.empty()) parse_error = empty_value_error(argc, argv, app);
  distmm::LaunchFields fields;
  if (parse_error.empty() && help.empty()) {
    fields = distmm::launch_fields(app, {"--a", "--b", "--c"});
  } else {
    std::string raw;
    for (int a = 1; a < argc; ++a) raw += std::string(a > 1 ? " " : "") + argv[a];
    fields = {{"command", raw + (help.empty() ? " (not parsed)" : " (help)")}};
  }
  distmm::agree_on_launch(fields);
  if (!help.empty()) {
    if (rank == 0) std::cout << help << std::flush;
    return 0;
  }
  if (!parse_error.empty()) throw distmm::UsageError(parse_error);
  distmm::checked_settings();  // every DISTMM_* setting checked before any work

  if (run->parsed()) return distmm::run_command(ro, rank);
  if (plan->parsed()) {
    int P = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (plan->count("--ranks") && plan_ranks != P) {
      if (P > 1 && plan_ranks >= 1)
        throw distmm::UsageError("--ranks " + std::to_string(plan_ranks) + " but mpirun started " +
                                 std::to_string(P) + " ranks: drop --ranks or match it");
      // plan --ranks P starts P processes here: refused before one starts when they cannot.
      std::string why;
      const int most = distmm::plan_rank_limit(why);
      if (plan_ranks < 1 || plan_ranks > most)
        throw distmm::UsageError("--ranks " + std::to_string(plan_ranks) + " is out of range: use 1 to " +
                                 std::to_string(most) + " (" + why + ")");
      return distmm::plan_on_ranks(argc, argv, plan_ranks);  // relaunches under mpirun
    }
    return distmm::plan_command(po, rank);
  }
  if (calibrate->parsed()) return distmm::calibrate_command(co, std::cout, rank);
  if (info->parsed()) return distmm::info_command(std::cout, rank);
  // --accuracy: a target the emulation's rule knows, never beside --moduli
  auto accuracy_checked = [](const std::string& text, bool moduli_given) {
    if (moduli_given) throw distmm::UsageError("--accuracy and --moduli both choose the moduli count: give one of them");
    distmm::ozaki::Accuracy a;
    const std::string why = distmm::ozaki::parse_accuracy(text, a);
    if (!why.empty()) throw distmm::UsageError(why);
  };
  if (acc->parsed()) {
    accuracy_checked(ao.accuracy, false);
    return distmm::accuracy_command(ao, std::cout, rank);
  }
  if (gb->parsed()) accuracy_checked(bo.accuracy, gb->count("--accuracy") > 0 && gb->count("--moduli") > 0);
  if (ebench->parsed()) return distmm::engine_bench_command(eb, std::cout, rank);
  if (lbench->parsed()) return distmm::layout_bench_command(lo, std::cout, rank);
  if (tune->parsed()) return rank == 0 ? distmm::tune_command(to, std::cout) : 0;
  bo.error = !gb_no_error;
  if (gb->parsed()) return rank == 0 ? distmm::gpu_bench_command(bo, std::cout) : 0;
  if (xb->parsed()) return rank == 0 ? distmm::xt_bench_command(xo, std::cout) : 0;
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
  } catch (const distmm::OutputError& e) {  // thrown on every rank alike (collective checks)
    if (rank == 0) std::cerr << "distmm: error: " << e.what() << std::endl;
    code = 1;
  } catch (const std::bad_alloc&) {
    // Memory ran out although the plan fitted the budget (a --mem-limit above what the node
    // has, or other processes' memory): perhaps on this rank only, so take every rank down.
    std::cerr << "distmm: error: out of memory on rank " << rank
              << ": use a smaller --mem-limit (the node's memory over its ranks), smaller sizes or more ranks"
              << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 2);
  } catch (const std::exception& e) {
    // Not a user error and perhaps on one rank only: take every rank down rather than hang.
    std::cerr << "distmm: internal error on rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
  return code;
}
