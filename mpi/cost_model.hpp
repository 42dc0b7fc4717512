// The machine model that predicts an algorithm's time from its counts (the busiest rank's):
//   t = flops / F + bytes / beta + messages * alpha
// (the alpha-beta-gamma model of Thakur, Rabenseifner & Gropp 2005, with F the rank's GEMM rate).
// `distmm calibrate` measures F, beta and alpha on the ranks it runs on and saves them; without
// a saved file the defaults below stand (a core of a 2020s server node, an MPI network link).
#pragma once
#include <string>

#include "comm.hpp"

namespace distmm {

struct MachineModel {
  double flops_per_s = 2e10;  // one rank's GEMM rate (F)
  double bytes_per_s = 2e9;   // one rank's point-to-point bandwidth (beta)
  double latency_s = 5e-6;    // per message (alpha)
  std::string source = "defaults (no distmm calibrate file)";
  double seconds(double flops, double bytes, double messages) const {
    return flops / flops_per_s + bytes / bytes_per_s + messages * latency_s;
  }
};

// $DISTMM_MACHINE_FILE, else ~/.cache/distmm/machine.json.
std::string machine_model_path();
// Rank 0 reads the file (or takes the defaults) and every rank gets the same model, so that
// every rank makes the same choices. Cached after the first call.
MachineModel machine_model(const Comm& comm);
// Writes the model as JSON (rank 0's job); throws UsageError when the file cannot be written.
void save_machine_model(const MachineModel& m, const std::string& path);

}  // namespace distmm
