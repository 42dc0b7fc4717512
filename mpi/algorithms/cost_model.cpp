#include "cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The range of the device section's values (DeviceModel), checked as the host's are.
struct DeviceValue {
  const char* key;
  double DeviceModel::*value;
  double lo, hi;
  const char* unit;
};
constexpr DeviceValue kDeviceValues[] = {
    {"link_bytes_per_s", &DeviceModel::link_bytes_per_s, 1e3, 1e15, "bytes/s"},
    {"link_latency_s", &DeviceModel::link_latency_s, 1e-10, 1, "s"},
    {"memory_bytes_per_s", &DeviceModel::memory_bytes_per_s, 1e3, 1e16, "bytes/s"},
};
constexpr double kLeastRate = 1e3, kMostRate = 1e18;
constexpr double kMostSide = 1e8;

// x as a number in [lo, hi], else a UsageError "<where> <x> is out of range (lo to hi unit)".
double in_range(const nlohmann::json& x, const std::string& where, double lo, double hi, const char* unit,
                const std::string& fix) {
  const double d = x.is_number() ? x.get<double>() : std::nan("");
  if (!x.is_number() || !std::isfinite(d) || d < lo || d > hi)
    throw UsageError(where + " " + (x.is_number() ? text_of(d) : x.dump()) + " is out of range (" + text_of(lo) +
                     " to " + text_of(hi) + (*unit ? " " : "") + unit + ")" + fix);
  return d;
}

// The "device" section of the machine file at `path` (calibrate --device), checked.
DeviceModel read_device_section(const nlohmann::json& j, const std::string& path) {
  const std::string fix = ": run 'distmm calibrate --device' to measure it again, or remove the file (or point "
                          "DISTMM_MACHINE_FILE elsewhere)";
  const std::string at = "machine file " + path + ": device";
  if (!j.is_object()) throw UsageError(at + " is not a JSON object" + fix);
  DeviceModel d;
  d.measured = true;
  for (const DeviceValue& v : kDeviceValues) {
    if (!j.contains(v.key)) throw UsageError(at + " lacks " + v.key + fix);
    d.*v.value = in_range(j[v.key], at + "." + v.key, v.lo, v.hi, v.unit, fix);
  }
  if (j.contains("device") && j["device"].is_string()) d.device = j["device"].get<std::string>();
  if (j.contains("transport") && j["transport"].is_string()) d.transport = j["transport"].get<std::string>();
  if (j.contains("ranks")) d.ranks = int(in_range(j["ranks"], at + ".ranks", 1, 1e7, "", fix));
  if (!j.contains("rates") || !j["rates"].is_object() || j["rates"].empty())
    throw UsageError(at + " lacks rates (an object: engine -> dtype -> measured points)" + fix);
  for (const auto& [engine, by_dtype] : j["rates"].items()) {
    const std::string e_at = at + ".rates." + engine;
    if (!by_dtype.is_object() || by_dtype.empty()) throw UsageError(e_at + " is not an object of dtypes" + fix);
    for (const auto& [dtype, points] : by_dtype.items()) {
      const std::string d_at = e_at + "." + dtype;
      if (!parse_dtype(dtype)) throw UsageError(d_at + ": " + dtype + " is not a dtype (" + dtype_names() + ")" + fix);
      if (!points.is_array() || points.empty())
        throw UsageError(d_at + " is not a non-empty array of {m, n, k, flops_per_s}" + fix);
      std::vector<RatePoint> v;
      for (std::size_t i = 0; i < points.size(); ++i) {
        const nlohmann::json& q = points[i];
        const std::string p_at = d_at + "[" + std::to_string(i) + "]";
        if (!q.is_object()) throw UsageError(p_at + " is not an object {m, n, k, flops_per_s}" + fix);
        RatePoint r;
        for (auto [key, side] : {std::pair{"m", &r.m}, std::pair{"n", &r.n}, std::pair{"k", &r.k}}) {
          if (!q.contains(key)) throw UsageError(p_at + " lacks " + key + fix);
          *side = index_t(in_range(q[key], p_at + "." + key, 1, kMostSide, "", fix));
        }
        if (!q.contains("flops_per_s")) throw UsageError(p_at + " lacks flops_per_s" + fix);
        r.flops_per_s = in_range(q["flops_per_s"], p_at + ".flops_per_s", kLeastRate, kMostRate, "flop/s", fix);
        v.push_back(r);
      }
      std::stable_sort(v.begin(), v.end(), [](const RatePoint& a, const RatePoint& b) { return a.flops() < b.flops(); });
      d.rates[engine][dtype] = std::move(v);
    }
  }
  return d;
}

// The model in the parsed file at `path`; a file that is not a JSON object, lacks a value or
// holds one out of range is a UsageError naming it and the fix. The host values are required
// unless the file holds a device section alone (calibrate --device before any host calibrate).
MachineModel parse_machine_file(const std::string& text, const std::string& path) {
  const std::string fix = ": run 'distmm calibrate' to write it again, or remove it (or point DISTMM_MACHINE_FILE elsewhere)";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("machine file " + path + " is not JSON (" + e.what() + ")" + fix);
  }
  if (!j.is_object()) throw UsageError("machine file " + path + " is not a JSON object" + fix);
  MachineModel m;
  bool host = !j.contains("device");
  for (const ModelValue& v : kModelValues) host = host || (v.required && j.contains(v.key));
  for (const ModelValue& v : kModelValues) {
    if (!host) break;
    if (!j.contains(v.key)) {
      if (v.required) throw UsageError("machine file " + path + " lacks " + v.key + fix);
      continue;
    }
    m.*v.value = in_range(j[v.key], "machine file " + path + ": " + v.key, v.lo, v.hi, v.unit, fix);
  }
  m.measured = host;
  if (j.contains("device")) m.device = read_device_section(j["device"], path);
  return m;
}

std::optional<std::string> read_machine_text(const std::string& path) {
  const std::string fix = ": run 'distmm calibrate' to write it again, or remove it (or point DISTMM_MACHINE_FILE elsewhere)";
  try {
    return read_if_present(path, "machine file");
  } catch (const UsageError& e) {  // not a regular file, or unreadable
    throw UsageError(e.what() + fix);
  }
}

}  // namespace

std::string machine_model_path() {
  return user_file_path(environment("DISTMM_MACHINE_FILE"), environment("HOME"), "machine.json");
}

std::string machine_model_path_for_writing() {
  return user_file_path_for_writing(environment("DISTMM_MACHINE_FILE"), environment("HOME"), "machine.json",
                                    "set DISTMM_MACHINE_FILE, or give calibrate --file");
}

std::optional<MachineModel> read_machine_model(const std::string& path) {
  const std::optional<std::string> text = read_machine_text(path);
  if (!text) return std::nullopt;
  return parse_machine_file(*text, path);
}

MachineModel machine_model(const Comm& comm) {
  // Read on every call (a small file) by rank 0 of *this* communicator: a cache keyed to the
  // first communicator would make later ones (other BLACS grids) skip the collective. Rank 0
  // checks the file; every rank parses the same text (so that it cannot fail there).
  const std::string path = machine_model_path();
  std::optional<std::string> text;
  std::string error;
  if (comm.rank() == 0) error = caught([&] {
                              text = read_machine_text(path);
                              if (text) (void)parse_machine_file(*text, path);
                            }).message;
  comm.agree(error);
  long long len = text ? static_cast<long long>(text->size()) : -1;
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm.get());
  if (len < 0) return MachineModel{};
  if (comm.rank() != 0) text = std::string(std::size_t(len), '\0');
  MPI_Bcast(text->data(), int(len), MPI_CHAR, 0, comm.get());
  MachineModel m = parse_machine_file(*text, path);
  m.source = m.measured ? path + " (distmm calibrate)"
                        : "defaults (" + path + " holds a device section only: run distmm calibrate)";
  return m;
}

std::optional<double> DeviceModel::rate(const std::string& engine, Dtype dt, double flops) const {
  const auto e = rates.find(engine);
  if (e == rates.end()) return std::nullopt;
  const auto d = e->second.find(to_string(dt));
  if (d == e->second.end() || d->second.empty()) return std::nullopt;
  const std::vector<RatePoint>& v = d->second;
  if (flops <= v.front().flops()) return v.front().flops_per_s;
  if (flops >= v.back().flops()) return v.back().flops_per_s;
  std::size_t i = 1;
  while (v[i].flops() < flops) ++i;
  const double f0 = std::log(v[i - 1].flops()), f1 = std::log(v[i].flops());
  if (f1 <= f0) return v[i].flops_per_s;
  const double t = (std::log(flops) - f0) / (f1 - f0);
  return std::exp(std::log(v[i - 1].flops_per_s) + t * (std::log(v[i].flops_per_s) - std::log(v[i - 1].flops_per_s)));
}

MachineModel machine_model_for(const Comm& comm, bool device, const std::string& engine, Dtype dt, double m, double n,
                               double k) {
  MachineModel mm = machine_model(comm);
  if (!device) return mm;
  const DeviceModel& d = mm.device;
  const double share = 2.0 * m * n * k / std::max(comm.size(), 1);
  mm.flops_per_s = d.rate(engine, dt, share).value_or(d.default_flops_per_s);
  mm.slowest_flops_per_s = 0;
  mm.bytes_per_s = d.link_bytes_per_s, mm.latency_s = d.link_latency_s, mm.memory_bytes_per_s = d.memory_bytes_per_s;
  return mm;
}

std::string describe_rates(const DeviceModel& d) {
  std::string s;
  char buf[160];
  for (const auto& [engine, by_dtype] : d.rates)
    for (const auto& [dtype, v] : by_dtype) {
      s += (s.empty() ? "" : "; ") + engine + " " + dtype + ":";
      for (const RatePoint& p : v) {
        if (p.m == p.n && p.n == p.k) std::snprintf(buf, sizeof buf, " %lld^3 %.3g", (long long)p.m, p.flops_per_s / 1e9);
        else std::snprintf(buf, sizeof buf, " %lldx%lldx%lld %.3g", (long long)p.m, (long long)p.n, (long long)p.k,
                           p.flops_per_s / 1e9);
        s += buf;
      }
      s += " GFLOP/s";
    }
  return s;
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
  nlohmann::json j = nlohmann::json::object();
  if (m.measured || !m.device.measured) {
    j = {{"flops_per_s", m.flops_per_s}, {"bytes_per_s", m.bytes_per_s}, {"latency_s", m.latency_s},
         {"memory_bytes_per_s", m.memory_bytes_per_s}};
    if (m.slowest_flops_per_s > 0) j["slowest_flops_per_s"] = m.slowest_flops_per_s;
  }
  if (m.device.measured) {
    const DeviceModel& d = m.device;
    nlohmann::json rates = nlohmann::json::object();
    for (const auto& [engine, by_dtype] : d.rates)
      for (const auto& [dtype, v] : by_dtype) {
        nlohmann::json points = nlohmann::json::array();
        for (const RatePoint& p : v) points.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"flops_per_s", p.flops_per_s}});
        rates[engine][dtype] = points;
      }
    j["device"] = {{"device", d.device},
                   {"transport", d.transport},
                   {"link_bytes_per_s", d.link_bytes_per_s},
                   {"link_latency_s", d.link_latency_s},
                   {"memory_bytes_per_s", d.memory_bytes_per_s},
                   {"rates", rates}};
    if (d.ranks > 0) j["device"]["ranks"] = d.ranks;
  }
  write_file_atomically(path, j.dump(2) + "\n", "machine file");
}

}  // namespace distmm
