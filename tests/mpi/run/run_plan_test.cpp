// The run planned once (mpi/run_plan.hpp): where a run lives is one decision
// (decide_residency), and plan() reports the plan that run() executes (plan = run), here on the
// emulated device (device-resident and streamed) and in host memory.
#include <gtest/gtest.h>

#include "mpi/run/run_plan.hpp"
#include "mpi_test_util.hpp"

using namespace distmm;

namespace {

EngineInfo gpu_like_engine() {
  EngineInfo e = engine_info("blas");
  e.name = "a-gpu-engine", e.memory = Memory::device;
  return e;
}

TEST(RunPlan, ResidencyIsDecidedInOnePlace) {
  const EngineInfo& blas = engine_info("blas");
  const EngineInfo gpu = gpu_like_engine();
  RunSpec s;
  EXPECT_EQ(decide_residency(s, blas, nullptr, 4).residency, Residency::host);
  EXPECT_EQ(decide_residency(s, gpu, nullptr, 4).residency, Residency::device);  // generated on the GPUs
  s.inputs_from_host = true;
  EXPECT_EQ(decide_residency(s, gpu, nullptr, 4).residency, Residency::streamed);
  EXPECT_EQ(decide_residency(s, gpu, nullptr, 1).residency, Residency::device);
  s.host_staged = true;
  const Placement staged = decide_residency(s, gpu, nullptr, 4);
  EXPECT_EQ(staged.residency, Residency::host_staged);
  EXPECT_EQ(staged.why, "--host-staged");
  s.host_staged = false;
  s.algo = Algorithm::scalapack;  // its own BLAS calls: no engine, host memory
  EXPECT_EQ(decide_residency(s, gpu, nullptr, 4).residency, Residency::host);
  s.algo = Algorithm::automatic;
  s.emulate_device = true;
  const Placement emulated = decide_residency(s, blas, nullptr, 4);
  EXPECT_EQ(emulated.residency, Residency::streamed);
  EXPECT_TRUE(emulated.emulated);
  EXPECT_TRUE(emulated.on_device());
}

// plan() and run() of one spec agree on everything the plan fixes.
void expect_plan_is_run(RunSpec s, Residency expected) {
  const Comm world = Comm::world();
  const RunPlan p = make_run_plan(world, s);
  EXPECT_EQ(p.placement.residency, expected) << to_string(p.placement.residency);
  const RunReport planned = plan(world, s), ran = run(world, s);
  EXPECT_TRUE(planned.planned);
  EXPECT_TRUE(ran.passed);
  EXPECT_EQ(planned.algo, ran.algo);
  EXPECT_EQ(planned.layout, ran.layout);
  EXPECT_EQ(planned.residency, ran.residency);
  EXPECT_EQ(planned.stages, ran.stages);
  EXPECT_EQ(planned.stage_grid, ran.stage_grid);
  EXPECT_EQ(planned.peak_bytes, ran.peak_bytes);
  EXPECT_EQ(planned.analytic_words_max, ran.analytic_words_max);
  EXPECT_EQ(planned.flops_max, ran.flops_max);
}

TEST(RunPlan, PlanIsRun) {
  RunSpec s;
  s.m = 96, s.n = 80, s.k = 64;
  s.mem_limit = std::size_t(1) << 30;
  expect_plan_is_run(s, Residency::host);
  s.engine = &engine_info("blas");
  s.emulate_device = true;
  s.algo = Algorithm::summa;
  expect_plan_is_run(s, Residency::device);
  s.inputs_from_host = true;
  s.stage_rows = 2, s.stage_cols = 2;
  expect_plan_is_run(s, Residency::streamed);
}

}  // namespace
