#include "cost_model.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../src/core/settings.hpp"

namespace distmm {

std::string machine_model_path() { return machine_file_setting(); }

MachineModel machine_model(const Comm& comm) {
  // Read on every call (a small file) by rank 0 of *this* communicator: a cache keyed to the
  // first communicator would make later ones (other BLACS grids) skip the collective.
  MachineModel m;
  double v[5] = {m.flops_per_s, m.bytes_per_s, m.latency_s, m.memory_bytes_per_s, 0};
  int found = 0;
  if (comm.rank() == 0) {
    std::ifstream in(machine_model_path());
    if (in) {
      try {
        nlohmann::json j = nlohmann::json::parse(in);
        v[0] = j.at("flops_per_s").get<double>();
        v[1] = j.at("bytes_per_s").get<double>();
        v[2] = j.at("latency_s").get<double>();
        // (files from before mu was measured keep the default)
        if (j.contains("memory_bytes_per_s")) v[3] = j.at("memory_bytes_per_s").get<double>();
        if (j.contains("slowest_flops_per_s")) v[4] = j.at("slowest_flops_per_s").get<double>();
        found = v[0] > 0 && v[1] > 0 && v[2] >= 0 && v[3] > 0;
      } catch (const std::exception&) {
        found = 0;  // unreadable: the defaults stand (the report names the source)
      }
      if (!found) v[0] = m.flops_per_s, v[1] = m.bytes_per_s, v[2] = m.latency_s, v[3] = m.memory_bytes_per_s, v[4] = 0;
    }
  }
  MPI_Bcast(v, 5, MPI_DOUBLE, 0, comm.get());
  MPI_Bcast(&found, 1, MPI_INT, 0, comm.get());
  m.flops_per_s = v[0], m.bytes_per_s = v[1], m.latency_s = v[2], m.memory_bytes_per_s = v[3];
  m.slowest_flops_per_s = v[4];
  if (found) m.source = machine_model_path() + " (distmm calibrate)", m.measured = true;
  return m;
}

std::size_t words_first_choice(const std::vector<double>& seconds, const std::vector<double>& words) {
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  double fewest = std::numeric_limits<double>::max();
  for (std::size_t i = 0; i < seconds.size(); ++i)
    if (seconds[i] <= fastest * (1 + kWordsFirst)) fewest = std::min(fewest, words[i]);
  std::size_t best = seconds.size();
  for (std::size_t i = 0; i < seconds.size(); ++i)
    if (seconds[i] <= fastest * (1 + kWordsFirst) && words[i] <= fewest * 1.05 &&
        (best == seconds.size() || seconds[i] < seconds[best]))
      best = i;
  return best;
}

void save_machine_model(const MachineModel& m, const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    for (std::size_t at = 1; at != std::string::npos; at = dir.find('/', at + 1))
      ::mkdir(dir.substr(0, dir.find('/', at)).c_str(), 0755);
    ::mkdir(dir.c_str(), 0755);
  }
  nlohmann::json j{{"flops_per_s", m.flops_per_s}, {"bytes_per_s", m.bytes_per_s}, {"latency_s", m.latency_s},
                   {"memory_bytes_per_s", m.memory_bytes_per_s}};
  if (m.slowest_flops_per_s > 0) j["slowest_flops_per_s"] = m.slowest_flops_per_s;
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw UsageError("cannot write the machine model to " + path + ": choose a writable --file");
}

}  // namespace distmm
