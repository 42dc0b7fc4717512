// The machine model that predicts an algorithm's time from its counts (the busiest rank's):
//   t = flops / F + bytes / beta + messages * alpha + local bytes / mu
// where a static split of the work runs at the slowest rank's rate (F_slow: every rank waits for
// it) and a run-time balanced one (CAPS's dealt steps) at the median rank's rate on the mean
// rank's flops, plus one unit of work for the last step's granularity
// (the alpha-beta-gamma model of Thakur, Rabenseifner & Gropp 2005, with F the rank's GEMM rate,
// plus the memory-bound passes around the products -- Strassen-like additions, layout copies --
// at mu, a rank's share of the memory bandwidth while every rank streams at once).
// `distmm calibrate` measures F, beta, alpha and mu on the ranks it runs on and saves them;
// without a saved file the defaults below stand (a core of a 2020s server node, an MPI link).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "../runtime/comm.hpp"

namespace distmm {

struct MachineModel {
  double flops_per_s = 2e10;  // one rank's GEMM rate (F; the median over the ranks)
  // The slowest rank's, all ranks multiplying at once (0: the same as F). Cores of one host
  // can run equal GEMMs at unequal rates for seconds at a time
  // (docs/performance.md, "Measurements behind the code": slowest_flops_per_s).
  double slowest_flops_per_s = 0;
  double static_rate() const { return slowest_flops_per_s > 0 ? std::min(slowest_flops_per_s, flops_per_s) : flops_per_s; }
  double bytes_per_s = 2e9;   // one rank's point-to-point bandwidth (beta)
  double latency_s = 5e-6;    // per message (alpha)
  double memory_bytes_per_s = 5e9;  // one rank's streaming rate, all ranks at once (mu)
  std::string source = "defaults (no distmm calibrate file)";
  bool measured = false;  // read from a distmm calibrate file
  double seconds(double flops, double bytes, double messages, double local_bytes = 0) const {
    return flops / static_rate() + bytes / bytes_per_s + messages * latency_s + local_bytes / memory_bytes_per_s;
  }
};

// The predicted seconds of an algorithm's analytic counts (a CommEstimate, algorithm.hpp) with
// elements of `elem` bytes.
template <class Estimate>
double predicted_seconds(const MachineModel& m, const Estimate& e, double elem) {
  const double rest = m.seconds(0, e.words_max * elem, e.messages_max, e.local_words_max * elem);
  if (e.balanced) return rest + (e.flops_mean + e.flops_unit) / m.flops_per_s;
  return rest + e.flops_max / m.static_rate();
}

// Choices among grids or algorithms whose predicted times lie within this fraction of the
// fastest go to the one that moves the fewest words. The model prices words at the calibrated
// point-to-point bandwidth, but ranks that all communicate at once share the memory system or
// the network, so a plan that moves several times the bound's words runs well over its
// prediction (docs/performance.md, "Measurements behind the code": kWordsFirst).
inline constexpr double kWordsFirst = 0.10;

// The index of that choice: of the candidates predicted within kWordsFirst of the fastest, those
// within 5% of the fewest words, and of these the fastest (so that a handful fewer words never
// buys an idle rank).
std::size_t words_first_choice(const std::vector<double>& seconds, const std::vector<double>& words);

// $DISTMM_MACHINE_FILE, else ~/.cache/distmm/machine.json (empty, no file, where HOME is unset).
std::string machine_model_path();
// Where calibrate writes without --file: the same, but HOME must be an existing directory
// (.cache/distmm is made below it, HOME never); else a UsageError saying what to set.
std::string machine_model_path_for_writing();
// Rank 0 reads the file (or takes the defaults where there is none) and every rank gets the same
// model, so that every rank makes the same choices. A file that cannot be used (not a regular
// file, not JSON, a value out of range) is a UsageError on every rank. Collective on comm.
MachineModel machine_model(const Comm& comm);
// Writes the model as JSON, replacing the file atomically (rank 0's job); throws UsageError or
// OutputError (write_file_atomically) when it cannot.
void save_machine_model(const MachineModel& m, const std::string& path);

}  // namespace distmm
