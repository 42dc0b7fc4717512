#include "cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "../../src/core/files.hpp"

#include "../../src/core/settings.hpp"

namespace distmm {

namespace {

// The range of each value a machine file holds: a measurement outside it is not one of this
// machine (a damaged or hand-edited file) and would make every choice of --algo auto absurd.
struct ModelValue {
  const char* key;
  double MachineModel::*value;
  bool required;
  double lo, hi;
  const char* unit;
};
constexpr ModelValue kModelValues[] = {
    {"flops_per_s", &MachineModel::flops_per_s, true, 1e3, 1e18, "flop/s"},
    {"bytes_per_s", &MachineModel::bytes_per_s, true, 1e3, 1e15, "bytes/s"},
    {"latency_s", &MachineModel::latency_s, true, 1e-10, 1, "s"},
    // (files from before these were measured keep the defaults)
    {"memory_bytes_per_s", &MachineModel::memory_bytes_per_s, false, 1e3, 1e15, "bytes/s"},
    {"slowest_flops_per_s", &MachineModel::slowest_flops_per_s, false, 1e3, 1e18, "flop/s"},
};

std::string text_of(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The model in the file at `path`, or none where there is no file; a file that is not a regular
// one, not JSON, lacks a value or holds one out of range is a UsageError naming it and the fix.
std::optional<MachineModel> read_machine_file(const std::string& path) {
  const std::string fix = ": run 'distmm calibrate' to write it again, or remove it (or point DISTMM_MACHINE_FILE elsewhere)";
  std::optional<std::string> text;
  try {
    text = read_if_present(path, "machine file");
  } catch (const UsageError& e) {  // not a regular file, or unreadable
    throw UsageError(e.what() + fix);
  }
  if (!text) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("machine file " + path + " is not JSON (" + e.what() + ")" + fix);
  }
  if (!j.is_object()) throw UsageError("machine file " + path + " is not a JSON object" + fix);
  MachineModel m;
  for (const ModelValue& v : kModelValues) {
    if (!j.contains(v.key)) {
      if (v.required) throw UsageError("machine file " + path + " lacks " + v.key + fix);
      continue;
    }
    const nlohmann::json& x = j[v.key];
    const double d = x.is_number() ? x.get<double>() : std::nan("");
    if (!x.is_number() || !std::isfinite(d) || d < v.lo || d > v.hi)
      throw UsageError("machine file " + path + ": " + v.key + " " + (x.is_number() ? text_of(d) : x.dump()) +
                       " is out of range (" + text_of(v.lo) + " to " + text_of(v.hi) + " " + v.unit + ")" + fix);
    m.*v.value = d;
  }
  return m;
}

}  // namespace

std::string machine_model_path() {
  return user_file_path(environment("DISTMM_MACHINE_FILE"), environment("HOME"), "machine.json");
}

std::string machine_model_path_for_writing() {
  return user_file_path_for_writing(environment("DISTMM_MACHINE_FILE"), environment("HOME"), "machine.json",
                                    "set DISTMM_MACHINE_FILE, or give calibrate --file");
}

MachineModel machine_model(const Comm& comm) {
  // Read on every call (a small file) by rank 0 of *this* communicator: a cache keyed to the
  // first communicator would make later ones (other BLACS grids) skip the collective.
  MachineModel m;
  const std::string path = machine_model_path();
  std::optional<MachineModel> read;
  std::string error;
  if (comm.rank() == 0) error = caught([&] { read = read_machine_file(path); }).message;
  comm.agree(error);
  int found = read.has_value();
  if (read) m = *read;
  double v[5] = {m.flops_per_s, m.bytes_per_s, m.latency_s, m.memory_bytes_per_s, m.slowest_flops_per_s};
  MPI_Bcast(v, 5, MPI_DOUBLE, 0, comm.get());
  MPI_Bcast(&found, 1, MPI_INT, 0, comm.get());
  m.flops_per_s = v[0], m.bytes_per_s = v[1], m.latency_s = v[2], m.memory_bytes_per_s = v[3];
  m.slowest_flops_per_s = v[4];
  if (found) m.source = path + " (distmm calibrate)", m.measured = true;
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
  nlohmann::json j{{"flops_per_s", m.flops_per_s}, {"bytes_per_s", m.bytes_per_s}, {"latency_s", m.latency_s},
                   {"memory_bytes_per_s", m.memory_bytes_per_s}};
  if (m.slowest_flops_per_s > 0) j["slowest_flops_per_s"] = m.slowest_flops_per_s;
  write_file_atomically(path, j.dump(2) + "\n", "machine file");
}

}  // namespace distmm
