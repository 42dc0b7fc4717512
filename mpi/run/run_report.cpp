#include "run_report.hpp"

#include <algorithm>
#include <cctype>

#include "../../src/core/json.hpp"
#include "../../src/core/system.hpp"
#include "../../src/core/timer.hpp"
#include "../algorithms/bounds.hpp"

namespace distmm {

namespace {

const char* op_text(Op o) { return o == Op::N ? "N" : o == Op::T ? "T" : "C"; }

// The residency row: where the blocks live and how ranks exchange them (empty for host engines).
std::string residency_text(const RunPlan& p) {
  switch (p.placement.residency) {
    case Residency::device:
    case Residency::streamed:
      return p.placement.emulated
                 ? "emulated device (the device path on host memory; between ranks: " + p.space->transport() + ")"
                 : "device (A, B, C on each rank's GPU; between GPUs: " + p.space->transport() + ")";
    case Residency::host_staged: return "host-staged (" + p.placement.why + ")";
    case Residency::host: break;
  }
  return "";
}

}  // namespace

RunReport planned_report(const RunPlan& p, const Comm& world) {
  const RunSpec& o = p.spec;
  const Dtype dt = p.dt;
  const DistAlgorithm& algo = *p.algo;
  const StreamPlan& stream = p.stream;
  RunReport rec;
  rec.algo = algo.name();
  rec.layout = algo.layout();
  rec.selection = algo.selection();
  rec.engine = algo.uses_engine() ? p.engine->name() : "scalapack-internal";
  // The INT8-emulated engines' target; what it chose (moduli, scaling, bound) is in engine_detail.
  if (algo.uses_engine() && o.engine && o.engine->emulated)
    rec.accuracy = o.engine_opts.moduli > 0 ? "moduli " + std::to_string(o.engine_opts.moduli) : o.engine_opts.accuracy;
  rec.dtype = to_string(dt);
  rec.m = o.m, rec.n = o.n, rec.k = o.k;
  rec.alpha = o.alpha, rec.beta = o.beta;
  rec.ranks = world.size();
  rec.threads = o.engine_opts.threads;
  rec.repeat = o.repeat;
  rec.warmup = o.warmup;
  rec.seed = o.seed;
  rec.inputs = o.fill == Fill::integer ? "random integers" : "random uniform [-1,1)";
  if (is_complex(dt)) rec.inputs += " (real and imaginary parts)";
  rec.output = o.out_path;
  rec.peak_bytes = p.peak_bytes;
  rec.engine_workspace_bytes = world.allreduce_max_uncounted(double(p.engine_caps.workspace_bytes));
  rec.from_host = p.placement.on_device() && o.inputs_from_host;
  rec.residency = residency_text(p);
  rec.words_measured = algo.counts_words();
  CommEstimate est = algo.analytic();
  rec.analytic_words_max = est.words_max;
  rec.analytic_words_mean = est.words_mean;
  rec.analytic_messages_max = est.messages_max;
  rec.stages = stream.stages();
  rec.stage_grid = std::to_string(stream.rows) + "x" + std::to_string(stream.cols);
  if (p.placement.residency == Residency::streamed) {
    // The analytic counts of what runs: every stage's product.
    CommEstimate sum;
    for (int s = 0; s < stream.stages(); ++s) {
      const CommEstimate e = stream.algo(s).analytic();
      sum.words_max += e.words_max, sum.words_mean += e.words_mean, sum.messages_max += e.messages_max;
      sum.flops_max += e.flops_max;
    }
    est.flops_max = sum.flops_max;
    rec.first_stage_split = o.split_first_stage && stream.algo(0).k_prefix().has_value();
    rec.layout = stream.algos[0]->layout() + "; streamed in " + rec.stage_grid +
                 " panels of m x n (host link overlapped with the products" +
                 (rec.first_stage_split ? "; the first stage's product begun on its first k-part" : "") + ")";
    rec.analytic_words_max = sum.words_max, rec.analytic_words_mean = sum.words_mean;
    rec.analytic_messages_max = sum.messages_max;
    rec.notes.push_back("streamed: the analytic max words, messages and flops add each stage's busiest rank (a bound "
                        "of the busiest rank's total; the means add exactly), and the phases every stage's");
    if (!rec.selection.empty())
      rec.selection += "; streamed: each stage's " + rec.algo + " laid out for the stage's own shape (the layout row)";
  } else if (!stream.why_one.empty()) {
    rec.notes.push_back("not streamed (one stage: load, multiply, store in turn): " + stream.why_one);
  }
  const int P = world.size();
  LowerBound lb = algo.strassen_like()
                      ? strassen_lower_bound(std::max({o.m, o.n, o.k}), P, p.peak_bytes / size_of(dt))
                      : classical_lower_bound(o.m, o.n, o.k, P, p.peak_bytes / size_of(dt));
  rec.lower_bound_words = lb.words;
  rec.lower_bound = lb.which;

  if (!o.a_path.empty()) rec.inputs = o.a_path + ", " + o.b_path + (o.c_path.empty() ? "" : ", " + o.c_path);
  rec.transa = op_text(o.transa);
  rec.transb = op_text(o.transb);
  rec.flops_max = est.flops_max;
  return rec;
}

void record_planned(const RunPlan& p, RunReport& rec) {
  // What the run would measure: the algorithm's exact counts for this layout.
  rec.planned = true;
  rec.words_max = rec.analytic_words_max, rec.words_mean = rec.analytic_words_mean;
  rec.messages_max = rec.analytic_messages_max;
  rec.engine_detail = p.algo->uses_engine() ? p.engine->describe() : "ScaLAPACK's own BLAS calls";
  rec.verify = "none (plan: nothing computed)";
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
}

void collect_measurements(const Comm& world, const std::vector<std::string>& names, std::vector<double> t,
                          const CommCounters& counted, RunReport& rec) {
  {
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
}

void collect_measurements(const Comm& world, const DistAlgorithm& algo, const CommCounters& counted,
                          RunReport& rec) {
  collect_measurements(world, algo.phase_names(), algo.phase_seconds(), counted, rec);
}

double error_growth(const Comm& world, const DistAlgorithm& algo, const Engine& engine, RunReport& rec) {
  rec.engine_levels_run = world.allreduce_max_uncounted(engine.levels_run());
  rec.error_growth = world.allreduce_max_uncounted(engine.error_growth()) * algo.error_growth();
  return rec.error_growth;
}

void record_verdict(const VerifyResult& v, const Comm& world, RunReport& rec) {
  rec.verify = v.method;
  rec.residual = v.residual;
  rec.tolerance = v.tolerance;
  rec.rel_frobenius = v.rel_frobenius;
  rec.max_abs = v.max_abs;
  rec.passed = !world.any(!v.passed);
  if (v.nonfinite_matched > 0)
    rec.notes.push_back(std::to_string(v.nonfinite_matched) +
                        " NaN/Inf entries of C, each where the reference has one (compared by position)");
}

void record_run(const RunPlan& p, RunReport& rec) {
  const RunSpec& o = p.spec;
  const Dtype dt = p.dt;
  // After the multiply: what the engine chose and ran.
  rec.engine_detail = p.algo->uses_engine() ? p.engine->describe()
                                            : "P" + std::string(1, char(std::toupper(info(dt).blas_letter))) +
                                                  "GEMM's own BLAS calls (OpenBLAS, " +
                                                  std::to_string(o.engine_opts.threads) + " threads)";
  rec.time_min = *std::min_element(rec.times.begin(), rec.times.end());
  rec.time_median = median(rec.times);
  // Real flops: a complex multiply-add is 8 of them.
  rec.gflops = (is_complex(dt) ? 8.0 : 2.0) * double(o.m) * o.n * o.k / rec.time_median / 1e9;
  rec.host = host_name();
  rec.time_stamp = iso_time_now();
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
  if (!r.accuracy.empty()) j["accuracy"] = r.accuracy;
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
  j["engine_workspace_bytes"] = r.engine_workspace_bytes;
  j["residency"] = r.residency;
  j["from_host"] = r.from_host;
  j["stages"] = r.stages;
  j["stage_grid"] = r.stage_grid;
  j["exposed_load_seconds"] = r.exposed_load_seconds;
  j["first_stage_split"] = r.first_stage_split;
  j["exposed_store_seconds"] = r.exposed_store_seconds;
  j["load_seconds"] = r.load_seconds;
  j["store_seconds"] = r.store_seconds;
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
