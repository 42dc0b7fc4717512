#include "run_command.hpp"

#include <omp.h>

#include <iostream>

#include "../mpi/bounds.hpp"
#include "../mpi/comm.hpp"
#include "../mpi/distribution.hpp"
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

std::size_t memory_budget(const RunOptions& o) {
  if (!o.mem_limit.empty()) return parse_bytes(o.mem_limit, "--mem-limit");
  return available_memory_bytes() / std::max(1, node_local_size());
}

template <class T>
int run_typed(const RunOptions& o, const Comm& world, DistAlgorithm& algo, Engine& engine,
              RunRecord& rec) {
  const Dtype dt = dtype_of<T>();
  const Fill fill = o.fill == "integer" ? Fill::integer : Fill::uniform;
  const bool keep_c0 = o.beta != 0;

  DistMatrix<T> A(o.m, o.k, algo.piece_a()), B(o.k, o.n, algo.piece_b()),
      C(o.m, o.n, algo.piece_c()), C0;
  fill_random(A, o.seed, Stream::A, fill);
  fill_random(B, o.seed, Stream::B, fill);
  if (keep_c0) {
    C0 = DistMatrix<T>(o.m, o.n, algo.piece_c());
    fill_random(C0, o.seed, Stream::C, fill);
  }

  const T alpha = static_cast<T>(o.alpha), beta = static_cast<T>(o.beta);
  CommCounters counted;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (keep_c0) std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
    comm_counters() = CommCounters{};
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
  return rec.passed ? 0 : 1;
}

}  // namespace

int run_command(RunOptions o) {
  validate(o);
  Comm world = Comm::world();
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
  if (peak > double(budget))
    throw UsageError("the run needs about " + format_bytes(peak) + " per rank (" + algo->name() +
                     ", " + engine->name() + ") but " + format_bytes(double(budget)) +
                     " is available per rank: use more ranks, smaller sizes or a larger --mem-limit");
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

  int code = dt == Dtype::f32 ? run_typed<float>(o, world, *algo, *engine, rec)
                              : run_typed<double>(o, world, *algo, *engine, rec);
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
