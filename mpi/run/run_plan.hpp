// A run planned once (run_plan.cpp): where it lives, its engine, algorithm and stages, and its
// memory per rank, decided before anything is allocated. run() executes the plan (run.cpp);
// plan() reports it without executing it, from the same value (plan = run).
#pragma once
#include <memory>
#include <string>

#include "../runtime/device_space.hpp"
#include "npy_io.hpp"
#include "run.hpp"
#include "stream_plan.hpp"

namespace distmm {

// Where a run's blocks live for the whole run.
enum class Residency {
  host,         // host memory, a host engine
  host_staged,  // host memory, each local product staged through the GPU (a GPU engine)
  device,       // A, B and C in the device space (a GPU's memory, or the emulated device)
  streamed,     // host memory, streamed through the device space in panels (StreamPlan)
};
const char* to_string(Residency r);

struct Placement {
  Residency residency = Residency::host;
  bool emulated = false;  // the device space is the host emulation (RunSpec::emulate_device)
  std::string why;        // host_staged: why the run is not device-resident
  bool on_device() const { return residency == Residency::device || residency == Residency::streamed; }
};

// The one decision of where a run lives, from the spec and the engine: asked for (algo null:
// assumed to run on a device, streamed where `stages` > 1 and the inputs are the host's), or
// final (the algorithm chosen, the stages that hold).
Placement decide_residency(const RunSpec& o, const EngineInfo& engine, const DistAlgorithm* algo, int stages);

struct InputFiles {
  NpyInfo a, b, c;
};

struct RunPlan {
  RunSpec spec;  // completed: shapes and dtype from the files, the engine's and algorithm's options
  InputFiles files;
  Dtype dt = Dtype::f64;
  std::size_t budget = 0;  // host bytes per rank
  Placement placement;
  std::unique_ptr<Engine> engine;
  EngineCapabilities engine_caps;      // for the rank's largest local product
  std::unique_ptr<DeviceSpace> space;  // placement.on_device(); outlives the algorithms' buffers
  // The whole product's algorithm (a streamed run reports it; its stages' run).
  std::unique_ptr<DistAlgorithm> algo;
  StreamPlan stream;  // streamed: the stages (stages() > 1), else one stage (why_one: why)
  double peak_bytes = 0;  // per rank, max over ranks (device memory where on_device())
  RunReport report;       // what the plan fixes (run_report.cpp: planned_report)
};

// Collective over world (every rank with the same spec). Throws UsageError, on every rank
// alike, for what cannot run or fit.
RunPlan make_run_plan(const Comm& world, RunSpec spec);

}  // namespace distmm
