#include "run.hpp"

#include <omp.h>
#include <sys/stat.h>

#include <cmath>

#include "../cuda/device_info.hpp"
#include "../node/blas.hpp"
#include "../src/core/json.hpp"
#include "../src/core/system.hpp"
#include "../src/core/timer.hpp"
#include "bounds.hpp"
#include "distribution.hpp"
#include "npy_io.hpp"

namespace distmm {

int default_threads() { return std::max(1, hardware_threads() / std::max(1, node_local_size())); }

const char* to_string(Verify v) {
  return v == Verify::none ? "none" : v == Verify::freivalds ? "freivalds" : "full";
}

namespace {

void validate(const RunSpec& o) {
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

const char* op_text(Op o) { return o == Op::N ? "N" : o == Op::T ? "T" : "C"; }

struct Files {
  NpyInfo a, b, c;
};

// Shapes and dtype from the input files; checks that they fit together (GEMM semantics).
void plan_from_files(RunSpec& o, const Comm& world, Files& f) {
  if (o.a_path.empty() != o.b_path.empty())
    throw UsageError("--a and --b come together: give both input files");
  if (o.a_path.empty()) {
    if (!o.c_path.empty()) throw UsageError("--c needs --a and --b");
    if (o.transa != Op::N || o.transb != Op::N)
      throw UsageError("--transa/--transb apply to --a/--b files");
    if (!o.out_path.empty()) throw UsageError("--out writes the product of --a and --b files: give them too");
    return;
  }
  if (o.out_path.empty()) throw UsageError("--a/--b need --out FILE.npy for the product");
  NpyInfo& a = f.a = npy_inspect(o.a_path, world);
  NpyInfo& b = f.b = npy_inspect(o.b_path, world);
  const bool ta = o.transa != Op::N, tb = o.transb != Op::N;
  const index_t am = ta ? a.cols : a.rows, ak = ta ? a.rows : a.cols;
  const index_t bk = tb ? b.cols : b.rows, bn = tb ? b.rows : b.cols;
  if (ak != bk)
    throw UsageError("inner dimensions differ: op(A) from " + o.a_path + " is " + std::to_string(am) +
                     " x " + std::to_string(ak) + " but op(B) from " + o.b_path + " is " +
                     std::to_string(bk) + " x " + std::to_string(bn) + ": check the files or --transa/--transb");
  if (a.dtype != b.dtype)
    throw UsageError(o.a_path + " holds " + to_string(a.dtype) + " but " + o.b_path + " holds " +
                     to_string(b.dtype) + ": convert one with numpy's astype");
  if (o.dtype && *o.dtype != a.dtype)
    throw UsageError(std::string("--dtype ") + to_string(*o.dtype) + " but the files hold " +
                     to_string(a.dtype) + ": drop --dtype or convert the files");
  o.dtype = a.dtype;
  o.m = am, o.n = bn, o.k = ak;
  // --out must not be one of the inputs: the same file, however it is named (rank 0 checks).
  std::string same;
  struct stat out_st;
  if (world.rank() == 0 && stat(o.out_path.c_str(), &out_st) == 0)
    for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--a", &o.a_path},
                                     {"--b", &o.b_path}, {"--c", &o.c_path}}) {
      struct stat in_st;
      if (same.empty() && !path->empty() && stat(path->c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
          in_st.st_ino == out_st.st_ino)
        same = "--out " + o.out_path + " is the same file as " + flag + " " + *path +
               ": choose another output path (the input would be overwritten)";
    }
  world.agree(same);
  if (!o.c_path.empty()) {
    if (o.beta == 0.0) throw UsageError("--c " + o.c_path + " is used only with --beta: add e.g. --beta 1");
    f.c = npy_inspect(o.c_path, world);
    if (f.c.rows != am || f.c.cols != bn)
      throw UsageError(o.c_path + " is " + std::to_string(f.c.rows) + " x " + std::to_string(f.c.cols) +
                       " but op(A) op(B) is " + std::to_string(am) + " x " + std::to_string(bn));
    if (f.c.dtype != a.dtype)
      throw UsageError(o.c_path + " holds " + to_string(f.c.dtype) + " but the inputs hold " +
                       to_string(a.dtype) + ": convert it with numpy's astype");
  }
}

// alpha or beta as T: the real part for real types (checked to be real before).
template <class T>
T scalar(std::complex<double> v) {
  if constexpr (is_complex_v<T>) return T(static_cast<real_t<T>>(v.real()), static_cast<real_t<T>>(v.imag()));
  else return static_cast<T>(v.real());
}

template <class T>
void run_typed(const RunSpec& o, const Comm& world, DistAlgorithm& algo, Engine& engine,
               RunReport& rec, const Files& files, NpyOutput* out, std::size_t budget) {
  const Dtype dt = dtype_of<T>();
  const bool keep_c0 = o.beta != 0.0;

  DistMatrix<T> A(o.m, o.k, algo.piece_a()), B(o.k, o.n, algo.piece_b()),
      C(o.m, o.n, algo.piece_c()), C0;
  if (!o.a_path.empty()) {
    npy_read_piece(files.a, o.transa, A, world);
    npy_read_piece(files.b, o.transb, B, world);
  } else {
    fill_random(A, o.seed, Stream::A, o.fill);
    fill_random(B, o.seed, Stream::B, o.fill);
  }
  if (keep_c0) {
    C0 = DistMatrix<T>(o.m, o.n, algo.piece_c());
    if (!o.c_path.empty()) npy_read_piece(files.c, Op::N, C0, world);
    else fill_random(C0, o.seed, Stream::C, o.fill);
  }

  // Non-finite inputs are named before any work (file coordinates for transposed files).
  struct Operand {
    const char* name;
    const DistMatrix<T>* M;
    bool transposed;
  };
  index_t nonfinite_inputs = 0;
  for (const Operand& in : {Operand{"A", &A, o.transa != Op::N}, Operand{"B", &B, o.transb != Op::N},
                            Operand{"C0", keep_c0 ? &C0 : nullptr, false}}) {
    if (!in.M) continue;
    const NonFinite nf = find_nonfinite(*in.M, world);
    if (!nf.any()) continue;
    nonfinite_inputs += nf.nans + nf.infs;
    const index_t r = in.transposed ? nf.first_col : nf.first_row, c = in.transposed ? nf.first_row : nf.first_col;
    std::string what;
    if (nf.nans) what = std::to_string(nf.nans) + " NaN" + (nf.nans > 1 ? "s" : "");
    if (nf.infs) what += (what.empty() ? "" : " and ") + std::to_string(nf.infs) + " Inf" + (nf.infs > 1 ? "s" : "");
    const std::string msg = std::string(in.name) + " has " + what + ", first at row " + std::to_string(r) +
                            ", column " + std::to_string(c) + " (counting from 0)";
    if (!o.allow_nonfinite) throw UsageError(msg + ": fix the input, or pass --allow-nonfinite");
    rec.notes.push_back(msg);
  }
  Verify verify = o.verify;
  if (nonfinite_inputs > 0 && verify == Verify::freivalds) {
    // Freivalds' sums of products turn any NaN or Inf into NaN: only the full comparison, by
    // position, can check such a product.
    if (double(verify_full_bytes(o.m, o.n, o.k, dt)) > double(budget))
      throw UsageError("the inputs hold NaN or Inf and Freivalds' check cannot verify such a product; "
                       "--verify full needs " + format_bytes(double(verify_full_bytes(o.m, o.n, o.k, dt))) +
                       " on rank 0: use --verify none, or smaller inputs");
    verify = Verify::full;
    rec.notes.push_back("non-finite inputs: verified in full (NaN/Inf positions against the reference's) "
                        "instead of by Freivalds' check");
  }

  const T alpha = scalar<T>(o.alpha), beta = scalar<T>(o.beta);
  CommCounters counted;
  for (int r = -o.warmup; r < o.repeat; ++r) {
    if (keep_c0) std::copy(C0.local.data(), C0.local.data() + C0.local.size(), C.local.data());
    comm_counters() = CommCounters{};
    if (o.repetition_started) o.repetition_started();
    world.barrier();
    double t0 = MPI_Wtime();
    algo.multiply(engine, alpha, A.local, B.local, beta, C.local);
    double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    counted = comm_counters();
    if (r >= 0) rec.times.push_back(t);
  }

  // Phase times of the last repetition, max and mean over ranks (same names on every rank).
  {
    std::vector<double> t = algo.phase_seconds();
    const std::vector<std::string> names = algo.phase_names();
    t.resize(names.size(), 0.0);
    std::vector<double> mx = t, sum = t;
    if (!t.empty()) {
      MPI_Allreduce(t.data(), mx.data(), int(t.size()), MPI_DOUBLE, MPI_MAX, world.get());
      MPI_Allreduce(t.data(), sum.data(), int(t.size()), MPI_DOUBLE, MPI_SUM, world.get());
    }
    for (std::size_t i = 0; i < names.size(); ++i) rec.phases.push_back({names[i], mx[i], sum[i] / world.size()});
  }

  // Measured communication of the last repetition: max and mean over ranks.
  double mine[2] = {double(counted.words_sent), double(counted.messages_sent)}, sum[2], mx[2];
  MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, world.get());
  MPI_Allreduce(mine, mx, 2, MPI_DOUBLE, MPI_MAX, world.get());
  rec.words_max = mx[0], rec.messages_max = mx[1];
  rec.words_mean = sum[0] / world.size(), rec.messages_mean = sum[1] / world.size();

  // The tolerance follows what ran: the engine's levels on every rank (the largest counts) and
  // the algorithm's Strassen-like steps; one value, shared, so every rank decides alike.
  rec.engine_levels_run = world.allreduce_max_uncounted(engine.levels_run());
  const double growth = world.allreduce_max_uncounted(engine.error_growth()) * algo.error_growth();
  rec.error_growth = growth;
  if (verify != Verify::none) {
    double tol = verify_tolerance(dt, o.k, growth);
    VerifyResult v =
        verify == Verify::full
            ? verify_full(A, B, C, alpha, beta, keep_c0 ? &C0 : nullptr, tol, world)
            : verify_freivalds(A, B, C, alpha, beta, keep_c0 ? &C0 : nullptr, o.trials,
                               o.seed + 1000003, tol, world);
    rec.verify = v.method;
    rec.residual = v.residual;
    rec.tolerance = v.tolerance;
    rec.rel_frobenius = v.rel_frobenius;
    rec.max_abs = v.max_abs;
    rec.passed = !world.any(!v.passed);  // one collective verdict
    if (v.nonfinite_matched > 0)
      rec.notes.push_back(std::to_string(v.nonfinite_matched) +
                          " NaN/Inf entries of C, each where the reference has one (compared by position)");
  }
  // The product reaches its file only when verified (or unverified by request).
  if (out && rec.passed) {
    out->write(C);
    out->commit();
  }
}

}  // namespace

namespace {

// Everything a run decides before it allocates its matrices: checks, engine, algorithm, memory
// plan and the report's static fields. plan() stops here; run() goes on.
struct Prepared {
  RunSpec o;
  Files files;
  Dtype dt = Dtype::f64;
  std::size_t budget = 0;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<DistAlgorithm> algo;
  RunReport rec;
};

Prepared prepare(const Comm& world, RunSpec o) {
  Prepared pr;
  Files& files = pr.files;
  plan_from_files(o, world, files);
  validate(o);
  const Dtype dt = o.dtype.value_or(Dtype::f64);
  const EngineInfo& einfo = o.engine ? *o.engine : engine_info("blas");
  if (!is_complex(dt) && (o.alpha.imag() != 0 || o.beta.imag() != 0))
    throw UsageError(std::string("--alpha/--beta have an imaginary part but the dtype is ") +
                     to_string(dt) + ": use --dtype c32 or c64, or real scalars");
  const bool engine_used = o.algo != Algorithm::scalapack;
  if (engine_used && !einfo.dtypes.contains(dt))
    throw UsageError("engine '" + einfo.name + "' supports " + einfo.dtypes.names() + ", not " +
                     to_string(dt) + ": use --engine blas or --dtype " +
                     to_string(*std::find_if(kAllDtypes.begin(), kAllDtypes.end(),
                                             [&](Dtype d) { return einfo.dtypes.contains(d); })));
  const int P = world.size();

  // Refuse what cannot fit before anything is allocated, on every rank alike.
  const std::size_t budget =
      o.mem_limit ? *o.mem_limit : available_memory_bytes() / std::max(1, node_local_size());
  double least = (double(o.m) * o.k + double(o.k) * o.n + double(o.m) * o.n) * size_of(dt) / P;
  if (least > double(budget))
    throw UsageError("the operands alone need " + format_bytes(least) + " per rank but " +
                     format_bytes(double(budget)) +
                     " is available per rank: use more ranks, smaller sizes or a larger --mem-limit");

  o.engine_opts.threads = o.threads > 0 ? o.threads : default_threads();
  omp_set_num_threads(o.engine_opts.threads);
  blas_set_threads(o.engine_opts.threads);
  o.engine_opts.device = node_local_rank();  // ranks of a node spread over its GPUs
  auto engine = einfo.make(o.engine_opts);
  o.algo_opts.engine = engine.get();
  o.algo_opts.dtype = dt;
  if (o.mem_limit) o.algo_opts.mem_limit = budget;
  auto algo = make_algorithm(o.algo, world, {o.m, o.n, o.k}, o.algo_opts);

  double peak = double(algo->peak_bytes(dt, *engine));
  if (o.beta != 0.0) peak += double(algo->piece_c().rows()) * algo->piece_c().cols() * size_of(dt);
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
  if (o.verify == Verify::full && double(verify_full_bytes(o.m, o.n, o.k, dt)) > double(budget))
    throw UsageError("--verify full gathers the matrices on rank 0 and needs " +
                     format_bytes(double(verify_full_bytes(o.m, o.n, o.k, dt))) +
                     ": use --verify freivalds for this size");

  RunReport rec;
  rec.algo = algo->name();
  rec.layout = algo->layout();
  rec.selection = algo->selection();
  rec.engine = algo->uses_engine() ? engine->name() : "scalapack-internal";
  rec.dtype = to_string(dt);
  rec.m = o.m, rec.n = o.n, rec.k = o.k;
  rec.alpha = o.alpha, rec.beta = o.beta;
  rec.ranks = P;
  rec.threads = o.engine_opts.threads;
  rec.repeat = o.repeat;
  rec.warmup = o.warmup;
  rec.seed = o.seed;
  rec.inputs = o.fill == Fill::integer ? "random integers" : "random uniform [-1,1)";
  if (is_complex(dt)) rec.inputs += " (real and imaginary parts)";
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

  if (!o.a_path.empty()) rec.inputs = o.a_path + ", " + o.b_path + (o.c_path.empty() ? "" : ", " + o.c_path);
  rec.transa = op_text(o.transa);
  rec.transb = op_text(o.transb);
  rec.flops_max = est.flops_max;
  pr.o = std::move(o);
  pr.dt = dt;
  pr.budget = budget;
  pr.engine = std::move(engine);
  pr.algo = std::move(algo);
  pr.rec = std::move(rec);
  return pr;
}

}  // namespace

RunReport plan(const Comm& world, RunSpec spec) {
  Prepared pr = prepare(world, std::move(spec));
  RunReport& rec = pr.rec;
  // What the run would measure: the algorithm's exact counts for this layout.
  rec.planned = true;
  rec.words_max = rec.analytic_words_max, rec.words_mean = rec.analytic_words_mean;
  rec.messages_max = rec.analytic_messages_max;
  rec.engine_detail = pr.algo->uses_engine() ? pr.engine->describe() : "ScaLAPACK's own BLAS calls";
  rec.verify = "none (plan: nothing computed)";
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
  return rec;
}

RunReport run(const Comm& world, RunSpec spec) {
  Prepared pr = prepare(world, std::move(spec));
  const RunSpec& o = pr.o;
  const Dtype dt = pr.dt;
  const std::size_t budget = pr.budget;
  Engine* engine = pr.engine.get();
  DistAlgorithm* algo = pr.algo.get();
  RunReport& rec = pr.rec;
  Files& files = pr.files;
  std::unique_ptr<NpyOutput> out;
  if (!o.out_path.empty()) out = std::make_unique<NpyOutput>(o.out_path, world);
  if (o.progress) algo->set_progress(o.progress);
  dispatch(dt, [&](auto tag) {
    run_typed<typename decltype(tag)::type>(o, world, *algo, *engine, rec, files, out.get(), budget);
  });
  // After the multiply: what the engine chose and ran.
  rec.engine_detail = algo->uses_engine() ? engine->describe()
                                          : "P" + std::string(1, char(std::toupper(info(dt).blas_letter))) +
                                                "GEMM's own BLAS calls (OpenBLAS, " +
                                                std::to_string(o.engine_opts.threads) + " threads)";
  rec.time_min = *std::min_element(rec.times.begin(), rec.times.end());
  rec.time_median = median(rec.times);
  // Real flops: a complex multiply-add is 8 of them.
  rec.gflops = (is_complex(dt) ? 8.0 : 2.0) * double(o.m) * o.n * o.k / rec.time_median / 1e9;
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
  return std::move(rec);
}

nlohmann::json to_json(const RunReport& r) {
  auto scalar = [](std::complex<double> v) {
    return v.imag() == 0 ? nlohmann::json(v.real()) : nlohmann::json::array({v.real(), v.imag()});
  };
  nlohmann::json j;
  j["algo"] = r.algo;
  j["layout"] = r.layout;
  j["selection"] = r.selection;
  j["engine"] = r.engine;
  j["engine_detail"] = r.engine_detail;
  j["dtype"] = r.dtype;
  j["inputs"] = r.inputs;
  j["output"] = r.output;
  j["m"] = r.m;
  j["n"] = r.n;
  j["k"] = r.k;
  j["alpha"] = scalar(r.alpha);
  j["beta"] = scalar(r.beta);
  j["transa"] = r.transa;
  j["transb"] = r.transb;
  j["ranks"] = r.ranks;
  j["threads"] = r.threads;
  j["repeat"] = r.repeat;
  j["warmup"] = r.warmup;
  j["seed"] = r.seed;
  j["times"] = r.times;
  j["time_min"] = r.time_min;
  j["time_median"] = r.time_median;
  j["gflops"] = r.gflops;
  j["planned"] = r.planned;
  j["flops_max"] = r.flops_max;
  j["words_measured"] = r.words_measured;
  j["words_max"] = r.words_max;
  j["words_mean"] = r.words_mean;
  j["messages_max"] = r.messages_max;
  j["messages_mean"] = r.messages_mean;
  j["analytic_words_max"] = r.analytic_words_max;
  j["analytic_words_mean"] = r.analytic_words_mean;
  j["analytic_messages_max"] = r.analytic_messages_max;
  j["lower_bound_words"] = r.lower_bound_words;
  j["lower_bound"] = r.lower_bound;
  j["words_over_bound"] = r.lower_bound_words > 0
                              ? (r.words_measured ? r.words_max : r.analytic_words_max) / r.lower_bound_words
                              : 0.0;
  j["peak_bytes"] = r.peak_bytes;
  j["engine_levels_run"] = r.engine_levels_run;
  j["error_growth"] = r.error_growth;
  j["verify"] = r.verify;
  j["residual"] = r.residual;
  j["tolerance"] = r.tolerance;
  j["rel_frobenius"] = r.rel_frobenius;
  j["max_abs"] = r.max_abs;
  j["passed"] = r.passed;
  j["notes"] = r.notes;
  j["phases"] = nlohmann::json::object();
  for (const auto& p : r.phases) j["phases"][p.name] = {{"max", p.max}, {"mean", p.mean}};
  j["host"] = r.host;
  j["time_stamp"] = r.time_stamp;
  return j;
}

}  // namespace distmm
