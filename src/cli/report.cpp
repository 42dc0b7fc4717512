#include "report.hpp"

#include <iomanip>
#include <sstream>

#include "../core/system.hpp"

namespace distmm {

namespace {
std::string sci(double v) {
  std::ostringstream s;
  s << std::setprecision(4) << v;
  return s.str();
}
std::string sci(std::complex<double> v) {
  if (v.imag() == 0) return sci(v.real());
  return sci(v.real()) + (v.imag() < 0 ? "-" : "+") + sci(std::abs(v.imag())) + "i";
}
// The title line and the rows both reports open with; returns the row printer.
auto open_report(const RunReport& r, std::ostream& os, const char* what, const char* note) {
  auto row = [&os](const std::string& k, const std::string& v) {
    os << "  " << std::left << std::setw(22) << k << v << "\n";
  };
  os << "distmm " << what << ": " << r.algo << " " << r.m << " x " << r.n << " x " << r.k << " "
     << r.dtype << " on " << r.ranks << " rank" << (r.ranks > 1 ? "s" : "") << note << "\n";
  row("layout", r.layout);
  if (!r.selection.empty()) row("chosen", r.selection);
  row("engine", r.engine_detail);
  if (!r.accuracy.empty()) row("accuracy target", r.accuracy + "  (docs/accuracy.md; moduli and bound: engine row)");
  return row;
}
}  // namespace

void print_report(const RunReport& r, std::ostream& os) {
  auto row = open_report(r, os, "run", "");
  row("threads per rank", std::to_string(r.threads));
  row("inputs", r.inputs + (r.transa != "N" || r.transb != "N" ? "  (op: " + r.transa + r.transb + ")" : ""));
  if (!r.output.empty()) row("output", r.output + (r.passed ? "" : " (not written: verification failed)"));
  if (r.alpha != 1.0 || r.beta != 0.0) row("alpha, beta", sci(r.alpha) + ", " + sci(r.beta));
  row("time min / median", sci(r.time_min) + " s / " + sci(r.time_median) + " s  (" +
                               std::to_string(r.times.size()) + " run" +
                               (r.times.size() > 1 ? "s)" : ")"));
  row("GFLOP/s", sci(r.gflops) + (r.dtype[0] == 'c' ? "  (8mnk real flops / median time)"
                                                      : "  (2mnk / median time)"));
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
  row("peak memory per rank", format_bytes(r.peak_bytes) + (r.load_seconds > 0 || r.stages > 1 ? " of GPU memory" : "") + " (estimate)");
  if (!r.residency.empty()) row("residency", r.residency);
  if (r.stages > 1)
    row("streamed", std::to_string(r.stages) + " stages (" + r.stage_grid + " panels of m x n): each time above is host "
                    "to host (inputs onto the GPUs, product, C back), the copies overlapping the products; "
                    "not overlapped: the first stage's " + (r.first_stage_split ? "first k-part " : "inputs ") +
                    sci(r.exposed_load_seconds) + " s, the last stage's C " +
                    sci(r.exposed_store_seconds) + " s");
  else if (r.load_seconds > 0)
    row("load / store", sci(r.load_seconds) + " s / " + sci(r.store_seconds) +
                            " s  (inputs onto the GPUs, C back to the host; not in the time above)");
  for (const auto& p : r.phases)
    if (p.max > 0) row("phase", p.name + ": " + sci(p.max) + " s max, " + sci(p.mean) + " s mean over ranks");
  if (r.verify == "none") {
    row("verification", "none");
  } else {
    std::string v = r.verify + ": " + (r.passed ? "PASSED" : "FAILED") + ", residual " +
                    sci(r.residual) + " <= " + sci(r.tolerance);
    if (!r.passed) v = r.verify + ": FAILED, residual " + sci(r.residual) + " > " + sci(r.tolerance);
    // where the tolerance comes from: (k + 2) u times the growth of what ran
    v += "  (tolerance (k+2) u";
    if (r.error_growth != 1)
      v += " x " + sci(r.error_growth) + " for the Strassen-like levels that ran, on |A||B| + (k+4) max|A| max|B|";
    v += ")";
    row("verification", v);
    if (r.rel_frobenius >= 0)
      row("error", "relative Frobenius " + sci(r.rel_frobenius) + ", max abs " + sci(r.max_abs));
  }
  for (const std::string& n : r.notes) row("note", n);
}

void print_plan(const RunReport& r, std::ostream& os) {
  auto row = open_report(r, os, "plan", " (nothing computed)");
  row("words sent per rank", "max " + sci(r.words_max) + ", mean " + sci(r.words_mean) +
                                 (r.words_measured ? "  (exact for this layout: run measures the same)"
                                                   : "  (analytic; library-internal traffic)"));
  row("messages per rank", "max " + sci(r.messages_max));
  if (r.flops_max > 0) row("flops per rank", "max " + sci(r.flops_max));
  std::string ratio;
  if (r.lower_bound_words > 0) ratio = ", max / bound = " + sci(r.words_max / r.lower_bound_words);
  row("lower bound", sci(r.lower_bound_words) + " words  (" + r.lower_bound + ratio + ")");
  row("peak memory per rank", format_bytes(r.peak_bytes) + " (estimate)");
  if (r.engine_workspace_bytes > 0)
    row("engine workspace", format_bytes(r.engine_workspace_bytes) + " per rank, its largest local product (in the peak)");
  if (!r.residency.empty()) row("residency", r.residency);
}

}  // namespace distmm
