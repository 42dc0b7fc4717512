#include "run_command.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "../../cuda/ozaki_accuracy.hpp"
#include "../core/json.hpp"
#include "../core/settings.hpp"
#include "../core/system.hpp"
#include "../core/timer.hpp"
#include "commands.hpp"
#include "report.hpp"

namespace distmm {

namespace {

// Rank 0 shows "step i of N" on a terminal once a run has lasted a few seconds.
class Progress {
 public:
  Progress(bool show, std::string name) : show_(show), name_(std::move(name)) {}
  ~Progress() {
    if (shown_) std::cerr << "\n";
  }
  void operator()(int done, int total) {
    if (!show_ || clock_.seconds() < 3.0) return;
    std::cerr << "\r[distmm] " << name_ << ": step " << done << " of " << total << ", "
              << static_cast<int>(clock_.seconds()) << " s" << std::flush;
    shown_ = true;
  }
  void restart() { clock_ = Stopwatch(); }

 private:
  bool show_, shown_ = false;
  std::string name_;
  Stopwatch clock_;
};

// A signed decimal number at the start of `s` ("-2.5e3", "+1", "nan", "inf"): its length, 0
// where there is none. Unlike stod it takes no blanks or hex; out_of_range beyond a double's
// normal numbers.
std::size_t decimal_prefix(std::string_view s, double& v) {
  const std::size_t sign = !s.empty() && s[0] == '+' ? 1 : 0;  // from_chars takes '-' only
  if (sign && s.size() > 1 && s[1] == '-') return 0;             // no "+-1"
  const auto r = std::from_chars(s.data() + sign, s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range) throw std::out_of_range("scalar");
  return r.ec == std::errc() ? static_cast<std::size_t>(r.ptr - s.data()) : 0;
}

// "1.5", "-2", "1+2j", "0.5-1i", "3j" -> a complex scalar.
std::complex<double> parse_scalar(const std::string& text, const char* flag) {
  const std::string bad = std::string(flag) + " '" + text +
                          "' is not a number: give e.g. 1.5, or 1+2j for a complex scalar";
  if (text.empty()) throw UsageError(bad);
  double re = 0, im = 0;
  try {
    const bool imag_only = text.back() == 'j' || text.back() == 'i';
    const std::string_view body(text.data(), text.size() - (imag_only ? 1 : 0));
    // a real part, then optionally a signed imaginary part ending in j or i
    double first = 0;
    const std::size_t used = decimal_prefix(body, first);
    if (used == 0) throw UsageError(bad);
    if (used == body.size()) {
      (imag_only ? im : re) = first;
    } else {
      if (!imag_only || (body[used] != '+' && body[used] != '-')) throw UsageError(bad);
      re = first;
      if (used + decimal_prefix(body.substr(used), im) != body.size()) throw UsageError(bad);
    }
  } catch (const std::out_of_range&) {  // overflows a double, or underflows its normal numbers
    throw UsageError(std::string(flag) + " '" + text +
                     "' is out of range: give parts of magnitude 2.2250738585072014e-308 to 1.7976931348623157e+308, "
                     "or 0");
  }
  if (!std::isfinite(re) || !std::isfinite(im))
    throw UsageError(std::string(flag) + " " + text + " is not finite: give a finite number");
  return {re, im};
}

// Decimal digits within 0 to 2^64-1: "-1" and 20-digit overflows are refused, not wrapped.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw UsageError("--seed '" + text + "' is not a seed: use an integer from 0 to 18446744073709551615");
  return v;
}

Op parse_op_option(const std::string& text, const char* flag) {
  if (auto op = parse_op(text)) return *op;
  throw UsageError(std::string(flag) + " '" + text + "': use N, T or C (conjugate transpose)");
}

}  // namespace

void add_run_options(CLI::App& run, RunCommandOptions& o) {
  RunSpec& s = o.spec;
  o.app = &run;
  run.add_option("--size", o.size, "Sets m, n and k at once (square problem; default 1024)");
  run.add_option("--m", o.m, "Rows of A and C");
  run.add_option("--n", o.n, "Columns of B and C");
  run.add_option("--k", o.k, "Columns of A, rows of B");
  run.add_option("--dtype", o.dtype, "Element type: " + dtype_names("|") + " (default: the files', else f64)");
  run.add_option("--a", s.a_path, "A as a NumPy .npy file (2-D, <f4 <f8 <c8 <c16, C or Fortran order)");
  run.add_option("--b", s.b_path, "B as a NumPy .npy file");
  run.add_option("--c", s.c_path, "C0 for C = alpha op(A) op(B) + beta C0 (with --beta)");
  run.add_option("--out", s.out_path, "Write C to this .npy file (atomically, after verification)");
  run.add_flag("--transa{T}", o.transa,
               "op(A) = A^T; --transa=C for the conjugate transpose A^H (complex types)");
  run.add_flag("--transb{T}", o.transb, "op(B) = B^T; --transb=C for B^H");
  run.add_option("--algo", o.algo, "Distributed algorithm: " + joined(algorithm_names()))
      ->capture_default_str();
  std::string engines;
  for (const EngineInfo& e : engine_registry())
    engines += "\n    " + e.name + " (" + e.dtypes.names() + (e.memory == Memory::device ? "; GPU" : "") +
               "): " + e.summary;
  run.add_option("--engine", o.engine, "Local engine (default blas):" + engines);
  run.add_option("--seed", o.seed, "Seed of the random inputs, 0 to 2^64-1")->capture_default_str();
  run.add_option("--fill", o.fill, "Random inputs: uniform (in [-1,1)) | integer (in [-4,4])")
      ->capture_default_str();
  run.add_option("--repeat", s.repeat, "Timed repetitions")->capture_default_str();
  run.add_option("--warmup", s.warmup, "Untimed repetitions before those")->capture_default_str();
  run.add_option("--verify", o.verify, "none|freivalds|full")->capture_default_str();
  run.add_option("--trials", s.trials, "Freivalds trials")->capture_default_str();
  run.add_option("--alpha", o.alpha, "C = alpha A B + beta C (complex types: e.g. 1+2j)")
      ->capture_default_str();
  run.add_option("--beta", o.beta, "C = alpha A B + beta C (C random when beta != 0)")
      ->capture_default_str();
  run.add_option("--json", o.json, "Append one JSON line with every parameter and figure");
  run.add_option("--threads", s.threads, "Threads per rank (default: the node's cores over its ranks)");
  run.add_option("--mem-limit", o.mem_limit,
                 "Memory per rank, e.g. 2G (default: available memory over the node's ranks)");
  run.add_option("--panel", s.algo_opts.panel, "SUMMA panel width (default: k over the larger grid side, 256 to 4096)");
  run.add_option("--grid-rows", s.algo_opts.grid_rows,
                 "Process-grid rows for summa/scalapack (default: chosen from the shape)");
  run.add_option("--cuboid-grid", o.cuboid_grid,
                 "Rank grid of --algo cuboid, PMxPNxPK (ranks along m, n and k; e.g. 1x1x2 splits k), "
                 "default: chosen by the cost model");
  run.add_option("--nb", s.algo_opts.scalapack_nb, "ScaLAPACK block size")->capture_default_str();
  run.add_option("--caps-steps", o.caps_steps,
                 "CAPS step sequence from the top, B = BFS, D = DFS, X = dealt (a suffix: the 7^L "
                 "subproblems of the last L levels dealt round-robin to the ranks, any rank count), e.g. DBB "
                 "or XXX, or auto (default: the fastest by the cost model of those that fit in memory)");
  run.add_option("--formula", o.formula, "CAPS formula: strassen|winograd|auto (by the cost model)")
      ->capture_default_str();
  run.add_option("--levels", o.levels, "Recursion levels of Strassen-like engines, or auto")
      ->capture_default_str();
  run.add_option("--cutoff", s.engine_opts.cutoff, "Smallest dimension that still recurses")
      ->capture_default_str();
  run.add_option("--block", s.engine_opts.block, "Block size q of the cache-aware tilings")
      ->capture_default_str();
  run.add_option("--tau1", s.engine_opts.tau1, "GPU engines: below this size, plain cuBLAS")
      ->capture_default_str();
  run.add_option("--tau2", s.engine_opts.tau2, "GPU engines: recurse while halves stay >= this")
      ->capture_default_str();
  run.add_option("--gpu-streams", s.engine_opts.streams,
                 "GPU engines: CUDA streams for independent leaf products")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  run.add_option("--moduli", s.engine_opts.moduli,
                 "INT8-emulated engines (gpu-ozaki, gpu-*-ozaki, ozaki): moduli count 2 to 16 (default: "
                 "the fewest that reach --accuracy)");
  run.add_option("--accuracy", s.engine_opts.accuracy,
                 "INT8-emulated engines: native (a guaranteed error bound of sqrt(k) u |A||B| entrywise, the "
                 "native routine's typical error), a relative error such as 1e-10, or max (docs/accuracy.md)")
      ->capture_default_str();
  run.add_flag("--quiet", o.quiet, "Print nothing but errors and failed verification");
  run.add_flag("--host-staged", s.host_staged,
               "GPU engines: keep A, B, C in host memory and stage each local product through the GPU "
               "(default: they stay on the GPUs for the whole run, NCCL between them)");
  run.add_flag("--from-host", s.inputs_from_host,
               "GPU engines: generate the random inputs in host memory and copy them onto the GPUs, and copy C "
               "back (timed apart as load and store), as a caller holding host matrices would");
  run.add_option("--stages", o.stages,
                 "GPU engines with host inputs (--from-host, --a/--b files): R or RxC panels of m (and n) streamed "
                 "through the GPUs, each stage's copies overlapping another's product; 1: load, multiply and store in "
                 "turn; auto: m and n each cut in two where at least 8192, else 1")
      ->capture_default_str();
  run.add_flag("--emulate-device", s.emulate_device,
               "Testing without a GPU: run a host engine's products (blas, winograd, ...) through the device-resident "
               "path, and with host inputs the streamed one, on an emulated device in host memory; not for timing");
  run.add_flag("--whole-first-stage", o.whole_first_stage,
               "Streamed runs: load the first stage's operands whole before its product (default: the product "
               "begins on the first part of k while the rest comes in, where the algorithm can)");
  run.add_flag("--allow-nonfinite", s.allow_nonfinite,
               "Multiply inputs holding NaN or Inf (else an error naming the first); verified by position");
}

namespace {

// Integer options against their ranges.
template <class V>
void in_range(const RunCommandOptions& o, const char* flag, V v, long long lo, long long hi,
              const char* what = nullptr) {
  if (!o.given(flag)) return;
  if (static_cast<long long>(v) < lo || static_cast<long long>(v) > hi)
    throw UsageError(std::string(flag) + " " + std::to_string(v) + " is out of range: use " +
                     (what ? what : std::to_string(lo) + " to " + std::to_string(hi)));
}

// An option that applies only when `applies` holds: otherwise a usage error naming both options.
void only_with(const RunCommandOptions& o, const char* flag, bool applies, const std::string& needs) {
  if (o.given(flag) && !applies)
    throw UsageError(std::string(flag) + " applies only " + needs + ": drop " + flag +
                     " or change the other option");
}

// --accuracy: a target the rule knows (cuda/ozaki_accuracy.hpp), and not with --moduli, which
// fixes the moduli count instead.
void check_accuracy(const RunCommandOptions& o, const std::string& text) {
  if (o.given("--accuracy") && o.given("--moduli"))
    throw UsageError("--accuracy and --moduli both choose the moduli count: give one of them");
  ozaki::Accuracy a;
  const std::string why = ozaki::parse_accuracy(text, a);
  if (!why.empty()) throw UsageError(why);
}

// Every option against its range and against the others (after the names are parsed).
void check_combinations(const RunCommandOptions& o, const RunSpec& s) {
  in_range(o, "--repeat", s.repeat, 1, 1000000);
  in_range(o, "--warmup", s.warmup, 0, 1000000);
  in_range(o, "--trials", s.trials, 1, 1000);
  in_range(o, "--threads", s.threads, 0, 4096, "0 (automatic) to 4096");
  in_range(o, "--panel", s.algo_opts.panel, 1, INT32_MAX);
  in_range(o, "--grid-rows", s.algo_opts.grid_rows, 1, INT32_MAX);
  in_range(o, "--nb", s.algo_opts.scalapack_nb, 1, INT32_MAX);
  in_range(o, "--block", s.engine_opts.block, 1, 65536);
  in_range(o, "--cutoff", s.engine_opts.cutoff, 1, INT32_MAX);
  in_range(o, "--tau1", s.engine_opts.tau1, 1, INT32_MAX);
  in_range(o, "--tau2", s.engine_opts.tau2, 1, INT32_MAX);
  in_range(o, "--moduli", s.engine_opts.moduli, 2, 16);
  check_accuracy(o, s.engine_opts.accuracy);

  const bool files = !s.a_path.empty();
  for (const char* f : {"--size", "--m", "--n", "--k"})
    only_with(o, f, !files, "to generated inputs, not with --a/--b (the files give the shape)");
  only_with(o, "--fill", !files, "to generated inputs, not with --a/--b");
  only_with(o, "--seed", !files, "to generated inputs, not with --a/--b");
  // Generated inputs draw a random C0 for beta != 0; files give C0 only through --c.
  only_with(o, "--beta", !files || !s.c_path.empty(), "with --c C0.npy when the inputs are --a/--b files");
  if (o.given("--size"))
    for (const char* f : {"--m", "--n", "--k"})
      if (o.given(f))
        throw UsageError(std::string("--size and ") + f + " both set the shape: give --size alone or --m/--n/--k");
  only_with(o, "--trials", s.verify == Verify::freivalds, "with --verify freivalds");

  only_with(o, "--panel", s.algo == Algorithm::summa, "to --algo summa, not " + std::string(to_string(s.algo)));
  only_with(o, "--grid-rows", s.algo == Algorithm::summa || s.algo == Algorithm::scalapack,
            "to --algo summa or scalapack, not " + std::string(to_string(s.algo)));
  only_with(o, "--nb", s.algo == Algorithm::scalapack, "to --algo scalapack, not " + std::string(to_string(s.algo)));
  only_with(o, "--cuboid-grid", s.algo == Algorithm::cuboid, "to --algo cuboid, not " + std::string(to_string(s.algo)));
  only_with(o, "--caps-steps", s.algo == Algorithm::caps, "to --algo caps, not " + std::string(to_string(s.algo)));
  only_with(o, "--formula", s.algo == Algorithm::caps, "to --algo caps, not " + std::string(to_string(s.algo)));
  only_with(o, "--engine", s.algo != Algorithm::scalapack,
            "to distmm's own algorithms: --algo scalapack multiplies with ScaLAPACK's own BLAS calls");

  const EngineInfo& e = *s.engine;
  const bool gpu_recursive = e.recursive && e.memory == Memory::device;
  const std::string engine = "--engine " + e.name;
  only_with(o, "--levels", e.recursive, "to Strassen-like engines (strassen, strassen-lowmem, winograd, gpu-*), not " + engine);
  only_with(o, "--cutoff", e.recursive && e.memory == Memory::host,
            "to the CPU Strassen-like engines (strassen, strassen-lowmem, winograd; the GPU ones use --tau1/--tau2), not " + engine);
  only_with(o, "--block", e.tiled, "to the tiling engines (mmra-*, outer-product, equal-layout), not " + engine);
  for (const char* f : {"--tau1", "--tau2", "--gpu-streams"})
    only_with(o, f, gpu_recursive, "to the GPU Strassen-like engines (gpu-strassen, gpu-strassen-lowmem, gpu-winograd, gpu-*-ozaki), not " + engine);
  for (const char* f : {"--moduli", "--accuracy"})
    only_with(o, f, e.emulated, "to the INT8-emulated engines (gpu-ozaki, gpu-strassen-ozaki, gpu-winograd-ozaki, their host twin ozaki), not " + engine);
  only_with(o, "--host-staged", e.memory == Memory::device && s.algo != Algorithm::scalapack,
            "to the GPU engines (cublas, gpu-*), not " + engine);
  only_with(o, "--from-host", (e.memory == Memory::device || s.emulate_device) && s.algo != Algorithm::scalapack,
            "to the GPU engines (cublas, gpu-*) or --emulate-device, not " + engine);
  for (const char* f : {"--stages", "--whole-first-stage"})
    only_with(o, f, (e.memory == Memory::device || s.emulate_device) && s.algo != Algorithm::scalapack &&
                        !s.host_staged && (s.inputs_from_host || !s.a_path.empty()),
              "to GPU engines with host inputs (--from-host, or --a/--b files), without --host-staged");
  if (s.host_staged && s.inputs_from_host)
    throw UsageError("--from-host is for device-resident runs and --host-staged keeps the blocks in host memory: "
                     "give one of them");
  if (s.inputs_from_host && !s.a_path.empty())
    throw UsageError("--from-host generates random inputs in host memory; --a/--b files are read on the host "
                     "already: drop --from-host");
}

}  // namespace

RunSpec to_spec(const RunCommandOptions& o) {
  RunSpec s = o.spec;
  const index_t dflt = 1024;  // the built-in default problem
  const index_t unset = RunCommandOptions::kUnset;
  const index_t square = o.size != unset ? o.size : dflt;
  s.m = o.m != unset ? o.m : square;
  s.n = o.n != unset ? o.n : square;
  s.k = o.k != unset ? o.k : square;
  if (!o.dtype.empty()) {
    s.dtype = parse_dtype(o.dtype);
    if (!s.dtype) throw UsageError("unknown --dtype '" + o.dtype + "': use " + dtype_names(", "));
  }
  auto algo = parse_algorithm(o.algo);
  if (!algo) throw UsageError("unknown algorithm '" + o.algo + "': use one of " + joined(algorithm_names(), ", "));
  s.algo = *algo;
  s.engine = &engine_info(o.engine);
  if (o.verify == "none") s.verify = Verify::none;
  else if (o.verify == "freivalds") s.verify = Verify::freivalds;
  else if (o.verify == "full") s.verify = Verify::full;
  else throw UsageError("unknown --verify '" + o.verify + "': use none, freivalds or full");
  if (o.fill == "uniform") s.fill = Fill::uniform;
  else if (o.fill == "integer") s.fill = Fill::integer;
  else throw UsageError("unknown --fill '" + o.fill + "': use uniform or integer");
  if (o.levels != "auto" && (o.levels.empty() || o.levels.find_first_not_of("0123456789") != std::string::npos ||
                             o.levels.size() > 2))
    throw UsageError("--levels '" + o.levels + "' is not a level count: use 0 to 10, or auto");
  s.engine_opts.levels = o.levels == "auto" ? -1 : std::stoi(o.levels);
  if (!o.mem_limit.empty()) s.mem_limit = parse_bytes(o.mem_limit, "--mem-limit");
  if (!o.caps_steps.empty() && o.caps_steps != "auto") {
    s.algo_opts.caps_steps = parse_caps_steps(o.caps_steps);
    if (!s.algo_opts.caps_steps)
      throw UsageError("--caps-steps '" + o.caps_steps + "' may hold only B (BFS), D (DFS) and X (dealt) steps");
  }
  if (o.formula == "strassen") s.algo_opts.formula = &kStrassenFormula;
  else if (o.formula == "winograd") s.algo_opts.formula = &kWinogradFormula;
  else if (o.formula == "auto") s.algo_opts.formula = nullptr;
  else throw UsageError("unknown --formula '" + o.formula + "': use strassen, winograd or auto");
  if (o.caps_steps == "auto") s.algo_opts.caps_steps.reset();
  if (o.given("--cuboid-grid") || !o.cuboid_grid.empty()) {  // make_cuboid checks it against the ranks
    const std::vector<int> g = parse_counts(o.cuboid_grid);
    if (g.size() != 3)
      throw UsageError("--cuboid-grid '" + o.cuboid_grid + "' is not PMxPNxPK (ranks along m, n and k, each >= 1): e.g. 1x1x2");
    s.algo_opts.cuboid_grid = {g[0], g[1], g[2]};
  }
  if (o.stages != "auto") {
    const std::vector<int> g = parse_counts(o.stages);
    if (g.empty() || g.size() > 2)
      throw UsageError("--stages '" + o.stages + "' is not R or RxC (panels of m and of n, each >= 1): e.g. 2, 2x2, or auto");
    s.stage_rows = g[0];
    s.stage_cols = g.size() == 2 ? g[1] : 1;
  }
  s.split_first_stage = !o.whole_first_stage;
  s.algo_opts.strassen_like_ok = true;  // the report and the tolerance say what ran
  s.alpha = parse_scalar(o.alpha, "--alpha");
  s.beta = parse_scalar(o.beta, "--beta");
  s.seed = parse_seed(o.seed);
  s.transa = parse_op_option(o.transa, "--transa");
  s.transb = parse_op_option(o.transb, "--transb");
  check_combinations(o, s);
  return s;
}

namespace {
// The --json file is checked before the work starts, not after it: rank 0 writes it.
void check_json(const std::string& path, const Comm& world) {
  const PathProblem problem = world.rank() == 0 ? json_file_problem(path) : PathProblem{};
  world.agree(problem.message, problem.unwritable);
}

// The JSON line to standard output for "-", else appended to the file.
void write_json(const std::string& path, const RunReport& rec) {
  if (path == "-") std::cout << to_json(rec).dump() << std::endl;
  else if (!path.empty()) append_json_line(path, to_json(rec));
}
}  // namespace

int run_command(const RunCommandOptions& o, int rank) {
  RunSpec spec = to_spec(o);
  Comm world = Comm::world();
  check_json(o.json, world);
  Progress progress(rank == 0 && !o.quiet && isatty(2), to_string(spec.algo));
  spec.progress = [&progress](int done, int total) { progress(done, total); };
  spec.repetition_started = [&progress] { progress.restart(); };
  RunReport rec = run(world, spec);
  if (rank == 0) {
    // (with --json -, standard output carries the JSON line alone)
    if ((!o.quiet || !rec.passed) && o.json != "-") print_report(rec, std::cout);
    write_json(o.json, rec);
    if (!rec.passed)
      std::cerr << "distmm: error: verification failed (residual " << rec.residual << " > "
                << rec.tolerance << ")\n";
  }
  return rec.passed ? 0 : 1;
}

}  // namespace distmm

namespace distmm {

int plan_command(const RunCommandOptions& o, int rank) {
  RunSpec spec = to_spec(o);
  Comm world = Comm::world();
  check_json(o.json, world);
  RunReport rec = plan(world, spec);
  if (rank == 0) {
    if (!o.quiet && o.json != "-") print_plan(rec, std::cout);
    write_json(o.json, rec);
  }
  return 0;
}

int plan_rank_limit(std::string& why) {
  // Each planning rank is a whole MPI process (its MPI and CUDA libraries loaded), so the
  // available memory bounds them, at a little over what one such process was measured to use
  // (docs/performance.md, "Measurements behind the code": kPerRank); 100000 of them once
  // exhausted a machine.
  constexpr int kMost = 4096;
  constexpr std::size_t kPerRank = std::size_t(128) << 20;
  int most = kMost;
  why = "plan --ranks starts that many processes here; at most " + std::to_string(kMost);
  const std::size_t by_memory = available_memory_bytes() / kPerRank;
  if (by_memory < std::size_t(most)) {
    most = static_cast<int>(std::max<std::size_t>(by_memory, 1));
    why = "plan --ranks starts that many processes here, about 128 MiB each, and " +
          format_bytes(double(available_memory_bytes())) + " is available";
  }
  struct rlimit lim;
  if (getrlimit(RLIMIT_NPROC, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < rlim_t(most)) {
    most = static_cast<int>(std::max<rlim_t>(lim.rlim_cur, 1));
    why = "plan --ranks starts that many processes here and the process limit (ulimit -u) is " +
          std::to_string(lim.rlim_cur);
  }
  why += ": plan larger runs under mpirun -n P where they will run";
  return most;
}

int plan_on_ranks(int argc, char** argv, int ranks) {
  const std::string mpirun = settings().mpirun;
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw UsageError("plan --ranks: cannot find this program's path: run it under mpirun -n P instead");
  self[len] = 0;
  std::vector<std::string> args{mpirun, "-n", std::to_string(ranks), "--oversubscribe", self};
  for (int a = 1; a < argc; ++a) {
    const std::string s = argv[a];
    if (s == "--ranks") {
      ++a;  // and its value
      continue;
    }
    if (s.rfind("--ranks=", 0) == 0) continue;
    args.push_back(s);
  }
  std::vector<char*> cargs;
  for (auto& s : args) cargs.push_back(s.data());
  cargs.push_back(nullptr);
  // Planning computes nothing: as root (containers), let Open MPI's mpirun start the ranks.
  if (geteuid() == 0) setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0), setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  MPI_Finalize();  // this singleton leaves; the planning ranks start afresh
  execvp(cargs[0], cargs.data());
  std::cerr << "distmm: error: plan --ranks " << ranks << " needs " << mpirun
            << " (not found): run it under mpirun -n " << ranks << " instead, or set DISTMM_MPIRUN\n";
  std::exit(2);
}

}  // namespace distmm
