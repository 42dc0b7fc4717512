#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../src/core/files.hpp"
#include "../src/core/settings.hpp"
#include "gpu_engines.hpp"
#include "tuning.hpp"

namespace distmm {

std::string tuning_file_path() {
  return user_file_path(environment("DISTMM_TUNING_FILE"), environment("HOME"), "tuning.json");
}

std::string tuning_file_path_for_writing() {
  return user_file_path_for_writing(environment("DISTMM_TUNING_FILE"), environment("HOME"), "tuning.json",
                                    "set DISTMM_TUNING_FILE, or give tune --file");
}

namespace {
nlohmann::json load(const std::string& path) {
  // Not a regular file (a FIFO would block): an error; none there: the defaults.
  const std::optional<std::string> text = read_if_present(path, "tuning file");
  if (!text) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(*text);
  } catch (...) {
    return nlohmann::json::object();  // a damaged file only costs the defaults
  }
}

void save(const std::string& path, const nlohmann::json& j) {
  write_file_atomically(path, j.dump(2) + "\n", "tuning file");
}

// The entry of j[device][key] at the largest size <= n; when all are larger, the smallest one
// if `or_smallest`, else none. Its size in *at, where given.
const nlohmann::json* entry_at(const nlohmann::json& j, const std::string& device,
                               const std::string& key, long long n, bool or_smallest, long long* at = nullptr) {
  if (!j.contains(device) || !j[device].contains(key)) return nullptr;
  const nlohmann::json* best = nullptr;
  long long best_size = -1;
  for (auto& [size, e] : j[device][key].items()) {
    long long s = std::stoll(size);
    if (!or_smallest && s > n) continue;
    if ((s <= n && s > best_size) || best_size < 0 || (best_size > n && s < best_size)) {
      best_size = s;
      best = &e;
    }
  }
  if (at) *at = best_size;
  return best;
}

const nlohmann::json& tuning() {
  static const nlohmann::json j = load(tuning_file_path());  // read once per process
  return j;
}
// The engines' tuning file (`file` empty), or `file` read into `read`.
const nlohmann::json& tuning_or(const std::string& file, nlohmann::json& read) {
  if (file.empty()) return tuning();
  read = load(file);
  return read;
}
}  // namespace

LaunchShape tuned_shape(const std::string& device, const std::string& dtype, long long rows) {
  LaunchShape best;
  if (const nlohmann::json* e = entry_at(tuning(), device, dtype, rows, true)) {
    best.block_x = e->value("block_x", 256);
    best.block_y = e->value("block_y", 1);
  }
  return best;
}

void record_tuned_shape(const std::string& path, const std::string& device,
                        const std::string& dtype, long long rows, LaunchShape s, double micros) {
  nlohmann::json j = load(path);
  j[device][dtype][std::to_string(rows)] = {{"block_x", s.block_x}, {"block_y", s.block_y},
                                            {"micros", micros}};
  save(path, j);
}

namespace {
// A configuration entry as gemm_record writes it; none where cuBLAS's own choice won.
std::optional<GemmConfig> gemm_entry(const nlohmann::json& e, long long size) {
  if (!e.contains("algo") || e["algo"].is_null()) return std::nullopt;
  GemmConfig c;
  c.size = size;
  c.algo = e["algo"];
  c.tile = e.value("tile", 0);
  c.stages = e.value("stages", 0);
  c.swizzle = e.value("swizzle", 0);
  c.custom = e.value("custom", 0);
  c.cluster = e.value("cluster", 0);
  return c;
}

nlohmann::json gemm_record(const std::optional<GemmConfig>& best, double micros, double cublas_micros,
                           bool paired, bool cublas_paired) {
  nlohmann::json e = {{"micros", micros}, {"cublas_micros", cublas_micros}, {"paired", paired},
                      {"cublas_paired", cublas_paired}};
  if (best) {
    e["algo"] = best->algo, e["tile"] = best->tile, e["stages"] = best->stages;
    e["swizzle"] = best->swizzle, e["custom"] = best->custom, e["cluster"] = best->cluster;
  } else {
    e["algo"] = nullptr;  // cuBLAS's own choice was the fastest
  }
  return e;
}

// Shapes live under their own key: entry_at reads every key of "gemm-<dtype>" as a size.
std::string shapes_key(const std::string& dtype) { return "gemm-" + dtype + "-shapes"; }
}  // namespace

std::string shape_name(long long m, long long n, long long k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

std::optional<std::array<long long, 3>> parse_shape_name(const std::string& text) {
  const std::vector<int> c = parse_counts(text);
  if (c.size() != 3) return std::nullopt;
  return std::array<long long, 3>{c[0], c[1], c[2]};
}

std::optional<GemmConfig> tuned_gemm(const std::string& device, const std::string& dtype, long long n,
                                     const std::string& file) {
  nlohmann::json read;
  const nlohmann::json& j = tuning_or(file, read);
  // A kernel tuned at 1024 can be slow on 512^3 products: below the smallest tuned size, none.
  long long size = 0;
  const nlohmann::json* e = entry_at(j, device, "gemm-" + dtype, n, false, &size);
  return e ? gemm_entry(*e, size) : std::nullopt;
}

ShapeTuning tuned_gemm_shape(const std::string& device, const std::string& dtype, long long m, long long n,
                             long long k, const std::string& file) {
  nlohmann::json read;
  const nlohmann::json& j = tuning_or(file, read);
  const std::string key = shapes_key(dtype), shape = shape_name(m, n, k);
  if (!j.contains(device) || !j[device].contains(key) || !j[device][key].contains(shape)) return {};
  return {true, gemm_entry(j[device][key][shape], 0)};
}

void record_tuned_gemm(const std::string& path, const std::string& device, const std::string& dtype,
                       long long n, std::optional<GemmConfig> best, double micros, double cublas_micros,
                       bool paired, bool cublas_paired) {
  nlohmann::json j = load(path);
  j[device]["gemm-" + dtype][std::to_string(n)] = gemm_record(best, micros, cublas_micros, paired, cublas_paired);
  save(path, j);
}

void record_tuned_gemm_shape(const std::string& path, const std::string& device, const std::string& dtype,
                             long long m, long long n, long long k, std::optional<GemmConfig> best,
                             double micros, double cublas_micros, bool paired, bool cublas_paired) {
  nlohmann::json j = load(path);
  j[device][shapes_key(dtype)][shape_name(m, n, k)] =
      gemm_record(best, micros, cublas_micros, paired, cublas_paired);
  save(path, j);
}

}  // namespace distmm
