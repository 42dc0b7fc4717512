// One run's parameters and figures: printed as a readable table on rank 0 and appended as one
// JSON line per run with --json FILE (read back by jobs/plot.py).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "types.hpp"

namespace distmm {

struct RunRecord {
  // what was run
  std::string algo, layout, engine, engine_detail, dtype, inputs = "random", output;
  index_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  std::string transa = "N", transb = "N";
  int ranks = 1, threads = 1, repeat = 1, warmup = 0;
  std::uint64_t seed = 0;
  // time over the repetitions (max over ranks of each repetition)
  std::vector<double> times;
  double time_min = 0, time_median = 0, gflops = 0;
  // communication per rank (comm.hpp's convention) and the analytic count for this layout
  bool words_measured = true;
  double words_max = 0, words_mean = 0, messages_max = 0, messages_mean = 0;
  double analytic_words_max = 0, analytic_words_mean = 0, analytic_messages_max = 0;
  double lower_bound_words = 0;
  std::string lower_bound;
  double peak_bytes = 0;  // estimated per rank
  // verification
  std::string verify = "none";
  double residual = 0, tolerance = 0, rel_frobenius = -1, max_abs = -1;
  bool passed = true;
  std::string host;
  std::string time_stamp;
};

nlohmann::json to_json(const RunRecord& r);
void print_report(const RunRecord& r, std::ostream& os);
// Appends one line; the line is written whole with one write, never a fragment.
void append_json_line(const std::string& path, const nlohmann::json& j);
std::string iso_time_now();

}  // namespace distmm
