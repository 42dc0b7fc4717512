// `distmm layout-bench`: MultiplyPlan (mpi/api) on matrices already laid out as callers hold
// them, against ScaLAPACK's P?GEMM on the very same local arrays (issue 41). A, B and C are all
// block-cyclic (nb x nb blocks on an R x C grid), all row slabs or all column slabs; ScaLAPACK
// sees a slab layout as block-cyclic on a P x 1 (1 x P) grid with one block of ceil(d / P) per
// rank along each dimension d, so the slabs are cut that way (the last ones shorter, some
// perhaps empty). One plan; then each repetition runs our execute and PDGEMM in turn on the
// same inputs, so that a drift of the machine hits both alike, each timed from a barrier to
// the busiest rank's end. Checked once, after the timed repetitions (beta = 0: every repetition
// writes the same C): our C against PDGEMM's, or Freivalds' check with --no-pdgemm. Rank 0
// prints a short report and one `layout-bench {json}` line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "../../mpi/algorithms/scalapack.hpp"
#include "../../mpi/api/multiply.hpp"
#include "../../mpi/run/verify.hpp"
#include "../../mpi/runtime/distribution.hpp"
#include "../core/json.hpp"
#include "../core/system.hpp"
#include "../core/timer.hpp"
#include "commands.hpp"

namespace distmm {

bool LayoutBenchOptions::given(const std::string& flag) const { return app && app->count(flag) > 0; }

void add_layout_bench_options(CLI::App& app, LayoutBenchOptions& o) {
  o.app = &app;
  const CLI::Range dimension(1LL, static_cast<long long>(INT32_MAX));  // ScaLAPACK takes int sizes
  app.add_option("--size", o.size, "Sets m, n and k at once (default 1024)")->check(dimension);
  app.add_option("--m", o.m, "Rows of A and C")->check(dimension);
  app.add_option("--n", o.n, "Columns of B and C")->check(dimension);
  app.add_option("--k", o.k, "Columns of A, rows of B")->check(dimension);
  app.add_option("--dtype", o.dtype, "f64|f32")->capture_default_str();
  app.add_option("--layout", o.layout,
                 "Layout of A, B and C: block-cyclic (--nb, --grid) | row-slabs | col-slabs")
      ->capture_default_str();
  app.add_option("--nb", o.nb, "Block size of the block-cyclic layout")->capture_default_str()->check(dimension);
  app.add_option("--grid", o.grid, "Process grid RxC of the block-cyclic layout, R * C = ranks (default: the squarest)");
  app.add_option("--algo", o.algo, "distmm's algorithm: " + joined(algorithm_names()))->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed repetitions first")->capture_default_str()->check(CLI::Range(0, 1000000));
  app.add_option("--repeat", o.repeat, "Timed repetitions")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_flag("--no-pdgemm", o.no_pdgemm, "Ours alone, checked by Freivalds' test instead of against PDGEMM");
  app.add_option("--json", o.json, "Append the JSON line to this file too");
}

namespace {

// One matrix as ScaLAPACK describes it: rows x cols in mb x nb blocks dealt over an nprow x npcol
// grid from process (0, 0); rank = prow * npcol + pcol.
struct Geometry {
  index_t rows = 0, cols = 0, mb = 1, nb = 1;
  int nprow = 1, npcol = 1;
};

Piece piece_of(const Geometry& g, int rank) {
  Piece p;
  p.row_runs = Piece::cyclic_runs(g.rows, g.mb, rank / g.npcol, g.nprow);
  p.col_runs = Piece::cyclic_runs(g.cols, g.nb, rank % g.npcol, g.npcol);
  return p;
}

// The same matrix as the new API takes it: ScaLAPACK's own layout, or slabs of the blocks' sizes.
Layout layout_of(const Geometry& g, const std::string& kind, int P) {
  std::vector<index_t> sizes(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) {
    const Piece p = piece_of(g, r);
    sizes[std::size_t(r)] = kind == "row-slabs" ? p.rows() : p.cols();
  }
  if (kind == "row-slabs") return Layout::row_slabs(g.rows, g.cols, sizes);
  if (kind == "col-slabs") return Layout::col_slabs(g.rows, g.cols, sizes);
  return Layout::block_cyclic(g.rows, g.cols, g.mb, g.nb, g.nprow, g.npcol);
}

// The squarest R x C = P, R <= C.
std::pair<int, int> squarest_grid(int P) {
  int r = 1;
  for (int d = 1; d * d <= P; ++d)
    if (P % d == 0) r = d;
  return {r, P / r};
}

// The options checked and turned into the problem; UsageError (alike on every rank) otherwise.
struct Problem {
  GemmShape shape;
  Dtype dtype = Dtype::f64;
  Algorithm algo = Algorithm::automatic;
  int nprow = 1, npcol = 1;
  Geometry a, b, c;
};

Problem to_problem(const LayoutBenchOptions& o, int P) {
  Problem pr;
  if (o.given("--size"))
    for (const char* f : {"--m", "--n", "--k"})
      if (o.given(f))
        throw UsageError(std::string("--size and ") + f + " both set the shape: give --size alone or --m/--n/--k");
  const index_t s = o.given("--size") ? o.size : 1024;
  pr.shape = {o.given("--m") ? o.m : s, o.given("--n") ? o.n : s, o.given("--k") ? o.k : s};
  if (o.dtype == "f64") pr.dtype = Dtype::f64;
  else if (o.dtype == "f32") pr.dtype = Dtype::f32;
  else throw UsageError("unknown --dtype '" + o.dtype + "': use f64 or f32");
  const auto algo = parse_algorithm(o.algo);
  if (!algo) throw UsageError("unknown --algo '" + o.algo + "': use one of " + joined(algorithm_names(), ", "));
  pr.algo = *algo;
  const bool cyclic = o.layout == "block-cyclic";
  if (!cyclic && o.layout != "row-slabs" && o.layout != "col-slabs")
    throw UsageError("unknown --layout '" + o.layout + "': use block-cyclic, row-slabs or col-slabs");
  for (const char* f : {"--nb", "--grid"})
    if (o.given(f) && !cyclic)
      throw UsageError(std::string(f) + " applies only to --layout block-cyclic, not " + o.layout + ": drop " + f);
  const auto [m, n, k] = pr.shape;
  if (cyclic) {
    std::tie(pr.nprow, pr.npcol) = squarest_grid(P);
    if (o.given("--grid")) {
      const std::vector<int> g = parse_counts(o.grid);
      if (g.size() != 2 || index_t(g[0]) * g[1] != P)
        throw UsageError("--grid '" + o.grid + "' is not RxC with R * C = " + std::to_string(P) +
                         " ranks: e.g. " + std::to_string(pr.nprow) + "x" + std::to_string(pr.npcol));
      pr.nprow = g[0], pr.npcol = g[1];
    }
    pr.a = {m, k, o.nb, o.nb, pr.nprow, pr.npcol};
    pr.b = {k, n, o.nb, o.nb, pr.nprow, pr.npcol};
    pr.c = {m, n, o.nb, o.nb, pr.nprow, pr.npcol};
  } else {
    // Every dimension d in blocks of ceil(d / P): along the split one block per rank, along the
    // other the blocks only set PDGEMM's panels (one process holds them all).
    const auto block = [P](index_t d) { return (d + P - 1) / P; };
    const bool rows = o.layout == "row-slabs";
    pr.nprow = rows ? P : 1, pr.npcol = rows ? 1 : P;
    pr.a = {m, k, block(m), block(k), pr.nprow, pr.npcol};
    pr.b = {k, n, block(k), block(n), pr.nprow, pr.npcol};
    pr.c = {m, n, block(m), block(n), pr.nprow, pr.npcol};
  }
  return pr;
}

// Per repetition, the busiest rank's seconds.
struct Times {
  std::vector<double> ours, in, multiply, out, pdgemm;
};

nlohmann::json moved_json(const MovedWords& w) {
  return {{"a", w.a}, {"b", w.b}, {"c", w.c}, {"total", w.total()}};
}

template <class T>
int bench(const LayoutBenchOptions& o, const Problem& pr, const Comm& world, std::ostream& os) {
  const int P = world.size(), me = world.rank();
  const auto [m, n, k] = pr.shape;
  const bool pdgemm = !o.no_pdgemm;
  const std::uint64_t seed = 42;
  DistMatrix<T> A(m, k, piece_of(pr.a, me)), B(k, n, piece_of(pr.b, me)), C(m, n, piece_of(pr.c, me)), C_pdgemm;
  fill_random(A, seed, Stream::A, Fill::uniform);
  fill_random(B, seed, Stream::B, Fill::uniform);
  if (pdgemm) C_pdgemm = DistMatrix<T>(m, n, C.piece);

  MultiplyOptions mo;
  mo.algorithm = pr.algo;
  MultiplyPlan plan(world, dtype_of<T>(), Op::N, layout_of(pr.a, o.layout, P), Op::N, layout_of(pr.b, o.layout, P),
                    layout_of(pr.c, o.layout, P), mo);

  std::optional<BlacsGrid> grid;
  ScalapackDesc da{}, db{}, dc{};
  if (pdgemm) {
    grid.emplace(world, pr.nprow, pr.npcol);
    if (grid->row() != me / pr.npcol || grid->col() != me % pr.npcol)
      throw std::logic_error("layout-bench: BLACS placed rank " + std::to_string(me) + " elsewhere than row-major");
    da = scalapack_desc(*grid, m, k, pr.a.mb, pr.a.nb, A.local.ld());
    db = scalapack_desc(*grid, k, n, pr.b.mb, pr.b.nb, B.local.ld());
    dc = scalapack_desc(*grid, m, n, pr.c.mb, pr.c.nb, C.local.ld());
  }
  auto data = [](auto& M) { return M.local.size() ? M.local.data() : nullptr; };

  Times times;
  for (int rep = -o.warmup; rep < o.repeat; ++rep) {
    world.barrier();
    double t0 = MPI_Wtime();
    plan.execute<T>(T(1), A.local.data(), B.local.data(), T(0), C.local.data());
    const MultiplyPlan::ExecuteSeconds part = plan.last_seconds();
    double v[4] = {MPI_Wtime() - t0, part.redistribute_in, part.multiply, part.redistribute_out};
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_MAX, world.get());
    if (rep >= 0)
      times.ours.push_back(v[0]), times.in.push_back(v[1]), times.multiply.push_back(v[2]), times.out.push_back(v[3]);
    if (!pdgemm) continue;
    world.barrier();
    t0 = MPI_Wtime();
    scalapack_gemm<T>(T(1), data(A), da, data(B), db, T(0), data(C_pdgemm), dc);
    const double t = world.allreduce_max_uncounted(MPI_Wtime() - t0);
    if (rep >= 0) times.pdgemm.push_back(t);
  }

  // The check: against PDGEMM, every element's difference within both products' rounding
  // bound, 2 gamma_k (|A| |B|)_ij <= 2 (k + 2) u k max|A| max|B| (the tolerance of verify.hpp,
  // widened by the algorithm's growth), reported relative to k max|A| max|B|.
  const double growth = world.allreduce_max_uncounted(plan.error_growth());  // (the levels each rank's engine ran)
  nlohmann::json check;
  bool passed = true;
  if (pdgemm) {
    double v[3] = {0, 0, 0};  // max |C - C_pdgemm|, max |A|, max |B|
    for (index_t i = 0; i < C.local.size(); ++i)
      v[0] = std::max(v[0], double(std::abs(C.local.data()[i] - C_pdgemm.local.data()[i])));
    for (index_t i = 0; i < A.local.size(); ++i) v[1] = std::max(v[1], double(std::abs(A.local.data()[i])));
    for (index_t i = 0; i < B.local.size(); ++i) v[2] = std::max(v[2], double(std::abs(B.local.data()[i])));
    MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_MAX, world.get());
    const double scale = double(k) * v[1] * v[2];
    const double diff = scale > 0 ? v[0] / scale : v[0];
    const double tol = verify_tolerance(dtype_of<T>(), k, growth) + verify_tolerance(dtype_of<T>(), k, 1.0);
    passed = diff <= tol;  // false for NaN too
    check = {{"method", "pdgemm"}, {"rel_diff", diff}, {"tolerance", tol}, {"passed", passed}};
  } else {
    const VerifyResult r = verify_freivalds<T>(A, B, C, T(1), T(0), nullptr, 3, seed + 1,
                                               verify_tolerance(dtype_of<T>(), k, growth), world,
                                               plan.strassen_like());
    passed = r.passed;
    check = {{"method", "freivalds"}, {"residual", r.residual}, {"tolerance", r.tolerance}, {"passed", passed}};
  }
  if (me != 0) return passed ? 0 : 1;

  const double flops = 2.0 * double(m) * double(n) * double(k);
  const double ours = median(times.ours), in = median(times.in), mult = median(times.multiply),
               out = median(times.out);
  const CommEstimate words = plan.words();
  const MovedWords total = plan.moved_total(), busiest = plan.moved_max();
  std::string layout = o.layout;
  if (o.layout == "block-cyclic")
    layout += ", " + std::to_string(o.nb) + " x " + std::to_string(o.nb) + " blocks on a " +
              std::to_string(pr.nprow) + " x " + std::to_string(pr.npcol) + " grid";
  else
    layout += " (ScaLAPACK: " + std::to_string(pr.nprow) + " x " + std::to_string(pr.npcol) + " grid, blocks of ceil(d / " +
              std::to_string(P) + "))";
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  char line[512];
  os << "layout-bench   " << m << " x " << n << " x " << k << ", " << info(dtype_of<T>()).name << ", " << P
     << " ranks; A, B and C " << layout << "\n";
  os << "algorithm      " << plan.algorithm_name() << " (" << plan.algorithm_layout() << ")\n";
  os << "in place       A " << yes(plan.in_place_a()) << ", B " << yes(plan.in_place_b()) << ", C "
     << yes(plan.in_place_c()) << "\n";
  std::snprintf(line, sizeof line,
                "redistributed  %.4g words in all (A %.4g, B %.4g, C %.4g), at most per rank A %.4g, B %.4g, C %.4g; "
                "the algorithm's own: %.4g in all, %.4g on the busiest rank\n",
                double(total.total()), double(total.a), double(total.b), double(total.c), double(busiest.a),
                double(busiest.b), double(busiest.c), words.words_mean * P, words.words_max);
  os << line;
  std::snprintf(line, sizeof line,
                "ours           %.4g s median of %d (redistribute in %.3g, multiply %.3g, out %.3g), %.1f GFLOP/s\n",
                ours, o.repeat, in, mult, out, flops / ours / 1e9);
  os << line;
  nlohmann::json j = {{"command", "layout-bench"},
                      {"host", host_name()},
                      {"ranks", P},
                      {"m", m},
                      {"n", n},
                      {"k", k},
                      {"dtype", info(dtype_of<T>()).name},
                      {"layout", o.layout},
                      {"grid", std::to_string(pr.nprow) + "x" + std::to_string(pr.npcol)},
                      {"blocks", {{"a", {pr.a.mb, pr.a.nb}}, {"b", {pr.b.mb, pr.b.nb}}, {"c", {pr.c.mb, pr.c.nb}}}},
                      {"algo", plan.algorithm_name()},
                      {"algo_layout", plan.algorithm_layout()},
                      {"in_place", {{"a", plan.in_place_a()}, {"b", plan.in_place_b()}, {"c", plan.in_place_c()}}},
                      {"moved_total", moved_json(total)},
                      {"moved_max", moved_json(busiest)},
                      {"algo_words_total", words.words_mean * P},
                      {"algo_words_max", words.words_max},
                      {"warmup", o.warmup},
                      {"repeat", o.repeat},
                      {"time_median", ours},
                      {"times", times.ours},
                      {"redistribute_in_median", in},
                      {"multiply_median", mult},
                      {"redistribute_out_median", out},
                      {"redistribution_median", in + out},
                      {"gflops", flops / ours / 1e9},
                      {"check", check}};
  if (o.layout == "block-cyclic") j["nb"] = o.nb;
  if (pdgemm) {
    const double base = median(times.pdgemm);
    std::snprintf(line, sizeof line, "pdgemm         %.4g s median of %d, %.1f GFLOP/s; pdgemm / ours %.2fx\n", base,
                  o.repeat, flops / base / 1e9, base / ours);
    os << line;
    j["pdgemm_time_median"] = base, j["pdgemm_times"] = times.pdgemm, j["pdgemm_gflops"] = flops / base / 1e9;
    j["speedup_vs_pdgemm"] = base / ours;
    std::snprintf(line, sizeof line, "check          max |C - C_pdgemm| / (k max|A| max|B|) = %.3g, %s %.3g: %s\n",
                  check["rel_diff"].get<double>(), passed ? "within" : "NOT within", check["tolerance"].get<double>(),
                  passed ? "agrees with PDGEMM" : "DIFFERS from PDGEMM");
  } else {
    std::snprintf(line, sizeof line, "check          Freivalds (3 trials): residual %.3g, tolerance %.3g: %s\n",
                  check["residual"].get<double>(), check["tolerance"].get<double>(), passed ? "PASSED" : "FAILED");
  }
  os << line << "layout-bench " << j.dump() << "\n" << std::flush;
  if (!o.json.empty()) append_json_line(o.json, j);
  return passed ? 0 : 1;
}

}  // namespace

int layout_bench_command(const LayoutBenchOptions& o, std::ostream& os, int rank) {
  const Comm world = Comm::world();
  const Problem pr = to_problem(o, world.size());  // alike on every rank: all throw or none
  const PathProblem problem = rank == 0 ? json_file_problem(o.json) : PathProblem{};
  world.agree(problem.message, problem.unwritable);
  return pr.dtype == Dtype::f32 ? bench<float>(o, pr, world, os) : bench<double>(o, pr, world, os);
}

}  // namespace distmm
