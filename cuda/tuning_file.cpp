#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpu_engines.hpp"
#include "tuning.hpp"

namespace distmm {

std::string tuning_file_path() {
  if (const char* p = std::getenv("DISTMM_TUNING_FILE")) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/distmm/tuning.json";
}

namespace {
nlohmann::json load(const std::string& path) {
  std::ifstream f(path);
  if (!f) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(f);
  } catch (...) {
    return nlohmann::json::object();  // a damaged file only costs the defaults
  }
}
}  // namespace

LaunchShape tuned_shape(const std::string& device, const std::string& dtype, long long rows) {
  LaunchShape best;
  static const nlohmann::json j = load(tuning_file_path());  // read once per process
  if (!j.contains(device) || !j[device].contains(dtype)) return best;
  long long best_size = -1;
  for (auto& [size, e] : j[device][dtype].items()) {
    long long s = std::stoll(size);
    if ((s <= rows && s > best_size) || best_size < 0) {
      best_size = s;
      best.block_x = e.value("block_x", 256);
      best.block_y = e.value("block_y", 1);
    }
  }
  return best;
}

void record_tuned_shape(const std::string& path, const std::string& device,
                        const std::string& dtype, long long rows, LaunchShape s, double micros) {
  nlohmann::json j = load(path);
  j[device][dtype][std::to_string(rows)] = {{"block_x", s.block_x}, {"block_y", s.block_y},
                                            {"micros", micros}};
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace distmm
