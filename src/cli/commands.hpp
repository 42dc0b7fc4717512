// The small commands beside `run`.
#pragma once
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../core/types.hpp"

namespace CLI {
class App;
}

namespace distmm {

class Comm;
struct MachineModel;

// "a|b|c": names for a help text or a message.
inline std::string joined(const std::vector<std::string>& v, const char* sep = "|") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// What this rank was launched with, as (name, value) fields: the parsed command and every one
// of its options (given or not; the input files among them with their sizes and modification
// times), then the DISTMM_* settings (launch_agreement.cpp).
using LaunchFields = std::vector<std::pair<std::string, std::string>>;
LaunchFields launch_fields(const CLI::App& app, const std::vector<std::string>& input_files);
// Collective over MPI_COMM_WORLD, the first one after MPI_Init: one allreduce of the fields'
// hash; where ranks differ, a UsageError on every rank naming the first differing field.
void agree_on_launch(const LaunchFields& fields);

int info_command(std::ostream& os, int rank);

struct AccuracyOptions {
  index_t n = 512;
  std::string dtype = "f32";
  int max_levels = 3;
  int threads = 1;
  std::vector<std::string> engines{"blas", "strassen", "strassen-lowmem", "winograd"};
  std::string accuracy = "native";  // INT8-emulated engines' target (docs/accuracy.md)
};
int accuracy_command(const AccuracyOptions& o, std::ostream& os, int rank);

// `distmm engine-bench`: node engines against OpenBLAS, interleaved rounds in one process.
struct EngineBenchOptions {
  std::vector<long long> sizes{2048, 4096};
  std::vector<std::string> engines{"blas:0", "strassen:1", "strassen-lowmem:1", "winograd:1"};
  std::string dtype = "f64";
  int repeat = 5;
  int threads = 0;  // 0: the machine's hardware threads
  index_t block = 96;
  std::string json;
};
int engine_bench_command(const EngineBenchOptions& o, std::ostream& os, int rank);

// `distmm calibrate`: the cost model's rates on the ranks it runs on (mpi/cost_model.hpp).
struct CalibrateOptions {
  std::string file;  // empty: machine_model_path()
  int threads = 0;
  // --device: the device section (calibrate_device.cpp): engines' rates by size, the link
  // between the ranks' devices, the device memory; on GPUs or the emulated device.
  bool device = false, emulate_device = false, quick = false;
  std::vector<std::string> engines, dtypes;  // empty: the GPU engines (blas emulated); f64 and f32
  std::vector<long long> sizes;              // empty: the ladder (--quick: two sizes)
};
int calibrate_command(const CalibrateOptions& o, std::ostream& os, int rank);
int calibrate_device_command(const CalibrateOptions& o, std::ostream& os, int rank);
// What both share (calibrate_command.cpp): the threads for BLAS and OpenMP set, and where to save
// (rank 0's path), checked on every rank before the measurement takes every rank's time; then
// rank 0 rewrites the file with update() applied to what it holds (the other half kept; an
// unusable file replaced whole). Collective.
std::string calibrate_start(const CalibrateOptions& o, const Comm& world, int rank, int& threads);
void calibrate_save(const std::string& path, const Comm& world, int rank, const std::function<void(MachineModel&)>& update);

// `distmm layout-bench`: MultiplyPlan on block-cyclic or slab layouts against ScaLAPACK's
// P?GEMM on the same local arrays, interleaved (layout_bench_command.cpp).
struct LayoutBenchOptions {
  index_t size = 0, m = 0, n = 0, k = 0;  // read where given
  std::string dtype = "f64", layout = "block-cyclic", grid, algo = "auto", json;
  index_t nb = 64;
  int warmup = 1, repeat = 5;
  bool no_pdgemm = false;
  const CLI::App* app = nullptr;  // the parsed subcommand: which options the user gave
  bool given(const std::string& flag) const;
};
void add_layout_bench_options(CLI::App& app, LayoutBenchOptions& o);
int layout_bench_command(const LayoutBenchOptions& o, std::ostream& os, int rank);


}  // namespace distmm
