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
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../src/core/dtype.hpp"
#include "../../src/core/types.hpp"

#include "../runtime/comm.hpp"

namespace distmm {

// The GPU side of the model (`distmm calibrate --device`), for device-resident runs: each
// engine's measured rate per dtype at a few product sizes (a rate depends on the size: an
// engine's O(n^2) passes, Strassen's additions and emulation's slicing weigh more in smaller
// products), the link between the ranks' devices (NCCL, or MPI through pinned host memory) and
// the device memory's streaming rate (the Strassen-like additions around the products).
struct RatePoint {
  index_t m = 0, n = 0, k = 0;
  double flops_per_s = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};
struct DeviceModel {
  bool measured = false;  // a "device" section was read from the machine file
  std::string device;     // what was measured: the GPU's name, or "emulated device (host memory)"
  std::string transport;  // the link measured (DeviceSpace::transport())
  int ranks = 0;          // ranks calibrate ran on (1: the link not measured, defaults)
  // Defaults: an H100-class GPU and NVLink, unmeasured.
  double link_bytes_per_s = 1e11;
  double link_latency_s = 2e-5;
  double memory_bytes_per_s = 2e12;
  double default_flops_per_s = 5e13;  // an engine and dtype without a measured rate
  // engine name -> dtype name -> points, in increasing flops.
  std::map<std::string, std::map<std::string, std::vector<RatePoint>>> rates;
  // The rate of `engine` on a product of `flops` (2 m n k): the measured points' rates
  // interpolated linearly in log(flops), clamped to the end points' rates outside them; none
  // where that engine and dtype were not measured.
  std::optional<double> rate(const std::string& engine, Dtype dt, double flops) const;
};

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
  bool measured = false;  // the host values read from a distmm calibrate file
  double seconds(double flops, double bytes, double messages, double local_bytes = 0) const {
    return flops / static_rate() + bytes / bytes_per_s + messages * latency_s + local_bytes / memory_bytes_per_s;
  }
  DeviceModel device;  // the file's "device" section (defaults where it has none)
};

// The predicted seconds of an algorithm's analytic counts (a CommEstimate, algorithm.hpp) with
// elements of `elem` bytes.
template <class Estimate>
double predicted_seconds(const MachineModel& m, const Estimate& e, double elem) {
  const double rest = m.seconds(0, e.words_max * elem, e.messages_max, e.local_words_max * elem);
  if (e.balanced) return rest + (e.flops_mean + e.flops_unit) / m.flops_per_s;
  return rest + e.flops_max / m.static_rate();
}

// The device-resident prediction of a plan whose busiest rank's counts are `e` and whose
// largest local product is `g` (DistAlgorithm::largest_product): its flops at the engine's rate
// for a product of that size, words over the device link, messages at its latency, streamed
// elements at the device memory's rate (the run's lanes overlap some of it; the model adds them,
// as the host's does).
struct DevicePrediction {
  double seconds = 0, rate = 0;
  bool rate_measured = false;
};
template <class Estimate>
DevicePrediction device_predicted_seconds(const DeviceModel& d, const std::string& engine, Dtype dt, const Estimate& e,
                                          index_t gm, index_t gn, index_t gk) {
  const double elem = double(size_of(dt));
  const double flops = 2.0 * double(std::max<index_t>(gm, 1)) * double(std::max<index_t>(gn, 1)) *
                       double(std::max<index_t>(gk, 1));
  const std::optional<double> r = d.rate(engine, dt, flops);
  DevicePrediction p;
  p.rate = r ? *r : d.default_flops_per_s, p.rate_measured = r.has_value();
  p.seconds = e.flops_max / p.rate + e.words_max * elem / d.link_bytes_per_s + e.messages_max * d.link_latency_s +
              e.local_words_max * elem / d.memory_bytes_per_s;
  return p;
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
// The model for choices inside an algorithm's plan (cuboid's grid, CAPS's steps) of a product of
// shape m x n x k on P ranks: the host model, or for a device-resident run (device) the device
// model seen as one: the engine's rate at a rank's share of the product (2 m n k / P flops), the
// device link, the device memory. Collective on comm.
MachineModel machine_model_for(const Comm& comm, bool device, const std::string& engine, Dtype dt, double m, double n,
                               double k);
// Writes the model as JSON, replacing the file atomically (rank 0's job); throws UsageError or
// OutputError (write_file_atomically) when it cannot.
// With a measured device section (m.device.measured) it is saved too, and the host values are
// left out where they are not measured (m.measured false): the file holds the device section alone.
void save_machine_model(const MachineModel& m, const std::string& path);
// The file's model as rank 0 alone reads it (a UsageError where it cannot be used), none where
// there is no file: for calibrate, which keeps the other half of a file it rewrites.
std::optional<MachineModel> read_machine_model(const std::string& path);
// The device section's rate table as text for a report: "blas f64 2.1 GFLOP/s at 64^3 ... 8.4 at 512^3".
std::string describe_rates(const DeviceModel& d);

}  // namespace distmm
