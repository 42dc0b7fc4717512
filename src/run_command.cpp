#include "run_command.hpp"

#include <omp.h>

#include <unistd.h>

#include <iostream>

#include "../cuda/device_info.hpp"
#include "../mpi/bounds.hpp"
#include "../mpi/comm.hpp"
#include "../mpi/distribution.hpp"
#include "../mpi/npy_io.hpp"
#include "../mpi/verify.hpp"
#include "../node/blas.hpp"
#include "report.hpp"
#include "system.hpp"
#include "timer.hpp"

namespace distmm {

int default_threads() { return std::max(1, hardware_threads() / std::max(1, node_local_size())); }

namespace {

void validate(const RunOptions& o) {
  auto dim = [](const char* name, index_t v) {
    if (v < 1)
      throw UsageError(std::string("--") + name + " must be at least 1, got " + std::to_string(v));
    if (v > INT32_MAX)
      throw UsageError(std::string("--") + name + " " + std::to_string(v) +
                       " exceeds 2^31-1, the largest dimension BLAS takes: use a smaller size");
  };
  dim("m", o.m), dim("n", o.n), dim("k", o.k);
  if (o.repeat < 1) throw UsageError("--repeat must be at least 1");
  if (o.warmup < 0) throw UsageError("--warmup must be 0 or more");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  if (o.threads < 0) throw UsageError("--threads must be 1 or more (0 = automatic)");
}

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

// Shapes and dtype from the input files; checks that they fit together (GEMM semantics).
void plan_from_files(RunOptions& o, const Comm& world, NpyInfo& a, NpyInfo& b, NpyInfo& c) {
  if (o.a_path.empty() != o.b_path.empty())
    throw UsageError("--a and --b come together: give both input files");
  if (o.a_path.empty()) {
    if (!o.c_path.empty()) throw UsageError("--c needs --a and --b");
    if (o.transa || o.transb) throw UsageError("--transa/--transb apply to --a/--b files");
    return;
  }
  if (o.out_path.empty()) throw UsageError("--a/--b need --out FILE.npy for the product");
  a = npy_inspect(o.a_path, world);
  b = npy_inspect(o.b_path, world);
  const index_t am = o.transa ? a.cols : a.rows, ak = o.transa ? a.rows : a.cols;
  const index_t bk = o.transb ? b.cols : b.rows, bn = o.transb ? b.rows : b.cols;
  if (ak != bk)
    throw UsageError("inner dimensions differ: op(A) from " + o.a_path + " is " + std::to_string(am) +
                     " x " + std::to_string(ak) + " but op(B) from " + o.b_path + " is " +
                     std::to_string(bk) + " x " + std::to_string(bn) + ": check the files or --transa/--transb");
  if (a.dtype != b.dtype)
    throw UsageError(o.a_path + " holds " + to_string(a.dtype) + " but " + o.b_path + " holds " +
                     to_string(b.dtype) + ": convert one with numpy's astype");
  if (!o.dtype.empty() && o.dtype != to_string(a.dtype))
    throw UsageError("--dtype " + o.dtype + " but the files hold " + to_string(a.dtype) +
                     ": drop --dtype or convert the files");
  o.dtype = to_string(a.dtype);
  o.m = am, o.n = bn, o.k = ak;
  if (!o.c_path.empty()) {
    if (o.beta == 0) throw UsageError("--c " + o.c_path + " is used only with --beta: add e.g. --beta 1");
    c = npy_inspect(o.c_path, world);
    if (c.rows != am || c.cols != bn)
      throw UsageError(o.c_path + " is " + std::to_string(c.rows) + " x " + std::to_string(c.cols) +
                       " but op(A) op(B) is " + std::to_string(am) + " x " + std::to_string(bn));
    if (c.dtype != a.dtype)
      throw UsageError(o.c_path + " holds " + to_string(c.dtype) + " but the inputs hold " +
                       to_string(a.dtype) + ": convert it with numpy's astype");
  }
}

std::size_t memory_budget(const RunOptions& o) {
  if (!o.mem_limit.empty()) return parse_bytes(o.mem_limit, "--mem-limit");
  return available_memory_bytes() / std::max(1, node_local_size());
}

struct Inputs {
  NpyInfo a, b, c;
  NpyOutput* out = nullptr;
  Progress* progress = nullptr;
};

template <class T>
int run_typed(const RunOptions& o, const Comm& world, DistAlgorithm& algo, Engine& engine,
              RunRecord& rec, Inputs& in) {
  const Dtype dt = dtype_of<T>();
  const Fill fill = o.fill == "integer" ? Fill::integer : Fill::uniform;
  const bool keep_c0 = o.beta != 0;

  DistMatrix<T> A(o.m, o.k, algo.piece_a()), B(o.k, o.n, algo.piece_b()),
      C(o.m, o.n, algo.piece_c()), C0;
  const bool files = !o.a_path.empty();
  if (files) {
    npy_read_piece(in.a, o.transa, A, world);
    npy_read_piece(in.b, o.transb, B, world);
  } else {
    fill_random(A, o.seed, Stream::A, fill);
    fill_random(B, o.seed, Stream::B, fill);
  }
  if (keep_c0) {
    C0 = DistMatrix<T>(o.m, o.n, algo.piece_c());
    if (!o.c_path.empty()) npy_read_piece(in.c, false, C0, world);
    else fill_random(C0, o.seed, Stream::C, fill);
  }

  const T alpha = static_cast<T>(o.alpha), beta = static_cast<T>(o.beta);
  CommCounters counted;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (keep_c0) std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
    comm_counters() = CommCounters{};
    if (in.progress) in.progress->restart();
    world.barrier();
    double t0 = MPI_Wtime();
    algo.multiply(engine, alpha, A.local, B.local, beta, C.local);
    double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (r >= 0) rec.times.push_back(t);
  }

  // Measured communication of the last repetition: max and mean over ranks.
  double mine[2] = {double(counted.words_sent), double(counted.messages_sent)}, sum[2], mx[2];
  MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, world.get());
  MPI_Allreduce(mine, mx, 2, MPI_DOUBLE, MPI_MAX, world.get());
  rec.words_max = mx[0], rec.messages_max = mx[1];
  rec.words_mean = sum[0] / world.size(), rec.messages_mean = sum[1] / world.size();

  const double growth = engine.error_growth() * algo.error_growth();
  if (o.verify != "none") {
    double tol = verify_tolerance(dt, o.k, growth);
    VerifyResult v =
        o.verify == "full"
            ? verify_full(A, B, C, alpha, beta, keep_c0 ? &C0 : nullptr, tol, world)
            : verify_freivalds(A, B, C, alpha, beta, keep_c0 ? &C0 : nullptr, o.trials,
                               o.seed + 1000003, tol, world);
    rec.verify = v.method;
    rec.residual = v.residual;
    rec.tolerance = v.tolerance;
    rec.rel_frobenius = v.rel_frobenius;
    rec.max_abs = v.max_abs;
    rec.passed = v.passed;
  }
  // The product reaches its file only when verified (or unverified by request).
  if (in.out && rec.passed) {
    in.out->write(C);
    in.out->commit();
  }
  return rec.passed ? 0 : 1;
}

}  // namespace

int run_command(RunOptions o) {
  Comm world = Comm::world();
  Inputs in;
  plan_from_files(o, world, in.a, in.b, in.c);
  if (o.dtype.empty()) o.dtype = "f64";
  validate(o);
  if (!o.out_path.empty() && o.a_path.empty())
    throw UsageError("--out writes the product of --a and --b files: give them too");
  if (o.dtype != "f32" && o.dtype != "f64")
    throw UsageError("unknown --dtype '" + o.dtype + "': use f32 or f64");
  if (o.verify != "none" && o.verify != "freivalds" && o.verify != "full")
    throw UsageError("unknown --verify '" + o.verify + "': use none, freivalds or full");
  if (o.fill != "uniform" && o.fill != "integer")
    throw UsageError("unknown --fill '" + o.fill + "': use uniform or integer");
  const Dtype dt = o.dtype == "f32" ? Dtype::f32 : Dtype::f64;
  const int P = world.size();

  // Refuse what cannot fit before anything is allocated, on every rank alike.
  std::size_t budget = memory_budget(o);
  double least = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n) * size_of(dt) / P;
  if (least > double(budget))
    throw UsageError("the operands alone need " + format_bytes(least) + " per rank but " +
                     format_bytes(double(budget)) +
                     " is available per rank: use more ranks, smaller sizes or a larger --mem-limit");

  o.engine_opts.threads = o.threads > 0 ? o.threads : default_threads();
  omp_set_num_threads(o.engine_opts.threads);
  blas_set_threads(o.engine_opts.threads);
  if (o.levels != "auto" && (o.levels.empty() || o.levels.find_first_not_of("0123456789") != std::string::npos ||
                             o.levels.size() > 2))
    throw UsageError("--levels '" + o.levels + "' is not a level count: use 0 to 10, or auto");
  o.engine_opts.levels = o.levels == "auto" ? -1 : std::stoi(o.levels);
  o.engine_opts.device = node_local_rank();  // ranks of a node spread over its GPUs
  auto engine = make_engine(o.engine, o.engine_opts);
  o.algo_opts.engine = engine.get();
  o.algo_opts.dtype = dt;
  if (!o.mem_limit.empty()) o.algo_opts.mem_limit = budget;
  auto algo = make_algorithm(o.algo, world, {o.m, o.n, o.k}, o.algo_opts);

  double peak = double(algo->peak_bytes(dt, *engine));
  if (o.beta != 0) peak += double(algo->piece_c().rows()) * algo->piece_c().cols() * size_of(dt);
  peak = world.allreduce_max_uncounted(peak);
  if (peak > double(budget)) {
    const int ranks = static_cast<int>(std::ceil(P * peak / double(budget)));
    std::string alt = algo->name() == "caps" ? ", DFS steps (--caps-steps D...)" : "";
    if (engine->workspace_bytes(1024, 1024, 1024, dt) > 0) alt += ", --engine strassen-lowmem or blas";
    throw UsageError("the run needs about " + format_bytes(peak) + " per rank (" + algo->name() +
                     ", " + engine->name() + ") but " + format_bytes(double(budget)) +
                     " is available per rank: use about " + std::to_string(ranks) + " ranks" + alt +
                     ", smaller sizes or a larger --mem-limit");
  }
  // Per GPU: the ranks of a node share its GPUs; each rank's largest local call must fit.
  if (engine->device_free_bytes() > 0) {
    const index_t lm = algo->piece_c().rows(), ln = algo->piece_c().cols(),
                  lk = std::max(algo->piece_a().cols(), algo->piece_b().rows());
    const int gpus = std::max(1, gpu_count());
    const double per_gpu = double(engine->device_bytes(lm, ln, lk, dt)) *
                           std::ceil(double(node_local_size()) / gpus);
    const double need = world.allreduce_max_uncounted(per_gpu);
    if (need > double(engine->device_free_bytes()))
      throw UsageError("the " + engine->name() + " engine needs about " + format_bytes(need) +
                       " per GPU but " + format_bytes(double(engine->device_free_bytes())) +
                       " is free: use more ranks or GPUs, fewer --levels, or --engine gpu-strassen-lowmem");
  }
  if (o.verify == "full" && double(verify_full_bytes(o.m, o.n, o.k)) > double(budget))
    throw UsageError("--verify full gathers the matrices on rank 0 and needs " +
                     format_bytes(double(verify_full_bytes(o.m, o.n, o.k))) +
                     ": use --verify freivalds for this size");

  RunRecord rec;
  rec.algo = algo->name();
  rec.layout = algo->layout();
  rec.engine = algo->uses_engine() ? engine->name() : "scalapack-internal";
  rec.engine_detail = algo->uses_engine() ? engine->describe()
                                          : "PDGEMM's own BLAS calls (OpenBLAS, " +
                                                std::to_string(o.engine_opts.threads) + " threads)";
  rec.dtype = o.dtype;
  rec.m = o.m, rec.n = o.n, rec.k = o.k;
  rec.alpha = o.alpha, rec.beta = o.beta;
  rec.ranks = P;
  rec.threads = o.engine_opts.threads;
  rec.repeat = o.repeat;
  rec.warmup = o.warmup;
  rec.seed = o.seed;
  rec.inputs = o.fill == "integer" ? "random integers" : "random uniform [-1,1)";
  rec.output = o.out_path;
  rec.peak_bytes = peak;
  rec.words_measured = algo->counts_words();
  CommEstimate est = algo->analytic();
  rec.analytic_words_max = est.words_max;
  rec.analytic_words_mean = est.words_mean;
  rec.analytic_messages_max = est.messages_max;
  LowerBound lb = algo->strassen_like()
                      ? strassen_lower_bound(std::max({o.m, o.n, o.k}), P, peak / size_of(dt))
                      : classical_lower_bound(o.m, o.n, o.k, P, peak / size_of(dt));
  rec.lower_bound_words = lb.words;
  rec.lower_bound = lb.which;

  std::unique_ptr<NpyOutput> out;
  if (!o.out_path.empty()) out = std::make_unique<NpyOutput>(o.out_path, world);
  in.out = out.get();
  Progress progress(world.rank() == 0 && !o.quiet && isatty(2), algo->name());
  in.progress = &progress;
  algo->set_progress([&progress](int done, int total) { progress(done, total); });
  if (!o.a_path.empty()) rec.inputs = o.a_path + ", " + o.b_path + (o.c_path.empty() ? "" : ", " + o.c_path);
  rec.transa = o.transa ? "T" : "N";
  rec.transb = o.transb ? "T" : "N";
  int code = dt == Dtype::f32 ? run_typed<float>(o, world, *algo, *engine, rec, in)
                              : run_typed<double>(o, world, *algo, *engine, rec, in);
  rec.time_min = *std::min_element(rec.times.begin(), rec.times.end());
  rec.time_median = median(rec.times);
  rec.gflops = 2.0 * double(o.m) * o.n * o.k / rec.time_median / 1e9;
  rec.host = host_name();
  rec.time_stamp = iso_time_now();

  if (world.rank() == 0) {
    if (!o.quiet || !rec.passed) print_report(rec, std::cout);
    if (!o.json.empty()) append_json_line(o.json, to_json(rec));
    if (!rec.passed)
      std::cerr << "distmm: error: verification failed (residual " << rec.residual << " > "
                << rec.tolerance << ")\n";
  }
  return code;
}

}  // namespace distmm
