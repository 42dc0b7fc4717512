// `distmm engine-bench`: the node engines against OpenBLAS in one process, interleaved. Every
// round times one call of each engine in turn (the starting engine rotates), so a drift of the
// machine (a shared VM's neighbours, clocks) hits every engine alike; the speedup is the ratio
// of medians over the rounds. Each engine's product is checked against BLAS's (relative
// Frobenius difference). Prints a Markdown table; --json appends one line per row.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>

#include "../../node/blas.hpp"
#include "../../node/engine.hpp"
#include "../core/json.hpp"
#include "../core/random.hpp"
#include "../core/system.hpp"
#include "../core/timer.hpp"
#include "commands.hpp"

namespace distmm {
namespace {

struct Entry {
  std::string spec;  // NAME:LEVELS as given
  std::unique_ptr<Engine> engine;
  std::vector<double> seconds;
  double rel_diff = 0;
};

EngineOptions options_for(const std::string& spec, const EngineBenchOptions& o, std::string& name) {
  EngineOptions eo;
  eo.threads = o.threads > 0 ? o.threads : hardware_threads();
  eo.block = o.block;
  const auto colon = spec.find(':');
  name = spec.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string lv = spec.substr(colon + 1);
    try {
      eo.levels = lv == "auto" ? -1 : std::stoi(lv);
    } catch (...) {
      throw UsageError("engine-bench: '" + spec + "' is not NAME:LEVELS (e.g. winograd:1, strassen:auto)");
    }
  }
  return eo;
}

template <class T>
void bench_size(const EngineBenchOptions& o, index_t n, std::ostream& os) {
  Matrix<T> A(n, n), B(n, n), R(n, n), C(n, n);
  fill_random_block(A.view(), 0, 0, 7, Stream::A, Fill::uniform);
  fill_random_block(B.view(), 0, 0, 7, Stream::B, Fill::uniform);
  std::vector<Entry> entries;
  std::vector<std::string> specs = o.engines;
  if (std::find_if(specs.begin(), specs.end(), [](auto& s) { return s.rfind("blas", 0) == 0; }) == specs.end())
    specs.insert(specs.begin(), "blas:0");
  for (const auto& spec : specs) {
    std::string name;
    EngineOptions eo = options_for(spec, o, name);
    entries.push_back({spec, make_engine(name, eo), {}, 0});
  }
  const int threads = o.threads > 0 ? o.threads : hardware_threads();
  blas_set_threads(threads);
  blas_gemm<T>(Op::N, Op::N, n, n, n, T(1), A.data(), n, B.data(), n, T(0), R.data(), n);
  double rnorm = 0;
  for (index_t t = 0; t < R.size(); ++t) rnorm += std::norm(std::complex<double>(R.data()[t]));
  // Warm-up round, which also checks every product against BLAS's.
  for (auto& e : entries) {
    e.engine->gemm(Op::N, Op::N, n, n, n, T(1), A.data(), n, B.data(), n, T(0), C.data(), n);
    double d = 0;
    for (index_t t = 0; t < C.size(); ++t) {
      d += std::norm(std::complex<double>(C.data()[t]) - std::complex<double>(R.data()[t]));
    }
    e.rel_diff = std::sqrt(d / rnorm);
  }
  const std::size_t k = entries.size();
  for (int r = 0; r < o.repeat; ++r)
    for (std::size_t i = 0; i < k; ++i) {
      Entry& e = entries[(i + r) % k];
      Stopwatch sw;
      e.engine->gemm(Op::N, Op::N, n, n, n, T(1), A.data(), n, B.data(), n, T(0), C.data(), n);
      e.seconds.push_back(sw.seconds());
    }
  const double base = median(entries[0].seconds);
  const double flops = (is_complex_v<T> ? 8.0 : 2.0) * double(n) * n * n;  // real flops
  for (auto& e : entries) {
    const double t = median(e.seconds);
    char line[512];
    std::snprintf(line, sizeof line, "| %lld | %s | %s | %.4g | %.1f | %.3fx | %.1e |\n",
                  static_cast<long long>(n), o.dtype.c_str(), e.engine->describe().c_str(), t,
                  flops / t / 1e9, base / t, e.rel_diff);
    os << line << std::flush;
    if (!o.json.empty())
      append_json_line(o.json, {{"command", "engine-bench"}, {"host", host_name()}, {"n", n},
                                {"dtype", o.dtype}, {"engine", e.spec}, {"engine_detail", e.engine->describe()},
                                {"threads", threads}, {"rounds", o.repeat}, {"time_median", t},
                                {"times", e.seconds}, {"gflops", flops / t / 1e9},
                                {"speedup_vs_blas", base / t}, {"rel_diff_vs_blas", e.rel_diff}});
  }
}

}  // namespace

int engine_bench_command(const EngineBenchOptions& o, std::ostream& os, int rank) {
  const auto dt = parse_dtype(o.dtype);
  if (!dt) throw UsageError("unknown --dtype '" + o.dtype + "': use " + dtype_names(", "));
  if (rank != 0) return 0;  // one process measures; other ranks would share its cores
  if (PathProblem p = json_file_problem(o.json)) p.raise();  // before the measurements
  for (const auto& spec : o.engines) {  // bad names fail before any output
    std::string name;
    options_for(spec, o, name);  // checks NAME:LEVELS
    const EngineInfo& e = engine_info(name);
    if (!e.dtypes.contains(*dt)) throw_unsupported_dtype(name, e.dtypes, *dt);
  }
  os << "| n | dtype | engine | median s | GFLOP/s | speedup vs blas | rel. diff vs blas |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (long long n : o.sizes)  // four n x n matrices each, refused before any output
    if (4.0 * double(n) * double(n) * double(size_of(*dt)) > double(available_memory_bytes()))
      throw UsageError("--sizes " + std::to_string(n) + " needs four " + std::to_string(n) + " x " + std::to_string(n) +
                       " matrices, " + format_bytes(4.0 * double(n) * double(n) * double(size_of(*dt))) + ", but " +
                       format_bytes(double(available_memory_bytes())) + " is available: use smaller sizes");
  for (long long n : o.sizes) dispatch(*dt, [&](auto tag) { bench_size<typename decltype(tag)::type>(o, n, os); });
  return 0;
}

}  // namespace distmm
