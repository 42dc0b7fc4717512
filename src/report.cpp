#include "report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "system.hpp"

namespace distmm {

nlohmann::json to_json(const RunRecord& r) {
  nlohmann::json j;
  j["algo"] = r.algo;
  j["layout"] = r.layout;
  j["engine"] = r.engine;
  j["engine_detail"] = r.engine_detail;
  j["dtype"] = r.dtype;
  j["inputs"] = r.inputs;
  j["output"] = r.output;
  j["m"] = r.m;
  j["n"] = r.n;
  j["k"] = r.k;
  j["alpha"] = r.alpha;
  j["beta"] = r.beta;
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
  j["verify"] = r.verify;
  j["residual"] = r.residual;
  j["tolerance"] = r.tolerance;
  j["rel_frobenius"] = r.rel_frobenius;
  j["max_abs"] = r.max_abs;
  j["passed"] = r.passed;
  j["host"] = r.host;
  j["time_stamp"] = r.time_stamp;
  return j;
}

namespace {
std::string sci(double v) {
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
}
}  // namespace

void print_report(const RunRecord& r, std::ostream& os) {
  auto row = [&](const std::string& k, const std::string& v) {
    os << "  " << std::left << std::setw(22) << k << v << "\n";
  };
  os << "distmm run: " << r.algo << " " << r.m << " x " << r.n << " x " << r.k << " " << r.dtype
     << " on " << r.ranks << " rank" << (r.ranks > 1 ? "s" : "") << "\n";
  row("layout", r.layout);
  row("engine", r.engine_detail);
  row("threads per rank", std::to_string(r.threads));
  row("inputs", r.inputs + (r.transa == "T" || r.transb == "T" ? "  (op: " + r.transa + r.transb + ")" : ""));
  if (!r.output.empty()) row("output", r.output + (r.passed ? "" : " (not written: verification failed)"));
  if (r.alpha != 1 || r.beta != 0) row("alpha, beta", sci(r.alpha) + ", " + sci(r.beta));
  row("time min / median", sci(r.time_min) + " s / " + sci(r.time_median) + " s  (" +
                               std::to_string(r.times.size()) + " run" +
                               (r.times.size() > 1 ? "s)" : ")"));
  row("GFLOP/s", sci(r.gflops) + "  (2mnk / median time)");
  if (r.words_measured)
    row("words sent per rank", "max " + sci(r.words_max) + ", mean " + sci(r.words_mean) +
                                   "  (analytic max " + sci(r.analytic_words_max) + ", mean " +
                                   sci(r.analytic_words_mean) + ")");
  else
    row("words sent per rank", "not measured (library-internal); analytic max " +
                                   sci(r.analytic_words_max) + ", mean " +
                                   sci(r.analytic_words_mean));
  if (r.words_measured)
    row("messages per rank", "max " + sci(r.messages_max) + ", mean " + sci(r.messages_mean) +
                                 "  (analytic max " + sci(r.analytic_messages_max) + ")");
  std::string ratio;
  if (r.lower_bound_words > 0)
    ratio = ", measured max / bound = " +
            sci((r.words_measured ? r.words_max : r.analytic_words_max) / r.lower_bound_words);
  row("lower bound", sci(r.lower_bound_words) + " words  (" + r.lower_bound + ratio + ")");
  row("peak memory per rank", format_bytes(r.peak_bytes) + " (estimate)");
  if (r.verify == "none") {
    row("verification", "none");
  } else {
    std::string v = r.verify + ": " + (r.passed ? "PASSED" : "FAILED") + ", residual " +
                    sci(r.residual) + " <= " + sci(r.tolerance);
    if (!r.passed) v = r.verify + ": FAILED, residual " + sci(r.residual) + " > " + sci(r.tolerance);
    row("verification", v);
    if (r.rel_frobenius >= 0)
      row("error", "relative Frobenius " + sci(r.rel_frobenius) + ", max abs " + sci(r.max_abs));
  }
}

void append_json_line(const std::string& path, const nlohmann::json& j) {
  std::string line = j.dump() + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw UsageError("cannot open --json file '" + path + "': " + std::strerror(errno) +
                     ": choose a writable path");
  ssize_t w = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (w != static_cast<ssize_t>(line.size()))
    throw UsageError("could not append to --json file '" + path + "': disk full?");
}

std::string iso_time_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace distmm
